"""iolab's batch simulator against benchmarks/reference_easy.py, an independent single-file simulator.

Random SWF traces (seeded numpy) go through both: iolab reads them with its SWF importer and simulates
them with ``iolab.sim.batch.simulate_batch``; the reference reads and simulates them on its own.  Every
job must start at the same instant, for FCFS, EASY and conservative backfilling.  Traces with
runtime-0 jobs are kept apart: iolab takes no decision when such a job ends (issue 8 item 7a).
"""

from __future__ import annotations

import gzip
import math
import subprocess
import sys

import numpy as np
import pytest

from iolab.sim.batch import simulate_batch
from iolab.workloads import SWFError, swf_jobs
from iolab.specs import parse_spec

from shared_data import REPO

BENCHMARKS = REPO / "benchmarks"

POLICIES = ["fcfs", "easy", "conservative", "conservative-reinsert"]


def swf_line(job, submit, run, procs_alloc, procs_req, req_time, user=1) -> str:
    f = [job, submit, -1, run, procs_alloc, -1, -1, procs_req, req_time, -1, 1, user, 1, -1, -1, -1, -1, -1]
    return " ".join(str(x) for x in f)


def random_swf(seed: int, jobs: int, *, nodes: int = 16, ppn: int = 2, zero_runtime: float = 0.0) -> str:
    """An SWF text that keeps a machine of ``nodes`` nodes busy, with queues, overruns and ties.

    ``zero_runtime`` is the share of jobs whose run time is 0 or unknown (-1).
    """
    rng = np.random.default_rng(seed)
    lines = ["; Version: 2.2", f"; MaxNodes: {nodes}", f"; MaxProcs: {nodes * ppn}", ";"]
    t = 0
    for k in range(jobs):
        t += int(rng.choice([0, 0, 1, 5]) if rng.random() < 0.3 else rng.exponential(40))  # ties and bursts
        width = int(min(nodes * ppn, max(1, round(rng.pareto(1.2) * 2))))  # mostly narrow, some wide
        run = int(rng.integers(1, 1500)) if rng.random() < 0.8 else int(rng.integers(1, 60))
        req = {0: -1, 1: 0}.get(int(rng.integers(0, 12)), None)  # unknown or 0: walltime = max(run, 1)
        if req is None:
            req = int(run * rng.uniform(0.7, 3.0)) + 1  # some jobs overrun their request
        if rng.random() < zero_runtime:
            run = int(rng.choice([0, -1]))
        alloc, asked = (width, width) if rng.random() < 0.7 else ((width, -1) if rng.random() < 0.5 else (width, 0))
        lines.append(swf_line(k + 1, t, run, alloc, asked, req, user=int(rng.integers(1, 9))))
    return "\n".join(lines) + "\n"


def iolab_starts(path, nodes: int, policy: str, strict: bool | None = None) -> dict[str, float]:
    """``strict`` False: the user's default path (EASY and FCFS decide through their quick entry, no
    snapshot); True (or the suite's IOLAB_STRICT): every decision on a checked snapshot."""
    spec = parse_spec({"kind": "batch", "platform": {"nodes": nodes, "lps": {"rate": "1GB/s"},
                                                     "hps": {"rate": "10GB/s", "capacity": "1TB"},
                                                     "stage_rate": "1GB/s"},
                       "scheduler": policy, "workload": {"source": "swf", "path": str(path)}})
    t = simulate_batch(spec, strict=strict)
    return dict(zip((str(x) for x in t.jobs["id"]), (float(x) for x in t.jobs["start"])))


def reference_starts(ref, path, nodes: int, policy: str, **kw) -> dict[str, float]:
    w = ref.read_swf(str(path))
    start, _, _ = ref.simulate(w, nodes, policy, **kw)
    return dict(zip(w.ids, start))


def disagreements(a: dict, b: dict) -> list:
    assert a.keys() == b.keys()
    return [(j, a[j], b[j]) for j in a if a[j] != b[j]]


