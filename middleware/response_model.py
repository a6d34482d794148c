"""dheenadayalan2017 §4.2: predict a volume's response time and forecast it.

- :func:`select_features`: the sample columns whose |Pearson r| with the
  response reaches ``correlation_threshold`` (constant columns never do);
- :class:`ResponseModel`: a random forest regressor (scikit-learn) on those
  features, with its out-of-bag error (MAE and R² of the OOB predictions),
  saved and loaded with pickle;
- :func:`forecast`: an AR(q) model (statsmodels ``AutoReg``) on a response
  series, the next ``steps`` values.

``iolab controller train TRACES... -o MODEL`` fits a model on the ``samples``
tables of kept traces.  The pure controller policy never sees this module:
the runtimes feed it the model's predictions.
"""

from __future__ import annotations

import math
import pickle
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from iolab.metrics.forecast import ar_forecast

__all__ = ["FEATURES", "ResponseModel", "forecast", "select_features"]

FEATURES = ("writers", "bytes_rate", "in_flight")  # the samples columns a model may use


def select_features(columns: dict[str, np.ndarray], y: np.ndarray, threshold: float) -> list[str]:
    """Names of the columns with |corr(column, y)| >= ``threshold`` (finite, non-constant columns only)."""
    out = []
    y = np.asarray(y, dtype=float)
    for name, x in columns.items():
        x = np.asarray(x, dtype=float)
        ok = np.isfinite(x) & np.isfinite(y)
        if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
            continue
        r = float(np.corrcoef(x[ok], y[ok])[0, 1])
        if math.isfinite(r) and abs(r) >= threshold:
            out.append(name)
    return out


@dataclass
class ResponseModel:
    features: list[str]
    forest: object = None
    oob_mae: float = math.nan
    oob_r2: float = math.nan
    meta: dict = field(default_factory=dict)

    @classmethod
    def fit(cls, columns: dict[str, np.ndarray], y: np.ndarray, *, threshold: float = 0.3, seed: int = 0,
            trees: int = 200) -> "ResponseModel":
        from sklearn.ensemble import RandomForestRegressor  # lazy: scikit-learn only to train a model

        features = select_features(columns, y, threshold)
        if not features:
            raise ValueError(f"no sample column correlates with the response at |r| >= {threshold}")
        X = np.column_stack([np.nan_to_num(np.asarray(columns[f], dtype=float)) for f in features])
        y = np.asarray(y, dtype=float)
        forest = RandomForestRegressor(n_estimators=trees, oob_score=True, random_state=seed, n_jobs=1)
        forest.fit(X, y)
        oob = forest.oob_prediction_
        return cls(features, forest, float(np.mean(np.abs(oob - y))), float(forest.oob_score_),
                   {"samples": int(len(y)), "threshold": threshold, "seed": seed, "trees": trees})

    def predict(self, columns: dict[str, np.ndarray]) -> np.ndarray:
        X = np.column_stack([np.nan_to_num(np.asarray(columns[f], dtype=float)) for f in self.features])
        return self.forest.predict(X)

    def save(self, path: str | Path) -> None:
        with open(path, "wb") as f:
            pickle.dump({"features": self.features, "forest": self.forest, "oob_mae": self.oob_mae,
                         "oob_r2": self.oob_r2, "meta": self.meta}, f)

    @classmethod
    def load(cls, path: str | Path) -> "ResponseModel":
        with open(path, "rb") as f:
            d = pickle.load(f)  # noqa: S301 - a model file this tool wrote
        return cls(d["features"], d["forest"], d["oob_mae"], d["oob_r2"], d["meta"])


def forecast(series, q: int, steps: int) -> np.ndarray:
    """The next ``steps`` values of ``series`` by an AR(q) fitted to it (:func:`iolab.metrics.forecast.ar_forecast`)."""
    return ar_forecast(series, q, steps)
