"""A broken policy of the user's in a real run: stopped at the rule it breaks, as in the simulator (exit 1, the
rule, the policy and the time named, every job killed, the partial trace written), whether it runs in the
driver (a batch scheduler) or in a Ray actor (an I/O nodes' order that raises)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from iolab.trace import read_trace

from policy_files import write
from small_runs import tiny_batch

GREEDY = '''
from iolab.policy import BatchScheduler


class Greedy(BatchScheduler):
    """Starts every waiting job at once, whatever is free."""

    def decide(self, snap):
        return [j.id for j in snap.queue]


class GreedyWhenLate(BatchScheduler):
    """FCFS at whole seconds; at any other time, every waiting job at once.  Every decision of the simulation
    emulate runs first falls on a whole second (the jobs' times are whole seconds), a real run's never do:
    the broken answer comes in the real run only."""

    def decide(self, snap):
        if snap.now == int(snap.now):
            free, out = snap.free_nodes, []
            for j in snap.queue:
                if j.nodes > free:
                    break
                out.append(j.id)
                free -= j.nodes
            return out
        return [j.id for j in snap.queue]
'''

RAISES = '''
from iolab.policy import IOOrder


class Picky(IOOrder):
    """FIFO for requests at whole seconds (every one of the simulation emulate runs first), and fails on any
    other (a real run's)."""

    def key(self, request, now):
        if request.requested_at != int(request.requested_at):
            raise LookupError(f"no rank for {request.app}")
        return request.requested_at
'''


def run(tmp_path, doc) -> tuple[subprocess.CompletedProcess, object]:
    (tmp_path / "s.json").write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "iolab", "emulate", "s.json", "--out", "t.h5", "--strict"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=240)
    return r, (read_trace(tmp_path / "t.h5") if (tmp_path / "t.h5").exists() else None)


def test_a_scheduler_that_double_books_is_stopped_before_any_process_starts(tmp_path):
    write(tmp_path, "greedy.py", GREEDY)
    doc = tiny_batch("greedy")
    doc["scheduler"] = "greedy.py:Greedy"
    doc["platform"]["nodes"] = 1  # two 1-node jobs at once on one node
    r, trace = run(tmp_path, doc)
    assert r.returncode == 1, r.stderr[-3000:]
    assert "invariant 'node-double-booked' violated at t=0" in r.stderr and "greedy.py:Greedy" in r.stderr
    assert "in the simulation `iolab emulate` runs first" in r.stderr and "Traceback" not in r.stderr
    assert trace is None  # nothing ran


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_a_scheduler_that_double_books_in_the_real_run_stops_it(tmp_path):
    write(tmp_path, "greedy.py", GREEDY)
    doc = tiny_batch("late")
    doc["scheduler"] = "greedy.py:GreedyWhenLate"
    doc["platform"]["nodes"] = 1
    doc["workload"] = [{"id": j, "submit": 10 * i, "nodes": 1, "walltime": 300, "runtime": 100} for i, j in
                       enumerate("abc")]
    r, trace = run(tmp_path, doc)
    assert r.returncode == 1, r.stderr[-3000:]
    assert "invariant 'node-double-booked' violated at t=" in r.stderr and "greedy.py:GreedyWhenLate" in r.stderr
    assert "emulate` runs first" not in r.stderr and "Traceback" not in r.stderr
    assert trace is not None and trace.attrs["complete"] is False
    assert {row["status"] for row in trace.jobs.rows()} <= {"killed", "pending"}


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_an_io_order_that_raises_in_the_actor_stops_a_real_run_with_the_users_line(tmp_path):
    path = write(tmp_path, "picky.py", RAISES)
    doc = tiny_batch("picky")
    doc["platform"].update(io_nodes=1, nodes_per_io_node=2, io_node={"rate": "1 GB/s", "policy": "picky.py:Picky"})
    doc["workload"] = [{"id": j, "submit": 0, "nodes": 1, "walltime": 300, "runtime": 20 + 40 * i, "output": "20GB"}
                       for i, j in enumerate("ab")]
    r, trace = run(tmp_path, doc)
    assert r.returncode == 1, r.stderr[-3000:]
    assert "policy picky.py:Picky raised" in r.stderr and "LookupError: no rank for " in r.stderr
    assert f"{path}:11 in key" in r.stderr, r.stderr[-2000:]
    assert "emulate` runs first" not in r.stderr
    assert trace is not None and trace.attrs["complete"] is False
    assert {row["status"] for row in trace.jobs.rows()} <= {"killed", "ok"}
