"""Run an I/O experiment for real: MPI apps under ``mpiexec``, arbitrated by the Ray arbiter.

    trace = run_emulation(spec, policy="fifo", out="run.h5")

Sequence (docs/emulator.md): check everything (no process yet) -> start or join
Ray -> create the arbiter actor with the plan of :func:`iolab.middleware.policies.plan.make_plan`
-> launch every app (``nice mpiexec -n R python -m iolab.apps.jacobi ...``, its own
process group, log in ``WORK/logs``) -> wait until every rank waits at its
start gate -> start the clock (t0) -> watch: a process that exits without
``finish`` is failed (its grant cancelled), an app the arbiter failed (lease,
``finish(False)``) has its processes killed -> collect the arbiter's records
into a trace in spec seconds (``(wall - t0) / time_scale``).

Ctrl-C kills every child process group, marks the apps still going
``killed``, writes the partial trace (attribute ``complete = False``) and
re-raises ``KeyboardInterrupt``.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

from iolab import calibration
from iolab.apps.jacobi_command import calibrate_argv, jacobi_argv, rank_env
from iolab.errors import RunError
from iolab.invariants import strict_default
from iolab.middleware.arbiter_actor import Arbiter
from iolab.middleware.policies.plan import Plan, make_plan
from iolab.specs.io import IOExperiment
from iolab.trace import Trace, TraceBuilder, write_trace
from iolab.trace.provenance import provenance

from iolab.emulator import shell
from iolab.emulator.io.prerun_checks import check_runnable
from iolab.emulator.output_lock import hold_outputs
from iolab.emulator.progress import StatusLine
from iolab.emulator.reaper import Supervisor
from iolab.emulator.ray_session import RaySession
from iolab.emulator.run_clock import PartialTraces, run_clock, save_partial
from iolab.emulator.settings import default_work_dir, settle_settings
from iolab.emulator.slurm_launch import MpiexecApps, make_launcher
from iolab.middleware.policies.io_guard import policy_label
from iolab.middleware.policies.loader import check_spec_policies

ENDED = ("ok", "failed", "killed")


def run_emulation(spec: IOExperiment, policy: str | None = None, *, time_scale: float | None = None,
                  out: str | Path | None = None, address: str | None = None, work_dir: str | Path | None = None,
                  progress: bool | StatusLine = False, source: str = "<spec>", launcher: str | None = None,
                  strict: bool | None = None, **overrides) -> Trace:
    """Emulate ``spec`` (with ``policy`` and emulator settings overridden); returns the trace,
    also written to ``out`` if given.  Raises SpecError/RunError before any process starts.
    ``launcher``: ``"mpiexec"`` or ``"srun"`` (default: srun inside a Slurm allocation;
    see :mod:`iolab.emulator.slurm_launch`).  ``strict``: the arbiter checks every call
    (:mod:`iolab.middleware.policies.io_checker`; default ``IOLAB_STRICT``)."""
    spec = settle_settings(spec, policy, time_scale=time_scale,
                           work_dir=str(work_dir) if work_dir is not None else None, **overrides)
    check_spec_policies(spec, source)
    s = spec.emulator
    work = Path(s.work_dir) if s.work_dir else default_work_dir(spec, out)
    mpiexec = check_runnable(spec, work.resolve(), source)
    plan = make_plan(spec)
    apps = make_launcher(launcher, spec, plan, work.resolve(), mpiexec)
    run = Emulation(spec, plan, work.resolve(), mpiexec, address,
                    progress if isinstance(progress, StatusLine) else StatusLine(bool(progress)), launcher=apps,
                    strict=strict)
    with hold_outputs([out, work], "output of iolab emulate"):  # one run per trace and per work folder
        return run.run(out)


class Emulation:
    """One real run (see the module doc); ``run()`` is the whole life cycle."""

    poll = 0.1  # seconds between looks at the processes

    def __init__(self, spec: IOExperiment, plan: Plan, work: Path, mpiexec: str, address: str | None,
                 progress: StatusLine, launcher=None, strict: bool | None = None):
        self.spec, self.plan, self.work, self.mpiexec = spec, plan, work, mpiexec
        self.strict = strict_default(strict)  # once for the run: the arbiter is told
        # how apps start (mpiexec here, srun in an allocation): iolab.emulator.slurm_launch
        self.launcher = launcher or MpiexecApps(mpiexec, work / "hosts")
        self.address = address
        self.progress = progress
        self.procs: dict[str, object] = {}
        self.exit_codes: dict[str, int] = {}
        self.arbiter = None
        self.t0: float | None = None
        self.wall0 = time.time()
        self.launched: dict[str, float] = {}
        self.work_deleted: float | None = None  # spec seconds at which the work folder was seen gone
        self.out: str | Path | None = None
        self.partials = PartialTraces(None, self.progress)
        self.supervisor: Supervisor | None = None

    # -- life cycle -----------------------------------------------------------------------
    def run(self, out: str | Path | None) -> Trace:
        with Supervisor(self.work) as self.supervisor:  # cleans up after a killed driver
            return self._run(out)

    def _run(self, out: str | Path | None) -> Trace:
        self.out = self.partials.out = out
        session = self.launcher.open_ray(self.address)
        try:
            dirs = [self.work / f"io-node-{k}" for k in range(self.spec.platform.io_nodes)]
            for d in dirs + [self.work / "apps", self.work / "logs"]:
                d.mkdir(parents=True, exist_ok=True)
            self.arbiter = Arbiter.from_spec(self.spec, self.plan, directories=[str(d) for d in dirs],
                                             name=f"arbiter-{uuid.uuid4().hex[:8]}",
                                             namespace=session.namespace, strict=self.strict)
            return run_clock(lambda: self._launch_and_watch(session), self._interrupted, self._trace, out)
        finally:
            self.progress.done()
            self._kill_all()
            if self.arbiter is not None:
                self.arbiter.kill()
            session.close()

    def _launch_and_watch(self, session) -> None:
        """Launch every app, start the clock when all are ready, watch them to the end."""
        try:
            sweeps = self._calibrate() if self.spec.emulator.compute_mode == "work" else None
            for a in self.spec.apps:
                self._launch(a, session, sweeps)
            self._wait_ready()
            self.t0 = self.arbiter.start()
            self._write_partial(force=True)  # from the first instant, a killed driver leaves a trace
            self.progress.note(f"clock started: {len(self.spec.apps)} apps, policy {policy_label(self.spec.policy)}, "
                               f"time scale {self.spec.emulator.time_scale:g}, work dir {self.work}")
            self._watch()
        except Exception as exc:
            from ray.exceptions import RayActorError  # lazy: Ray loads when the run opens its session

            if isinstance(exc, RayActorError):
                raise RunError(f"the arbiter actor died ({exc.__class__.__name__}); the run is lost. "
                               f"Logs: {self.work / 'logs'}") from None
            raise

    def _interrupted(self, out) -> None:
        self.progress.note("interrupted: killing every app")
        self._kill_all()
        if self.arbiter is not None and self.t0 is not None:
            def partial() -> Trace:
                self.arbiter.stop()  # the apps still going are marked killed
                if self.progress.live:  # the last frame shows them killed, not still running
                    try:
                        self.progress.show({"kind": "io", "elapsed": time.time() - self.t0,
                                            "progress": self.arbiter.progress(), **self.arbiter.snapshot()})
                    except Exception:  # a dead arbiter: the notes say what happened
                        pass
                return self._trace(complete=False)

            save_partial(partial, out, self.work, self.progress)

    # -- launching -------------------------------------------------------------------------------
    def _argv(self, app, config: dict, sweeps: dict | None) -> list[str]:
        s = self.spec.emulator
        coordinator, config = self.launcher.coordinator("iolab.middleware.client:coordinator", config)
        phases = [[k, x * s.time_scale if k == "compute" else int(round(x * s.unit_bytes))]
                  for k, x in app.phase_list()]
        return jacobi_argv(app.id, grid=s.grid, phases=phases, compute_mode=s.compute_mode,
                           coordinator=coordinator, coordinator_config=config, out_dir=self.work / "apps",
                           chunk_bytes=s.chunk_bytes, seed=self.spec.seed, fsync=s.fsync,
                           sweeps_per_second=None if sweeps is None else sweeps[s.ranks_for(app.nodes)])

    def _launch(self, app, session: RaySession, sweeps) -> None:
        s = self.spec.emulator
        config = {"address": session.gcs_address, "namespace": session.namespace,
                  "actor": self.arbiter.name, "app": app.id}
        cmd = self.launcher.app_command(app.id, s.ranks_for(app.nodes), self._argv(app, config, sweeps), s.nice)
        log = self.work / "logs" / f"{app.id}.log"
        self.procs[app.id] = shell.spawn(cmd, env=rank_env(), cwd=self.work, log_path=log)
        self.launched[app.id] = time.time()
        self.supervisor.add_group(self.procs[app.id].pid)

    def _calibrate(self) -> dict[int, float]:
        """Sweeps per second of the grid for each rank count (compute_mode work)."""
        s = self.spec.emulator
        out = {}
        for r in sorted({s.ranks_for(a.nodes) for a in self.spec.apps}):
            cmd = self.launcher.calibrate_command(r, calibrate_argv(s.grid, seconds=2))
            rc, so, se = shell.execute_wait(cmd, timeout=120, env=rank_env(), cwd=self.work)
            if rc != 0:
                raise RunError(f"calibration with {r} ranks failed (exit {rc}): {se.strip()[-500:]}")
            out[r] = json.loads(so.strip().splitlines()[-1])["sweeps_per_second"]
            self.progress.note(f"calibrated: {r} ranks, {out[r]:.1f} sweeps/s")
        return out

    # -- suspending (the load controller's lever) ---------------------------------------------------
    def suspend(self, app: str) -> None:
        """Stop every process of a running app (:meth:`launcher.suspend`: SIGSTOP of its process
        group, or of its Slurm step) and tell the arbiter, whose lease then does not expire."""
        self.launcher.suspend(app, self.procs[app])
        self.arbiter.suspend(app)

    def resume(self, app: str) -> None:
        """Continue what :meth:`suspend` stopped."""
        self.arbiter.resume(app)
        self.launcher.resume(app, self.procs[app])

    # -- watching ----------------------------------------------------------------------------------
    def _reap(self, status: dict) -> None:
        """Fail apps whose processes ended without finishing; kill apps the arbiter failed."""
        for app, proc in self.procs.items():
            rc = proc.poll()
            st = status[app]["status"]
            if rc is not None and app not in self.exit_codes:
                self.exit_codes[app] = rc
                if st not in ENDED:
                    reason = f"processes exited with code {rc} before the app finished (log: {self._log(app)})"
                    self.arbiter.fail(app, reason)
                    self.progress.note(f"{app} failed: {reason}")
            elif rc is None and st in ("failed", "killed"):
                self.progress.note(f"{app} {st}: {status[app]['message']}; killing its processes")
                self.exit_codes[app] = shell.kill_tree(proc, grace=2.0)

    def _log(self, app: str) -> Path:
        return self.work / "logs" / f"{app}.log"

    def _wait_ready(self) -> None:
        deadline = time.time() + self.spec.emulator.startup_timeout
        while True:
            status = self.arbiter.status()
            self._reap(status)
            waiting = [a for a, st in status.items() if st["status"] == "pending"]
            if not waiting:
                return
            if time.time() > deadline:
                raise RunError(f"apps not connected after {self.spec.emulator.startup_timeout:g} s: "
                               f"{', '.join(waiting)} (logs in {self.work / 'logs'})")
            time.sleep(self.poll)

    def _watch(self) -> None:
        linger: dict[str, float] = {}
        while True:
            status = self.arbiter.status()
            self._reap(status)
            self._check_work()
            self._write_partial()
            p = self.arbiter.progress()
            self.progress.update(p, time.time() - self.t0)
            if self.progress.live:
                self.progress.show({"kind": "io", "elapsed": time.time() - self.t0, "progress": p,
                                    **self.arbiter.snapshot()})
            if all(st["status"] in ENDED for st in status.values()):
                # every app has ended: give finished processes a moment to exit, then stop them
                now = time.time()
                alive = [a for a, pr in self.procs.items() if pr.poll() is None]
                for a in alive:
                    if now - linger.setdefault(a, now) > 10:
                        self.exit_codes[a] = shell.kill_tree(self.procs[a], grace=2.0)
                if not alive:
                    self.progress.update(p, time.time() - self.t0, force=True)
                    return
            time.sleep(self.poll)

    def _write_partial(self, force: bool = False) -> None:
        """The trace so far, every few wall seconds (:class:`~iolab.emulator.run_clock.PartialTraces`);
        nothing before the run's clock starts."""
        if self.t0 is not None:
            self.partials.write(lambda: self._trace(complete=False), force)

    def _check_work(self) -> None:
        """Note (once) that the work folder was deleted under the run: its logs and checkpoints are gone,
        and the run is reported failed (exit 1) even if every app ends ok."""
        if self.work_deleted is None and not self.work.is_dir():
            t0 = self.t0 if self.t0 is not None else self.wall0
            self.work_deleted = (time.time() - t0) / self.spec.emulator.time_scale
            self.progress.note(f"the work folder {self.work} was deleted during the run: its logs and checkpoints "
                               "are lost")

    def _kill_all(self) -> None:
        for app, proc in self.procs.items():
            if proc.poll() is None:
                self.exit_codes[app] = shell.kill_tree(proc, grace=1.0)

    # -- the trace ------------------------------------------------------------------------------------
    def _trace(self, complete: bool) -> Trace:
        self._check_work()
        rec = self.arbiter.records()
        spec, s = self.spec, self.spec.emulator
        tb = TraceBuilder()
        for j in rec["jobs"]:
            tb.add_job(tier="", hosts=self.launcher.hosts(j["id"]), **j)
        tb.extend("phases", [tuple(r) for r in rec["phases"]])
        tb.extend("grants", [tuple(r) for r in rec["grants"]])
        tb.extend("actions", [tuple(r) for r in rec["actions"]])
        trace = tb.build(
            **provenance(spec, "emulator", real=True), policy=policy_label(spec.policy), mode="emulator", dt=0.0,
            bandwidth=spec.platform.bandwidth,
            io_nodes=spec.platform.io_nodes, nodes_per_io_node=spec.platform.nodes_per_io_node,
            packed=self.plan.packed, packs=self.plan.pack_count, unit_bytes=s.unit_bytes,
            time_scale=s.time_scale, bandwidth_cap=s.bandwidth_cap, ranks_per_app=str(s.ranks_per_app),
            complete=complete, failures=rec["failures"],
            exit_codes=self.exit_codes, bytes_booked=rec["bytes_booked"], t0=self.t0,
            wall_seconds=time.time() - self.t0, launch_seconds=self.t0 - self.wall0, work_dir=str(self.work),
            launcher=self.launcher.name, app_launch_seconds=self.launcher.launch_seconds(self.launched),
            nice=self._niceness(),
            **({"work_dir_deleted": self.work_deleted} if self.work_deleted is not None else {}),
        )
        trace.attrs["calibration"] = calibration.measure_io(trace)  # what the simulator must know of this run
        return trace

    def _niceness(self) -> dict[str, int]:
        """The priorities this run had: the driver's, the arbiter actor's, and the apps' (``nice -n
        emulator.nice`` adds to the launching process's, up to 19; under Slurm, to the job step's)."""
        driver = os.nice(0)
        out = {"driver": driver, "apps": self.launcher.apps_nice(driver, self.spec.emulator.nice)}
        try:
            out["arbiter"] = self.arbiter.nice()
        except Exception:  # a dead actor: the trace is still written, without its priority
            pass
        return out


