"""The interference law in the simulator's links, against a brute-force stepper, and in both levels."""

from __future__ import annotations

import random

import pytest

from iolab.middleware.policies.interference import InterferenceLaw
from iolab.sim.batch.run import run_batch
from iolab.sim.fairshare import FairShareLink
from iolab.sim.io.run import simulate
from iolab.specs import parse_spec

LAWS = [InterferenceLaw.parametric(0.5, 1), InterferenceLaw.parametric(0.2, 3),
        InterferenceLaw.table({2: 0.7, 5: 0.4}), InterferenceLaw.preset("lustre-plafrim-b")]


def link_completions(rate, law, arrivals):
    """Completion time of every stream on a FairShareLink (event by event)."""
    link = FairShareLink(rate, law)
    pending = sorted(arrivals, key=lambda a: a[1])  # (key, t, amount)
    done, t = {}, 0.0
    while pending or len(link):
        nxt = link.next_completion()
        if pending and pending[0][1] <= nxt:
            key, t, amount = pending.pop(0)
            link.add(key, amount, t)
        else:
            t = nxt
            for key in link.pop_finished(t):
                done[key] = t
    return done


def stepper(rate, law, arrivals, dt):
    """The reference: every dt each of the k active streams moves dt * rate * f(k) / k."""
    left, done, t = {}, {}, 0.0
    pending = sorted(arrivals, key=lambda a: a[1])
    while pending or left:
        while pending and pending[0][1] <= t + 1e-12:
            key, _, amount = pending.pop(0)
            left[key] = amount
        k = len(left)
        if k:
            step = dt * rate * law.factor(k) / k
            for key in list(left):
                left[key] -= step
                if left[key] <= 1e-12:
                    done[key] = t + dt
                    del left[key]
        t += dt
    return done


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.describe())
def test_the_link_with_a_law_is_the_brute_force_stepper(law):
    rng = random.Random(7)
    arrivals = [(i, round(rng.uniform(0, 20), 2), rng.uniform(5, 60)) for i in range(8)]
    exact = link_completions(10.0, law, arrivals)
    dt = 1e-3
    ref = stepper(10.0, law, arrivals, dt)
    assert exact.keys() == ref.keys()
    for key in exact:
        assert exact[key] == pytest.approx(ref[key], abs=10 * dt)
    # and the law changed something: the lossless link ends earlier
    lossless = link_completions(10.0, None, arrivals)
    assert max(lossless.values()) < max(exact.values()) - 0.5


def batch(lps_law, jobs=3):
    d = {"kind": "batch", "scheduler": "fcfs",
         "workload": {"source": "inline", "jobs": [{"id": f"j{i}", "submit": 0, "nodes": 1, "walltime": 10000,
                                                    "runtime": 1, "output": "300MB"} for i in range(jobs)]},
         "platform": {"nodes": 4, "memory_per_node": "1GB", "lps": {"rate": "100MB/s"},
                      "hps": {"rate": "1GB/s", "capacity": "1TB"}, "stage_rate": "1GB/s"}}
    if lps_law is not None:
        d["platform"]["lps"]["interference"] = lps_law
    return parse_spec(d)


def test_a_batch_tier_with_a_law_halves_three_writers():
    # 3 jobs write 300 MB each at once on 100 MB/s: 9 s lossless, 18 s when f(3) = 0.5
    ends = lambda rec: sorted(s.end for s in rec.jobs)  # noqa: E731
    base = ends(run_batch(batch(None), strict=True))
    halved = ends(run_batch(batch({"table": {3: 0.5}}), strict=True))
    assert halved[-1] - base[-1] == pytest.approx(9.0, rel=1e-6)


def io_spec(law, policy="shared"):
    d = {"platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": 1.0}, "policy": policy,
         "mapping": "none",
         "apps": [{"id": f"a{i}", "nodes": 2, "iterations": 3, "compute": 4 + i, "io_volume": 3 + i}
                  for i in range(4)]}
    if law is not None:
        d["platform"]["interference"] = law
    return parse_spec(d)


@pytest.mark.parametrize("law", ["lustre-plafrim-b", {"gamma": 0.3, "knee": 1}])
def test_shared_io_nodes_take_the_law_in_both_modes(law):
    ev = simulate(io_spec(law), mode="event")
    st = simulate(io_spec(law), mode="step", dt=1e-3)
    free = simulate(io_spec(None), mode="event")
    ends = lambda tr: sorted(tr.jobs["end"].tolist())  # noqa: E731
    assert ends(ev) == pytest.approx(ends(st), abs=0.05)
    assert ends(ev)[-1] > ends(free)[-1] + 0.5
    # an exclusive policy moves one transfer at a time: k = 1, no loss
    assert ends(simulate(io_spec(law, "fifo"), mode="event")) == pytest.approx(
        ends(simulate(io_spec(None, "fifo"), mode="event")))


def test_the_older_controller_model_is_the_same_machine_as_the_tier_law():
    jobs = [{"id": f"io{i}", "submit": i * 10, "nodes": 2, "walltime": 20000, "runtime": 2000 + 500 * i,
             "data": "150GB"} for i in range(4)]
    base = {"kind": "batch", "scheduler": "fcfs", "workload": {"source": "inline", "jobs": jobs},
            "platform": {"nodes": 12, "memory_per_node": "1GB", "lps": {"rate": "100MB/s"},
                         "hps": {"rate": "1GB/s", "capacity": "1TB"}, "stage_rate": "1GB/s"}}
    old = parse_spec({**base, "controller": {"enabled": True, "volumes": ["lps"], "omega": "1GB",
                                             "model": {"gamma": 0.5, "knee": 1}}})
    new = parse_spec({**base, "platform": {**base["platform"], "lps": {"rate": "100MB/s",
                                                                        "interference": {"gamma": 0.5, "knee": 1}}},
                      "controller": {"enabled": True, "volumes": ["lps"], "omega": "1GB"}})
    a, b = run_batch(old, strict=True), run_batch(new, strict=True)
    assert [(s.id, s.end, s.suspensions) for s in a.jobs] == [(s.id, s.end, s.suspensions) for s in b.jobs]
    assert sum(len(s.suspensions) for s in a.jobs) > 0  # the lossy volume made the controller act
    lossless = run_batch(parse_spec({**base, "controller": {"enabled": True, "volumes": ["lps"], "omega": "1GB"}}))
    assert [s.end for s in lossless.jobs] != [s.end for s in a.jobs]
