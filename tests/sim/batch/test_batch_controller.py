"""Suspension in the batch simulator and dheenadayalan2017's load controller on simulated time."""

from __future__ import annotations

import pytest

from iolab.middleware.policies.batch.checker import BatchChecker
from iolab.middleware.policies.batch.kernel import DONE, SUSPENDED, BatchKernel
from iolab.sim.batch.load_controller import ContentionLink, VolumeModel
from iolab.sim.batch.engine import BatchEngine
from iolab.sim.batch.run import run_batch
from iolab.workloads import load_workload
from iolab.specs import parse_spec

MB, GB = 1e6, 1e9


def batch(jobs, controller=None, scheduler="fcfs", lps="100MB/s"):
    d = {"kind": "batch", "scheduler": scheduler, "workload": {"source": "inline", "jobs": jobs},
         "platform": {"nodes": 12, "memory_per_node": "1GB", "lps": {"rate": lps},
                      "hps": {"rate": "1GB/s", "capacity": "1TB"}, "stage_rate": "1GB/s"}}
    if controller is not None:
        d["controller"] = controller
    return parse_spec(d)


class Script:
    """A scripted controller: suspends/resumes jobs at given instants (the engine's controller protocol),
    through the batch driver."""

    def __init__(self, plan):
        self.plan = plan  # [(t, "suspend"|"resume", job)]

    def start(self, engine):
        for i, (t, _, _) in enumerate(self.plan):
            engine.push_control(t, i)

    def event(self, engine, i, t):
        _, kind, job = self.plan[i]
        getattr(engine.driver, kind)(engine.kernel.by_id[job], t)


def run_scripted(spec, plan):
    kernel = BatchKernel.from_spec(spec, load_workload(spec), observer=BatchChecker())
    engine = BatchEngine.around(kernel, memory_per_node=spec.platform.memory_per_node)
    engine.controller = Script(plan)
    rec = engine.run()
    return {s.id: s for s in rec.jobs}


def test_a_suspended_compute_step_ends_later_by_the_suspension():
    spec = batch([{"id": "a", "submit": 0, "nodes": 1, "walltime": 5000, "runtime": 1000}])
    jobs = run_scripted(spec, [(100.0, "suspend", "a"), (150.0, "resume", "a")])
    a = jobs["a"]
    assert a.state == DONE and a.end == pytest.approx(1050.0)
    assert a.suspensions == ((100.0, 150.0),)


def test_a_suspended_stream_leaves_its_link_to_the_others():
    # two 100 MB writes share 100 MB/s: 50 MB/s each; b stops at 0.5 s (25 MB done), a has the link:
    # 75 MB at 100 MB/s -> a ends at 1.25 s; b resumes at 2 s with 75 MB left -> ends at 2.75 s
    jobs = [{"id": j, "submit": 0, "nodes": 1, "walltime": 100, "runtime": 1, "output": "100MB"} for j in "ab"]
    out = run_scripted(batch(jobs), [(0.5, "suspend", "b"), (2.0, "resume", "b")])
    assert out["a"].end == pytest.approx(1.25)
    assert out["b"].end == pytest.approx(2.75)


def test_kernel_resume_moves_the_expected_end():
    spec = batch([{"id": "a", "submit": 0, "nodes": 1, "walltime": 5000, "runtime": 1000}])
    out = run_scripted(spec, [(10.0, "suspend", "a"), (40.0, "resume", "a")])
    assert out["a"].expected_end == pytest.approx(5000 + 30)


def test_contention_link_without_loss_is_the_fair_share_link():
    link = ContentionLink(VolumeModel(rate=100.0, gamma=0.0))
    link.add("x", 100.0, 0.0)
    link.add("y", 50.0, 0.0)
    assert link.next_completion() == pytest.approx(1.0)
    lossy = ContentionLink(VolumeModel(rate=100.0, gamma=0.5, knee=1))  # 2 streams: 100 / 1.5 in total
    lossy.add("x", 100.0, 0.0)
    lossy.add("y", 50.0, 0.0)
    assert lossy.next_completion() == pytest.approx(50.0 / (100.0 / 1.5 / 2))
    assert VolumeModel(rate=1e8, gamma=0.5, knee=1).response(2, 1e9) == pytest.approx(60.0)  # 3 streams