# --------------------------------------------------------------------------- the reference on its own
@pytest.mark.parametrize("policy", POLICIES)
def test_runtime0_job_frees_its_nodes_at_its_start_instant(reference_easy, tmp_path, policy):
    # two jobs at 0 on 2 nodes: a (runtime 0) ends at 0, so b starts at 0
    p = tmp_path / "two.swf"
    p.write_text("; MaxNodes: 2\n; MaxProcs: 2\n" + swf_line(1, 0, 0, 2, 2, 10) + "\n"
                 + swf_line(2, 0, 5, 2, 2, 10) + "\n")
    assert reference_starts(reference_easy, p, 2, policy) == {"1": 0.0, "2": 0.0}
    # iolab before the fix waits for an event that never comes
    with pytest.raises(RuntimeError, match="never started"):
        reference_starts(reference_easy, p, 2, policy, iolab_runtime0=True)


def test_easy_backfills_only_what_does_not_delay_the_head(reference_easy, tmp_path):
    # 4 nodes. r runs 0-100 on 2 nodes.  head h (4 nodes) waits for 100.  x (2 nodes, 50 s) ends before
    # the shadow time: backfilled.  y (2 nodes, 200 s) would delay h: it waits.  Conservative agrees;
    # FCFS backfills nothing.
    p = tmp_path / "bf.swf"
    p.write_text("; MaxNodes: 4\n; MaxProcs: 4\n" + "\n".join([
        swf_line(1, 0, 100, 2, 2, 100), swf_line(2, 1, 10, 4, 4, 10),
        swf_line(3, 2, 50, 2, 2, 50), swf_line(4, 3, 200, 2, 2, 200)]) + "\n")
    assert reference_starts(reference_easy, p, 4, "easy") == {"1": 0, "2": 100, "3": 2, "4": 110}
    assert reference_starts(reference_easy, p, 4, "conservative") == {"1": 0, "2": 100, "3": 2, "4": 110}
    assert reference_starts(reference_easy, p, 4, "fcfs") == {"1": 0, "2": 100, "3": 110, "4": 110}


