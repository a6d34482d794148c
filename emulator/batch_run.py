"""Run a batch experiment (``kind: batch``) for real: a real-clock batch loop over MPI jobs.

    trace = run_batch_emulation(spec, out="batch.h5")

The simulator's model (:mod:`sim.batch`), with real processes, directories
and a real clock (docs/storage.md):

1. **Checks, no process yet** (:func:`check_batch_runnable`): sizes, ranks,
   the run's estimated wall time, ``mpiexec``, the work directory.
2. **Inputs on LPS.**  Every job's input is written beforehand to
   ``WORK/lps/inputs/<job>/`` (one HDF5 file per rank, ``apps.checkpoint``'s
   format, ``input * bytes_scale`` bytes together).
3. **Ray + the storage manager actor** (:mod:`middleware.storage_actor`),
   which owns ``WORK/lps`` and ``WORK/hps`` (capacity ``capacity *
   bytes_scale`` bytes, disks if the platform has them).
4. **The loop** (clock ``t = (wall - t0) / time_scale`` spec seconds): jobs
   are submitted at their submit times; at every submission and every job end
   the *same* batch policy object as the simulator's decides on a
   :class:`Snapshot`.  A started job takes ``nodes`` logical nodes of the
   node budget and then runs lackner2019's steps (:func:`sim.batch.steps.job_steps`):
   on HPS the manager allocates its ``storage`` bytes, opens its HPS
   directory and stages the input in (paced at R_stage); the job runs as
   ``mpiexec -n R python -m apps.jacobi --phases-json ...`` (read the input,
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
"""

from __future__ import annotations

import json
import math
import os
import platform as _platform
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from iolab import __version__
from iolab.errors import RunError, SpecError
from iolab.specs.batch import BatchExperiment
from iolab.specs.batch_emulation import BatchEmulatorSettings
from iolab.specs.load import problems_of
from iolab.trace import Trace, TraceBuilder, write_trace

from .progress import Progress, save_partial
from .ray_session import RaySession

REPO = Path(__file__).resolve().parents[1]
H5_OVERHEAD = 16 * 1024  # generous bound on one rank file's HDF5 metadata
LAUNCH_ESTIMATE = 4.0  # wall seconds a job launch costs on a loaded 2-core machine (docs/storage.md)
STAGE_KINDS = ("stage-in", "stage-out")


# ---------------------------------------------------------------- settings and checks

def settle_settings(spec: BatchExperiment, **overrides) -> BatchExperiment:
    given = {k: v for k, v in overrides.items() if v is not None}
    if not given:
        return spec
    try:
        s = BatchEmulatorSettings.model_validate({**spec.emulator.model_dump(), **given})
    except ValidationError as err:
        raise SpecError("emulator settings", [("emulator." + p, r) for p, r in problems_of(err)]) from None
    return spec.model_copy(update={"emulator": s})


def app_phases(job, tier: str, spec: BatchExperiment) -> tuple[list, list, list[int]]:
    """The job's steps on ``tier``, its ``--phases-json`` list and each app phase's step index."""
    from sim.batch.steps import job_steps

    s, p = spec.emulator, spec.platform
    steps = job_steps(job, tier, p.lps.rate, p.memory_per_node).steps
    phases, index = [], []
    for i, st in enumerate(steps):
        if st.kind in STAGE_KINDS:
            continue
        if st.kind == "compute":
            phases.append(["compute", st.amount * s.time_scale])
        else:
            phases.append([st.kind, int(st.amount * s.bytes_scale)])
        index.append(i)
    return list(steps), phases, index


