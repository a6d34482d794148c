"""dheenadayalan2017 §4.2: predict a volume's response time and forecast it.

- :func:`select_features`: the sample columns whose |Pearson r| with the
  response reaches ``correlation_threshold`` (constant columns never do);
- :class:`ResponseModel`: a random forest regressor on those features, with its
  out-of-bag error (MAE and R² of the OOB predictions); scikit-learn fits it, and
  it is kept, saved and loaded as plain arrays (:mod:`iolab.forest`: a model file
  cannot run code, and predicting needs no scikit-learn);
- :func:`forecast`: an AR(q) model (statsmodels ``AutoReg``) on a response
  series, the next ``steps`` values;
- :func:`train_and_test`: a model fitted on the first samples of kept traces and measured
  on the rest (``iolab controller train``);
- :class:`ResponsePredictor`: what a runtime feeds the window of Eq. 8 every
  ``d``: the measured benchmark response (``prediction: measured``) or the
  forest's prediction from the volume's counters (``prediction: forest``),
  with a model file or a forest trained online after a warm-up.  The
  simulator's controller and the real run's controller actor hold one each.

``iolab controller train TRACES... -o MODEL`` fits a model on the ``samples``
tables of kept traces.  The pure controller policy never sees this module:
the runtimes feed it the model's predictions.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from iolab import forest as forest_file
from iolab.atomic import atomic_path
from iolab.specs.controller import FEATURES

from iolab.middleware.policies.controller.forecast import ar_forecast

__all__ = ["FEATURES", "PREDICTIONS", "ResponseModel", "ResponsePredictor", "forecast", "predictor_args",
           "select_features", "train_and_test"]

PREDICTIONS = ("measured", "forest")  # what feeds the window: controller.prediction


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
    forest: forest_file.Forest | None = None
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
        return cls.from_sklearn(features, forest, {"samples": int(len(y)), "threshold": threshold, "seed": seed,
                                                   "trees": trees}, y)

    @classmethod
    def from_sklearn(cls, features: list[str], forest, meta: dict, y: np.ndarray | None = None) -> "ResponseModel":
        """A fitted ``RandomForestRegressor`` on ``features``, kept as arrays; its OOB error against ``y``
        (the training responses) when the forest has OOB predictions."""
        mae = r2 = math.nan
        if y is not None and hasattr(forest, "oob_prediction_"):
            mae, r2 = float(np.mean(np.abs(forest.oob_prediction_ - y))), float(forest.oob_score_)
        return cls(list(features), forest_file.from_sklearn(forest, features), mae, r2, dict(meta))

    def predict(self, columns: dict[str, np.ndarray]) -> np.ndarray:
        X = np.column_stack([np.nan_to_num(np.asarray(columns[f], dtype=float)) for f in self.features])
        return self.forest.predict(X)

    def save(self, path: str | Path) -> None:
        """Write the model file (:mod:`iolab.forest`), atomically."""
        self.forest.meta = {"oob_mae": self.oob_mae, "oob_r2": self.oob_r2, **self.meta}
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            forest_file.save(self.forest, f)

    @classmethod
    def load(cls, path: str | Path) -> "ResponseModel":
        """Read a model file; :class:`iolab.forest.ModelFileError` (a ValueError) says why one is refused."""
        f = forest_file.load(path, FEATURES)
        meta = dict(f.meta)
        mae, r2 = meta.pop("oob_mae", math.nan), meta.pop("oob_r2", math.nan)
        return cls(f.features, f, float(mae), float(r2), meta)


def train_and_test(tables, *, threshold: float = 0.3, test_share: float = 0.25, seed: int = 0,
                   trees: int = 200) -> tuple[ResponseModel, dict]:
    """Fit a :class:`ResponseModel` on the first ``1 - test_share`` of each ``samples`` column dict in
    ``tables`` (``{column: array}``, one per trace, in time order) and measure it on the rest: the
    model and ``{samples, held_out, features, oob_mae, oob_r2, test_mae, test_r2}``.  ValueError
    when no column correlates with the response at ``threshold``."""
    if not 0 <= test_share < 1:
        raise ValueError(f"the held-out share must be in [0, 1), got {test_share}")
    train = {f: [] for f in FEATURES}
    test = {f: [] for f in FEATURES}
    y_train, y_test = [], []
    for cols in tables:
        y = np.asarray(cols["response"], dtype=float)
        cut = len(y) - int(round(len(y) * test_share))
        for f in FEATURES:
            col = np.asarray(cols[f], dtype=float)
            train[f].extend(col[:cut])
            test[f].extend(col[cut:])
        y_train.extend(y[:cut])
        y_test.extend(y[cut:])
    model = ResponseModel.fit({f: np.asarray(v) for f, v in train.items()}, np.asarray(y_train), threshold=threshold,
                              seed=seed, trees=trees)
    stats = {"samples": len(y_train), "held_out": len(y_test), "features": model.features,
             "oob_mae": model.oob_mae, "oob_r2": model.oob_r2, "test_mae": math.nan, "test_r2": math.nan}
    if y_test:
        pred = model.predict({f: np.asarray(v) for f, v in test.items()})
        yt = np.asarray(y_test)
        stats["test_mae"] = float(np.mean(np.abs(pred - yt)))
        var = float(np.sum((yt - yt.mean()) ** 2))
        stats["test_r2"] = 1 - float(np.sum((pred - yt) ** 2)) / var if var > 0 else math.nan
    model.meta.update(stats)
    return model, stats


def forecast(series, q: int, steps: int) -> np.ndarray:
    """The next ``steps`` values of ``series`` by an AR(q) fitted to it (:func:`iolab.middleware.policies.controller.forecast.ar_forecast`)."""
    return ar_forecast(series, q, steps)


class ResponsePredictor:
    """The response time a runtime feeds a volume's window (Eq. 8) at each sample.

    ``kind="measured"``: the benchmark unit's measured response itself.
    ``kind="forest"``: a random forest's prediction from the sample's counters
    (:data:`FEATURES`): ``model`` (a :class:`ResponseModel`, e.g. loaded from
    ``iolab controller train``'s file), or, without one, a forest trained on this
    run's own samples once ``warmup`` of them are in (all volumes pooled), and again
    every ``retrain`` samples after that (0: once).  Until a forest exists the
    measured response is fed; if no counter correlates with the response at
    ``threshold`` the forest cannot be trained, the measured response goes on being
    fed, and :meth:`stats` says why.  Predictions are memoised on the exact
    counters (a simulated volume's counters repeat), so a prediction costs one
    forest evaluation per distinct sample.  Deterministic: the forest's seed is
    ``seed``.
    """

    def __init__(self, kind: str = "measured", *, model: ResponseModel | None = None, warmup: int = 30,
                 retrain: int = 0, threshold: float = 0.3, seed: int = 0, trees: int = 100):
        if kind not in PREDICTIONS:
            raise ValueError(f"prediction must be one of {', '.join(PREDICTIONS)}, got {kind!r}")
        self.kind, self.model, self.warmup, self.retrain = kind, model, int(warmup), int(retrain)
        self.threshold, self.seed, self.trees = threshold, int(seed), int(trees)
        self.online = model is None
        self.model_sha256 = ""  # of the model file the forest came from (from_args)
        self.x: list[tuple[float, ...]] = []  # every sample's counters (FEATURES order)
        self.y: list[float] = []  # and its measured response
        self.trained_at: list[int] = []  # sample counts at which the online forest was (re)fitted
        self.error = ""  # why no forest could be trained
        self.seen = 0  # samples fed
        self.fed_predicted = 0
        self._memo: dict[tuple, float] = {}
        self._abs_err = 0.0  # |predicted - measured| over the predicted samples
        if kind == "forest" and model is None:
            import sklearn.ensemble  # noqa: F401  # lazy: only a forest needs it; now, not inside a sampling cycle

    @classmethod
    def from_args(cls, args: dict) -> "ResponsePredictor":
        """From :func:`predictor_args` (``model_file``: a model of ``iolab controller train``, loaded here)."""
        args = dict(args)
        path = args.pop("model_file", None)
        p = cls(args.pop("kind", "measured"), model=ResponseModel.load(path) if path else None, **args)
        if path:
            with open(path, "rb") as f:
                p.model_sha256 = hashlib.sha256(f.read()).hexdigest()
        return p

    @staticmethod
    def counters(sample: dict) -> tuple[float, ...]:
        out = []
        for f in FEATURES:
            v = float(sample.get(f, math.nan))
            out.append(v if math.isfinite(v) else 0.0)  # as ResponseModel: NaN counts as 0
        return tuple(out)

    def feed(self, sample: dict, measured: float) -> float:
        """The value to feed the window for one sample (its counters ``sample``, its ``measured`` response)."""
        self.seen += 1
        if self.kind == "measured" or not math.isfinite(measured):
            return measured
        x = self.counters(sample)
        since = len(self.y) - self.trained_at[-1] if self.trained_at else -1
        if self.online and (len(self.y) == self.warmup or (self.retrain and since >= self.retrain)
                            or (self.model is None and since >= self.warmup)):  # a failed fit: try again later
            self._fit()
        value = measured
        if self.model is not None:
            value = self._memo.get(x)
            if value is None:
                cols = {f: np.array([x[i]]) for i, f in enumerate(FEATURES)}
                value = self._memo[x] = max(0.0, float(self.model.predict(cols)[0]))
            self.fed_predicted += 1
            self._abs_err += abs(value - measured)
        self.x.append(x)
        self.y.append(float(measured))
        return value

    def _fit(self) -> None:
        cols = {f: np.array([x[i] for x in self.x]) for i, f in enumerate(FEATURES)}
        self.trained_at.append(len(self.y))
        try:
            self.model = ResponseModel.fit(cols, np.array(self.y), threshold=self.threshold, seed=self.seed,
                                           trees=self.trees)
            self.error = ""
        except ValueError as exc:  # no counter explains the response (yet): keep feeding the measurement
            self.model, self.error = None, str(exc)
        self._memo.clear()

    def stats(self) -> dict:
        """What fed the window: for the trace's attributes and the closing reports."""
        m = self.model
        return {"prediction": self.kind, "online": self.online if self.kind == "forest" else False,
                "samples": self.seen, "fed_predicted": self.fed_predicted,
                "trained_at": list(self.trained_at), "features": list(m.features) if m is not None else [],
                "oob_mae": m.oob_mae if m is not None else math.nan,
                "oob_r2": m.oob_r2 if m is not None else math.nan,
                "mae_vs_measured": self._abs_err / self.fed_predicted if self.fed_predicted else math.nan,
                "model_sha256": self.model_sha256, "error": self.error}



def predictor_args(c, seed: int) -> dict:
    """:meth:`ResponsePredictor.from_args`'s JSON-able arguments for a ``controller:`` section
    (``iolab.specs.controller.ControllerSpec``): what the simulator builds in place and the real
    run's controller actor builds in its own process."""
    if c.prediction != "forest":
        return {"kind": "measured"}
    if c.model_file:
        return {"kind": "forest", "model_file": c.model_file}
    return {"kind": "forest", "warmup": c.warmup, "retrain": c.retrain, "threshold": c.correlation_threshold,
            "seed": seed}
