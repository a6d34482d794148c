"""The storage load controller in a real batch run (dheenadayalan2017), the batch loop's side.

The controller actor (:mod:`iolab.middleware.controller_actor`) samples the
volumes and decides; :class:`ControllerDriver`, held by
:class:`~iolab.emulator.batch.run.BatchEmulation`, gives it the jobs' files
and carries out its decisions, because the signals belong to the process that
launched the jobs:

- every cycle (at the sleep Psi the last cycle returned, spec seconds) it
  lists, per running or suspended job, the files under each volume that the
  job's processes hold open (``/proc/PID/fd``; the process tree of its ``mpiexec``,
  under srun the pids of its step, ``scontrol listpids``) or that lie in the job's
  own directory there (a Jacobi checkpoint is open only while written), with
  their size in spec bytes (real / bytes_scale, as omega) and mtime in spec seconds;
- the batch driver (:class:`~iolab.middleware.policies.batch.driver.BatchDriver`,
  the simulator's too) carries out the actor's actions: a suspension stops the
  job's whole process tree, or under srun signals its step (:meth:`pause`:
  :class:`~iolab.emulator.suspension.Suspender` with the run's job launcher's
  lever: :mod:`iolab.emulator.batch.launch`; the storage manager's hook, whose
  ``actions`` rows become the trace's ``actions`` table), and the driver moves
  the kernel's job to ``suspended``; a resumption undoes both (:meth:`unpause`);
- if the actor dies or does not answer, every suspended job is resumed and the
  run goes on without a controller; the same happens when the run ends, fails
  or is interrupted (Ctrl-C): no job is ever left stopped.
"""

from __future__ import annotations

import os
import uuid

from iolab.middleware.policies.controller.response_model import predictor_args
from iolab.middleware.controller_actor import LoadControllerActor
from iolab.middleware.policies.batch.kernel import CONTROLLED
from iolab.middleware.policies.controller import ControllerParams
from iolab.middleware.volume_probe import open_files

from iolab.emulator.suspension import Suspender

__all__ = ["ControllerDriver"]



def _both(job: str, at: float, storage, io_nodes) -> None:
    """The storage manager's hook, then (with I/O nodes) the I/O nodes' actor's, with the wall time
    ``at`` the suspension began or ended: a suspended job's parts let go of their I/O nodes and ask again
    at resume (:mod:`iolab.middleware.io_node_state`)."""
    storage(job, at)
    if io_nodes:
        io_nodes(job, at)


def tier_probes(spec, laws: dict) -> dict:
    """volume -> (spec bytes/s, law) of each watched volume whose probe is its paced tier
    (``controller.model.probe: tier``): the unit's ``probe_rate``, else the tier's rate; ``laws``: the
    tiers' interference laws (:func:`~iolab.middleware.policies.interference.tier_laws`), the run's."""
    c = spec.controller
    m = c.model
    if m is None or m.probe != "tier":
        return {}
    return {v: (m.probe_rate or getattr(spec.platform, v).rate, laws[v]) for v in c.volumes}


