"""Batch workloads as lists of :class:`iolab.specs.batch.Job`.

- :mod:`.swf`: Standard Workload Format traces (KTH-SP2, SDSC-BLUE, ...);
- :mod:`.theta`: the Theta job list with Darshan I/O volumes;
- :mod:`.feitelson`: the Feitelson-1996 model with lackner2019's I/O model.

:func:`load_workload` turns the ``workload`` of a batch experiment spec
into its jobs.
"""

from __future__ import annotations

from typing import Any

from iolab.specs.size import Size, batch_size
from iolab.workloads.swf import SWFError, SWFJob, SWFTrace, TooManyJobLines, read_swf, swf_jobs


# The generator's and the Theta reader's names, imported at their first use (a module ``__getattr__``): a run of
# an SWF trace (``iolab simulate``) loads neither.
def __getattr__(name: str) -> Any:
    if name in ("feitelson_columns", "feitelson_jobs", "with_io"):
        from iolab.workloads import feitelson  # lazy: the generator, for whoever asks for it

        return getattr(feitelson, name)
    if name in ("JobColumns", "jobs_from_columns"):
        from iolab.workloads import job_columns  # lazy: the generator's columns, for whoever asks for them

        return getattr(job_columns, name)
    if name in ("ThetaTrace", "theta_jobs", "theta_trace"):
        from iolab.workloads import theta  # lazy: the Theta reader, for whoever asks for it

        return getattr(theta, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_workload(experiment: Any, max_jobs: int | None = None, rows: bool = False) -> list[Any]:
    """Jobs of an ``iolab.specs.batch.BatchExperiment`` (its workload, platform and seed).

    ``rows``: the jobs of an SWF workload without an I/O model as :class:`~.swf.SWFJob` tuples (the same
    fields and values, read-only, no pydantic model per job), for a caller that only reads them (a run);
    every other workload gives its ``Job`` models either way.

    ``max_jobs`` (an SWF workload; ``iolab simulate --max-jobs``): a file with more job lines after
    ``skip`` than that, its ``limit`` not keeping it within, is refused with :class:`TooManyJobLines` (its
    ``jobs``: the estimate :func:`iolab.specs.size.batch_size` gives, ``max_jobs`` + 1) as soon as the reader
    has read that many, before any is converted: the size check and the read in one pass over the file."""
    w = experiment.workload
    src = w.source
    if src == "inline":
        return list(w.jobs)
    if src == "feitelson":
        from iolab.workloads.feitelson import feitelson_jobs  # lazy: the generator, for its workloads only

        pl = experiment.platform
        return feitelson_jobs(w, seed=experiment.seed, max_nodes=pl.nodes, lps_rate=pl.lps.rate,
                              memory_per_node=pl.memory_per_node)
    if src == "swf":
        skip = w.skip
        capped = max_jobs is not None and (w.limit is None or w.limit > max_jobs)
        try:
            jobs = swf_jobs(w.path, strict=w.strict, limit=None if w.limit is None else skip + w.limit,
                            max_nodes=experiment.platform.nodes, first=skip,
                            max_lines=skip + int(max_jobs) if capped else None, rows=rows and w.io is None)
        except TooManyJobLines as exc:
            exc.jobs = float(exc.stop + 1 - skip)
            raise
        if skip:
            if skip >= len(jobs):
                raise SWFError(str(w.path), 0, f"workload.skip: {skip} leaves no job (the file has {len(jobs)})")
            jobs = jobs[skip:]
        return swf_window_io(jobs, experiment)
    if src == "theta":
        from iolab.workloads.theta import theta_jobs  # lazy: the Theta reader, for its workloads only

        return theta_jobs(w.path)
    raise ValueError(f"unknown workload source {src!r}")


def load_jobs_within(experiment: Any, max_jobs: int, source: str) -> list[Any]:
    """The jobs of a batch experiment for a run, refused above ``max_jobs`` (:class:`~iolab.errors.SpecError`,
    exit 2, naming ``source`` and ``workload.jobs``) before the run starts.  An SWF file's jobs are counted
    by its reader as it reads them, as tuples (``rows``: the run only reads them), not read once to count
    and again to parse; a Theta file (parsed whole to be counted) is read once and its jobs counted; the
    others are sized from the spec first (:func:`iolab.specs.size.batch_size`: their count is in it)."""
    where = experiment.workload.source
    if where == "theta":  # one job per entry of its `jobs` list, or an error naming the entries
        jobs = load_workload(experiment)
        Size("jobs", float(len(jobs)), max_jobs, "--max-jobs").check(source, "workload.jobs")
        return jobs
    if where != "swf":
        batch_size(experiment, max_jobs).check(source, "workload.jobs")
        return load_workload(experiment)
    try:
        return load_workload(experiment, max_jobs=max_jobs, rows=True)
    except TooManyJobLines as exc:
        size = Size("jobs", exc.jobs, max_jobs, "--max-jobs")
        size.check(source, "workload.jobs")
        raise AssertionError(f"{exc}, yet {size} is within the limit") from None  # pragma: no cover


def swf_window_io(jobs: list[Any], experiment: Any) -> list[Any]:
    """The jobs of an SWF workload's window (``skip`` already applied) with the I/O of its ``io``
    model, if any: drawn from ``SeedSequence(seed)``, or ``SeedSequence([seed, skip])`` for a
    window that skips jobs (two windows draw from different streams; no skip keeps the plain seed).
    The one place that does it: ``load_workload`` and studies that cut a trace they read once."""
    w = experiment.workload
    if w.io is None:
        return jobs
    from iolab.workloads.feitelson import with_io  # lazy: lackner2019's I/O model, for a workload that has one

    pl = experiment.platform
    entropy = experiment.seed if not w.skip else [experiment.seed, w.skip]
    return with_io(jobs, w.io, seed=entropy, lps_rate=pl.lps.rate, memory_per_node=pl.memory_per_node,
                   machine_nodes=pl.nodes)


__all__ = [
    "JobColumns", "SWFError", "SWFJob", "SWFTrace", "ThetaTrace", "TooManyJobLines", "feitelson_columns", "feitelson_jobs", "jobs_from_columns", "load_workload", "read_swf", "swf_jobs",
    "swf_window_io", "theta_jobs", "theta_trace", "with_io",
]
