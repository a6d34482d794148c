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
   node budget and then runs lackner2019's steps (:func:`iolab.sim.batch.steps.job_steps`):
   on HPS the manager allocates its ``storage`` bytes, opens its HPS
   directory and stages the input in (paced at R_stage); the job runs as
   ``mpiexec -n R python -m iolab.apps.jacobi --phases-json ...`` (read the input,
   compute segments and checkpoint writes, write the output) against its
   tier directory, every byte paced by the tier's token bucket (R_lps or
   R_hps); then the manager stages the output out to ``WORK/lps/outputs``.
   On LPS the job reads hard links of its input in its LPS directory and its
   output is moved to ``WORK/lps/outputs``.  At the end (or a crash) the
   job's directory is removed and its nodes and HPS bytes return.
5. **The trace**, in the simulator's schema and units (spec seconds, spec
   bytes), so ``iolab simulate`` and ``iolab emulate`` compare directly.

A job whose processes exit non-zero (a crashed or killed rank) is ``failed``;
its nodes and space are freed and the others go on.  Ctrl-C kills every job,
frees their space, writes the partial trace (``complete = False``) and
re-raises ``KeyboardInterrupt``.

The parts: :mod:`iolab.emulator.batch_checks` (step 1 and the settings),
:mod:`iolab.emulator.batch_jobs` (the job record, inputs, ``mpiexec`` processes and
their outputs), :mod:`iolab.emulator.batch_trace` (step 5); this module holds the
loop and every job's state changes.
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
from iolab.specs.batch import BatchExperiment
from iolab.trace import Trace

from .batch_checks import check_batch_runnable
from .batch_jobs import JobProcesses, JobRun
from .batch_trace import batch_trace
from .progress import StatusLine
from .ray_session import RaySession
from .run_clock import run_clock, save_partial
from .settings import default_work_dir, settle_settings


def run_batch_emulation(spec: BatchExperiment, *, out: str | Path | None = None, address: str | None = None,
                        work_dir: str | Path | None = None, progress: bool | StatusLine = False,
                        source: str = "<spec>", time_scale: float | None = None,
                        on_launch: Callable[[str, Any], None] | None = None, **overrides) -> Trace:
    """Emulate the batch experiment ``spec``; returns the trace, also written to ``out`` if given.

    ``on_launch(job, popen)`` is called right after each job's ``mpiexec`` starts (tests use it
    to kill a job).  Raises SpecError/RunError before any process starts."""
    from iolab.sim.workloads import load_workload

    spec = settle_settings(spec, time_scale=time_scale,
                           work_dir=str(work_dir) if work_dir is not None else None, **overrides)
    s = spec.emulator
    work = (Path(s.work_dir) if s.work_dir else default_work_dir(spec, out)).resolve()
    jobs = load_workload(spec)
    mpiexec = check_batch_runnable(spec, jobs, work, source)
    run = BatchEmulation(spec, jobs, work, mpiexec, address,
                         progress if isinstance(progress, StatusLine) else StatusLine(bool(progress), prefix="batch",
                                                                                      every=s.progress_every),
                         on_launch)
    return run.run(out)


# ---------------------------------------------------------------- the run

