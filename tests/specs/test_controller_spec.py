"""The ``controller:`` section of a batch spec (dheenadayalan2017 §5 defaults, scaling, errors)."""

from __future__ import annotations

import os

import pytest

from iolab.errors import SpecError
from iolab.middleware.policies.controller import ControllerParams
from iolab.specs import parse_spec

BATCH = {
    "kind": "batch",
    "platform": {"nodes": 12, "lps": {"rate": "1GB/s"}, "hps": {"rate": "4GB/s", "capacity": "1TB"},
                 "stage_rate": "1GB/s"},
    "scheduler": "fcfs",
    "workload": {"source": "inline", "jobs": [{"id": "j1", "submit": 0, "nodes": 1, "walltime": 100,
                                               "runtime": 50}]},
}


def spec(controller):
    return parse_spec({**BATCH, "controller": controller})


def problems(controller):
    with pytest.raises(SpecError) as err:
        spec(controller)
    return err.value.problems


def test_absent_means_off_and_true_means_the_papers_parameters():
    assert parse_spec(BATCH).controller is None
    assert spec(False).controller.enabled is False
    c = spec(True).controller
    assert c.enabled
    # §5: d = 10 s, r_threshold = 60 s, beta = 18, ws = 3 min, alpha = 0.75, t = 3 min, p = 1 GB, omega = 4000 MB
    assert (c.d, c.r_threshold, c.beta, c.ws, c.alpha, c.t, c.p, c.omega) == \
        (10, 60, None, 180, 0.75, 180, 1e9, 4000e6)
    p = ControllerParams.from_spec(c)
    assert p == ControllerParams()  # the policy's defaults are the paper's too
    assert p.window == 18  # Eq. 5: ws / d


def test_units_and_scaling():
    c = spec({"d": "20s", "ws": "4m", "t": "5m", "p": "2GB", "omega": "500MB", "volumes": ["hps"]}).controller
    assert (c.d, c.ws, c.t, c.p, c.omega) == (20, 240, 300, 2e9, 500e6)
    assert ControllerParams.from_spec(c).window == 12  # Eq. 5: 4 min / 20 s
    given = spec({"d": "20s", "beta": 7, "volumes": ["hps"]}).controller  # beta alone: the window spans beta d
    assert (given.ws, ControllerParams.from_spec(given).window) == (140, 7)


@pytest.mark.parametrize("section,where,reason", [
    ({"alpha": 1.5}, "controller.alpha", "less than or equal to 1"),
    ({"d": 0}, "controller.d", "greater than 0"),
    ({"volumes": ["scratch"]}, "controller.volumes[0]", "unknown volume 'scratch'"),
    ({"beta": 10, "ws": "3m"}, "controller.beta", "Eq. 5"),
    ({"ws": "5s"}, "controller.ws", "shorter than one sample interval"),
    ({"dd": 3}, "controller.dd", "unknown field"),
    ({"warmup": 50}, "controller.warmup", "only with prediction: forest"),
    ({"prediction": "neural"}, "controller.prediction", "'measured' or 'forest'"),
    ({"prediction": "forest", "model_file": "nowhere.pkl"}, "controller.model_file", "does not exist"),
    ({"model": {"spread": [1.0, 0.5]}}, "controller.model.spread", "never decrease"),
    ({"model": {"spread": [0.0, 1.0]}}, "controller.model.spread", "finite ratio > 0"),
])
def test_bad_sections_name_the_field(section, where, reason):
    found = problems(section)
    assert any(w == where and reason in r for w, r in found), found


@pytest.mark.parametrize("section", [{}, {"beta": 20}, {"beta": 12, "d": 5}, {"prediction": "forest", "warmup": 50},
                                     {"ws": "2m", "model": {"spread": [0.5, 1, 3]}}])
def test_a_dumped_controller_section_reads_back_the_same(section):
    from iolab.specs.controller import ControllerSpec

    c = ControllerSpec.model_validate(section)
    again = ControllerSpec.model_validate(c.model_dump(mode="json"))
    window = ControllerParams.from_spec(c).window
    assert again == c and ControllerParams.from_spec(again).window == window
    assert c.ws == pytest.approx(window * c.d)  # beta alone sets the window's span


def test_model_file_must_be_a_model_of_controller_train(tmp_path):
    import pickle

    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a model")
    found = problems({"prediction": "forest", "model_file": str(bad)})
    assert any(w == "controller.model_file" and "iolab controller train" in r for w, r in found), found
    old = tmp_path / "other.pkl"  # the format of older versions: refused unread, saying how to get a model file
    old.write_bytes(pickle.dumps({"features": ["writers"], "forest": None}))
    found = problems({"prediction": "forest", "model_file": str(old)})
    assert any(w == "controller.model_file" and "pickle" in r and "iolab controller convert" in r
               for w, r in found), found
    for what, make in (("a folder", lambda p: p.mkdir()), ("a FIFO", lambda p: os.mkfifo(p))):
        p = tmp_path / what.replace(" ", "_")
        make(p)
        found = problems({"prediction": "forest", "model_file": str(p)})
        assert any(w == "controller.model_file" and f"is {what}" in r for w, r in found), found
