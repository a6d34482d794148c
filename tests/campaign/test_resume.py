"""Kill ``iolab sweep`` half-way with SIGKILL, rerun it: only the missing runs execute,
and the results equal an uninterrupted run (with another worker count)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iolab.campaign import load_results, load_runs, run_campaign
from iolab.campaign.journal import Journal
from iolab.campaign.results import equal

from campaign_helpers import small_campaign, sweep_env

pytestmark = pytest.mark.ray
SWEEP = [sys.executable, "-c", "from iolab.cli import main; main()", "sweep"]


def session_pids(sid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "-s", str(sid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def kill_session(sid: int, timeout: float = 30.0) -> None:
    """SIGKILL every process of the sweep's session (its Ray: GCS, raylet, workers), by PID."""
    deadline = time.monotonic() + timeout
    while (pids := session_pids(sid)) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    assert not session_pids(sid), "processes of the killed sweep survived"


def kill_after_records(cmd: list[str], journal: Path, records: int, *, timeout: float, env=None,
                       what: str = "the sweep") -> None:
    """Start ``cmd`` in its own session, SIGKILL it (and its Ray) once ``journal`` holds ``records`` lines."""
    proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.exists() and journal.read_bytes().count(b"\n") >= records:
                break
            time.sleep(0.01)
        assert proc.poll() is None, f"{what} ended before it could be killed: {proc.stderr.read().decode()}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        kill_session(proc.pid)


def executed(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


@pytest.mark.long
def test_sigkill_then_resume_runs_only_the_missing_runs(ray_local, tmp_path):
    camp = small_campaign(tmp_path / "c.yaml", name="resume", runtime="iolab_test_runtimes:counting")
    _, runs = load_runs(camp)
    ids = {r.run_id for r in runs}
    assert len(ids) == 20
    out, log = tmp_path / "out", tmp_path / "executions.log"
    env = sweep_env({"IOLAB_TEST_EXEC_LOG": str(log), "IOLAB_TEST_SLEEP": "0.25"})
    cmd = SWEEP + [str(camp), "--out", str(out), "--workers", "2"]

    journal = out / "journal.jsonl"
    kill_after_records(cmd, journal, 5, timeout=120, env=env)
    done_at_kill = Journal(journal).load()
    assert 5 <= len(done_at_kill) < 20
    assert set(done_at_kill) <= ids
    first_pass = executed(log)
    assert set(done_at_kill) <= set(first_pass)

    rerun = subprocess.run(cmd, env={**env, "IOLAB_TEST_SLEEP": "0"}, capture_output=True, text=True, timeout=180)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(done_at_kill)} done earlier, {20 - len(done_at_kill)} to run" in rerun.stderr
    second_pass = executed(log)[len(first_pass):]
    assert sorted(second_pass) == sorted(ids - set(done_at_kill))  # each missing run once, nothing else
    lines = journal.read_text().splitlines()
    assert len(lines) == 20 and {__import__("json").loads(x)["run_id"] for x in lines} == ids

    # the same campaign uninterrupted, one run at a time, in this process's Ray
    base_out = tmp_path / "uninterrupted"
    s = run_campaign(camp, base_out, workers=1, progress=False)
    assert (s.executed, s.ok) == (20, 20)
    resumed, straight = load_results(out), load_results(base_out)
    assert len(resumed) == 20 and equal(resumed, straight)
    assert (resumed["status"] == "ok").all()


def test_sigterm_stops_cleanly_results_written_ray_gone(tmp_path):
    camp = small_campaign(tmp_path / "c.yaml", name="term", runtime="iolab_test_runtimes:counting")
    out = tmp_path / "out"
    env = sweep_env({"IOLAB_TEST_SLEEP": "0.25"})
    proc = subprocess.Popen(SWEEP + [str(camp), "--out", str(out), "--workers", "2"], env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    journal = out / "journal.jsonl"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.exists() and journal.read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.01)
        assert proc.poll() is None, proc.stderr.read().decode()
        proc.terminate()
        rc = proc.wait(timeout=60)
        stderr = proc.stderr.read().decode()
        assert rc == 130, stderr
        assert "rerun the same command to resume" in stderr
        finished = len(Journal(journal).load())
        assert 3 <= finished < 20
        res = load_results(out / "results.h5")  # rewritten on the way out
        assert (res.attrs["finished"], res.attrs["pending"]) == (finished, 20 - finished)
        # Ray stopped with the driver: only its two agents may take a moment to go
        deadline = time.monotonic() + 20
        while any("ray::" not in _cmd(p) for p in session_pids(proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in session_pids(proc.pid) if "raylet" in _cmd(p) or "gcs_server" in _cmd(p)]
    finally:
        kill_session(proc.pid)


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_journal_takes_a_study_records_nested_params_and_refuses_malformed_ones():
    """A study run's params nest (its workload parameters) and it carries result rows; the journal's
    shape check accepts that and still refuses what no writer makes."""
    import functools

    from iolab.campaign.journal import record_problem

    study = {"run_id": "a", "status": "ok", "params": {"k": 0, "params": {"apps": [25, 100]}},
             "rows": [{"makespan": 1.0}], "metrics": {}}
    assert record_problem(study, nested_params=True) is None
    assert "params" in record_problem(study)  # a sweep run's params become columns: plain values only
    record_problem = functools.partial(record_problem, nested_params=True)
    assert "params" in record_problem({**study, "params": [1, 2]})
    assert "rows" in record_problem({**study, "rows": {"makespan": 1.0}})
    assert "rows" in record_problem({**study, "rows": [1.0]})
    assert "metrics" in record_problem({**study, "metrics": {"x": [1]}})
