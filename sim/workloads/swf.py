"""Standard Workload Format (Parallel Workloads Archive) reader, plain or gzip.

An SWF file is header comments (``; Key: value``) then one job per line with
18 whitespace-separated numeric fields; ``-1`` means *unknown* and becomes
``None`` here.  The header's ``MaxNodes`` and ``MaxProcs`` are parsed (their
ratio is the processors per node used to turn processors into nodes).

Malformed lines (not 18 fields, a non-number, a missing or non-positive job
number, a negative submit time, a job number already used by an earlier
line) are **raised** as :class:`SWFError` naming the file and the line
number (``strict=True``, the default; an :class:`iolab.errors.IolabError`, so
the command line prints it and exits 2), or **collected** in
:attr:`SWFTrace.problems` as ``(line, reason)`` and skipped
(``strict=False``); :func:`swf_jobs` then warns (:class:`iolab.errors.InputWarning`)
with the count of skipped lines and the first few.

Turning a record into a :class:`iolab.specs.batch.Job` (:meth:`SWFTrace.jobs`):

- ``nodes`` = ceil(processors / procs_per_node), processors = requested
  (field 8) if known, else allocated (field 5); a record with neither is
  unusable and is listed in :attr:`SWFTrace.unusable`, not returned;
- ``runtime`` = run time (field 4), 0 if unknown (cancelled before start);
- ``walltime`` = requested time (field 9) if known and > 0, else
  max(runtime, 1 s); runtime may exceed it (logs record such jobs);
- ``user`` = user id (field 12), ``"unknown"`` if -1; no I/O volumes.
"""

from __future__ import annotations

import gzip
import math
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from iolab.errors import DataError, InputWarning
from iolab.specs.base import MAX_TIME
from iolab.specs.batch import Job

FIELDS = (
    "job", "submit", "wait", "run_time", "alloc_procs", "avg_cpu", "used_mem", "req_procs", "req_time",
    "req_mem", "status", "user", "group", "executable", "queue", "partition", "preceding_job", "think_time",
)


class SWFError(DataError, ValueError):
    """A malformed SWF line: ``path``, ``line`` (1-based) and ``reason``."""

    def __init__(self, path: str, line: int, reason: str):
        self.path, self.line, self.reason = path, line, reason
        super().__init__(path, [(f"line {line}" if line else "(file)", reason)], "bad SWF file")

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass(frozen=True, slots=True)
class SWFRecord:
    line: int
    job: int
    submit: float
    wait: float | None
    run_time: float | None
    alloc_procs: int | None
    avg_cpu: float | None
    used_mem: float | None
    req_procs: int | None
    req_time: float | None
    req_mem: float | None
    status: int | None
    user: int | None
    group: int | None
    executable: int | None
    queue: int | None
    partition: int | None
    preceding_job: int | None
    think_time: float | None


_INT_FIELDS = {"job", "alloc_procs", "req_procs", "status", "user", "group", "executable", "queue",
               "partition", "preceding_job"}
_INT_MASK = tuple(name in _INT_FIELDS for name in FIELDS)
_MAX_NODES = next(m.le for m in Job.model_fields["nodes"].metadata if hasattr(m, "le"))  # Job.nodes' bound


@dataclass
class SWFTrace:
    path: str
    header: dict[str, str] = field(default_factory=dict)
    records: list[SWFRecord] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)
    unusable: list[tuple[int, str]] = field(default_factory=list)

    def _int(self, key: str) -> int | None:
        v = self.header.get(key)
        try:
            return int(v.split()[0]) if v else None
        except ValueError:
            return None

    @property
    def max_nodes(self) -> int | None:
        return self._int("MaxNodes")

    @property
    def max_procs(self) -> int | None:
        return self._int("MaxProcs")

    @property
    def max_records(self) -> int | None:
        return self._int("MaxRecords")

    @property
    def procs_per_node(self) -> int:
        n, p = self.max_nodes, self.max_procs
        if n and p and p % n == 0:
            return p // n
        return 1

    def jobs(self, procs_per_node: int | None = None) -> list[Job]:
        ppn = procs_per_node or self.procs_per_node
        out: list[Job] = []
        self.unusable = []
        for r in self.records:
            procs = r.req_procs if r.req_procs else r.alloc_procs
            if not procs or procs <= 0:
                self.unusable.append((r.line, f"job {r.job}: no processor count (fields 5 and 8 unknown)"))
                continue
            runtime = r.run_time if r.run_time is not None and r.run_time >= 0 else 0.0
            walltime = r.req_time if r.req_time is not None and r.req_time > 0 else max(runtime, 1.0)
            fields = dict(id=str(r.job), user="unknown" if r.user is None else str(r.user),
                          submit=float(r.submit), nodes=int(math.ceil(procs / ppn)),
                          walltime=float(walltime), runtime=float(runtime))
            # _parse_line has checked every value Job would (finite, within MAX_TIME, submit >= 0,
            # positive job number); only the node bound is left.  Validating 243 k jobs again
            # through pydantic was a third of SDSC-BLUE's load time (docs/performance.md).
            if fields["nodes"] <= _MAX_NODES:
                out.append(Job.model_construct(**fields))
            else:
                out.append(Job.model_validate(fields))  # raises, naming the field
        return out


