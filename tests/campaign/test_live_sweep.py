"""``iolab sweep --live`` in a real pseudo-terminal: runs done / running, a row per worker
slot naming its run; Ctrl-C exits 130 and leaves the terminal usable; off a terminal the
plain ``[done/total]`` lines stay."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from campaign_helpers import small_campaign, sweep_env
from pty_terminal import Terminal, plain

pytestmark = pytest.mark.ray

SWEEP = [sys.executable, "-c", "from iolab.cli import main; main()", "sweep"]


def test_sweep_live_shows_each_worker_and_ctrl_c_leaves_the_terminal_usable(tmp_path):
    camp = small_campaign(tmp_path / "c.yaml", name="live", runtime="iolab_test_runtimes:counting")
    term = Terminal(SWEEP + [str(camp), "--out", str(tmp_path / "out"), "--workers", "2", "--live"],
                    env=sweep_env({"IOLAB_TEST_SLEEP": "1.0"}), cwd=tmp_path)
    try:
        def two_done_two_running(b: bytes) -> bool:
            t = plain(b)
            m = re.findall(r"done (\d+)/20 \((\d+) failed\), running (\d+)", t)
            return bool(m) and int(m[-1][0]) >= 2 and int(m[-1][2]) == 2 and all(
                re.search(rf"│ {slot}\s+│ [a-z-]+ × \S+ × seed \d+\s+│", t) for slot in (0, 1))

        term.read(180, two_done_two_running)
        text = plain(term.screen)
        assert two_done_two_running(term.screen), text[-3000:]
        assert "workers" in text and "runs/min" in text and "ETA" in text
        assert term.proc.poll() is None, "the sweep ended before Ctrl-C"
        term.ctrl_c()
        tail = plain(term.read(60))
        assert term.proc.wait(timeout=60) == 130, tail[-2000:]
        assert "interrupted" in tail
        assert term.usable() == []
    finally:
        term.close()


def test_sweep_live_off_a_terminal_prints_the_plain_lines(tmp_path):
    camp = small_campaign(tmp_path / "c.yaml", name="plain", runtime="iolab_test_runtimes:counting",
                          policies=["fifo"], workloads=[{"generate": "carretero", "alpha": [1, 2], "count": 1,
                                                         "params": {"apps": [3, 6], "iterations": [5, 10]}}])
    r = subprocess.run(SWEEP + [str(camp), "--out", str(tmp_path / "out"), "--workers", "2", "--live"],
                       env=sweep_env(), capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "\x1b[" not in r.stderr
    assert re.search(r"^\[2/2\] 100% elapsed", r.stderr, re.M), r.stderr
    # Ray's own start-up lines (the token-authentication WARNING, "INFO worker.py ... Started a local
    # Ray instance") are not the sweep's: its logging level is ERROR
    assert not re.search(r"\b(WARNING|INFO)\b", r.stderr) and "Ray instance" not in r.stderr, r.stderr
    assert not re.search(r"runs\s*$", r.stderr, re.M), r.stderr  # no trailing empty label