def ds1(controller_on, scheduler="fcfs"):
    """DS1's shape (2 CPU-bound + 4 I/O-bound jobs) on a volume that loses throughput past one stream."""
    jobs = [{"id": f"io{i + 1}", "submit": i * 10, "nodes": 2, "walltime": 20000, "runtime": 2000 + 500 * i,
             "data": "150GB"} for i in range(4)]
    jobs += [{"id": f"cpu{i + 1}", "submit": 5 + i * 10, "nodes": 2, "walltime": 20000, "runtime": 3000}
             for i in range(2)]
    return batch(jobs, {"enabled": controller_on, "volumes": ["lps"], "omega": "1GB",
                        "model": {"gamma": 0.5, "knee": 1}}, scheduler=scheduler)


@pytest.mark.parametrize("scheduler", ["fcfs", "easy"])
def test_the_controller_time_shares_the_io_jobs_of_ds1(scheduler):
    off = run_batch(ds1(False, scheduler), strict=True)
    on = run_batch(ds1(True, scheduler), strict=True)
    assert off.controller is None and not any(s.suspensions for s in off.jobs)
    acts = on.controller.actions
    suspended = {j for _, j, kind, _, _ in acts if kind == "suspend"}
    assert suspended and suspended <= {"io2", "io3", "io4"}  # never the oldest I/O job, never a CPU job
    # every suspension was resumed and every job finished
    assert all(s.state == DONE and s.status == "ok" for s in on.jobs)
    assert sum(kind == "suspend" for _, _, kind, _, _ in acts) == sum(kind == "resume" for _, _, kind, _, _ in acts)
    # a suspended job makes no progress: none of its steps ends inside one of its suspensions
    for s in on.jobs:
        for a, b in s.suspensions:
            assert b > a
            assert not [p for p in on.phases if p[0] == s.id and a < p[4] < b]
    # CPU jobs are untouched; the I/O jobs gain (the paper's Fig. 2 shape)
    by_off, by_on = {s.id: s for s in off.jobs}, {s.id: s for s in on.jobs}
    for j in ("cpu1", "cpu2"):
        assert by_on[j].end - by_on[j].start == pytest.approx(by_off[j].end - by_off[j].start)
    total = lambda jobs: sum(s.end - s.start for s in jobs)
    assert total(on.jobs) < total(off.jobs)
    # the window only saw loaded samples above r_threshold when it suspended
    for t, job, kind, vol, _ in acts:
        if kind == "suspend":
            recent = [r for (ts, v, r, *_) in on.controller.samples if v == vol and t - 180 < ts <= t]
            assert sum(r >= 60 for r in recent) / 18 >= 0.75


def test_no_state_is_left_suspended():
    on = run_batch(ds1(True), strict=True)
    assert not [s for s in on.jobs if s.state == SUSPENDED]


def test_the_simulated_trace_holds_the_suspensions():
    from iolab.sim.batch.run import simulate_batch

    tr = simulate_batch(ds1(True), strict=True)
    rows = [(r["job"], r["suspend"], r["resume"]) for r in tr.actions.rows()]
    rec = run_batch(ds1(True))
    assert rows == [(s.id, a, b) for s in rec.jobs for a, b in s.suspensions] and rows
    assert not list(simulate_batch(ds1(False)).actions.rows())
    samples = list(tr.samples.rows())
    assert samples and {s["volume"] for s in samples} == {"lps"}
    # the response model: the benchmark unit is one more stream on the lossy link
    for s in samples:
        k = s["writers"]
        assert s["response"] == pytest.approx(1e9 * (k + 1) / (1e8 / (1 + 0.5 * max(0, k))))


