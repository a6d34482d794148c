"""SWF reader, Theta importer and the Feitelson generator."""

from __future__ import annotations

import gzip
import math

import numpy as np
import pytest

from iolab.specs.batch import FeitelsonWorkload, Job
from iolab.workloads import SWFError, feitelson_jobs, read_swf, swf_jobs, theta_jobs, theta_trace
from iolab.workloads.feitelson import expected_runtime, repetition_distribution, size_distribution

GB = 10**9


# ---------------------------------------------------------------- SWF


def test_kth_sp2(kth):
    trace = read_swf(kth)
    # Job lines counted independently of the parser.
    with gzip.open(kth, "rt") as fh:
        lines = [ln for ln in fh if ln.strip() and not ln.lstrip().startswith(";")]
    assert len(trace.records) == len(lines) == 27992
    assert trace.problems == []
    assert (trace.max_nodes, trace.max_procs, trace.procs_per_node) == (100, 100, 1)
    # The header announces 28476 records (28490 jobs, 14 removed by the cleaning);
    # this copy holds 484 fewer lines: the parser reports what is there.
    assert trace.max_records == 28476
    jobs = trace.jobs()
    assert len(jobs) == 27992 and trace.unusable == []
    first, last = jobs[0], jobs[-1]
    assert (first.id, first.submit, first.runtime, first.nodes, first.walltime, first.user) == \
        ("15", 599850, 3477, 4, 53940, "12")
    assert (last.id, last.submit, last.nodes) == ("28490", 29363618, 1)
    assert all(1 <= j.nodes <= 100 for j in jobs)
    assert all(a.submit <= b.submit for a, b in zip(jobs, jobs[1:]))


def test_sdsc_blue_procs_to_nodes(sdsc_blue):
    trace = read_swf(sdsc_blue, limit=2000)
    assert trace.procs_per_node == 8 and len(trace.records) == 2000
    jobs = trace.jobs()
    assert all(1 <= j.nodes <= 144 for j in jobs)
    r = trace.records[0]
    procs = r.req_procs or r.alloc_procs
    assert jobs[0].nodes == math.ceil(procs / 8)


SNIPPET = """; Version: 2.2
; MaxNodes: 16
; MaxProcs: 64
    1   0  10  100  4  -1 -1  4  200 -1 1 3 1 -1 1 -1 -1 -1
    2  50  -1   -1  8  -1 -1 -1   -1 -1 5 4 1 -1 1 -1 -1 -1
    3  60  1  20  x  -1 -1  4  200 -1 1 3 1 -1 1 -1 -1 -1
    4  70  1  20  4  -1 -1  4  200 -1 1 3
    5  80  1  20  -1  -1 -1  -1  200 -1 1 3 1 -1 1 -1 -1 -1
"""


def test_swf_malformed_line_is_named(tmp_path):
    f = tmp_path / "bad.swf"
    f.write_text(SNIPPET)
    with pytest.raises(SWFError) as exc:
        read_swf(f)
    assert exc.value.line == 6 and "field 5" in exc.value.reason and f"{f}:6:" in str(exc.value)


def test_swf_lenient_collects_problems(tmp_path):
    f = tmp_path / "bad.swf.gz"
    with gzip.open(f, "wt") as fh:
        fh.write(SNIPPET)
    trace = read_swf(f, strict=False)
    assert [ln for ln, _ in trace.problems] == [6, 7]
    assert "expected 18 fields, found 12" in trace.problems[1][1]
    assert trace.procs_per_node == 4
    jobs = trace.jobs()
    assert [j.id for j in jobs] == ["1", "2"]  # job 5 has no processor count
    assert trace.unusable == [(8, "job 5: no processor count (fields 5 and 8 unknown)")]
    j1, j2 = jobs
    assert (j1.nodes, j1.walltime, j1.runtime) == (1, 200, 100)
    # -1 fields: requested procs unknown -> allocated (8 procs = 2 nodes); run time unknown -> 0;
    # requested time unknown -> max(runtime, 1 s).
    assert (j2.nodes, j2.runtime, j2.walltime) == (2, 0, 1)
    assert trace.records[1].wait is None and trace.records[1].req_procs is None


def test_swf_missing_file(tmp_path):
    with pytest.raises(SWFError, match="no such SWF file"):  # an IolabError: exit 2, no traceback
        swf_jobs(tmp_path / "nope.swf")


# ---------------------------------------------------------------- Theta


def test_theta_real_file(theta_file):
    tr = theta_trace(theta_file)
    assert len(tr.jobs) == len(tr.raw) == 57
    first = tr.jobs[0]
    assert (first.id, first.nodes, first.walltime, first.runtime) == ("576796", 128, 1800, 419)
    assert first.output == 140711729266 and first.input == 0 and first.storage == 140711729266
    assert min(j.submit for j in tr.jobs) == 0
    assert tr.origin == 1642806487.0  # 2022-01-21 23:08:07 UTC
    for j, raw in zip(tr.jobs, tr.raw):
        assert j.storage == max(raw["readBytes"], raw["writtenBytes"])
        assert j.nodes == raw["nodesUsed"]


