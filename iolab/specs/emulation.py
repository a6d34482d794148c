"""How the emulator turns an I/O experiment into a real run on this machine.

The spec's units are seconds and data units; a real run needs wall seconds
and bytes.  ``time_scale`` is wall seconds per spec second (0.5: the run lasts
half the spec's time), ``unit_bytes`` the bytes of one data unit.  With the
bandwidth cap on, every I/O node becomes a token bucket of
``bandwidth * unit_bytes / time_scale`` bytes per wall second shared by every
writer behind it, so an I/O phase of ``v`` units lasts ``v / b`` spec seconds.

Each app runs as ``ranks_per_app`` MPI ranks (``nodes``: the spec's Q, 1:1);
the spec's ``nodes`` still drive the metrics.  Every app is launched before
the clock starts (see docs/emulator.md), so the sum of the ranks of all apps
must stay within ``max_ranks``.

    emulator: {time_scale: 0.5, unit_bytes: 1048576, ranks_per_app: 2}
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from iolab.specs.base import StrictModel

KiB = 1024
MiB = 1024 * 1024


class EmulatorSettings(StrictModel):
    """Settings of a real run (``iolab emulate``); ignored by the simulator."""

    time_scale: float = Field(
        1.0, gt=0, le=1000, allow_inf_nan=False,
        description="wall seconds per spec second (0.5: twice as fast as the spec)",
    )
    unit_bytes: int = Field(MiB, ge=4 * KiB, le=64 * 1024 * MiB, description="bytes of one spec data unit")
    ranks_per_app: int | Literal["nodes"] = Field(
        1, description="MPI ranks of every app, or 'nodes' for the spec's Q (one rank per node)",
    )
    max_ranks: int = Field(
        16, ge=1, le=256,
        description="limit on the ranks of all apps together (all are launched before the clock starts)",
    )
    grid: int = Field(128, ge=8, le=20000, description="Jacobi grid N (N x N unknowns, split over the ranks)")
    compute_mode: Literal["duration", "work"] = Field(
        "duration", description="duration: sweep until the phase's time is up; work: calibrated sweeps",
    )
    bandwidth_cap: bool = Field(True, description="pace every I/O node at the spec's bandwidth (token bucket)")
    lease: float = Field(
        30.0, gt=0, allow_inf_nan=False,
        description="wall seconds a grant stays valid without news from the app",
    )
    work_dir: str | None = Field(
        None, description="where checkpoints and logs go (default: a new directory beside --out, or in /tmp)",
    )
    chunk_bytes: int = Field(256 * KiB, ge=4 * KiB, le=256 * MiB, description="bytes per throttled write")
    fsync: bool = Field(False, description="fsync checkpoint files (adds disk time the spec does not model)")
    nice: int = Field(10, ge=0, le=19, description="niceness of the apps, so the control plane stays responsive")
    startup_timeout: float = Field(
        180.0, gt=0, allow_inf_nan=False,
        description="wall seconds every app has to connect before the run is given up",
    )

    def ranks_for(self, nodes: int) -> int:
        return nodes if self.ranks_per_app == "nodes" else int(self.ranks_per_app)
