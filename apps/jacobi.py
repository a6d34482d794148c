"""usage:: mpiexec -n <np> python -m apps.jacobi --app-id A --grid N (--iterations n --compute W --io-volume V | --phases-json JSON) [options]

A synthetic MPI application: a 2-D Jacobi solver alternating compute and I/O
phases.  It models the applications of carretero2020 (§6.1, Table 1): a Laplace
problem on an ``N x N`` grid, block-decomposed over the ranks (see
:mod:`apps.stencil`), that alternates compute phases (Jacobi sweeps for ``W``
seconds) and I/O phases (an HDF5 checkpoint of ``V`` bytes for the whole app,
or a read of the latest checkpoint, see :mod:`apps.checkpoint`).

Every I/O phase is coordinated (:mod:`apps.coordination`): rank 0 asks the
coordinator for access (``begin_io``), broadcasts the granted directory, every
rank writes its file through ``throttle``, rank 0 commits the manifest,
releases the grant (``end_io``) and reports the phase (``report``).  Compute
phases are reported too.  At the end rank 0 calls ``finish``, writes the
summary to ``<out-dir>/<app-id>.summary.json`` (atomically) and prints it as one
JSON line on stdout.  On failure the file is the record to trust: when a job is
aborted, ``mpiexec`` may kill its ranks before it has forwarded their last
output.

If any rank raises, rank 0 reports ``finish(False, reason)`` and the job is
aborted (``MPI_Abort``): it exits non-zero within a few seconds instead of
hanging (see :mod:`apps.failure`).

``--calibrate`` measures the sweep rate of this grid and rank count and prints
it as JSON; pass it back as ``--sweeps-per-second`` with ``--compute-mode work``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apps import phases as phase_plans
from apps.coordination import env_config, load_coordinator

PROG = "python -m apps.jacobi"
MiB = 1024 * 1024
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2, "mib": 1024**2,
          "g": 1000**3, "gb": 1000**3, "gib": 1024**3}


# -- arguments -------------------------------------------------------------------------
def byte_count(text: str) -> int:
    """``1048576``, ``1MiB``, ``2.5GB`` -> bytes (argparse type)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a byte count: {text!r} (examples: 1048576, 64MiB, 2GB)")
    value = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"not a whole number of bytes: {text!r}")
    return int(value)


