"""dheenadayalan2017's storage load controller on simulated time.

The same :class:`~iolab.middleware.policies.controller.LoadController` a real
run drives; this module gives it what the simulator can measure:

- **Volumes** are the batch links (``lps``, ``hps``).  A volume under ``k``
  streams (the jobs reading or writing on it) delivers ``rate_eff(k) = rate x
  f(k)`` bytes per second in total, shared fairly (:class:`ContentionLink`), ``f``
  the tier's interference law (:mod:`iolab.middleware.policies.interference`,
  the one a real run's tier pacing uses): with no law it is the plain fair-share
  link; with a lossy one (e.g. ``{gamma, knee}``: ``f(k) = 1 / (1 + gamma *
  max(0, k - knee))``) a volume loses throughput as writers are added, the
  overload a filer shows and the controller relieves.
- **Response model** (the random forest's output in a real run): the time to
  write the benchmark unit ``p`` with ``k`` streams on the volume is
  ``r = r0 + p * (k + 1) / rate_eff(k + 1)`` (the unit is one more stream).
  It grows with the number of writers and with their rate's share of the link.
  The benchmark unit is not added as load in the simulator (its overhead is
  measured in real runs instead).
- **Spread** (``controller.model.spread``): quantiles of measured / model
  response from real runs (``iolab controller fit``); each sample multiplies
  the model's response by a draw from them (inverse CDF, linear between the
  quantiles; one generator seeded by the spec's seed), so a simulated volume
  has the real one's tail: single slow writes that fill the window.
- **Prediction** (``controller.prediction``): what the window is fed, the
  response itself or a random forest's prediction from the sample's counters
  (writers = streams, bytes_rate = the link's delivered rate, in_flight =
  streams): :class:`iolab.middleware.policies.controller.response_model.ResponsePredictor`, the real
  run's too.
- **Forecast** (Eq. 9): ``controller.forecast``: the last response
  (persistence, the default) or an AR(``ar_order``) fitted online to the
  volume's responses (:class:`iolab.middleware.policies.controller.forecast.ResponseForecaster`, the
  real run's too).
- **jobDetails**: a job's "files" on a volume are the bytes its steps moved
  there so far; they were "modified" now if its current step streams on the
  volume, at its current step's start if its previous step did, else long ago.

Every ``d`` seconds a sample is taken and fed to the window; a rescheduling
cycle runs at the first submission and then after each Psi (Eq. 9); the
batch driver suspends and resumes the jobs
(:meth:`iolab.middleware.policies.batch.driver.BatchDriver.act`, the real run's too).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from iolab.middleware.policies.batch.kernel import CONTROLLED, ENDED, SUSPENDED
from iolab.middleware.policies.controller import ControllerParams, JobUsage, LoadController, OpenFile
from iolab.middleware.policies.interference import InterferenceLaw

from iolab.middleware.policies.controller.forecast import ResponseForecaster
from iolab.middleware.policies.controller.response_model import ResponsePredictor, predictor_args
from iolab.middleware.policies.guard import controller_policy

from iolab.sim.fairshare import FairShareLink
from iolab.workloads.steps import COMPUTE

__all__ = ["ContentionLink", "SimController", "VolumeModel"]

_SAMPLE, _CYCLE = "sample", "cycle"
_SPREAD_STREAM = 0x5EED_0010  # the spread's generator: [spec seed, this], apart from the seed's other uses


@dataclass(frozen=True)
class VolumeModel:
    """A volume's throughput under ``k`` streams and its benchmark-unit response time."""

    rate: float  # bytes/s of the volume alone
    gamma: float = 0.0  # throughput lost per stream past the knee
    knee: int = 1  # streams the volume serves at full rate
    r0: float = 0.0  # seconds of fixed cost of a benchmark write (fsync, metadata)
    probe_rate: float | None = None  # bytes/s of the benchmark unit alone (None: ``rate``)
    spread: tuple[float, ...] = ()  # quantiles of response / model response at 0..1 (empty: none)
    law: InterferenceLaw | None = None  # the volume's interference law (None: {gamma, knee} above)

    def __post_init__(self):
        if self.law is None:
            object.__setattr__(self, "law", InterferenceLaw.parametric(self.gamma, self.knee))

    def ratio(self, u: float) -> float:
        """The spread's quantile at probability ``u`` (linear between the given quantiles); 1 without one."""
        q = self.spread
        if not q:
            return 1.0
        x = u * (len(q) - 1)
        i = min(int(x), len(q) - 2)
        return q[i] + (q[i + 1] - q[i]) * (x - i)

    def effective(self, k: int) -> float:
        return self.rate * self.law.factor(k)

    def response(self, k: int, p: float) -> float:
        rate = self.rate if self.probe_rate is None else self.probe_rate
        return self.r0 + p * (k + 1) / (rate * self.law.factor(k + 1))


class ContentionLink(FairShareLink):
    """A volume's fair-share link under its interference law (:class:`VolumeModel`)."""

    def __init__(self, model: VolumeModel):
        super().__init__(model.rate, model.law)
        self.model = model


