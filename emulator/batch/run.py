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
4. **The loop**, the simulator's (:class:`~iolab.middleware.policies.batch.driver.BatchLoop`)
   on the wall clock (``t = (wall - t0) / time_scale`` spec seconds; it sleeps until
   the next event, and a poll of the jobs' processes and copies every ``poll`` wall
   seconds is one): jobs are submitted at their submit times; at every submission and
   every job end the *same* batch policy object as the simulator's decides on a
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

The parts: :mod:`iolab.emulator.batch.prerun_checks` (step 1 and the settings),
:mod:`iolab.emulator.batch.jobs` (the job record, inputs, processes and their outputs),
:mod:`iolab.emulator.batch.launch` (``mpiexec`` or ``srun``: start, kill, pause, hosts),
:mod:`iolab.emulator.batch.trace` (step 5), :mod:`iolab.emulator.batch.effectors` (what happens to a
job's processes, files and copies); this module holds the run's set-up, its clock and its poll.  What happens
at an instant (decide, start, retry, end, kill, suspend, resume) and which instant comes next are the batch
driver's and its loop's, :mod:`iolab.middleware.policies.batch.driver`, the simulator's too.
"""

from __future__ import annotations

import math
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from iolab.invariants import InvariantViolation, strict_default
from iolab.middleware.policies.batch.checker import BatchChecker
from iolab.middleware.policies.batch.driver import BatchDriver, BatchLoop
from iolab.middleware.policies.batch.job_table import scheduler_label
from iolab.middleware.policies.batch.kernel import ALLOCATING, FUTURE, HOLDING, KILLED, BatchKernel
from iolab.middleware.policies.interference import law_of, tier_laws
from iolab.middleware.io_node_actor import IONodes
from iolab.middleware.storage_actor import StorageManager
from iolab.workloads import load_workload
from iolab.specs.batch import BatchExperiment
from iolab.trace import Trace

from iolab.emulator.batch import live
from iolab.emulator.batch.effectors import JobEffectors
from iolab.emulator.batch.prerun_checks import check_batch_runnable
from iolab.emulator.batch.load_controller import ControllerDriver
from iolab.emulator.batch.jobs import JobProcesses, JobRun
from iolab.emulator.batch.launch import MpiexecJobs, make_job_launcher
from iolab.emulator.batch.trace import run_trace
from iolab.emulator.progress import StatusLine
from iolab.emulator.run_clock import PartialTraces, run_clock, save_partial
from iolab.emulator.output_lock import hold_outputs
from iolab.emulator.reaper import Supervisor
from iolab.emulator.settings import default_work_dir, settle_settings
from iolab.middleware.policies.io_guard import shippable
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
    run's wall time for that check (:func:`~iolab.emulator.batch.prerun_checks.check_batch_runnable`).  ``scheduler``
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


class BatchEmulation(JobEffectors, BatchLoop):
    """The batch loop (:class:`BatchLoop`, the simulator's) on the wall clock, with the effectors of a real
    run (:class:`JobEffectors`): a poll of the jobs' processes and copies every ``poll`` wall seconds
    (:meth:`_poll`) is its own event."""

    poll = 0.05  # wall seconds between two polls

    def __init__(self, spec: BatchExperiment, jobs: list, work: Path, mpiexec: str, address: str | None,
                 progress: StatusLine, on_launch: Callable[[str, Any], None] | None = None,
                 strict: bool | None = None, launcher=None, scheduler=None):
        self.spec, self.work, self.address = spec, work, address
        self.s = spec.emulator
        self.progress, self.on_launch = progress, on_launch
        ranks = self.s.ranks_for
        self.strict = strict = strict_default(strict)  # once for the run: what it builds is told
        self.kernel = BatchKernel.from_spec(spec, jobs, observer=BatchChecker() if strict else None,
                                            scheduler=scheduler,
                                            make_job=lambda k, job, q: JobRun(k, job, q, ranks=ranks(job.nodes)))
        self.driver = BatchDriver(self.kernel, self)  # the instants: decide, retry, end, kill, suspend, resume
        self.state = self.kernel.jobs  # the loop's jobs, in submit order
        self.links: dict = {}  # no simulated link: bytes move in the jobs' processes and the manager's copies
        self.clock = self._wait
        self.instant = 0.0  # spec seconds: the instant the loop is at, what its decisions and changes are stamped with
        self.kernel.on_kill = self._killed_by_policy  # a policy's kill is noted, then the driver's
        self.label = scheduler_label(spec, scheduler)  # what the trace calls it
        self.policy = self.kernel.policy
        self.jobs: list[JobRun] = self.kernel.jobs  # type: ignore[assignment]
        self.laws = tier_laws(spec)  # each tier's interference law: the storage manager's and the controller's probes
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
    def wall_now(self) -> float:
        """Spec seconds elapsed on the wall clock since the run's start."""
        return (time.time() - self.t0) / self.s.time_scale

    def _wait(self, t: float) -> float:
        """The loop's clock: sleep until spec time ``t`` (at most a poll ahead while the run goes), and the
        instant is when it is then (never before the last one)."""
        ahead = self.t0 + t * self.s.time_scale - time.time()
        if ahead > 0:
            time.sleep(ahead)
        self.instant = max(self.instant, self.wall_now())
        return self.instant

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
                str(self.lps), str(self.hps), math.ceil(self.kernel.hps_capacity * s.bytes_scale), disks=disks,
                rng=self.spec.seed, on_full=s.hps_full, chunk=s.chunk_bytes,
                rates={"lps": s.wall_rate(p.lps.rate) if cap else None,
                       "hps": s.wall_rate(p.hps.rate) if cap else None,
                       "stage": s.wall_rate(p.stage_rate) if cap else None},
                laws=self.laws,  # the tiers' interference (the simulator's links take the same)
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
                self.controller.stop(self, self.instant)  # no job is left stopped, whatever happened
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
            self.loop()  # the batch loop (iolab.middleware.policies.batch.driver) with this clock and these effectors
        except InvariantViolation as exc:
            self.stopped = f"strict invariant {exc.rule}"
            self._interrupted(self.out, f"strict mode: {exc}")
            raise

    def _interrupted(self, out, why: str = "interrupted") -> None:
        self.progress.note(f"{why}: killing every job")
        if self.t0 is not None:
            self.instant = max(self.instant, self.wall_now())  # the jobs end now, not at the last poll
        if self.controller is not None:
            self.controller.release(self, self.instant, "interrupted")
        self._kill_all()
        for j in self.jobs:
            if j.state in HOLDING:
                try:
                    self.driver.end(j, self.instant, KILLED, self.stopped or "interrupted")
                except InvariantViolation:  # the kernel's checker broke: the job stays as it was
                    pass
        if self.progress.live:  # the last frame shows the jobs killed, not still running
            try:
                self.progress.show(live.snapshot(self, self.instant))
            except Exception:  # a dead storage manager: the notes say what happened
                pass
        save_partial(lambda: self._trace(complete=False), out, self.work, self.progress)

    def _kill_all(self) -> None:
        self.procs.kill_all(self.jobs)

    # -- the loop on wall time: its poll --------------------------------------------------------------
    def _start(self) -> None:
        self.push_poll(0.0)
        self._last_line = self._last_shown = -math.inf

    def _poll(self, t: float) -> None:
        """A poll at ``t``: each job's processes and copies move it on (its end), the load controller's
        cycle if due, advance stage-in's early copies, the strict I/O-node checks, the partial trace, the
        live view; the next poll, while jobs are left."""
        k = self.kernel
        for j in list(k.running.values()):
            if j.state != ALLOCATING:  # (a job waiting for disks retries at its retry_at: the loop's event)
                self._advance(j, t)
        if self.controller is not None:
            self.controller.step(self, t)
        if k.advance is not None:
            self._advance_early(t)
        self._check_io()
        self._write_partial()
        if self.work_deleted is None and not self.work.is_dir():
            self.work_deleted = t
            self.progress.note(f"the work folder {self.work} was deleted during the run: its logs and "
                               "checkpoints are lost")
        arriving = any(j.state == FUTURE for j in self.jobs)
        if not arriving and not k.queue and not k.running:
            self._check_io(force=True)
            live.progress_line(self, t)
            self._heap.clear()  # the run is over: nothing left in the heap (a stale estimate) is waited for
            return
        if not arriving and not k.running and not k.changed:
            k.stalled(t)  # jobs wait, nothing else is left: only a call the policy asked for
        if time.time() - self._last_line >= self.s.progress_every:
            live.progress_line(self, t)
            self._last_line = time.time()
        if self.progress.live and time.time() - self._last_shown >= LIVE_EVERY:
            self.progress.show(live.snapshot(self, t))
            self._last_shown = time.time()
        self.push_poll(t + self.poll / self.s.time_scale)

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

    # -- what it shows and records ---------------------------------------------------------------------
    def _trace(self, complete: bool) -> Trace:
        return run_trace(self, complete)