EXAMPLES = """\
examples:
  # carretero2020 Table 1, app 3, time-scaled 1/100: 1000 x (0.08 s compute, 64 MiB checkpoint)
  mpiexec -n 4 python -m apps.jacobi --app-id app3 --grid 5000 \\
      --iterations 1000 --compute 0.08 --io-volume 64MiB --out-dir run/
  # measure the sweep rate, then run a fixed amount of work per phase
  mpiexec -n 4 python -m apps.jacobi --app-id x --grid 2048 --calibrate
  mpiexec -n 4 python -m apps.jacobi --app-id x --grid 2048 --compute-mode work \\
      --sweeps-per-second 130 --phases-json '[["compute", 5], ["write", 1e8], ["read", 1e8]]'
  # after a crash: continue from the latest complete checkpoint
  mpiexec -n 4 python -m apps.jacobi <same arguments> --restart

stdout: one JSON line from rank 0 at the end (phases with wall-clock start/end, sweeps,
residual, bytes); errors go to stderr. Exit 2: bad arguments; non-zero: a rank failed.
See docs/apps.md.
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Synthetic MPI app: 2-D Jacobi solver with coordinated HDF5 checkpoint phases. "
        "Launch with: mpiexec -n <np> python -m apps.jacobi ...",
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
    g.add_argument("--coordinator", default="apps.coordination:local", metavar="MODULE:FACTORY",
                   help="who grants I/O phases (default apps.coordination:local: at once, no cap)")
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
    plan: list[phase_plans.Phase]
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


class InjectedFailure(RuntimeError):
    """Raised by ``--fail-at`` (tests)."""


# -- the application -----------------------------------------------------------------------
class App:
    """One rank of the running application."""

    def __init__(self, cfg: Config, comm, watch, solver, coord, manifest: dict | None):
        import numpy as np

        from apps import checkpoint

        self.cfg, self.comm, self.watch, self.solver, self.coord = cfg, comm, watch, solver, coord
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.manifest = manifest  # rank 0: the latest complete checkpoint
        self.records: list[dict] = []
        self.bytes_written = 0
        self.bytes_read = 0
        self.fill = checkpoint.pattern(cfg.seed, self.rank, cfg.chunk_bytes)
        self._np = np
        self._continued = 0  # rank 0: SIGCONTs received (the job was stopped, then resumed)
        if self.rank == 0:
            try:
                signal.signal(signal.SIGCONT, self._on_continue)
            except ValueError:  # not the main thread (embedded use): stops are then not discounted
                pass

    def _on_continue(self, signum, frame) -> None:
        self._continued += 1

    # -- failure injection ---------------------------------------------------------------
    def _injected(self, phase) -> bool:
        return self.cfg.fail_at is not None and self.cfg.fail_at == (phase.index, self.rank)

    def _throttle_for(self, phase):
        throttle = self.coord.throttle
        if not self._injected(phase):
            return throttle
        calls = [0]

        def failing(nbytes: int) -> None:
            calls[0] += 1
            if calls[0] > 2:  # the block and one filler chunk are on disk (temporary file)
                raise InjectedFailure(f"injected failure in phase {phase.index} ({phase.kind}) on rank {self.rank}")
            throttle(nbytes)

        return failing

    # -- compute ----------------------------------------------------------------------------
    def sweep_for(self, seconds: float, phase=None) -> tuple[int, float]:
        """Sweep for ``seconds`` of rank 0's clock; all ranks stop after the same sweep.

        Rank 0 sizes each batch of sweeps from a running estimate of the sweep
        time (batches of about 20 ms, the last one cut to end closest to the
        deadline) and broadcasts ``[go, batch]`` before every batch.

        Time the job spends stopped (SIGSTOP or SIGTSTP, then SIGCONT, as
        ``scontrol suspend/resume`` does) does not count: when rank 0 was
        continued during a batch, the batch's excess over its expected length
        moves the deadline, so a suspended job still does its phase's work when
        resumed.  Mere slowness (a loaded machine) is not discounted.  Returns
        the sweeps done and the seconds discounted.
        """
        np = self._np
        ctrl = np.zeros(2, dtype=np.int64)
        target = 0.02
        deadline = time.perf_counter() + seconds
        per_sweep: float | None = None  # rank 0: one sweep, with its share of the broadcast
        last: tuple[float, int, int] | None = None  # rank 0: time, size, SIGCONT count of the last batch
        paused = 0.0
        done = 0
        while True:
            if self.rank == 0:
                now = time.perf_counter()
                if last is not None:
                    elapsed = now - last[0]
                    expected = last[1] * per_sweep if per_sweep is not None else None
                    if self._continued != last[2]:  # we were stopped and continued meanwhile
                        excess = max(0.0, elapsed - (expected or 0.0))
                        paused += excess
                        deadline += excess
                    else:
                        measured = elapsed / last[1]
                        per_sweep = measured if per_sweep is None else 0.7 * per_sweep + 0.3 * measured
                remaining = deadline - now
                if per_sweep is None:
                    batch = 1 if remaining > 0 else 0
                elif remaining < per_sweep / 2:
                    batch = 0
                else:
                    batch = max(1, min(round(remaining / per_sweep), int(target / per_sweep)))
                ctrl[0], ctrl[1] = batch > 0, batch
                last = (now, batch, self._continued)
            self.watch.bcast_array(ctrl)
            if not ctrl[0]:
                return done, paused
            self.solver.sweep(int(ctrl[1]))
            done += int(ctrl[1])
            if phase is not None and self._injected(phase):
                raise InjectedFailure(f"injected failure in phase {phase.index} (compute) on rank {self.rank}")

    def compute(self, phase) -> dict:
        start = time.time()
        paused = 0.0
        if self.cfg.compute_mode == "duration":
            sweeps, paused = self.sweep_for(phase.amount, phase)
        else:
            sweeps = int(round(phase.amount * self.cfg.sweeps_per_second))
            if sweeps and self._injected(phase):
                self.solver.sweep(1)
                raise InjectedFailure(f"injected failure in phase {phase.index} (compute) on rank {self.rank}")
            self.solver.sweep(sweeps)
            self.watch.barrier()  # all ranks leave together
        end = time.time()
        if self.rank == 0:
            self.coord.report(phase.index, "compute", start, end, 0)
        return {"start": start, "end": end, "sweeps": sweeps, "paused": paused}

    # -- I/O -----------------------------------------------------------------------------------
    def io(self, phase) -> dict:
        from apps import checkpoint

        np = self._np
        cfg = self.cfg
        requested = time.time()
        info = grant = None
        if self.rank == 0:
            if phase.kind == "read":
                if self.manifest is None:
                    self.manifest = checkpoint.read_manifest(checkpoint.manifest_path(cfg.out_dir, cfg.app_id))
                if self.manifest is None:
                    raise RuntimeError(
                        f"phase {phase.index} reads the latest checkpoint, but there is none "
                        f"({checkpoint.manifest_path(cfg.out_dir, cfg.app_id)}): a write phase or --restart must come first")
            grant = self.coord.begin_io(phase.index, phase.kind, int(phase.amount))
            info = {"directory": grant.directory,
                    "files": self.manifest["files"] if phase.kind == "read" else None}
        info = self.watch.bcast_object(info)
        start = time.time()
        throttle = self._throttle_for(phase)
        nbytes = int(phase.amount)
        if phase.kind == "write":
            b = self.solver.block
            ckpt_dir = checkpoint.checkpoint_dir(info["directory"], cfg.app_id, phase.index)
            attrs = {
                "grid": np.int64(b.n), "ranks": np.int64(self.size), "rank": np.int64(self.rank),
                "dims": np.array(b.dims, dtype=np.int64), "coords": np.array(b.coords, dtype=np.int64),
                "rows": np.array(b.rows, dtype=np.int64), "cols": np.array(b.cols, dtype=np.int64),
                "sweeps": np.int64(self.solver.sweeps), "phase": np.int64(phase.index),
                "iteration": np.int64(phase.iteration),
            }
            checkpoint.write_rank_file(
                checkpoint.rank_file(ckpt_dir, self.rank), self.solver.interior, attrs,
                checkpoint.share(nbytes, self.size, self.rank), throttle, self.fill, cfg.fsync)
            self.watch.barrier()  # every rank file is in place
            if self.rank == 0:
                manifest = checkpoint.make_manifest(
                    cfg.app_id, b.n, list(b.dims), phase.index, phase.iteration, self.solver.sweeps,
                    ckpt_dir, self.size)
                path = checkpoint.manifest_path(cfg.out_dir, cfg.app_id)
                previous = self.manifest if self.manifest is not None else _old_manifest(path)
                checkpoint.write_manifest(path, manifest, cfg.fsync)
                checkpoint.prune(previous, manifest)
                self.manifest = manifest
                nbytes = manifest["total_bytes"]
                self.bytes_written += nbytes
        else:
            path = Path(info["files"][self.rank]["path"])
            checkpoint.read_rank_file(path, checkpoint.share(nbytes, self.size, self.rank), throttle,
                                      cfg.chunk_bytes)
            self.watch.barrier()
            self.bytes_read += nbytes
        end = time.time()
        if self.rank == 0:
            if end > grant.granted_at + grant.lease:
                print(f"[rank 0] warning: I/O phase {phase.index} outlived its grant's lease of {grant.lease} s",
                      file=sys.stderr, flush=True)
            self.coord.end_io(phase.index, nbytes)
            self.coord.report(phase.index, phase.kind, start, end, nbytes)
        return {"requested": requested, "start": start, "end": end, "nbytes": nbytes}

    # -- driver ----------------------------------------------------------------------------------
    def run(self, first: int) -> None:
        for phase in self.cfg.plan[first:]:
            self.watch.check()
            if phase.kind == "compute":
                rec = self.compute(phase)
            else:
                rec = self.io(phase)
            rec = {"index": phase.index, "kind": phase.kind, "iteration": phase.iteration,
                   "target": phase.amount, **rec, "seconds": rec["end"] - rec["start"]}
            self.records.append(rec)


def _old_manifest(path: Path) -> dict | None:
    """A fresh run's first checkpoint supersedes the one an earlier run left (if readable)."""
    from apps import checkpoint

    try:
        return checkpoint.read_manifest(path)
    except ValueError:
        return None


