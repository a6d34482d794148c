"""How big a run is before it runs: an estimate, and the limits above which it is refused.

A spec can ask for a run that would take hours with no output (an app of ten
million iterations, a time step far smaller than the workload, ten million
batch jobs).  Before anything runs, the command line estimates the size and
refuses it above a documented limit, naming the estimate and the option that
raises the limit (docs/specs.md, "Limits"):

=========================  =====================  ===========================  ==============
what                       estimate               default limit                option
=========================  =====================  ===========================  ==============
I/O experiment, event      phases of all apps     :data:`MAX_EVENTS`           ``--max-events``
I/O experiment, step       time steps (at most)   :data:`MAX_EVENTS`           ``--max-events``
batch experiment           jobs                   :data:`MAX_JOBS`             ``--max-jobs``
batch experiment           steps, samples, ...    :data:`MAX_BATCH_EVENTS`     ``--max-events``
campaign                   runs                   :data:`MAX_RUNS`             ``--max-runs``
=========================  =====================  ===========================  ==============

The defaults keep a run on this kind of machine within a few minutes
(measured: ~1e5 simulator events per second, a few hundred batch jobs per
second with I/O).
"""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import SpecError
from iolab.specs.load import MAX_JOBS, parse_text, read_text

MAX_EVENTS = 10_000_000
# events of a batch run (job steps, controller samples, retries; iolab/workloads/run_size.py): the simulator
# moves ~1e5-1e6 a second (docs/results.md: a million Feitelson jobs with hourly checkpoints, ~1e7 steps, 50-100 s)
MAX_BATCH_EVENTS = 100_000_000
MAX_RUNS = 50_000


@dataclass(frozen=True)
class Size:
    what: str        # "events", "steps", "jobs", "runs"
    estimate: float
    limit: float
    option: str

    @property
    def too_big(self) -> bool:
        return self.estimate > self.limit

    def check(self, source: str, field: str) -> None:
        """Raise :class:`SpecError` (exit 2) if the estimate is above the limit."""
        if self.too_big:
            raise SpecError(source, [(field, f"this run has an estimated {self.estimate:,.0f} {self.what}, above "
                                             f"the limit of {self.limit:,.0f}; pass {self.option} N to allow it "
                                             f"(docs/specs.md, 'Limits')")])


def io_size(spec, max_events: float | None = None) -> Size:
    """Events (event mode: one per phase) or time steps (step mode: the horizon if every app ran
    one after the other, over ``dt``) of an I/O experiment."""
    limit = MAX_EVENTS if max_events is None else max_events
    if spec.sim.mode == "step":
        b = spec.platform.bandwidth
        horizon = max(a.release for a in spec.apps) + sum(a.min_time(b) for a in spec.apps)
        return Size("time steps (at most)", horizon / spec.sim.dt, limit, "--max-events")
    phases = sum(len(a.phases) if a.phases is not None else 2 * (a.iterations or 0) for a in spec.apps)
    return Size("events", float(phases + len(spec.apps)), limit, "--max-events")


def batch_size(spec, max_jobs: float | None = None) -> Size:
    """Jobs of a batch experiment, for every workload source: inline, its jobs; feitelson, its
    ``jobs``; an SWF file, its job lines (after ``skip``, at most ``limit``), counted; a Theta job
    file, the entries of its ``jobs`` list, counted.  A file is counted only up to one job past the
    limit, so a huge trace is refused without being read to its end."""
    limit = MAX_JOBS if max_jobs is None else max_jobs
    w = spec.workload
    if w.source == "inline":
        n = len(w.jobs)
    elif w.source == "feitelson":
        n = w.jobs
    elif w.source == "swf":
        cap = limit if w.limit is None else min(limit, w.limit)
        n = swf_job_lines(w.path, w.skip + int(cap) + 1) - w.skip
        n = max(0, n if w.limit is None else min(n, w.limit))
    elif w.source == "theta":
        n = theta_job_count(w.path)
    else:  # pragma: no cover - the spec's model admits only the sources above
        raise AssertionError(f"no size estimate for workload source {w.source!r}")
    return Size("jobs", float(n), limit, "--max-jobs")


_CHUNK = 1 << 20  # bytes swf_job_lines reads at once
_MAX_OTHER = 1_000_000  # blank and comment lines past which swf_job_lines stops counting
_MAX_READ = 1 << 30  # decompressed bytes past which it stops


def swf_job_lines(path: str | Path, stop: float = float("inf")) -> int:
    """The data lines of an SWF file (``.gz`` detected by content): not blank, not a ``;`` comment;
    counting stops at ``stop`` (>= 1).  A file that cannot be read counts 0: its reader names the problem.
    Read :data:`_CHUNK` bytes at a time, their lines split at once (not one read call a line); counting stops
    too past :data:`_MAX_OTHER` blank or comment lines or :data:`_MAX_READ` bytes (the reader refuses such a
    file, naming the line: ``iolab.workloads.swf.MAX_BLANK``, ``MAX_BYTES``)."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        n = other = size = 0
        rest = b""
        with (gzip.open(p, "rb") if gz else p.open("rb")) as fh:
            while n < stop and other <= _MAX_OTHER and size <= _MAX_READ:
                chunk = fh.read(_CHUNK)
                size += len(chunk)
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop() if chunk else b""  # a line without its end yet (at the end of the file: none)
                data = sum(1 for line in lines if (text := line.strip()) and text[0] != 59)  # 59: ";"
                n += data
                other += len(lines) - data
                if not chunk:
                    break
        return int(min(n, stop))
    except (OSError, EOFError, zlib.error):
        return 0


def theta_job_count(path: str | Path) -> int:
    """The entries of a Theta job file's ``jobs`` list.  A file that does not parse counts 0: its
    reader names the problem."""
    try:
        doc = parse_text(read_text(path), str(path))
    except (SpecError, OSError):
        return 0
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    return len(jobs) if isinstance(jobs, list) else 0


__all__ = ["MAX_BATCH_EVENTS", "MAX_EVENTS", "MAX_JOBS", "MAX_RUNS", "Size", "batch_size", "io_size", "swf_job_lines", "theta_job_count"]
