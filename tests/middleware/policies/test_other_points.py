"""The other decision points a user's class can fill: an I/O node's order, disk placement, node allocation and
the load controller's decision; each run through its guard, each broken answer stopped with its rule, and a
built-in re-written through the public API deciding as the built-in does."""

from __future__ import annotations

import pytest

from iolab.invariants import InvariantViolation, PolicyRaised
from iolab.sim.batch.run import simulate_batch
from iolab.sim.io.run import simulate
from iolab.specs.load import parse_spec

from policy_files import batch_doc, batch_spec, jobs, write

ORDERS = '''
from iolab.policy import IOOrder


class Fifo(IOOrder):
    """FIFO through the public API: the earliest request first (ties: the lowest id)."""

    def key(self, request, now):
        return request.requested_at


class Stretch(IOOrder):
    """carretero2020's stretch order through the public API: the worst current stretch first."""

    time_dependent = True

    def key(self, request, now):
        elapsed = now - request.start + request.io_time
        return 1.0 if elapsed <= 0 else min(1.0, (request.done + request.io_time) / elapsed)


class ChooseFifo(IOOrder):
    def choose(self, waiting, now):
        return min(waiting, key=lambda r: (r.requested_at, r.rank))


class NoneKey(IOOrder):
    def key(self, request, now):
        return None


class Foreign(IOOrder):
    def choose(self, waiting, now):
        return waiting[0]._replace(app="nobody")


class Raises(IOOrder):
    def key(self, request, now):
        return {}[request.app]
'''


def io_spec(folder, policy):
    return parse_spec({"name": "orders", "policy": policy,
                       "platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": 1.0},
                       "apps": [{"id": f"A{i}", "nodes": 2, "iterations": 12, "compute": 3.0 + i,
                                 "io_volume": 2.0 + 0.5 * i} for i in range(4)]},
                      "s.yaml", base_dir=folder)


def grants(trace) -> list[tuple]:
    return [(r["job"], r["request"], r["grant"], r["release"]) for r in trace.grants.rows()]


@pytest.mark.parametrize("mine,builtin", [("Fifo", "fifo"), ("Stretch", "stretch"), ("ChooseFifo", "fifo")])
@pytest.mark.parametrize("mode", ["event", "step"])
def test_a_built_in_order_rewritten_through_the_api_grants_as_the_built_in(tmp_path, mine, builtin, mode):
    write(tmp_path, "orders.py", ORDERS)
    ours = simulate(io_spec(tmp_path, f"orders.py:{mine}"), strict=True, mode=mode, dt=0.5)
    theirs = simulate(io_spec(tmp_path, builtin), strict=True, mode=mode, dt=0.5)
    assert grants(ours) == grants(theirs)
    assert ours.attrs["policy"] == f"orders.py:{mine}" and ours.attrs["policies"]["policy"]["class"] == mine


@pytest.mark.parametrize("cls,rule", [("NoneKey", "malformed-decision"), ("Foreign", "grant-not-waiting"),
                                      ("Raises", "policy-raised")])
def test_a_broken_order_is_stopped_with_its_rule(tmp_path, cls, rule):
    write(tmp_path, "orders.py", ORDERS)
    with pytest.raises(InvariantViolation) as ex:
        simulate(io_spec(tmp_path, f"orders.py:{cls}"))
    assert ex.value.rule == rule and "orders.py" in str(ex.value)
    partial = ex.value.trace  # the trace up to where the run stopped goes with the violation
    assert partial.attrs["complete"] is False and partial.attrs["stopped"] == str(ex.value)
    assert len(partial.grants) < 48 and all(r["end"] != r["end"] or r["end"] <= ex.value.time
                                            for r in partial.jobs.rows())
    if rule == "policy-raised":
        assert isinstance(ex.value, PolicyRaised) and "KeyError: 'A" in str(ex.value)


