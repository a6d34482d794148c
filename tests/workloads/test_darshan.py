"""iolab workload import darshan on the real logs PyDarshan ships, checked against PyDarshan's own report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from iolab.cli import cli
from iolab.workloads.darshan import DarshanLogError, job_phases, read_darshan
from iolab.specs import load_spec

darshan = pytest.importorskip("darshan", reason="PyDarshan not installed (pip install 'iolab[darshan]')")
LOGS = Path(darshan.__file__).parent / "examples" / "example_logs"
DXT = LOGS / "dxt.darshan"  # 1 rank, POSIX + STDIO + DXT_POSIX
IOR = LOGS / "ior_hdf5_example.darshan"  # 4 ranks, POSIX + MPI-IO + STDIO + DXT
SAMPLE = LOGS / "example.darshan"  # 2048 ranks, counters only (no DXT)
NOPOSIX = LOGS / "noposix.darshan"  # STDIO only


def report_bytes(path: Path, module: str, counter: str) -> int:
    """The independent reference: PyDarshan's high-level report, all records loaded."""
    r = darshan.DarshanReport(str(path), read_all=True)
    if module not in r.records:
        return 0
    return int(r.records[module].to_df()["counters"][counter].sum())


@pytest.mark.parametrize("log", [DXT, IOR, SAMPLE, NOPOSIX], ids=lambda p: p.stem[:12])
def test_job_and_volumes_match_pydarshan(log):
    j = read_darshan(log)
    meta = darshan.DarshanReport(str(log), read_all=False).metadata["job"]
    assert (j.jobid, j.nprocs, j.run_time, j.uid) == (meta["jobid"], meta["nprocs"], meta["run_time"], meta["uid"])
    for mod, prefix in (("POSIX", "POSIX"), ("MPI-IO", "MPIIO"), ("STDIO", "STDIO")):
        if mod in j.modules:
            assert j.modules[mod]["read"] == report_bytes(log, mod, f"{prefix}_BYTES_READ")
            assert j.modules[mod]["write"] == report_bytes(log, mod, f"{prefix}_BYTES_WRITTEN")
    # the volume: POSIX + STDIO (MPI-IO goes through POSIX), or STDIO alone here
    vol = [m for m in ("POSIX", "STDIO") if m in j.modules]
    assert j.read_bytes == sum(j.modules[m]["read"] for m in vol)
    assert j.write_bytes == sum(j.modules[m]["write"] for m in vol)
    assert j.read_hist.sum() == pytest.approx(j.read_bytes) and j.write_hist.sum() == pytest.approx(j.write_bytes)


def test_values_of_the_dxt_log():
    """Numbers the file states (darshan-parser on dxt.darshan): 1 rank, 1469 s, 22517726 B read by POSIX."""
    j = read_darshan(DXT)
    assert (j.nprocs, j.run_time, j.modules["POSIX"]["read"], j.modules["POSIX"]["write"]) == (1, 1469.0, 22517726,
                                                                                              13021781)
    assert j.timing_from == "DXT_POSIX segments"
    r = darshan.DarshanReport(str(DXT), read_all=True)
    recs = r.records["DXT_POSIX"].to_df()
    segs = sum(len(x["write_segments"]) + len(x["read_segments"]) for x in recs)
    assert j.segments == segs == 7623
    assert j.hosts == len({x["hostname"] for x in recs}) == j.nodes == 1
    # the DXT shape: the first bin that reads is where the first read segment starts
    first = min(float(x["read_segments"]["start_time"].min()) for x in recs if len(x["read_segments"]))
    assert np.flatnonzero(j.read_hist)[0] == int(first / j.bin_width)


def test_phases_keep_volume_and_time():
    j = read_darshan(DXT, bins=256)
    ph = job_phases(j, 2**20)
    kinds = [next(iter(p)) for p in ph]
    assert sum(p["read"] for p in ph if "read" in p) * 2**20 == pytest.approx(j.read_bytes)
    assert sum(p["write"] for p in ph if "write" in p) * 2**20 == pytest.approx(j.write_bytes)
    io_bins = np.count_nonzero(j.read_hist + j.write_hist)
    assert sum(p["compute"] for p in ph if "compute" in p) == pytest.approx((256 - io_bins) * 1469.0 / 256)
    assert all(a != b or a != "compute" for a, b in zip(kinds, kinds[1:]))  # no two compute phases in a row


