"""Run a batch experiment (``kind: batch``) for real: a real-clock batch loop over MPI jobs.

    trace = run_batch_emulation(spec, out="batch.h5")

The simulator's model (:mod:`iolab.sim.batch`), with real processes, directories
and a real clock (docs/storage.md):

1. **Checks, no process yet** (:func:`check_batch_runnable`): sizes, ranks,
   the run's estimated wall time, ``mpiexec``, the work directory.
2. **Inputs on LPS.**  Every job's input is written beforehand to
   ``WORK/lps/inputs/<job>/`` (one HDF5 file per rank, ``iolab.apps.checkpoint``'s
   format, ``input * bytes_scale`` bytes together).
3. **Ray + the storage manager actor** (:mod:`iolab.middleware.storage_actor`),
   which owns ``WORK/lps`` and ``WORK/hps`` (capacity ``capacity *
   bytes_scale`` bytes, disks if the platform has them).
4. **The loop** (clock ``t = (wall - t0) / time_scale`` spec seconds): jobs
   are submitted at their submit times; at every submission and every job end
   the *same* batch policy object as the simulator's decides on a
   :class:`Snapshot`.  A started job takes ``nodes`` logical nodes of the
   node budget and then runs lackner2019's steps (:func:`iolab.workloads.steps.job_steps`):
   on HPS the manager allocates its ``storage`` bytes, opens its HPS
   directory and stages the input in (paced at R_stage); the job runs as
   ``mpiexec -n R python -m iolab.apps.jacobi --phases-json ...`` (read the input,
   compute segments and checkpoint writes, write the output; inside a Slurm
   allocation one ``srun`` step on the nodes its node ids name:
   :mod:`iolab.emulator.batch.launch`) against its tier directory, every byte
   paced by the tier's token bucket (R_lps or R_hps); then the manager stages
   the output out to ``WORK/lps/outputs``.
   On LPS the job reads hard links of its input in its LPS directory and its
   output is moved to ``WORK/lps/outputs``.  At the end (or a crash) the
   job's directory is removed and its nodes and HPS bytes return.
5. **The trace**, in the simulator's schema and units (spec seconds, spec
   bytes), so ``iolab simulate`` and ``iolab emulate`` compare directly.

A job whose processes exit non-zero (a crashed or killed rank) is ``failed``;
its nodes and space are freed and the others go on.  Ctrl-C kills every job,
frees their space, writes the partial trace (``complete = False``) and
re-raises ``KeyboardInterrupt``; in strict mode a broken rule (the kernel's or an I/O
node's) does the same and raises its ``InvariantViolation``.

The parts: :mod:`iolab.emulator.batch.checks` (step 1 and the settings),
:mod:`iolab.emulator.batch.jobs` (the job record, inputs, processes and their outputs),
:mod:`iolab.emulator.batch.launch` (``mpiexec`` or ``srun``: start, kill, pause, hosts),
:mod:`iolab.emulator.batch.trace` (step 5); this module holds the loop and every job's
state changes.
"""

from __future__ import annotations

import math
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from iolab.errors import RunError
from iolab.invariants import InvariantViolation
from iolab.middleware.policies.batch.checks import BatchChecker
from iolab.middleware.policies.batch.kernel import (
    ALLOCATING, DONE, ENDED, FAILED, FUTURE, HOLDING, KILLED, QUEUED, RUNNING, STAGE_IN, STAGE_OUT, BatchKernel,
)
from iolab.middleware.policies.batch.nodes import ids as node_ids
from iolab.middleware.policies.interference import law_of, tier_laws
from iolab.middleware.io_node_actor import IONodes
from iolab.middleware.storage_actor import StorageManager, result
from iolab.workloads import load_workload
from iolab.specs.batch import BatchExperiment
from iolab.trace import Trace

