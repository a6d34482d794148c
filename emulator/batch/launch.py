"""How a batch job's processes start, end and are paused: ``mpiexec`` here, an ``srun`` step
inside a Slurm allocation.

:class:`~iolab.emulator.batch.run.BatchEmulation` and its
:class:`~iolab.emulator.batch.jobs.JobProcesses` ask the *job launcher*:

- ``open_ray(address)``: the run's Ray session (a local Ray, a given one, or under srun a Ray
  cluster over the nodes the spec uses: :func:`iolab.emulator.slurm_launch.open_allocation_ray`);
- ``coordinator(inner, config)``: the job's ``--coordinator`` and its config;
- ``command(job, argv, nice)``: the job's command line (built by :mod:`iolab.emulator.launchers`);
- ``kill(job, grace)``: end every process of the job, wherever it runs;
- ``hosts(job)``: the trace's ``hosts`` column;
- ``lever``: what the load controller's :class:`~iolab.emulator.suspension.Suspender` pulls.

:class:`MpiexecJobs` is the local way, as it always was: ``[nice] mpiexec -n R python -m
iolab.apps.jacobi ...``, ``kill_tree`` of its process group, SIGSTOP of its process tree
(:class:`~iolab.emulator.suspension.TreeLever`), and ``hosts`` the kernel's node ids (``n0,n1``).

:class:`SrunJobs` runs each job as one step of the allocation, on the allocation nodes that the
batch kernel's node ids name: node id ``k`` is the ``k``-th node of the expanded
``SLURM_JOB_NODELIST``. A job of Q nodes and R ranks runs on the first ``min(Q, R)`` nodes of its
set, as an I/O app does on its slot::

    srun --nodes=N --ntasks=R --nodelist=<its nodes> --mpi=pmi2 --overcommit \\
         --job-name=iolab-JOB --export=ALL,MPIR_CVAR_CH4_NETMOD=ofi --overlap --kill-on-bad-exit=1 \\
         nice -n 10 python -m iolab.apps.jacobi ...

The ranks are children of ``slurmstepd``, not of that ``srun``: ``kill`` therefore cancels the
step (``scancel JOB.STEP``) besides killing ``srun``, and the controller signals the step
(:class:`~iolab.emulator.slurm_control.StepLever`). Each rank notes the node it really ran on
(:mod:`iolab.emulator.slurm_hosts`, ``SLURMD_NODENAME``), which is the trace's ``hosts``.

:func:`make_job_launcher` picks one (:func:`~iolab.emulator.slurm_launch.choose_launcher`: srun
inside an allocation) and checks, before any process starts, that the allocation holds the
spec's ``platform.nodes``.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from iolab.errors import IolabError, RunError
from iolab.specs.batch import BatchExperiment

from iolab.emulator import slurm_control, slurm_hosts
from iolab.emulator.launchers import mpiexec_command, srun_command
from iolab.emulator.ray_session import RaySession
from iolab.emulator.shell import kill_tree
from iolab.emulator.slurm_control import StepLever
from iolab.emulator.slurm_launch import AllocationTooSmall, SlurmAllocation, choose_launcher, open_allocation_ray
from iolab.emulator.suspension import TreeLever

__all__ = ["AllocationTooSmall", "MpiexecJobs", "SrunJobs", "job_nodes", "make_job_launcher"]


def _nice(argv: list[str], nice: int) -> list[str]:
    return (["nice", "-n", str(nice)] + list(argv)) if nice else list(argv)


class MpiexecJobs:
    """Local runs: every job an ``mpiexec`` on this machine."""

    name = "mpiexec"

    def __init__(self, mpiexec: str):
        self.mpiexec = mpiexec
        self.lever = TreeLever()

    def open_ray(self, address: str | None):
        return RaySession.open(address)

    def coordinator(self, inner: str, config: dict) -> tuple[str, dict]:
        return inner, config

    def command(self, j, argv: list[str], nice: int = 0) -> list[str]:
        cmd = mpiexec_command(j.ranks, argv, mpiexec=self.mpiexec)
        return (["nice", "-n", str(nice)] + cmd) if nice else cmd

    def kill(self, j, grace: float = 1.0) -> int | None:
        return kill_tree(j.proc, grace=grace)

    def hosts(self, j) -> str:
        return ",".join(f"n{h}" for h in j.hosts)  # the kernel's node ids: no real node stands behind them


def job_nodes(nodes: Sequence[str], node_ids: Sequence[int], ranks: int) -> list[str]:
    """The allocation nodes a job runs on: node id ``k`` -> ``nodes[k]``, the first ``min(Q, R)``
    of its ``Q`` ids (``R`` = ``ranks``)."""
    names = [nodes[k] for k in node_ids]
    return names[:max(1, min(len(names), ranks))]


@dataclass
class SrunJobs:
    """Inside an allocation: Ray over the spec's nodes, one ``srun`` step ``iolab-JOB`` per job."""

    allocation: SlurmAllocation
    nodes: tuple[str, ...]                  # node id k -> nodes[k] (the first platform.nodes of the allocation)
    hosts_dir: Path
    log_dir: Path
    mpi: str = "pmi2"
    env: Mapping[str, str] | None = None    # for the Slurm clients (tests pass SLURM_CONF)
    lever: StepLever = field(init=False)
    ray: object = field(default=None, repr=False)  # the SlurmRay once started
    name: str = "srun"

    def __post_init__(self):
        self.lever = StepLever(self.allocation.job_id, env=self.env)

    def open_ray(self, address: str | None):
        session, self.ray = open_allocation_ray(self.nodes, address, self.log_dir)
        return session

    def coordinator(self, inner: str, config: dict) -> tuple[str, dict]:
        return slurm_hosts.TARGET, slurm_hosts.wrap_config(inner, config, self.hosts_dir)

    def nodes_of(self, j) -> list[str]:
        return job_nodes(self.nodes, j.hosts, j.ranks)

    def command(self, j, argv: list[str], nice: int = 0) -> list[str]:
        # nice goes inside the step: srun does not pass its own niceness on to the tasks.
        names = self.nodes_of(j)
        return srun_command(j.ranks, _nice(argv, nice), nodes=len(names), nodelist=names, mpi=self.mpi,
                            overcommit=True, job_name=f"iolab-{j.queued.id}",
                            extra=["--overlap", "--kill-on-bad-exit=1"])

    def kill(self, j, grace: float = 1.0) -> int | None:
        """Cancel the job's step (its tasks run under slurmstepd, out of ``srun``'s process group),
        then end ``srun``."""
        step = self.lever.step(j.queued.id)
        if step is not None:
            slurm_control.cancel(step, env=self.env)
        return kill_tree(j.proc, grace=grace)

    def hosts(self, j) -> str:
        return slurm_hosts.read_hosts(self.hosts_dir, j.queued.id)


