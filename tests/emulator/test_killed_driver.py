"""``kill -9`` of the driver of a small real run: within 10 s no process of the run is alive (counted on
/proc, by PID and start time), no MPICH shared-memory segment or hydra file it made is left (the run's
/dev/shm and /tmp are the test's own folders, empty before: :mod:`private_tmp`), and the partial trace
written as the run went is there, and ``iolab report`` says it is partial and names the apps cut short."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from iolab.cli import cli
from iolab.emulator.run_residue import descendants, start_time
from iolab.trace import read_trace
from polling import wait_until
from private_tmp import PrivateTmp, Watch
from small_runs import small_io

pytestmark = [pytest.mark.mpi, pytest.mark.ray, pytest.mark.long]

IOLAB = str(Path(sys.executable).parent / "iolab")


def test_kill_9_of_the_driver_leaves_no_process_no_segment_and_a_partial_trace(tmp_path):
    spec = small_io("killed")
    spec["emulator"]["ranks_per_app"] = 2  # two ranks on one host: MPICH's shared memory is used
    spec["apps"] = [{**a, "iterations": 200} for a in spec["apps"]]  # runs well past the kill
    path = tmp_path / "killed.yaml"
    path.write_text(yaml.safe_dump(spec))
    out, work = tmp_path / "run.h5", tmp_path / "w"
    private = PrivateTmp(tmp_path)
    assert private.before == set()
    watch = Watch(private)
    driver = subprocess.Popen(private.wrap([IOLAB, "emulate", str(path), "--out", str(out), "--work-dir", str(work)]),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and driver.poll() is None:  # the clock started, phases under way
            watch.poll()
            if out.exists() and any((work / "io-node-0").glob("*/ckpt-*")):
                break
            time.sleep(0.2)
        assert driver.poll() is None and out.exists(), "the run did not get going"
        written = out.stat().st_mtime_ns

        def going() -> bool:
            watch.poll()
            return out.stat().st_mtime_ns != written and watch.kinds() == {"shm", "tmp"}

        wait_until("one more partial trace, and MPICH's segments and hydra's files", going, timeout=60,
                   every=0.2, detail=lambda: watch.seen)
        procs = descendants(driver.pid)
        assert len(procs) >= 6  # Ray's own processes, two mpiexec with their proxies and ranks
        assert watch.kinds() == {"shm", "tmp"}, watch.seen  # segments and hydra files made: the check below bites
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()

        def alive() -> list[int]:
            return [p for p, st in procs if start_time(p) == st]

        def cmdlines(pids: list[int]) -> list[bytes]:
            out = []
            for p in pids:
                try:
                    out.append(Path(f"/proc/{p}/cmdline").read_bytes()[:120])
                except OSError:
                    pass
            return out

        wait_until("every process of the run to be gone", lambda: not alive(), timeout=10, every=0.2,
                   detail=lambda: cmdlines(alive()))
        wait_until("the run's segments and hydra files to be removed", lambda: not private.new(), timeout=10,
                   every=0.2, detail=lambda: sorted(private.new()))  # none new: before vs after
    finally:
        if driver.poll() is None:
            driver.kill()
    t = read_trace(out)
    assert t.attrs["complete"] is False
    assert len(t.phases) > 0  # the phases that ended before the kill
    r = CliRunner().invoke(cli, ["report", str(out)])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    cut = sorted(str(j["id"]) for j in t.jobs.rows() if j["status"] != "ok")
    assert cut, "the run finished before the kill"
    said = re.search(r"INTERRUPTED: .*?\b(\d+) of (\d+) apps cut short \(([^)]*)\)", r.output)
    assert said, r.output
    assert (int(said[1]), int(said[2])) == (len(cut), len(t.jobs))
    assert sorted(name.split()[0] for name in said[3].split(", ")) == cut, r.output
    log = (work / "logs" / "reaper.log").read_text()
    assert "the driver died; stopped" in log