from iolab.emulator.batch.checks import check_batch_runnable
from iolab.emulator.batch.controller import ControllerDriver
from iolab.emulator.batch.jobs import JobProcesses, JobRun
from iolab.emulator.batch.launch import MpiexecJobs, make_job_launcher
from iolab.emulator.batch.trace import batch_trace
from iolab.emulator.progress import StatusLine
from iolab.emulator.run_clock import PartialTraces, run_clock, save_partial
from iolab.emulator.output_lock import hold_outputs
from iolab.emulator.reaper import Supervisor
from iolab.emulator.settings import default_work_dir, settle_settings
from iolab.middleware.policies.io_guard import policy_label, shippable
from iolab.middleware.policies.loader import check_spec_policies


def run_batch_emulation(spec: BatchExperiment, *, out: str | Path | None = None, address: str | None = None,
                        work_dir: str | Path | None = None, progress: bool | StatusLine = False,
                        source: str = "<spec>", time_scale: float | None = None,
                        on_launch: Callable[[str, Any], None] | None = None, strict: bool | None = None,
                        launcher: str | None = None,
                        makespan_of: Callable[[BatchExperiment, list], float] | None = None, scheduler=None,
                        **overrides) -> Trace:
    """Emulate the batch experiment ``spec``; returns the trace, also written to ``out`` if given.

    ``on_launch(job, popen)`` is called right after each job's ``mpiexec`` (or ``srun``) starts
    (tests use it to kill a job).  ``strict`` checks every decision and state change of the batch
    kernel (default: ``IOLAB_STRICT``).  ``launcher``: ``"mpiexec"`` or ``"srun"`` (default: srun
    inside a Slurm allocation, :mod:`iolab.emulator.batch.launch`).  Raises SpecError/RunError (or
    an allocation too small for the spec) before any process starts; ``makespan_of`` estimates the
    run's wall time for that check (:func:`~iolab.emulator.batch.checks.check_batch_runnable`).  ``scheduler``
    replaces the spec's (an external decision process's adapter, behind its guard)."""
    spec = settle_settings(spec, time_scale=time_scale,
                           work_dir=str(work_dir) if work_dir is not None else None, **overrides)
    s = spec.emulator
    work = (Path(s.work_dir) if s.work_dir else default_work_dir(spec, out)).resolve()
    check_spec_policies(spec, source)
    jobs = load_workload(spec)
    mpiexec = check_batch_runnable(spec, jobs, work, source, makespan_of)
    jobs_launcher = make_job_launcher(launcher, spec, jobs, work, mpiexec)
    run = BatchEmulation(spec, jobs, work, mpiexec, address,
                         progress if isinstance(progress, StatusLine) else StatusLine(bool(progress), prefix="batch",
                                                                                      every=s.progress_every),
                         on_launch, strict=strict, launcher=jobs_launcher, scheduler=scheduler)
    with hold_outputs([out, work], "output of iolab emulate"):  # one run per trace and per work folder
        return run.run(out)


# ---------------------------------------------------------------- the run

LIVE_EVERY = 0.5  # wall seconds between snapshots for a live view