class SimController:
    def __init__(self, params: ControllerParams, models: dict[str, VolumeModel],
                 forecaster: ResponseForecaster | None = None, predictor: ResponsePredictor | None = None,
                 seed: int = 0, policy=None):
        self.params = params
        self.models = models
        self.forecaster = forecaster or ResponseForecaster()
        self.predictor = predictor or ResponsePredictor()
        self.rng = np.random.default_rng([seed, _SPREAD_STREAM]) if any(m.spread for m in models.values()) else None
        self.lc = LoadController(params, controller_policy(policy, params.omega, params.recent))
        self.samples: list[tuple] = []  # the trace's samples rows (time, volume, response, writers, rate, in flight, score, predicted, ops, queued)
        self.actions: list[tuple] = []  # (time, job, suspend|resume, volume, reason)
        self.last: dict[str, float] = {}

    @classmethod
    def from_spec(cls, spec, laws: dict[str, InterferenceLaw]) -> "SimController":
        """The controller of ``spec``; ``laws``: each link's interference law
        (:func:`iolab.middleware.policies.interference.tier_laws`: the tier's, or the older controller.model
        {gamma, knee}), as the run put them on the engine's links."""
        c = spec.controller
        p = spec.platform
        models = {}
        for v in c.volumes:
            rate = p.lps.rate if v == "lps" else p.hps.rate
            m = c.model
            models[v] = (VolumeModel(rate, m.gamma, m.knee, m.r0, m.probe_rate, tuple(m.spread or ()), laws[v]) if m
                         else VolumeModel(rate, law=laws[v]))
        params = ControllerParams.from_spec(c)
        return cls(params, models, ResponseForecaster.for_params(c.forecast, c.ar_order, params.t, params.d),
                   ResponsePredictor.from_args(predictor_args(c, spec.seed)), spec.seed, c.policy)

    def prediction(self) -> dict:
        """What fed the response window, for the trace (docs/controller.md), as the controller actor reports it."""
        return self.predictor.stats()

    def install(self, engine, control: bool = True) -> None:
        """Replace the engine's volume links by contention links (the volumes' laws are the
        platform's: also when the controller is off) and attach the controller.  The model is
        the volume's delivered rate: ``platform.overheads.delivered`` does not scale it again."""
        for v, m in self.models.items():
            engine.links[v] = ContentionLink(m)
        if control:
            engine.controller = self

    # -- engine callbacks ----------------------------------------------------------------------
    def start(self, engine) -> None:
        first = min((s.queued.submit for s in engine.state), default=0.0)
        engine.push_control(first, _SAMPLE)
        engine.push_control(first, _CYCLE)

    def event(self, engine, kind: str, t: float) -> None:
        live = any(s.state not in ENDED for s in engine.state)
        if kind == _SAMPLE:
            for v, m in self.models.items():
                k = len(engine.links[v])
                r = m.response(k, self.params.p)
                if self.rng is not None and m.spread:
                    r *= m.ratio(float(self.rng.random()))
                rate = m.effective(k) if k else 0.0
                fed = self.predictor.feed({"writers": k, "bytes_rate": rate, "in_flight": k}, r)  # no ops, no queue
                self.lc.observe(v, fed)
                self.last[v] = fed
                self.forecaster.add(v, fed)
                self.samples.append((t, v, r, k, rate, float(k), self.lc.score(v), fed, math.nan, math.nan))
            if live:
                engine.push_control(t + self.params.d, _SAMPLE)
            return
        cy = self.lc.cycle(t, self.usages(engine, t), self.forecaster.forecasts())
        self.actions += engine.driver.act([(a.kind, a.job, a.volume, a.reason) for a in cy.actions], t)
        if live:
            engine.push_control(t + cy.sleep, _CYCLE)
        else:  # nothing should be left; never leave a job stopped
            engine.driver.release(t, "run ends", [a.job for a in self.lc.release_all()])

    def usages(self, engine, t: float) -> dict[str, JobUsage]:
        out = {}
        for s in engine.kernel.running.values():
            if s.state not in CONTROLLED or s.step < 0:
                continue
            files = []
            for v in self.models:
                moved = sum(st.amount for st in s.steps[:s.step] if st.link == v)
                cur = s.steps[s.step] if s.step < len(s.steps) else None
                mtime = -math.inf
                if cur is not None and cur.kind != COMPUTE and cur.link == v:
                    link = engine.links[v]
                    left = link.remaining_of(s.index, engine._paused.get(s.index, cur.amount))
                    moved += cur.amount - max(left, 0.0)
                    mtime = t if s.state != SUSPENDED else s.suspended_at
                elif s.step > 0 and s.steps[s.step - 1].link == v:
                    mtime = s.step_start
                if moved > 0:
                    files.append(OpenFile(f"{v}/{s.queued.id}", v, moved, mtime))
            out[s.queued.id] = JobUsage(s.queued.id, s.start, tuple(files))
        return out
