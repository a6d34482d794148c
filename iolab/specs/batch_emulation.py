"""How the emulator turns a batch experiment (``kind: batch``) into a real run on this machine.

A batch spec speaks of hours and terabytes (lackner2019 §IV); a real run on a
laptop must last minutes and move megabytes.  Two factors scale it:

- ``time_scale``: wall seconds per spec second (0.01: 1800 s of spec time
  last 18 s);
- ``bytes_scale``: real bytes per spec byte (1e-4: a 90 GB input is a 9 MB
  file).

Rates follow: a tier of ``R`` spec bytes/s is paced at
``R * bytes_scale / time_scale`` real bytes per wall second, so an I/O step of
``V`` spec bytes lasts ``V / R`` spec seconds, as in the simulator.

    emulator: {time_scale: 0.01, bytes_scale: 1e-4, ranks_per_job: 1}

The simulator ignores these settings.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from iolab.specs.base import StrictModel

KiB = 1024
MiB = 1024 * 1024


class BatchEmulatorSettings(StrictModel):
    """Settings of a real batch run (``iolab emulate`` on a ``kind: batch`` spec)."""

    time_scale: float = Field(0.01, gt=0, le=1000, allow_inf_nan=False,
                              description="wall seconds per spec second")
    bytes_scale: float = Field(1e-4, gt=0, le=1, allow_inf_nan=False,
                               description="real bytes per spec byte (sizes, capacities and rates)")
    ranks_per_job: int | Literal["nodes"] = Field(
        1, description="MPI ranks of every job, or 'nodes' for one rank per node of the job")
    max_ranks: int = Field(8, ge=1, le=256, description="most ranks one job may run")
    grid: int = Field(32, ge=8, le=20000, description="Jacobi grid N of every job (N x N unknowns)")
    chunk_bytes: int = Field(MiB, ge=4 * KiB, le=256 * MiB,
                             description="bytes per paced write, read or staging copy")
    bandwidth_cap: bool = Field(True, description="pace LPS, HPS and staging at the spec's rates (token buckets)")
    hps_full: Literal["wait", "refuse"] = Field(
        "wait", description="an HPS allocation that does not fit waits for space, or is refused (job falls back to LPS)")
    max_jobs: int = Field(64, ge=1, le=100_000, description="refuse workloads with more jobs (a real run each)")
    max_wall: float = Field(1800.0, gt=0, allow_inf_nan=False,
                            description="refuse specs whose estimated wall time exceeds this many seconds")
    kill_factor: float = Field(4.0, ge=1, allow_inf_nan=False,
                               description="kill a job running longer than this many times its walltime (+60 s wall)")
    work_dir: str | None = Field(None, description="tier directories, logs (default: beside --out, or in /tmp)")
    fsync: bool = Field(False, description="fsync checkpoint files")
    nice: int = Field(10, ge=0, le=19, description="niceness of the jobs, so the control plane stays responsive")
    progress_every: float = Field(5.0, gt=0, description="seconds between progress lines (not on a terminal)")

    def ranks_for(self, nodes: int) -> int:
        return nodes if self.ranks_per_job == "nodes" else int(self.ranks_per_job)

    def wall_rate(self, rate: float) -> float:
        """Real bytes per wall second of a spec rate (bytes per spec second)."""
        return rate * self.bytes_scale / self.time_scale


__all__ = ["BatchEmulatorSettings"]
