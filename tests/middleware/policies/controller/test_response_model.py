"""The response regression (random forest, OOB error) and the AR(q) forecast on series with known answers."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("sklearn", reason="scikit-learn is the controller extra")
pytest.importorskip("statsmodels", reason="statsmodels is the controller extra")

from iolab.cli import cli  # noqa: E402
from iolab.middleware.policies.controller.response_model import ResponseModel, forecast, select_features  # noqa: E402
from iolab.sim.batch.run import simulate_batch  # noqa: E402
from iolab.specs import parse_spec  # noqa: E402
from iolab.trace import write_trace  # noqa: E402


def test_features_are_chosen_by_correlation():
    rng = np.random.default_rng(1)
    x1 = rng.uniform(0, 10, 200)
    noise = rng.uniform(0, 10, 200)
    y = 3 * x1 + rng.normal(0, 0.1, 200)
    cols = {"x1": x1, "noise": noise, "const": np.ones(200), "nan": np.full(200, np.nan)}
    assert select_features(cols, y, 0.3) == ["x1"]
    assert select_features(cols, y, 1.01) == []


def test_the_forest_learns_a_known_response_and_reports_its_oob_error():
    rng = np.random.default_rng(2)
    w = rng.integers(0, 10, 400).astype(float)
    y = 5 + 12 * w  # the known answer: 5 s alone, 12 s per writer
    m = ResponseModel.fit({"writers": w[:300], "noise": rng.uniform(0, 1, 300)}, y[:300], seed=0, trees=50)
    assert m.features == ["writers"]
    assert m.oob_r2 > 0.99 and m.oob_mae < 1.0
    pred = m.predict({"writers": w[300:]})
    assert np.max(np.abs(pred - y[300:])) < 1.0  # held out


def test_the_ar_forecast_follows_a_known_recurrence():
    y = [0.0]
    for _ in range(60):
        y.append(0.8 * y[-1] + 2.0)  # AR(1) with mean 10
    want, last = [], y[-1]
    for _ in range(5):
        last = 0.8 * last + 2.0
        want.append(last)
    assert forecast(y, 1, 5) == pytest.approx(want, abs=1e-6)
    with pytest.raises(ValueError, match="needs more than"):
        forecast([1.0, 2.0], 3, 2)


def ds1(on: bool):
    """DS1's shape: 2 CPU-bound and 4 I/O-bound jobs on a volume that loses throughput past one stream."""
    jobs = [{"id": f"io{i + 1}", "submit": i * 10, "nodes": 2, "walltime": 20000, "runtime": 2000 + 500 * i,
             "data": "150GB"} for i in range(4)]
    jobs += [{"id": f"cpu{i + 1}", "submit": 5 + i * 10, "nodes": 2, "walltime": 20000, "runtime": 3000}
             for i in range(2)]
    return parse_spec({"kind": "batch", "scheduler": "fcfs", "workload": {"source": "inline", "jobs": jobs},
                       "platform": {"nodes": 12, "memory_per_node": "1GB", "lps": {"rate": "100MB/s"},
                                    "hps": {"rate": "1GB/s", "capacity": "1TB"}, "stage_rate": "1GB/s"},
                       "controller": {"enabled": on, "volumes": ["lps"], "omega": "1GB",
                                      "model": {"gamma": 0.5, "knee": 1}}})


