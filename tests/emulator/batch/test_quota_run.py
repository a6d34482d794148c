"""Promises kept on disk and on the network, in one real batch run (real MPI, real Ray).

Two jobs on HPS (SAS) under a storage manager whose quota is enforced on disk:

- ``fits`` holds exactly its input plus one checkpoint, then one checkpoint plus its
  output (lackner2019's ``storage = max(input, output) + checkpoint``): it ends ok;
- ``over`` asks for 4 GB but checkpoints 8 GB at a time: its first checkpoint write
  is refused before a byte is written; the job fails with the quota reason in the trace.

While the run goes, a thread samples (a) the bytes really under the HPS root and
(b) the TCP sockets every process of the run listens on; the storage manager's own
``usage`` rows are checked too.  Then the modes of what the run left on disk.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from iolab.middleware.storage import disk_usage
from iolab.specs.batch import BatchExperiment
from listening import WILDCARDS, is_loopback, listening

BS = 1e-4  # bytes scale: 1 GB of the spec is 100 kB on disk
GB = 10**9
CAPACITY = 20 * GB


def spec_dict() -> dict:
    return {
        "name": "quota",
        "platform": {"nodes": 2, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                     "hps": {"rate": "15 GB/s", "capacity": CAPACITY}, "stage_rate": "5 GB/s"},
        "scheduler": "sas",
        "workload": [
            {"id": "fits", "submit": 0, "nodes": 1, "walltime": 400, "runtime": 300, "input": "2GB",
             "output": "2GB", "data": "8GB", "storage": "10GB"},
            {"id": "over", "submit": 0, "nodes": 1, "walltime": 400, "runtime": 300, "input": "1GB",
             "output": "1GB", "data": "16GB", "storage": "4GB"},
        ],
        "emulator": {"time_scale": 0.01, "bytes_scale": BS},
    }


def spec() -> BatchExperiment:
    return BatchExperiment.model_validate(spec_dict())


def _host_ip() -> str:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:  # the address a route out would use
        try:
            s.connect(("192.0.2.1", 9))
            return s.getsockname()[0]
        except OSError:
            return ""


HOST_IP = _host_ip()


def documented(cmd: str, address: str, driver: bool = False) -> bool:
    """What docs/emulator.md ("Network exposure") says still listens beyond loopback in a
    local run: Ray's own processes (GCS, raylet, agents, workers) on any address; in the
    processes that joined Ray (this driver, the app ranks) and in Hydra's ``mpiexec`` and
    proxy (whose control socket the ranks inherit), sockets bound to the wildcard address; in the
    driver, a socket on the host's address (seen once in CI, a Ray gRPC server of the driver)."""
    ray_own = "/ray/" in cmd or cmd.startswith("ray::")
    driver_on_host = driver and address == HOST_IP  # driver: the run's Ray driver (here the test process)
    return ray_own or address in WILDCARDS or driver_on_host


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from iolab.emulator.batch.run import run_batch_emulation

    work = tmp_path_factory.mktemp("quota") / "w"
    samples: list[tuple[float, int, int]] = []
    sockets: dict[tuple, str] = {}
    modes: dict[str, int] = {}
    stop = threading.Event()

    def watch():
        while not stop.wait(0.1):
            a, b = disk_usage(work / "hps")
            samples.append((time.time(), a, b))
            for pid, cmd, addr, port in listening(os.getpid()):
                sockets[(pid, addr, port)] = cmd
            for root, dirs, files in os.walk(work / "hps"):
                for n in dirs + files:
                    try:
                        modes[os.path.join(root, n)] = os.lstat(os.path.join(root, n)).st_mode
                    except FileNotFoundError:
                        pass

    # sockets this (pytest) process already had are not the run's: another test may have left a Ray
    # driver or a server of its own listening here (seen in CI: one bound to the host's address)
    before = {(pid, addr, port) for pid, _, addr, port in listening(os.getpid()) if pid == os.getpid()}
    t = threading.Thread(target=watch, daemon=True)
    old = os.environ.pop("IOLAB_NETWORK", None)
    umask = os.umask(0o027)
    t.start()
    try:
        trace = run_batch_emulation(spec(), out=work.parent / "run.h5", work_dir=work)
    finally:
        stop.set()
        t.join()
        os.umask(umask)
        if old is not None:
            os.environ["IOLAB_NETWORK"] = old
    sockets = {k: c for k, c in sockets.items() if k not in before}
    return trace, work, samples, sockets, modes


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_a_job_cannot_write_past_its_allocation(run):
    trace, work, samples, _, _ = run
    jobs = {r["id"]: r for r in trace.jobs.rows()}
    assert {j: (r["status"], r["tier"]) for j, r in jobs.items()} == {"fits": ("ok", "hps"), "over": ("failed", "hps")}
    reason = trace.attrs["failures"]["over"]["reason"]
    assert "quota exceeded" in reason and "past its allocation of 400000 B" in reason, reason
    (refusal,) = [r for r in trace.attrs["quota_refusals"] if r["job"] == "over"][:1]
    assert refusal["allocation"] == 4 * GB * BS and refusal["bytes"] + refusal["in_use"] > refusal["allocation"]
    usage = trace.tables["usage"]
    for job, alloc in (("fits", 10 * GB), ("over", 4 * GB)):
        rows = [r for r in usage.rows() if r["job"] == job]
        assert rows, f"no measure of {job}"
        assert all(r["allocated"] == alloc for r in rows)
        assert max(r["apparent"] for r in rows) <= alloc  # in spec bytes, as the allocation
    fits_peak = max(r["apparent"] for r in usage.rows() if r["job"] == "fits")
    assert fits_peak >= 8 * GB  # the checkpoint was really there (measured, not booked)
    print(f"\nquota: over allocated {4 * GB * BS:.0f} B, refused a write of {refusal['bytes']} B beside "
          f"{refusal['in_use']} B; on disk at most "
          f"{max(r['apparent'] for r in usage.rows() if r['job'] == 'over') * BS:.0f} B apparent, "
          f"{max(r['blocks'] for r in usage.rows() if r['job'] == 'over') * BS:.0f} B in blocks; "
          f"fits: peak {fits_peak * BS:.0f} B of {10 * GB * BS:.0f} B")


