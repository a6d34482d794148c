"""Batch workloads as lists of :class:`iolab.specs.batch.Job`.

- :mod:`.swf`: Standard Workload Format traces (KTH-SP2, SDSC-BLUE, ...);
- :mod:`.theta`: the Theta job list with Darshan I/O volumes;
- :mod:`.feitelson`: the Feitelson-1996 model with lackner2019's I/O model.

:func:`load_workload` turns the ``workload`` of a batch experiment spec
into its jobs.
"""

from __future__ import annotations

from typing import Any

from iolab.workloads.feitelson import feitelson_columns, feitelson_jobs, with_io
from iolab.workloads.job_columns import JobColumns, jobs_from_columns
from iolab.workloads.swf import SWFError, SWFTrace, read_swf, swf_jobs
from iolab.workloads.theta import ThetaTrace, theta_jobs, theta_trace


def load_workload(experiment: Any) -> list[Any]:
    """Jobs of an ``iolab.specs.batch.BatchExperiment`` (its workload, platform and seed)."""
    w = experiment.workload
    src = w.source
    if src == "inline":
        return list(w.jobs)
    if src == "feitelson":
        pl = experiment.platform
        return feitelson_jobs(w, seed=experiment.seed, max_nodes=pl.nodes, lps_rate=pl.lps.rate,
                              memory_per_node=pl.memory_per_node)
    if src == "swf":
        skip = w.skip
        jobs = swf_jobs(w.path, strict=w.strict, limit=None if w.limit is None else skip + w.limit,
                        max_nodes=experiment.platform.nodes, first=skip)
        if skip:
            if skip >= len(jobs):
                raise SWFError(str(w.path), 0, f"workload.skip: {skip} leaves no job (the file has {len(jobs)})")
            jobs = jobs[skip:]
        return swf_window_io(jobs, experiment)
    if src == "theta":
        return theta_jobs(w.path)
    raise ValueError(f"unknown workload source {src!r}")


def swf_window_io(jobs: list[Any], experiment: Any) -> list[Any]:
    """The jobs of an SWF workload's window (``skip`` already applied) with the I/O of its ``io``
    model, if any: drawn from ``SeedSequence(seed)``, or ``SeedSequence([seed, skip])`` for a
    window that skips jobs (two windows draw from different streams; no skip keeps the plain seed).
    The one place that does it: ``load_workload`` and studies that cut a trace they read once."""
    w = experiment.workload
    if w.io is None:
        return jobs
    pl = experiment.platform
    entropy = experiment.seed if not w.skip else [experiment.seed, w.skip]
    return with_io(jobs, w.io, seed=entropy, lps_rate=pl.lps.rate, memory_per_node=pl.memory_per_node,
                   machine_nodes=pl.nodes)


__all__ = [
    "JobColumns", "SWFError", "SWFTrace", "ThetaTrace", "feitelson_columns", "feitelson_jobs", "jobs_from_columns", "load_workload", "read_swf", "swf_jobs",
    "swf_window_io", "theta_jobs", "theta_trace", "with_io",
]
