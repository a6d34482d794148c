"""How an app is started: ``mpiexec`` on this machine, or ``srun`` inside a Slurm allocation.

:class:`~iolab.emulator.io.run.Emulation` asks its *app launcher* these things and nothing else:

- ``open_ray(address)``: the Ray session of the run (a local Ray, a given one, or under
  srun a Ray cluster over the allocation: :mod:`iolab.emulator.slurm_ray`);
- ``app_command(app_id, ranks, argv, nice)`` / ``calibrate_command(ranks, argv)``: the
  command line (built by :mod:`iolab.emulator.launchers`, run by :mod:`iolab.emulator.shell`);
- ``coordinator(inner, config)``: the app's ``--coordinator`` and its config; both
  launchers wrap the real one in :mod:`iolab.emulator.slurm_hosts` so each rank notes its node;
- ``hosts(app_id)``: the trace's ``hosts`` column, from what the ranks reported;
- ``apps_nice(driver, nice)``: the priority the apps run at, for the trace (``nice -n`` composes
  with this process's under mpiexec; a Slurm step's tasks start from slurmd's);
- ``suspend(app_id, proc)`` / ``resume(app_id, proc)``: stop and continue every process of
  a running app (the load controller's lever): SIGSTOP/SIGCONT to the app's process group
  here (``mpiexec`` and its ranks), a signal to the app's step under srun
  (:mod:`iolab.emulator.slurm_control`; ``scontrol suspend`` takes whole jobs only).

:class:`MpiexecApps` is the local way (all ranks here). :class:`SrunApps` maps the
allocation's nodes (``SLURM_JOB_NODELIST``) onto the spec's I/O partitions in order
(:func:`iolab.emulator.launchers.partition_nodes`): partition k gets nodes k*P..k*P+P-1.
Within its partition an app gets its own Q consecutive nodes (apps of one pack side by
side; every pack of an I/O node starts again at the partition's first node, since packs
run one after the other), and runs ``R = ranks`` tasks on ``min(Q, R)`` of them::

    srun --nodes=N --ntasks=R --nodelist=<its nodes> --mpi=pmi2 --overcommit \\
         --job-name=iolab-APP --export=ALL,MPIR_CVAR_CH4_NETMOD=ofi --overlap --kill-on-bad-exit=1 \\
         nice -n 10 python -m iolab.apps.jacobi ...

(the libfabric device: docs/slurm.md, "PMI lines and MPICH's network device").

``--overlap`` and ``--overcommit``: every app is launched before the clock starts and
waits at its start gate, so Slurm must never hold a step back for CPUs (the gate would
never fill); how much the apps may share is the spec's business, not Slurm's.

:func:`choose_launcher` picks ``srun`` when ``SLURM_JOB_ID`` is set, else ``mpiexec``;
:func:`make_launcher` checks everything (allocation size, ``srun`` present) before any
process starts.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from iolab.errors import IolabError, RunError
from iolab.middleware.policies.plan import Plan
from iolab.specs.io import IOExperiment

from iolab.emulator import slurm_control, slurm_hosts
from iolab.emulator.launchers import expand_hostlist, mpiexec_command, partition_nodes, srun_command
from iolab.emulator.ray_session import RaySession
from iolab.emulator.slurm_ray import SlurmRay, enable_driver_auth
from iolab.emulator.suspension import signal_tree

__all__ = ["LAUNCHERS", "AllocationTooSmall", "choose_launcher", "SlurmAllocation", "app_nodes", "MpiexecApps",
           "SrunApps", "make_launcher", "open_allocation_ray"]

LAUNCHERS = ("srun", "mpiexec")


def choose_launcher(requested: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """``requested`` if given (checked), else ``srun`` inside an allocation (``SLURM_JOB_ID``
    set), else ``mpiexec``. ``srun`` outside an allocation is a RunError."""
    env = os.environ if environ is None else environ
    if requested is None:
        return "srun" if env.get("SLURM_JOB_ID") else "mpiexec"
    name = requested.lower()
    if name not in LAUNCHERS:
        raise RunError(f"--launcher must be one of {', '.join(LAUNCHERS)}, got {requested!r}")
    if name == "srun" and not env.get("SLURM_JOB_ID"):
        raise RunError("--launcher srun needs a Slurm allocation (SLURM_JOB_ID is not set): run inside "
                       "sbatch/salloc, e.g. sbatch slurm/templates/emulate.sbatch")
    return name


@dataclass(frozen=True)
class SlurmAllocation:
    """The Slurm allocation this process runs in."""

    job_id: str
    nodes: tuple[str, ...]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "SlurmAllocation":
        env = os.environ if environ is None else environ
        job = env.get("SLURM_JOB_ID")
        hostlist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
        if not job or not hostlist:
            raise RunError("not inside a Slurm allocation: SLURM_JOB_ID and SLURM_JOB_NODELIST must be set")
        try:
            return cls(job, tuple(expand_hostlist(hostlist)))
        except ValueError as exc:
            raise RunError(f"SLURM_JOB_NODELIST: {exc}") from None


class AllocationTooSmall(IolabError):
    """The allocation has fewer nodes than the spec's platform: bad usage (exit 2), found before
    any process starts, for I/O specs (``io_nodes x nodes_per_io_node``) and batch specs
    (``platform.nodes``) alike."""


def app_nodes(spec: IOExperiment, plan: Plan, nodes: Sequence[str]) -> dict[str, list[str]]:
    """app id -> the nodes it runs on (``min(Q, ranks)`` of its Q-node slot in its partition).

    :class:`AllocationTooSmall`, naming the sizes, if the allocation is smaller than the spec's
    ``io_nodes x nodes_per_io_node``.
    """
    p = spec.platform
    try:
        parts = partition_nodes(list(nodes), p.io_nodes, p.nodes_per_io_node)
    except ValueError as exc:
        raise AllocationTooSmall(f"{exc}; ask Slurm for more nodes (sbatch --nodes={p.compute_nodes}) or shrink "
                                 "platform.io_nodes / platform.nodes_per_io_node") from None
    out: dict[str, list[str]] = {}
    for io_node, packs in enumerate(plan.nodes):
        for pack in packs:
            offset = 0
            for rank in pack:
                app = spec.apps[rank]
                slot = parts[io_node][offset:offset + app.nodes]
                if len(slot) < app.nodes:  # packs never exceed P (Make-Pack), spec checks mapping none
                    slot = parts[io_node][:app.nodes]
                offset += app.nodes
                out[app.id] = slot[:min(app.nodes, spec.emulator.ranks_for(app.nodes))]
    return out


class MpiexecApps:
    """Local runs: a local (or given) Ray, ``[nice] mpiexec -n R ...`` for each app."""

    name = "mpiexec"

    def __init__(self, mpiexec: str, hosts_dir: Path):
        self.mpiexec = mpiexec
        self.hosts_dir = Path(hosts_dir)

    def open_ray(self, address: str | None):
        return RaySession.open(address)

    def coordinator(self, inner: str, config: dict) -> tuple[str, dict]:
        return slurm_hosts.TARGET, slurm_hosts.wrap_config(inner, config, self.hosts_dir)

    def app_command(self, app_id: str, ranks: int, argv: list[str], nice: int = 0) -> list[str]:
        cmd = mpiexec_command(ranks, argv, mpiexec=self.mpiexec)
        return (["nice", "-n", str(nice)] + cmd) if nice else cmd

    @staticmethod
    def apps_nice(driver: int, nice: int) -> int:
        """The apps' priority: ``nice -n`` adds to this process's (``driver``), up to 19."""
        return min(19, driver + nice)

    def calibrate_command(self, ranks: int, argv: list[str]) -> list[str]:
        return mpiexec_command(ranks, argv, mpiexec=self.mpiexec)

    def hosts(self, app_id: str) -> str:
        return slurm_hosts.read_hosts(self.hosts_dir, app_id)

    def launch_seconds(self, launched: dict[str, float]) -> dict[str, float]:
        return slurm_hosts.launch_seconds(self.hosts_dir, launched)

    def suspend(self, app_id: str, proc) -> None:
        """SIGSTOP the app's processes: ``mpiexec``'s group and its whole tree (MPICH's proxy and
        ranks ``setsid``, so the group alone would stop ``mpiexec`` only)."""
        if proc.poll() is not None or not signal_tree(proc.pid, signal.SIGSTOP):
            raise RunError(f"cannot suspend app {app_id!r}: its processes are gone")

    def resume(self, app_id: str, proc) -> None:
        if proc.poll() is not None or not signal_tree(proc.pid, signal.SIGCONT):
            raise RunError(f"cannot resume app {app_id!r}: its processes are gone")


@dataclass
class SrunApps:
    """Inside an allocation: Ray over the allocation's nodes, one ``srun`` step per app."""

    allocation: SlurmAllocation
    nodes_of: dict[str, list[str]]          # app id -> its nodes (app_nodes)
    hosts_dir: Path
    log_dir: Path
    mpi: str = "pmi2"
    ray_nodes: int | None = None            # None: every node of the allocation runs Ray
    ray: object = field(default=None, repr=False)  # the SlurmRay once started
    name: str = "srun"

    def open_ray(self, address: str | None):
        """The Ray this process already joined, else ``address`` if given, else a new Ray
        cluster over the allocation (:class:`iolab.emulator.slurm_ray.SlurmRay`)."""
        nodes = list(self.allocation.nodes[:self.ray_nodes] if self.ray_nodes else self.allocation.nodes)
        session, self.ray = open_allocation_ray(nodes, address, self.log_dir)
        return session

    def coordinator(self, inner: str, config: dict) -> tuple[str, dict]:
        return slurm_hosts.TARGET, slurm_hosts.wrap_config(inner, config, self.hosts_dir)

    def _srun(self, ranks: int, nodes: list[str], argv: list[str], job_name: str) -> list[str]:
        return srun_command(ranks, argv, nodes=len(nodes), nodelist=nodes, mpi=self.mpi, overcommit=True,
                            job_name=job_name, extra=["--overlap", "--kill-on-bad-exit=1"])

    def app_command(self, app_id: str, ranks: int, argv: list[str], nice: int = 0) -> list[str]:
        # nice goes inside the step: srun does not pass its own niceness on to the tasks.
        argv = (["nice", "-n", str(nice)] + list(argv)) if nice else list(argv)
        return self._srun(ranks, self.nodes_of[app_id], argv, f"iolab-{app_id}")

    @staticmethod
    def apps_nice(driver: int, nice: int) -> int:
        """The apps' priority: the step's tasks start from slurmd's, not this process's, so ``nice``."""
        return nice

    def calibrate_command(self, ranks: int, argv: list[str]) -> list[str]:
        return self._srun(ranks, list(self.allocation.nodes[:1]), argv, "iolab-calibrate")

    def hosts(self, app_id: str) -> str:
        return slurm_hosts.read_hosts(self.hosts_dir, app_id)

    def launch_seconds(self, launched: dict[str, float]) -> dict[str, float]:
        return slurm_hosts.launch_seconds(self.hosts_dir, launched)

    def _step(self, app_id: str) -> str:
        step = slurm_control.find_step(self.allocation.job_id, f"iolab-{app_id}")
        if step is None:
            raise RunError(f"app {app_id!r} has no running step iolab-{app_id} in job {self.allocation.job_id}")
        return step

    def suspend(self, app_id: str, proc) -> None:
        """Stop the tasks of the app's step (``scancel --signal=STOP JOB.STEP``), returning once
        the tasks this host sees are stopped (:func:`~iolab.emulator.slurm_control.stop_step`)."""
        slurm_control.stop_step(self._step(app_id))

    def resume(self, app_id: str, proc) -> None:
        slurm_control.resume(self._step(app_id))


