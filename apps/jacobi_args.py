"""Arguments of :mod:`iolab.apps.jacobi`: the parser, byte counts, and their check into a :class:`Config`.

Nothing here needs MPI, numpy or h5py: ``python -m iolab.apps.jacobi`` refuses bad
arguments before MPI starts (``resolve`` raises ``ValueError``, ``main`` turns
it into argparse's exit 2).  :class:`UsageError` is for the problems found only
once MPI runs (e.g. ``--restart`` against a checkpoint that does not fit).
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolab.apps import phases as phase_plans
from iolab.apps.coordination import env_config
from iolab.units import parse_size

PROG = "python -m iolab.apps.jacobi"
MiB = 1024 * 1024


# -- arguments -------------------------------------------------------------------------
def byte_count(text: str) -> int:
    """``1048576``, ``1MiB``, ``2.5GB`` -> bytes (argparse type; the sizes of :mod:`iolab.units`)."""
    try:
        value = parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a byte count: {exc} (examples: 1048576, 64MiB, 2GB)") from None
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"not a whole number of bytes: {text!r}")
    return int(value)


EXAMPLES = """\
examples:
  # carretero2020 Table 1, app 3, time-scaled 1/100: 1000 x (0.08 s compute, 64 MiB checkpoint)
  mpiexec -n 4 python -m iolab.apps.jacobi --app-id app3 --grid 5000 \\
      --iterations 1000 --compute 0.08 --io-volume 64MiB --out-dir run/
  # measure the sweep rate, then run a fixed amount of work per phase
  mpiexec -n 4 python -m iolab.apps.jacobi --app-id x --grid 2048 --calibrate
  mpiexec -n 4 python -m iolab.apps.jacobi --app-id x --grid 2048 --compute-mode work \\
      --sweeps-per-second 130 --phases-json '[["compute", 5], ["write", 1e8], ["read", 1e8]]'
  # after a crash: continue from the latest complete checkpoint
  mpiexec -n 4 python -m iolab.apps.jacobi <same arguments> --restart

stdout: one JSON line from rank 0 at the end (phases with wall-clock start/end, sweeps,
residual, bytes); errors go to stderr. Exit 2: bad arguments; non-zero: a rank failed.
See docs/apps.md.
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Synthetic MPI app: 2-D Jacobi solver with coordinated HDF5 checkpoint phases. "
        "Launch with: mpiexec -n <np> python -m iolab.apps.jacobi ...",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXAMPLES,
    )
    p.add_argument("--app-id", required=True, help="application name; names its checkpoints and manifest")
    p.add_argument("--grid", type=int, required=True, metavar="N", help="the grid has N x N unknowns")

    g = p.add_argument_group("phases (periodic, or explicit with --phases-json)")
    g.add_argument("--iterations", type=int, metavar="n", help="periodic: n x (compute, then I/O)")
    g.add_argument("--compute", type=float, metavar="W", help="periodic: seconds of compute per iteration")
    g.add_argument("--io-volume", type=byte_count, metavar="V",
                   help="periodic: bytes per I/O phase for the whole app (e.g. 1048576, 64MiB)")
    g.add_argument("--io-kind", choices=("write", "read"), help="periodic: kind of the I/O phases (default write)")
    g.add_argument("--phases-json", metavar="JSON",
                   help='explicit: e.g. \'[["compute", 10.0], ["write", 1048576], ["read", 1048576]]\' '
                   "(seconds for compute, bytes for write/read)")

    g = p.add_argument_group("compute")
    g.add_argument("--compute-mode", choices=("duration", "work"), default="duration",
                   help="duration: sweep until the phase's seconds are up (all ranks stop together; "
                   "repeatable on an oversubscribed machine); work: W x --sweeps-per-second sweeps "
                   "(default: duration)")
    g.add_argument("--sweeps-per-second", type=float, metavar="R",
                   help="calibrated sweep rate for --compute-mode work (see --calibrate)")
    g.add_argument("--calibrate", action="store_true",
                   help="measure the sweeps/s of this grid and rank count, print it as JSON, and exit")
    g.add_argument("--calibrate-seconds", type=float, default=3.0, metavar="S",
                   help="length of the --calibrate measurement (default 3)")

    g = p.add_argument_group("I/O coordination and checkpoints")
    g.add_argument("--coordinator", default="iolab.apps.coordination:local", metavar="MODULE:FACTORY",
                   help="who grants I/O phases (default iolab.apps.coordination:local: at once, no cap)")
    g.add_argument("--coordinator-config", metavar="JSON",
                   help="JSON config for the coordinator (default: $IOLAB_COORDINATOR_CONFIG, "
                   'else {"directory": "<--out-dir>"})')
    g.add_argument("--out-dir", default="iolab-out", metavar="DIR",
                   help="where the manifest <app-id>.manifest.json lives (default ./iolab-out)")
    g.add_argument("--restart", action="store_true",
                   help="resume from the checkpoint the manifest names (same grid and rank count)")
    g.add_argument("--seed", type=int, default=0, help="seed of the checkpoint filler bytes (default 0)")
    g.add_argument("--chunk-bytes", type=byte_count, default=2 * MiB, metavar="B",
                   help="bytes per write/read call, each throttled (default 2MiB)")
    g.add_argument("--no-fsync", action="store_true", help="do not fsync checkpoint files before renaming them")
    g.add_argument("--abort-grace", type=float, default=2.0, metavar="S",
                   help="seconds a failing rank waits for rank 0 to report the failure before aborting (default 2)")

    # hidden, for tests
    p.add_argument("--dump-solution", metavar="PATH", help=argparse.SUPPRESS)
    p.add_argument("--fail-at", metavar="PHASE[:RANK]", help=argparse.SUPPRESS)
    return p


