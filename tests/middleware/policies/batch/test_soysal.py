"""soysal2019 in the batch kernel: node ids, planned node sets, T_NAP, walltime estimates and the
two conservative variants (issue 9)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.metrics import tnap, tnap_summary
from iolab.middleware.policies.batch import Conservative, ConservativeReinsert, QueuedJob, RunningJob, Snapshot
from iolab.middleware.policies.batch.nodes import lowest, parse_ranges, plan_node_sets, ranges
from iolab.middleware.policies.batch.walltime import UserPredictor, refine
from iolab.sim.batch.run import simulate_batch
from iolab.specs import parse_spec


def spec(jobs, *, nodes=5, scheduler="conservative", estimate="request"):
    return parse_spec({
        "kind": "batch", "platform": {"nodes": nodes, "lps": {"rate": 1e9}, "hps": {"rate": 15e9, "capacity": 1e12},
                                      "stage_rate": 5e9},
        "scheduler": scheduler, "estimate": estimate, "track_predictions": True,
        "workload": {"source": "inline", "jobs": jobs}})


def job(id, submit, nodes, walltime, runtime=None, user="u"):
    return {"id": id, "submit": submit, "nodes": nodes, "walltime": walltime,
            "runtime": walltime if runtime is None else runtime, "user": user}


def rows_of(trace, j):
    p = trace.predictions
    return [(float(t), float(s), n) for jj, t, s, n in zip(p["job"], p["time"], p["start"], p["nodes"]) if jj == j]


# -- node ids ----------------------------------------------------------------------------------------
def test_lowest_and_ranges():
    assert lowest(0b101101, 3) == 0b1101
    assert ranges(0b100001111) == "0-3,8" and parse_ranges("0-3,8") == 0b100001111
    assert ranges(0) == "" and parse_ranges("") == 0


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**70 - 1), st.integers(0, 72))
def test_lowest_takes_the_k_lowest_free_ids(free, k):
    """Against the obvious: the first k ids of the free set, one by one (runs, gaps, all, too many)."""
    free_ids = [i for i in range(70) if free >> i & 1]
    if k > len(free_ids):
        with pytest.raises(ValueError, match=f"{k} nodes wanted"):
            lowest(free, k)
        return
    assert lowest(free, k) == sum(1 << i for i in free_ids[:k])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**40 - 1))
def test_ranges_round_trip(m):
    assert parse_ranges(ranges(m)) == m


def test_fig2_backfilled_job_moves_a_planned_node_set():
    """soysal2019 Fig. 2 by hand (5 nodes, conservative): X is planned at 100 on nodes 0-3; Y,
    backfilled at 50 on node 2, leaves X its start but moves its set to 0-1,3-4; X's T_NAP is
    measured from that move (t = 2), not from its submission."""
    tr = simulate_batch(spec([job("A", 0, 2, 100), job("B", 0, 3, 50), job("X", 1, 4, 100),
                              job("Y", 2, 1, 200)]), strict=True)
    assert rows_of(tr, "X") == [(1.0, 100.0, "0-3"), (2.0, 100.0, "0-1,3-4")]
    ids = dict(zip(tr.jobs["id"], tr.jobs["node_ids"]))
    assert ids == {"A": "0-1", "B": "2-4", "X": "0-1,3-4", "Y": "2"}
    t = tnap(tr)
    assert t["X"] == 98.0 and t["Y"] == 48.0
    assert t["A"] == -math.inf and t["B"] == -math.inf  # started at submission: instant


def test_planned_sets_of_the_jobs_starting_now_are_the_allocators_ids():
    class E:
        def __init__(self, job, start, end, nodes):
            self.job, self.start, self.end, self.nodes = job, start, end, nodes
    free = 0b11110010  # nodes 1, 4-7
    sets = plan_node_sets(0.0, free, [(10.0, 0b1101)], [E("a", 0.0, 5.0, 2), E("b", 0.0, 5.0, 1),
                                                        E("c", 10.0, 20.0, 4)])
    assert sets["a"] == lowest(free, 2) == 0b10010
    assert sets["b"] == 0b100000
    assert sets["c"] == 0b1111  # at 10 the running job's 0,2,3 and a's 1 are free again: lowest four


# -- walltime estimates --------------------------------------------------------------------------------
def test_refine_eq1():
    assert refine(100 * 3600, 10 * 3600, 0.2) == 28 * 3600  # the paper's example
    assert refine(500.0, 100.0, 0.0) == 100.0 and refine(500.0, 100.0, 1.0) == 500.0


def test_predictor_scripted_history():
    p = UserPredictor()
    assert p.predict("u", 1000.0) == 1000.0  # no history: the request
    for run, req in [(10, 100), (50, 100), (20, 100)]:  # sigma 0.1, 0.5, 0.2
        p.completed("u", run, req)
    assert p.predict("u", 1000.0) == 500.0
    assert p.predict("v", 1000.0) == 1000.0  # per user
    for run, req in [(10, 100)] * 3:  # last five: 0.5, 0.2, 0.1, 0.1, 0.1
        p.completed("u", run, req)
    assert p.predict("u", 1000.0) == 500.0
    p.completed("u", 10, 100)  # the 0.5 drops out of the last five
    assert p.predict("u", 1000.0) == 200.0
    p.completed("u", 300, 100)  # an overrun counts as sigma 1
    assert p.predict("u", 1000.0) == 1000.0
    assert UserPredictor.extend(200.0, 1000.0) == 400.0
    assert UserPredictor.extend(600.0, 1000.0) == 1000.0  # capped at the request


def test_predictor_doubles_at_the_predicted_end_in_the_simulator():
    """u's first job used 10 % of its request; its second one B (start 200, request 1000 s,
    runtime 700 s) is predicted 100 s, still runs at 300 (-> 200 s), 400 (-> 400 s) and 600
    (-> 800 s, end 1000; the cap 1000 s would end at 1200): C, waiting for all nodes, is re-planned
    at each revision and at B's real end (900)."""
    tr = simulate_batch(spec([job("A", 0, 5, 1000, 100), job("B", 200, 5, 1000, 700), job("C", 201, 5, 10)],
                             estimate="predictor"), strict=True)
    assert [s for _, s, _ in rows_of(tr, "C")] == [300.0, 400.0, 600.0, 1000.0, 900.0]
    assert [t for t, _, _ in rows_of(tr, "C")] == [201.0, 300.0, 400.0, 600.0, 900.0]
    start = dict(zip(tr.jobs["id"], tr.jobs["start"]))
    assert start["C"] == 900.0  # B really runs 700 s