class ControllerDriver:
    def __init__(self, run, session):
        c = run.spec.controller
        s = run.spec.emulator
        self.params = ControllerParams.from_spec(c)
        self.volumes = {v: str(run.work / v) for v in c.volumes}
        self.ts = s.time_scale
        self.bs = s.bytes_scale  # file sizes go to the policy in spec bytes, like omega
        self.t0 = run.t0  # None until the run's clock starts (the run sets it then)
        self.actor = LoadControllerActor.create(
            self.params, self.volumes, time_scale=s.time_scale, unit_bytes=max(1, int(c.p * s.bytes_scale)),
            name=f"controller-{uuid.uuid4().hex[:8]}", namespace=session.namespace, forecast=c.forecast,
            ar_order=c.ar_order, manager=(run.mgr.name, run.mgr.namespace), bytes_scale=s.bytes_scale,
            prediction=predictor_args(c, run.spec.seed), tiers=tier_probes(run.spec, run.laws), policy=c.policy)
        self.suspender = Suspender(on_suspend=lambda job, at: _both(job, at, run.mgr.suspend,
                                                                    run.io and run.io.suspend),
                                   on_resume=lambda job, at: _both(job, at, run.mgr.resume,
                                                                   run.io and run.io.resume),
                                   lever=run.launcher.lever)
        self.next = 0.0
        self.dead = ""
        self.rows: list[tuple] = []  # (spec time, job, suspend|resume, volume, reason)
        self.records: dict = {}
        self.stopped = False  # stop() took the actor's last records (the trace reads them, not the dead actor)
        self.progress = run.progress

    # -- the jobs' files ----------------------------------------------------------------------------
    def usages(self, run) -> list:
        out = []
        for j in run.kernel.running.values():
            if j.state not in CONTROLLED or j.proc is None:
                continue
            pids = self.suspender.pids(j.queued.id, j.proc.pid)
            files = {}
            for v, root in self.volumes.items():
                for path, size, mtime in open_files(pids, root):
                    files[path] = (path, v, size / self.bs, (mtime - self.t0) / self.ts)
                if j.directory and j.tier == v:
                    for dirpath, _, names in os.walk(j.directory):
                        for n in names:
                            p = os.path.join(dirpath, n)
                            try:
                                st = os.stat(p)
                            except OSError:
                                continue
                            files.setdefault(p, (p, v, st.st_size / self.bs, (st.st_mtime - self.t0) / self.ts))
            out.append([j.queued.id, j.start, sorted(files.values())])
        return out

    # -- one step of the batch loop ------------------------------------------------------------------
    def step(self, run, now: float) -> None:
        """The controller's cycle, if due at the poll's instant ``now``: the actor samples and decides, the
        batch driver carries out its actions."""
        if self.dead or now < self.next:
            return
        try:
            cy = self.actor.cycle(now, self.usages(run))
        except Exception as exc:  # noqa: BLE001 - any failure of the actor: resume everything, go on
            self.fail(run, now, f"{type(exc).__name__}: {exc}")
            return
        self.rows += run.driver.act(cy["actions"], now)  # carried out by the batch driver
        self.next = now + cy["sleep"]

    # -- the effectors of a suspension (the batch driver's pause and unpause) ----------------------------
    def pause(self, j) -> bool:
        """``j``'s process tree stops (False: its processes are gone; the driver asks only for a running job)."""
        if j.proc is None or j.proc.poll() is not None:
            return False
        return self.suspender.suspend(j.queued.id, j.proc.pid)

    def unpause(self, j) -> bool:
        """``j``'s process tree goes on (False: it was not stopped)."""
        if j.queued.id not in self.suspender.stopped:
            return False
        self.suspender.resume(j.queued.id)
        return True

    def release(self, run, t: float, reason: str) -> list[str]:
        """Every stopped job goes on at ``t`` (through the batch driver); the jobs resumed."""
        rows = run.driver.release(t, reason, list(self.suspender.stopped))
        self.rows += rows
        return [r[1] for r in rows]

    def fail(self, run, t: float, why: str) -> None:
        self.dead = why
        jobs = self.release(run, t, "controller lost")
        self.progress.note(f"load controller lost ({why}); resumed {len(jobs)} suspended job(s), going on without it")

    def ended(self, j) -> None:
        """``j`` ends (done, failed, killed): a stopped tree is continued (to be killed; its suspension ends
        with it in the kernel), and the actor forgets it."""
        if j.queued.id in self.suspender.stopped:
            self.suspender.resume(j.queued.id)
        if not self.dead:
            self.actor.forget(j.queued.id)

    def sample_rows(self) -> list[tuple]:
        """The actor's samples as the trace's ``samples`` rows (spec seconds and spec bytes; the actor
        computed the byte rate in spec units)."""
        if not self.stopped and not self.dead:  # the run goes on (a partial trace): the samples so far,
            try:                                  # the sampler left running (records() would stop it)
                self.records = self.actor.so_far()
            except Exception:  # noqa: BLE001 - the actor died: its samples are lost with it
                self.records = {}
        return [((wall - self.t0) / self.ts, v, float(r), int(writers), float(rate), float(in_flight), float(score),
                 float(fed), float(ops), float(queued))
                for wall, v, r, writers, rate, in_flight, score, fed, ops, queued in self.records.get("samples", [])]
        # (the actor's first sample is taken as it starts, a moment before the run's clock: time < 0)

    def stop(self, run, t: float) -> None:
        """The run ends at ``t``: every stopped job goes on, the actor's last records are kept, it is killed."""
        self.release(run, t, "run ends")
        if not self.dead:  # the last records, also when a partial trace read earlier ones
            try:
                self.records = self.actor.records()
            except Exception:  # noqa: BLE001 - records are a bonus; the jobs are resumed already
                self.records = {}
        self.stopped = True
        self.actor.kill()