# ---------------------------------------------------------------- placement
PLACEMENTS = '''
import numpy as np
from iolab.policy import PlacementPolicy


class WorstFit(PlacementPolicy):
    """worst-fit through the public API: the disk with the most free bytes, ties drawn from the run's rng."""

    refuses = False

    def choose(self, sizes, disks, rng):
        taken = [0] * len(disks)
        out = []
        for size in sizes:
            free = [disks.free(i) - taken[i] for i in range(len(disks))]
            best = max(free)
            tied = [i for i, f in enumerate(free) if f == best]
            i = tied[0] if len(tied) == 1 else tied[int(rng.integers(len(tied)))]
            taken[i] += size
            out.append(i)
        return out


class OutOfRange(PlacementPolicy):
    def choose(self, sizes, disks, rng):
        return [len(disks)] * len(sizes)


class RefusesAnyway(PlacementPolicy):
    refuses = False

    def choose(self, sizes, disks, rng):
        return None
'''


def disk_doc(strategy):
    doc = batch_doc("sas", jobs(*[(f"j{i}", 10 * i, 1, 900, 600,
                                   {"input": "10GB", "output": "10GB", "storage": f"{20 + 5 * i}GB"})
                                  for i in range(8)]))
    doc["platform"]["hps"] = {"rate": "15 GB/s", "servers": [{"nodes": [
        {"network_bw": "15 GB/s", "disks": [{"capacity": "60GB", "read_bw": "10GB/s", "write_bw": "8GB/s",
                                             "count": 3}]}]}]}
    doc["placement"] = {"strategy": strategy, "split": "25GB"}
    doc["seed"] = 5
    return doc


def test_worst_fit_through_the_api_places_the_same_bytes_on_the_same_disks(tmp_path):
    write(tmp_path, "place.py", PLACEMENTS)
    runs = [simulate_batch(parse_spec(disk_doc(s), "s.yaml", base_dir=tmp_path), strict=True)
            for s in ("place.py:WorstFit", "worst-fit")]
    rows = [[(r["job"], r["disk"], r["bytes"], r["status"]) for r in t.allocations.rows()] for t in runs]
    assert rows[0] == rows[1] and len(rows[0]) > 8


@pytest.mark.parametrize("cls", ["OutOfRange", "RefusesAnyway"])
def test_a_broken_placement_is_stopped(tmp_path, cls):
    write(tmp_path, "place.py", PLACEMENTS)
    with pytest.raises(InvariantViolation) as ex:
        simulate_batch(parse_spec(disk_doc(f"place.py:{cls}"), "s.yaml", base_dir=tmp_path))
    assert ex.value.rule == "malformed-decision" and f"place.py:{cls}" in str(ex.value)


# ---------------------------------------------------------------- node allocation
ALLOCATORS = '''
from iolab.policy import NodeAllocator


class Highest(NodeAllocator):
    """The highest free ids."""

    def __init__(self):
        self.ended_jobs = []

    def allocate(self, job, free, view):
        assert view.total_nodes == 8
        return free[-job.nodes:]

    def ended(self, job):
        self.ended_jobs.append(job)


class TooFew(NodeAllocator):
    def allocate(self, job, free, view):
        return free[:job.nodes - 1] if job.nodes > 1 else [free[0], free[0]]


class Busy(NodeAllocator):
    def allocate(self, job, free, view):
        return list(range(job.nodes))
'''


def test_a_user_allocator_chooses_the_node_ids(tmp_path):
    write(tmp_path, "alloc.py", ALLOCATORS)
    work = jobs(("a", 0, 2, 100, 50), ("b", 1, 3, 100, 50), ("c", 2, 1, 100, 50))
    t = simulate_batch(batch_spec(tmp_path, "fcfs", work, nodes=8, allocation="alloc.py:Highest"), strict=True)
    assert {r["id"]: r["node_ids"] for r in t.jobs.rows()} == {"a": "6-7", "b": "3-5", "c": "2"}
    assert t.attrs["policies"]["allocation"]["class"] == "Highest"


@pytest.mark.parametrize("cls,rule", [("TooFew", "start-mismatch"), ("Busy", "node-double-booked")])
def test_a_broken_allocator_is_stopped(tmp_path, cls, rule):
    write(tmp_path, "alloc.py", ALLOCATORS)
    work = jobs(("a", 0, 2, 100, 50), ("b", 1, 3, 100, 50))
    with pytest.raises(InvariantViolation) as ex:
        simulate_batch(batch_spec(tmp_path, "fcfs", work, nodes=8, allocation=f"alloc.py:{cls}"))
    assert ex.value.rule == rule and f"alloc.py:{cls}" in str(ex.value)


