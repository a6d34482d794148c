"""The batch engine: job steps on tiers, shared links, capacities, any scheduler."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.specs import parse_spec
from iolab.sim.batch.run import run_batch, simulate_batch

GB = 1e9
PLATFORM = {"nodes": 8, "memory_per_node": "1GB", "lps": {"rate": "1GB/s"},
            "hps": {"rate": "10GB/s", "capacity": "100GB"}, "stage_rate": "2GB/s"}


def spec(jobs, scheduler="easy", platform=PLATFORM):
    return parse_spec({"kind": "batch", "platform": platform, "scheduler": scheduler,
                       "workload": {"source": "inline", "jobs": jobs}})


def test_one_job_on_lps_runs_its_steps_at_lps_rate():
    # runtime 100 s alone on LPS = 10 s read + 20 s ckpt + 70 s compute... here: input 10GB,
    # output 20GB, data 0 -> compute = 100 - 30 = 70 s
    t = simulate_batch(spec([{"id": "a", "submit": 5, "nodes": 2, "walltime": 200, "runtime": 100,
                              "input": "10GB", "output": "20GB"}]))
    assert t.jobs["start"][0] == 5 and t.jobs["tier"][0] == "lps"
    assert t.jobs["end"][0] == pytest.approx(105)
    assert list(t.phases["kind"]) == ["read", "compute", "write"]
    assert list(t.phases["end"] - t.phases["start"]) == pytest.approx([10, 70, 20])


def test_sas_puts_an_io_heavy_job_on_hps_with_staging_and_checkpoints():
    # input 10GB, output 20GB, data 4GB -> 2 checkpoints of 2 nodes x 1GB; compute 100-34 = 66 s
    # HPS: stage-in 10/2 = 5, read 10/10 = 1, 3 x 22 s compute, 2 ckpts of 0.2 s, write 2 s, stage-out 10 s
    t = simulate_batch(spec([{"id": "a", "submit": 0, "nodes": 2, "walltime": 200, "runtime": 100,
                              "input": "10GB", "output": "20GB", "data": "4GB", "storage": "30GB"}], "sas"))
    assert t.jobs["tier"][0] == "hps"
    kinds = list(t.phases["kind"])
    assert kinds == ["stage-in", "read", "compute", "write", "compute", "write", "compute", "write", "stage-out"]
    d = t.phases["end"] - t.phases["start"]
    assert list(d) == pytest.approx([5, 1, 22, 0.2, 22, 0.2, 22, 2, 10])
    assert t.jobs["end"][0] == pytest.approx(84.4)
    a = t.allocations
    assert list(a["job"]) == ["a"] and a["bytes"][0] == 30 * GB and a["free"][0] == pytest.approx(84.4)


def test_two_streams_share_a_link_fairly():
    jobs = [{"id": x, "submit": 0, "nodes": 1, "walltime": 100, "runtime": 10, "input": "10GB"} for x in "ab"]
    t = simulate_batch(spec(jobs, "fcfs"))
    reads = [r for r in t.phases.rows() if r["kind"] == "read"]
    assert [r["end"] for r in reads] == pytest.approx([20, 20])  # 10 GB each at 0.5 GB/s
    assert list(t.jobs["end"]) == pytest.approx([20, 20])  # compute = 10 - 10 = 0


def test_jobs_wait_for_nodes_in_fcfs_order():
    jobs = [{"id": "big", "submit": 0, "nodes": 8, "walltime": 50, "runtime": 40},
            {"id": "small", "submit": 1, "nodes": 1, "walltime": 10, "runtime": 10}]
    t = simulate_batch(spec(jobs, "fcfs"))
    assert list(t.jobs["start"]) == [0, 40]  # starts when big really ends (early)


jobs_st = st.lists(st.fixed_dictionaries({
    "submit": st.integers(0, 500), "nodes": st.integers(1, 8), "walltime": st.integers(10, 400),
    "slack": st.floats(0.3, 1.0), "input": st.integers(0, 30), "output": st.integers(0, 30),
    "data": st.integers(0, 8), "storage": st.integers(0, 120),
}), min_size=1, max_size=25)


@settings(max_examples=80, deadline=None)
@given(raw=jobs_st, scheduler=st.sampled_from(["fcfs", "easy", "conservative", "sas",
                                                {"kind": "random-tier", "p": 0.5}]))
def test_capacities_are_never_exceeded_and_every_job_runs(raw, scheduler):
    jobs = []
    for i, r in enumerate(raw):
        io = (r["input"] + r["output"] + r["data"])  # seconds at 1 GB/s
        runtime = max(io, r["walltime"] * r["slack"])
        jobs.append({"id": f"j{i}", "submit": r["submit"], "nodes": r["nodes"], "walltime": max(runtime, r["walltime"]),
                     "runtime": runtime, "input": r["input"] * GB, "output": r["output"] * GB,
                     "data": r["data"] * GB,  # an HPS request holds input and output (spec rule)
                     "storage": (max(r["storage"], r["input"], r["output"]) if r["storage"] else 0) * GB})
    t = simulate_batch(spec(jobs, scheduler))
    j = {r["id"]: r for r in t.jobs.rows()}
    events = []
    for r in j.values():
        assert r["start"] >= r["release"] - 1e-9
        assert r["end"] > r["start"] or math.isclose(r["end"], r["start"])
        hps = r["io_volume"] >= 0 and r["tier"] == "hps"
        stor = next(x["storage"] for x in jobs if x["id"] == r["id"]) if hps else 0.0
        events.append((r["start"], 1, r["nodes"], stor))
        events.append((r["end"], 0, -r["nodes"], -stor))
    nodes = hps = 0.0
    for _, _, dn, ds in sorted(events):
        nodes += dn
        hps += ds
        assert nodes <= 8 and hps <= 100 * GB * (1 + 1e-9)
    # every byte a job states is moved, on its tier's link (plus staging on HPS)
    moved = defaultdict(float)
    for p in t.phases.rows():
        if p["kind"] in ("read", "write"):
            moved[p["job"]] += p["volume"]
    for x in jobs:
        assert moved[x["id"]] == pytest.approx(x["input"] + x["output"] + x["data"])


def test_plans_can_be_recorded_over_time():
    jobs = [{"id": f"j{i}", "submit": i, "nodes": 4 + (i % 2) * 4, "walltime": 100, "runtime": 60} for i in range(6)]
    rec = run_batch(spec(jobs, "conservative"), record_plans=True)
    planned = defaultdict(list)
    for t, job, start, tier, reserved in rec.plans:
        planned[job].append((t, start))
        assert start >= t
    # a job's planned start never moves later under conservative backfilling (compression only)
    for job, seq in planned.items():
        starts = [s for _, s in sorted(seq)]
        assert all(b <= a + 1e-9 for a, b in zip(starts, starts[1:])), (job, seq)


def test_the_scheduler_is_checked_for_overcommitment():
    from iolab.middleware.policies.batch import BatchPolicy, Decision, Start

    class Greedy(BatchPolicy):
        name = "greedy"

        def _decide(self, snap):
            return Decision(snap.now, tuple(Start(q.id, "lps", q.nodes, snap.now + q.walltime) for q in snap.queue))

    jobs = [{"id": x, "submit": 0, "nodes": 6, "walltime": 10, "runtime": 10} for x in "ab"]
    with pytest.raises(RuntimeError, match="started b on 6 nodes; 2 free"):
        run_batch(spec(jobs), scheduler=Greedy())


def test_simulate_command_runs_a_batch_spec(tmp_path):
    import json

    import yaml
    from click.testing import CliRunner

    from iolab.cli import cli
    from iolab.trace import read_trace

    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump({"kind": "batch", "platform": PLATFORM, "scheduler": "sas", "workload": [
        {"id": "a", "submit": 0, "nodes": 8, "walltime": 100, "runtime": 50},
        {"id": "b", "submit": 0, "nodes": 4, "walltime": 100, "runtime": 50, "input": "20GB", "storage": "20GB"}]}))
    res = CliRunner().invoke(cli, ["simulate", str(path), "--json", "--out", str(tmp_path / "t.h5")])
    assert res.exit_code == 0, res.output
    m = json.loads(res.output)
    assert m["jobs"] == 2 and m["hps_jobs"] == 1
    # a on all 8 nodes for 50 s, then b on HPS: stage-in 10 s + read 2 s + compute 30 s -> ends at 92
    assert m["makespan"] == pytest.approx(92.0)
    assert read_trace(tmp_path / "t.h5").attrs["runtime"] == "sim-batch"
    bad = CliRunner().invoke(cli, ["simulate", str(path), "--policy", "fifo"])
    assert bad.exit_code == 2 and "batch spec names its scheduler" in bad.output