# -- entry points ------------------------------------------------------------------------------
def _say(rank: int, message: str) -> None:
    if rank == 0:
        print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)


def _check_restart(cfg: Config, solver, comm) -> dict:
    """Rank 0 reads and checks the manifest; every rank gets it, or ``UsageError``."""
    from apps import checkpoint

    result: dict = {}
    if comm.Get_rank() == 0:
        path = checkpoint.manifest_path(cfg.out_dir, cfg.app_id)
        try:
            manifest = checkpoint.read_manifest(path)
            b = solver.block
            if manifest is None:
                raise ValueError(f"--restart: no checkpoint manifest at {path}")
            if manifest["app_id"] != cfg.app_id:
                raise ValueError(f"--restart: {path} belongs to app {manifest['app_id']!r}, not {cfg.app_id!r}")
            if manifest["grid"] != cfg.grid:
                raise ValueError(f"--restart: the checkpoint is for --grid {manifest['grid']}, not {cfg.grid}")
            if manifest["ranks"] != comm.Get_size() or list(manifest["dims"]) != list(b.dims):
                raise ValueError(
                    f"--restart: the checkpoint was written by {manifest['ranks']} ranks "
                    f"({manifest['dims'][0]}x{manifest['dims'][1]}), this run has {comm.Get_size()} "
                    f"({b.dims[0]}x{b.dims[1]}); restart with mpiexec -n {manifest['ranks']}")
            p = manifest["phase"]
            if p >= len(cfg.plan) or cfg.plan[p].kind != "write":
                raise ValueError(
                    f"--restart: the checkpoint was written by phase {p}, which is not a write phase of "
                    "this phase plan: give the same phases (more iterations are fine)")
            missing = [f["path"] for f in manifest["files"] if not Path(f["path"]).is_file()]
            if missing:
                raise ValueError(f"--restart: checkpoint files are missing: {', '.join(missing)}")
            result = {"manifest": manifest}
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            result = {"error": str(exc) if not isinstance(exc, (KeyError, TypeError, IndexError))
                      else f"--restart: malformed manifest {path}: {exc!r}"}
    result = comm.bcast(result, root=0)
    if "error" in result:
        raise UsageError(result["error"])
    return result["manifest"]


