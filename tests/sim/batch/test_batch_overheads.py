"""``platform.overheads``: the launch, exit and per-phase costs of a real job, as the simulator models them."""

from __future__ import annotations

import pytest

from iolab.specs import parse_spec
from iolab.sim.batch.run import simulate_batch
from iolab.workloads.steps import EXIT, FIXED, LAUNCH, job_steps

PLATFORM = {"nodes": 4, "memory_per_node": "8GB", "lps": {"rate": "1GB/s"},
            "hps": {"rate": "10GB/s", "capacity": "100GB"}, "stage_rate": "5GB/s"}
# a: on HPS under SAS (stage-in, read, 2 checkpoints, output write, stage-out: 4 read/write phases);
# b: no I/O, needs every node, so it waits for a
JOBS = [{"id": "a", "submit": 0, "nodes": 2, "walltime": 200, "runtime": 100, "input": "10GB", "output": "5GB",
         "data": "24GB", "storage": "20GB"},
        {"id": "b", "submit": 1, "nodes": 4, "walltime": 60, "runtime": 50}]


def spec(jobs=JOBS, **overheads):
    return parse_spec({"kind": "batch", "platform": {**PLATFORM, "overheads": overheads}, "scheduler": "sas",
                       "workload": {"source": "inline", "jobs": jobs}})


def rows(trace, job):
    p = trace.phases
    return [(int(i), k, s, e) for j, i, k, s, e in zip(p["job"], p["index"], p["kind"], p["start"], p["end"])
            if j == job]


@pytest.mark.parametrize("x", [0.25, 3.0, 40.0])
def test_a_launch_overhead_shifts_a_one_job_run_by_exactly_its_value(x):
    base = simulate_batch(spec(JOBS[:1]), strict=True)
    t = simulate_batch(spec(JOBS[:1], launch=x), strict=True)
    assert t.jobs["start"][0] == base.jobs["start"][0] == 0
    assert t.jobs["end"][0] == pytest.approx(base.jobs["end"][0] + x, abs=1e-9)
    # the stage-in comes before the launch (unchanged); every app phase after it moves by x; same rows
    before, after = rows(base, "a"), rows(t, "a")
    assert [(i, k) for i, k, _, _ in after] == [(i, k) for i, k, _, _ in before]
    for (i, k, s0, e0), (_, _, s1, e1) in zip(before, after):
        shift = 0.0 if k == "stage-in" else x
        assert (s1, e1) == pytest.approx((s0 + shift, e0 + shift), abs=1e-9), (i, k)


def test_exit_comes_before_the_stage_out_and_the_fixed_cost_counts_in_each_io_phase():
    base = simulate_batch(spec(JOBS[:1]))
    t = simulate_batch(spec(JOBS[:1], exit=2.0, io_phase=0.5))
    io = [k for _, k, _, _ in rows(base, "a") if k in ("read", "write")]
    assert len(io) == 4
    assert t.jobs["end"][0] == pytest.approx(base.jobs["end"][0] + 2.0 + 0.5 * 4, abs=1e-9)
    b = {(i, k): (s, e) for i, k, s, e in rows(base, "a")}
    shift = 0.0
    for i, k, s, e in rows(t, "a"):
        s0, e0 = b[(i, k)]
        if k in ("read", "write"):  # the row starts where it did (plus earlier costs) and lasts 0.5 s more
            assert (s, e - s) == pytest.approx((s0 + shift, e0 - s0 + 0.5), abs=1e-9), (i, k)
            shift += 0.5
        elif k == "stage-out":  # after the exit
            assert s == pytest.approx(s0 + shift + 2.0, abs=1e-9)
        else:
            assert s == pytest.approx(s0 + shift, abs=1e-9), (i, k)


