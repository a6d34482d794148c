"""The interference law (one pure object), its spec field, its presets and the older controller.model."""

from __future__ import annotations

import pytest

from iolab.errors import SpecError
from iolab.middleware.policies.interference import (NO_INTERFERENCE, InterferenceLaw, aggregate_loss, law_of,
                                                    tier_laws)
from iolab.specs import parse_spec

BATCH = {
    "kind": "batch",
    "platform": {"nodes": 4, "lps": {"rate": "1GB/s"}, "hps": {"rate": "4GB/s", "capacity": "1TB"},
                 "stage_rate": "1GB/s"},
    "scheduler": "fcfs",
    "workload": {"source": "inline", "jobs": [{"id": "j1", "submit": 0, "nodes": 1, "walltime": 100,
                                               "runtime": 50}]},
}
IO = {"platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": 1.0}, "policy": "shared",
      "apps": [{"id": "a", "nodes": 1, "iterations": 1, "compute": 1, "io_volume": 1}]}


def batch(lps=None, hps=None, controller=None):
    d = {**BATCH, "platform": {**BATCH["platform"], "lps": {"rate": "1GB/s", **({"interference": lps} if lps is not None else {})},
                               "hps": {"rate": "4GB/s", "capacity": "1TB", **({"interference": hps} if hps is not None else {})}}}
    if controller is not None:
        d["controller"] = controller
    return parse_spec(d)


def problems(**kw):
    with pytest.raises(SpecError) as err:
        batch(**kw)
    return err.value.problems


def test_no_law_is_one_everywhere():
    assert [NO_INTERFERENCE.factor(k) for k in range(6)] == [1.0] * 6
    assert InterferenceLaw.parametric(0.0).lossless


def test_the_parametric_law_is_todays_contention_law():
    law = InterferenceLaw.parametric(0.5, knee=2)
    for k in range(1, 9):
        assert law.factor(k) == pytest.approx(1 / (1 + 0.5 * max(0, k - 2)))
    assert law.factor(0) == 1.0
    with pytest.raises(ValueError):
        law.factor(-1)


def test_a_table_is_linear_between_its_points_and_flat_past_the_last():
    law = InterferenceLaw.table({2: 0.9, 4: 0.5})  # k = 1 is 1
    got = [law.factor(k) for k in range(1, 8)]
    assert got == pytest.approx([1.0, 0.9, 0.7, 0.5, 0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="k = 1"):
        InterferenceLaw.table({1: 0.8, 2: 0.5})


@pytest.mark.parametrize("name, d", [("lustre-plafrim-a", 0.02), ("lustre-plafrim-b", 0.16),
                                     ("lustre-plafrim-c", 0.11)])
def test_the_presets_lose_the_papers_share_at_four_applications(name, d):
    law = InterferenceLaw.preset(name)
    # carretero2020 §3: d = 1 - sum(BW_multi) / BW_single with 4 applications
    single = 1.0 * law.factor(1)
    multi = 1.0 * law.factor(4)
    assert 1 - multi / single == pytest.approx(d)
    assert aggregate_loss(law) == pytest.approx(d)
    assert law_of(batch(lps=name).platform.lps.interference) == law


def test_a_dumped_spec_reads_back_with_its_law():
    import json

    for law in ("lustre-plafrim-c", {"gamma": 0.25, "knee": 2}, {"table": {2: 0.9, 4: 0.5}}):
        s = batch(lps=law)
        again = parse_spec(json.loads(json.dumps(s.model_dump(mode="json"))))
        assert again.platform.lps.interference == s.platform.lps.interference
        assert law_of(again.platform.lps.interference) == law_of(s.platform.lps.interference)


def test_every_form_of_the_field_reads_to_its_law():
    p = batch(lps={"gamma": 0.25, "knee": 2}, hps={"table": {3: 0.6}}).platform
    assert law_of(p.lps.interference).factor(4) == pytest.approx(1 / 1.5)
    assert law_of(p.hps.interference).factor(2) == pytest.approx(0.8)
    assert law_of(batch(lps="none").platform.lps.interference).lossless
    assert law_of(batch().platform.lps.interference).lossless
    io = parse_spec({**IO, "platform": {**IO["platform"], "interference": "lustre-plafrim-b"}})
    assert law_of(io.platform.interference).factor(4) == pytest.approx(0.84)


@pytest.mark.parametrize("law, path, words", [
    ("lustre-plafrim-z", "platform.lps.interference.preset", "unknown interference preset"),
    ({"gamma": 0.5, "table": {2: 0.5}}, "platform.lps.interference.table", "one form"),
    ({"knee": 3}, "platform.lps.interference.knee", "knee goes with gamma"),
    ({"table": {1: 0.5}}, "platform.lps.interference.table", "share of one stream is 1"),
    ({"table": {2: -1}}, "platform.lps.interference.table", "> 0"),
    ({"gamma": -1}, "platform.lps.interference.gamma", ""),
    ({"gama": 1}, "platform.lps.interference.gama", ""),
])
def test_a_bad_law_is_named(law, path, words):
    got = problems(lps=law)
    assert any(p.startswith(path) and words in r for p, r in got), got


def test_the_older_controller_model_keeps_its_meaning_on_the_watched_volumes():
    s = batch(controller={"enabled": False, "volumes": ["lps"], "model": {"gamma": 0.5, "knee": 1}})
    laws = tier_laws(s)
    assert laws["lps"] == InterferenceLaw.parametric(0.5, 1)
    assert laws["hps"].lossless and laws["stage"].lossless
    # the law on the tier and gamma in the model: refused, saying what to keep
    got = problems(lps={"gamma": 0.5}, controller={"volumes": ["lps"], "model": {"gamma": 0.5}})
    assert any(p == "controller.model.gamma" and "platform.lps.interference" in r for p, r in got), got
    # r0/probe_rate alone beside a tier law: fine, the tier's law holds
    s = batch(hps="lustre-plafrim-a", controller={"volumes": ["hps"], "model": {"r0": 0.1}})
    assert tier_laws(s)["hps"] == InterferenceLaw.preset("lustre-plafrim-a")
