"""iolab's I/O simulator under sharing policies against benchmarks/reference_weighted_ps.py, an independent
weighted processor-sharing program in exact arithmetic.

Random small I/O specs (seeded numpy) on one I/O node run through ``iolab.sim.io.run.simulate`` (event
mode) under ``size-fair`` (the reference's ``weights`` rule with the apps' node counts), a TBF whose rules
give some apps a rate (``caps``), and a user's Sharing from a file outside the repository that answers 1/k
(``equal``): every transfer must end when the reference says, and every app too, to 1e-9 relative.  The
reference recomputes every rate at every instant from its rule; iolab asks the policy only when a
transfer joins or leaves, so an agreement also says that nothing else moves the shares.
"""

from __future__ import annotations

import numpy as np
import pytest

from iolab.sim.io.run import simulate
from iolab.specs import parse_spec

EQUAL = '''
from iolab.policy import Sharing


class Equal(Sharing):
    """1/k each: shared's split, asked through the public API."""

    def shares(self, streams, now):
        return [1.0 / len(streams)] * len(streams)
'''


def random_case(seed: int) -> tuple[dict, list[dict]]:
    rng = np.random.default_rng([seed, 41])
    b = float(rng.choice([1.0, 2.0]))
    apps, ref = [], []
    for i in range(int(rng.integers(2, 6))):
        n = int(rng.integers(1, 5))
        phases = []
        for _ in range(n):
            phases += [("compute", int(rng.integers(0, 8))), ("write", int(rng.integers(1, 9)))]
        release = float(rng.choice([0, 0, int(rng.integers(0, 10))]))
        nodes = int(rng.integers(1, 9))
        rate = [None, 0.25, 0.5, 1.0, 1.5][int(rng.integers(0, 5))]
        apps.append({"id": f"a{i}", "nodes": nodes, "release": release,
                     "phases": [{k: float(x)} for k, x in phases]})
        ref.append({"id": f"a{i}", "release": release, "phases": phases, "weight": nodes,
                    "cap": None if rate is None else rate * b})
    spec = {"name": f"sharing-{seed}", "platform": {"io_nodes": 1, "nodes_per_io_node": 64, "bandwidth": b},
            "mapping": "none", "apps": apps}
    return spec, ref


def tbf_of(ref: list[dict]) -> dict:
    return {"kind": "tbf", "rules": [{"job": a["id"], "rate": a["cap"]} for a in ref if a["cap"] is not None]}


def ends(trace) -> tuple[dict, dict]:
    j, p = trace.jobs, trace.phases
    app_end = {str(a): float(e) for a, e in zip(j["id"], j["end"])}
    transfer = {(str(a), int(i)): (float(s), float(e)) for a, i, k, s, e, v in
                zip(p["job"], p["index"], p["kind"], p["start"], p["end"], p["volume"]) if k != "compute" and v > 0}
    return app_end, transfer


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("rule", ["weights", "caps", "equal"])
def test_sharing_runs_end_where_the_exact_reference_says(seed, rule, tmp_path, reference_weighted_ps):
    ref_mod = reference_weighted_ps
    spec, ref = random_case(seed)
    if rule == "weights":
        policy = "size-fair"
    elif rule == "caps":
        policy = tbf_of(ref)
    else:
        (tmp_path / "equal.py").write_text(EQUAL)
        policy = {"kind": "python", "path": str(tmp_path / "equal.py"), "class": "Equal"}
    trace = simulate(parse_spec({**spec, "policy": policy}, "<test>"), strict=True)
    want = ref_mod.run(ref, spec["platform"]["bandwidth"], rule)
    app_end, transfer = ends(trace)
    assert set(app_end) == set(want["ends"])
    for a, e in want["ends"].items():
        assert app_end[a] == pytest.approx(float(e), rel=1e-9, abs=1e-9), a
    assert sorted(transfer) == sorted((a, i) for a, i, _, _ in want["transfers"])
    for a, i, s, e in want["transfers"]:
        got = transfer[(a, i)]
        assert got[0] == pytest.approx(float(s), rel=1e-9, abs=1e-9) and \
            got[1] == pytest.approx(float(e), rel=1e-9, abs=1e-9), (a, i, got, (float(s), float(e)))


def test_the_reference_is_not_blind_to_the_rule(reference_weighted_ps):
    """The three rules give different times on a case where the apps differ (so each comparison above
    tests its rule, not a split every rule shares)."""
    ref_mod = reference_weighted_ps
    apps = [{"id": "big", "release": 0, "phases": [("write", 8)], "weight": 6, "cap": 0.25},
            {"id": "small", "release": 0, "phases": [("write", 8)], "weight": 2, "cap": None}]
    out = {rule: ref_mod.run(apps, 1, rule)["ends"] for rule in ("equal", "weights", "caps")}
    assert out["equal"] == {"big": 16, "small": 16}
    assert out["weights"] == {"big": pytest.approx(8 / 0.75 + 0), "small": 16}  # big at 3/4 until it ends
    # caps: 0.25 + 1 > 1, so big 0.2, small 0.8 until small ends at 10 (big moved 2), then big alone at 0.25
    assert out["caps"] == {"small": 10, "big": 10 + 6 / 0.25}