def check_batch_runnable(spec: BatchExperiment, jobs: list, work_dir: Path, source: str = "<spec>") -> str:
    """Raise ``SpecError`` (the spec) or ``RunError`` (the machine) before any process starts;
    returns the ``mpiexec`` to use."""
    s = spec.emulator
    problems: list[tuple[str, str]] = []
    if len(jobs) > s.max_jobs:
        problems.append(("emulator.max_jobs", f"the workload has {len(jobs)} jobs; a real run is limited to "
                                              f"{s.max_jobs} (raise max_jobs or shorten the workload)"))
    for i, j in enumerate(jobs[: s.max_jobs]):
        where = f"workload.jobs[{i}]"
        r = s.ranks_for(j.nodes)
        if r > s.max_ranks:
            problems.append((where, f"job {j.id!r} would run {r} ranks; emulator.max_ranks is {s.max_ranks}"))
            continue
        if r > s.grid:
            problems.append((where, f"job {j.id!r} has {r} ranks but the grid has {s.grid} rows"))
            continue
        need_write = s.grid * s.grid * 8 / r + H5_OVERHEAD
        _, phases, _ = app_phases(j, "lps", spec)
        for kind, x in phases:
            if kind == "compute" or x == 0:
                continue
            per_rank = x / r
            need = need_write if kind == "write" else H5_OVERHEAD
            if per_rank < need:
                problems.append((where, f"job {j.id!r}: a {kind} of {x} bytes ({x / s.bytes_scale:.4g} spec bytes "
                                        f"x bytes_scale {s.bytes_scale:g}) is {per_rank:.0f} bytes per rank, less "
                                        f"than a rank file of the {s.grid}x{s.grid} grid ({need:.0f}); raise "
                                        "emulator.bytes_scale or lower emulator.grid"))
                break
    if not problems:
        from sim.batch.run import run_batch

        rec = run_batch(spec, jobs, rows=False)
        makespan = max(st.end for st in rec.jobs) - min(st.queued.submit for st in rec.jobs)
        est = makespan * s.time_scale + LAUNCH_ESTIMATE * len(jobs)
        if est > s.max_wall:
            problems.append(("emulator.time_scale",
                             f"the run would last about {est:.0f} wall seconds (simulated makespan "
                             f"{makespan:.0f} s x time_scale {s.time_scale:g} + launches); the limit is "
                             f"emulator.max_wall = {s.max_wall:g} s"))
    from .checks import conclude

    return conclude(problems, source, work_dir)


def default_work_dir(spec: BatchExperiment, out: str | Path | None) -> Path:
    if out is not None:
        out = Path(out)
        return out.parent / f"{out.stem}.work"
    stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
    return Path(os.environ.get("TMPDIR", "/tmp")) / f"iolab-batch-{spec.name}-{stamp}"


def run_batch_emulation(spec: BatchExperiment, *, out: str | Path | None = None, address: str | None = None,
                        work_dir: str | Path | None = None, progress: bool | Progress = False,
                        source: str = "<spec>", time_scale: float | None = None,
                        on_launch: Callable[[str, Any], None] | None = None, **overrides) -> Trace:
    """Emulate the batch experiment ``spec``; returns the trace, also written to ``out`` if given.

    ``on_launch(job, popen)`` is called right after each job's ``mpiexec`` starts (tests use it
    to kill a job).  Raises SpecError/RunError before any process starts."""
    from sim.workloads import load_workload

    spec = settle_settings(spec, time_scale=time_scale,
                           work_dir=str(work_dir) if work_dir is not None else None, **overrides)
    s = spec.emulator
    work = (Path(s.work_dir) if s.work_dir else default_work_dir(spec, out)).resolve()
    jobs = load_workload(spec)
    mpiexec = check_batch_runnable(spec, jobs, work, source)
    run = BatchEmulation(spec, jobs, work, mpiexec, address,
                         progress if isinstance(progress, Progress) else Progress(bool(progress), prefix="batch",
                                                                                  every=s.progress_every),
                         on_launch)
    return run.run(out)


# ---------------------------------------------------------------- the run

@dataclass
class JobRun:
    index: int
    job: Any
    queued: Any
    ranks: int
    state: str = "future"  # future, queued, alloc, stage-in, run, stage-out, ended
    tier: str = ""
    hosts: list[int] = field(default_factory=list)
    expected_end: float = math.nan
    storage: float = 0.0  # spec bytes of HPS held (policy accounting)
    start: float = math.nan  # wall
    end: float = math.nan  # wall
    launched: float = math.nan  # wall
    status: str = "pending"
    ref: Any = None
    proc: Any = None
    directory: str = ""
    steps: list = field(default_factory=list)
    index_map: list[int] = field(default_factory=list)
    staged: list[dict] = field(default_factory=list)
    rc: int | None = None
    message: str = ""
    fell_back: bool = False


