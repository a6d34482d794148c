"""The job-side proxy of a batch run: ``--coordinator middleware.storage_client:coordinator``.

A batch job (``apps.jacobi`` launched by :mod:`emulator.batch_run`) already
holds its nodes and its tier directory when it starts, so nothing is
arbitrated: ``begin_io`` grants at once into the job's directory (on LPS or
HPS).  What the storage manager still does:

- every rank: ``throttle`` books its bytes in the tier's token bucket
  (``lps`` or ``hps``) and sleeps until they are paid for, so every job on a
  tier shares the tier's rate (R_lps, R_hps);
- rank 0: ``report`` records phases (fire-and-forget), ``finish`` says how
  the job ended.

Config keys: ``address`` (GCS ``host:port``), ``namespace``, ``actor``,
``job``, ``directory``, ``link`` (``lps`` or ``hps``), ``capped`` (bool).
"""

from __future__ import annotations

import time
from typing import Any

from apps.coordination import Grant

REQUIRED = ("address", "namespace", "actor", "job", "directory", "link")


class StorageCoordinator:
    def __init__(self, config: dict[str, Any], rank: int, size: int):
        import ray

        from .arbiter import call
        from .client import _warm_up, connect

        missing = [k for k in REQUIRED if not config.get(k)]
        if missing:
            raise RuntimeError(f"middleware.storage_client: coordinator config lacks {', '.join(missing)}")
        if config["link"] not in ("lps", "hps"):
            raise RuntimeError(f"middleware.storage_client: link must be lps or hps, got {config['link']!r}")
        self.job, self.directory, self.link = str(config["job"]), str(config["directory"]), str(config["link"])
        self.capped = bool(config.get("capped", True))
        self.rank = rank
        self._call = call
        self._joined = not ray.is_initialized()
        connect(str(config["address"]), str(config["namespace"]))
        try:
            self.actor = ray.get_actor(config["actor"], namespace=config["namespace"])
        except ValueError:
            raise RuntimeError(f"no storage manager actor {config['actor']!r} in namespace "
                               f"{config['namespace']!r}") from None
        self._reports: list[Any] = []
        _warm_up()

    def begin_io(self, phase: int, kind: str, nbytes: int) -> Grant:
        return Grant(self.directory, time.time())

    def end_io(self, phase: int, nbytes: int) -> None:
        pass

    def report(self, phase: int, kind: str, start: float, end: float, nbytes: int) -> None:
        self._reports.append(self.actor.report.remote(self.job, int(phase), kind, float(start), float(end),
                                                      int(nbytes)))
        if len(self._reports) > 64:
            self._call(self._reports.pop(0))

    def throttle(self, nbytes: int) -> None:
        if not self.capped:
            return
        t = time.time()
        wait = self._call(self.actor.acquire.remote(self.link, int(nbytes)))
        delay = t + wait - time.time()
        if delay > 0:
            time.sleep(delay)

    def finish(self, ok: bool, message: str = "") -> None:
        for ref in self._reports:
            try:
                self._call(ref)
            except Exception:
                pass
        self._reports.clear()
        self._call(self.actor.finish.remote(self.job, bool(ok), str(message)))

    def close(self) -> None:
        import ray

        if self._joined and ray.is_initialized():
            ray.shutdown()


def coordinator(config: dict[str, Any], rank: int, size: int) -> StorageCoordinator:
    return StorageCoordinator(config, rank, size)
