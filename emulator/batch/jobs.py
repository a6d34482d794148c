"""A batch run's jobs as processes: their record, inputs, command line, logs and outputs.

:class:`JobRun` is one job of :mod:`iolab.emulator.batch.run`'s loop: the batch kernel's
job record plus its nodes, process and staging records.  :class:`JobProcesses` does everything that
touches a job's files and processes, apart from deciding when: it writes every
job's input to ``WORK/lps/inputs/<job>/`` before the run (one HDF5 file per
rank, ``iolab.apps.checkpoint``'s format, ``input * bytes_scale`` bytes together),
launches a job as ``python -m iolab.apps.jacobi --phases-json ...`` (:func:`app_phases`:
read the input, compute segments and checkpoint writes, write the output) against its tier
directory, under the run's job launcher (:mod:`iolab.emulator.batch.launch`: ``mpiexec -n R``
here, one ``srun`` step in a Slurm allocation), and finds the files it wrote.
"""

from __future__ import annotations

import math
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iolab.apps import checkpoint
from iolab.apps.jacobi_command import jacobi_argv, rank_env
from iolab.middleware.policies.batch.kernel import JobState
from iolab.workloads.steps import job_steps
from iolab.specs.batch import BatchExperiment

from iolab.emulator.shell import spawn

STAGE_KINDS = ("stage-in", "stage-out")


@dataclass(eq=False)
class JobRun(JobState):
    """A job of a real batch run: the kernel's :class:`JobState` (state, tier, times in spec
    seconds, HPS bytes and parts) plus what its effectors hold (processes, storage calls)."""

    ranks: int = 1
    hosts: list[int] = field(default_factory=list)
    launched: float = math.nan  # wall
    exited: float = math.nan  # wall: when the loop saw its processes exit
    pending: str = ""  # what ``ref`` is: alloc | stage-in | stage-out
    ref: Any = None
    proc: Any = None
    directory: str = ""
    index_map: list[int] = field(default_factory=list)
    staged: list[dict] = field(default_factory=list)
    rc: int | None = None
    io_nodes: list[int] = field(default_factory=list)  # with I/O nodes: the I/O node of each rank


