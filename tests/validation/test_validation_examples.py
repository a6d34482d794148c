"""The validation specs shipped in examples/validation/: what their headers promise."""

from __future__ import annotations

import shlex

import pytest
import yaml
from click.testing import CliRunner

from iolab.cli import cli
from iolab.specs.io import LIST_POLICIES
from iolab.specs.load import load_spec
from iolab.sim.batch.run import simulate_batch
from iolab.sim.io.run import simulate
from shared_data import REPO

HERE = REPO / "examples" / "validation"


def test_the_multi_node_spec_is_what_its_header_command_generates(tmp_path):
    path = HERE / "multi-node-io.yaml"
    line = next(ln for ln in path.read_text().splitlines() if "iolab workload generate" in ln)
    rest = next(ln for ln in path.read_text().splitlines() if "--mapping make-pack" in ln)
    args = shlex.split(line.split("iolab", 1)[1].rstrip("\\") + " " + rest.lstrip("# "))
    out = tmp_path / "gen.yaml"
    args[args.index("-o") + 1] = str(out)
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert yaml.safe_load(out.read_text())["apps"] == yaml.safe_load(path.read_text())["apps"]


def test_the_multi_node_spec_uses_three_io_nodes_under_every_list_policy():
    spec = load_spec(HERE / "multi-node-io.yaml")
    assert spec.platform.io_nodes == 3 and 10 <= len(spec.apps) <= 12
    assert spec.mapping.kind == "make-pack" and spec.mapping.sensibility == 1.0
    for policy in LIST_POLICIES:
        t = simulate(spec, policy=policy)
        assert set(int(n) for n in t.jobs["io_node"]) == {0, 1, 2}, policy
        assert len(set(int(p) for p in t.jobs["pack"])) >= 3
        assert t.jobs["end"].max() < 600  # a real run at time scale 1 lasts minutes


def test_the_batch_spec_places_on_both_disks_splits_and_falls_back():
    spec = load_spec(HERE / "batch-sas-disks.yaml")
    assert 8 <= len(spec.workload.jobs) <= 12 and spec.scheduler.kind == "sas"
    t = simulate_batch(spec, strict=True)
    a = t.allocations
    held = {str(d) for d, st in zip(a["disk"], a["status"]) if st == "allocated"}
    assert len(held) == 2  # both disks hold allocations
    assert "split" in set(a["status"]) and "failed" in set(a["status"])  # a split, and a job that went to LPS
    tiers = set(t.jobs["tier"])
    assert tiers == {"hps", "lps"}
    assert any(k == "stage-in" for k in t.phases["kind"]) and any(k == "stage-out" for k in t.phases["kind"])
    assert t.jobs["end"].max() * spec.emulator.time_scale < 600  # under 10 minutes of wall time for real


@pytest.mark.parametrize("name", ["multi-node-io.yaml", "batch-sas-disks.yaml", "controller-interference.yaml",
                                  "table1-lustre-b.yaml"])
def test_the_emulator_accepts_the_validation_specs(name, tmp_path):
    spec = load_spec(HERE / name)
    if spec.kind == "batch":
        from iolab.emulator.batch.prerun_checks import check_batch_runnable
        from iolab.sim.batch.run import simulated_makespan
        from iolab.workloads import load_workload

        check_batch_runnable(spec, load_workload(spec), tmp_path, makespan_of=simulated_makespan)
    else:
        from iolab.emulator.io.prerun_checks import check_runnable

        check_runnable(spec, tmp_path)


def test_the_controller_spec_loads_its_volume_and_the_controller_acts_in_the_simulation():
    from iolab.middleware.policies.interference import tier_laws
    from iolab.sim.batch.load_controller import VolumeModel

    spec = load_spec(HERE / "controller-interference.yaml")
    c = spec.controller
    assert c.model.probe == "tier" and c.volumes == ["lps"]
    law = tier_laws(spec)["lps"]
    unit = VolumeModel(spec.platform.lps.rate, law=law)
    # the header: the unit answers 10 s alone, 30 s beside one writer, 60 s beside two; the threshold between
    assert [round(unit.response(k, c.p)) for k in (0, 1, 2)] == [10, 30, 60]
    assert unit.response(1, c.p) < c.r_threshold <= unit.response(2, c.p)
    t = simulate_batch(spec, strict=True)
    suspended = {r["job"] for r in t.actions.rows()}
    assert suspended and suspended <= {"b", "c"}  # never the oldest I/O job (a) nor the CPU-only one (d)
    assert t.jobs["end"].max() * spec.emulator.time_scale < 90  # about a minute of wall time for real


def test_the_table1_interference_spec_is_table1_emulation_with_the_preset():
    """Table 1 as the real-run example runs it, on an I/O node under lustre-plafrim-b: the law costs
    `shared` and leaves the list policies alone (one transfer at a time)."""
    from iolab.middleware.policies.interference import InterferenceLaw, law_of

    spec = load_spec(HERE / "table1-lustre-b.yaml")
    base = load_spec(REPO / "examples" / "table1-emulation.yaml")
    assert spec.apps == base.apps and spec.emulator == base.emulator and spec.mapping == base.mapping
    law = law_of(spec.platform.interference)
    assert law == InterferenceLaw.preset("lustre-plafrim-b") and law.factor(4) == pytest.approx(0.84)
    assert spec.platform.model_copy(update={"interference": None}) == base.platform
    end = {}
    for s, name in ((spec, "law"), (base, "none")):
        for policy in ("shared", "fifo"):
            end[name, policy] = float(simulate(s, policy=policy).jobs["end"].max())
    assert end["law", "shared"] > 1.05 * end["none", "shared"]
    assert end["law", "fifo"] == end["none", "fifo"]