@pytest.mark.ray
@pytest.mark.mpi
def test_the_bytes_on_disk_never_pass_the_tier_capacity(run):
    trace, work, samples, _, _ = run
    cap = CAPACITY * BS
    assert len(samples) > 20 and max(a for _, a, _ in samples) > 0
    assert max(a for _, a, _ in samples) <= cap
    tier = [r for r in trace.tables["usage"].rows() if r["job"] == ""]
    assert len(tier) >= 3 and all(r["allocated"] == CAPACITY for r in tier)
    assert max(r["apparent"] for r in tier) <= CAPACITY and max(r["apparent"] for r in tier) > 0
    print(f"\ntier: capacity {cap:.0f} B; sampled peak {max(a for _, a, _ in samples)} B apparent, "
          f"{max(b for _, _, b in samples)} B in blocks ({len(samples)} samples); manager's peak "
          f"{max(r['apparent'] for r in tier) * BS:.0f} B apparent, {max(r['blocks'] for r in tier) * BS:.0f} B blocks")


@pytest.mark.ray
@pytest.mark.mpi
def test_a_local_run_listens_beyond_loopback_only_where_documented(run):
    _, _, _, sockets, _ = run
    ranks = [(a, p) for (pid, a, p), c in sockets.items() if "iolab.apps.jacobi" in c]
    assert ranks, "no app rank was seen listening: the sampling missed the run"
    assert any(is_loopback(a) for a, _ in ranks), "the ranks' MPI sockets were not seen"
    bad = sorted({(c[:70], a, p) for (pid, a, p), c in sockets.items()
                  if not is_loopback(a) and not documented(c, a, driver=pid == os.getpid())})
    assert not bad, f"undocumented listening sockets: {bad}"
    shown = sorted({((c.split() or ["?"])[0].rsplit('/', 1)[-1] if "jacobi" not in c else "jacobi-rank", a)
                    for (_, a, _), c in sockets.items()})
    print("\nlistening:", shown)


@pytest.mark.ray
@pytest.mark.mpi
def test_tier_data_is_private_and_records_follow_the_umask(run):
    trace, work, _, _, modes = run
    assert modes, "no HPS file was seen during the run"
    for path, mode in modes.items():
        want = 0o700 if stat.S_ISDIR(mode) else 0o600
        assert mode & 0o777 == want, f"{path}: {oct(mode & 0o777)}"
    for d in (work / "lps", work / "hps"):
        assert d.stat().st_mode & 0o777 == 0o700
    for f in (work / "lps" / "inputs").rglob("*"):
        assert f.stat().st_mode & 0o777 == (0o700 if f.is_dir() else 0o600), f
    outputs = [f for f in (work / "lps" / "outputs").rglob("*") if f.is_file()]
    assert outputs and all(f.stat().st_mode & 0o777 == 0o600 for f in outputs)
    # records follow the umask of the run (027 here)
    assert (work.parent / "run.h5").stat().st_mode & 0o777 == 0o640
    assert (work / "logs").stat().st_mode & 0o777 == 0o750
    assert all(f.stat().st_mode & 0o777 == 0o640 for f in (work / "logs").iterdir())


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_a_job_failing_on_its_quota_makes_emulate_exit_1_with_the_trace_written(tmp_path):
    """The same spec through the command line, as a user runs it: ``over`` fails on its quota, so
    ``iolab emulate`` exits 1 (docs/cli.md, "Exit codes"), names the job, and the trace is written."""
    import subprocess
    import sys

    import yaml

    from iolab.trace import read_trace

    path, out = tmp_path / "quota.yaml", tmp_path / "quota.h5"
    path.write_text(yaml.safe_dump({"kind": "batch", **spec_dict()}))
    r = subprocess.run([str(Path(sys.executable).parent / "iolab"), "emulate", str(path), "--out", str(out),
                        "--work-dir", str(tmp_path / "w"), "--quiet"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert "run failed: 1 of 2 app(s)/job(s) did not end ok: over" in r.stderr, r.stderr[-2000:]
    trace = read_trace(out)
    assert {row["id"]: row["status"] for row in trace.jobs.rows()} == {"fits": "ok", "over": "failed"}
    assert "quota exceeded" in trace.attrs["failures"]["over"]["reason"]