def test_theta_missing_field_is_named(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text("jobs:\n- {id: 1, nodesUsed: 2, submissionTime: '2022-01-01 00:00:00', walltimeSeconds: 10,"
                 " runtimeSeconds: 5, readBytes: 1}\n")
    with pytest.raises(ValueError, match=r"jobs\[0\]\.writtenBytes"):
        theta_jobs(f)


# ---------------------------------------------------------------- Feitelson


def test_feitelson_is_determined_by_the_seed():
    a = feitelson_jobs(seed=7, jobs=300)
    b = feitelson_jobs(seed=7, jobs=300)
    c = feitelson_jobs(seed=8, jobs=300)
    assert a == b
    assert a != c
    assert len(a) == 300 and all(isinstance(j, Job) for j in a)


def test_feitelson_theta_only_changes_estimates():
    exact = feitelson_jobs(seed=3, jobs=200)
    noisy = feitelson_jobs(seed=3, jobs=200, theta=0.5)
    strip = lambda js: [j.model_copy(update={"estimate": None}) for j in js]  # noqa: E731
    assert strip(noisy) == exact
    assert all(j.estimate is None for j in exact) and all(j.estimate is not None for j in noisy)
    rel = np.array([(j.estimate.data - j.data) / j.data for j in noisy if j.data > 0])
    assert abs(rel.std() - 0.5) < 0.1  # sigma = theta * data (before clipping at 0)


def test_feitelson_plausibility():
    n, nodes, lps = 10_000, 128, 1 * GB
    p = FeitelsonWorkload(jobs=n)
    jobs = feitelson_jobs(p, seed=11, max_nodes=nodes, lps_rate=lps)
    runtime = np.array([j.runtime for j in jobs])
    size = np.array([j.nodes for j in jobs])
    # Table I bounds, walltime = runtime.
    assert runtime.min() >= 1800 and runtime.max() <= 86400
    assert all(j.walltime == j.runtime for j in jobs)
    # Means within 5 % of the model's (repetitions copy their family, so the
    # per-run means equal the per-family ones in expectation).
    assert abs(runtime.mean() / expected_runtime(p, nodes) - 1) < 0.05
    mean_size = float(np.sum(size_distribution(nodes) * np.arange(1, nodes + 1)))
    assert abs(size.mean() / mean_size - 1) < 0.05
    # Powers of two are boosted.
    assert np.mean((size & (size - 1)) == 0) > 0.6
    # Arrivals: new jobs every arrival_factor s on average; runs per job from the Zipf law.
    reps = float(np.sum(repetition_distribution(2) * [1, 2]))
    families = n / reps
    span = max(j.submit for j in jobs)
    assert abs(span / (families * p.arrival_factor) - 1) < 0.1
    # I/O: input + output fill 10 % of the runtime at R_lps on average.
    frac = np.array([(j.input + j.output) / (j.runtime * lps) for j in jobs])
    assert abs(frac.mean() - 0.10) < 0.005
    # Checkpoints: whole multiples of nodes * 16 GB, none for jobs under an hour;
    # storage = max(input, output) + one checkpoint.
    for j in jobs[:2000]:
        ck = j.nodes * 16 * GB
        k = j.data / ck
        assert k == int(k)
        if j.runtime < 3600:
            assert j.data == 0
        assert j.storage == max(j.input, j.output) + (ck if j.data > 0 else 0)
    ids = [j.id for j in jobs]
    assert ids == [str(i) for i in range(1, n + 1)]
    assert all(a.submit <= b.submit for a, b in zip(jobs, jobs[1:]))


def test_experiment_to_first_sas_decision():
    """A spec, its generated workload, and one SAS decision on the first submissions."""
    from iolab.specs.load import parse_spec
    from iolab.middleware.policies.batch import SAS, QueuedJob, Snapshot, TierRates
    from iolab.workloads import load_workload

    e = parse_spec({"kind": "batch", "seed": 5, "scheduler": "sas",
                    "platform": {"nodes": 128, "lps": {"rate": "0.1 GB/s"},
                                 "hps": {"rate": "1.5 GB/s", "capacity": "2048GB"}, "stage_rate": "0.5 GB/s"},
                    "workload": {"source": "feitelson", "jobs": 50}}, kind="batch")
    jobs = load_workload(e)
    assert jobs == load_workload(e) and len(jobs) == 50
    pl = e.platform
    queue = tuple(QueuedJob.from_job(j) for j in jobs[:10])
    d = SAS().decide(Snapshot(now=queue[-1].submit, total_nodes=pl.nodes, free_nodes=pl.nodes, queue=queue,
                              hps_capacity=pl.hps.total_capacity,
                              rates=TierRates(pl.lps.rate, pl.hps.rate, pl.stage_rate)))
    assert sum(s.nodes for s in d.starts) <= pl.nodes
    assert sum(s.storage for s in d.starts) <= pl.hps.total_capacity
    assert {s.tier for s in d.starts} <= {"lps", "hps"} and len(d.plan) == 10
