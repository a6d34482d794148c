"""``--live``: the view drawn from snapshots, off a terminal (plain lines) and in a real pseudo-terminal.

The pty test runs ``iolab emulate --live`` as a user does: its stdout and stderr are the
slave side of a pty that is its controlling terminal, Ctrl-C is the byte ``\\x03`` typed
into the master (the kernel's line discipline turns it into SIGINT for the foreground
process group, as a real terminal does).
"""

from __future__ import annotations

import io
import os
import re
import sys
import time
from pathlib import Path

import pytest

import yaml
from rich.console import Console

from iolab.campaign.sweep import SweepSummary, sweep_snapshot
from iolab.cli.live import LiveView, SweepView, render
from pty_terminal import HIDE_CURSOR, Terminal, plain
from small_runs import small_batch, small_io

IO_SNAP = {"kind": "io", "time": 12.5, "elapsed": 30.0, "policy": "fifo",
           "progress": {"phases_done": 3, "phases_total": 8},
           "io_nodes": [{"node": 0, "grant": ["A"], "waiting": ["C", "B"], "held": []},
                        {"node": 1, "grant": [], "waiting": [], "held": ["D"]}],
           "apps": [{"id": "A", "status": "running", "io_node": 0, "phase": "write", "phases_done": 1,
                     "phases_total": 2, "waiting": False, "transferring": True, "suspended": False},
                    {"id": "D", "status": "running", "io_node": 1, "phase": "read", "phases_done": 2,
                     "phases_total": 4, "waiting": True, "transferring": False, "suspended": True}],
           "suspended": ["D"]}
BATCH_SNAP = {"kind": "batch", "time": 100.0, "elapsed": 3.0, "scheduler": "sas",
              "tiers": [{"tier": "hps", "capacity": 15e6, "used": 6e6, "free": 9e6, "waiting": ["b"]},
                        {"tier": "nodes", "capacity": 4, "used": 2, "free": 2, "waiting": []}],
              "jobs": [{"id": "a", "state": "running", "tier": "hps", "nodes": 2, "step": 1, "steps": 3,
                        "elapsed": 40.0, "walltime": 900.0}],
              "suspended": []}


def text_of(snap: dict) -> str:
    c = Console(file=io.StringIO(), width=140, color_system=None)
    c.print(render(snap))
    return c.file.getvalue()


def row(text: str, *cells: str) -> bool:
    """Some line of ``text`` holds every cell, in order."""
    return any(re.search(".*".join(re.escape(c) for c in cells), ln) for ln in text.splitlines())


def test_io_view_shows_grant_queue_apps_and_suspensions():
    t = text_of(IO_SNAP)
    assert row(t, "0", "A", "C, B") and row(t, "1", "idle", "-", "D")
    assert row(t, "A", "running", "0", "write (granted)", "1/2")
    assert row(t, "D", "running", "1", "read (suspended)", "2/4")
    assert "suspended by the controller: D" in t and "policy fifo" in t and "phases 3/8" in t


def test_batch_view_shows_tiers_used_free_and_jobs():
    t = text_of(BATCH_SNAP)
    assert row(t, "hps", "6.0 MB", "9.0 MB", "15.0 MB", "b") and row(t, "nodes", "2", "2", "4")
    assert row(t, "a", "running", "hps", "2", "2/3", "40/900 s")
    assert "suspended by the controller: -" in t and "jobs 1 running" in t
    many = {**BATCH_SNAP, "jobs": [{**BATCH_SNAP["jobs"][0], "id": f"j{i}", "state": st}
                                   for i, st in enumerate(["done"] * 5 + ["queued"] * 45)]}
    t = text_of(many)
    assert "jobs 5 done, 45 queued" in t and "... 5 more jobs" in t
    assert not row(t, "j0", "done") and row(t, "j5", "queued") and not row(t, "j49", "queued")


def test_batch_view_with_io_nodes_shows_each_io_nodes_grant_queue_and_held_jobs():
    snap = {**BATCH_SNAP, "io_policy": "shortest-io",
            "io_nodes": [{"node": 0, "grant": ["a"], "waiting": ["c", "b"], "held": []},
                         {"node": 1, "grant": [], "waiting": [], "held": ["d"]}]}
    t = text_of(snap)
    assert "I/O nodes (shortest-io)" in t
    assert row(t, "0", "a", "c, b", "-") and row(t, "1", "idle", "-", "d")
    assert "I/O nodes" not in text_of(BATCH_SNAP)  # a platform without I/O nodes: no such table