def test_cli_trains_on_simulated_samples(tmp_path):
    path = tmp_path / "ds1.h5"
    write_trace(simulate_batch(ds1(True)), path)
    model = tmp_path / "model.npz"
    r = CliRunner().invoke(cli, ["controller", "train", str(path), "-o", str(model), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["features"] and out["held_out"] > 0 and out["test_r2"] > 0.9
    assert ResponseModel.load(model).features == out["features"]
    empty = tmp_path / "off.h5"
    write_trace(simulate_batch(ds1(False)), empty)
    r = CliRunner().invoke(cli, ["controller", "train", str(empty), "-o", str(model)])
    assert r.exit_code == 2 and "no samples" in r.output


def test_the_predictor_feeds_the_measurement_until_its_forest_exists():
    from iolab.middleware.policies.controller.response_model import ResponsePredictor

    rng = np.random.default_rng(3)
    p = ResponsePredictor("forest", warmup=60, retrain=100, seed=0, trees=30)
    fed, want = [], []
    for i in range(300):
        k = int(rng.integers(0, 5))
        y = 5 + 12 * k + rng.normal(0, 0.5)
        fed.append(p.feed({"writers": k, "bytes_rate": float("nan"), "in_flight": 0.0}, y))
        want.append((k, y))
    assert fed[:60] == [y for _, y in want[:60]]  # the warm-up: the measured response
    assert p.stats()["trained_at"] == [60, 160, 260] and p.stats()["features"] == ["writers"]
    for f, (k, y) in zip(fed[60:], want[60:]):
        assert f == pytest.approx(5 + 12 * k, abs=0.5) and f != y  # the forest's, near the known line
    assert p.stats()["fed_predicted"] == 240
    assert ResponsePredictor().feed({"writers": 3}, 7.5) == 7.5  # measured: the response itself


def test_a_predictor_whose_counters_explain_nothing_keeps_the_measurement_and_tries_again():
    from iolab.middleware.policies.controller.response_model import ResponsePredictor

    p = ResponsePredictor("forest", warmup=10, seed=0, trees=10)
    out = [p.feed({"writers": 2, "bytes_rate": 1.0, "in_flight": 0.0}, float(i)) for i in range(25)]
    assert out == [float(i) for i in range(25)]  # constant counters: no feature, no forest
    s = p.stats()
    assert s["trained_at"] == [10, 20] and s["fed_predicted"] == 0 and "no sample column correlates" in s["error"]


def test_a_simulation_predicts_with_a_model_trained_by_the_cli(tmp_path):
    path = tmp_path / "ds1.h5"
    write_trace(simulate_batch(ds1(True)), path)
    model = tmp_path / "model.npz"
    assert CliRunner().invoke(cli, ["controller", "train", str(path), "-o", str(model)]).exit_code == 0
    d = ds1(True).model_dump(mode="json")
    d["controller"].update({"prediction": "forest", "model_file": str(model)})
    tr = simulate_batch(parse_spec(d))
    s = tr.attrs["prediction"]
    assert not s["online"] and s["trained_at"] == [] and s["fed_predicted"] == len(tr.samples)
    m = ResponseModel.load(model)
    cols = tr.samples.columns
    want = m.predict({f: np.asarray(cols[f], dtype=float) for f in m.features})  # the model, called directly
    assert np.allclose(cols["predicted"], np.maximum(want, 0.0))


def test_cli_scores_the_forecast_t_ahead(tmp_path):
    from iolab.middleware.policies.controller.forecast import forecast_skill

    path = tmp_path / "ds1.h5"
    tr = simulate_batch(ds1(True))
    write_trace(tr, path)
    r = CliRunner().invoke(cli, ["controller", "forecast", str(path), "--steps", "1,6,18", "--json"])
    assert r.exit_code == 0, r.output
    (out,) = json.loads(r.output)
    assert [x["t"] for x in out["rows"]] == [10.0, 60.0, 180.0]  # steps x d (10 s)
    y = tr.samples.columns["predicted"]
    assert out["rows"] == [{"t": x["steps"] * 10.0, **x} for x in forecast_skill(y, [1, 6, 18], threshold=60.0)]
    assert all(0 <= x["state_accuracy"] <= 1 for x in out["rows"])
    bad = CliRunner().invoke(cli, ["controller", "forecast", str(path), "--steps", "0"])
    assert bad.exit_code == 2 and "--steps" in bad.output
    empty = tmp_path / "off.h5"
    write_trace(simulate_batch(ds1(False)), empty)
    bad = CliRunner().invoke(cli, ["controller", "forecast", str(empty)])
    assert bad.exit_code == 2 and "no samples" in bad.output
