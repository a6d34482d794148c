"""Real SIGSTOP/SIGCONT of a job's whole process group (mpiexec and its ranks)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from iolab.emulator.launchers import find_mpiexec, mpiexec_command
from iolab.emulator.shell import kill_tree, spawn
from iolab.emulator.slurm_launch import MpiexecApps
from iolab.emulator.suspension import Suspender, group_members, process_state, process_tree
from polling import settled

# every rank bumps its own counter file as fast as it can
COUNTER = ("import os, sys, time\n"
           "from mpi4py import MPI\n"
           "r = MPI.COMM_WORLD.Get_rank()\n"
           "p = os.path.join(sys.argv[1], f'count-{r}')\n"
           "n = 0\n"
           "while True:\n"
           "    n += 1\n"
           "    with open(p + '.tmp', 'w') as f: f.write(str(n))\n"
           "    os.replace(p + '.tmp', p)\n"
           "    time.sleep(0.01)\n")


def counts(d: Path, ranks: int) -> list[int]:
    return [int((d / f"count-{r}").read_text()) for r in range(ranks)]


def wait_for(pred, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def start_counters(tmp_path):
    """Two MPI ranks under mpiexec, each counting into ``tmp_path/count-RANK``."""
    script = tmp_path / "counter.py"
    script.write_text(COUNTER)
    return spawn(mpiexec_command(2, [sys.executable, str(script), str(tmp_path)], mpiexec=find_mpiexec()),
                 log_path=tmp_path / "log")


@pytest.mark.mpi
def test_sigstop_stops_every_rank_and_sigcont_continues(tmp_path):
    proc = start_counters(tmp_path)
    calls = []
    try:
        assert wait_for(lambda: all((tmp_path / f"count-{r}").exists() for r in range(2))), \
            (tmp_path / "log").read_text()
        # MPICH's proxy and ranks leave mpiexec's process group (setsid): the tree is the job
        assert group_members(proc.pid) == [proc.pid]
        tree = process_tree(proc.pid)
        assert tree[0] == proc.pid and len(tree) >= 4  # mpiexec, hydra proxy, 2 ranks
        def hook(kind):  # what a hook sees: the time it is given, the ranks' states, the time it runs
            return lambda j, at: calls.append((kind, j, at, {process_state(p) for p in tree}, time.time()))

        s = Suspender(on_suspend=hook("s"), on_resume=hook("r"))
        t_suspend = time.time()
        assert s.suspend("job1", proc.pid)
        assert wait_for(lambda: all(process_state(p) in ("T", "t") for p in tree))
        before = settled(lambda: counts(tmp_path, 2))  # a write in flight when the ranks stopped may still land
        time.sleep(0.5)
        assert counts(tmp_path, 2) == before  # no progress while stopped
        t_resume = time.time()
        s.resume("job1")
        assert wait_for(lambda: all(c > b for c, b in zip(counts(tmp_path, 2), before)))
        assert not [p for p in process_tree(proc.pid) if process_state(p) in ("T", "t")]
        assert [(k, j) for k, j, *_ in calls] == [("s", "job1"), ("r", "job1")]
        (_, _, sus_at, sus_states, sus_called), (_, _, res_at, _, res_called) = calls
        # the books get the time the ranks had stopped (every one of them is stopped when the hook runs),
        # and the time the continue signal went out: not the time a hook's message would arrive
        assert sus_states <= {"T", "t"} and t_suspend <= sus_at <= sus_called
        assert t_resume <= res_at <= res_called
    finally:
        kill_tree(proc, grace=1.0)


@pytest.mark.mpi
def test_an_exception_leaves_no_job_stopped(tmp_path):
    script = tmp_path / "counter.py"
    script.write_text(COUNTER)
    for i in range(2):
        (tmp_path / str(i)).mkdir()
    procs = [spawn(mpiexec_command(1, [sys.executable, str(script), str(tmp_path / str(i))],
                                   mpiexec=find_mpiexec()), log_path=tmp_path / f"log{i}") for i in range(2)]
    try:
        assert wait_for(lambda: all((tmp_path / str(i) / "count-0").exists() for i in range(2)))
        with pytest.raises(KeyboardInterrupt):
            with Suspender() as s:
                for i, p in enumerate(procs):
                    s.suspend(f"j{i}", p.pid)
                assert wait_for(lambda: all(process_state(q) in ("T", "t") for p in procs
                                            for q in process_tree(p.pid)))
                stopped_at = settled(lambda: [counts(tmp_path / str(i), 1)[0] for i in range(2)])
                time.sleep(0.3)
                assert [counts(tmp_path / str(i), 1)[0] for i in range(2)] == stopped_at
                raise KeyboardInterrupt  # Ctrl-C of the run
        assert s.stopped == {}
        assert wait_for(lambda: all(counts(tmp_path / str(i), 1)[0] > stopped_at[i] for i in range(2)))
    finally:
        for p in procs:
            kill_tree(p, grace=1.0)


def test_a_gone_group_is_reported_not_raised():
    s = Suspender()
    assert s.suspend("ghost", 2 ** 22 + 12345) is False  # no such process
    assert s.stopped == {}
    assert process_state(2 ** 22 + 12345) == ""


@pytest.mark.mpi
def test_mpiexec_apps_suspend_stops_the_real_ranks(tmp_path):
    proc = start_counters(tmp_path)
    apps = MpiexecApps(find_mpiexec(), tmp_path / "hosts")
    try:
        assert wait_for(lambda: all((tmp_path / f"count-{r}").exists() for r in range(2)))
        apps.suspend("A", proc)
        tree = process_tree(proc.pid)
        assert wait_for(lambda: all(process_state(p) in ("T", "t") for p in tree))
        frozen = settled(lambda: counts(tmp_path, 2))  # a write in flight when the ranks stopped may still land
        time.sleep(0.5)
        assert counts(tmp_path, 2) == frozen
        apps.resume("A", proc)
        assert wait_for(lambda: all(c > f for c, f in zip(counts(tmp_path, 2), frozen)))
    finally:
        kill_tree(proc, grace=1.0)


def test_wait_halted_returns_once_the_processes_are_stopped_and_not_before():
    """A suspension is recorded once its processes really stopped (``wait_halted``): True when every
    one is in state T or gone, False after ``settle`` if one still runs."""
    import signal
    import subprocess

    from iolab.emulator.suspension import wait_halted

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        t0 = time.monotonic()
        assert wait_halted([busy.pid], settle=0.3) is False  # running: not halted
        assert time.monotonic() - t0 >= 0.3
        busy.send_signal(signal.SIGSTOP)
        assert wait_halted([busy.pid], settle=5.0) is True
        assert process_state(busy.pid) == "T"  # stopped when it returned
        busy.send_signal(signal.SIGCONT)
    finally:
        busy.kill()
        busy.wait()
    assert wait_halted([busy.pid], settle=0.0) is True  # gone counts as halted
