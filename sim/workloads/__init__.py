"""Batch workloads as lists of :class:`iolab.specs.batch.Job`.

- :mod:`.swf`: Standard Workload Format traces (KTH-SP2, SDSC-BLUE, ...);
- :mod:`.theta`: the Theta job list with Darshan I/O volumes;
- :mod:`.feitelson`: the Feitelson-1996 model with lackner2019's I/O model.

:func:`load_workload` turns the ``workload`` of a batch experiment spec
into its jobs.
"""

from __future__ import annotations

from typing import Any

from .feitelson import feitelson_jobs, with_io
from .swf import SWFError, SWFTrace, read_swf, swf_jobs
from .theta import ThetaTrace, theta_jobs, theta_trace


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
        jobs = swf_jobs(w.path, strict=w.strict, limit=w.limit)
        if w.io is None:
            return jobs
        pl = experiment.platform
        return with_io(jobs, w.io, seed=experiment.seed, lps_rate=pl.lps.rate, memory_per_node=pl.memory_per_node)
    if src == "theta":
        return theta_jobs(w.path)
    raise ValueError(f"unknown workload source {src!r}")


__all__ = [
    "SWFError", "SWFTrace", "ThetaTrace", "feitelson_jobs", "load_workload", "read_swf", "swf_jobs",
    "theta_jobs", "theta_trace", "with_io",
]
