"""What a real batch run does to its jobs: the effectors the batch driver calls when the kernel decides.

:class:`JobEffectors` is the part of :class:`~iolab.emulator.batch.run.BatchEmulation` that acts, the
real run's :class:`~iolab.middleware.policies.batch.driver.JobEffects`: a started job's hosts, its HPS
allocation and stage-in through the storage manager (:mod:`iolab.middleware.storage_actor`), its launch
(:mod:`iolab.emulator.batch.jobs`), the watch over its processes (exit, crash, kill factor), its
stage-out, what its end stops (processes, copies, storage, its I/O-node parts; ``halt``), its process
tree stopped and continued for the load controller (``pause``, ``unpause``), and advance stage-in's early
copies.  What happens to the kernel at each of these is the driver's (``driver``: end, kill, suspend,
resume).  It is a mixin: the loop's class holds the state it uses (``kernel``, ``driver``, ``mgr``,
``procs``, ``launcher``, ``io``, ``controller``, ``progress``, ``early_runs``, ``session``, ``on_launch``,
``stopped``, ``s``, ``lps``).  Each effector is told the instant it acts at (``t``, spec seconds), as the
simulator's are.  A storage manager's or I/O nodes' actor that dies loses the run (``RunError``).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from iolab.errors import RunError
from iolab.invariants import InvariantViolation
from iolab.middleware.policies.batch.kernel import (
    ALLOCATING, DONE, FAILED, FUTURE, KILLED, QUEUED, RUNNING, STAGE_IN, STAGE_OUT,
)
from iolab.middleware.policies.batch.nodes import ids as node_ids
from iolab.middleware.storage_actor import result

from iolab.emulator.batch.jobs import JobRun


class JobEffectors:
    """The effectors of a real batch run's jobs (module doc)."""

    def begin(self, j: JobRun, t: float) -> None:
        """A job the kernel started: take its hosts; on HPS ask the manager for the bytes the
        kernel placed, else launch it."""
        if not j.hosts:
            j.hosts = node_ids(j.node_ids)  # the kernel's allocator chose them (lowest free ids)
        if j.queued.id in self.early_runs and self._use_early(j):
            return
        if j.state == ALLOCATING:
            return  # the kernel asks the disks again at j.retry_at (the loop's retry)
        if j.state == STAGE_IN:
            bs = self.s.bytes_scale
            parts = [(d, int(b * bs)) for d, b in j.parts] if self.kernel.allocator is not None else None
            nbytes = sum(b for _, b in parts) if parts is not None else int(j.queued.storage * bs)
            j.ref, j.pending = self.mgr.allocate_async(j.queued.id, nbytes, parts), "alloc"
        else:
            self._launch(j)

    def _ready(self, j: JobRun):
        import ray  # lazy: Ray only when a run starts

        done, _ = ray.wait([j.ref], timeout=0)
        if not done:
            return None
        ref, j.ref, j.pending = j.ref, None, ""
        return result(ref)

    def _advance(self, j: JobRun, t: float) -> None:
        """Move ``j`` on at the poll's instant ``t`` if its current effector is done."""
        k = self.kernel
        try:
            if j.pending == "alloc":
                a = self._ready(j)
                if a is None:
                    return
                if a["status"] != "allocated":  # refused by the manager (hps_full: refuse): fall back to LPS
                    self.progress.note(f"{j.queued.id}: HPS allocation {a['status']} ({a['reason']}); runs on LPS")
                    k.fall_back(j, t, f"storage manager: {a['status']} ({a['reason']})")
                    self._launch(j)
                    return
                j.directory = self.mgr.open_dir("hps", j.queued.id)
                sources = self.procs.inputs(j)
                if sources:
                    j.ref = self.mgr.stage_async(j.queued.id, "stage-in", sources, j.directory + "/input")
                    j.pending = "stage-in"
                    return
                k.enter(j, RUNNING, t)
                self._launch(j)
                return
            if j.pending == "stage-in":
                rec = self._ready(j)
                if rec is None:
                    return
                j.staged.append(rec)
                k.staged(j, "stage-in", rec["bytes"] / self.s.bytes_scale, t, tol=1 / self.s.bytes_scale)
                k.enter(j, RUNNING, t)
                self._launch(j)
                return
            if j.state == RUNNING:
                self._watch(j, t)
                return
            if j.pending == "stage-out":
                rec = self._ready(j)
                if rec is None:
                    return
                j.staged.append(rec)
                k.staged(j, "stage-out", rec["bytes"] / self.s.bytes_scale, t, tol=1 / self.s.bytes_scale)
                self.driver.end(j, t, DONE)
        except InvariantViolation:
            raise  # strict mode: a broken rule stops the run
        except Exception as exc:  # a staging or storage error ends this job only
            from ray.exceptions import RayActorError  # lazy: Ray only when a run starts

            if isinstance(exc, RayActorError):
                raise RunError(f"the storage manager actor died ({type(exc).__name__}); the run is lost") from None
            self.progress.note(f"{j.queued.id} failed in {j.state}: {type(exc).__name__}: {exc}")
            self.driver.end(j, t, FAILED, f"{j.state}: {exc}")

    def _watch(self, j: JobRun, t: float) -> None:
        rc = j.proc.poll()
        if rc is None:
            limit = self.s.kill_factor * float(j.job.walltime) * self.s.time_scale + 60  # the request, not the estimate
            if time.time() - j.launched > limit:
                j.rc = self.launcher.kill(j, grace=2.0)
                self.progress.note(f"{j.queued.id} killed: ran {limit:.0f} s wall (kill_factor x walltime)")
                self.driver.end(j, t, KILLED, f"ran longer than {limit:.0f} s wall")
            return
        j.rc, j.exited = rc, time.time()
        if rc != 0:
            self.launcher.kill(j, grace=1.0)  # ranks left behind by a killed mpiexec (or srun)
            quota = self.mgr.quota_refusal(j.queued.id) if j.tier == "hps" else ""  # the manager refused a write
            self.progress.note(f"{j.queued.id} failed: exit {rc}{': ' + quota if quota else ''} "
                               f"(log: {self.procs.log(j)})")
            self.driver.end(j, t, FAILED,
                            f"processes exited with code {rc}" + (f"; {quota}" if quota else ""))
            return
        files = self.procs.output_files(j)
        if j.tier == "hps" and j.job.output > 0 and files:
            self.kernel.enter(j, STAGE_OUT, t)
            j.ref = self.mgr.stage_async(j.queued.id, "stage-out", files, str(self.lps / "outputs" / j.queued.id))
            j.pending = "stage-out"
            return
        if j.tier == "lps" and j.job.output > 0 and files:
            dest = self.lps / "outputs" / j.queued.id
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(dest, ignore_errors=True)
            os.replace(Path(files[0]).parent, dest)  # LPS is the permanent store: a rename, no copy
        self.driver.end(j, t, DONE)

    def halt(self, j: JobRun, t: float, state: str, message: str) -> None:
        """``j`` ends (done, failed, killed): the controller lets go of it (a stopped tree is continued, to
        be killed), its processes and copies stop, its storage is freed, its I/O-node parts let go."""
        if self.controller is not None:
            self.controller.ended(j)
        if j.proc is not None and j.proc.poll() is None:
            j.rc = self.launcher.kill(j, grace=1.0)
        if j.ref is not None:
            import ray  # lazy: Ray only when a run starts

            try:
                ray.cancel(j.ref)
            except Exception:
                pass
            j.ref, j.pending = None, ""
        try:
            self.mgr.free(j.queued.id)
        except Exception as exc:
            self.progress.note(f"{j.queued.id}: freeing its storage failed: {exc}")
        if self.io is not None and j.io_nodes and not self.stopped:  # a crashed or killed job's parts let go
            self._io(self.io.drop, j.queued.id, message or state)  # of their I/O nodes (a broken actor: no)

    def pause(self, j: JobRun, t: float) -> bool:
        """The load controller suspends ``j``: its process tree stops (False: no controller, or ``j`` is
        not running, or its processes are gone)."""
        return self.controller is not None and self.controller.pause(j)

    def unpause(self, j: JobRun, t: float) -> bool:
        """``j``'s process tree goes on (False: the controller had not stopped it)."""
        return self.controller is not None and self.controller.unpause(j)

    # -- advance stage-in: the kernel decides, the storage manager copies early ---------------------------
    def _advance_early(self, now: float) -> None:
        """Begin the early copies the kernel decided (allocate the job's HPS bytes, then copy its
        inputs into its HPS directory), move them on, and drop the ones the kernel wasted."""
        import ray  # lazy: Ray only when a run starts

        k = self.kernel  # (the kernel decided them at the loop's advance checks)
        bs = self.s.bytes_scale
        for job in k.early:
            if job not in self.early_runs:
                q = k.by_id[job].queued
                self.early_runs[job] = {"ref": self.mgr.allocate_async(job, int(q.storage * bs)), "pending": "alloc"}
        for job, e in list(self.early_runs.items()):
            if job not in k.early and k.by_id[job].state in (FUTURE, QUEUED, KILLED):
                # the kernel wasted the copy (the plan moved the job elsewhere, or the job was withdrawn
                # before its start: rejected by its scheduler) and counts its space free: so does the manager
                self._drop_early(job)
                continue
            if e["pending"] != "alloc" or not ray.wait([e["ref"]], timeout=0)[0]:
                continue
            a = result(e["ref"])
            if a["status"] != "allocated":
                k.cancel_early(job, now)
                self._drop_early(job)
                continue
            e["dir"] = self.mgr.open_dir("hps", job)
            e["ref"] = self.mgr.stage_async(job, "stage-in", self.procs.inputs(k.by_id[job]), e["dir"] + "/input")
            e["pending"] = "stage"

    def _use_early(self, j: JobRun) -> bool:
        """``j`` starts with an early copy: go on from where the copy is (True), or drop a wasted
        one and start normally (False)."""
        job = j.queued.id
        if job not in self.kernel.early_staged or j.state != STAGE_IN:
            self._drop_early(job)
            return False
        e = self.early_runs.pop(job)
        if e["pending"] == "alloc":
            j.ref, j.pending = e["ref"], "alloc"  # the allocation goes on as a normal start's would
        else:
            j.directory = e["dir"]
            j.ref, j.pending = e["ref"], "stage-in"  # already copied (or copying) into its HPS directory
        return True

    def _drop_early(self, job: str) -> None:
        """Delete an early copy and give its space back (wasted, or the job was cancelled or died)."""
        import ray  # lazy: Ray only when a run starts

        e = self.early_runs.pop(job, None)
        if e is None:
            return
        try:
            ray.cancel(e["ref"])
        except Exception:
            pass
        try:
            self.mgr.free(job)  # removes the job's HPS directory and returns its bytes
        except Exception as exc:
            self.progress.note(f"{job}: freeing its early copy failed: {exc}")

    def _killed_by_policy(self, j: JobRun, t: float, message: str) -> None:
        """The scheduler killed ``j`` (Decision.kills): noted, then the driver ends it."""
        self.progress.note(f"{j.queued.id}: {message}")
        self.driver.kill(j, t, message)

    def _io(self, call, *args):
        """A call to the I/O nodes' actor; its death loses the run (``RunError``, as the storage manager's in
        :meth:`_advance`)."""
        try:
            return call(*args)
        except InvariantViolation:
            raise
        except Exception as exc:
            from ray.exceptions import RayActorError  # lazy: Ray only when a run starts

            if isinstance(exc, RayActorError):
                raise RunError(f"the I/O nodes' actor died ({type(exc).__name__}); the run is lost") from None
            raise

    # -- launching -----------------------------------------------------------------------------------------
    def _launch(self, j: JobRun) -> None:
        if j.tier == "lps":
            j.directory = self.mgr.open_dir("lps", j.queued.id)
        self.procs.launch(j, self.session, self.mgr.name)
        if self.on_launch is not None:
            self.on_launch(j.queued.id, j.proc)
