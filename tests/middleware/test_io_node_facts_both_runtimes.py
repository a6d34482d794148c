"""What a list policy ranks about a job's parts is the same in both runtimes (no Ray, no MPI): one spec,
calibrated (launch, exit and per-phase costs, delivered shares below 1) and with staging, simulated; the
simulator's requests to its I/O nodes' arbiters are replayed, at their spec times, into the real run's
state (:class:`iolab.middleware.io_node_state.IONodesState`, fed as the real batch run feeds it), and every
request's facts are compared."""

from __future__ import annotations

import pytest

from iolab.emulator.batch.jobs import app_phases, job_parts
from iolab.middleware.io_node_state import IONodesState
from iolab.middleware.policies.arbiter import IONodeArbiter
from iolab.sim.batch.run import simulate_batch
from iolab.specs import parse_spec

FIELDS = ("rank", "requested_at", "volume", "io_time", "remaining", "total", "start", "done", "io_received", "phase")


def the_spec(policy: str):
    return parse_spec({
        "kind": "batch", "name": "facts", "scheduler": "sas",
        "platform": {"nodes": 4, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                     "hps": {"rate": "8 GB/s", "capacity": "200 GB"}, "stage_rate": "2 GB/s",
                     "io_nodes": 2, "nodes_per_io_node": 2, "io_node": {"rate": "2 GB/s", "policy": policy},
                     "overheads": {"launch": 30, "exit": 10, "io_phase": 5,
                                   "delivered": {"lps": 0.5, "hps": 0.8, "stage": 0.7}}},
        "workload": {"source": "inline", "jobs": [
            {"id": "x", "submit": 0, "nodes": 3, "walltime": 4000, "runtime": 1500, "input": "40GB",
             "output": "60GB", "data": "30GB", "storage": "150GB"},
            {"id": "y", "submit": 0, "nodes": 1, "walltime": 3000, "runtime": 900, "input": "20GB",
             "output": "30GB"},
            {"id": "z", "submit": 50, "nodes": 2, "walltime": 3000, "runtime": 800, "output": "50GB",
             "data": "10GB"}]},
    }, "<facts>")


def node_ids(text: str) -> list[int]:
    """``0-2,5`` -> [0, 1, 2, 5]."""
    out = []
    for piece in text.split(","):
        lo, _, hi = piece.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def simulated_requests(sp, monkeypatch) -> tuple[list[tuple[int, object]], object]:
    seen: list[tuple[int, object]] = []
    submit = IONodeArbiter.submit

    def spy(self, req):
        seen.append((self.node, req))
        return submit(self, req)

    monkeypatch.setattr(IONodeArbiter, "submit", spy)
    trace = simulate_batch(sp, strict=True)
    monkeypatch.undo()
    return seen, trace


@pytest.mark.parametrize("policy", ["shortest-remaining", "bandwidth"])
def test_both_runtimes_tell_a_list_policy_the_same_facts(policy, monkeypatch):
    sp = the_spec(policy)
    sim, trace = simulated_requests(sp, monkeypatch)
    jobs = {r["id"]: r for r in trace.jobs.rows()}
    assert {r["tier"] for r in jobs.values()} == {"lps", "hps"}  # staging on the way for the HPS jobs
    assert len(sim) >= 6 and len({req.app for _, req in sim}) == 3

    p = sp.platform
    real = IONodesState(p.io_nodes, policy=policy, rate=p.io_node.rate,
                        rates={"lps": p.lps.rate, "hps": p.hps.rate, "stage": p.stage_rate}, strict=False)
    real.start(0.0)  # time scale 1: wall = spec seconds
    index_of, parts_of = {}, {}
    for k, job in enumerate(sp.workload.jobs):  # as emulator/batch/jobs.py registers a launched job
        row = jobs[job.id]
        steps, phases, index = app_phases(job, row["tier"], sp)
        ranks = [i // p.io_nodes_span for i in node_ids(row["node_ids"])]  # one rank per node
        parts_of[job.id] = job_parts(ranks, phases)
        index_of[job.id] = index
        real.add_job(job.id, k, parts_of[job.id], steps, index, row["start"], row["start"])

    # replay the simulated requests and the ends of the parts, in time order (ends first at one instant)
    events = [(req.requested_at, 1, node, req) for node, req in sim]
    events += [(g["release"], 0, g["io_node"], g) for g in trace.grants.rows()]
    compared = 0
    for t, what, node, x in sorted(events, key=lambda e: (e[0], e[1])):
        if what == 0:
            for rank in parts_of[x["job"]][node]["ranks"]:  # every rank of the part says its bytes are carried
                real.part_done(x["job"], node, index_of[x["job"]].index(x["phase"]), rank, t)
            continue
        app_phase = index_of[x.app].index(x.phase)
        part = parts_of[x.app][node]
        real.request(x.app, node, app_phase, "write" if x.volume else "read", part["bytes"][app_phase], t)
        got = real.parts[(x.app, node)].req
        for f in FIELDS:
            assert getattr(got, f) == pytest.approx(getattr(x, f), rel=1e-9, abs=1e-6), (x.app, node, f, got, x)
        compared += 1
        real.dispatch(t)
    assert compared == len(sim)