def rank_io_nodes(hosts: list[int], ranks: int, io_node_of) -> list[int]:
    """The I/O node of each of a job's ``ranks`` ranks on its node ids ``hosts`` (sorted): rank ``r`` runs on
    node ``hosts[r * Q // R]`` (``Q`` nodes, ``R >= Q`` ranks: blocks of consecutive ranks per node), or on
    ``hosts[r]`` with fewer ranks than nodes (the first ``R`` nodes, as ``srun`` places them)."""
    q = len(hosts)
    if q == 0:
        raise ValueError("a job without node ids has no I/O node")
    return [io_node_of(hosts[r * q // ranks if ranks >= q else r]) for r in range(ranks)]


def job_parts(io_nodes: list[int], phases: list, node_io_nodes: list[int] | None = None) -> dict[int, dict]:
    """A job's parts: per I/O node its ranks, the real bytes they move in each app phase (``phases``: the
    ``--phases-json`` list; each rank moves its ``checkpoint.share``) and the job's compute nodes there
    (``node_io_nodes``: the I/O node of each of its compute nodes; left out, one per rank), which split the
    phase's spec bytes (:class:`~iolab.middleware.policies.batch.io_node_book.IONodeBook`)."""
    size = len(io_nodes)
    parts: dict[int, dict] = {}
    for r, n in enumerate(io_nodes):
        parts.setdefault(n, {"ranks": [], "bytes": []})["ranks"].append(r)
    if node_io_nodes is not None:
        if set(node_io_nodes) != set(parts):
            raise ValueError(f"the ranks' I/O nodes {sorted(parts)} are not the compute nodes' "
                             f"{sorted(set(node_io_nodes))}: every compute node of the job needs a rank")
        for p in parts.values():
            p["nodes"] = 0
        for n in node_io_nodes:
            parts[n]["nodes"] += 1
    for p in parts.values():
        p["bytes"] = [0 if kind == "compute" else sum(checkpoint.share(int(amount), size, r) for r in p["ranks"])
                      for kind, amount in phases]
    return parts


def app_phases(job, tier: str, spec: BatchExperiment) -> tuple[list, list, list[int]]:
    """The job's steps on ``tier``, its ``--phases-json`` list and each app phase's step index."""
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


class JobProcesses:
    """The jobs' inputs, processes (started by ``launcher``: :mod:`iolab.emulator.batch.launch`), logs
    (``WORK/logs/<job>.log``) and outputs."""

    def __init__(self, spec: BatchExperiment, work: Path, launcher, io=None):
        self.spec, self.s, self.work, self.launcher = spec, spec.emulator, work, launcher
        self.io = io  # the I/O-node actor (iolab.middleware.io_node_actor.IONodes) of a platform with I/O nodes
        self.lps = work / "lps"

    # -- inputs ----------------------------------------------------------------------------------------
    def prepare_inputs(self, jobs: list[JobRun]) -> None:
        for j in jobs:
            total = int(j.job.input * self.s.bytes_scale)
            if total <= 0:
                continue
            d = self.lps / "inputs" / j.queued.id
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
            for r in range(j.ranks):
                checkpoint.write_rank_file(checkpoint.rank_file(d, r), np.zeros((1, 1)), {},
                                           checkpoint.share(total, j.ranks, r), None,
                                           checkpoint.pattern(self.spec.seed, r, self.s.chunk_bytes), False)

    def inputs(self, j: JobRun) -> list[str]:
        d = self.lps / "inputs" / j.queued.id
        return sorted(str(p) for p in d.glob("rank-*.h5")) if d.is_dir() else []

    # -- launching -----------------------------------------------------------------------------------------
    def launch(self, j: JobRun, session, actor: str) -> None:
        """Start ``j`` (``mpiexec`` or its ``srun`` step) in its tier directory ``j.directory`` (already
        open), with the storage manager ``actor`` of the Ray ``session`` as its coordinator; sets ``j.proc``."""
        s, job_id = self.s, j.queued.id
        out_dir = self.work / "apps" / job_id
        shutil.rmtree(out_dir, ignore_errors=True)
        out_dir.mkdir(parents=True)
        inputs = self.inputs(j)
        if inputs:
            src = Path(j.directory) / "input"
            if j.tier == "lps":  # the job reads its LPS input in place (hard links: it deletes them)
                src.mkdir(mode=0o700, exist_ok=True)
                for f in inputs:
                    os.link(f, src / Path(f).name)
            m = checkpoint.make_manifest(job_id, s.grid, [j.ranks, 1], 0, 1, 0, src, j.ranks)
            checkpoint.write_manifest(checkpoint.manifest_path(out_dir, job_id), m, fsync=False)
        j.steps, phases, j.index_map = app_phases(j.job, j.tier, self.spec)
        config = {"address": session.gcs_address, "namespace": session.namespace,
                  "actor": actor, "job": job_id, "directory": j.directory, "link": j.tier,
                  "capped": s.bandwidth_cap}
        target = "iolab.middleware.storage_client:coordinator"
        if self.io is not None:  # the ranks go through the I/O nodes of their compute nodes
            io_node_of = self.spec.platform.io_node_of
            j.io_nodes = rank_io_nodes(sorted(j.hosts), j.ranks, io_node_of)
            parts = job_parts(j.io_nodes, phases, [io_node_of(h) for h in j.hosts])
            self.io.add_job(job_id, j.index, parts, j.steps, j.index_map, j.start, j.job.nodes, j.job.user)
            target = "iolab.middleware.io_node_client:coordinator"
            config = {**config, "io_actor": self.io.name, "io_nodes": j.io_nodes}
        coordinator, config = self.launcher.coordinator(target, config)
        argv = jacobi_argv(job_id, grid=s.grid, phases=phases, compute_mode="duration", coordinator=coordinator,
                           coordinator_config=config, out_dir=out_dir, chunk_bytes=s.chunk_bytes,
                           seed=self.spec.seed, fsync=s.fsync)
        cmd = self.launcher.command(j, argv, s.nice)
        j.proc = spawn(cmd, env=rank_env(), cwd=self.work, log_path=self.log(j))
        j.launched = time.time()

    def log(self, j: JobRun) -> Path:
        return self.work / "logs" / f"{j.queued.id}.log"

    # -- outputs and processes -------------------------------------------------------------------------
    def output_files(self, j: JobRun) -> list[str]:
        try:
            m = checkpoint.read_manifest(checkpoint.manifest_path(self.work / "apps" / j.queued.id, j.queued.id))
        except ValueError:
            return []
        if m is None or not str(m["directory"]).startswith(os.path.join(j.directory, j.queued.id) + os.sep):
            return []  # no write happened (the manifest still names the input)
        return [f["path"] for f in m["files"]]

    def kill_all(self, jobs: list[JobRun]) -> None:
        for j in jobs:
            if j.proc is not None and j.proc.poll() is None:
                j.rc = self.launcher.kill(j, grace=1.0)