def test_counter_timestamps_without_dxt():
    j = read_darshan(SAMPLE, bins=117, ranks_per_node=16)
    assert j.timing_from == "counter timestamps" and j.segments == 0
    assert j.nodes == 2048 // 16 and j.nodes_from == "ranks / 16 per node"
    assert j.read_bytes == 0 and j.write_bytes == 2199023259968 + 3309


def test_cli_io_spec_simulates(tmp_path):
    out = tmp_path / "d.yaml"
    res = CliRunner().invoke(cli, ["workload", "import", "darshan", str(DXT), str(IOR), "-o", str(out),
                                   "--volumes", "bytes"])
    assert res.exit_code == 0, res.output
    spec = load_spec(out)
    assert [a.id for a in spec.apps] == ["j1537455", "j32324925"]
    a = spec.apps[0]
    assert a.io_total() * spec.emulator.unit_bytes == pytest.approx(22517726 + 1876 + 13021781)
    assert "dxt.darshan: job 1537455, 1 ranks" in out.read_text()
    res = CliRunner().invoke(cli, ["simulate", str(out), "--json"])
    assert res.exit_code == 0, res.output


def _io_seconds(app, bandwidth: float) -> float:
    return sum(v for p in app.phase_list() for k, v in [p] if k != "compute") / bandwidth


@pytest.mark.parametrize("logs", [(SAMPLE, NOPOSIX), (DXT, IOR), (DXT, IOR, SAMPLE, NOPOSIX)],
                         ids=["sample+noposix", "dxt+ior", "all four"])
def test_several_logs_keep_each_its_own_io_time_and_sane_releases(tmp_path, logs):
    """Logs of different systems, months or years apart: at the one bandwidth of the spec, each app's
    I/O takes the time its log's I/O took (the bins with I/O), and the releases leave out the time in
    which none of the logs ran (each log follows the one before it)."""
    out = tmp_path / "d.yaml"
    res = CliRunner().invoke(cli, ["workload", "import", "darshan", *map(str, logs), "-o", str(out)])
    assert res.exit_code == 0, res.output
    spec = load_spec(out)
    jobs = [read_darshan(p) for p in logs]
    for app, job in zip(spec.apps, jobs):
        assert _io_seconds(app, spec.platform.bandwidth) == pytest.approx(job.io_time, rel=1e-6), app.id
    # reference: walk the logs in start order, the next released when the last before it ended (or at its
    # own offset if it started while one was still running)
    order = sorted(range(len(jobs)), key=lambda i: jobs[i].start)
    expected, clock, last_end = {}, 0.0, None
    for i in order:
        j = jobs[i]
        if last_end is None:
            expected[i], last_end = 0.0, j.start + j.run_time
            continue
        offset = min(j.start, last_end) - jobs[order[0]].start - clock
        clock += max(0.0, j.start - last_end)
        expected[i] = offset
        last_end = max(last_end, j.start + j.run_time)
    assert [a.release for a in spec.apps] == pytest.approx([expected[i] for i in range(len(jobs))])
    assert max(a.release for a in spec.apps) <= sum(j.run_time for j in jobs)
    text = out.read_text()
    assert "none of the logs ran left out" in text and "its I/O takes its log's" in text
    assert CliRunner().invoke(cli, ["simulate", str(out), "--json"]).exit_code == 0


def test_one_log_keeps_its_bytes_and_time():
    from iolab.workloads.darshan import io_spec

    j = read_darshan(SAMPLE)
    data, notes = io_spec([j], unit_bytes=2**20)
    units = sum(v for p in data["apps"][0]["phases"] for k, v in p.items() if k != "compute")
    assert units * 2**20 == pytest.approx(j.read_bytes + j.write_bytes) and notes == []
    assert units / data["platform"]["bandwidth"] == pytest.approx(j.io_time)


