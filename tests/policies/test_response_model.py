"""The response regression (random forest, OOB error) and the AR(q) forecast on series with known answers."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("sklearn", reason="scikit-learn is the controller extra")
pytest.importorskip("statsmodels", reason="statsmodels is the controller extra")

from iolab.cli import cli  # noqa: E402
from iolab.middleware.response_model import ResponseModel, forecast, select_features  # noqa: E402
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
    model = tmp_path / "model.pkl"
    r = CliRunner().invoke(cli, ["controller", "train", str(path), "-o", str(model), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["features"] and out["held_out"] > 0 and out["test_r2"] > 0.9
    assert ResponseModel.load(model).features == out["features"]
    empty = tmp_path / "off.h5"
    write_trace(simulate_batch(ds1(False)), empty)
    r = CliRunner().invoke(cli, ["controller", "train", str(empty), "-o", str(model)])
    assert r.exit_code == 2 and "no samples" in r.output
