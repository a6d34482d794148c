"""The backfill depth (Slurm's ``bf_max_job_test``): the backfill pass tries at most D waiting jobs
behind the head, in its backfill order; every scheduler plans only the head and the D jobs behind it
(queue order), so plan tracking and advance stage-in stop there too.

Hand-made case: 10 nodes, R holds 8 until t = 100; H (10 nodes) heads the queue and waits for R; behind
it a, b, c (1 node each, walltimes 10, 11, 12: each fits now and ends long before H's reservation).
Without a depth all three are backfilled; with depth D the first D are, job D + 1 is not.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap

import pytest

from iolab.middleware.policies.batch import QueuedJob, RunningJob, Snapshot, TierRates, get_scheduler

RATES = TierRates(lps=1e9, hps=15e9, stage=5e9)


def snap() -> Snapshot:
    q = (QueuedJob("H", 0, 10, 50), QueuedJob("c", 1, 1, 12), QueuedJob("b", 2, 1, 11), QueuedJob("a", 3, 1, 10))
    return Snapshot(now=0.0, total_nodes=10, free_nodes=2, queue=q, running=(RunningJob("R", 8, 100.0),),
                    hps_capacity=1e12, rates=RATES)


@pytest.mark.parametrize("project", [False, True], ids=["shadow", "profile"])
@pytest.mark.parametrize("depth, started", [(None, ["c", "b"]), (0, []), (1, ["c"]), (2, ["c", "b"])])
def test_easy_tries_the_first_d_jobs_behind_the_head_in_queue_order(project, depth, started):
    # 2 free nodes: queue order c, b, a; c and b take them (a would fit only if tried before them)
    policy = get_scheduler("easy", backfill_depth=depth)
    policy.project = project
    assert policy.decide(snap()).started == started


def test_easy_depth_leaves_job_d_plus_1_even_when_it_fits():
    q = (QueuedJob("H", 0, 10, 50), QueuedJob("big", 1, 5, 10), QueuedJob("a", 2, 1, 10))
    s = Snapshot(now=0.0, total_nodes=10, free_nodes=2, queue=q, running=(RunningJob("R", 8, 100.0),))
    assert get_scheduler("easy").decide(s).started == ["a"]  # big does not fit; a is tried and fits
    assert get_scheduler("easy", backfill_depth=1).decide(s).started == []  # only big is tried
    assert get_scheduler("easy", backfill_depth=2).decide(s).started == ["a"]


@pytest.mark.parametrize("kind", ["sas", "random-tier"])
def test_sas_tries_the_first_d_in_shortest_job_first_order(kind):
    # SJF order behind the head: a (10 s), b (11 s), c (12 s); two free nodes
    kw = {"p": 0.0} if kind == "random-tier" else {}
    assert get_scheduler(kind, **kw).decide(snap()).started == ["b", "a"]  # in queue order
    assert get_scheduler(kind, backfill_depth=1, **kw).decide(snap()).started == ["a"]
    assert get_scheduler(kind, backfill_depth=2, **kw).decide(snap()).started == ["b", "a"]
    assert get_scheduler(kind, backfill_depth=0, **kw).decide(snap()).started == []


ALL = ("fcfs", "easy", "conservative", "conservative-reinsert", "sas", "random-tier")


def policy_of(kind, depth=None, **kw):
    if kind == "random-tier":
        kw["p"] = 0.0
    return get_scheduler(kind, backfill_depth=depth, **kw)


def blocked(n_jobs=6) -> Snapshot:
    """10 nodes all held by R until t = 100; j0 .. j5 (4 nodes each) wait: nothing starts, j0 is the head."""
    q = tuple(QueuedJob(f"j{i}", i, 4, 50 + i) for i in range(n_jobs))
    return Snapshot(now=0.0, total_nodes=10, free_nodes=0, queue=q, running=(RunningJob("R", 10, 100.0),),
                    hps_capacity=1e12, rates=RATES)


@pytest.mark.parametrize("kind", ALL)
@pytest.mark.parametrize("depth", [0, 1, 3, 10])
def test_the_plan_holds_the_head_and_the_d_jobs_behind_it(kind, depth):
    """With a depth D a decision plans (reserves or projects) the head and the first D waiting jobs
    behind it: job D + 1 behind the head has no planned start (Slurm's bf_max_job_test)."""
    planned = [e.job for e in policy_of(kind, depth).decide(blocked()).plan]
    assert planned == [f"j{i}" for i in range(min(depth + 1, 6))]
    assert [e.job for e in policy_of(kind).decide(blocked()).plan] == [f"j{i}" for i in range(6)]


@pytest.mark.parametrize("kind", ["fcfs", "conservative-reinsert"])
def test_a_plan_in_queue_order_is_cut_not_changed(kind):
    """FCFS and conservative-reinsert place each job after the ones ahead of it only: the plan with a
    depth is the plan without one, cut after the head's D followers, and its starts those of the cut
    plan (random snapshots: running jobs, some past their estimate, jobs that start now)."""
    rng = random.Random(7)
    for _ in range(200):
        total = rng.randint(4, 12)
        running, busy = [], 0
        while busy < total - 1 and rng.random() < 0.7:
            n = rng.randint(1, total - 1 - busy)
            running.append(RunningJob(f"r{len(running)}", n, rng.choice([rng.uniform(-5, 100), 40.0])))
            busy += n
        q = tuple(QueuedJob(f"q{i}", i, rng.randint(1, total), rng.choice([10.0, 25.0, rng.uniform(1, 90)]))
                  for i in range(rng.randint(1, 15)))
        snap = Snapshot(now=0.0, total_nodes=total, free_nodes=total - busy, queue=q, running=tuple(running),
                        hps_capacity=1e12, rates=RATES)
        full = policy_of(kind).decide(snap)
        depth = rng.randint(0, 6)
        cut = policy_of(kind, depth).decide(snap)
        head = next((i for i, e in enumerate(full.plan) if e.start != 0.0), len(full.plan))
        assert cut.plan == full.plan[:head + 1 + depth]
        kept = {e.job for e in cut.plan}  # conservative-reinsert: a job backfilled past the cut is not tried
        assert cut.starts == tuple(st for st in full.starts if st.job in kept)
        if kind == "fcfs":
            assert cut.starts == full.starts  # nobody starts behind the head


def test_conservative_reserves_and_starts_only_within_the_depth():
    """8 of 10 nodes busy until 100; H (10 nodes) and big (5) wait for them, a (1 node, 10 s) fits now.
    Conservative backfills a into the hole only if it is within the depth: with D = 1 only H and big
    are considered, a waits without a plan; with D = 2 it starts."""
    q = (QueuedJob("H", 0, 10, 50), QueuedJob("big", 1, 5, 10), QueuedJob("a", 2, 1, 10))
    s = Snapshot(now=0.0, total_nodes=10, free_nodes=2, queue=q, running=(RunningJob("R", 8, 100.0),))
    for kind in ("conservative", "conservative-reinsert"):
        assert policy_of(kind).decide(s).started == ["a"]
        d1 = policy_of(kind, 1).decide(s)
        assert d1.started == [] and [e.job for e in d1.plan] == ["H", "big"]
        assert policy_of(kind, 2).decide(s).started == ["a"]


def test_fcfs_starts_every_fitting_job_whatever_the_depth():
    """The jobs ahead of the head are not counted: with D = 0 FCFS still starts all that fit."""
    q = tuple(QueuedJob(f"j{i}", i, 2, 10) for i in range(6))
    s = Snapshot(now=0.0, total_nodes=10, free_nodes=8, queue=q, running=(RunningJob("R", 2, 100.0),))
    for hps in (False, True):
        d = get_scheduler("fcfs", backfill_depth=0, hps_requests=hps).decide(s)
        assert d.started == ["j0", "j1", "j2", "j3"] and [e.job for e in d.plan] == ["j0", "j1", "j2", "j3", "j4"]


# -- in a run: plan tracking and advance stage-in stop at the depth ------------------------------------
def depth_spec(scheduler, depth):
    from iolab.specs import parse_spec
    jobs = [{"id": "A", "submit": 0, "nodes": 2, "walltime": 2000, "runtime": 2000}]
    jobs += [{"id": f"B{i}", "submit": 1, "nodes": 2, "walltime": 1000, "runtime": 1000, "input": "10GB",
              "storage": "10GB", "data": "200GB"} for i in range(1, 5)]
    sched = {**scheduler, "backfill_depth": depth} if depth is not None else scheduler
    return parse_spec({"kind": "batch", "platform": {"nodes": 2, "lps": {"rate": 1e9},
                                                     "hps": {"rate": 15e9, "capacity": "100GB"}, "stage_rate": 5e9},
                       "scheduler": sched, "track_predictions": True,
                       "advance_stage_in": {"enabled": True, "theta_stable": 0, "margin": 100000},
                       "workload": {"source": "inline", "jobs": jobs}})


def kernel_of(scheduler, depth):
    """The kernel of :func:`depth_spec` after A started (t = 0) and B1 .. B4 arrived (t = 1)."""
    from iolab.middleware.policies.batch.checker import BatchChecker
    from iolab.middleware.policies.batch.kernel import BatchKernel
    from iolab.workloads import load_workload
    sp = depth_spec(scheduler, depth)
    k = BatchKernel.from_spec(sp, load_workload(sp), observer=BatchChecker())
    k.submit(k.jobs[0], 0.0)
    assert [s.queued.id for s in k.decide(0.0)] == ["A"]
    for s in k.jobs[1:]:
        k.submit(s, 1.0)
    assert k.decide(1.0) == []  # A holds both nodes until 2000: B1 is the head
    return k


@pytest.mark.parametrize("scheduler", [{"kind": "sas"}, {"kind": "random-tier", "p": 1.0},
                                       {"kind": "fcfs", "hps_requests": True},
                                       {"kind": "conservative", "hps_requests": True},
                                       {"kind": "conservative-reinsert", "hps_requests": True}],
                         ids=lambda s: s["kind"])
@pytest.mark.parametrize("depth", [0, 1, 2, None])
def test_job_d_plus_1_gets_no_plan_row_and_no_early_copy(scheduler, depth):
    """A holds both nodes; B1 .. B4 wait on HPS (10 GB each, 100 GB of HPS, early copies due at once:
    theta_stable 0, a wide margin).  With depth D the head B1 and B2 .. B(D+1) get a plan row and an
    early copy; B(D+2) gets neither; without a depth all four do."""
    k = kernel_of(scheduler, depth)
    within = [f"B{i}" for i in range(1, 5 if depth is None else depth + 2)]
    rows = {job for job, *_ in k.prediction_rows()}
    assert rows == {"A", *within}
    assert sorted(k.early) == within
    assert k.advance_stats["early_copies"] == len(within)


def test_the_job_behind_the_depth_is_planned_once_the_head_starts():
    """Depth 1 under SAS, run to the end (strict): B3 gets its first plan row when B1 starts (it moves
    within the depth), not at its submission; every job still runs."""
    from iolab.sim.batch.run import simulate_batch
    tr = simulate_batch(depth_spec({"kind": "sas"}, 1), strict=True)
    first = {}
    for job, t in zip(tr.predictions["job"], tr.predictions["time"]):
        first.setdefault(str(job), float(t))
    start = dict(zip(map(str, tr.jobs["id"]), map(float, tr.jobs["start"])))
    assert first["B2"] == 1.0 and first["B3"] == start["B1"] > 1.0
    assert set(map(str, tr.jobs["status"])) == {"ok"}


@pytest.mark.parametrize("depth", [-1, "x"])
def test_spec_field_named_in_the_refusal(tmp_path, depth):
    spec = tmp_path / "s.yaml"
    spec.write_text(textwrap.dedent(f"""\
        kind: batch
        platform: {{nodes: 4, memory_per_node: 1GB, lps: {{rate: 1 GB/s}}, hps: {{rate: 2 GB/s, capacity: 10 GB}}, stage_rate: 1 GB/s}}
        scheduler: {{kind: fcfs, backfill_depth: {depth}}}
        workload: [{{id: a, submit: 0, nodes: 1, walltime: 10, runtime: 10}}]
        """))
    r = subprocess.run([sys.executable, "-m", "iolab", "simulate", str(spec)], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "backfill_depth" in r.stderr and "Traceback" not in r.stderr


def test_spec_depth_reaches_the_policy_in_a_run():
    from iolab.middleware.policies.batch.kernel import make_policy
    from iolab.specs.batch import BatchExperiment

    spec = BatchExperiment.model_validate({
        "kind": "batch", "platform": {"nodes": 4, "memory_per_node": "1GB", "lps": {"rate": "1 GB/s"},
                                      "hps": {"rate": "2 GB/s", "capacity": "10 GB"}, "stage_rate": "1 GB/s"},
        "scheduler": {"kind": "easy", "backfill_depth": 7},
        "workload": [{"id": "a", "submit": 0, "nodes": 1, "walltime": 10, "runtime": 10}]})
    assert make_policy(spec).backfill_depth == 7