class BatchEmulation:
    """The batch kernel advanced on wall time, with the effectors of a real run."""

    poll = 0.05

    def __init__(self, spec: BatchExperiment, jobs: list, work: Path, mpiexec: str, address: str | None,
                 progress: StatusLine, on_launch: Callable[[str, Any], None] | None = None,
                 strict: bool | None = None, launcher=None, scheduler=None):
        self.spec, self.work, self.address = spec, work, address
        self.s = spec.emulator
        self.progress, self.on_launch = progress, on_launch
        p = spec.platform
        ranks = self.s.ranks_for
        self.strict = strict
        self.kernel = BatchKernel.from_spec(spec, jobs, observer=BatchChecker.if_strict(strict), scheduler=scheduler,
                                            make_job=lambda k, job, q: JobRun(k, job, q, ranks=ranks(job.nodes)))
        self.kernel.on_kill = self._killed_by_policy
        self.label = scheduler.name if scheduler is not None else spec.scheduler.label  # what the trace calls it
        self.policy = self.kernel.policy
        self.jobs: list[JobRun] = self.kernel.jobs  # type: ignore[assignment]
        self.hps_capacity = p.hps.total_capacity
        self.mgr = None
        self.t0: float | None = None
        self.wall0 = time.time()
        self.work_deleted: float | None = None  # spec seconds at which the work folder was seen gone
        self.out: str | Path | None = None
        self.partials = PartialTraces(None, self.progress)
        self.supervisor: Supervisor | None = None
        self.lps = work / "lps"
        self.hps = work / "hps"
        self.launcher = launcher if launcher is not None else MpiexecJobs(mpiexec)  # how jobs start, end, pause
        self.procs = JobProcesses(spec, work, self.launcher)
        self.controller: ControllerDriver | None = None  # dheenadayalan2017's load controller, if the spec has one
        self.early_runs: dict[str, dict] = {}  # advance stage-in: job -> {"ref", "pending": alloc | stage, "dir"}
        self.io: IONodes | None = None  # the I/O nodes' actor, if the platform has I/O nodes
        self.io_checked = 0.0  # wall time the I/O nodes' strict checks were last asked
        self.stopped = ""  # why the run was stopped by a broken strict rule ("" while it goes)

    # -- clock ----------------------------------------------------------------------------------
    def now(self) -> float:
        return (time.time() - self.t0) / self.s.time_scale

    # -- life cycle -------------------------------------------------------------------------------
    def run(self, out: str | Path | None) -> Trace:
        for d in (self.work / "apps", self.work / "logs"):
            d.mkdir(parents=True, exist_ok=True)
        with Supervisor(self.work) as self.supervisor:  # cleans up after a killed driver
            return self._run(out)

    def _run(self, out: str | Path | None) -> Trace:
        self.out = self.partials.out = out
        self.procs.prepare_inputs(self.jobs)
        session = self.launcher.open_ray(self.address)
        try:
            self.session = session
            p, s = self.spec.platform, self.s
            cap = s.bandwidth_cap
            disks = p.hps.layout() if p.hps.servers else None
            if disks:  # the kernel places the bytes (spec's placement); the manager holds them, scaled
                disks = [{**d, "capacity": int(d["capacity"] * s.bytes_scale)} for d in disks]
            self.mgr = StorageManager.create(
                str(self.lps), str(self.hps), math.ceil(self.hps_capacity * s.bytes_scale), disks=disks,
                rng=self.spec.seed, on_full=s.hps_full, chunk=s.chunk_bytes,
                rates={"lps": s.wall_rate(p.lps.rate) if cap else None,
                       "hps": s.wall_rate(p.hps.rate) if cap else None,
                       "stage": s.wall_rate(p.stage_rate) if cap else None},
                laws=tier_laws(self.spec),  # the tiers' interference (the simulator's links take the same)
                name=f"storage-{uuid.uuid4().hex[:8]}", namespace=session.namespace)
            if p.io_nodes is not None:  # one actor holds every I/O node's arbiter and bucket
                self.io = IONodes.create(
                    p.io_nodes, policy=shippable(p.io_node.policy), rate=p.io_node.rate,
                    rates={"lps": p.lps.rate, "hps": p.hps.rate, "stage": p.stage_rate},
                    cap=s.wall_rate(p.io_node.rate) if cap else None, law=law_of(p.io_node.interference),
                    time_scale=s.time_scale, bytes_scale=s.bytes_scale, strict=self.strict,
                    name=f"io-nodes-{uuid.uuid4().hex[:8]}", namespace=session.namespace)
                self.procs.io = self.io
            if self.spec.controller is not None and self.spec.controller.enabled:
                # before the clock: creating the actor took up to 36 s on a loaded machine, and every job
                # of the run started that much late (measured: 7 213 spec s)
                self.controller = ControllerDriver(self, session)
            self.t0 = time.time()
            if self.io is not None:
                self.io.start(self.t0)
            if self.controller is not None:
                self.controller.t0 = self.t0
            self.progress.note(f"clock started: {len(self.jobs)} jobs, scheduler {self.label}, "
                               f"{p.nodes} nodes, time scale {s.time_scale:g}, bytes scale {s.bytes_scale:g}, "
                               f"work dir {self.work}")
            return run_clock(self._loop_or_stop, self._interrupted, self._trace, out)
        finally:
            if self.controller is not None:
                self.controller.stop(self)  # no job is left stopped, whatever happened
            self.progress.done()
            self._kill_all()
            if self.mgr is not None:
                self.mgr.kill()
            if self.io is not None:
                self.io.kill()
            session.close()

    def _write_partial(self) -> None:
        """The trace so far, every few wall seconds (:class:`~iolab.emulator.run_clock.PartialTraces`)."""
        self.partials.write(lambda: self._trace(complete=False))

    def _loop_or_stop(self) -> None:
        """The loop; a broken strict rule (``InvariantViolation``, from the kernel's checker or the I/O
        nodes' actor) stops the run as Ctrl-C does (every job killed, the partial trace written) and
        propagates."""
        try:
            self._loop()
        except InvariantViolation as exc:
            self.stopped = f"strict invariant {exc.rule}"
            self._interrupted(self.out, f"strict mode: {exc}")
            raise

    def _interrupted(self, out, why: str = "interrupted") -> None:
        self.progress.note(f"{why}: killing every job")
        if self.controller is not None:
            self.controller.release(self, "interrupted")
        self._kill_all()
        for j in self.jobs:
            if j.state in HOLDING:
                try:
                    self._end(j, KILLED, self.stopped or "interrupted")
                except InvariantViolation:  # the kernel's checker broke: the job stays as it was
                    pass
        if self.progress.live:  # the last frame shows the jobs killed, not still running
            try:
                self.progress.show(self.snapshot())
            except Exception:  # a dead storage manager: the notes say what happened
                pass
        save_partial(lambda: self._trace(complete=False), out, self.work, self.progress)

    def _kill_all(self) -> None:
        self.procs.kill_all(self.jobs)

    # -- the loop: the kernel on wall time ----------------------------------------------------------
    def _loop(self) -> None:
        k = self.kernel
        future = list(self.jobs)
        last = last_shown = -math.inf
        while True:
            now = self.now()
            while future and future[0].queued.submit <= now:
                k.submit(future.pop(0), now)
            for j in list(k.running.values()):
                if j.state == ALLOCATING:
                    if now >= j.retry_at:
                        k.retry(j, now)
                        self._begin(j)
                else:
                    if now >= k.estimate_due(j):  # the predictor's estimate is revised at its predicted end
                        k.extend_estimate(j, now)
                    self._advance(j)
            if self.controller is not None:
                self.controller.step(self)
            if k.wakes:
                k.wake_due(now)  # a call the policy asked for (Decision.wake_at) is due: decide now
            while k.changed:
                for j in k.decide(self.now()):
                    self._begin(j)
            if k.advance is not None:
                self._advance_early(self.now())
            self._check_io()
            self._write_partial()
            if self.work_deleted is None and not self.work.is_dir():
                self.work_deleted = self.now()
                self.progress.note(f"the work folder {self.work} was deleted during the run: its logs and "
                                   "checkpoints are lost")
            if not future and not k.queue and not k.running:
                self._check_io(force=True)
                self._progress_line(force=True)
                return
            if not future and not k.running and not k.changed:
                k.stalled(self.now())  # jobs wait, nothing else is left: only a call the policy asked for
            if time.time() - last >= self.s.progress_every:
                self._progress_line()
                last = time.time()
            if self.progress.live and time.time() - last_shown >= LIVE_EVERY:
                self.progress.show(self.snapshot())
                last_shown = time.time()
            time.sleep(self.poll)

    def _check_io(self, force: bool = False) -> None:
        """Strict mode: the I/O nodes' checks broke a rule (the actor keeps the first violation): stop
        the run with it (asked every half wall second, and at the end, when nothing may wait or hold a
        grant any more)."""
        if self.io is None or (not force and time.time() - self.io_checked < 0.5):
            return
        self.io_checked = time.time()
        if force:
            self._io(self.io.close)
        v = self._io(self.io.violation)
        if v is not None:
            raise v

    def _io(self, call, *args):
        """A call to the I/O nodes' actor; its death loses the run (``RunError``, as the storage manager's)."""
        try:
            return call(*args)
        except InvariantViolation:
            raise
        except Exception as exc:
            from ray.exceptions import RayActorError  # lazy: Ray only when a run starts

            if isinstance(exc, RayActorError):
                raise RunError(f"the I/O nodes' actor died ({type(exc).__name__}); the run is lost") from None
            raise

    # -- effectors ---------------------------------------------------------------------------------
    def _begin(self, j: JobRun) -> None:
        """A job the kernel started: take its hosts; on HPS ask the manager for the bytes the
        kernel placed, else launch it."""
        if not j.hosts:
            j.hosts = node_ids(j.node_ids)  # the kernel's allocator chose them (lowest free ids)
        if j.queued.id in self.early_runs and self._use_early(j):
            return
        if j.state == ALLOCATING:
            return  # the kernel asks the disks again at j.retry_at
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

    def _advance(self, j: JobRun) -> None:
        """Move ``j`` on if its current effector is done."""
        k = self.kernel
        try:
            if j.pending == "alloc":
                a = self._ready(j)
                if a is None:
                    return
                if a["status"] != "allocated":  # refused by the manager (hps_full: refuse): fall back to LPS
                    self.progress.note(f"{j.queued.id}: HPS allocation {a['status']} ({a['reason']}); runs on LPS")
                    k.fall_back(j, self.now(), f"storage manager: {a['status']} ({a['reason']})")
                    self._launch(j)
                    return
                j.directory = self.mgr.open_dir("hps", j.queued.id)
                sources = self.procs.inputs(j)
                if sources:
                    j.ref = self.mgr.stage_async(j.queued.id, "stage-in", sources, j.directory + "/input")
                    j.pending = "stage-in"
                    return
                k.enter(j, RUNNING, self.now())
                self._launch(j)
                return
            if j.pending == "stage-in":
                rec = self._ready(j)
                if rec is None:
                    return
                j.staged.append(rec)
                k.staged(j, "stage-in", rec["bytes"] / self.s.bytes_scale, self.now(), tol=1 / self.s.bytes_scale)
                k.enter(j, RUNNING, self.now())
                self._launch(j)
                return
            if j.state == RUNNING:
                self._watch(j)
                return
            if j.pending == "stage-out":
                rec = self._ready(j)
                if rec is None:
                    return
                j.staged.append(rec)
                k.staged(j, "stage-out", rec["bytes"] / self.s.bytes_scale, self.now(), tol=1 / self.s.bytes_scale)
                self._end(j, DONE)
        except InvariantViolation:
            raise  # strict mode: a broken rule stops the run
        except Exception as exc:  # a staging or storage error ends this job only
            from ray.exceptions import RayActorError  # lazy: Ray only when a run starts

            if isinstance(exc, RayActorError):
                raise RunError(f"the storage manager actor died ({type(exc).__name__}); the run is lost") from None
            self.progress.note(f"{j.queued.id} failed in {j.state}: {type(exc).__name__}: {exc}")
            self._end(j, FAILED, f"{j.state}: {exc}")

    def _watch(self, j: JobRun) -> None:
        rc = j.proc.poll()
        if rc is None:
            limit = self.s.kill_factor * float(j.job.walltime) * self.s.time_scale + 60  # the request, not the estimate
            if time.time() - j.launched > limit:
                j.rc = self.launcher.kill(j, grace=2.0)
                self.progress.note(f"{j.queued.id} killed: ran {limit:.0f} s wall (kill_factor x walltime)")
                self._end(j, KILLED, f"ran longer than {limit:.0f} s wall")
            return
        j.rc, j.exited = rc, time.time()
        if rc != 0:
            self.launcher.kill(j, grace=1.0)  # ranks left behind by a killed mpiexec (or srun)
            quota = self.mgr.quota_refusal(j.queued.id) if j.tier == "hps" else ""  # the manager refused a write
            self.progress.note(f"{j.queued.id} failed: exit {rc}{': ' + quota if quota else ''} "
                               f"(log: {self.procs.log(j)})")
            self._end(j, FAILED, f"processes exited with code {rc}" + (f"; {quota}" if quota else ""))
            return
        files = self.procs.output_files(j)
        if j.tier == "hps" and j.job.output > 0 and files:
            self.kernel.enter(j, STAGE_OUT, self.now())
            j.ref = self.mgr.stage_async(j.queued.id, "stage-out", files, str(self.lps / "outputs" / j.queued.id))
            j.pending = "stage-out"
            return
        if j.tier == "lps" and j.job.output > 0 and files:
            dest = self.lps / "outputs" / j.queued.id
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(dest, ignore_errors=True)
            os.replace(Path(files[0]).parent, dest)  # LPS is the permanent store: a rename, no copy
        self._end(j, DONE)

    def _end(self, j: JobRun, state: str, message: str = "") -> None:
        if self.controller is not None:
            self.controller.ended(self, j)
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
        self.kernel.finish(j, self.now(), state, message)

    # -- advance stage-in: the kernel decides, the storage manager copies early ---------------------------
    def _advance_early(self, now: float) -> None:
        """Begin the early copies the kernel decided (allocate the job's HPS bytes, then copy its
        inputs into its HPS directory), move them on, and drop the ones the kernel wasted."""
        import ray  # lazy: Ray only when a run starts

        k = self.kernel
        if now >= k.advance_due():
            k.advance_check(now)
        bs = self.s.bytes_scale
        for job in k.early:
            if job not in self.early_runs:
                q = k.by_id[job].queued
                self.early_runs[job] = {"ref": self.mgr.allocate_async(job, int(q.storage * bs)), "pending": "alloc"}
        for job, e in list(self.early_runs.items()):
            if job not in k.early and k.by_id[job].state in (FUTURE, QUEUED):
                self._drop_early(job)  # the plan moved the job elsewhere: the copy is wasted
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
        """The scheduler killed ``j`` (Decision.kills): its processes and staging stop, its space is freed."""
        self.progress.note(f"{j.queued.id}: {message}")
        self._end(j, KILLED, message)

    def cancel(self, job: str) -> None:
        """Withdraw a waiting job (cancelled before its start): its early copy is deleted."""
        self.kernel.withdraw(job, self.now())
        self._drop_early(job)

    # -- launching -----------------------------------------------------------------------------------------
    def _launch(self, j: JobRun) -> None:
        if j.tier == "lps":
            j.directory = self.mgr.open_dir("lps", j.queued.id)
        self.procs.launch(j, self.session, self.mgr.name)
        if self.on_launch is not None:
            self.on_launch(j.queued.id, j.proc)

    def snapshot(self) -> dict:
        """What a live view shows now (plain data): per job its state, tier and step; nodes
        free; per tier the capacity used and free (from the storage manager); the jobs the
        load controller has suspended (``suspended``); with I/O nodes, per I/O node the jobs
        holding a grant, waiting (policy order) and held by a suspension (``io_nodes``, from the
        I/O nodes' actor, and its ``io_policy``)."""
        k = self.kernel
        now = self.now()
        jobs = []
        for j in self.jobs:
            jobs.append({"id": j.queued.id, "state": j.state, "tier": j.tier, "nodes": j.queued.nodes,
                         "step": j.step, "steps": len(j.steps),
                         "elapsed": now - j.start if j.state in HOLDING and j.start == j.start else math.nan,
                         "walltime": j.queued.walltime})
        tiers = []
        st = self.mgr.status() if self.mgr is not None else None
        if st is not None:
            b = self.s.bytes_scale  # the manager holds scaled bytes; the view shows the spec's
            tiers.append({"tier": "hps", "capacity": st["capacity"] / b, "used": st["used"] / b,
                          "free": st["free"] / b, "waiting": list(st["waiting"])})
        tiers.append({"tier": "nodes", "capacity": k.total_nodes, "used": k.total_nodes - k.free_nodes,
                      "free": k.free_nodes, "waiting": list(k.queue)})
        snap = {"kind": "batch", "time": now, "elapsed": time.time() - self.t0, "scheduler": self.label,
                "jobs": jobs, "tiers": tiers, "suspended": sorted(st.get("suspended", [])) if st else []}
        if self.io is not None:
            io = self._io(self.io.snapshot)
            snap.update(io_nodes=io["io_nodes"], io_policy=io["policy"])
        return snap

    def _progress_line(self, force: bool = False) -> None:
        if not self.progress.enabled or self.progress.live:  # a live view shows all this and more
            return
        k = self.kernel
        counts: dict[str, int] = {}
        for j in self.jobs:
            counts[j.state] = counts.get(j.state, 0) + 1
        on_hps = sum(1 for j in k.running.values() if j.tier == "hps")
        held = sum(j.storage for j in k.running.values())
        ended = sum(counts.get(x, 0) for x in ENDED)
        failed = counts.get(FAILED, 0) + counts.get(KILLED, 0)
        line = (f"t={self.now():.0f} s ({time.time() - self.t0:.0f} s wall)  submitted "
                f"{len(self.jobs) - counts.get(FUTURE, 0)}/{len(self.jobs)}  queued {counts.get(QUEUED, 0)}  "
                f"running {len(k.running)} ({on_hps} on HPS, {counts.get(STAGE_IN, 0) + counts.get(STAGE_OUT, 0)} "
                f"staging)  ended {ended} ({failed} failed)  nodes free {k.free_nodes}/{k.total_nodes}  "
                f"HPS held {held / max(self.hps_capacity, 1e-300):.0%}")
        self.progress.note(line)

    # -- the trace ---------------------------------------------------------------------------------------------
    def _trace(self, complete: bool) -> Trace:
        requests = [r for r in self.kernel.allocation_rows() if r[5] != "allocated"] if self.kernel.allocator else []
        samples = self.controller.sample_rows() if self.controller is not None else []
        trace = batch_trace(self.spec, self.jobs, self.mgr, t0=self.t0, decisions=self.kernel.decisions,
                            work=self.work, complete=complete, requests=requests, samples=samples,
                            predictions=self.kernel.prediction_rows(), hosts=self.launcher.hosts, io=self.io)
        trace.attrs["launcher"] = self.launcher.name
        trace.attrs["scheduler"] = trace.attrs["policy"] = self.label
        p = self.spec.platform
        if p.io_nodes is not None:  # as the simulator's trace says them
            trace.attrs.update(io_nodes=p.io_nodes, nodes_per_io_node=p.io_nodes_span, io_node_rate=p.io_node.rate,
                               io_node_policy=policy_label(p.io_node.policy), allocation=self.spec.allocation.label)
        if self.work_deleted is None and self.t0 is not None and not self.work.is_dir():
            self.work_deleted = self.now()
        if self.work_deleted is not None:
            trace.attrs["work_dir_deleted"] = self.work_deleted
        trace.attrs["advance_stage_in"] = dict(self.kernel.advance_stats)
        if self.controller is not None:  # the cost of watching the volumes: the benchmark units it wrote
            rec = self.controller.records or {}
            wall = trace.attrs.get("wall_seconds", 0.0)
            trace.attrs["monitoring"] = {
                "samples": len(samples), "bytes_written": int(rec.get("bytes_written", 0)),
                "write_seconds": float(rec.get("seconds", 0.0)),
                "share_of_wall": float(rec.get("seconds", 0.0)) / wall if wall else math.nan,
                "devices": rec.get("devices", {})}
            trace.attrs["prediction"] = rec.get("prediction", {})  # what fed the window (docs/controller.md)
        return trace
