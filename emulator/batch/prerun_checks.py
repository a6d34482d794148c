"""Everything checked before a batch run starts a single process.

:func:`check_batch_runnable` checks sizes, ranks, the run's estimated wall time,
``mpiexec`` and the work directory (the settings themselves: :mod:`iolab.emulator.settings`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from iolab.invariants import InvariantViolation
from iolab.specs.batch import BatchExperiment
from iolab.workloads.run_size import check_batch_run

from iolab.emulator.batch.jobs import app_phases
from iolab.emulator.io.prerun_checks import H5_OVERHEAD, conclude

LAUNCH_ESTIMATE = 4.0  # wall seconds a job launch costs on a loaded 2-core machine (docs/storage.md)


def check_batch_runnable(spec: BatchExperiment, jobs: list, work_dir: Path, source: str = "<spec>",
                         makespan_of: Callable[[BatchExperiment, list], float] | None = None) -> str:
    """Raise ``SpecError`` (the spec) or ``RunError`` (the machine) before any process starts;
    returns the ``mpiexec`` to use.

    The run's wall time is estimated from ``makespan_of(spec, jobs)`` (the commands pass the
    simulator's makespan, :func:`iolab.sim.batch.run.simulated_makespan`: the real runtime does not
    import the simulator); without it, from a lower bound of the makespan that ignores I/O and
    waiting (:func:`makespan_lower_bound`)."""
    s = spec.emulator
    problems: list[tuple[str, str]] = []
    check_batch_run(spec, jobs[: s.max_jobs], source)  # before the jobs' phases are built or simulated
    if len(jobs) > s.max_jobs:
        problems.append(("emulator.max_jobs", f"the workload has {len(jobs)} jobs; a real run is limited to "
                                              f"{s.max_jobs} (raise max_jobs or shorten the workload)"))
    for i, j in enumerate(jobs[: s.max_jobs]):
        where = f"workload.jobs[{i}]"
        r = s.ranks_for(j.nodes)
        if spec.platform.io_nodes is not None and r < j.nodes:
            problems.append(("emulator.ranks_per_job", f"job {j.id!r} of {j.nodes} nodes would run {r} ranks: behind "
                                                       "I/O nodes every node of a job needs a rank (ranks_per_job: "
                                                       "nodes, the default there, or at least every job's nodes), "
                                                       "so that each of its I/O nodes has ranks to carry its part"))
            continue
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
        simulated = makespan_of is not None
        try:
            makespan = makespan_of(spec, jobs) if simulated else makespan_lower_bound(spec, jobs)
        except InvariantViolation as exc:  # a policy broke a rule in the sizing simulation: say where it was
            exc.note("in the simulation `iolab emulate` runs first to size the real run; no process was started")
            raise
        est = makespan * s.time_scale + LAUNCH_ESTIMATE * len(jobs)
        if est > s.max_wall:
            what = "simulated makespan" if simulated else "makespan at least"
            problems.append(("emulator.time_scale",
                             f"the run would last {'about' if simulated else 'at least'} {est:.0f} wall seconds ({what} "
                             f"{makespan:.0f} s x time_scale {s.time_scale:g} + launches); the limit is "
                             f"emulator.max_wall = {s.max_wall:g} s"))
    return conclude(problems, source, work_dir)


def makespan_lower_bound(spec: BatchExperiment, jobs: list) -> float:
    """No schedule of ``jobs`` ends sooner: the last submission plus that job's run time, and the
    node-seconds of all jobs spread over every node (I/O and waiting ignored)."""
    if not jobs:
        return 0.0
    first = min(j.submit for j in jobs)
    by_job = max(j.submit + j.runtime for j in jobs) - first
    by_nodes = sum(j.nodes * j.runtime for j in jobs) / spec.platform.nodes
    return max(by_job, by_nodes)

