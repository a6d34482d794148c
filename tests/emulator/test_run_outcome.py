"""What a real run's exit code and trace say when it goes wrong (docs/cli.md, "Exit codes"):
every app failing (a full disk) exits 1 with the trace written and no MPICH segment or hydra file left; a second run on the same --out
is refused with exit 2 and the first's PID while the first completes; a work folder deleted
mid-run is reported and exits 1.  Each test runs ``iolab emulate`` as a user does."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from iolab.emulator.output_lock import lock_path
from iolab.trace import read_trace
from private_tmp import PrivateTmp, Watch
from small_runs import small_io

pytestmark = [pytest.mark.mpi, pytest.mark.ray]

IOLAB = [str(Path(sys.executable).parent / "iolab")]


def write_spec(tmp_path: Path, name: str, iterations: int | None = None, **extra) -> Path:
    spec = small_io(name, **extra)
    if iterations is not None:  # shorter runs (CI time) where the test only needs the run under way
        spec["apps"] = [{**a, "iterations": iterations} for a in spec["apps"]]
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(spec))
    return p


@pytest.fixture
def tiny_disk(tmp_path):
    """A 256 kB tmpfs: an app's first 512 kB checkpoint does not fit (ENOSPC), as on a full disk."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.long
def test_a_run_whose_apps_all_fail_exits_1_with_the_trace_written(tmp_path, tiny_disk):
    spec = write_spec(tmp_path, "full-disk")
    out = tmp_path / "run.h5"
    private = PrivateTmp(tmp_path)  # the run's own /dev/shm and /tmp, empty before
    watch = Watch(private)
    run = subprocess.Popen(private.wrap(IOLAB + ["emulate", str(spec), "--out", str(out), "--work-dir",
                                                 str(tiny_disk / "w"), "--quiet"]),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with run:  # its files, seen while it runs
        deadline = time.time() + 300
        while run.poll() is None and time.time() < deadline:
            watch.poll()
            time.sleep(0.1)
        r = subprocess.CompletedProcess(run.args, run.wait(timeout=1), *run.communicate())
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert "run failed: 2 of 2 app(s)/job(s) did not end ok" in r.stderr
    t = read_trace(out)
    assert set(t.jobs["status"]) == {"failed"} and set(t.attrs["failures"]) == {"A", "B"}
    assert watch.seen, "the run made no MPICH or hydra file: the check below would prove nothing"
    assert sorted(private.new()) == []


@pytest.mark.long
def test_a_second_run_on_the_same_out_is_refused_and_the_first_completes(tmp_path):
    spec = write_spec(tmp_path, "same-out", iterations=15)
    out = tmp_path / "same.h5"
    first = subprocess.Popen(IOLAB + ["emulate", str(spec), "--out", str(out)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not lock_path(out).exists() and first.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        assert lock_path(out).exists(), "the first run never locked its output"
        second = subprocess.run(IOLAB + ["emulate", str(spec), "--out", str(out)], capture_output=True, text=True,
                                timeout=120)
        assert second.returncode == 2
        assert f"process {first.pid}" in second.stderr and "Traceback" not in second.stderr
        so, se = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, se
    t = read_trace(out)
    assert t.attrs["complete"] is True and list(t.jobs["status"]) == ["ok", "ok"]
    assert not lock_path(out).exists()


@pytest.mark.long
def test_a_work_folder_deleted_mid_run_is_reported_and_exits_1(tmp_path):
    spec = write_spec(tmp_path, "deleted", iterations=20)
    out, work = tmp_path / "run.h5", tmp_path / "w"
    run = subprocess.Popen(IOLAB + ["emulate", str(spec), "--out", str(out), "--work-dir", str(work)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not any((work / "io-node-0").glob("*/ckpt-*")) and time.time() < deadline and run.poll() is None:
            time.sleep(0.05)
        subprocess.run(["rm", "-rf", str(work)], check=True)
        so, se = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1, se
    assert "was deleted during the run" in se and "Traceback" not in se
    assert read_trace(out).attrs["work_dir_deleted"] >= 0
