"""The command line and environment that start :mod:`iolab.apps.jacobi`'s ranks, for both real runs.

The I/O level's runner (:mod:`iolab.emulator.io.run`: one app per spec app) and the batch level's
(:mod:`iolab.emulator.batch.jobs`: one app per job) start the same program; they differ only in
the values.  The launcher (``mpiexec -n R`` or an ``srun`` step) goes in front of :func:`jacobi_argv`.

The ranks run the interpreter of the driver (``sys.executable``) with the environment of the
driver plus :data:`RANK_ENV`: they import the ``iolab`` installed where the driver's comes from
(an editable checkout or a wheel's ``site-packages``), and nothing here sets ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

MODULE = "iolab.apps.jacobi"

# Unbuffered output (a rank's last lines reach its log when it is killed), and one thread per rank
# for the numerical libraries (the ranks are the parallelism; threads would oversubscribe the cores).
RANK_ENV: Mapping[str, str] = {"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                               "MKL_NUM_THREADS": "1"}


def rank_env() -> dict[str, str]:
    """What a rank's environment adds to the driver's (:data:`RANK_ENV`)."""
    return dict(RANK_ENV)


def program() -> list[str]:
    """``python -m iolab.apps.jacobi`` with the driver's interpreter."""
    return [sys.executable, "-m", MODULE]


def jacobi_argv(app_id: str, *, grid: int, phases: Sequence[Sequence[Any]], compute_mode: str,
                coordinator: str, coordinator_config: Mapping[str, Any], out_dir: str | Path,
                chunk_bytes: int, seed: int, fsync: bool, sweeps_per_second: float | None = None) -> list[str]:
    """The command of one app: its explicit ``phases`` (``[kind, seconds or bytes]``) granted by
    ``coordinator`` (``module:factory``) configured with ``coordinator_config``."""
    argv = program() + ["--app-id", app_id, "--grid", str(grid), "--phases-json", json.dumps(phases),
                        "--compute-mode", compute_mode, "--coordinator", coordinator,
                        "--coordinator-config", json.dumps(coordinator_config), "--out-dir", str(out_dir),
                        "--chunk-bytes", str(chunk_bytes), "--seed", str(seed)]
    if not fsync:
        argv.append("--no-fsync")
    if sweeps_per_second is not None:
        argv += ["--sweeps-per-second", repr(sweeps_per_second)]
    return argv


def calibrate_argv(grid: int, seconds: float = 2.0) -> list[str]:
    """The command that measures the sweeps per second of ``grid`` (compute_mode ``work``)."""
    return program() + ["--app-id", "calibrate", "--grid", str(grid), "--calibrate",
                        "--calibrate-seconds", f"{seconds:g}"]


__all__ = ["MODULE", "RANK_ENV", "calibrate_argv", "jacobi_argv", "program", "rank_env"]