SPREAD = [0.6, 0.9, 1.0, 1.1, 1.4, 5.0]  # a long tail: the top fifth of the samples reaches 1.4-5 x the model


def ds1_tail(seed=0, **controller):
    """DS1 with a tail on the volume's response (``model.spread``) and the spec's seed."""
    spec = ds1(True)
    d = spec.model_dump(mode="json")
    d["seed"] = seed
    d["controller"]["model"]["spread"] = SPREAD
    d["controller"].update(controller)
    return parse_spec(d)


def _model_response(spec, k):
    m = spec.controller.model
    return VolumeModel(spec.platform.lps.rate, m.gamma, m.knee, m.r0, m.probe_rate).response(k, spec.controller.p)


def test_a_spread_draws_the_tail_from_the_spec_seed():
    import numpy as np

    spec = ds1_tail()
    a = run_batch(spec, strict=True).controller.samples
    assert a == run_batch(ds1_tail(), strict=True).controller.samples  # the same seed: the same run
    assert a != run_batch(ds1_tail(seed=1), strict=True).controller.samples
    # every response over the model's response for its stream count: distributed as the spread says
    ratios = np.sort([r / _model_response(spec, k) for _, _, r, k, *_ in a])
    assert len(ratios) > 1000 and ratios[0] >= SPREAD[0] - 1e-9 and ratios[-1] <= SPREAD[-1] + 1e-9
    ecdf = np.arange(1, len(ratios) + 1) / len(ratios)
    cdf = np.interp(ratios, SPREAD, np.linspace(0, 1, len(SPREAD)))  # the spread's piecewise-linear CDF
    assert np.max(np.abs(ecdf - cdf)) < 0.05  # Kolmogorov-Smirnov distance
    # measured is what fed the window: the predicted column is the response
    assert all(row[7] == row[2] for row in a)


def test_the_forest_feeds_the_window_its_prediction_after_the_warmup():
    import numpy as np

    from iolab.middleware.policies.controller import ControllerParams
    from iolab.middleware.policies.controller.window import ResponseWindow
    from iolab.sim.batch.run import simulate_batch

    W = 400  # samples: the warm-up sees every stream count often enough to learn it
    spec = ds1_tail(prediction="forest", warmup=W)
    tr = simulate_batch(spec, strict=True)
    s = tr.samples.columns
    r, fed, k = s["response"], s["predicted"], s["writers"]
    stats = tr.attrs["prediction"]
    assert stats["prediction"] == "forest" and stats["online"] and stats["trained_at"] == [W]
    assert "writers" in stats["features"] and stats["fed_predicted"] == len(r) - W
    assert list(fed[:W]) == list(r[:W])  # the warm-up feeds the measurement
    # after it: one value per stream count, the warm-up's mean response at that count (the reference: a
    # forest whose leaves split the counts averages bootstrap means, ~ the sample mean)
    by_k = {}
    for kk, v in zip(k[W:], fed[W:]):
        by_k.setdefault(int(kk), set()).add(float(v))
    seen = {kk: int(sum(k[:W] == kk)) for kk in by_k}
    for kk, values in by_k.items():
        assert len(values) == 1  # the memo: a stream count's counters (writers, rate, in flight) repeat exactly
        if seen[kk] < 20:
            continue  # too few warm-up samples to learn this count
        for v in values:
            assert v == pytest.approx(float(np.mean(r[:W][k[:W] == kk])), rel=0.1)
    # the window was fed the prediction: its score, recomputed from the predicted column, is the trace's
    c = spec.controller
    w = ResponseWindow(ControllerParams.from_spec(c).window, c.alpha, c.r_threshold)
    for v, score in zip(fed, s["score"]):
        w.push(float(v))
        assert w.score() == pytest.approx(score)
    assert any(a != b for a, b in zip(fed[W:], r[W:]))