# -- schedulers: the two conservative variants ---------------------------------------------------------
def _two_decisions(policy):
    """R1 (1 node) expected to end at 100 ends at 10; J2 was backfilled at 50 before the big J1."""
    q = (QueuedJob("J1", 1.0, 4, 100.0), QueuedJob("J2", 2.0, 2, 50.0))
    d1 = policy.decide(Snapshot(now=2.0, total_nodes=4, free_nodes=0, queue=q,
                                running=(RunningJob("R1", 1, 100.0), RunningJob("R2", 3, 50.0))))
    d2 = policy.decide(Snapshot(now=10.0, total_nodes=4, free_nodes=1, queue=q,
                                running=(RunningJob("R2", 3, 50.0),)))
    return d1, d2


def test_conservative_reinsert_moves_a_reservation_later_on_a_hand_case():
    d1, d2 = _two_decisions(ConservativeReinsert())
    assert d1.start_of("J2") == 50.0 and d1.start_of("J1") == 100.0
    assert d2.start_of("J1") == 50.0 and d2.start_of("J2") == 150.0  # J2 pushed later by the compression


def test_conservative_mualem_feitelson_keeps_it():
    d1, d2 = _two_decisions(Conservative())
    assert d1.start_of("J2") == 50.0 and d1.start_of("J1") == 100.0
    assert d2.start_of("J2") == 50.0 and d2.start_of("J1") == 100.0


workloads = st.lists(st.tuples(st.integers(0, 400), st.integers(1, 6), st.integers(1, 300), st.integers(1, 300)),
                     min_size=2, max_size=25)


def _jobs(rows):
    return [job(f"j{i}", sub, n, max(a, b), min(a, b), user=f"u{i % 3}") for i, (sub, n, a, b) in enumerate(rows)]


@settings(max_examples=40, deadline=None)
@given(workloads)
def test_conservative_never_moves_a_reservation_later(rows):
    """Mu'alem-Feitelson conservative with requests >= runtimes (no job overruns): every job's
    planned start never increases from one prediction row to the next."""
    tr = simulate_batch(spec(_jobs(rows), nodes=6), strict=True)
    p = tr.predictions
    last: dict[str, float] = {}
    for j, t, s in sorted(zip(p["job"], p["time"], p["start"]), key=lambda r: r[1]):
        assert s <= last.get(j, math.inf), (j, t, s, last.get(j))
        last[j] = s


