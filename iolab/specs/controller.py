"""The ``controller:`` section of a batch spec: dheenadayalan2017's storage load controller.

Present (and ``enabled``, the default once the section is written) it turns the
controller on; every parameter defaults to the paper's §5 values, in *spec*
units like the rest of a batch spec (seconds, bytes)::

    controller: {}                          # d = 10 s, r_threshold = 60 s, ws = 3 min (beta = 18),
                                            # alpha = 0.75, t = 3 min, p = 1 GB, omega = 4000 MB
    controller: {r_threshold: 90s, t: 5m, volumes: [hps]}

Scaling in a real run (``iolab emulate``): like every time and size of a batch
spec, the controller's times are multiplied by ``emulator.time_scale`` (wall
seconds per spec second) and its sizes (``p``, ``omega``) by
``emulator.bytes_scale`` (real bytes per spec byte).  With the defaults
``time_scale: 0.01, bytes_scale: 1e-4`` a sample every 10 spec seconds is one
every 0.1 wall second and the benchmark unit is 100 kB; pick a larger time
scale (e.g. 0.05-0.1) for a controller run, so that a sample (a real fsync)
fits in ``d``.  The simulator uses the spec values as they are.

``beta`` (window entries) defaults to Eq. 5, ``ws * 60 / d`` with ``ws`` in
minutes; given explicitly it must agree with ``ws`` and ``d`` or be the only
one given.
"""

from __future__ import annotations

import importlib.util
import math
from typing import Annotated, Literal, Union

from pydantic import BeforeValidator, Discriminator, Field, Tag, ValidationInfo, field_validator, model_validator

from iolab import forest as forest_file
from iolab.units import parse_duration, parse_size
from iolab.specs.base import StrictModel, raise_if, resolve_input
from iolab.specs.policy_ref import BUILTIN, USER, PolicyRef, builtin_or_user, parse_policy

_dur = BeforeValidator(lambda v: parse_duration(v) if isinstance(v, str) else v)
_size = BeforeValidator(lambda v: parse_size(v) if isinstance(v, str) else v)
PosSeconds = Annotated[float, _dur, Field(gt=0, allow_inf_nan=False)]
PosBytes = Annotated[float, _size, Field(gt=0, allow_inf_nan=False)]
Bytes = Annotated[float, _size, Field(ge=0, allow_inf_nan=False)]
VOLUMES = ("lps", "hps")
FEATURES = ("writers", "bytes_rate", "in_flight", "ops_rate", "queued")  # samples columns a model may use (§4.2)


class VolumeModelSpec(StrictModel):
    """The simulator's volume under contention (``iolab.sim.batch.load_controller.VolumeModel``): the
    benchmark unit's response ``r0 + p * (k + 1) / (probe_rate * f(k + 1))`` (``probe_rate`` defaults
    to the tier's rate, ``f`` is the volume's interference law).  Real runs measure instead;
    ``iolab controller fit`` fits it to them.

    ``gamma``/``knee`` are the older spelling of the volume's law: a spec that gives them (and no
    ``platform.<tier>.interference``) has ``interference: {gamma, knee}`` on each watched volume, in
    both runtimes (it was the simulator's alone).  Write the law on the tier instead."""

    gamma: float = Field(0.0, ge=0, le=100, allow_inf_nan=False, description="throughput lost per stream past knee")
    knee: int = Field(1, ge=1, le=100_000, description="streams served at the full rate")
    r0: float = Field(0.0, ge=0, allow_inf_nan=False, description="fixed seconds of a benchmark write")
    probe_rate: float | None = Field(None, gt=0, allow_inf_nan=False,
                                     description="bytes/s the benchmark unit is written at alone (default: the "
                                                 "tier's rate; `iolab controller fit` measures it)")
    probe: Literal["disk", "tier"] = Field(
        "disk", description="what a real run's benchmark unit measures: disk (the unit written unpaced with fsync "
                            "to the volume's directory: the real disk's response) or tier (that measured write "
                            "plus p (k + 1) / (probe_rate f(k + 1)) spec seconds, k the jobs the tier's paced "
                            "link carries at that instant: the response of the emulated volume, the simulator's "
                            "model on the real link's state)")
    spread: list[float] | None = Field(None, min_length=2, max_length=1001,
                                       description="the response's tail: quantiles of measured response / model "
                                                   "response at evenly spaced probabilities 0..1 (non-decreasing, "
                                                   "> 0); each simulated sample multiplies the model's response "
                                                   "by a draw from them (seeded by the spec's seed). `iolab "
                                                   "controller fit` measures them; absent: no spread")

    @field_validator("spread")
    @classmethod
    def _spread(cls, v: list[float] | None) -> list[float] | None:
        if v is None:
            return v
        for i, x in enumerate(v):
            if not (math.isfinite(x) and x > 0):
                raise ValueError(f"spread[{i}] = {x!r}: each quantile must be a finite ratio > 0")
            if i and x < v[i - 1]:
                raise ValueError(f"spread[{i}] = {x:g} is below spread[{i - 1}] = {v[i - 1]:g}: quantiles "
                                 "never decrease")
        return v