# ---------------------------------------------------------------- the load controller
CONTROLLERS = '''
from iolab.policy import RESUME, SUSPEND, Action, ControllerPolicy


class OneAtATime(ControllerPolicy):
    """While a volume is loaded, keep only the oldest job that writes on it running; resume in order."""

    def __init__(self):
        self.stopped = []

    def cycle(self, now, jobs, loaded):
        out = []
        for vol, busy in loaded.items():
            users = sorted((u for u in jobs.values() if u.on(vol) and u.job not in self.stopped),
                           key=lambda u: (u.start, u.job))
            if busy and users:
                for u in users[1:]:
                    out.append(Action(SUSPEND, u.job, vol, "loaded"))
                    self.stopped.append(u.job)
            elif self.stopped:  # calm, or nobody left running on it: the first stopped goes on
                out.append(Action(RESUME, self.stopped.pop(0), vol, "calm" if not busy else "alone"))
        self.stopped = [j for j in self.stopped if j in jobs]
        return out


class ResumesStrangers(ControllerPolicy):
    def cycle(self, now, jobs, loaded):
        return [Action(RESUME, j, "lps") for j in jobs]


class NeverResumes(ControllerPolicy):
    """Suspends every job but the oldest, and never resumes one: once the oldest ends, nothing runs."""

    def __init__(self):
        self.held = set()

    def cycle(self, now, jobs, loaded):
        users = sorted(jobs.values(), key=lambda u: (u.start, u.job))
        out = [Action(SUSPEND, u.job, "lps") for u in users[1:] if u.job not in self.held]
        self.held.update(a.job for a in out)
        return out


class SuspendsGhosts(ControllerPolicy):
    def cycle(self, now, jobs, loaded):
        return [Action(SUSPEND, "ghost", "lps")]
'''


def controller_doc(policy):
    work = jobs(*[(j, 10 * i, 1, 3000, 1500, {"data": "20GB"}) for i, j in enumerate("abc")],
                ("d", 30, 1, 3000, 1500))
    doc = batch_doc("fcfs", work)
    doc["controller"] = {"d": 25, "ws": 100, "alpha": 0.75, "r_threshold": 0.5, "t": 50, "short_sleep": 25,
                         "omega": "100MB", "recent": 100, "p": "1GB", "volumes": ["lps"], "policy": policy}
    return doc


def test_a_user_controller_decides_the_suspensions(tmp_path):
    write(tmp_path, "ctl.py", CONTROLLERS)
    mine = simulate_batch(parse_spec(controller_doc("ctl.py:OneAtATime"), "s.yaml", base_dir=tmp_path), strict=True)
    paper = simulate_batch(parse_spec(controller_doc("newest-first"), "s.yaml", base_dir=tmp_path), strict=True)
    suspended = {r["job"] for r in mine.actions.rows()}
    assert suspended == {"b", "c"}  # never the oldest writer, never the CPU-only job
    # the paper's handler suspends one job per cycle; this one both at once: b and c stop at the same time
    first = {r["job"]: r["suspend"] for r in sorted(mine.actions.rows(), key=lambda r: r["suspend"], reverse=True)}
    assert first["b"] == first["c"]
    assert [r["status"] for r in mine.jobs.rows()] == ["ok"] * 4
    assert mine.attrs["policies"]["controller.policy"]["class"] == "OneAtATime"
    assert {r["job"] for r in paper.actions.rows()} == {"b", "c"}


@pytest.mark.parametrize("cls,rule", [("ResumesStrangers", "resume-illegal"), ("SuspendsGhosts", "suspend-illegal"),
                                      ("NeverResumes", "never-resumed")])
def test_a_broken_controller_is_stopped(tmp_path, cls, rule):
    write(tmp_path, "ctl.py", CONTROLLERS)
    with pytest.raises(InvariantViolation) as ex:
        simulate_batch(parse_spec(controller_doc(f"ctl.py:{cls}"), "s.yaml", base_dir=tmp_path))
    assert ex.value.rule == rule and f"ctl.py:{cls}" in str(ex.value)