def open_allocation_ray(nodes: Sequence[str], address: str | None, log_dir: Path):
    """``(session, cluster)``: the Ray this process already joined (``iolab validate``), else
    ``address`` if given, else a new Ray cluster over ``nodes`` (:class:`SlurmRay`, then
    ``cluster`` is it and ``session.close()`` stops its steps; otherwise ``cluster`` is None)."""
    import ray  # lazy: Ray only when a run opens its session

    if ray.is_initialized():  # the caller holds a Ray already (iolab validate): use it
        return RaySession.open(), None
    if address:
        enable_driver_auth()
        return RaySession.open(address), None
    cluster = SlurmRay.start(list(nodes), log_dir=log_dir)
    return _ClusterSession(cluster), cluster


class _ClusterSession:
    """A RaySession look-alike whose close() also stops the Ray steps."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.gcs_address = cluster.session.gcs_address
        self.namespace = cluster.session.namespace

    def close(self) -> None:
        self.cluster.close()


def make_launcher(name: str | None, spec: IOExperiment, plan: Plan, work: Path, mpiexec: str,
                  environ: Mapping[str, str] | None = None):
    """The app launcher for this run; every check (allocation size, srun found) happens
    here, before any process starts."""
    which = choose_launcher(name, environ)
    hosts_dir = Path(work) / "hosts"
    if which == "mpiexec":
        return MpiexecApps(mpiexec, hosts_dir)
    alloc = SlurmAllocation.from_env(environ)
    nodes_of = app_nodes(spec, plan, alloc.nodes)
    if shutil.which("srun") is None:
        raise RunError("--launcher srun: srun is not on PATH")
    return SrunApps(alloc, nodes_of, hosts_dir, Path(work) / "logs")
