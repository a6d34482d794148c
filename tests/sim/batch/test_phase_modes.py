"""What a batch run keeps of its phases (``--phases all|jobs|none``): the schedule is the same, the
jobs table's ``io_time`` is each job's time in I/O phases (checked against the phase rows of the
``all`` trace, summed by hand), and the phase rows are kept only when asked for."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from iolab.sim.batch.run import simulate_batch
from iolab.specs.batch import BatchExperiment


def spec(scheduler: str = "sas") -> BatchExperiment:
    return BatchExperiment.model_validate({
        "kind": "batch", "name": "modes", "seed": 3, "scheduler": scheduler,
        "platform": {"nodes": 32, "memory_per_node": "16GB", "lps": {"rate": "1 GB/s"},
                     "hps": {"rate": "15 GB/s", "capacity": "512 GB"}, "stage_rate": "5 GB/s"},
        "workload": {"source": "feitelson", "jobs": 60, "arrival_factor": 400}})


@pytest.mark.parametrize("scheduler", ["sas", "easy"])
def test_jobs_mode_keeps_each_jobs_io_time_and_the_same_schedule(scheduler):
    full = simulate_batch(spec(scheduler), phases="all")
    jobs = simulate_batch(spec(scheduler), phases="jobs")
    none = simulate_batch(spec(scheduler), phases="none")
    fj, jj, nj = full.tables["jobs"], jobs.tables["jobs"], none.tables["jobs"]
    for col in ("id", "start", "end", "tier"):
        assert list(fj[col]) == list(jj[col]) == list(nj[col])
    ph = full.tables["phases"]
    assert len(ph) > 0 and len(jobs.tables["phases"]) == 0 and len(none.tables["phases"]) == 0
    by_hand: dict[str, float] = {}
    for job, kind, start, end in zip(ph["job"], ph["kind"], ph["start"], ph["end"]):
        if kind != "compute":
            by_hand[job] = by_hand.get(job, 0.0) + (end - start)
    assert any(v > 0 for v in by_hand.values())
    for i, job in enumerate(fj["id"]):
        assert fj["io_time"][i] == pytest.approx(by_hand.get(job, 0.0), rel=1e-9, abs=1e-9)
        assert jj["io_time"][i] == fj["io_time"][i]
    assert all(math.isnan(x) for x in nj["io_time"])
    assert jobs.attrs["phases_kept"] == "jobs"


def test_io_time_is_at_least_the_io_at_full_link_rate():
    """A job alone on its link moves its bytes at the link's rate at best: its I/O time is never
    shorter than its volume over the rate of the slowest tier it used (LPS jobs: R_lps)."""
    t = simulate_batch(spec("easy"), phases="jobs")
    j = t.tables["jobs"]
    lps = t.attrs["lps_rate"]
    io = np.asarray(j["io_time"])
    vol = np.asarray(j["io_volume"])
    assert np.all(io >= vol / lps * (1 - 1e-9))


def test_phases_option_is_refused_for_io_specs():
    r = subprocess.run([sys.executable, "-m", "iolab", "simulate", "-", "--phases", "jobs"],
                       input="apps: []\n", capture_output=True, text=True)
    assert r.returncode == 2
    assert "--phases" in r.stderr and "Traceback" not in r.stderr


def test_json_without_out_prints_the_metrics_of_the_full_trace(tmp_path):
    """Without ``--out`` the command keeps no phase row (nobody would see them): its metrics are those
    of the run written with every row, and the trace written with ``--out`` has its rows."""
    import json
    path = tmp_path / "modes.json"
    path.write_text(spec("sas").model_dump_json())
    run = lambda *a: subprocess.run([sys.executable, "-m", "iolab", "simulate", str(path), "--json", *a],  # noqa: E731
                                    capture_output=True, text=True, check=True)
    bare = json.loads(run().stdout)
    full = json.loads(run("--out", str(tmp_path / "t.h5")).stdout)
    assert bare == full and bare["jobs"] == 60
    from iolab.trace import read_trace
    t = read_trace(tmp_path / "t.h5")
    assert t.attrs["phases_kept"] == "all" and len(t.tables["phases"]) > 0


def mixed_spec(scheduler: str, estimate: str = "request") -> BatchExperiment:
    """Jobs with and without I/O side by side, some of runtime 0, some past their prediction: the
    jobs without I/O (one compute step) begin and end without the engine's step loop unless every
    phase row is kept, and must do exactly what that loop does."""
    jobs = []
    for i in range(40):
        io = {} if i % 3 else {"input": "2 GB", "output": "1 GB", "data": "4 GB"}
        runtime = 0 if i % 7 == 5 else 50 + (i * 37) % 400
        jobs.append({"id": f"j{i}", "user": f"u{i % 4}", "submit": (i * 13) % 200, "nodes": 1 + (i * 5) % 8,
                     "walltime": max(runtime * (1 + (i % 4) / 2), 1), "runtime": runtime, **io})
    return BatchExperiment.model_validate({
        "kind": "batch", "name": "mixed", "seed": 1, "scheduler": scheduler, "estimate": estimate,
        "platform": {"nodes": 12, "memory_per_node": "4GB", "lps": {"rate": "1 GB/s"},
                     "hps": {"rate": "15 GB/s", "capacity": "64 GB"}, "stage_rate": "5 GB/s"},
        "workload": {"source": "inline", "jobs": jobs}})


@pytest.mark.parametrize("scheduler,estimate", [("easy", "request"), ("fcfs", "request"), ("sas", "request"),
                                                ("easy", "predictor")])
def test_jobs_without_io_run_the_same_whatever_the_phases_kept(scheduler, estimate):
    full = simulate_batch(mixed_spec(scheduler, estimate), phases="all")
    lean = simulate_batch(mixed_spec(scheduler, estimate), phases="jobs")
    bare = simulate_batch(mixed_spec(scheduler, estimate), phases="none")
    fj, lj, nj = full.tables["jobs"], lean.tables["jobs"], bare.tables["jobs"]
    for col in ("id", "start", "end", "tier", "node_ids", "status"):
        assert list(fj[col]) == list(lj[col]) == list(nj[col]), col
    assert list(fj["io_time"]) == list(lj["io_time"])
    assert full.attrs["events"] == lean.attrs["events"] == bare.attrs["events"]
    assert full.attrs["decisions"] == lean.attrs["decisions"]
    ph = full.tables["phases"]  # every job's compute row ends at its end when it has no I/O
    ends = dict(zip(fj["id"], fj["end"]))
    no_io = {f"j{i}" for i in range(40) if i % 3}
    last = {}
    for job, kind, end in zip(ph["job"], ph["kind"], ph["end"]):
        last[job] = (kind, end)
    assert all(last[j] == ("compute", ends[j]) for j in no_io)


@pytest.mark.parametrize("scheduler,strict", [("easy", False), ("fcfs", False), ("sas", False), ("easy", True)])
def test_a_trace_without_node_sets_differs_only_by_them(scheduler, strict):
    """``node_ids=False`` (the command without ``--out``: only the metrics are read) gives the jobs no
    node ids (strict mode's checker reads them: it keeps them) and leaves the jobs table's node sets
    empty; every other column and the metrics are as they are."""
    from iolab.metrics.batch_trace import trace_batch_metrics
    full = simulate_batch(mixed_spec(scheduler), phases="jobs", strict=strict)
    bare = simulate_batch(mixed_spec(scheduler), phases="jobs", node_ids=False, strict=strict)
    fj, bj = full.tables["jobs"], bare.tables["jobs"]
    assert all(fj["node_ids"]) and not any(bj["node_ids"])
    for col in fj.columns:
        if col != "node_ids":
            assert list(map(str, fj[col])) == list(map(str, bj[col])), col
    assert trace_batch_metrics(full) == trace_batch_metrics(bare)


@pytest.mark.parametrize("strict", [False, True])
def test_the_kernel_gives_no_node_ids_only_where_nothing_reads_them(strict):
    from iolab.sim.batch.run import run_batch
    keep = run_batch(mixed_spec("easy"), phases="none", strict=strict)
    skip = run_batch(mixed_spec("easy"), phases="none", strict=strict, node_ids=False)
    assert [(s.start, s.end) for s in keep.jobs] == [(s.start, s.end) for s in skip.jobs]
    assert all(s.node_ids.bit_count() == s.queued.nodes for s in keep.jobs)
    if strict:  # the checker's books hold every job's ids
        assert [s.node_ids for s in skip.jobs] == [s.node_ids for s in keep.jobs]
    else:
        assert all(s.node_ids == 0 for s in skip.jobs)
