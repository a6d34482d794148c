"""usage:: mpiexec -n <np> python -m iolab.apps.jacobi --app-id A --grid N (--iterations n --compute W --io-volume V | --phases-json JSON) [options]

A synthetic MPI application: a 2-D Jacobi solver alternating compute and I/O
phases.  It models the applications of carretero2020 (§6.1, Table 1): a Laplace
problem on an ``N x N`` grid, block-decomposed over the ranks (see
:mod:`iolab.apps.stencil`), that alternates compute phases (Jacobi sweeps for ``W``
seconds) and I/O phases (an HDF5 checkpoint of ``V`` bytes for the whole app,
or a read of the latest checkpoint, see :mod:`iolab.apps.checkpoint`).

Every I/O phase is coordinated (:mod:`iolab.apps.coordination`): rank 0 asks the
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
hanging (see :mod:`iolab.apps.failure`).

``--calibrate`` measures the sweep rate of this grid and rank count and prints
it as JSON; pass it back as ``--sweeps-per-second`` with ``--compute-mode work``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import iolab
from iolab.apps import checkpoint
from iolab.apps.coordination import load_coordinator
from iolab.apps.jacobi_args import PROG, Config, UsageError, build_parser, resolve
from iolab.apps.phase_driver import PhaseDriver


# -- entry points ------------------------------------------------------------------------------
def _say(rank: int, message: str) -> None:
    if rank == 0:
        print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)


def _check_restart(cfg: Config, solver, comm) -> dict:
    """Rank 0 reads and checks the manifest; every rank gets it, or ``UsageError``."""
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
    app = PhaseDriver(cfg, comm, watch, solver, coord=None, manifest=None)
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
    from iolab.apps import stencil  # lazy: MPI only after the arguments are checked
    from iolab.apps.failure import PeerFailed, Watch, abort  # lazy: MPI only after the arguments are checked

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
        # Every rank finishes the set-up's MPI traffic before any of them blocks in the
        # middleware's start gate: a rank waiting there makes no MPI progress, and a peer
        # still inside Create_cart may need it (libfabric's tcp;ofi_rxm did, docs/slurm.md).
        watch.barrier()
        coord = load_coordinator(cfg.coordinator, cfg.coordinator_config, rank, comm.Get_size())
        first = 0
        if manifest is not None:
            block, attrs = checkpoint.load_block(Path(manifest["files"][rank]["path"]))
            if (tuple(attrs["rows"]), tuple(attrs["cols"])) != (solver.block.rows, solver.block.cols):
                raise RuntimeError(f"checkpoint file of rank {rank} holds another block")
            solver.load(block, manifest["sweeps"])
            first = manifest["phase"] + 1
        app = PhaseDriver(cfg, comm, watch, solver, coord, manifest if rank == 0 else None)
        app.run(first)
        residual = solver.residual()
        if cfg.dump_solution:
            full = solver.gather()
            if rank == 0:
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


def _publish(cfg: Config, summary: dict) -> None:
    """Rank 0: the summary file (atomic, the record to trust), then the stdout line."""
    checkpoint.write_manifest(checkpoint.summary_path(cfg.out_dir, cfg.app_id), summary, fsync=False)
    print(json.dumps(summary), flush=True)


def _close(coord) -> None:
    try:
        if coord is not None:
            coord.close()
    except Exception:
        pass


def _summary(cfg: Config, comm, solver, app: PhaseDriver, t0: float, manifest: dict | None, ok: bool,
             residual: float | None = None, error: str | None = None) -> dict:
    out = {
        "app_id": cfg.app_id, "ok": ok, "ranks": comm.Get_size(), "dims": list(solver.block.dims),
        "grid": cfg.grid, "compute_mode": cfg.compute_mode,
        "restarted_from_phase": manifest["phase"] if (manifest and cfg.restart) else None,
        "phases": app.records, "sweeps": solver.sweeps,
        "iterations": app.records[-1]["iteration"] if app.records else (manifest or {}).get("iteration", 0),
        "residual": residual, "bytes_written": app.bytes_written, "bytes_read": app.bytes_read,
        "wall_seconds": time.time() - t0,
        "package": str(Path(iolab.__file__).parent),  # the iolab the ranks imported (a checkout, a wheel's)
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
    from mpi4py import MPI  # lazy: MPI starts only once the arguments are known to be good

    return run(MPI.COMM_WORLD, cfg)


if __name__ == "__main__":
    sys.exit(main())
