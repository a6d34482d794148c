"""Everything checked before a batch run starts a single process.

:func:`check_batch_runnable` checks sizes, ranks, the run's estimated wall time,
``mpiexec`` and the work directory (the settings themselves: :mod:`iolab.emulator.settings`).
"""

from __future__ import annotations

from pathlib import Path

from iolab.specs.batch import BatchExperiment
from iolab.sim.batch.run import run_batch

from .batch_jobs import app_phases
from .checks import H5_OVERHEAD, conclude

LAUNCH_ESTIMATE = 4.0  # wall seconds a job launch costs on a loaded 2-core machine (docs/storage.md)


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
        rec = run_batch(spec, jobs, rows=False)
        makespan = max(st.end for st in rec.jobs) - min(st.queued.submit for st in rec.jobs)
        est = makespan * s.time_scale + LAUNCH_ESTIMATE * len(jobs)
        if est > s.max_wall:
            problems.append(("emulator.time_scale",
                             f"the run would last about {est:.0f} wall seconds (simulated makespan "
                             f"{makespan:.0f} s x time_scale {s.time_scale:g} + launches); the limit is "
                             f"emulator.max_wall = {s.max_wall:g} s"))
    return conclude(problems, source, work_dir)