def test_bad_line_is_named_and_exits_2(tmp_path):
    p = tmp_path / "bad.swf"
    p.write_text("; MaxNodes: 2\n" + swf_line(1, 0, 5, 1, 1, 10) + "\n1 2 3\n")
    r = subprocess.run([sys.executable, str(BENCHMARKS / "reference_easy.py"), str(p)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert f"{p}:3: expected 18 fields, found 3" in r.stderr and "Traceback" not in r.stderr


# --------------------------------------------------------------------------- the SWF import rules
def test_swf_import_rules_match_iolab(reference_easy, tmp_path):
    rows = [
        swf_line(1, 0, 100, 4, 4, 200),        # plain
        swf_line(2, 0, -1, 4, 4, 200),         # run time unknown -> 0
        swf_line(3, 5, 30, 6, -1, -1),         # requested procs unknown -> allocated; req time unknown
        swf_line(4, 5, 0, 3, 0, 0),            # req procs 0 -> allocated; req time 0 -> max(run, 1)
        swf_line(5, 7, 10, -1, -1, 50),        # no processor count: unusable
        swf_line(6, 7, 10, 0, 0, 50),          # zero processors: unusable
        swf_line(7, 8, 10, 5, -3, 50),         # negative requested count: unusable (iolab's rule)
        swf_line(8, 9.5, 12.25, 7, 7, 3),      # fractional times, overrun
        swf_line(9, 9.5, 0, 2, 2, -1),         # run time 0, walltime unknown -> 1
    ]
    p = tmp_path / "rules.swf.gz"  # gzip detected by content
    with gzip.open(p, "wt") as fh:
        fh.write("; MaxNodes: 8\n; MaxProcs: 16\n; MaxNodes: 99\n" + "\n".join(rows) + "\n")
    w = reference_easy.read_swf(str(p))
    mine = list(zip(w.ids, w.submit, w.nodes, w.walltime, w.runtime))
    theirs = [(j.id, j.submit, j.nodes, j.walltime, j.runtime) for j in swf_jobs(p)]
    assert mine == theirs
    assert [j[0] for j in mine] == ["1", "2", "3", "4", "8", "9"] and w.unusable == 3
    assert mine[2][2] == 3 and mine[4][2] == 4  # ceil(6 / 2), ceil(7 / 2): 2 procs per node
    with gzip.open(p, "wt") as fh:  # a negative run time other than -1 is not a value: iolab refuses its line
        fh.write("; MaxNodes: 8\n" + swf_line(1, 0, -7, 2, 2, -1) + "\n")
    with pytest.raises(SWFError, match="run_time"):
        swf_jobs(p)


@pytest.mark.parametrize("seed", range(6))
def test_random_swf_import_matches_iolab(reference_easy, tmp_path, seed):
    p = tmp_path / "w.swf"
    p.write_text(random_swf(seed, 400, ppn=1 + seed % 3, zero_runtime=0.1))
    w = reference_easy.read_swf(str(p))
    assert list(zip(w.ids, w.submit, w.nodes, w.walltime, w.runtime)) == \
        [(j.id, j.submit, j.nodes, j.walltime, j.runtime) for j in swf_jobs(p)]


# --------------------------------------------------------------------------- schedules, job for job
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", range(4))
def test_same_start_for_every_job(reference_easy, tmp_path, policy, seed):
    p = tmp_path / "w.swf"
    p.write_text(random_swf(100 + seed, 300, nodes=16 + 8 * (seed % 2)))
    nodes = 16 + 8 * (seed % 2)
    mine = reference_starts(reference_easy, p, nodes, policy)
    theirs = iolab_starts(p, nodes, policy)
    assert disagreements(mine, theirs) == []
    assert disagreements(mine, iolab_starts(p, nodes, policy, strict=False)) == []  # the quick entries
    # the workload really exercises the policy: jobs wait, and (but in FCFS) some overtake
    waits = [mine[j] for j in mine]
    assert len(set(waits)) > 100
    order = sorted(mine, key=lambda j: (mine[j], int(j)))
    overtakes = sum(int(a) > int(b) for a, b in zip(order, order[1:]))
    assert (overtakes == 0) == (policy == "fcfs")


@pytest.mark.parametrize("policy", POLICIES)
def test_same_start_for_every_job_of_a_few_thousand(reference_easy, tmp_path, policy):
    """One long trace (3 000 jobs, 64 nodes): long queues and many decisions per job."""
    p = tmp_path / "w.swf"
    p.write_text(random_swf(300, 3000, nodes=64, zero_runtime=0.02))
    mine = reference_starts(reference_easy, p, 64, policy)
    theirs = iolab_starts(p, 64, policy)
    assert len(mine) > 2900
    assert disagreements(mine, theirs) == []
    assert disagreements(mine, iolab_starts(p, 64, policy, strict=False)) == []  # the quick entries
    submit = {j.id: j.submit for j in swf_jobs(p)}
    assert sum(mine[j] > submit[j] for j in mine) > 2000  # a queue most jobs wait in


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", range(2))
def test_same_start_for_every_job_with_runtime0_jobs(reference_easy, tmp_path, policy, seed):
    p = tmp_path / "w.swf"
    p.write_text(random_swf(200 + seed, 300, zero_runtime=0.15))
    mine = reference_starts(reference_easy, p, 16, policy)
    theirs = iolab_starts(p, 16, policy)
    assert disagreements(mine, theirs) == []


@pytest.mark.parametrize("policy", POLICIES)
def test_minimal_runtime0_case(tmp_path, policy):
    # a (runtime 0, 2 nodes) and b (runtime 5, 2 nodes) at 0 on 2 nodes, c at 10: b starts at 0
    # (the reference); before the fix of issue 8 item 7a, iolab started it at 10
    p = tmp_path / "two.swf"
    p.write_text("; MaxNodes: 2\n; MaxProcs: 2\n" + "\n".join([
        swf_line(1, 0, 0, 2, 2, 10), swf_line(2, 0, 5, 2, 2, 10), swf_line(3, 10, 5, 1, 1, 10)]) + "\n")
    assert iolab_starts(p, 2, policy) == {"1": 0.0, "2": 0.0, "3": 10.0}


def test_reference_agrees_with_itself_without_runtime0_jobs(reference_easy, tmp_path):
    # the --iolab-runtime0 switch changes nothing when no job has runtime 0
    p = tmp_path / "w.swf"
    p.write_text(random_swf(7, 300))
    for policy in POLICIES:
        a = reference_starts(reference_easy, p, 16, policy)
        assert a == reference_starts(reference_easy, p, 16, policy, iolab_runtime0=True)
        assert all(math.isfinite(v) for v in a.values())