class ControllerSpec(StrictModel):
    """dheenadayalan2017 §5's parameters (spec seconds and bytes)."""

    enabled: bool = True
    d: PosSeconds = Field(10.0, description="seconds between two samples of a volume (the Data Extractor)")
    r_threshold: PosSeconds = Field(60.0, description="benchmark-unit write time above which a volume is loaded")
    ws: PosSeconds = Field(180.0, description="the window's span (the paper's ws = 3 min)")
    beta: int | None = Field(None, ge=1, le=100_000, description="window entries; default ws / d (Eq. 5)")
    alpha: float = Field(0.75, gt=0, le=1, description="share of high entries that makes a volume loaded (Eq. 8)")
    t: PosSeconds = Field(180.0, description="forecast horizon and the long sleep of Eq. 9")
    short_sleep: PosSeconds = Field(60.0, description="sleep when no forecast is high (Eq. 9's 1 min)")
    p: PosBytes = Field(1e9, description="benchmark unit written (with fsync) to each volume every d")
    omega: Bytes = Field(4000e6, description="jobs whose open files on the volume total less are left alone")
    recent: PosSeconds = Field(60.0, description="jobs whose files did not change for this long are left alone")
    volumes: list[str] = Field(default_factory=lambda: list(VOLUMES), min_length=1,
                               description="the tiers watched (lps, hps)")
    forecast: Literal["last", "ar"] = Field("last", description="the forecast of Eq. 9: the last response "
                                                               "(persistence) or an AR(ar_order) fitted online")
    ar_order: int = Field(3, ge=1, le=64, description="q of the AR(q) forecast")
    correlation_threshold: float = Field(0.3, ge=0, le=1,
                                         description="|Pearson r| with the response a feature needs (§4.2)")

    prediction: Literal["measured", "forest"] = Field(
        "measured", description="what feeds the window (Eq. 8) every d: the measured benchmark response, or a "
                                "random forest's prediction from the volume's counters (§4.2)")
    model_file: str | None = Field(None, min_length=1,
                                   description="prediction: forest: a model file (.npz of arrays) written by "
                                               "`iolab controller train` (relative to the spec's folder); absent: "
                                               "trained online")
    warmup: int = Field(30, ge=5, le=1_000_000, description="prediction: forest without model_file: samples "
                                                            "(all volumes) measured before the forest is trained")
    retrain: int = Field(0, ge=0, le=1_000_000, description="prediction: forest online: retrain every this many "
                                                             "further samples (0: once)")
    policy: Annotated[Union[Annotated[Literal["newest-first"], Tag(BUILTIN)], Annotated[PolicyRef, Tag(USER)]],
                      Discriminator(builtin_or_user)] = Field(
        "newest-first", description="who decides the suspensions at a cycle: newest-first (the paper's §4.3 job state "
                                    "handler) or your own (kind: python; docs/policies.md)")
    model: VolumeModelSpec | None = Field(None, description="the simulated benchmark unit's response (r0, "
                                                            "probe_rate, spread); its gamma/knee are the watched "
                                                            "volumes' interference law (platform.<tier>."
                                                            "interference: {gamma, knee}), in both runtimes")

    @field_validator("policy", mode="before")
    @classmethod
    def _policy(cls, v: object) -> object:
        v = parse_policy(v, "controller", ("newest-first",))
        return v.strip().lower().replace("_", "-") if isinstance(v, str) else v

    @field_validator("model_file")
    @classmethod
    def _model_file(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return v
        path = resolve_input(v, info, "model file")
        try:  # arrays only (iolab/forest.py): reading one runs no code, so a spec check may read it whole
            forest_file.load(path, FEATURES)
        except forest_file.ModelFileError as exc:
            raise ValueError(str(exc)) from None
        return path

    @model_validator(mode="after")
    def _check(self) -> "ControllerSpec":
        problems = []
        for i, v in enumerate(self.volumes):
            if v not in VOLUMES:
                problems.append((f"volumes[{i}]", f"unknown volume {v!r}; one of {', '.join(VOLUMES)}"))
        if len(set(self.volumes)) != len(self.volumes):
            problems.append(("volumes", "a volume is listed twice"))
        if self.forecast == "ar" and importlib.util.find_spec("statsmodels") is None:
            problems.append(("forecast", "ar needs statsmodels, not installed (pip install 'iolab[controller]')"))
        if self.prediction == "forest" and self.model_file is None and importlib.util.find_spec("sklearn") is None:
            problems.append(("prediction", "forest trained online needs scikit-learn, not installed (pip install "
                                           "'iolab[controller]'); a model_file needs none"))
        # a value other than its default counts as given (a dumped spec, holding every field, reads back)
        online = [n for n in ("warmup", "retrain") if getattr(self, n) != type(self).model_fields[n].default]
        if self.prediction != "forest":
            for name in (["model_file"] if self.model_file is not None else []) + online:
                problems.append((name, "only with prediction: forest"))
        elif self.model_file is not None and online:
            problems.append((online[0], "the forest comes from model_file: nothing is trained online"))
        if self.beta is not None and "ws" in self.model_fields_set and \
                self.beta != max(1, round(self.ws / self.d)):
            problems.append(("beta", f"beta = {self.beta} disagrees with ws / d = {self.ws:g} / {self.d:g} "
                                     "(Eq. 5); give one of them"))
        if self.ws < self.d:
            problems.append(("ws", f"the window ({self.ws:g} s) is shorter than one sample interval d ({self.d:g} s)"))
        raise_if(problems)
        if self.beta is not None and "ws" not in self.model_fields_set:  # beta alone: the window spans beta x d,
            self.__dict__["ws"] = self.beta * self.d  # so a dumped spec (ws and beta both written) reads back
        return self


__all__ = ["FEATURES", "VOLUMES", "ControllerSpec", "VolumeModelSpec"]