def test_cli_batch_jobs(tmp_path):
    out = tmp_path / "b.yaml"
    res = CliRunner().invoke(cli, ["workload", "import", "darshan", str(SAMPLE), str(NOPOSIX), "--kind", "batch",
                                   "--align", "zero", "--ranks-per-node", "32", "-o", str(out)])
    assert res.exit_code == 0, res.output
    jobs = yaml.safe_load(out.read_text())["workload"]["jobs"]
    assert [(j["nodes"], j["submit"], j["runtime"], j["input"], j["output"]) for j in jobs] == [
        (64, 0.0, 117.0, 0, 2199023259968 + 3309), (16, 0.0, 39213.0, 1812408359, 29562779)]
    assert load_spec(out).platform.nodes == 64
    res = CliRunner().invoke(cli, ["workload", "import", "darshan", str(SAMPLE), str(NOPOSIX), "--kind", "batch",
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    a, b = sorted((read_darshan(SAMPLE), read_darshan(NOPOSIX)), key=lambda j: j.start)
    submits = sorted(j["submit"] for j in yaml.safe_load(out.read_text())["workload"]["jobs"])
    assert submits == pytest.approx([0.0, min(b.start - a.start, a.run_time)])


def test_bad_logs_named_exit_2(tmp_path):
    cut = tmp_path / "cut.darshan"
    cut.write_bytes(DXT.read_bytes()[:5000])
    notlog = tmp_path / "notlog.darshan"
    notlog.write_text("hello\n")
    for bad, why in ((cut, "truncated"), (notlog, "not a Darshan log"), (tmp_path / "none.darshan", "no such")):
        res = CliRunner().invoke(cli, ["workload", "import", "darshan", str(DXT), str(bad), "-o",
                                       str(tmp_path / "o.yaml")])
        assert res.exit_code == 2, res.output
        assert str(bad) in res.output and why in res.output and "Traceback" not in res.output
        assert not (tmp_path / "o.yaml").exists()
    with pytest.raises(DarshanLogError, match="cut.darshan"):
        read_darshan(cut)


def test_emulable_phases():
    from iolab.workloads.darshan import emulable_phases

    ph = [{"compute": 1.0}, {"read": 0.5}, {"compute": 2.0}, {"read": 3.0}, {"write": 0.2}, {"compute": 1.0},
          {"write": 0.3}, {"compute": 4.0}, {"write": 0.1}]
    out, ch = emulable_phases(ph, 1.0)
    # the 0.5 read joins the 3.0 one; the writes (0.6 in all) become one of 1.0 where the largest (0.3) was;
    # 3.5 read before any write: written first
    assert out == [{"write": 3.5}, {"compute": 3.0}, {"read": 3.5}, {"compute": 1.0}, {"write": 1.0},
                   {"compute": 4.0}]
    assert ch == {"merged": 3.0, "added": pytest.approx(0.4 + 3.5)}
    assert sum(p.get("compute", 0) for p in out) == sum(p.get("compute", 0) for p in ph)


def test_for_emulator_spec_passes_the_emulators_checks(tmp_path):
    from iolab.emulator.io.prerun_checks import check_runnable

    plain, real = tmp_path / "plain.yaml", tmp_path / "real.yaml"
    for out, extra in ((plain, []), (real, ["--for-emulator"])):
        res = CliRunner().invoke(cli, ["workload", "import", "darshan", str(IOR), str(DXT), "--align", "zero",
                                       "-o", str(out), *extra])
        assert res.exit_code == 0, res.output
    with pytest.raises(Exception, match="reads before it ever writes"):
        check_runnable(load_spec(plain), tmp_path / "w1")
    check_runnable(load_spec(real), tmp_path / "w2")  # raises if the emulator could not run it
    assert "for a real run" in real.read_text()


@pytest.mark.mpi
@pytest.mark.ray
def test_darshan_pattern_replays_through_the_middleware(tmp_path):
    """Two 1-second logs imported --for-emulator and run for real: the trace holds their phases."""
    from iolab.trace import read_trace

    spec = tmp_path / "d.yaml"
    res = CliRunner().invoke(cli, ["workload", "import", "darshan", str(IOR), str(LOGS.parents[1] / "tests" / "input" /
                                   "sample-dxt-simple.darshan"), "--align", "zero", "--for-emulator", "-o", str(spec)])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["emulate", str(spec), "--out", str(tmp_path / "run.h5")])
    assert res.exit_code == 0, res.output
    trace = read_trace(tmp_path / "run.h5")
    want = load_spec(spec)
    for app in want.apps:
        got = [(r["kind"], r["volume"]) for r in trace.phases.rows() if r["job"] == app.id and r["kind"] != "compute"]
        assert [k for k, _ in got] == [k for k, _ in app.phase_list() if k != "compute"]
        assert [v for _, v in got] == pytest.approx([a for k, a in app.phase_list() if k != "compute"])
    assert set(trace.jobs["status"]) == {"ok"}


def test_memory_does_not_grow_with_records():
    """2051 records (sample-badost): the streamed read peaks far below holding them (PyDarshan's full report)."""
    import tracemalloc

    log = LOGS / "sample-badost.darshan"
    read_darshan(log)  # imports and caches out of the measure
    tracemalloc.start()
    j = read_darshan(log, bins=64)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    tracemalloc.start()
    darshan.DarshanReport(str(log), read_all=True)
    full = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert j.records == 2051
    assert peak < 256 * 1024 and peak * 10 < full
