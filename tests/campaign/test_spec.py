"""Campaign files: expansion, stable run ids, and bad files refused with the field's path (no Ray)."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from iolab.campaign import Journal, load_runs
from iolab.cli import cli
from iolab.errors import SpecError
from iolab.specs.io import IO_POLICIES

from campaign_helpers import QUICK, TABLE1, small_campaign


def test_quick_example_expands_to_20_distinct_valid_runs():
    campaign, runs = load_runs(QUICK)
    assert campaign.name == "quick" and len(runs) == 20
    assert len({r.run_id for r in runs}) == 20
    assert [r.index for r in runs] == list(range(20))
    assert {r.params["policy"] for r in runs} == {"fifo", "shortest-io", "longest-remaining", "stretch", "shared"}
    assert {r.params["workload"] for r in runs} == {"carretero-table1", "carretero-a0.5-0", "carretero-a2-0",
                                                   "carretero-a8-0"}
    table1 = [r for r in runs if r.params["workload"] == "carretero-table1"]
    assert all(r.spec().apps[0].iterations == 250 for r in table1)  # the file's apps, relative path resolved
    assert all(r.spec().mapping.kind == "first-fit" for r in runs)  # the base's mapping
    # a second load gives the same runs, ids and resolved experiments
    assert [(r.run_id, r.experiment) for r in load_runs(QUICK)[1]] == [(r.run_id, r.experiment) for r in runs]


def test_policies_all_is_the_8_list_policies_and_shared(tmp_path):
    _, runs = load_runs(small_campaign(tmp_path / "c.yaml", policies="all"))
    assert sorted({r.params["policy"] for r in runs}) == sorted(IO_POLICIES)
    assert len(runs) == 5 * 9


def test_policies_axis_takes_the_sharing_policies_and_tbf_mappings(tmp_path):
    tbf = {"kind": "tbf", "rules": [{"job": "app*", "rate": 0.3}], "default_rate": 0.5}
    _, runs = load_runs(small_campaign(tmp_path / "c.yaml", policies=["fifo", "Job_Fair", "size-fair", tbf]))
    assert len(runs) == 5 * 4 and len({r.run_id for r in runs}) == 20
    assert [r.params["policy"] for r in runs[:4]] == ["fifo", "job-fair", "size-fair", "tbf"]
    got = runs[3].spec().policy
    assert got.kind == "tbf" and got.rules[0].rate == 0.3 and got.default_rate == 0.5
    # a TBF mapping as the base's own policy: checked with the base, labelled as its kind
    path = small_campaign(tmp_path / "d.yaml")
    data = yaml.safe_load(path.read_text())
    data["base"]["policy"] = tbf
    del data["axes"]["policies"]
    path.write_text(yaml.safe_dump(data))
    _, runs = load_runs(path)
    assert {r.params["policy"] for r in runs} == {"tbf"} and runs[0].spec().policy.default_rate == 0.5


def test_run_ids_depend_on_the_run_not_on_its_position(tmp_path):
    _, before = load_runs(small_campaign(tmp_path / "a.yaml", policies=["fifo", "shared"]))
    _, after = load_runs(small_campaign(tmp_path / "b.yaml", policies=["lowest-id", "fifo", "shared"],
                                        seeds=[7]))
    ids_after = {(r.params["workload"], r.params["policy"]): r.run_id for r in after}
    for r in before:  # adding a policy in front shifts indices but keeps every id
        assert ids_after[(r.params["workload"], r.params["policy"])] == r.run_id
    _, other_seed = load_runs(small_campaign(tmp_path / "c.yaml", policies=["fifo", "shared"], seeds=[8]))
    assert not {r.run_id for r in before} & {r.run_id for r in other_seed}
    _, step = load_runs(small_campaign(tmp_path / "a.yaml", policies=["fifo", "shared"]), mode="step")
    assert not {r.run_id for r in before} & {r.run_id for r in step}
    assert all(r.spec().sim.mode == "step" for r in step)


def test_a_spec_field_added_later_keeps_the_ids_of_runs_that_leave_it_as_before(tmp_path):
    """``platform.overheads`` came after these ids were first written to journals: a run whose
    overheads are all 0 (what every run was before) keeps its id, so an upgraded iolab resumes an old
    campaign instead of running it all again; other overheads are another run."""
    from iolab.campaign.expand import run_id

    _, runs = load_runs(QUICK)
    # the first ids of examples/campaigns/quick.yaml as iolab wrote them before the field existed (cafdfb9)
    assert [r.run_id for r in runs[:4]] == ["ecff9e9605e453df", "af545d890052449a", "d526056d7cb22750",
                                            "b9865e28c3ed9bd0"]
    r = runs[0]
    assert r.experiment["platform"]["overheads"] == {"io_phase": 0.0, "launch": 0.0, "gap": 0.0, "exit": 0.0}
    params = {k: v for k, v in r.params.items()}
    old = json.loads(json.dumps(r.experiment))
    del old["platform"]["overheads"]
    assert run_id(old, params, r.runtime) == run_id(r.experiment, params, r.runtime) == r.run_id
    other = json.loads(json.dumps(r.experiment))
    other["platform"]["overheads"]["gap"] = 0.01
    assert run_id(other, params, r.runtime) != r.run_id
    assert r.experiment["platform"]["overheads"]["gap"] == 0.0  # the run's own experiment is left as it was


def test_editing_a_workload_file_changes_only_its_runs_ids(tmp_path):
    spec = yaml.safe_load(TABLE1.read_text())
    (tmp_path / "wl").mkdir()
    (tmp_path / "wl" / "t1.yaml").write_text(yaml.safe_dump(spec))
    camp = small_campaign(tmp_path / "c.yaml", workloads=["wl/t1.yaml", {"generate": "carretero", "alpha": [1],
                                                                      "params": {"apps": [3, 4]}}])
    _, first = load_runs(camp)
    spec["apps"][0]["iterations"] = 7
    (tmp_path / "wl" / "t1.yaml").write_text(yaml.safe_dump(spec))
    _, second = load_runs(camp)
    for a, b in zip(first, second):
        assert (a.run_id == b.run_id) == (a.params["workload"] != "t1")
    assert second[0].spec().apps[0].iterations == 7


def test_platform_and_mapping_axes_multiply(tmp_path):
    _, runs = load_runs(small_campaign(tmp_path / "c.yaml", policies=["fifo"], platform={"io_nodes": [1, 3]},
                                       mappings=["first-fit", {"kind": "make-pack", "sensibility": 1}]))
    assert len(runs) == 5 * 2 * 2
    assert {(r.params["io_nodes"], r.params["mapping"]) for r in runs} == {
        (1, "first-fit"), (3, "first-fit"), (1, "make-pack(S=1)"), (3, "make-pack(S=1)")}
    assert {r.spec().platform.io_nodes for r in runs} == {1, 3}


BAD = [
    ({"policies": ["fifo", "fastest"]}, "axes.policies[1]", "fastest"),
    ({"policies": ["fifo", {"kind": "tbf", "rules": [{"rate": -1}]}]}, "axes.policies[1].rules[0].rate",
     "greater than 0"),
    ({"policies": ["job-fair", "job_fair"]}, "axes.policies[1]", "duplicate of policies[0]"),
    ({"workloads": [{"generate": "carretero", "alpha": [-1]}]}, "axes.workloads[0].alpha[0]", "greater than 0"),
    ({"workloads": ["nowhere.yaml"]}, "axes.workloads[0].spec", "no such file"),
    ({"polices": ["fifo"]}, "axes.polices", "unknown field"),
    ({"seeds": [1, 1]}, "axes.seeds[1]", "duplicate of seeds[0]"),
    ({"workloads": [{"generate": "carretero", "alpha": [1], "params": {"nodes_per_io_node": 48}}]},
     "axes.workloads[0].params.nodes_per_io_node", "power of two"),
    ({"workloads": [str(TABLE1)], "platform": {"nodes_per_io_node": [4]}}, "apps[0].nodes", "partition"),
    ({"mappings": [{"kind": "make-pack", "sensibility": 0}]}, "axes.mappings[0].sensibility", "greater than 0"),
]


@pytest.mark.parametrize("axes,path,reason", BAD, ids=[b[1] for b in BAD])
def test_bad_campaign_refused_with_field_path(tmp_path, axes, path, reason):
    camp = small_campaign(tmp_path / "bad.yaml", **axes)
    with pytest.raises(SpecError) as err:
        load_runs(camp)
    assert any(path in p and reason in r for p, r in err.value.problems), err.value.problems


def test_bad_top_level_fields(tmp_path):
    camp = small_campaign(tmp_path / "bad.yaml")
    data = yaml.safe_load(camp.read_text())
    data.update(runtime="quantum", name="has space", base="missing-base.yaml")
    camp.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError) as err:
        load_runs(camp)
    paths = dict(err.value.problems)
    assert "runtime" in paths and "quantum" in paths["runtime"]
    assert "name" in paths


def test_cli_refuses_a_bad_campaign_before_anything_runs(tmp_path):
    camp = small_campaign(tmp_path / "bad.yaml", policies=["fifo", "fastest"])
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["sweep", str(camp), "--out", str(out)])
    assert r.exit_code == 2
    assert "axes.policies[1]" in r.output and "fastest" in r.output
    assert not out.exists()  # no Ray, no journal, no manifest


def test_dry_run_lists_the_runs(tmp_path):
    r = CliRunner().invoke(cli, ["sweep", str(QUICK), "--dry-run"])
    assert r.exit_code == 0, r.output
    _, runs = load_runs(QUICK)
    assert r.output.startswith("quick: 20 runs")
    assert all(run.run_id in r.output for run in runs)


def test_journal_ignores_a_torn_last_line_and_repairs_it(tmp_path):
    path = tmp_path / "journal.jsonl"
    good = [{"run_id": f"r{i}", "status": "ok", "metrics": {"makespan": float(i)}} for i in range(3)]
    path.write_text("".join(json.dumps(g) + "\n" for g in good) + '{"run_id": "r3", "status": "o')
    j = Journal(path)
    assert sorted(j.load()) == ["r0", "r1", "r2"] and j.ignored == 1
    with Journal(path) as j2:
        j2.append({"run_id": "r3", "status": "failed", "error": "boom"})
    recs = Journal(path).load()
    assert sorted(recs) == ["r0", "r1", "r2", "r3"] and recs["r3"]["error"] == "boom"
    assert path.read_text().count("\n") == 4
    with Journal(path) as j3:  # a later line for the same run wins (retry)
        j3.append({"run_id": "r3", "status": "ok"})
    assert Journal(path).load()["r3"]["status"] == "ok"
