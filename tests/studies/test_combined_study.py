"""``iolab study combined``: every lever combination on one combined machine (simulated), the lever table
against a reference built by hand, a lever's direction on a crafted case, and the command line's bad input."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace
from itertools import product
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from iolab.campaign.study import expand_study, parse_study
from iolab.cli import cli
from iolab.sim.batch.run import simulate_batch
from iolab.specs import parse_spec
from iolab.specs.load import load_spec, read_document
from iolab.studies import combined
from iolab.studies.as_campaign import campaign_of

REPO = Path(__file__).resolve().parents[2]


def test_quick_study_runs_every_lever_combination(tmp_path):
    r = CliRunner().invoke(cli, ["study", "combined", "--quick", "--no-ray", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    size = combined.QUICK
    with open(tmp_path / "combined.csv", newline="") as f:
        table = list(csv.DictReader(f))
    combos = {(t["policy"], t["tier"], t["allocation"], t["controller"]) for t in table}
    expected = {(p, t, a, str(c)) for p, t, a, c in product(size.policies, size.tiers, size.allocations,
                                                            size.controllers)}
    assert len(table) == len(expected) == 48 and combos == expected  # one row per combination, all levers
    for t in table:
        for m in combined.METRICS:
            assert math.isfinite(float(t[m])), (t["combination"], m)
        assert float(t["makespan"]) > 0 and float(t["mean_bsld"]) >= 1.0
        assert 0 < float(t["node_utilisation"]) <= 1 and 0 <= float(t["hps_utilisation"]) <= 1
        if t["tier"] == "lps":  # EASY puts every job on LPS: nothing on HPS
            assert float(t["hps_jobs"]) == 0 and float(t["hps_utilisation"]) == 0
        else:
            assert float(t["hps_jobs"]) > 0 and float(t["hps_utilisation"]) > 0
        # the controller lever acts: off, nothing is suspended; on, some I/O job is (r_threshold 20 s: LPS
        # with 3 streams or more counts as loaded) under every policy, tier and allocation
        assert (float(t["suspensions"]) > 0) == (t["controller"] == "True"), t["combination"]
    with open(tmp_path / "runs.csv", newline="") as f:
        runs = list(csv.DictReader(f))
    assert len(runs) == 48 * len(size.seeds)
    assert all(int(x["finished"]) == int(x["jobs"]) == size.jobs for x in runs)  # every job ran to its end
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["combinations"] == 48 and (tmp_path / "combined.png").stat().st_size > 0
    assert "fifo/lps/lowest/no-ctl" in r.output and "tier" in r.output
    # the table's means are the runs' (one seed: equal), and its changes are against the baseline row
    base = next(t for t in table if t["combination"] == "fifo/lps/lowest/no-ctl")
    for t in table:
        assert float(t["makespan_vs_baseline"]) == pytest.approx(float(t["makespan"]) / float(base["makespan"]) - 1)
        assert float(t["node_utilisation_vs_baseline"]) == pytest.approx(
            float(t["node_utilisation"]) - float(base["node_utilisation"]))


def test_lever_table_against_a_product_of_factors():
    """A metric that is a product of one factor per lever value: each setting's effect, alone and together,
    is its factor - 1 exactly (and the all-levers row the product of the factors - 1)."""
    size = combined.CombinedSize(policies=("fifo", "shared", "stretch"))
    f = {"fifo": 1.0, "shared": 1.3, "stretch": 0.9, "lps": 1.0, "sas": 0.5, "lowest": 1.0, "io-aware": 0.8,
         False: 1.0, True: 1.1}
    rows = []
    for combo in product(size.policies, size.tiers, size.allocations, size.controllers):
        v = 100.0 * np.prod([f[x] for x in combo])
        for seed in size.seeds:  # the same value for every seed: the mean is it
            rows.append({**dict(zip(combined.LEVERS, combo)), "seed": seed, "suspensions": 0, "hps_jobs": 0,
                         **{m: v for m in combined.METRICS if m not in combined.SHARES},
                         "hps_utilisation": 0.5, "node_utilisation": 0.5})
    table = combined.combination_table(rows, size)
    assert len(table) == 24
    levers = {(r["lever"], r["setting"]): r for r in combined.lever_table(table, size)}
    expect = {("policy", "shared"): 0.3, ("policy", "stretch"): -0.1, ("tier", "sas"): -0.5,
              ("allocation", "io-aware"): -0.2, ("controller", "on"): 0.1,
              ("all", "shared/sas/io-aware/ctl"): 1.3 * 0.5 * 0.8 * 1.1 - 1,
              ("all", "stretch/sas/io-aware/ctl"): 0.9 * 0.5 * 0.8 * 1.1 - 1}
    assert set(levers) == set(expect)
    for key, e in expect.items():
        for m in ("makespan", "mean_turnaround", "mean_bsld", "total_io_time"):
            assert levers[key][f"{m}_alone"] == pytest.approx(e), (key, m)
            assert levers[key][f"{m}_together"] == pytest.approx(e), (key, m)
        assert levers[key]["node_utilisation_alone"] == 0.0  # a utilisation: a difference, not a ratio


def test_seed_spread_of_a_lever_is_the_range_of_its_per_seed_effects():
    """io-aware multiplies the makespan by 0.9 on one workload and by 1.2 on the other: alone its mean
    effect is (0.9 x 100 + 1.2 x 200) / 300 - 1 = +10 %, its range over the seeds -10 % .. +20 %."""
    size = combined.CombinedSize(seeds=(1, 2))
    rows = []
    for combo in product(size.policies, size.tiers, size.allocations, size.controllers):
        for seed, scale, f in ((1, 100.0, 0.9), (2, 200.0, 1.2)):
            v = scale * (f if combo[2] == "io-aware" else 1.0)
            rows.append({**dict(zip(combined.LEVERS, combo)), "seed": seed, "suspensions": 0, "hps_jobs": 0,
                         **{m: v for m in combined.METRICS}})
    levers = combined.with_seed_spread(combined.lever_table(combined.combination_table(rows, size), size), rows, size)
    io_aware = next(r for r in levers if r["lever"] == "allocation")
    assert io_aware["makespan_alone"] == pytest.approx(0.1)
    assert (io_aware["makespan_alone_min"], io_aware["makespan_alone_max"]) == (pytest.approx(-0.1), pytest.approx(0.2))
    sas = next(r for r in levers if r["lever"] == "tier")
    assert sas["makespan_alone_min"] == sas["makespan_alone_max"] == 0.0


def _two_heavy_jobs(allocation: str, policy: str = "fifo"):
    """Two 2-node jobs that read and write 40 GB each, submitted together on 8 nodes behind 2 I/O nodes of
    1 GB/s (4 nodes each), LPS far faster than an I/O node: under ``lowest`` both land on I/O node 0."""
    size = combined.CombinedSize(nodes=8, io_nodes=2, lps_rate=20e9, lps_law="none")
    jobs = [{"id": j, "submit": 0, "nodes": 2, "walltime": 1000, "runtime": 400, "input": 40e9, "output": 40e9}
            for j in ("a", "b")]
    alloc = allocation if allocation == "lowest" else {"kind": allocation}
    platform = combined.platform_of(size, policy)
    platform["lps"].pop("interference")
    return parse_spec({"kind": "batch", "platform": platform, "scheduler": "fcfs", "allocation": alloc,
                       "workload": jobs})


@pytest.mark.parametrize("policy", ["fifo", "shared"])
def test_io_aware_allocation_spreads_two_heavy_jobs_and_their_io_time_drops(policy):
    io_time, io_nodes = {}, {}
    for alloc in ("lowest", "io-aware"):
        spec = _two_heavy_jobs(alloc, policy)
        tr = simulate_batch(spec, strict=True)
        ids = [[int(x) for x in _ranges(s)] for s in tr.jobs["node_ids"]]
        io_nodes[alloc] = [{spec.platform.io_node_of(i) for i in node_set} for node_set in ids]
        io_time[alloc] = float(np.sum(tr.jobs["io_time"]))
    assert io_nodes["lowest"] == [{0}, {0}]  # both behind I/O node 0
    assert sorted(map(sorted, io_nodes["io-aware"])) == [[0], [1]]  # one each
    assert io_time["io-aware"] < io_time["lowest"]


def _ranges(text: str) -> list[int]:
    out: list[int] = []
    for part in str(text).split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def test_the_example_campaign_is_the_default_study():
    """``iolab sweep examples/campaigns/combined.yaml`` runs the runs (same ids) of ``iolab study combined``."""
    path = REPO / "examples" / "campaigns" / "combined.yaml"
    from_file = expand_study(parse_study(read_document(path), str(path)), str(path))
    default = expand_study(campaign_of("combined", combined.params_of(combined.CombinedSize())))
    assert [r.run_id for r in from_file] == [r.run_id for r in default]
    assert len(default) == 48 * len(combined.CombinedSize().seeds)


@pytest.mark.parametrize("args, option", [
    (["--workloads", "0"], "--workloads"),
    (["--jobs-per-workload", "1"], "--jobs-per-workload"),
    (["--policy", "fifo"], "--policy"),
    (["--workers", "0"], "--workers"),
])
def test_bad_options_exit_2_naming_the_option(tmp_path, args, option):
    r = CliRunner().invoke(cli, ["study", "combined", "--quick", "--out", str(tmp_path / "out"), *args])
    assert r.exit_code == 2 and option in r.output, r.output
    assert not (tmp_path / "out").exists()  # nothing started, nothing written


def test_bad_study_params_are_refused_naming_them():
    with pytest.raises(ValueError, match="unknown size field.*'policy'"):
        combined.size_of({"policy": ["fifo"]})
    with pytest.raises(ValueError, match="tiers"):
        combined.size_of({"tiers": ["lps", "hps"]})
    with pytest.raises(ValueError, match="seeds"):
        combined.size_of({"seeds": []})
    # a value the spec refuses: named by its parameter, then the spec's field and reason
    with pytest.raises(ValueError, match=r"^policies: platform\.io_node\.policy: .*'nonsense'"):
        combined.campaign_runs({"policies": ["fifo", "nonsense"]})
    with pytest.raises(ValueError, match=r"^jobs: workload\.jobs: "):
        combined.campaign_runs({"jobs": 0})
    with pytest.raises(ValueError, match=r"^lps_law: platform\.lps\.interference"):
        combined.campaign_runs({"lps_law": "fast"})
    with pytest.raises(ValueError, match=r"^tbf_share: platform\.io_node\.policy\.default_rate: .*greater than 0"):
        combined.campaign_runs({"tbf_share": -0.5})


def test_the_arbitration_lever_takes_the_sharing_policies():
    from iolab.middleware.policies.io_guard import io_policy

    size = combined.CombinedSize(tbf_share=0.25)
    spec = combined.spec_of(size, "tbf", "lps", "lowest", False, 1)
    tbf = io_policy(spec.platform.io_node.policy, rate=spec.platform.io_node.rate)
    assert tbf.default_rate == 0.25 * size.io_node_rate and tbf.rules == ()
    for name in ("job-fair", "size-fair"):
        assert combined.spec_of(size, name, "lps", "lowest", False, 1).platform.io_node.policy == name
    # a sharing policy's caps are not shared's work-conserving split: the runs differ
    small = replace(size, jobs=30)
    runs = {p: combined.run_one(small, p, "sas", "lowest", False, 1) for p in ("shared", "job-fair", "tbf")}
    assert len({round(r["total_io_time"], 3) for r in runs.values()}) == 3


def test_a_bad_campaign_exits_2_naming_the_parameter(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("kind: campaign\nname: c\nstudy: combined\nparams: {io_nodes: 0}\n")
    r = CliRunner().invoke(cli, ["sweep", str(path), "--dry-run"])
    assert r.exit_code == 2 and "params: combined: io_nodes: platform.io_nodes" in r.output, r.output


def test_the_combined_validation_spec_exercises_both_levels():
    """examples/validation/combined.yaml, what its header promises: 8-12 jobs under SAS on 2 I/O nodes with a
    controller and an interference law; simulated in strict mode (both levels' rules), both I/O nodes grant
    parts, jobs on both tiers, the controller samples LPS; every HPS request holds the job's input, output and
    two checkpoints (a real run's quota); under 10 minutes of wall time for real."""
    spec = load_spec(REPO / "examples" / "validation" / "combined.yaml")
    p = spec.platform
    assert 8 <= len(spec.workload.jobs) <= 12 and spec.scheduler.kind == "sas" and p.io_nodes == 2
    assert spec.controller is not None and spec.controller.enabled and p.lps.interference is not None
    tr = simulate_batch(spec, strict=True)
    assert set(int(n) for n in tr.grants["io_node"]) == {0, 1}
    assert set(tr.jobs["tier"]) == {"hps", "lps"}
    assert len(tr.samples["time"]) > 0 and set(tr.samples["volume"]) == {"lps"}
    for j in spec.workload.jobs:
        if j.storage > 0:
            ckpt = j.nodes * p.memory_per_node if j.data > 0 else 0.0
            assert j.storage >= j.input + j.output + 2 * ckpt, j.id
    assert np.nanmax(tr.jobs["end"]) * spec.emulator.time_scale < 600


def test_a_run_through_the_engine_equals_a_bare_simulation(tmp_path):
    """A study row (through the campaign engine, in this process) against the spec simulated directly: the
    makespan, mean turnaround and I/O time from the trace's columns, and the suspensions from its actions."""
    from iolab.studies.as_campaign import Engine

    size = combined.CombinedSize(seeds=(2,), jobs=15, policies=("shared",), tiers=("sas",), allocations=("io-aware",),
                                 controllers=(True,))
    s = combined.run_study(tmp_path, size, figures=False, engine=Engine(use_ray=False, progress=False))
    row = s["table"][0]
    tr = simulate_batch(combined.spec_of(size, "shared", "sas", "io-aware", True, 2), strict=True)
    j = tr.jobs
    assert row["makespan"] == pytest.approx(float(np.max(j["end"]) - np.min(j["release"])), rel=1e-12)
    assert row["mean_turnaround"] == pytest.approx(float(np.mean(j["end"] - j["release"])), rel=1e-12)
    assert row["total_io_time"] == pytest.approx(float(np.sum(j["io_time"])), rel=1e-12)
    assert row["suspensions"] == len(tr.actions["job"])
    assert row["hps_jobs"] == int(np.sum(j["tier"] == "hps"))
