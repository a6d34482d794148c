"""One rank of :mod:`iolab.apps.jacobi` running its phase plan: the phase driver.

:class:`PhaseDriver` runs compute phases (``sweep_for``: Jacobi sweeps for a phase's
seconds, or a fixed number of sweeps in ``work`` mode) and coordinated I/O
phases (checkpoint writes and reads, see :mod:`iolab.apps.checkpoint`), records each
phase, and injects the failure that ``--fail-at`` asks for (tests).

Quota: when the coordinator keeps one (the batch runs' storage manager,
:mod:`iolab.middleware.storage_client`: ``reserve``/``settle``/``room``), every
rank file is reserved in the job's HPS allocation before it is written, and
before a write phase rank 0 asks for the ``room`` left: if the phase would not
fit beside the latest checkpoint (or the staged input, once read), rank 0
deletes those superseded files first, as SCR does when its cache is full
(lackner2019's storage request holds the larger of input and output plus one
checkpoint).  A write that still does not fit is refused: the job fails and
the manager logs why.
:mod:`iolab.apps.checkpoint` (h5py) is imported only when a ``PhaseDriver`` runs, after the
arguments were checked and MPI started.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import numpy as np

from iolab.apps import checkpoint
from iolab.apps.jacobi_args import Config


class InjectedFailure(RuntimeError):
    """Raised by ``--fail-at`` (tests)."""


# -- the application -----------------------------------------------------------------------
class PhaseDriver:
    """One rank of the running application."""

    def __init__(self, cfg: Config, comm, watch, solver, coord, manifest: dict | None):
        checkpoint.load_h5py()  # now, not inside the first (timed) I/O phase
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
            calls[0] += nbytes > 0  # the file's closing throttle(0) is not a write
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
            if phase.kind == "write":
                self._make_room(int(phase.amount))
            grant = self.coord.begin_io(phase.index, phase.kind, int(phase.amount))
            info = {"directory": grant.directory,
                    "files": self.manifest["files"] if phase.kind == "read" else None}
        info = self.watch.bcast_object(info)
        start = time.time()
        throttle = self._throttle_for(phase)
        nbytes = int(phase.amount)
        # a batch run with I/O nodes: every rank waits for its part's grant (its I/O node's), and says
        # when its bytes are carried (the part's last rank releases it); other coordinators have no parts
        end_part = getattr(self.coord, "end_part", None)
        if end_part is not None:
            self.coord.begin_part(phase.index, phase.kind, nbytes)
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
                checkpoint.share(nbytes, self.size, self.rank), throttle, self.fill, cfg.fsync,
                quota=self.coord if hasattr(self.coord, "reserve") else None, carried=False)
            if end_part is not None:
                end_part(phase.index)
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
            # the phase ends once the link has carried every rank's last bytes: the manifest and the
            # pruning above overlap the link's last booked interval instead of following it
            throttle(0)
            self.watch.barrier()
        else:
            path = Path(info["files"][self.rank]["path"])
            checkpoint.read_rank_file(path, checkpoint.share(nbytes, self.size, self.rank), throttle,
                                      cfg.chunk_bytes)
            if end_part is not None:
                end_part(phase.index)
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

    def _make_room(self, nbytes: int) -> None:
        """Rank 0, before a write phase: drop the latest checkpoint's files if the new one
        would not fit beside them in the job's quota (only with a coordinator that keeps one)."""
        room = getattr(self.coord, "room", None)
        if room is None or self.manifest is None or room() >= nbytes:
            return
        freed = checkpoint.drop(self.manifest)
        if freed:
            what = "staged input" if self.manifest.get("phase") == 0 else f"checkpoint of phase {self.manifest['phase']}"
            print(f"[rank 0] dropped {freed} B ({what}, superseded) to make room for {nbytes} B",
                  file=sys.stderr, flush=True)

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
    try:
        return checkpoint.read_manifest(path)
    except ValueError:
        return None
