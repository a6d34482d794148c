"""The fast paths around the batch decisions give exactly what the plain code gives.

* ``TraceBuilder.extend_columns`` (rows given column-wise) builds the same tables as the same
  rows added one at a time (``add_*`` / ``extend``), mixed with them in any order: the same
  column names, dtypes, values and objects, row order included.
* ``simulate_batch`` writes its jobs and predictions tables column-wise, each distinct node set
  written once: the tables equal the row-by-row construction (``add_job`` with ``job_steps``,
  ``ranges`` per prediction row) on random workloads with I/O, checkpoints and plan tracking.
* ``tnap._last_changes`` (grouping by job with stable sorts) equals the row-by-row scan, on
  random prediction tables with unsorted times, ties and repeated node sets.
* ``nodes.ranges`` (one run of ones a turn on the integer) equals the set ids grouped into
  runs, on random, long-run and sparse masks up to 1 152 nodes.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from iolab.metrics import tnap
from iolab.metrics.tnap import _last_changes, _last_changes_plain
from iolab.middleware.policies.batch import LPS
from iolab.middleware.policies.batch.nodes import parse_ranges, ranges
from iolab.sim.batch.run import run_batch, simulate_batch
from iolab.workloads.steps import job_steps
from iolab.specs import parse_spec
from iolab.trace import TABLES, Table, TraceBuilder


def _same_table(a, b):
    assert list(a.columns) == list(b.columns)
    for c in a.columns:
        x, y = a[c], b[c]
        assert x.dtype == y.dtype, c
        if x.dtype == object:
            assert [(type(v), v) for v in x.tolist()] == [(type(v), v) for v in y.tolist()], c
        else:
            assert x.tobytes() == y.tobytes(), c


def _value(rng, kind):
    if kind == "str":
        return rng.choice(["", "a", "b", "0-3,8", "j1", "ok"])
    if kind == "int":
        return rng.choice([-1, 0, 1, 7, np.int64(3)])
    return rng.choice([0.0, -0.0, 1.5, math.inf, math.nan, np.float64(2.25), 3])


@pytest.mark.parametrize("seed", range(60))
def test_extend_columns_builds_what_the_rows_build(seed):
    rng = random.Random(seed)
    rows_b, cols_b = TraceBuilder(), TraceBuilder()
    for table in ("jobs", "predictions", "phases", "actions"):
        schema = TABLES[table]
        for _ in range(rng.randint(0, 4)):  # chunks, each given as rows or as columns
            n = rng.randint(0, 5)
            given = [c for c, _ in schema if rng.random() < 0.7]
            rows = [{c: _value(rng, k) for c, k in schema if c in given} for _ in range(n)]
            for r in rows:
                rows_b._add(table, r)
            if given and rng.random() < 0.5:  # no column given: no length, no row
                cols_b.extend_columns(table, {c: [r[c] for r in rows] for c in given})
            elif rng.random() < 0.5:
                for r in rows:
                    cols_b._add(table, r)
            else:
                cols_b.extend(table, [tuple(r.get(c, _default(k)) for c, k in schema) for r in rows])
            assert cols_b.count(table) == rows_b.count(table)
    a, b = rows_b.build(x=1), cols_b.build(x=1)
    assert a.attrs == b.attrs
    for name in TABLES:
        _same_table(a.tables[name], b.tables[name])


def _default(kind):
    return {"str": "", "int": -1, "float": float("nan")}[kind]


@pytest.mark.parametrize("seed", range(40))
def test_canonical_tables_given_as_columns_sort_as_rows_do(seed):
    """Phases and grants given column-wise come out in the rows' canonical order (job, index, start),
    ties in insertion order: on rows recorded as a runtime records them (each job's in order, jobs
    interleaved: the fast path), and on rows out of order within a job, with ties or NaN (the whole key)."""
    from array import array

    rng = random.Random(seed)
    disorder = rng.choice([0.0, 0.0, 0.1, 0.5])
    n_jobs, rows = rng.randint(1, 12), []
    next_index = {}
    t = 0.0
    for _ in range(rng.randint(0, 300)):
        job = f"j{rng.randint(0, n_jobs)}"
        t += rng.choice([0.0, 0.0, 1.0, rng.random()])
        index = next_index.get(job, 0) + rng.choice([0, 1, 1, 1])  # a repeated index: a tie on index
        next_index[job] = index
        if rng.random() < disorder:
            index, t_row = rng.randint(0, 5), rng.choice([t, math.nan, 0.0, 7.0])
        else:
            t_row = t
        rows.append((job, index, t_row, float(rng.randint(0, 3)), rng.choice(["", "hps"])))
    shapes = {"phases": lambda j, i, t, v, tier: (j, i, "write", t, t + 1.0, v, -1, tier),
              "grants": lambda j, i, t, v, tier: (j, i, 0, t, t + v, t + 1.0)}
    for table, shape in shapes.items():
        mine = [shape(*r) for r in rows]
        by_rows, by_cols = TraceBuilder(), TraceBuilder()
        by_rows.extend(table, mine)
        columns = {c: (array("d", [r[i] for r in mine]) if k == "float" else [r[i] for r in mine])
                   for i, (c, k) in enumerate(TABLES[table])}
        by_cols.extend_columns(table, columns, take=rng.random() < 0.5)
        _same_table(by_rows.build().tables[table], by_cols.build().tables[table])


def test_extend_columns_checks_names_and_lengths():
    tb = TraceBuilder()
    with pytest.raises(ValueError, match="unknown column"):
        tb.extend_columns("predictions", {"job": ["a"], "when": [1.0]})
    with pytest.raises(ValueError, match="differ in length"):
        tb.extend_columns("predictions", {"job": ["a", "b"], "time": [1.0]})
    tb.extend_columns("predictions", {})
    assert tb.count("predictions") == 0 and len(tb.build().predictions) == 0


def _random_jobs(rng):
    jobs = []
    for i in range(rng.randint(1, 25)):
        j = {"id": f"j{i}", "submit": rng.choice([0, 0, 5, rng.randint(0, 200), rng.uniform(0, 200)]),
             "nodes": rng.randint(1, 8), "walltime": rng.choice([10, 50, 100, 300]),
             "runtime": rng.choice([0, 5, 40, 90, rng.uniform(0, 120)])}
        if rng.random() < 0.5:
            j.update(input=f"{rng.randint(0, 20)}GB", output=f"{rng.randint(0, 20)}GB", data=f"{rng.randint(0, 9)}GB")
        jobs.append(j)
    return jobs


@pytest.mark.parametrize("seed", range(25))
def test_simulate_batch_tables_equal_the_row_by_row_tables(seed):
    rng = random.Random(seed)
    sched = rng.choice(["fcfs", "conservative", "easy", "conservative-reinsert"])
    spec = parse_spec({"kind": "batch", "platform": {"nodes": 8, "memory_per_node": "1GB", "lps": {"rate": "1GB/s"},
                                                     "hps": {"rate": "10GB/s", "capacity": "100GB"},
                                                     "stage_rate": "2GB/s"},
                       "scheduler": sched, "track_predictions": True,
                       "workload": {"source": "inline", "jobs": _random_jobs(rng)}})
    fast = simulate_batch(spec, strict=False)
    rec = run_batch(spec, strict=False)
    p = spec.platform
    tb = TraceBuilder()  # the row-by-row construction simulate_batch had
    for s in rec.jobs:
        j = s.job
        tb.add_job(id=s.queued.id, rank=s.index, nodes=s.queued.nodes, release=s.queued.submit, start=s.start,
                   end=s.end, io_node=-1, pack=-1, status="ok", tier=s.tier, min_time=float(j.runtime),
                   compute_time=job_steps(j, LPS, p.lps.rate, p.memory_per_node).compute_time,
                   io_volume=float(j.input + j.output + j.data), node_ids=ranges(s.node_ids),
                   io_time=rec.io_time[s.index])
    tb.extend("predictions", [(job, t, start, ranges(m)) for job, t, start, m in rec.predictions])
    tb.extend("phases", rec.phases.rows())  # the tuples the engine recorded before it kept columns
    plain = tb.build()
    assert len(plain.predictions) > 0 and len(plain.phases) >= len(rec.jobs)
    _same_table(fast.phases, plain.phases)
    _same_table(fast.jobs, plain.jobs)
    _same_table(fast.predictions, plain.predictions)
    assert repr(list(tnap(fast).items())) == repr(list(tnap(plain).items()))  # NaN != NaN: the text


def test_a_table_of_some_columns_only():
    """``extend_columns(only_given=True)``: the built table has those columns alone, as given; such a table
    is given once and alone, takes no rows, and is not one of the tables put in canonical order."""
    tb = TraceBuilder()
    tb.extend_columns("jobs", {"id": ["a", "b"], "start": [1.0, 2.0]}, only_given=True)
    assert tb.count("jobs") == 2
    jobs = tb.build().jobs
    assert list(jobs.columns) == ["id", "start"] and jobs["start"].tolist() == [1.0, 2.0]
    assert jobs["id"].dtype == object and jobs["start"].dtype == np.float64
    with pytest.raises(ValueError, match="once, alone"):
        tb.extend_columns("jobs", {"id": ["c"]})
    with pytest.raises(ValueError, match="takes no rows"):
        tb.add_job(id="c")
    with pytest.raises(ValueError, match="canonical order"):
        TraceBuilder().extend_columns("phases", {"job": ["a"]}, only_given=True)


@pytest.mark.parametrize("seed", range(10))
def test_a_trace_for_its_metrics_only_gives_the_same_metrics(seed):
    """``simulate_batch(metrics_only=True)`` (``iolab simulate`` without ``--out``): its jobs table has the
    metrics' columns only, each equal to the whole trace's, and the metrics are the same, HPS jobs included."""
    from iolab.metrics.batch_trace import trace_batch_metrics
    from iolab.middleware.policies.batch.job_table import METRIC_COLUMNS

    rng = random.Random(seed)
    spec = parse_spec({"kind": "batch", "platform": {"nodes": 8, "memory_per_node": "1GB", "lps": {"rate": "1GB/s"},
                                                     "hps": {"rate": "10GB/s", "capacity": "100GB"},
                                                     "stage_rate": "2GB/s"},
                       "scheduler": rng.choice(["fcfs", "easy", "sas", "conservative"]),
                       "workload": {"source": "inline", "jobs": _random_jobs(rng)}})
    whole = simulate_batch(spec, phases="jobs", node_ids=False)
    lean = simulate_batch(spec, phases="jobs", node_ids=False, metrics_only=True)
    assert list(lean.jobs.columns) == [c for c in whole.jobs.columns if c in METRIC_COLUMNS]  # the schema's order
    for c in METRIC_COLUMNS:
        assert lean.jobs[c].dtype == whole.jobs[c].dtype
        assert [(type(v), v) for v in lean.jobs[c].tolist()] == [(type(v), v) for v in whole.jobs[c].tolist()], c
    assert trace_batch_metrics(lean) == trace_batch_metrics(whole)


def _pred_table(rng):
    n = rng.choice([0, 1, 2, rng.randint(0, 40), rng.randint(0, 400)])
    jobs = [f"j{i}" for i in range(rng.randint(1, 12))]
    sets = ["", "0", "0-3", "0-3,8", "4-7", "1,3"][: rng.randint(1, 6)]
    times = [rng.choice([0.0, 1.0, 1.0, 2.5, float(rng.randint(0, 30)), rng.uniform(0, 30)]) for _ in range(n)]
    if rng.random() < 0.5:
        times.sort()
    return Table("predictions", {"job": np.array([rng.choice(jobs) for _ in range(n)], dtype=object),
            "time": np.array(times, dtype=np.float64),
            "start": np.zeros(n), "nodes": np.array([rng.choice(sets) for _ in range(n)], dtype=object)})


def test_last_changes_equal_the_row_by_row_scan():
    rng = random.Random(5)
    for case in range(800):
        pred = _pred_table(rng)
        fast, plain = _last_changes(pred), _last_changes_plain(pred)
        assert fast == plain, case
        assert all(type(v) is float for v in fast.values())


def _ranges_by_ids(mask):
    """``ranges`` the plain way: the set ids, grouped into runs of consecutive ids."""
    parts, ids = [], [i for i in range(mask.bit_length()) if mask >> i & 1]
    k = 0
    while k < len(ids):
        e = k
        while e + 1 < len(ids) and ids[e + 1] == ids[e] + 1:
            e += 1
        parts.append(str(ids[k]) if e == k else f"{ids[k]}-{ids[e]}")
        k = e + 1
    return ",".join(parts)


def test_ranges_equals_the_ids_grouped_into_runs():
    rng = random.Random(9)
    for case in range(3000):
        width = rng.choice([1, 2, 8, 64, 100, 1152])
        kind = rng.random()
        if kind < 0.3:
            mask = rng.getrandbits(width)
        elif kind < 0.6:  # a few long runs
            mask = 0
            for _ in range(rng.randint(0, 5)):
                a = rng.randrange(width)
                mask |= ((1 << rng.randint(1, width - a)) - 1) << a
        else:  # sparse
            mask = 0
            for _ in range(rng.randint(0, 8)):
                mask |= 1 << rng.randrange(width)
        text = ranges(mask)
        assert text == _ranges_by_ids(mask), case
        assert parse_ranges(text) == mask
    assert ranges(0) == "" and ranges(0b100001111) == "0-3,8" and ranges(1 << 1151) == "1151"


def _kernel_spec(rng, scheduler):
    return parse_spec({"kind": "batch", "platform": {"nodes": 8, "memory_per_node": "1GB", "lps": {"rate": "1GB/s"},
                                                     "hps": {"rate": "10GB/s", "capacity": "100GB"},
                                                     "stage_rate": "2GB/s"},
                       "scheduler": scheduler, "workload": {"source": "inline", "jobs": _random_jobs(rng)}})


def test_fcfs_quick_entry_and_prefix_snapshots_decide_what_the_whole_queue_decides(monkeypatch):
    """FCFS deciding its starts only is asked through its quick entry (``FCFS.quick_starts``: the kernel's
    queue and free nodes, no snapshot, no decision object); without it, it gets snapshots whose queue stops
    at the first job whose nodes are not free (the kernel's ``_fitting_prefix``); both give the same run,
    job for job, as snapshots of the whole queue and as strict mode (which decides on snapshots), on
    random workloads whose queue grows (and shrinks) with jobs of zero runtime and overruns."""
    from iolab.middleware.policies.batch.backfill import FCFS
    from iolab.middleware.policies.batch.kernel import BatchKernel

    shown, asked = [], []
    snapshot, quick_starts = BatchKernel.snapshot, FCFS.quick_starts

    def counted(self, t):
        snap = snapshot(self, t)
        shown.append(len(snap.queue) < len(self.queue))
        return snap

    def quick_counted(self, *a):
        asked.append(1)
        return quick_starts(self, *a)

    prefix = quick = 0
    for seed in range(20):
        spec = _kernel_spec(random.Random(seed), "fcfs")
        with monkeypatch.context() as m:
            m.setattr(BatchKernel, "snapshot", counted)
            m.setattr(FCFS, "quick_starts", quick_counted)
            shown.clear()
            fast = simulate_batch(spec, strict=False)
            assert not shown  # every decision by the quick entry
            quick += len(asked)
            m.setattr(FCFS, "quick", property(lambda self: False))
            asked.clear()
            on_prefix = simulate_batch(spec, strict=False)
            assert not asked
            prefix += sum(shown)
            m.setattr(FCFS, "reads_fitting_prefix", property(lambda self: False))
            shown.clear()
            whole = simulate_batch(spec, strict=False)
            assert not any(shown)  # the third run showed every snapshot the whole queue
        strict = simulate_batch(spec, strict=True)
        for other in (on_prefix, whole, strict):
            _same_table(fast.jobs, other.jobs)
            _same_table(fast.phases, other.phases)
    assert prefix > 50 and quick > 50  # snapshots held a prefix only; the quick entry decided


@pytest.mark.parametrize("depth", [None, 0, 2])
def test_easy_quick_entry_decides_what_its_snapshots_decide(monkeypatch, depth):
    """EASY without projections is asked through its quick entry (``EASY.quick_starts``: the kernel's
    queue and sorted releases, no snapshot, no decision object; the kernel then keeps no running views):
    the same run, job for job, as the same policy deciding on snapshots and as strict mode (which decides
    on snapshots with the kernel's every view checked), with and without a backfill depth, on random
    workloads with overruns (jobs past their expected end) and jobs of zero runtime."""
    from iolab.middleware.policies.batch.backfill import EASY

    asked = []
    quick_starts = EASY.quick_starts

    def quick_counted(self, *a):
        out = quick_starts(self, *a)
        asked.append(out is not None)
        return out

    quick = 0
    for seed in range(30):
        scheduler = "easy" if depth is None else {"kind": "easy", "backfill_depth": depth}
        spec = _kernel_spec(random.Random(seed), scheduler)
        with monkeypatch.context() as m:
            m.setattr(EASY, "quick_starts", quick_counted)
            asked.clear()
            fast = simulate_batch(spec, strict=False)
            quick += sum(asked)
            m.setattr(EASY, "quick", property(lambda self: False))
            asked.clear()
            on_snapshots = simulate_batch(spec, strict=False)
            assert not asked
        strict = simulate_batch(spec, strict=True)
        for other in (on_snapshots, strict):
            _same_table(fast.jobs, other.jobs)
            _same_table(fast.phases, other.phases)
    assert quick > 100  # the quick entry decided