def _calibrate(cfg: Config, comm, watch, solver) -> int:
    app = App(cfg, comm, watch, solver, coord=None, manifest=None)
    app.sweep_for(min(0.5, cfg.calibrate_seconds / 4))  # warm up caches and the sweep-time estimate
    watch.barrier()
    t0 = time.perf_counter()
    sweeps, paused = app.sweep_for(cfg.calibrate_seconds)
    seconds = time.perf_counter() - t0 - paused
    if comm.Get_rank() == 0:
        print(json.dumps({
            "grid": cfg.grid, "ranks": comm.Get_size(), "dims": list(solver.block.dims),
            "sweeps": sweeps, "seconds": round(seconds, 6), "sweeps_per_second": sweeps / seconds,
        }), flush=True)
    return 0


def run(comm, cfg: Config) -> int:
    """Run the app on ``comm``; return the exit code (failures abort the job instead)."""
    from apps import checkpoint, stencil
    from apps.failure import PeerFailed, Watch

    rank = comm.Get_rank()
    watch = Watch(comm, grace=cfg.abort_grace)
    try:
        solver = stencil.Jacobi(comm, cfg.grid, waiter=watch.wait)
        manifest = _check_restart(cfg, solver, comm) if cfg.restart else None
    except (ValueError, UsageError) as exc:  # the same on every rank: a clean exit, no abort
        _say(rank, str(exc))
        return 2
    if cfg.calibrate:
        return _calibrate(cfg, comm, watch, solver)

    t0 = time.time()
    coord = None
    app = None
    try:
        coord = load_coordinator(cfg.coordinator, cfg.coordinator_config, rank, comm.Get_size())
        first = 0
        if manifest is not None:
            block, attrs = checkpoint.load_block(Path(manifest["files"][rank]["path"]))
            if (tuple(attrs["rows"]), tuple(attrs["cols"])) != (solver.block.rows, solver.block.cols):
                raise RuntimeError(f"checkpoint file of rank {rank} holds another block")
            solver.load(block, manifest["sweeps"])
            first = manifest["phase"] + 1
        app = App(cfg, comm, watch, solver, coord, manifest if rank == 0 else None)
        app.run(first)
        residual = solver.residual()
        if cfg.dump_solution:
            full = solver.gather()
            if rank == 0:
                import numpy as np

                np.save(cfg.dump_solution, full)
        if rank == 0:
            coord.finish(True, "")
            _publish(cfg, _summary(cfg, comm, solver, app, t0, manifest, ok=True, residual=residual))
        coord.close()
        return 0
    except (Exception, KeyboardInterrupt) as exc:
        reason = exc.message if isinstance(exc, PeerFailed) else f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, PeerFailed):
            print(f"[rank {rank}] {PROG} failed:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
        if rank == 0:
            who = f"rank {exc.rank}" if isinstance(exc, PeerFailed) else "rank 0"
            message = f"{who}: {reason}"
            if coord is not None:
                try:
                    coord.finish(False, message)
                except Exception as exc2:  # still abort
                    print(f"[rank 0] coordinator.finish failed: {exc2!r}", file=sys.stderr, flush=True)
            if app is not None:
                try:
                    _publish(cfg, _summary(cfg, comm, solver, app, t0, manifest, ok=False, error=message))
                except Exception as exc2:  # still abort
                    print(f"[rank 0] writing the summary failed: {exc2!r}", file=sys.stderr, flush=True)
            _close(coord)
            abort(comm)
        _close(coord)
        watch.fail(reason)  # tells rank 0, then aborts
        return 1  # not reached


def abort(comm) -> None:
    """End the whole job now. MPICH's ``MPI_Abort`` may return before the kill lands: never go on."""
    sys.stdout.flush()
    sys.stderr.flush()
    comm.Abort(1)
    os._exit(1)


def _publish(cfg: Config, summary: dict) -> None:
    """Rank 0: the summary file (atomic, the record to trust), then the stdout line."""
    from apps import checkpoint

    checkpoint.write_manifest(checkpoint.summary_path(cfg.out_dir, cfg.app_id), summary, fsync=False)
    print(json.dumps(summary), flush=True)


def _close(coord) -> None:
    try:
        if coord is not None:
            coord.close()
    except Exception:
        pass


def _summary(cfg: Config, comm, solver, app: App, t0: float, manifest: dict | None, ok: bool,
             residual: float | None = None, error: str | None = None) -> dict:
    out = {
        "app_id": cfg.app_id, "ok": ok, "ranks": comm.Get_size(), "dims": list(solver.block.dims),
        "grid": cfg.grid, "compute_mode": cfg.compute_mode,
        "restarted_from_phase": manifest["phase"] if (manifest and cfg.restart) else None,
        "phases": app.records, "sweeps": solver.sweeps,
        "iterations": app.records[-1]["iteration"] if app.records else (manifest or {}).get("iteration", 0),
        "residual": residual, "bytes_written": app.bytes_written, "bytes_read": app.bytes_read,
        "wall_seconds": time.time() - t0,
    }
    if error is not None:
        out["error"] = error
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    if os.environ.get("PMI_RANK", "0") != "0":  # one copy of argparse's messages under mpiexec
        parser.error = lambda message: sys.exit(2)  # type: ignore[method-assign]
    args = parser.parse_args(argv)
    try:
        cfg = resolve(args)
    except ValueError as exc:
        parser.error(str(exc))
    from mpi4py import MPI  # MPI starts only once the arguments are known to be good

    return run(MPI.COMM_WORLD, cfg)


if __name__ == "__main__":
    sys.exit(main())
