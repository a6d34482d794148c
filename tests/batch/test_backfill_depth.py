"""The backfill depth (Slurm's ``bf_max_job_test``): the backfill pass tries at most D waiting jobs
behind the head, in its backfill order.

Hand-made case: 10 nodes, R holds 8 until t = 100; H (10 nodes) heads the queue and waits for R; behind
it a, b, c (1 node each, walltimes 10, 11, 12: each fits now and ends long before H's reservation).
Without a depth all three are backfilled; with depth D the first D are, job D + 1 is not.
"""

from __future__ import annotations

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


@pytest.mark.parametrize("kind", ["fcfs", "conservative", "conservative-reinsert"])
def test_depth_is_refused_where_it_means_nothing(kind):
    with pytest.raises(ValueError, match="backfill_depth applies to easy, sas and random-tier"):
        get_scheduler(kind, backfill_depth=3)


def test_spec_field_named_in_the_refusal(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(textwrap.dedent("""\
        kind: batch
        platform: {nodes: 4, memory_per_node: 1GB, lps: {rate: 1 GB/s}, hps: {rate: 2 GB/s, capacity: 10 GB}, stage_rate: 1 GB/s}
        scheduler: {kind: fcfs, backfill_depth: 5}
        workload: [{id: a, submit: 0, nodes: 1, walltime: 10, runtime: 10}]
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
