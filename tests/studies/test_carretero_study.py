"""The carretero2020 study: its shortcut for several I/O nodes, its outputs."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.metrics import io_metrics
from iolab.specs import load_spec
from iolab.studies.carretero import STRATEGIES, run_workload
from iolab.sim.io.run import simulate
from iolab.workloads.carretero import CarreteroParams, generate, power_of_two_law

SMALL = CarreteroParams(nodes_per_io_node=64, apps=(12, 20), iterations=(5, 15))


def test_per_pack_shortcut_equals_a_full_simulation_on_several_io_nodes():
    rows = {r["strategy"]: r for r in run_workload(3.0, 0, 5, SMALL)}
    for name, mapping in (("s1", {"kind": "make-pack", "sensibility": 1.0}), ("first-fit", {"kind": "first-fit"})):
        for R in (1, 3, 5):
            spec = generate(3.0, 5, SMALL, io_nodes=R).model_copy()
            spec = spec.model_validate({**spec.model_dump(), "mapping": mapping})
            full = io_metrics(simulate(spec))
            assert math.isclose(full.makespan, rows[name][f"makespan_R{R}"], rel_tol=1e-12), (name, R)
            assert full.packs == rows[name]["packs"]


def test_generated_workload_follows_the_protocol():
    spec = generate(2.0, 42, SMALL)
    assert 12 <= len(spec.apps) <= 20
    for a in spec.apps:
        assert 5 <= a.iterations <= 15 and 10 <= a.compute <= 100
        assert a.nodes & (a.nodes - 1) == 0 and a.nodes <= 64  # a power of two
        assert 0.01 - 1e-9 <= a.io_volume / a.compute <= 2.0 + 1e-9
    law = power_of_two_law(20.0, 6)
    assert abs(sum(p * 2**j for j, p in enumerate(law)) - 20.0) < 1e-6
    assert abs(sum(law) - 1) < 1e-12


def test_workload_generate_command_writes_a_loadable_spec(tmp_path):
    out = tmp_path / "w.yaml"
    res = CliRunner().invoke(cli, ["workload", "generate", "carretero", "--alpha", "1.5", "--seed", "9",
                                   "--nodes-per-io-node", "256", "-o", str(out)])
    assert res.exit_code == 0, res.output
    spec = load_spec(out)
    again = generate(1.5, 9, CarreteroParams(nodes_per_io_node=256))
    assert [a.model_dump() for a in spec.apps] == [a.model_dump() for a in again.apps]
    bad = CliRunner().invoke(cli, ["workload", "generate", "carretero", "--alpha", "-1", "-o", str(out)])
    assert bad.exit_code != 0 and "--alpha" in bad.output


def test_quick_study_writes_results_and_figures(tmp_path):
    res = CliRunner().invoke(cli, ["study", "carretero", "--quick", "--no-ray", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    with open(tmp_path / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == summary["workloads"] * len(STRATEGIES) == 8 * len(STRATEGIES)
    s1 = summary["strategies"]["s1"]
    # more I/O nodes can only help the smaller packs of Make-Pack relative to First-Fit
    assert s1["makespan_R5"] <= s1["makespan_R3"] <= s1["makespan_R1"]
    assert s1["packs"] >= 1.0  # S=1 adds an I/O constraint: never fewer packs
    assert s1["stretch"] < 1.0  # and less contention inside packs
    for fig in ("fig10.png", "fig11.png", "fig12.png", "fig14.png", "fig15.png"):
        assert (tmp_path / fig).stat().st_size > 10_000
    assert "paper (Sensibility=1, Fig. 15)" in res.output


def test_lackner_quick_study(tmp_path):
    res = CliRunner().invoke(cli, ["study", "lackner", "--quick", "--no-ray", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    groups = summary["groups"]
    rnd0 = [g for g in groups if g["scheduler"] == "random" and g["p"] == 0.0]
    rnd1 = [g for g in groups if g["scheduler"] == "random" and g["p"] == 1.0]
    # p = 0 never uses HPS; p = 1 uses it for every job that fits
    assert all(g["hps_utilisation"] == 0.0 for g in rnd0)
    assert all(g["hps_utilisation"] > 0.0 for g in rnd1)
    assert all(0 < g["node_utilisation"] <= 1 for g in groups)
    with open(tmp_path / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["figure"] for r in rows} == {"3", "4"}
    assert (tmp_path / "fig3.png").stat().st_size > 10_000 and (tmp_path / "fig4.png").stat().st_size > 10_000
    # the output says what this run shows against the paper's claim, from its own headline
    head = summary["headline"]
    worse = [c for c, h in head.items() if h["sas_makespan"] > h["best_random_makespan"]
             or h["sas_turnaround"] > h["best_random_turnaround"]]
    line = next(ln for ln in res.output.splitlines() if ln.startswith("this run: "))
    if worse:
        assert f"NOT reproduced in {len(worse)} of {len(head)} cases" in line and "cannot show" in line
        assert all(c in line for c in worse)
    else:
        assert line.startswith("this run: reproduced")


def test_lackner_verdict_says_why_a_small_size_cannot_reproduce():
    from iolab.studies.lackner import QUICK, LacknerSize, verdict

    worse = {"2048GB_k5": {"sas_makespan": 3.0, "best_random_makespan": 2.0, "sas_turnaround": 1.0,
                           "best_random_turnaround": 2.0}}
    better = {"2048GB_k5": {"sas_makespan": 1.0, "best_random_makespan": 2.0, "sas_turnaround": 1.0,
                            "best_random_turnaround": 2.0}}
    assert verdict(better, QUICK).startswith("reproduced")
    quick = verdict(worse, QUICK)
    assert quick.startswith("NOT reproduced in 1 of 1") and "60 jobs per workload (the paper: 500)" in quick
    full = verdict(worse, LacknerSize(repetitions=10))  # the paper's size: no excuse offered
    assert full.startswith("NOT reproduced") and "cannot show" not in full


def test_lackner_sensitivity_moves_one_constant_and_compares_sas_with_every_p(tmp_path):
    from iolab.studies import lackner as L

    res = CliRunner().invoke(cli, ["study", "lackner", "--sensitivity", "--quick", "--no-ray", "--out", str(tmp_path),
                                   "--json"])
    assert res.exit_code == 0, res.output
    table = {r["setting"]: r for r in json.loads(res.stdout)["sensitivity"]}
    assert set(table) == {"baseline", "io_fraction=0.2"}
    with open(tmp_path / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 2 * 2  # 2 settings x 2 workloads x (SAS + p = 0.5)
    for setting, r in table.items():  # the gap recomputed from the runs
        mine = [x for x in rows if x["setting"] == setting]
        sas = np.mean([float(x["makespan"]) for x in mine if x["scheduler"] == "sas"])
        rnd = np.mean([float(x["makespan"]) for x in mine if x["scheduler"] == "random"])
        assert r["gap_makespan"] == pytest.approx(sas / rnd - 1)
    # the setting reaches the workload: more I/O, more bytes on HPS under p = 0.5
    io = {s: sum(float(x["hps_used"]) for x in rows if x["setting"] == s and x["scheduler"] == "random")
          for s in table}
    assert io["io_fraction=0.2"] > io["baseline"]
    assert (tmp_path / "sensitivity.png").stat().st_size > 10_000
    # Figs. 3-4's runs keep their arguments (and so their run ids) without a setting
    assert all("setting" not in r for r in L.campaign_runs(L.params_of(L.QUICK)))
    assert "sensitivity" not in L.params_of(L.QUICK)
    with pytest.raises(ValueError, match="NAME=VALUE"):
        L.setting_of("theta=1")


def test_a_quick_study_runs_in_this_process_unless_workers_are_asked_for(tmp_path):
    """A quick study is a few seconds of runs: it starts no Ray (whose start alone took ~6 s) unless
    --workers or --address asks for one."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "iolab", "study", "lackner", "--quick", "--no-figures", "--out",
                        str(tmp_path / "a")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "16 to run in this process" in r.stderr and "Ray" not in r.stderr, r.stderr
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["runs"] == 16