@dataclass
class Config:
    app_id: str
    grid: int
    plan: list[phase_plans.PlannedPhase]
    compute_mode: str
    sweeps_per_second: float | None
    calibrate: bool
    calibrate_seconds: float
    coordinator: str
    coordinator_config: dict[str, Any]
    out_dir: Path
    restart: bool
    seed: int
    chunk_bytes: int
    fsync: bool
    abort_grace: float
    dump_solution: str | None = None
    fail_at: tuple[int, int] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def resolve(args: argparse.Namespace) -> Config:
    """Check the arguments (no MPI yet); ``ValueError`` with a clear message if they are wrong."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", args.app_id):
        raise ValueError(f"--app-id must be letters, digits, '_', '-', '.', got {args.app_id!r}")
    if args.grid < 1:
        raise ValueError(f"--grid must be >= 1, got {args.grid}")
    periodic = [args.iterations, args.compute, args.io_volume, args.io_kind]
    if args.calibrate:
        plan = []
        if args.calibrate_seconds <= 0:
            raise ValueError("--calibrate-seconds must be > 0")
    elif args.phases_json is not None:
        if any(v is not None for v in periodic):
            raise ValueError("give either --phases-json or --iterations/--compute/--io-volume/--io-kind, not both")
        plan = phase_plans.explicit(args.phases_json)
    else:
        if args.iterations is None or args.compute is None or args.io_volume is None:
            raise ValueError("give the phases: --iterations n --compute W --io-volume V [--io-kind], or --phases-json")
        plan = phase_plans.periodic(args.iterations, args.compute, args.io_volume, args.io_kind or "write")
    if args.compute_mode == "work" and not args.calibrate:
        if args.sweeps_per_second is None:
            raise ValueError("--compute-mode work needs --sweeps-per-second (measure it with --calibrate)")
        if not args.sweeps_per_second > 0:
            raise ValueError(f"--sweeps-per-second must be > 0, got {args.sweeps_per_second}")
    if not 4096 <= args.chunk_bytes <= 256 * MiB:
        raise ValueError(f"--chunk-bytes must be between 4KiB and 256MiB, got {args.chunk_bytes}")
    if args.abort_grace < 0:
        raise ValueError("--abort-grace must be >= 0")

    module_name, sep, attr = args.coordinator.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--coordinator wants MODULE:FACTORY, got {args.coordinator!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"--coordinator: cannot import {module_name!r}: {exc}") from None
    if not callable(getattr(module, attr, None)):
        raise ValueError(f"--coordinator: {module_name!r} has no factory {attr!r}")

    if args.coordinator_config is not None:
        try:
            config = json.loads(args.coordinator_config)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--coordinator-config is not valid JSON: {exc}") from None
    else:
        try:
            config = env_config() or {"directory": str(args.out_dir)}
        except json.JSONDecodeError as exc:
            raise ValueError(f"$IOLAB_COORDINATOR_CONFIG is not valid JSON: {exc}") from None
    if not isinstance(config, dict):
        raise ValueError("the coordinator config must be a JSON object")

    fail_at = None
    if args.fail_at:
        m = re.fullmatch(r"(\d+)(?::(\d+))?", args.fail_at)
        if not m:
            raise ValueError(f"--fail-at wants PHASE[:RANK], got {args.fail_at!r}")
        fail_at = (int(m.group(1)), int(m.group(2) or 0))

    return Config(
        app_id=args.app_id, grid=args.grid, plan=plan, compute_mode=args.compute_mode,
        sweeps_per_second=args.sweeps_per_second, calibrate=args.calibrate,
        calibrate_seconds=args.calibrate_seconds, coordinator=args.coordinator, coordinator_config=config,
        out_dir=Path(args.out_dir), restart=args.restart, seed=args.seed, chunk_bytes=args.chunk_bytes,
        fsync=not args.no_fsync, abort_grace=args.abort_grace, dump_solution=args.dump_solution,
        fail_at=fail_at,
    )


class UsageError(Exception):
    """A problem with the arguments found after MPI started; the same on every rank."""