def make_job_launcher(name: str | None, spec: BatchExperiment, jobs: Sequence, work: Path, mpiexec: str,
                      environ: Mapping[str, str] | None = None):
    """The job launcher of this run. Every check happens here, before any process starts: under
    srun an allocation of fewer nodes than ``platform.nodes`` is refused (:class:`AllocationTooSmall`,
    naming both sizes and the ``--nodes=`` to ask for), a job id Slurm cannot take as a step name
    too, and ``srun`` must be on PATH."""
    which = choose_launcher(name, environ)
    if which == "mpiexec":
        return MpiexecJobs(mpiexec)
    alloc = SlurmAllocation.from_env(environ)
    need = spec.platform.nodes
    if len(alloc.nodes) < need:
        raise AllocationTooSmall(
            f"allocation {alloc.job_id} has {len(alloc.nodes)} node(s) ({','.join(alloc.nodes)}) but the batch spec's "
            f"platform has {need}: ask Slurm for more (sbatch --nodes={need}) or lower platform.nodes")
    bad = [str(j.id) for j in jobs if not str(j.id) or any(c.isspace() or c == "," for c in str(j.id))]
    if bad:
        raise IolabError(f"job id(s) {', '.join(map(repr, bad[:5]))} cannot name a Slurm step (--job-name=iolab-JOB "
                         "takes no blanks or commas): rename them")
    if shutil.which("srun") is None:
        raise RunError("--launcher srun: srun is not on PATH")
    work = Path(work)
    return SrunJobs(alloc, alloc.nodes[:need], work / "hosts", work / "logs")
