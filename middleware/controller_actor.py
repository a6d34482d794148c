"""The storage load controller as a Ray actor: the Data Extractor and the decision (dheenadayalan2017).

The actor samples every volume every ``d`` wall seconds in its own thread: it
writes the benchmark unit with fsync and times it
(:func:`~iolab.middleware.volume_probe.benchmark_write`), reads the block
device's counters when there is one, and feeds the response time, in spec
seconds (wall / time_scale), and the sample's counters (writers, the volume's
byte and operation rates per spec second, in-flight I/O, the seconds of transfers
queued on the storage manager's link) to
:class:`iolab.middleware.policies.controller.response_model.ResponsePredictor` (the simulator's too),
and what it returns (the measured response, or the random forest's prediction
under ``controller.prediction: forest``) to the pure
:class:`~iolab.middleware.policies.controller.LoadController`; the forecast of
Eq. 9 is the spec's ``controller.forecast`` on that series
(:class:`iolab.middleware.policies.controller.forecast.ResponseForecaster`, the simulator's too).

The batch loop calls :meth:`LoadControllerActor.cycle` with the jobs' open
files and carries out the returned suspensions itself (the signals belong to
the process that launched the jobs).  If the actor dies, the loop resumes
every job it suspended.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from iolab.middleware.policies.controller.forecast import ResponseForecaster
from iolab.middleware.policies.controller.response_model import ResponsePredictor

from iolab.middleware.actor_handle import ActorHandle, call
from iolab.middleware.policies.controller import ControllerParams, JobUsage, LoadController, OpenFile
from iolab.middleware.volume_probe import benchmark_write, device_of, diskstats
from iolab.middleware.policies.guard import controller_policy
from iolab.middleware.policies.loader import PolicySource

__all__ = ["LoadControllerActor"]


def tier_response(tier: tuple[float, Any], p: float, k: int) -> float:
    """Spec seconds the benchmark unit of ``p`` spec bytes takes on a paced tier of ``tier = (rate, law)``
    carrying ``k`` jobs: one more stream, ``p (k + 1) / (rate f(k + 1))`` (the simulator's
    ``VolumeModel.response`` without its ``r0``, which the real write measures)."""
    rate, law = tier
    return p * (k + 1) / (rate * law.factor(k + 1))


class _ControllerActor:
    def __init__(self, config: dict):
        self.params = ControllerParams(**config["params"])  # spec seconds and spec bytes
        self.volumes: dict[str, str] = dict(config["volumes"])  # name -> directory
        self.time_scale = float(config["time_scale"])
        self.unit = int(config["unit_bytes"])  # real bytes of the benchmark unit
        self.d_wall = self.params.d * self.time_scale
        self.lc = LoadController(self.params, controller_policy(config.get("policy"), self.params.omega,
                                                                self.params.recent))
        self.forecaster = ResponseForecaster.for_params(config.get("forecast", "last"), int(config.get("ar_order", 3)),
                                                        self.params.t, self.params.d)
        self.bytes_scale = float(config.get("bytes_scale", 1.0))
        self.predictor = ResponsePredictor.from_args(config.get("prediction") or {})
        # volume -> (spec bytes/s, interference law) of its paced tier, for a tier probe (see _sample_loop)
        self.tiers: dict[str, tuple[float, Any]] = dict(config.get("tiers") or {})
        self.lock = threading.Lock()
        # wall, volume, response (spec s), writers, bytes rate (spec B/s), in flight, score, fed to the window,
        # operations rate (per spec s), queued (spec s)
        self.samples: list[list] = []
        self.moved: dict[str, tuple[float, int]] = {}  # volume -> (wall, bytes written so far) at its last sample
        self.devices = {v: device_of(d) for v, d in self.volumes.items()}
        # a volume without a block device (tmpfs, overlay): its byte counter is the storage manager's
        # the storage manager's handle, looked up here, before the sampler thread starts: a lookup from
        # that thread while this one unpickles a call's arguments can deadlock inside Ray
        self.manager = self._lookup(config.get("manager"))
        self.last: dict[str, float] = {}
        self.writers: dict[str, int] = {}  # jobs with files on the volume at the last cycle
        self.bytes_written = 0
        self.seconds = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample_loop, daemon=True)
        self.thread.start()

    def ping(self) -> float:
        return time.time()

    def _sample_loop(self) -> None:
        while not self.stop.is_set():
            t0 = time.time()
            for v, d in self.volumes.items():
                try:
                    r = benchmark_write(d, self.unit) / self.time_scale
                except OSError:
                    continue
                dev = self.devices[v]
                st = diskstats(dev) if dev else None
                mgr = self._manager_counters(v)
                if v in self.tiers:  # a tier probe: the emulated volume's response on the link's state now
                    r += tier_response(self.tiers[v], self.params.p, int(mgr["streams"]) if mgr else 0)
                # bytes and operations written: the block device's sectors and writes completed, else the
                # storage manager's booked bytes and bookings (tmpfs); the link's queued seconds: the manager's
                moved, ops = ((st["sectors_written"] * 512, st["writes"]) if st else
                              (mgr["bytes"], mgr["bookings"]) if mgr else (-1, -1))
                queued = mgr["queued"] / self.time_scale if mgr else math.nan
                bytes_rate = ops_rate = math.nan
                if moved >= 0:
                    if v in self.moved and t0 > self.moved[v][0]:
                        w, m, o = self.moved[v]
                        bytes_rate = (moved - m) / (t0 - w) / self.bytes_scale * self.time_scale
                        ops_rate = (ops - o) / (t0 - w) * self.time_scale
                    self.moved[v] = (t0, moved, ops)
                with self.lock:
                    writers = self.writers.get(v, 0)
                in_flight = float(st["in_flight"]) if st else math.nan
                counters = {"writers": writers, "bytes_rate": bytes_rate, "in_flight": in_flight,
                            "ops_rate": ops_rate, "queued": queued}
                # outside the lock: training the online forest takes seconds on a loaded machine, and a
                # cycle of the batch loop must not wait for it (past the loop's 30 s timeout)
                fed = self.predictor.feed(counters, r)
                with self.lock:
                    self.lc.observe(v, fed)
                    self.last[v] = fed
                    self.forecaster.add(v, fed)
                    self.bytes_written += self.unit
                    self.seconds += r * self.time_scale
                    self.samples.append([t0, v, r, writers, bytes_rate, in_flight, self.lc.score(v), fed,
                                         ops_rate, queued])
            self.stop.wait(max(0.0, self.d_wall - (time.time() - t0)))

    @staticmethod
    def _lookup(manager: list | None) -> Any:
        """The handle of the actor ``manager`` = (name, namespace) names, or None (none named, none found)."""
        if not manager:
            return None
        import ray  # lazy: only inside the actor, where Ray is up

        try:
            return ray.get_actor(manager[0], namespace=manager[1])
        except ValueError:
            return None

    def _manager_counters(self, volume: str) -> dict | None:
        """The storage manager's counters of ``volume``'s link (``StorageManager.counters``: real bytes,
        bookings, queued wall seconds), or None (no manager, no answer)."""
        if self.manager is None:
            return None
        try:
            import ray  # lazy: only inside the actor, where Ray is up

            return ray.get(self.manager.counters.remote(), timeout=5.0).get(volume)
        except Exception:  # noqa: BLE001 - a counter is a bonus; the response time is the sample
            return None

    def cycle(self, now: float, usages: list) -> dict:
        jobs = {u[0]: JobUsage(u[0], u[1], tuple(OpenFile(*f) for f in u[2])) for u in usages}
        with self.lock:
            self.writers = {v: sum(1 for u in jobs.values() if u.on(v)) for v in self.volumes}
            cy = self.lc.cycle(now, jobs, self.forecaster.forecasts())
        return {"actions": [[a.kind, a.job, a.volume, a.reason] for a in cy.actions], "sleep": cy.sleep,
                "loaded": cy.loaded}

    def forget(self, job: str) -> None:
        with self.lock:
            self.lc.forget(job)

    def records(self) -> dict:
        """The records of the whole run: the sampler stops first (its last sample finished)."""
        self.stop.set()
        self.thread.join(timeout=30.0)  # the predictor is the sampler's: let its last sample finish
        return self.so_far()

    def so_far(self) -> dict:
        """The records up to now, the sampler going on (a partial trace of a run still going)."""
        with self.lock:
            return {"samples": [list(s) for s in self.samples], "bytes_written": self.bytes_written,
                    "seconds": self.seconds, "devices": dict(self.devices), "prediction": self.predictor.stats()}

    def halt(self) -> None:
        self.stop.set()


class LoadControllerActor(ActorHandle):
    """Handle on a running controller actor."""

    @classmethod
    def create(cls, params: ControllerParams, volumes: dict[str, str], *, time_scale: float, unit_bytes: int,
               name: str, namespace: str, forecast: str = "last", ar_order: int = 3,
               manager: tuple[str, str] | None = None, bytes_scale: float = 1.0,
               prediction: dict | None = None, tiers: dict | None = None, policy=None) -> "LoadControllerActor":
        """``prediction``: :func:`iolab.middleware.policies.controller.response_model.predictor_args` of the
        spec; ``tiers``: volume -> (spec bytes/s, interference law) of the volumes whose probe is the tier's
        (``controller.model.probe: tier``; needs ``manager``); ``policy``: the spec's ``controller.policy`` (a
        user's is shipped with its file's text, :func:`~iolab.middleware.policies.io_guard.shippable`)."""
        config = {"params": {k: getattr(params, k) for k in params.__dataclass_fields__}, "volumes": volumes,
                  "time_scale": time_scale, "unit_bytes": int(unit_bytes), "forecast": forecast,
                  "ar_order": int(ar_order), "manager": list(manager) if manager else None,
                  "bytes_scale": float(bytes_scale), "prediction": dict(prediction or {}),
                  "tiers": dict(tiers or {}),
                  "policy": policy if isinstance(policy, (str, type(None))) else PolicySource.of(policy, "controller")}
        return cls._spawn(_ControllerActor, config, name, namespace)

    def cycle(self, now: float, usages: list, timeout: float = 30.0) -> dict[str, Any]:
        return call(self._h.cycle.remote(now, usages), timeout=timeout)

    def forget(self, job: str) -> None:
        self._h.forget.remote(job)

    def records(self) -> dict:
        return call(self._h.records.remote(), timeout=60)

    def so_far(self) -> dict:
        return call(self._h.so_far.remote(), timeout=60)
