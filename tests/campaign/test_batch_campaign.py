"""A campaign over a batch spec: its seeds and schedulers expand to batch runs, which the simulator's
batch runner runs (the table of runners, iolab/runners.py) and the results table records."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from iolab.campaign import load_runs, run_campaign
from iolab.campaign.results import read_h5
from iolab.campaign.summary import relative_makespan
from iolab.cli import cli
from iolab.errors import SpecError
from iolab.specs.load import load_spec
from iolab.trace import read_trace

BASE = {
    "kind": "batch", "name": "four-jobs",
    "platform": {"nodes": 4, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                 "hps": {"rate": "15 GB/s", "capacity": "150 GB"}, "stage_rate": "5 GB/s"},
    "scheduler": "fcfs",
    "workload": [{"id": j, "submit": s, "nodes": n, "walltime": 9000, "runtime": r, "input": "10GB",
                  "output": "10GB", "storage": "30GB"}
                 for j, s, n, r in (("a", 0, 3, 4000), ("b", 10, 2, 8000), ("c", 20, 1, 2000), ("d", 30, 2, 1000))],
}


def write_campaign(tmp_path, **axes) -> str:
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(BASE))
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump({"kind": "campaign", "name": "batch-small", "base": "base.yaml", "axes": axes}))
    return str(path)


def direct(tmp_path, scheduler: str, seed: int):
    """The base spec written with this scheduler and seed, simulated by hand (no campaign code)."""
    spec = {**BASE, "scheduler": scheduler, "seed": seed}
    path = tmp_path / f"direct-{scheduler}-{seed}.json"
    path.write_text(json.dumps(spec))
    from iolab.sim.batch.run import simulate_batch

    return simulate_batch(load_spec(path))


def test_a_batch_campaign_runs_every_seed_and_scheduler_in_the_simulator(tmp_path):
    path = write_campaign(tmp_path, schedulers=["fcfs", "sas"], seeds=[1, 2])
    _, runs = load_runs(path)
    assert [(r.params["policy"], r.params["seed"]) for r in runs] == [("fcfs", 1), ("sas", 1), ("fcfs", 2),
                                                                       ("sas", 2)]
    assert {r.experiment["kind"] for r in runs} == {"batch"}
    out = tmp_path / "out"
    s = run_campaign(path, out, traces=tmp_path / "traces", progress=False, use_ray=False)
    assert (s.total, s.executed, s.ok, s.failed) == (4, 4, 4, 0)
    res = read_h5(out / "results.h5")
    assert res["status"].tolist() == ["ok"] * 4
    tiers = set()
    for i, r in enumerate(runs):
        ref = direct(tmp_path, r.params["policy"], r.params["seed"])
        j = ref.jobs
        # the reference metrics, from the jobs table by hand
        assert res["makespan"][i] == pytest.approx(float(j["end"].max() - j["release"].min()))
        assert res["mean_turnaround"][i] == pytest.approx(float(np.mean(j["end"] - j["release"])))
        assert res["jobs"][i] == 4 and res["hps_jobs"][i] == int(np.sum(j["tier"] == "hps"))
        assert np.isnan(res["max_stretch"][i])  # an I/O metric: not a batch run's
        kept = read_trace(res["trace"][i])
        assert kept.attrs["runtime"] == "sim-batch" and kept.attrs["scheduler"] == r.params["policy"]
        assert kept.jobs["start"].tolist() == j["start"].tolist()
        tiers.add(tuple(j["tier"]))
    assert len(tiers) == 2  # fcfs keeps every job on LPS, sas puts some on HPS: two different runs
    # the runs of one seed are one instance (their missing I/O parameters match): the best is 1
    rel = relative_makespan(res)
    for seed in (1, 2):
        mine = [i for i, r in enumerate(runs) if r.params["seed"] == seed]
        best = min(res["makespan"][i] for i in mine)
        assert [rel[i] for i in mine] == pytest.approx([res["makespan"][i] / best for i in mine])


def test_a_batch_campaign_without_axes_runs_the_base_and_the_dry_run_lists_it(tmp_path):
    path = write_campaign(tmp_path)
    r = CliRunner().invoke(cli, ["sweep", path, "--dry-run"])
    assert r.exit_code == 0, r.output
    assert "1 runs" in r.output and "scheduler=fcfs" in r.output


@pytest.mark.parametrize("axes, field", [
    ({"policies": ["fifo"]}, "axes.policies"),
    ({"mappings": ["first-fit"]}, "axes.mappings"),
    ({"platform": {"io_nodes": [2]}}, "axes.platform"),
    ({"schedulers": ["fifo"]}, "axes.schedulers"),
])
def test_io_axes_on_a_batch_base_are_refused_naming_the_field(tmp_path, axes, field):
    path = write_campaign(tmp_path, **axes)
    with pytest.raises(SpecError) as err:
        load_runs(path)
    assert any(p.startswith(field) for p, _ in err.value.problems), err.value.problems


def test_schedulers_on_an_io_base_are_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"kind": "campaign", "name": "io", "axes": {"schedulers": ["easy"]}, "base": {
        "platform": {"io_nodes": 1, "nodes_per_io_node": 4, "bandwidth": 1.0},
        "apps": [{"id": "A", "nodes": 2, "iterations": 2, "compute": 1.0, "io_volume": 1.0}]}}))
    with pytest.raises(SpecError) as err:
        load_runs(path)
    assert [p for p, _ in err.value.problems] == ["axes.schedulers"]


@pytest.mark.mpi
@pytest.mark.ray
@pytest.mark.long
def test_a_batch_campaign_runs_for_real_under_the_emulate_runtime(tmp_path):
    """The same campaign machinery with ``runtime: emulate``: each batch run is a real run (mpiexec'd
    jobs, tier directories), its trace kept, its metrics those of the batch level; and it schedules as the
    simulator does (one seed, one scheduler: the jobs' start order is the simulated one)."""
    from small_runs import tiny_batch

    (tmp_path / "base.yaml").write_text(yaml.safe_dump(tiny_batch("tiny")))
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump({"kind": "campaign", "name": "batch-real", "base": "base.yaml",
                                    "runtime": "emulate", "axes": {"schedulers": ["sas"]}}))
    out, traces = tmp_path / "out", tmp_path / "traces"
    s = run_campaign(path, out, traces=traces, progress=False, use_ray=False)
    assert (s.total, s.ok, s.failed) == (1, 1, 0)
    res = read_h5(out / "results.h5")
    [h5] = sorted(traces.glob("*.h5"))
    trace = read_trace(h5)
    assert trace.attrs["complete"] and set(trace.jobs["status"].tolist()) == {"ok"}
    assert sorted(trace.jobs["id"].tolist()) == ["cpu", "io"]
    # real seconds passed: the jobs ran as processes (the trace's jobs end after their runtimes)
    ends = dict(zip(trace.jobs["id"].tolist(), trace.jobs["end"].tolist()))
    assert ends["io"] >= 200 and ends["cpu"] >= 150
    assert res["jobs"].tolist() == [2] and np.isfinite(res["makespan"]).all()
    assert float(res["makespan"][0]) == pytest.approx(max(ends.values()) - 0.0, rel=1e-6)