def test_a_delivered_share_stretches_that_links_phases_and_not_the_plan():
    """``delivered`` scales what the links move per second, not the spec's rates: at half of R_hps
    every HPS phase lasts twice as long, staging and compute do not change; at half of R_stage the
    stage-in doubles.  SAS still picks HPS for ``a`` (it plans with the spec's rates)."""
    base = simulate_batch(spec(JOBS[:1]), strict=True)
    half = simulate_batch(spec(JOBS[:1], delivered={"hps": 0.5}), strict=True)
    slow_stage = simulate_batch(spec(JOBS[:1], delivered={"stage": 0.5}), strict=True)
    assert base.jobs["tier"][0] == half.jobs["tier"][0] == slow_stage.jobs["tier"][0] == "hps"
    dur = lambda t: {(i, k): e - s for i, k, s, e in rows(t, "a")}  # noqa: E731
    b, h, st = dur(base), dur(half), dur(slow_stage)
    for key, d in b.items():
        kind = key[1]
        assert h[key] == pytest.approx(2 * d if kind in ("read", "write") else d, abs=1e-9), key
        assert st[key] == pytest.approx(2 * d if kind in ("stage-in", "stage-out") else d, abs=1e-9), key
    assert any(k in ("read", "write") for _, k in b) and any(k == "stage-in" for _, k in b)
    with pytest.raises(Exception, match="delivered"):
        spec(JOBS[:1], delivered={"lps": 0})


def test_a_job_holds_its_nodes_through_its_overheads():
    base = simulate_batch(spec(), strict=True)
    t = simulate_batch(spec(launch=3.0, exit=2.0), strict=True)
    start = dict(zip(t.jobs["id"], t.jobs["start"]))
    end = dict(zip(t.jobs["id"], t.jobs["end"]))
    b_end = dict(zip(base.jobs["id"], base.jobs["end"]))
    assert end["a"] == pytest.approx(b_end["a"] + 5.0)
    assert start["b"] == pytest.approx(end["a"])  # b needs a's nodes, freed only after a's exit
    assert end["b"] == pytest.approx(start["b"] + 50 + 5.0)  # b has no phase of I/O: launch + 50 s + exit


def test_the_steps_keep_their_indices_and_the_overheads_are_where_the_docs_say():
    job = spec(JOBS[:1]).workload.jobs[0]
    from iolab.specs.batch import Overheads

    plain = job_steps(job, "hps", 1e9, 8e9).steps
    steps = job_steps(job, "hps", 1e9, 8e9, Overheads(launch=1, exit=2, io_phase=0.5)).steps
    assert [s.kind for s in steps if s.kind not in (LAUNCH, EXIT, FIXED)] == [s.kind for s in plain]
    assert [s.index for s in steps if s.kind not in (LAUNCH, EXIT, FIXED)] == list(range(len(plain)))
    kinds = [s.kind for s in steps]
    assert kinds[:3] == ["stage-in", LAUNCH, FIXED] and kinds[-2:] == [EXIT, "stage-out"]
    assert all(kinds[i + 1] in ("read", "write") for i, k in enumerate(kinds) if k == FIXED)
    assert job_steps(job, "hps", 1e9, 8e9, Overheads()).steps == plain  # zero costs: the plain model


def test_overheads_are_checked_like_any_duration():
    from iolab.errors import SpecError

    with pytest.raises(SpecError, match=r"platform.overheads.launch"):
        spec(launch=-1)
    assert spec(launch="2m").platform.overheads.launch == 120
    with pytest.raises(SpecError, match="overflow"):
        spec(launch=1.7e308, exit=1.7e308)


@pytest.mark.parametrize("tier", ["lps", "hps"])
def test_a_job_without_io_is_one_compute_step_unless_it_pays_a_launch_or_an_exit(tier):
    from iolab.specs.batch import Overheads

    job = spec(JOBS[1:]).workload.jobs[0]  # b: no input, output or data
    for o in (None, Overheads(), Overheads(io_phase=0.5)):  # io_phase: no read or write to put it before
        js = job_steps(job, tier, 1e9, 8e9, o)
        assert [(s.kind, s.amount, s.link) for s in js.steps] == [("compute", 50.0, "")]
        assert (js.compute_time, js.io_bytes, js.checkpoints) == (50.0, 0.0, 0)
    steps = job_steps(job, tier, 1e9, 8e9, Overheads(launch=1, exit=2)).steps
    assert [(s.kind, s.amount) for s in steps] == [(LAUNCH, 1.0), ("compute", 50.0), (EXIT, 2.0)]