class BatchEmulation:
    poll = 0.05

    def __init__(self, spec: BatchExperiment, jobs: list, work: Path, mpiexec: str, address: str | None,
                 progress: Progress, on_launch: Callable[[str, Any], None] | None = None):
        from middleware.policies.batch import TierRates, get_scheduler
        from middleware.policies.batch import QueuedJob

        import numpy as np

        self.spec, self.work, self.mpiexec, self.address = spec, work, mpiexec, address
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
        self.by_id = {j.queued.id: j for j in self.jobs}
        self.free_nodes = list(range(p.nodes))
        self.hps_capacity = p.hps.total_capacity
        self.mgr = None
        self.t0: float | None = None
        self.wall0 = time.time()
        self.decisions = 0
        self.lps = work / "lps"
        self.hps = work / "hps"

    # -- clock ----------------------------------------------------------------------------------
    def now(self) -> float:
        return (time.time() - self.t0) / self.s.time_scale

    def spec_time(self, wall: float) -> float:
        return (wall - self.t0) / self.s.time_scale if wall == wall else math.nan

    # -- life cycle -------------------------------------------------------------------------------
    def run(self, out: str | Path | None) -> Trace:
        from middleware.storage_actor import StorageManager

        for d in (self.work / "apps", self.work / "logs"):
            d.mkdir(parents=True, exist_ok=True)
        self._prepare_inputs()
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
            try:
                self.t0 = time.time()
                self.progress.note(f"clock started: {len(self.jobs)} jobs, scheduler {self.spec.scheduler.kind}, "
                                   f"{p.nodes} nodes, time scale {s.time_scale:g}, bytes scale {s.bytes_scale:g}, "
                                   f"work dir {self.work}")
                self._loop()
            except KeyboardInterrupt:
                self._interrupted(out)
                raise
            trace = self._trace(complete=True)
            if out is not None:
                write_trace(trace, out)
            return trace
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
        from .shell import kill_tree

        for j in self.jobs:
            if j.proc is not None and j.proc.poll() is None:
                j.rc = kill_tree(j.proc, grace=1.0)

    # -- inputs ----------------------------------------------------------------------------------------
    def _prepare_inputs(self) -> None:
        import numpy as np

        from apps import checkpoint

        for j in self.jobs:
            total = int(j.job.input * self.s.bytes_scale)
            if total <= 0:
                continue
            d = self.lps / "inputs" / j.queued.id
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
            for r in range(j.ranks):
                checkpoint.write_rank_file(checkpoint.rank_file(d, r), np.zeros((1, 1)), {},
                                           checkpoint.share(total, j.ranks, r), lambda n: None,
                                           checkpoint.pattern(self.spec.seed, r, self.s.chunk_bytes), False)

    def _inputs(self, j: JobRun) -> list[str]:
        d = self.lps / "inputs" / j.queued.id
        return sorted(str(p) for p in d.glob("rank-*.h5")) if d.is_dir() else []

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
        from middleware.policies.batch import HPS, RunningJob, Snapshot

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
        from middleware.storage_actor import result

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
                sources = self._inputs(j)
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
            self.progress.note(f"{j.queued.id} failed: exit {rc} (log: {self._log(j)})")
            self._end(j, "failed", f"processes exited with code {rc}")
            return True
        files = self._output_files(j)
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

    def _output_files(self, j: JobRun) -> list[str]:
        from apps import checkpoint

        try:
            m = checkpoint.read_manifest(checkpoint.manifest_path(self.work / "apps" / j.queued.id, j.queued.id))
        except ValueError:
            return []
        if m is None or not str(m["directory"]).startswith(os.path.join(j.directory, j.queued.id) + os.sep):
            return []  # no write happened (the manifest still names the input)
        return [f["path"] for f in m["files"]]

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
        from apps import checkpoint

        from .launchers import mpiexec_command
        from .shell import spawn

        s, job_id = self.s, j.queued.id
        if j.tier == "lps":
            j.directory = self.mgr.open_dir("lps", job_id)
        out_dir = self.work / "apps" / job_id
        shutil.rmtree(out_dir, ignore_errors=True)
        out_dir.mkdir(parents=True)
        inputs = self._inputs(j)
        if inputs:
            src = Path(j.directory) / "input"
            if j.tier == "lps":  # the job reads its LPS input in place (hard links: it deletes them)
                src.mkdir(mode=0o700, exist_ok=True)
                for f in inputs:
                    os.link(f, src / Path(f).name)
            m = checkpoint.make_manifest(job_id, s.grid, [j.ranks, 1], 0, 1, 0, src, j.ranks)
            checkpoint.write_manifest(checkpoint.manifest_path(out_dir, job_id), m, fsync=False)
        j.steps, phases, j.index_map = app_phases(j.job, j.tier, self.spec)
        config = {"address": self.session.gcs_address, "namespace": self.session.namespace,
                  "actor": self.mgr.name, "job": job_id, "directory": j.directory, "link": j.tier,
                  "capped": s.bandwidth_cap}
        argv = [sys.executable, "-m", "apps.jacobi", "--app-id", job_id, "--grid", str(s.grid),
                "--phases-json", json.dumps(phases), "--compute-mode", "duration",
                "--coordinator", "middleware.storage_client:coordinator",
                "--coordinator-config", json.dumps(config), "--out-dir", str(out_dir),
                "--chunk-bytes", str(s.chunk_bytes), "--seed", str(self.spec.seed)]
        if not s.fsync:
            argv.append("--no-fsync")
        cmd = mpiexec_command(j.ranks, argv, mpiexec=self.mpiexec)
        if s.nice:
            cmd = ["nice", "-n", str(s.nice)] + cmd
        path = os.environ.get("PYTHONPATH", "")
        env = {"PYTHONPATH": str(REPO) + (os.pathsep + path if path else ""), "PYTHONUNBUFFERED": "1",
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        j.proc = spawn(cmd, env=env, cwd=self.work, log_path=self._log(j))
        j.launched = time.time()
        j.state = "run"
        if self.on_launch is not None:
            self.on_launch(job_id, j.proc)

    def _log(self, j: JobRun) -> Path:
        return self.work / "logs" / f"{j.queued.id}.log"

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
        s, p = self.s, self.spec.platform
        bs = s.bytes_scale
        try:
            rec = self.mgr.records()
            status = self.mgr.status()
        except Exception:
            rec, status = {"allocations": [], "actions": [], "phases": [], "finished": {}}, {}
        tb = TraceBuilder()
        launch_overhead: dict[str, float] = {}
        first_phase: dict[str, float] = {}
        for job, idx, kind, start, end, nbytes in rec["phases"]:
            j = self.by_id.get(job)
            if j is None or idx >= len(j.index_map):
                continue
            step = j.index_map[idx]
            first_phase[job] = min(first_phase.get(job, math.inf), start)
            tb.add_phase(job=job, index=step, kind=kind, start=self.spec_time(start), end=self.spec_time(end),
                         volume=nbytes / bs if kind != "compute" else 0.0, io_node=-1, tier=j.tier)
        for j in self.jobs:
            for st in j.staged:
                kinds = [k for k, x in enumerate(j.steps) if x.kind == st["direction"]]
                tb.add_phase(job=j.queued.id, index=kinds[0] if kinds else -1, kind=st["direction"],
                             start=self.spec_time(st["start"]), end=self.spec_time(st["end"]),
                             volume=st["bytes"] / bs, io_node=-1, tier="stage")
            if j.queued.id in first_phase and j.launched == j.launched:
                launch_overhead[j.queued.id] = first_phase[j.queued.id] - j.launched
            job = j.job
            status_ = j.status if j.state == "ended" else ("killed" if j.state not in ("future", "queued") else "pending")
            tb.add_job(id=j.queued.id, rank=j.index, nodes=j.queued.nodes, release=float(job.submit),
                       start=self.spec_time(j.start), end=self.spec_time(j.end) if j.state == "ended" else math.nan,
                       io_node=-1, pack=-1, status=status_, tier=j.tier, min_time=float(job.runtime),
                       compute_time=max(0.0, float(job.runtime) - (job.input + job.output + job.data) / p.lps.rate),
                       io_volume=float(job.input + job.output + job.data),
                       hosts=",".join(f"n{h}" for h in j.hosts))
        for job, disk, nbytes, alloc, free, st in rec["allocations"]:
            tb.add_allocation(job=job, disk=disk, bytes=nbytes / bs, alloc=self.spec_time(alloc),
                              free=self.spec_time(free), status=st)
        for job, sus, res in rec["actions"]:
            tb.add_action(job=job, suspend=self.spec_time(sus), resume=self.spec_time(res))
        staging = [st for j in self.jobs for st in j.staged]
        stage_secs = [(st["bytes"], st["end"] - st["start"]) for st in staging if st["end"] > st["start"]]
        return tb.build(
            runtime="emulator-batch", scheduler=self.spec.scheduler.kind, policy=self.spec.scheduler.kind,
            seed=self.spec.seed, spec=self.spec.model_dump(mode="json"), iolab_version=__version__,
            python=_platform.python_version(), host=_platform.node(), versions=_versions(),
            total_nodes=p.nodes, hps_capacity=self.hps_capacity, lps_rate=p.lps.rate, hps_rate=p.hps.rate,
            stage_rate=p.stage_rate, unit_bytes=1, time_scale=s.time_scale, bytes_scale=s.bytes_scale,
            bandwidth_cap=s.bandwidth_cap, decisions=self.decisions, complete=complete,
            wall_seconds=time.time() - self.t0 if self.t0 else 0.0, t0=self.t0 or 0.0, work_dir=str(self.work),
            failures={j.queued.id: {"status": j.status, "reason": j.message, "rc": j.rc,
                                    "time": self.spec_time(j.end)}
                      for j in self.jobs if j.status in ("failed", "killed")},
            exit_codes={j.queued.id: j.rc for j in self.jobs if j.rc is not None},
            launch_overhead=launch_overhead,
            staging=[{k: v for k, v in st.items() if k != "files"} for st in staging],
            staging_rate_achieved=(sum(b for b, _ in stage_secs) / sum(t for _, t in stage_secs)
                                   if stage_secs else math.nan),
            staging_rate_target=s.wall_rate(p.stage_rate),
            hps_capacity_bytes=status.get("capacity", -1), hps_free_end=status.get("free", -1),
            hps_peak_bytes=status.get("peak", -1),
        )


def _versions() -> dict[str, str]:
    from .run import versions

    return versions()
