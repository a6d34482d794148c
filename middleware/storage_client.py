"""The job-side proxy of a batch run: ``--coordinator iolab.middleware.storage_client:coordinator``.

A batch job (``iolab.apps.jacobi`` launched by :mod:`iolab.emulator.batch.run`) already
holds its nodes and its tier directory when it starts, so nothing is
arbitrated: ``begin_io`` grants at once into the job's directory (on LPS or
HPS).  What the storage manager still does:

- every rank: ``throttle`` books its bytes in the tier's token bucket
  (``lps`` or ``hps``) under the job's name and sleeps until they are paid for,
  so every job on a tier shares the tier's rate (R_lps, R_hps; times ``f(k)``
  with the tier's interference law, ``k`` the jobs transferring);
- rank 0: ``report`` records phases (fire-and-forget), ``finish`` says how
  the job ended;
- on HPS, the quota: every rank ``reserve``-s a file's bytes in the job's
  allocation before writing it (refused with ``QuotaExceeded``: the job fails,
  the manager logs why) and ``settle``-s them once the file is in place;
  rank 0 asks ``room`` before a write phase (the app then drops data the new
  checkpoint supersedes if it would not fit beside it).  On LPS (unlimited)
  there is no quota: ``reserve`` and ``settle`` do nothing, ``room`` is
  unbounded.

Config keys: ``address`` (GCS ``host:port``), ``namespace``, ``actor``,
``job``, ``directory``, ``link`` (``lps`` or ``hps``), ``capped`` (bool).
"""

from __future__ import annotations

import time
from typing import Any

from iolab.apps.coordination import Grant

from iolab.middleware.client import ActorProxy

REQUIRED = ("address", "namespace", "actor", "job", "directory", "link")


class StorageCoordinator(ActorProxy):
    required = REQUIRED
    what = "storage manager actor"
    module = "iolab.middleware.storage_client"

    def __init__(self, config: dict[str, Any], rank: int, size: int):
        if config.get("link") and config["link"] not in ("lps", "hps"):  # missing: the base says so
            raise RuntimeError(f"iolab.middleware.storage_client: link must be lps or hps, got {config.get('link')!r}")
        super().__init__(config, "job")
        self.job, self.directory, self.link = self.who, str(config["directory"]), str(config["link"])
        self.capped = bool(config.get("capped", True))
        self.rank = rank

    def begin_io(self, phase: int, kind: str, nbytes: int) -> Grant:
        return Grant(self.directory, time.time())

    def end_io(self, phase: int, nbytes: int) -> None:
        pass

    # -- the quota (HPS only) -------------------------------------------------------------
    def reserve(self, path: str, nbytes: int, paths: list[str]) -> None:
        if self.link == "hps":
            self._call(self.actor.reserve.remote(self.job, str(path), int(nbytes), [str(p) for p in paths]))

    def settle(self, path: str) -> None:
        if self.link == "hps":
            self._call(self.actor.settle.remote(self.job, str(path)))

    def room(self) -> float:
        return self._call(self.actor.room.remote(self.job)) if self.link == "hps" else float("inf")

    def throttle(self, nbytes: int) -> None:
        if not self.capped:
            return
        # inside their booked interval: the actor's clock (same host, or NTP under Slurm); the job is the
        # stream, and the booking counts from when this rank asked
        self._pace(lambda n: self.actor.book.remote(self.link, n, self.job, time.time()), nbytes)


def coordinator(config: dict[str, Any], rank: int, size: int) -> StorageCoordinator:
    return StorageCoordinator(config, rank, size)
