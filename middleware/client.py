"""The app-side proxy: ``--coordinator iolab.middleware.client:coordinator``.

Each rank of an app builds one :class:`RayCoordinator` (see
:mod:`iolab.apps.coordination` for the contract).  It joins the running Ray with
``ray.init(address=..., namespace=...)`` from its config, finds the arbiter
actor by name and waits at the app's *start gate* until the arbiter says the
app may start (its release, or its pack's turn): launch time is never part of
the measured run.  Then:

- rank 0: ``begin_io`` blocks in the actor until the policy grants the phase;
  ``end_io`` releases it; ``report`` records phases (fire-and-forget, in
  order); ``finish`` ends the app;
- every rank: ``throttle`` books bytes in its I/O node's token bucket and
  sleeps until they are paid for; these calls are also the app's heartbeats
  (with the cap off, a heartbeat is sent at most every ``lease / 4`` seconds).

Config keys: ``address`` (GCS ``host:port``), ``namespace``, ``actor`` (name),
``app`` (id).  Every process of a run must share the user, ``HOME`` and
``RAY_AUTH_MODE`` of the process that started Ray (Ray's token auth).
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Callable

from iolab.apps.coordination import Grant

from iolab.middleware.actor_handle import call

REQUIRED = ("address", "namespace", "actor", "app")


def connect(address: str, namespace: str, timeout: float = 10.0) -> None:
    """Join the Ray at ``address`` (GCS ``host:port``), or raise ``RuntimeError`` saying why."""
    import ray  # lazy: an app rank loads Ray only when it joins the run's Ray

    if ray.is_initialized():
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise RuntimeError(f"coordinator config: address must be host:port of Ray's GCS, got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise RuntimeError(f"no Ray listens at {address} ({exc}); is the run's Ray still up?") from None
    try:
        ray.init(address=address, namespace=namespace, log_to_driver=False, logging_level="ERROR",
                 configure_logging=False)
    except Exception as exc:
        raise RuntimeError(
            f"cannot join Ray at {address}: {type(exc).__name__}: {exc}. Every process of a run must have the "
            f"same user, HOME ({os.environ.get('HOME')}) and RAY_AUTH_MODE as the one that started Ray "
            "(Ray's auth token lives under ~/.ray)") from None


class ActorProxy:
    """What every rank-side proxy of a middleware actor shares: check the config, join
    the run's Ray, find the actor by name, send phase reports (fire-and-forget, in
    order), say how the app ended, and leave Ray if this proxy joined it.

    ``who`` is the app's (or job's) id in the actor's calls; ``what`` names the actor
    in error messages; ``module`` names the factory's module in error messages.
    """

    required: tuple[str, ...] = ("address", "namespace", "actor")
    what = "actor"
    module = "middleware"

    def __init__(self, config: dict[str, Any], who_key: str):
        import ray  # lazy: an app rank loads Ray only when it joins the run's Ray

        missing = [k for k in self.required if not config.get(k)]
        if missing:
            raise RuntimeError(f"{self.module}: coordinator config lacks {', '.join(missing)}")
        self.who = str(config[who_key])
        self._call = call
        self._joined = not ray.is_initialized()
        connect(str(config["address"]), str(config["namespace"]))
        try:
            self.actor = ray.get_actor(config["actor"], namespace=config["namespace"])
        except ValueError:
            raise RuntimeError(f"no {self.what} {config['actor']!r} in Ray namespace "
                               f"{config['namespace']!r} at {config['address']}") from None
        self._reports: list[Any] = []
        _warm_up()  # before any gate: first-use costs must not land inside a measured phase

    _served_at = 0.0  # wall time: the end of this writer's last booking (its bytes are carried until then)

    def _pace(self, book: Callable[[int], Any], nbytes: int) -> None:
        """Move ``nbytes`` inside the interval booked for them (``book(n)``: the actor's call, answering
        ``(start, end)`` on its clock): book them now, and wait for their interval to start, which is no
        earlier than the end of this writer's previous one (the link books one interval after another).
        The caller then writes them while the link carries them, and books the next ones while it still
        does: a writer's own write time, its CPU share and the call's latency overlap the bookings instead
        of adding to them (booking only after each interval ended cost a busy machine's phases 20 %).
        ``nbytes=0`` is :meth:`_carried` (a file's end: the phase is never shorter than its bytes at the
        rate)."""
        if nbytes <= 0:
            return self._carried()
        start, self._served_at = self._call(book(int(nbytes)))
        delay = start - time.time()
        if delay > 0:
            time.sleep(delay)

    def _carried(self) -> None:
        """Wait until the link has carried this writer's last booked bytes."""
        delay = self._served_at - time.time()
        if delay > 0:
            time.sleep(delay)

    def report(self, phase: int, kind: str, start: float, end: float, nbytes: int) -> None:
        self._reports.append(self.actor.report.remote(self.who, int(phase), kind, float(start), float(end),
                                                      int(nbytes)))
        if len(self._reports) > 64:  # surface errors early, keep the list short
            self._call(self._reports.pop(0))

    def finish(self, ok: bool, message: str = "") -> None:
        for ref in self._reports:
            try:
                self._call(ref)
            except Exception:
                pass
        self._reports.clear()
        self._call(self.actor.finish.remote(self.who, bool(ok), str(message)))

    def close(self) -> None:
        import ray  # lazy: an app rank loads Ray only when it joins the run's Ray

        if self._joined and ray.is_initialized():
            ray.shutdown()


class RayCoordinator(ActorProxy):
    """One rank's proxy to the arbiter actor (the :class:`iolab.apps.coordination.IOCoordinator` methods)."""

    required = REQUIRED
    what = "arbiter actor"
    module = "iolab.middleware.client"

    def __init__(self, config: dict[str, Any], rank: int, size: int):
        super().__init__(config, "app")
        self.app = self.who
        self.rank, self.size = rank, size
        self._last_beat = 0.0
        info = self._call(self.actor.arrive.remote(self.app, rank, size))  # the start gate
        self.lease = float(info["lease"])
        self.capped = info.get("cap") is not None
        self.started = float(info["start"])

    def begin_io(self, phase: int, kind: str, nbytes: int) -> Grant:
        g = self._call(self.actor.request.remote(self.app, int(phase), kind, int(nbytes)))
        self._last_beat = time.time()
        return Grant(g["directory"], float(g["granted_at"]), float(g["lease"]))

    def end_io(self, phase: int, nbytes: int) -> None:
        self._carried()  # the grant ends once the link has carried this rank's last bytes
        self._call(self.actor.release.remote(self.app, int(phase)))

    def throttle(self, nbytes: int) -> None:
        t = time.time()
        if self.capped:  # inside their booked interval (the actor's clock: same host, or NTP under Slurm)
            self._pace(lambda n: self.actor.book.remote(self.app, n), nbytes)
        elif t - self._last_beat > self.lease / 4:
            self._call(self.actor.heartbeat.remote(self.app))
            self._last_beat = t


def _warm_up() -> None:
    """Import h5py now, for the checkpoint writer (it takes ~1 s to import on a loaded machine; the
    writer imports it on first use, which would otherwise stretch the first granted I/O phase)."""
    try:
        import h5py  # noqa: F401  # lazy: h5py, loaded here on purpose before the first grant
    except ImportError:
        pass


def coordinator(config: dict[str, Any], rank: int, size: int) -> RayCoordinator:
    """Factory named on the app's command line: ``--coordinator iolab.middleware.client:coordinator``."""
    return RayCoordinator(config, rank, size)
