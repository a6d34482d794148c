"""One sweep per output folder: a second ``iolab sweep`` of the same campaign on the same --out,
started while the first runs, is refused at once (exit 2, the first's PID); each run executes once."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from iolab.campaign import load_runs
from iolab.emulator.output_lock import lock_path

from campaign_helpers import small_campaign, sweep_env

pytestmark = pytest.mark.ray
SWEEP = [sys.executable, "-c", "from iolab.cli import main; main()", "sweep"]


@pytest.mark.long
def test_a_sweep_started_twice_on_one_output_executes_each_run_once(tmp_path):
    camp = small_campaign(tmp_path / "c.yaml", name="twice", runtime="iolab_test_runtimes:counting")
    ids = {r.run_id for r in load_runs(camp)[1]}
    out, log = tmp_path / "out", tmp_path / "executions.log"
    env = sweep_env({"IOLAB_TEST_EXEC_LOG": str(log), "IOLAB_TEST_SLEEP": "0.2"})
    cmd = SWEEP + [str(camp), "--out", str(out), "--workers", "2"]
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not lock_path(out).exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert lock_path(out).exists(), "the first sweep never locked its output"
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr
        assert f"process {first.pid}" in second.stderr and "Traceback" not in second.stderr
        _, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    runs = log.read_text().split()
    assert sorted(runs) == sorted(ids)  # every run executed exactly once
    lines = (out / "journal.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["run_id"] for x in lines) == sorted(ids)
    assert not lock_path(out).exists()


def test_a_run_whose_trace_has_a_failed_app_is_recorded_failed_with_its_trace(tmp_path, monkeypatch):
    import iolab_test_runtimes  # noqa: F401 - importable here (the tests' folder is on sys.path)
    from iolab.campaign.task import execute

    camp = small_campaign(tmp_path / "c.yaml", name="fails", runtime="iolab_test_runtimes:first_app_fails")
    run = load_runs(camp)[1][0]
    rec = execute(run.payload(), traces_dir=str(tmp_path / "traces"))
    assert rec["status"] == "failed" and "1 app(s) did not end ok" in rec["error"]
    assert rec["trace"] and (tmp_path / "traces" / f"{run.run_id}.h5").exists()