@settings(max_examples=40, deadline=None)
@given(workloads)
def test_fcfs_with_perfect_estimates_never_changes_a_planned_node_set(rows):
    """lambda = 0 under FCFS: a queued job's planned node set is fixed at submission, so T_NAP
    equals the wait of every non-instant job."""
    tr = simulate_batch(spec(_jobs(rows), nodes=6, scheduler="fcfs", estimate={"refined": 0.0}), strict=True)
    p = tr.predictions
    seen: dict[str, str] = {}
    for j, n in zip(p["job"], p["nodes"]):
        assert seen.setdefault(j, n) == n
    t = tnap(tr)
    for j, sub, start, nid in zip(tr.jobs["id"], tr.jobs["release"], tr.jobs["start"], tr.jobs["node_ids"]):
        assert seen[j] == nid  # it ran where it was first planned
        if start > sub:
            assert t[j] == start - sub
    s = tnap_summary(tr)
    assert s.jobs == len(rows) and abs(sum(s.shares.values()) - 1) < 1e-12


@settings(max_examples=30, deadline=None)
@given(workloads, st.sampled_from(["fcfs", "easy", "conservative", "conservative-reinsert"]))
def test_node_ids_are_never_shared_and_match_the_counts(rows, scheduler):
    tr = simulate_batch(spec(_jobs(rows), nodes=6, scheduler=scheduler), strict=True)
    J = tr.jobs
    masks = [parse_ranges(x) for x in J["node_ids"]]
    for m, n in zip(masks, J["nodes"]):
        assert m.bit_count() == n and m < 1 << 6
    for a in range(len(masks)):
        for b in range(a + 1, len(masks)):
            if J["start"][a] < J["end"][b] and J["start"][b] < J["end"][a]:
                assert masks[a] & masks[b] == 0


# -- advance stage-in (issue 9 §5) ------------------------------------------------------------------------
RANDOM_HPS = {"kind": "random-tier", "p": 1.0}


def adv_spec(jobs, nodes, adv=True, capacity="100GB", scheduler=RANDOM_HPS):
    return parse_spec({
        "kind": "batch", "platform": {"nodes": nodes, "lps": {"rate": 1e9}, "hps": {"rate": 15e9, "capacity": capacity},
                                      "stage_rate": 5e9},
        "scheduler": scheduler, "advance_stage_in": adv,
        "workload": {"source": "inline", "jobs": jobs}})


def test_stable_plan_stages_in_early_and_hides_the_stage_in():
    """B waits 2 000 s for A's nodes on a plan that never changes: its 10 GB are copied before
    its start (2 s at R_stage = 5 GB/s), so it ends 2 s earlier than without advance staging."""
    from iolab.sim.batch.run import run_batch
    jobs = [job("A", 0, 2, 2000), {**job("B", 1, 2, 1000), "input": "10GB", "storage": "10GB"}]
    base = {s.queued.id: s for s in run_batch(adv_spec(jobs, 2, adv=False), strict=True).jobs}
    rec = run_batch(adv_spec(jobs, 2), strict=True)
    got = {s.queued.id: s for s in rec.jobs}
    assert got["B"].tier == "hps" and got["B"].start == base["B"].start == 2000.0
    assert base["B"].end - got["B"].end == 2.0
    assert rec.advance["early_copies"] == 1 and rec.advance["hidden_seconds"] == 2.0
    assert rec.advance["early_bytes"] == 10e9 and rec.advance["wasted_bytes"] == 0.0


@pytest.mark.parametrize("kind", ["fcfs", "conservative", "conservative-reinsert"])
def test_hps_requests_put_asking_jobs_on_hps_and_stage_them_early(kind):
    """With ``hps_requests`` FCFS and both conservative variants run B (it asks for 10 GB) on HPS,
    for stage-in + run at R_hps + stage-out, and its stable plan hides the 2 s stage-in; without
    it B runs on LPS and nothing is copied early (an early copy for a job planned on LPS would
    only be wasted)."""
    from iolab.sim.batch.run import run_batch
    from iolab.middleware.policies.batch import TierRates, QueuedJob
    jobs = [job("A", 0, 2, 2000), {**job("B", 1, 2, 1000), "input": "10GB", "storage": "10GB"}]
    sched = {"kind": kind, "hps_requests": True}
    base = {s.queued.id: s for s in run_batch(adv_spec(jobs, 2, adv=False, scheduler=sched), strict=True).jobs}
    rec = run_batch(adv_spec(jobs, 2, scheduler=sched), strict=True)
    got = {s.queued.id: s for s in rec.jobs}
    assert got["B"].tier == "hps" and got["B"].start == base["B"].start == 2000.0
    planned = TierRates(1e9, 15e9, 5e9).duration(QueuedJob("B", 1.0, 2, 1000.0, 10e9, 10e9), "hps")
    assert base["B"].expected_end == 2000.0 + planned  # stage-in 2 s + I/O at R_hps + compute
    assert base["B"].end - got["B"].end == 2.0 and rec.advance["hidden_seconds"] == 2.0
    lps = run_batch(adv_spec(jobs, 2, scheduler=kind), strict=True)
    assert {s.queued.id: s.tier for s in lps.jobs} == {"A": "lps", "B": "lps"}
    assert lps.advance["early_copies"] == 0 and lps.advance["wasted_bytes"] == 0.0