def test_sweep_snapshot_and_view_count_runs_and_name_each_slot():
    s = SweepSummary("c", Path("."), 10, 2, 3, 2, 1, 0.0, 2)  # 3 executed: 2 ok, 1 failed
    t_run = time.perf_counter() - 60.0
    run = lambda i, policy: type("R", (), {"run_id": f"run-000{i}", "params": {  # noqa: E731
        "policy": policy, "workload": "table1", "seed": 7, "mapping": "first-fit", "replicate": 0}})()
    pending = {"r1": run(4, "fifo"), "r2": run(5, "stretch")}
    since = {"r1": (1, time.perf_counter() - 5.0), "r2": (0, time.perf_counter() - 1.0)}
    snap = sweep_snapshot("c", s, 8, pending, since, t_run)
    assert (snap["done"], snap["failed"], snap["total"], snap["skipped"]) == (3, 1, 8, 2)
    assert [r["run_id"] for r in snap["running"]] == ["run-0005", "run-0004"]  # by slot
    assert [r["run"] for r in snap["running"]] == ["stretch \u00d7 table1 \u00d7 seed 7", "fifo \u00d7 table1 \u00d7 seed 7"]
    assert 4.5 < snap["running"][1]["seconds"] < 30 and 59 < snap["elapsed"] < 120
    t = text_of(snap)
    assert "done 3/8 (1 failed), running 2" in t and "3.0 runs/min" in t and "ETA 1:40" in t
    assert row(t, "0", "stretch \u00d7 table1 \u00d7 seed 7") and row(t, "1", "fifo \u00d7 table1 \u00d7 seed 7")
    assert "run-000" not in t


def test_off_a_terminal_the_sinks_print_plain_lines():
    out = io.StringIO()
    v = LiveView(True, stream=out, every=0.0)
    assert not v.live  # the runtime then asks for no snapshots
    v.note("clock started")
    v.update({"phases_done": 1, "phases_total": 4, "work_done": 1.0, "work_total": 4.0, "running": 2,
              "ended": 0, "apps": 2}, 10.0)
    v.show(IO_SNAP)  # ignored
    v.done()
    lines = out.getvalue().splitlines()
    assert lines[0] == "[emulate] clock started" and lines[1].startswith("[emulate] phases 1/4")
    assert len(lines) == 2 and "\x1b" not in out.getvalue()
    out = io.StringIO()
    sv = SweepView(2, "runs", stream=out, every=0.0)
    sv.step()
    sv.show({"kind": "sweep"})
    sv.close()
    assert not sv.live and out.getvalue().startswith("[1/2]  50%")


# ------------------------------------------------------------------ a real run in a real pty

TINY = small_io("live", policy="fifo")
TINY_BATCH = small_batch("live-batch")
# what the screen shows once the run is under way: the header of its first table and a row per app/job
DRAWN = {"io": ("I/O nodes", (r"\bA\s.*running", r"\bB\s.*running")),
         "batch": ("tiers", (r"\bhps\s.*GB", r"\ba\s.*(stage-in|running)", r"\bb\s.*(stage-in|running)"))}


@pytest.mark.long
@pytest.mark.mpi
@pytest.mark.ray
@pytest.mark.parametrize("kind", ["io", "batch"])
def test_emulate_live_draws_in_a_pty_and_ctrl_c_leaves_the_terminal_usable(tmp_path, kind):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(TINY if kind == "io" else TINY_BATCH))
    term = Terminal([sys.executable, "-m", "iolab", "emulate", str(spec), "--live", "--out",
                     str(tmp_path / "run.h5")], env=dict(os.environ), cwd=tmp_path)
    try:
        def drawn(b: bytes) -> bool:
            t = plain(b)
            title, rows = DRAWN[kind]
            return title in t and all(re.search(r, t) for r in rows)

        term.read(150, drawn)
        text = plain(term.screen)
        assert drawn(term.screen), text[-3000:]
        assert term.proc.poll() is None, "the run ended before Ctrl-C: the check below would prove nothing"
        if kind == "io":
            assert "grant" in text and "waiting (policy order)" in text and "policy fifo" in text
        else:
            assert "used" in text and "free" in text and "scheduler sas" in text
        assert HIDE_CURSOR in term.screen  # rich hid the cursor while drawing
        term.ctrl_c()
        tail = plain(term.read(90))
        rc = term.proc.wait(timeout=60)
        assert rc in (1, 130), tail[-2000:]  # 1 until issue 13 item 6 makes every command exit 130
        assert "interrupted" in tail, tail[-2000:]
        # the last frame drawn shows what the interruption did: nothing still "running"
        last = plain(term.screen)
        last = last[last.rfind("policy fifo" if kind == "io" else "scheduler sas"):]
        if kind == "io":
            assert re.search(r"\bA\s.*killed", last) and re.search(r"\bB\s.*killed", last), last[-2000:]
            assert not re.search(r"\b[AB]\s.*running", last), last[-2000:]
        else:
            assert re.search(r"jobs [^\n]*2 killed", last), last[-2000:]
            assert not re.search(r"\b[ab]\s.*(stage-in|running)", last), last[-2000:]
        assert term.usable() == []
    finally:
        term.close()
