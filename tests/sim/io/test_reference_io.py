"""iolab's I/O simulator (event mode) against benchmarks/reference_carretero.py, an independent pack simulator.

Random small I/O specs (seeded numpy) go through ``iolab.sim.io.run.simulate`` and through the reference,
with the same plan (mapping ``none``, or the packs iolab's mapping builds, handed to the reference as
its input): every app must end at the same time, to 1e-9 relative, for FIFO, longest-remaining and
stretch.  Integer durations and volumes at b = 1 or 2 make many requests meet at one instant, so the
orders' tie-breaking is exercised.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from iolab.middleware.policies.plan import Plan, make_plan
from iolab.sim.io.event import EventEngine
from iolab.sim.io.run import simulate
from iolab.sim.io.scenario import Scenario
from iolab.specs import load_spec, parse_spec

from shared_data import REPO

POLICIES = ["fifo", "longest-remaining", "stretch"]
SCRIPT = REPO / "benchmarks" / "reference_carretero.py"


def random_spec(seed: int, mapping: str) -> dict:
    rng = np.random.default_rng(seed)
    io_nodes = int(rng.integers(1, 4))
    n_apps = int(rng.integers(2, 9))
    P = 64
    apps = []
    for i in range(n_apps):
        app = {"id": f"a{i}", "nodes": int(rng.integers(1, 33) if mapping != "none" else rng.integers(1, 9)),
               "release": float(rng.choice([0, 0, rng.integers(0, 30)]))}
        if mapping == "none":
            app["io_node"] = int(rng.integers(0, io_nodes))
        if rng.random() < 0.4:  # periodic form
            app.update(iterations=int(rng.integers(1, 12)), compute=float(rng.integers(0, 20)),
                       io_volume=float(rng.integers(0, 12)), io_kind=str(rng.choice(["write", "read"])))
        else:
            phases = []
            for _ in range(int(rng.integers(1, 16))):
                kind = str(rng.choice(["compute", "write", "read"], p=[0.45, 0.35, 0.2]))
                amount = float(rng.integers(0, 15)) if rng.random() < 0.8 else float(rng.uniform(0, 15))
                phases.append({kind: amount})
            app["phases"] = phases
        apps.append(app)
    doc = {"kind": "io", "name": f"random-{seed}",
           "platform": {"io_nodes": io_nodes, "nodes_per_io_node": P, "bandwidth": float(rng.choice([1.0, 2.0, 0.75]))},
           "policy": "fifo", "apps": apps}
    if mapping != "none":
        doc["mapping"] = {"kind": mapping}
    return doc


def plan_of(spec) -> dict | None:
    """iolab's plan as the reference's JSON input (None for mapping none)."""
    plan = make_plan(spec)
    if not plan.packed:
        return None
    ids = [a.id for a in spec.apps]
    return {"packed": True, "nodes": [[[ids[r] for r in pack] for pack in packs] for packs in plan.nodes]}


def iolab_ends(spec, policy: str) -> dict[str, float]:
    t = simulate(spec, policy=policy, mode="event")
    return dict(zip((str(x) for x in t.jobs["id"]), (float(x) for x in t.jobs["end"])))


def reference_ends(ref, doc: dict, policy: str, plan: dict | None, tmp_path) -> dict[str, float]:
    apps, b, io_nodes = ref.build(doc, "random")
    packs = None
    if plan is not None:
        p = tmp_path / "plan.json"
        p.write_text(json.dumps(plan))
        packed, packs = ref.read_plan(str(p), apps, io_nodes)
        assert packed
    ref.simulate(apps, b, io_nodes, policy, packs)
    return {a.id: a.end for a in apps}


def assert_same_ends(mine: dict, theirs: dict) -> None:
    assert mine.keys() == theirs.keys()
    bad = {k: (mine[k], theirs[k]) for k in mine if not mine[k] == pytest.approx(theirs[k], rel=1e-9, abs=1e-12)}
    assert bad == {}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("mapping", ["none", "first-fit", "make-pack"])
@pytest.mark.parametrize("seed", range(8))
def test_same_end_for_every_app(reference_carretero, tmp_path, policy, mapping, seed):
    doc = random_spec(1000 * seed + len(mapping), mapping)
    spec = parse_spec(doc)
    assert_same_ends(reference_ends(reference_carretero, doc, policy, plan_of(spec), tmp_path),
                     iolab_ends(spec, policy))


def test_policies_really_differ_on_these_workloads(reference_carretero, tmp_path):
    # the comparison above would be weak if the three orders always gave the same schedule
    differ = set()
    for seed in range(8):
        doc = random_spec(1000 * seed + 4, "none")
        ends = {p: reference_ends(reference_carretero, doc, p, None, tmp_path) for p in POLICIES}
        differ |= {(a, b) for a in POLICIES for b in POLICIES if a < b and ends[a] != ends[b]}
    assert differ == {("fifo", "longest-remaining"), ("fifo", "stretch"), ("longest-remaining", "stretch")}


def test_two_apps_by_hand(reference_carretero, tmp_path):
    # two apps on one I/O node, b = 1: A computes 2 then writes 4, B computes 1 then writes 3, both twice.
    # FIFO: B asks at 1 (granted, 1-4), A asks at 2 (waits, 4-8), B computes 4-5, asks at 5 (waits, 8-11);
    # A computes 8-10, asks at 10 (waits, 11-15).  Ends: B 11, A 15.
    doc = {"platform": {"nodes_per_io_node": 4, "bandwidth": 1.0},
           "apps": [{"id": "A", "nodes": 1, "iterations": 2, "compute": 2, "io_volume": 4},
                    {"id": "B", "nodes": 1, "iterations": 2, "compute": 1, "io_volume": 3}]}
    assert reference_ends(reference_carretero, doc, "fifo", None, tmp_path) == {"A": 15.0, "B": 11.0}
    # longest-remaining at 5: only B waits (A transfers 4-8); at 8: B alone again -> same as FIFO here;
    # at 10 A (remaining 4) is alone.  Stretch: same single-waiter choices.
    for p in ("longest-remaining", "stretch"):
        assert reference_ends(reference_carretero, doc, p, None, tmp_path) == {"A": 15.0, "B": 11.0}


def test_cli_on_the_table1_example_with_a_plan(tmp_path):
    # the whole program: spec file + plan file in, JSON out; a pack plan of the example on one node
    spec_path = REPO / "examples" / "carretero-table1.yaml"
    plan = {"packed": True, "nodes": [[["app1", "app2", "app3"], ["app4", "app5"]]]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    r = subprocess.run([sys.executable, str(SCRIPT), str(spec_path), "--plan", str(tmp_path / "plan.json"),
                        "--policy", "stretch", "--json"], capture_output=True, text=True, check=True)
    out = json.loads(r.stdout)
    spec = load_spec(spec_path)
    rec = EventEngine(Scenario.from_spec(spec, Plan(True, (((0, 1, 2), (3, 4)),), 1.0)), "stretch").run()
    assert [a["end"] for a in out["apps"]] == pytest.approx(list(rec.end), rel=1e-9)
    assert [a["start"] for a in out["apps"]][3] == max(rec.end[:3])  # pack 2 starts when pack 1 ends
    assert out["makespan"] == pytest.approx(max(rec.end), rel=1e-9)


def test_bad_spec_is_named_and_exits_2(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("platform: {nodes_per_io_node: 4, bandwidth: 0}\napps: [{id: A, nodes: 1, phases: [{compute: 1}]}]\n")
    r = subprocess.run([sys.executable, str(SCRIPT), str(p)], capture_output=True, text=True)
    assert r.returncode == 2 and "platform.bandwidth" in r.stderr and "Traceback" not in r.stderr
    p.write_text("platform: {nodes_per_io_node: 4, bandwidth: 1}\nmapping: make-pack\n"
                 "apps: [{id: A, nodes: 1, phases: [{compute: 1}]}]\n")
    r = subprocess.run([sys.executable, str(SCRIPT), str(p)], capture_output=True, text=True)
    assert r.returncode == 2 and "needs --plan" in r.stderr


def test_unpacked_plan_file_is_mapping_none(reference_carretero, tmp_path):
    # a plan with "packed": false places apps on I/O nodes without pack barriers: iolab's mapping none
    ref = reference_carretero
    doc = random_spec(3, "none")
    spec = parse_spec(doc)
    nodes = [[[a["id"] for a in doc["apps"] if a["io_node"] == n]] for n in range(doc["platform"]["io_nodes"])]
    nodes = [[pack] if pack else [] for [pack] in nodes]
    p = tmp_path / "plan.json"
    p.write_text(json.dumps({"packed": False, "nodes": nodes}))
    apps, b, io_nodes = ref.build(doc, "random")
    packed, plan = ref.read_plan(str(p), apps, io_nodes)
    assert packed is False
    ref.simulate(apps, b, io_nodes, "stretch", plan, packed)
    assert_same_ends({a.id: a.end for a in apps}, iolab_ends(spec, "stretch"))