@pytest.mark.parametrize("kind", ["sas", "easy"])
def test_hps_requests_is_refused_where_it_means_nothing(kind):
    from iolab.errors import SpecError
    with pytest.raises(SpecError) as exc:
        adv_spec([job("A", 0, 1, 10)], 2, scheduler={"kind": kind, "hps_requests": True})
    assert "hps_requests applies to fcfs, conservative, conservative-reinsert" in dict(exc.value.problems)[
        "scheduler.hps_requests"]


def test_a_plan_change_after_the_early_copy_wastes_its_bytes():
    """C (node 0) ends early at 1 990: B's planned set moves from nodes 1-2 to 0-1 after its 10 GB
    were copied for nodes 1-2 (from 1 938): wasted, and B stages in again at its start."""
    from iolab.sim.batch.run import run_batch
    jobs = [job("C", 0, 1, 5000, 1990), job("A", 0, 2, 2000),
            {**job("B", 1, 2, 1000), "input": "10GB", "storage": "10GB"}]
    rec = run_batch(adv_spec(jobs, 3), strict=True)
    a = rec.advance
    assert a["early_copies"] == 1 and a["wasted_copies"] == 1
    assert a["wasted_bytes"] == 10e9 and a["wasted_link_seconds"] == 2.0 and a["hidden_seconds"] == 0.0
    b = next(s for s in rec.jobs if s.queued.id == "B")
    assert b.node_ids == 0b011


@pytest.mark.parametrize("scheduler", [RANDOM_HPS, {"kind": "fcfs", "hps_requests": True},
                                       {"kind": "conservative", "hps_requests": True}])
@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3000), st.integers(1, 3), st.integers(100, 2000), st.integers(1, 40)),
                min_size=2, max_size=20))
def test_hps_capacity_is_never_exceeded_with_early_copies(scheduler, rows):
    """Running HPS jobs plus early copies never hold more than the HPS capacity (50 GB), checked
    after every decision and every early-copy check."""
    from iolab.middleware.policies.batch.checker import BatchChecker
    from iolab.middleware.policies.batch.kernel import BatchKernel
    from iolab.sim.batch.engine import BatchEngine
    jobs = [{**job(f"j{i}", sub, n, w, w), "input": f"{gb}GB", "storage": f"{gb}GB"}
            for i, (sub, n, w, gb) in enumerate(rows)]
    sp = adv_spec(jobs, 3, capacity="50GB", scheduler=scheduler)
    seen = []

    def check(_d=None):
        k = kernel
        held = k.hps_capacity - k.hps_free
        assert held + k.early_bytes <= k.hps_capacity * (1 + 1e-12)
        seen.append(k.early_bytes)

    from iolab.workloads import load_workload
    kernel = BatchKernel.from_spec(sp, load_workload(sp), observer=BatchChecker(), on_decision=check)
    orig = kernel.advance_check
    kernel.advance_check = lambda t: (orig(t), check())
    BatchEngine.around(kernel, memory_per_node=sp.platform.memory_per_node).run()
    assert kernel.early_bytes == 0.0 and not kernel.early  # every copy used or wasted by the end


