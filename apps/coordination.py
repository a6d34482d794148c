"""How an application's I/O phases are coordinated: the app-side contract.

An MPI application (``iolab.apps.jacobi``) never talks to Ray or to the arbiter
directly.  Each rank builds one coordinator with :func:`load_coordinator`;
rank 0 uses it to ask for and give back I/O access and to report phases, and
every rank uses its ``throttle`` to pace its writes (a bandwidth cap shared
by every writer behind one I/O node).  Rank 0 broadcasts each grant to the
other ranks over MPI.

The coordinator is chosen by ``--coordinator MODULE:FACTORY`` with a JSON
config (``--coordinator-config``).  ``iolab.apps.coordination:local`` (the default)
needs no middleware: every request is granted at once into a fixed
directory.  The middleware provides ``iolab.middleware.client:coordinator``.

A factory is called as ``factory(config: dict, rank: int, size: int)`` and
returns an object with the methods of :class:`IOCoordinator`.

A coordinator may also arbitrate *parts* of a phase (a batch run with I/O nodes,
``iolab.middleware.io_node_client``): if it has ``end_part``, every rank calls
``begin_part(phase, kind, nbytes)`` once rank 0's grant is broadcast (it blocks
until the rank's part, the ranks behind one I/O node, is granted) and
``end_part(phase)`` once its own bytes are moved (the part's last rank releases
it), before the phase's closing barrier.
"""

from __future__ import annotations

import importlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class Grant:
    """Access to do one I/O phase.

    ``directory``: where the app writes (or reads) this phase's files; it exists.
    ``granted_at``: wall-clock time (``time.time()``) of the grant.
    ``lease``: seconds the grant stays valid without news from the app; the
    app calls ``end_io`` before then, or the arbiter gives the node to the next app.
    """

    directory: str
    granted_at: float
    lease: float = float("inf")


class IOCoordinator(Protocol):
    def begin_io(self, phase: int, kind: str, nbytes: int) -> Grant:
        """Rank 0: block until this phase may do its I/O (kind 'write'/'read')."""

    def end_io(self, phase: int, nbytes: int) -> None:
        """Rank 0: the phase's I/O is done on every rank; release the grant."""

    def report(self, phase: int, kind: str, start: float, end: float, nbytes: int) -> None:
        """Rank 0: record a finished phase (kind 'compute', 'write' or 'read'; wall-clock times)."""

    def throttle(self, nbytes: int) -> None:
        """Any rank: block until ``nbytes`` more may be transferred under the cap (no-op if none); the
        bytes are then moved while the link carries them, and ``throttle(0)`` waits until it has."""

    def finish(self, ok: bool, message: str = "") -> None:
        """Rank 0: the app ended (ok) or failed (message says why)."""

    def close(self) -> None:
        """Any rank: drop connections; called once at exit."""


class LocalCoordinator:
    """No middleware: grants at once, into ``config['directory']``, no cap."""

    def __init__(self, config: dict[str, Any], rank: int, size: int):
        self.directory = Path(config.get("directory", "."))
        self.rank = rank
        self.phases: list[tuple[int, str, float, float, int]] = []
        if rank == 0:
            self.directory.mkdir(parents=True, exist_ok=True)

    def begin_io(self, phase: int, kind: str, nbytes: int) -> Grant:
        return Grant(str(self.directory), time.time())

    def end_io(self, phase: int, nbytes: int) -> None:
        pass

    def report(self, phase: int, kind: str, start: float, end: float, nbytes: int) -> None:
        self.phases.append((phase, kind, start, end, nbytes))

    def throttle(self, nbytes: int) -> None:
        pass

    def finish(self, ok: bool, message: str = "") -> None:
        pass

    def close(self) -> None:
        pass


def local(config: dict[str, Any], rank: int, size: int) -> LocalCoordinator:
    return LocalCoordinator(config, rank, size)


def load_coordinator(target: str, config: dict[str, Any], rank: int, size: int) -> IOCoordinator:
    """Import ``MODULE:FACTORY`` and build this rank's coordinator."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--coordinator wants MODULE:FACTORY, got {target!r}")
    factory = getattr(importlib.import_module(module_name), attr)
    return factory(config, rank, size)


def env_config() -> dict[str, Any]:
    """Coordinator settings an orchestrator may pass through the environment."""
    raw = os.environ.get("IOLAB_COORDINATOR_CONFIG")
    return json.loads(raw) if raw else {}