class BatchEmulation:
    poll = 0.05

    def __init__(self, spec: BatchExperiment, jobs: list, work: Path, mpiexec: str, address: str | None,
                 progress: StatusLine, on_launch: Callable[[str, Any], None] | None = None):
        from iolab.middleware.policies.batch import TierRates, get_scheduler
        from iolab.middleware.policies.batch import QueuedJob

        import numpy as np

        self.spec, self.work, self.address = spec, work, address
        self.s = spec.emulator
        self.progress, self.on_launch = progress, on_launch
        p = spec.platform
        self.policy = get_scheduler(spec.scheduler.kind, p=spec.scheduler.p, rng=np.random.default_rng(spec.seed))
        if hasattr(self.policy, "project"):
            self.policy.project = False
        self.rates = TierRates(lps=p.lps.rate, hps=p.hps.rate, stage=p.stage_rate)
        order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit, i))
        self.jobs = [JobRun(k, jobs[i], QueuedJob.from_job(jobs[i]), self.s.ranks_for(jobs[i].nodes))
                     for k, i in enumerate(order)]
        self.free_nodes = list(range(p.nodes))
        self.hps_capacity = p.hps.total_capacity
        self.mgr = None
        self.t0: float | None = None
        self.wall0 = time.time()
        self.decisions = 0
        self.lps = work / "lps"
        self.hps = work / "hps"
        self.procs = JobProcesses(spec, work, mpiexec)

    # -- clock ----------------------------------------------------------------------------------
    def now(self) -> float:
        return (time.time() - self.t0) / self.s.time_scale

    # -- life cycle -------------------------------------------------------------------------------
    def run(self, out: str | Path | None) -> Trace:
        from iolab.middleware.storage_actor import StorageManager

        for d in (self.work / "apps", self.work / "logs"):
            d.mkdir(parents=True, exist_ok=True)
        self.procs.prepare_inputs(self.jobs)
        session = RaySession.open(self.address)
        try:
            self.session = session
            p, s = self.spec.platform, self.s
            cap = s.bandwidth_cap
            disks = p.hps.layout() if p.hps.servers else None
            if disks:
                disks = [{**d, "capacity": int(d["capacity"] * s.bytes_scale)} for d in disks]
            self.mgr = StorageManager.create(
                str(self.lps), str(self.hps), math.ceil(self.hps_capacity * s.bytes_scale), disks=disks,
                strategy=self.spec.placement.strategy,
                split_threshold=(int(self.spec.placement.split.threshold * s.bytes_scale)
                                 if self.spec.placement.split.enabled else None),
                rng=self.spec.seed, on_full=s.hps_full, chunk=s.chunk_bytes,
                rates={"lps": s.wall_rate(p.lps.rate) if cap else None,
                       "hps": s.wall_rate(p.hps.rate) if cap else None,
                       "stage": s.wall_rate(p.stage_rate) if cap else None},
                name=f"storage-{uuid.uuid4().hex[:8]}", namespace=session.namespace)
            self.t0 = time.time()
            self.progress.note(f"clock started: {len(self.jobs)} jobs, scheduler {self.spec.scheduler.kind}, "
                               f"{p.nodes} nodes, time scale {s.time_scale:g}, bytes scale {s.bytes_scale:g}, "
                               f"work dir {self.work}")
            return run_clock(self._loop, self._interrupted, self._trace, out)
        finally:
            self.progress.done()
            self._kill_all()
            if self.mgr is not None:
                self.mgr.kill()
            session.close()

    def _interrupted(self, out) -> None:
        self.progress.note("interrupted: killing every job")
        self._kill_all()
        for j in self.jobs:
            if j.state not in ("future", "queued", "ended"):
                self._end(j, "killed", "interrupted")
        save_partial(lambda: self._trace(complete=False), out, self.work, self.progress)

    def _kill_all(self) -> None:
        self.procs.kill_all(self.jobs)

    # -- the loop ---------------------------------------------------------------------------------------
    def _loop(self) -> None:
        future = list(self.jobs)
        queue: dict[str, JobRun] = {}
        last = -math.inf
        while True:
            now = self.now()
            changed = False
            while future and future[0].queued.submit <= now:
                j = future.pop(0)
                j.state = "queued"
                queue[j.queued.id] = j
                changed = True
            for j in self.jobs:
                if j.state in ("alloc", "stage-in", "run", "stage-out"):
                    changed |= self._advance(j)
            if changed and queue:
                for j in self._decide(queue, now):
                    self._advance(j)
            if not future and not queue and all(j.state == "ended" for j in self.jobs):
                self._progress_line(force=True)
                return
            if time.time() - last >= self.s.progress_every:
                self._progress_line()
                last = time.time()
            time.sleep(self.poll)

    def _decide(self, queue: dict[str, JobRun], now: float) -> list[JobRun]:
        from iolab.middleware.policies.batch import HPS, RunningJob, Snapshot

        running = [j for j in self.jobs if j.state in ("alloc", "stage-in", "run", "stage-out")]
        held = sum(j.storage for j in running)
        snap = Snapshot(
            now=now, total_nodes=self.spec.platform.nodes, free_nodes=len(self.free_nodes),
            queue=tuple(j.queued for j in queue.values()),
            running=tuple(RunningJob(j.queued.id, j.queued.nodes, j.expected_end, j.tier, j.storage)
                          for j in running),
            hps_capacity=self.hps_capacity, hps_free=min(max(self.hps_capacity - held, 0.0), self.hps_capacity),
            rates=self.rates)
        d = self.policy.decide(snap)
        self.decisions += 1
        started = []
        for st in d.starts:
            j = queue.pop(st.job)
            if j.queued.nodes > len(self.free_nodes):
                raise RuntimeError(f"policy {self.policy.name} started {st.job} on {j.queued.nodes} nodes; "
                                   f"{len(self.free_nodes)} free")
            j.hosts, self.free_nodes = self.free_nodes[: j.queued.nodes], self.free_nodes[j.queued.nodes:]
            j.tier, j.expected_end, j.start = st.tier, st.expected_end, time.time()
            j.storage = j.queued.storage if st.tier == HPS else 0.0
            if st.tier == HPS:
                j.ref = self.mgr.allocate_async(j.queued.id, int(j.queued.storage * self.s.bytes_scale))
                j.state = "alloc"
            else:
                self._launch(j)
            started.append(j)
        return started

    def _ready(self, j: JobRun):
        import ray

        done, _ = ray.wait([j.ref], timeout=0)
        if not done:
            return None
        from iolab.middleware.storage_actor import result

        ref, j.ref = j.ref, None
        return result(ref)

    def _advance(self, j: JobRun) -> bool:
        """Move ``j`` on if its current step is over; True if it ended (nodes changed)."""
        try:
            if j.state == "alloc":
                a = self._ready(j)
                if a is None:
                    return False
                if a["status"] != "allocated":  # refused (hps_full: refuse, or placement): fall back to LPS
                    self.progress.note(f"{j.queued.id}: HPS allocation {a['status']} ({a['reason']}); runs on LPS")
                    j.tier, j.storage, j.fell_back = "lps", 0.0, True
                    j.expected_end = self.now() + j.queued.walltime
                    self._launch(j)
                    return True  # the HPS bytes the policy reserved are back
                j.directory = self.mgr.open_dir("hps", j.queued.id)
                sources = self.procs.inputs(j)
                if sources:
                    j.ref = self.mgr.stage_async(j.queued.id, "stage-in", sources, j.directory + "/input")
                    j.state = "stage-in"
                    return False
                self._launch(j)
                return False
            if j.state == "stage-in":
                rec = self._ready(j)
                if rec is None:
                    return False
                j.staged.append(rec)
                self._launch(j)
                return False
            if j.state == "run":
                return self._watch(j)
            if j.state == "stage-out":
                rec = self._ready(j)
                if rec is None:
                    return False
                j.staged.append(rec)
                self._end(j, "ok")
                return True
        except Exception as exc:  # a staging or storage error ends this job only
            from ray.exceptions import RayActorError

            if isinstance(exc, RayActorError):
                raise RunError(f"the storage manager actor died ({type(exc).__name__}); the run is lost") from None
            self.progress.note(f"{j.queued.id} failed in {j.state}: {type(exc).__name__}: {exc}")
            self._end(j, "failed", f"{j.state}: {exc}")
            return True
        return False

    def _watch(self, j: JobRun) -> bool:
        from .shell import kill_tree

        rc = j.proc.poll()
        if rc is None:
            limit = self.s.kill_factor * j.queued.walltime * self.s.time_scale + 60
            if time.time() - j.launched > limit:
                j.rc = kill_tree(j.proc, grace=2.0)
                self.progress.note(f"{j.queued.id} killed: ran {limit:.0f} s wall (kill_factor x walltime)")
                self._end(j, "killed", f"ran longer than {limit:.0f} s wall")
                return True
            return False
        j.rc = rc
        if rc != 0:
            kill_tree(j.proc, grace=1.0)  # ranks left behind by a killed mpiexec
            self.progress.note(f"{j.queued.id} failed: exit {rc} (log: {self.procs.log(j)})")
            self._end(j, "failed", f"processes exited with code {rc}")
            return True
        files = self.procs.output_files(j)
        if j.tier == "hps" and j.job.output > 0 and files:
            j.ref = self.mgr.stage_async(j.queued.id, "stage-out", files, str(self.lps / "outputs" / j.queued.id))
            j.state = "stage-out"
            return False
        if j.tier == "lps" and j.job.output > 0 and files:
            dest = self.lps / "outputs" / j.queued.id
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(dest, ignore_errors=True)
            os.replace(Path(files[0]).parent, dest)  # LPS is the permanent store: a rename, no copy
        self._end(j, "ok")
        return True

    def _end(self, j: JobRun, status: str, message: str = "") -> None:
        from .shell import kill_tree

        if j.proc is not None and j.proc.poll() is None:
            j.rc = kill_tree(j.proc, grace=1.0)
        if j.ref is not None:
            import ray

            try:
                ray.cancel(j.ref)
            except Exception:
                pass
            j.ref = None
        try:
            self.mgr.free(j.queued.id)
        except Exception as exc:
            self.progress.note(f"{j.queued.id}: freeing its storage failed: {exc}")
        j.end, j.state, j.status, j.message = time.time(), "ended", status, message
        self.free_nodes = sorted(self.free_nodes + j.hosts)
        j.storage = 0.0

    # -- launching -----------------------------------------------------------------------------------------
    def _launch(self, j: JobRun) -> None:
        if j.tier == "lps":
            j.directory = self.mgr.open_dir("lps", j.queued.id)
        self.procs.launch(j, self.session, self.mgr.name)
        j.state = "run"
        if self.on_launch is not None:
            self.on_launch(j.queued.id, j.proc)

    def _progress_line(self, force: bool = False) -> None:
        if not self.progress.enabled:
            return
        counts: dict[str, int] = {}
        for j in self.jobs:
            counts[j.state] = counts.get(j.state, 0) + 1
        on_hps = sum(1 for j in self.jobs if j.state not in ("future", "queued", "ended") and j.tier == "hps")
        held = sum(j.storage for j in self.jobs)
        ended = counts.get("ended", 0)
        failed = sum(1 for j in self.jobs if j.status in ("failed", "killed"))
        line = (f"t={self.now():.0f} s ({time.time() - self.t0:.0f} s wall)  submitted "
                f"{len(self.jobs) - counts.get('future', 0)}/{len(self.jobs)}  queued {counts.get('queued', 0)}  "
                f"running {sum(counts.get(k, 0) for k in ('alloc', 'stage-in', 'run', 'stage-out'))} "
                f"({on_hps} on HPS, {counts.get('stage-in', 0) + counts.get('stage-out', 0)} staging)  "
                f"ended {ended} ({failed} failed)  nodes free {len(self.free_nodes)}/{self.spec.platform.nodes}  "
                f"HPS held {held / max(self.hps_capacity, 1e-300):.0%}")
        self.progress.note(line)

    # -- the trace ---------------------------------------------------------------------------------------------
    def _trace(self, complete: bool) -> Trace:
        return batch_trace(self.spec, self.jobs, self.mgr, t0=self.t0, decisions=self.decisions, work=self.work,
                           complete=complete)