def _open_text(path: Path) -> Iterator[str]:
    with path.open("rb") as fh:
        magic = fh.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:  # type: ignore[operator]
        yield from fh


def _parse_line(text: str, lineno: int) -> SWFRecord | str:
    """One data line as a record, or the reason it is not one.  A well-formed line takes
    the fast path (all fields converted in one ``map``); anything unusual goes through
    :func:`_check_fields`, which names the first bad field."""
    parts = text.split()
    if len(parts) != len(FIELDS):
        return f"expected {len(FIELDS)} fields, found {len(parts)}"
    try:
        vals = list(map(float, parts))
    except ValueError:
        return _check_fields(parts, lineno)
    for v, is_int in zip(vals, _INT_MASK):  # finite, within MAX_TIME, integral where it must be
        if not -MAX_TIME <= v <= MAX_TIME or (is_int and v != -1 and v != int(v)):
            return _check_fields(parts, lineno)
    if vals[0] <= 0 or vals[1] < 0:  # job number, submit time (-1, unknown, is refused too)
        return _check_fields(parts, lineno)
    return SWFRecord(lineno, *[None if v == -1 else (int(v) if is_int else v) for v, is_int in zip(vals, _INT_MASK)])


def _check_fields(parts: list[str], lineno: int) -> SWFRecord | str:
    values: dict[str, float | int | None] = {}
    for name, tok in zip(FIELDS, parts):
        try:
            v = float(tok)
        except ValueError:
            return f"field {FIELDS.index(name) + 1} ({name}) is not a number: {tok!r}"
        if not math.isfinite(v):
            return f"field {FIELDS.index(name) + 1} ({name}) is not finite: {tok!r}"
        if abs(v) > MAX_TIME:  # a run's times would overflow (docs/specs.md, 'Limits')
            return f"field {FIELDS.index(name) + 1} ({name}) is above {MAX_TIME:g}: {tok!r}"
        if v == -1:
            values[name] = None
        elif name in _INT_FIELDS:
            if v != int(v):
                return f"field {FIELDS.index(name) + 1} ({name}) must be an integer: {tok!r}"
            values[name] = int(v)
        else:
            values[name] = v
    if values["job"] is None or values["job"] <= 0:  # type: ignore[operator]
        return "job number (field 1) must be a positive integer"
    if values["submit"] is None or values["submit"] < 0:  # type: ignore[operator]
        return "submit time (field 2) must be >= 0"
    return SWFRecord(line=lineno, **values)  # type: ignore[arg-type]


def read_swf(path: str | Path, *, strict: bool = True, limit: int | None = None) -> SWFTrace:
    """Read an SWF file (``.gz`` detected by content).  See the module doc for errors."""
    p = Path(path)
    if not p.is_file():
        raise SWFError(str(p), 0, "no such SWF file")
    trace = SWFTrace(path=str(p))
    seen: dict[int, int] = {}
    try:
        lines = list(enumerate(_open_text(p), start=1))
    except (OSError, EOFError, zlib.error) as exc:  # a truncated or corrupt .gz, an unreadable file
        raise SWFError(str(p), 0, f"cannot read: {exc}") from None
    for lineno, raw in lines:
        text = raw.strip()
        if not text:
            continue
        if text.startswith(";"):
            body = text[1:].strip()
            if ":" in body:
                key, _, value = body.partition(":")
                key = key.strip()
                if key and " " not in key:
                    trace.header.setdefault(key, value.strip())
            continue
        rec = _parse_line(text, lineno)
        if not isinstance(rec, str):
            if rec.job in seen:
                rec = f"job number {rec.job} already used on line {seen[rec.job]}"
            else:
                seen[rec.job] = lineno
        if isinstance(rec, str):
            if strict:
                raise SWFError(str(p), lineno, rec)
            trace.problems.append((lineno, rec))
            continue
        trace.records.append(rec)
        if limit is not None and len(trace.records) >= limit:
            break
    return trace


def swf_jobs(path: str | Path, *, strict: bool = True, limit: int | None = None,
             procs_per_node: int | None = None) -> list[Job]:
    """Jobs of an SWF file, in file order.  Skipped lines and unusable records are counted in an
    :class:`iolab.errors.InputWarning`."""
    trace = read_swf(path, strict=strict, limit=limit)
    jobs = trace.jobs(procs_per_node)
    dropped = trace.problems + trace.unusable
    if dropped:
        first = "; ".join(f"line {n}: {r}" for n, r in sorted(dropped)[:3])
        warnings.warn(f"{trace.path}: skipped {len(dropped)} line(s) ({len(trace.problems)} malformed, "
                      f"{len(trace.unusable)} without a processor count), first: {first}",
                      InputWarning, stacklevel=2)
    return jobs