def test_plan_tracking_only_observes(kth):
    """The same schedule with and without plan tracking (the tracker and the node-set replay
    decide nothing), for every compute scheduler, on the first 800 KTH-SP2 jobs."""
    from iolab.sim.batch.run import run_batch
    from iolab.workloads import swf_jobs
    jobs = swf_jobs(kth, limit=800)
    for sched in ("fcfs", "easy", "conservative", "conservative-reinsert"):
        runs = []
        for track in (False, True):
            sp = parse_spec({"kind": "batch", "platform": {"nodes": 100, "lps": {"rate": 1e9},
                                                           "hps": {"rate": 15e9, "capacity": 1e12}, "stage_rate": 5e9},
                             "scheduler": sched, "track_predictions": track,
                             "workload": {"source": "swf", "path": str(kth), "limit": 800}})
            rec = run_batch(sp, jobs, rows=False, strict=False)
            runs.append({s.queued.id: (s.start, s.node_ids) for s in rec.jobs})
        assert runs[0] == runs[1], sched


def _tables(trace):
    p, j = trace.predictions, trace.jobs
    return ([tuple(p[c][i] for c in ("job", "time", "start", "nodes")) for i in range(len(p))],
            [tuple(j[c][i] for c in ("id", "start", "end", "node_ids")) for i in range(len(j))])


@pytest.mark.parametrize("scheduler", ["fcfs", "conservative", "conservative-reinsert", "easy"])
def test_tracking_continued_after_arrivals_equals_replaying_every_pass(scheduler, monkeypatch):
    """The kernel carries the node-set replay over from the last pass (over an arrival-only pass;
    for FCFS, until it joins the last one) and FCFS its release sweep; with both memos forgotten
    at every pass the trace is the same, row for row."""
    from iolab.middleware.policies.batch import backfill
    from iolab.middleware.policies.batch.kernel import BatchKernel

    rng = random.Random(scheduler)
    jobs, t = [], 0.0
    for i in range(160):
        t += rng.choice([0.0, 1.0, rng.uniform(0, 40)])
        w = float(rng.randint(5, 200))
        jobs.append(job(f"j{i}", t, rng.randint(1, 8), w, runtime=rng.choice([w, rng.uniform(1, w)]),
                        user=f"u{rng.randint(0, 3)}"))
    for estimate in ({"refined": 0.3}, "predictor", "request"):
        sp = spec(jobs, nodes=8, scheduler=scheduler, estimate=estimate)
        continued = _tables(simulate_batch(sp, strict=True))
        with monkeypatch.context() as m:
            plain_track, plain_fcfs = BatchKernel._track, backfill.FCFS._decide

            def track(self, t, d):
                self._replayed = None
                return plain_track(self, t, d)

            def decide(self, snap):
                self._swept = None
                return plain_fcfs(self, snap)

            m.setattr(BatchKernel, "_track", track)
            m.setattr(backfill.FCFS, "_decide", decide)
            replayed = _tables(simulate_batch(sp, strict=True))
        assert continued == replayed, estimate
        assert len(continued[0]) > 160  # plans were tracked


@pytest.mark.parametrize("scheduler", [RANDOM_HPS, {"kind": "fcfs", "hps_requests": True},
                                       {"kind": "conservative", "hps_requests": True}])
@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3000), st.integers(1, 3), st.integers(100, 2000), st.integers(1, 40),
                          st.floats(0.05, 1.0)), min_size=2, max_size=25))
def test_the_kept_advance_due_is_the_plans_answer(scheduler, rows):
    """``advance_due`` is kept between changes of the plan, the queue, the tracker and the early
    copies; strict mode recomputes it at every call and raises if the kept answer differs.  Jobs
    end before their walltime, so decisions move plans without any job starting or arriving."""
    from iolab.middleware.policies.batch.checker import BatchChecker
    from iolab.middleware.policies.batch.kernel import BatchKernel
    from iolab.sim.batch.engine import BatchEngine
    from iolab.workloads import load_workload
    jobs = [{**job(f"j{i}", sub, n, w, max(1.0, round(w * f))), "input": f"{gb}GB", "storage": f"{gb}GB"}
            for i, (sub, n, w, gb, f) in enumerate(rows)]
    sp = adv_spec(jobs, 3, capacity="50GB", scheduler=scheduler)
    kernel = BatchKernel.from_spec(sp, load_workload(sp), observer=BatchChecker())
    fresh, asked = [0], [0]
    compute, ask = kernel._advance_due, kernel.advance_due
    kernel._advance_due = lambda: (fresh.__setitem__(0, fresh[0] + 1), compute())[1]
    kernel.advance_due = lambda: (asked.__setitem__(0, asked[0] + 1), ask())[1]
    BatchEngine.around(kernel, memory_per_node=sp.platform.memory_per_node).run()
    assert fresh[0] >= asked[0]  # strict: every call computed afresh too (and compared)
