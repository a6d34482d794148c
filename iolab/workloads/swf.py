"""Standard Workload Format (Parallel Workloads Archive) reader, plain or gzip.

An SWF file is header comments (``; Key: value``) then one job per line with
18 whitespace-separated numeric fields; ``-1`` means *unknown* and becomes
``None`` here.  The header's ``MaxNodes`` and ``MaxProcs`` are parsed (their
ratio is the processors per node used to turn processors into nodes).

Malformed lines (not 18 fields, a non-number, a missing or non-positive job
number, a negative submit time, a negative run time or requested time other
than -1, a job number already used by an earlier line, a header
count such as ``MaxNodes`` that is not a positive integer) are **raised** as :class:`SWFError` naming the file and the line
number (``strict=True``, the default; an :class:`iolab.errors.IolabError`, so
the command line prints it and exits 2), or **collected** in
:attr:`SWFTrace.problems` as ``(line, reason)`` and skipped
(``strict=False``); :func:`swf_jobs` then warns (:class:`iolab.errors.InputWarning`)
with the count of skipped lines and the first few.  The lines are converted and
checked as columns (numpy), a block at a time; a line that fails is parsed again on
its own for the reason (docs/performance.md, "Columnar SWF loading").  With ``strict=True`` the
read stops at the first such line: the lines after it are not converted.

A file whose reading would not end well is refused whatever ``strict`` says, at the line where
that shows: more than :data:`MAX_BLANK` blank or comment lines (a few hundred kB of gzip that
expand to gigabytes of empty lines), more than :data:`MAX_BYTES` of text once decompressed.  A file
that gives no job (empty, comments only, or every line malformed or unusable under ``strict=False``)
is refused by :func:`swf_jobs`.

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
from itertools import repeat
from typing import Iterator, NamedTuple

from iolab import collector
from iolab.errors import DataError, InputWarning
import numpy as np

from iolab.specs.base import MAX_TIME, not_a_file
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


class TooManyJobLines(Exception):
    """The file has more than ``stop`` data lines: raised by a reader asked to stop there (``max_lines``),
    as soon as it has read one line more; ``jobs``: the estimate of :func:`iolab.specs.size.batch_size`
    (set by :func:`iolab.workloads.load_workload`, which knows the window)."""

    def __init__(self, path: str, stop: int):
        self.path, self.stop, self.jobs = path, stop, float(stop + 1)
        super().__init__(f"{path}: more than {stop} data lines")


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


_NCOL = len(FIELDS)
_COL = {name: i for i, name in enumerate(FIELDS)}
_INT_COLS = np.array(_INT_MASK)
# fields that are -1 (unknown) or >= 0: a negative run time or requested time is not a value (a job with a
# negative processor count is a record without one: unusable, counted)
_NONNEG = ("run_time", "req_time")
_NONNEG_COLS = [FIELDS.index(name) for name in _NONNEG]


@dataclass
class SWFTrace:
    """A read SWF file.  Its records are columns: ``table`` (one row per accepted record, the 18
    fields as floats, -1 where unknown) and ``lines`` (each row's line number); :attr:`records`
    gives them as :class:`SWFRecord` objects, built on first use."""

    path: str
    header: dict[str, str] = field(default_factory=dict)
    table: np.ndarray = field(default_factory=lambda: np.empty((0, _NCOL)))
    lines: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    problems: list[tuple[int, str]] = field(default_factory=list)
    unusable: list[tuple[int, str]] = field(default_factory=list)
    _records: list[SWFRecord] | None = field(default=None, repr=False)

    @property
    def records(self) -> list[SWFRecord]:
        if self._records is None:
            self._records = [SWFRecord(int(n), *[None if v == -1 else (int(v) if i else float(v))
                                                 for v, i in zip(row, _INT_MASK)])
                             for n, row in zip(self.lines.tolist(), self.table.tolist())]
        return self._records

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

    def jobs(self, procs_per_node: int | None = None, max_nodes: int | None = None,
             strict: bool = True, first: int = 0) -> list[Job]:
        """The records as jobs.  A job needing more than ``max_nodes`` (the platform's nodes; at most
        Job's own bound) is an error naming its line, or with ``strict=False`` unusable (skipped); the
        jobs before the ``first`` usable one (a window's ``skip``) are not checked against ``max_nodes``."""
        ids, names, submits, nodes, walltimes, runtimes = self._job_columns(procs_per_node, max_nodes, strict, first)
        # _trusted_job's body, inlined (a call per job would be a third of this loop), storing the six values
        # in the template's copy one by one and setting the slots through their descriptors (docs/performance.md)
        new, copy, fields_set = Job.__new__, _JOB_DICT.copy, _SWF_FIELDS_SET
        set_dict, set_fields, set_extra, set_private = _SLOT_SETTERS
        out: list[Job] = []
        add = out.append
        for j, u, sub, n, w, r in zip(ids, names, submits, nodes, walltimes, runtimes):
            job = new(Job)
            d = copy()
            d["id"] = j
            d["user"] = u
            d["submit"] = sub
            d["nodes"] = n  # within bound: checked above
            d["walltime"] = w
            d["runtime"] = r
            set_dict(job, d)
            set_fields(job, fields_set)
            set_extra(job, None)
            set_private(job, None)
            add(job)
        return out

    def job_rows(self, procs_per_node: int | None = None, max_nodes: int | None = None,
                 strict: bool = True, first: int = 0) -> list[SWFJob]:
        """The records as :class:`SWFJob` tuples, for a run that only reads its jobs: the jobs of
        :meth:`jobs` (the same values, usable records, errors and skipped lines), without a model per job."""
        ids, names, submits, nodes, walltimes, runtimes = self._job_columns(procs_per_node, max_nodes, strict, first)
        zeros = repeat(0.0)  # (zip draws from it four times a row)
        rows = zip(ids, submits, nodes, walltimes, zeros, zeros, zeros, zeros, names, runtimes, repeat(None))
        return list(map(_new_tuple, repeat(SWFJob), rows))  # no call of SWFJob's own __new__ per row

    def _job_columns(self, procs_per_node: int | None, max_nodes: int | None, strict: bool,
                     first: int) -> tuple[list, list, list, list, list, list]:
        """The usable records' ids, users, submit times, nodes, walltimes and runtimes (lists of Python
        values); the unusable ones listed in :attr:`unusable` (or, too big with ``strict``, an error)."""
        ppn = procs_per_node or self.procs_per_node
        t = self.table
        req, alloc = t[:, _COL["req_procs"]], t[:, _COL["alloc_procs"]]
        # requested processors if known and not 0, else allocated (unknown: 0)
        procs = np.where((req != -1) & (req != 0), req, np.where(alloc == -1, 0.0, alloc))
        usable = procs > 0
        self.unusable = [(n, f"job {j}: no processor count (fields 5 and 8 unknown)")
                         for n, j in zip(self.lines[~usable].tolist(), t[~usable, 0].astype(np.int64).tolist())]
        rt = t[:, _COL["run_time"]]
        runtime = np.where(rt >= 0, rt, 0.0)
        rq = t[:, _COL["req_time"]]
        walltime = np.where(rq > 0, rq, np.maximum(runtime, 1.0))
        nodes = np.ceil(procs / ppn)
        bound = _MAX_NODES if max_nodes is None else min(max_nodes, _MAX_NODES)
        big = usable & (nodes > bound)
        if first and max_nodes is not None:
            big &= (np.cumsum(usable) > first) | (nodes > _MAX_NODES)
        if big.any():
            what = f"platform.nodes is {max_nodes}" if max_nodes is not None and max_nodes <= _MAX_NODES else \
                f"the limit is {_MAX_NODES}"
            rows = [(n, f"job {j} needs {int(k)} nodes; {what}")
                    for n, j, k in zip(self.lines[big].tolist(), t[big, 0].astype(np.int64).tolist(), nodes[big].tolist())]
            if strict:
                n, reason = rows[0]
                raise SWFError(self.path, n, reason + (f" ({len(rows)} such jobs; a smaller window (workload.limit, "
                                                       "skip), more nodes, or strict: false to skip them)"))
            self.unusable += rows
            usable &= ~big
        user = t[:, _COL["user"]]
        # read_swf has checked every value Job would (finite, within MAX_TIME, submit >= 0, positive
        # job number); only the node bound is left.  Validating 243 k jobs again through pydantic
        # (or even model_construct) would be a third of SDSC-BLUE's load time (docs/performance.md).
        ids = [str(j) for j in t[usable, 0].astype(np.int64).tolist()]
        users: dict[float, str] = {}  # one string per user id, shared by the user's jobs
        for u in set(user[usable].tolist()):
            users[u] = "unknown" if u == -1 else str(int(u))
        names = [users[u] for u in user[usable].tolist()]
        return (ids, names, t[usable, 1].tolist(), nodes[usable].astype(np.int64).tolist(),
                walltime[usable].tolist(), runtime[usable].tolist())


class SWFJob(NamedTuple):
    """A job of an SWF trace as a run reads it: the fields of :class:`~iolab.specs.batch.Job` (the same
    names and values as :meth:`SWFTrace.jobs` gives it), read-only, in a tuple instead of a pydantic
    model and its dict (~150 B a job instead of ~370 B, and no model made per record).  An SWF record
    moves no byte and states no estimate: the volumes are 0 and ``stated`` is the job itself.

    Its first nine fields are those of the policies'
    :class:`~iolab.middleware.policies.batch.snapshot.QueuedJob`, in their order (``queued_prefix``): the
    kernel makes each job's queued view by cutting the tuple (:func:`~iolab.middleware.policies.batch.snapshot.cut_queued`)."""

    id: str
    submit: float
    nodes: int
    walltime: float
    storage: float = 0.0
    input: float = 0.0
    output: float = 0.0
    data: float = 0.0
    user: str = "0"
    runtime: float = 0.0
    estimate: None = None

    queued_prefix = True  # (a class attribute, not a field)

    @property
    def stated(self) -> "SWFJob":
        """The I/O the scheduler is told: the job's own (no estimate)."""
        return self


_new_tuple = tuple.__new__


_JOB_DEFAULTS = {name: (f.get_default(call_default_factory=True) if not f.is_required() else None)
                 for name, f in Job.model_fields.items()}
assert all(v is None or isinstance(v, (str, int, float)) for v in _JOB_DEFAULTS.values())  # shared safely


_SWF_FIELDS_SET = {"id", "user", "submit", "nodes", "walltime", "runtime"}  # what an SWF job sets


def _shared_key_dict() -> dict:
    """A ``Job``'s defaults as an instance dict that shares its keys with every copy of it.

    CPython keeps the attributes of a class's instances in *split* dicts, one table of keys for all
    of them, when they are set one by one; ``copy()`` of such a dict is split too.  A ``Job``'s dict
    built as a plain dict (what pydantic does) has a table of its own: 464 B against 296 B.  Nothing
    else differs (same keys in the same order, same values; equality, pickling and ``model_copy`` as
    before), and where an interpreter does not split it, it is simply the plain dict."""
    probe = Job.__new__(Job)
    for name, value in _JOB_DEFAULTS.items():
        object.__setattr__(probe, name, value)
    return probe.__dict__


_JOB_DICT = _shared_key_dict()


def _slot_setter(name: str):
    """``setter(job, value)``: what ``object.__setattr__(job, name, value)`` does for a slot of pydantic's
    ``BaseModel`` (``__dict__``, ``__pydantic_fields_set__``...), through the slot's descriptor, without
    the attribute lookup of each call; ``object.__setattr__`` itself where the slot has no descriptor."""
    descriptor = next((k.__dict__[name] for k in Job.__mro__ if name in k.__dict__), None)
    if descriptor is not None and hasattr(descriptor, "__set__"):
        return descriptor.__set__
    return lambda obj, value: object.__setattr__(obj, name, value)


_SLOT_SETTERS = tuple(_slot_setter(name) for name in
                      ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"))


def _trusted_job(fields: dict) -> Job:
    """A :class:`Job` of values already checked, built as ``Job.model_construct(**fields)`` builds it
    (the same ``__dict__``, field order and ``model_fields_set``), without its per-field default lookups.

    The jobs of an SWF trace share one ``model_fields_set`` (472 B each otherwise, 115 MB on SDSC-BLUE):
    a ``Job`` is frozen, so nothing changes it in place, and ``model_copy`` copies it before adding to it.
    Their dicts share one table of keys (:func:`_shared_key_dict`: 168 B less a job)."""
    job = Job.__new__(Job)
    d = _JOB_DICT.copy()
    d.update(fields)
    object.__setattr__(job, "__dict__", d)
    object.__setattr__(job, "__pydantic_fields_set__",
                       _SWF_FIELDS_SET if fields.keys() == _SWF_FIELDS_SET else set(fields))
    object.__setattr__(job, "__pydantic_extra__", None)
    object.__setattr__(job, "__pydantic_private__", None)
    return job


MAX_LINE = 4096  # characters of one SWF line (18 numbers take under 200)
MAX_BYTES = 1 << 30  # characters of a whole file, decompressed (the archive's largest traces are a few 100 MB)
MAX_BLANK = 1_000_000  # blank and comment lines of a file (a header is tens of lines)
_HEADER_COUNTS = ("MaxNodes", "MaxProcs", "MaxJobs", "MaxRecords")  # header values that must be integers >= 1


def _short(tok: str, n: int = 40) -> str:
    """A field as it goes into a message: its repr, cut to ``n`` characters."""
    return repr(tok) if len(tok) <= n else f"{tok[:n]!r}... ({len(tok)} characters)"


def _open_text(path: Path) -> Iterator[str]:
    """The file's lines (``.gz`` detected by content), each bounded while it is read: a line longer
    than :data:`MAX_LINE` is an error naming it, not a 10 MB string."""
    with path.open("rb") as fh:
        magic = fh.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:  # type: ignore[operator]
        lineno = size = 0
        while True:
            line = fh.readline(MAX_LINE + 1)
            if not line:
                return
            lineno += 1
            size += len(line)
            if size > MAX_BYTES:
                raise SWFError(str(path), lineno, f"the file holds more than {MAX_BYTES:,} characters (decompressed):"
                                                  " not an SWF trace iolab reads")
            if len(line) > MAX_LINE and not line.endswith("\n"):
                raise SWFError(str(path), lineno, f"line longer than {MAX_LINE} characters (an SWF line is 18 "
                                                  "numbers)")
            yield line


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
    if any(vals[i] < 0 and vals[i] != -1 for i in _NONNEG_COLS):
        return _check_fields(parts, lineno)
    return SWFRecord(lineno, *[None if v == -1 else (int(v) if is_int else v) for v, is_int in zip(vals, _INT_MASK)])


def _check_fields(parts: list[str], lineno: int) -> SWFRecord | str:
    values: dict[str, float | int | None] = {}
    for name, tok in zip(FIELDS, parts):
        try:
            v = float(tok)
        except ValueError:
            return f"field {FIELDS.index(name) + 1} ({name}) is not a number: {_short(tok)}"
        if not math.isfinite(v):
            return f"field {FIELDS.index(name) + 1} ({name}) is not finite: {_short(tok)}"
        if abs(v) > MAX_TIME:  # a run's times would overflow (docs/specs.md, 'Limits')
            return f"field {FIELDS.index(name) + 1} ({name}) is above {MAX_TIME:g}: {_short(tok)}"
        if v == -1:
            values[name] = None
        elif v < 0 and name in _NONNEG:
            return f"field {FIELDS.index(name) + 1} ({name}) is negative: {_short(tok)} (-1 means unknown)"
        elif name in _INT_FIELDS:
            if v != int(v):
                return f"field {FIELDS.index(name) + 1} ({name}) must be an integer: {_short(tok)}"
            values[name] = int(v)
        else:
            values[name] = v
    if values["job"] is None or values["job"] <= 0:  # type: ignore[operator]
        return "job number (field 1) must be a positive integer"
    if values["submit"] is None or values["submit"] < 0:  # type: ignore[operator]
        return "submit time (field 2) must be >= 0"
    return SWFRecord(line=lineno, **values)  # type: ignore[arg-type]


_BLOCK = 1 << 13  # lines converted at once: their split text is the load's peak memory (docs/performance.md)


def _block(parts: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
    """A block of split data lines as a float array (NaN where a line is not 18 numbers) and which of
    them pass the checks of :func:`_parse_line` (finite, within MAX_TIME, integral where the field is
    an integer or -1, job number > 0, submit >= 0)."""
    n = len(parts)
    table = np.full((n, _NCOL), np.nan)
    shaped = np.fromiter((len(x) == _NCOL for x in parts), dtype=bool, count=n)
    rows = [x for x, good in zip(parts, shaped) if good]
    if rows:
        try:
            table[shaped] = np.array(rows, dtype=np.float64)
        except ValueError:  # a token that is not a number: convert line by line (the bad ones stay NaN)
            for i in np.flatnonzero(shaped).tolist():
                try:
                    table[i] = [float(v) for v in parts[i]]
                except ValueError:
                    pass
    return table, _checked(table, shaped)


def _checked(table: np.ndarray, shaped: np.ndarray) -> np.ndarray:
    """Which rows of ``table`` (``shaped``: the lines that were 18 fields) pass the checks of
    :func:`_parse_line`: finite, within MAX_TIME, integral where the field is an integer or -1,
    job number > 0, submit >= 0."""
    with np.errstate(invalid="ignore"):
        ok = shaped & (np.abs(table) <= MAX_TIME).all(axis=1)
        ints = table[:, _INT_COLS]
        ok &= ((ints == -1) | (ints == np.trunc(ints))).all(axis=1)
        ok &= (table[:, 0] > 0) & (table[:, 1] >= 0)
        nonneg = table[:, _NONNEG_COLS]
        ok &= ((nonneg >= 0) | (nonneg == -1)).all(axis=1)
    return ok


_FAST_BYTES = 1 << 28  # decompressed bytes the fast path holds at once (256 MiB: ~2.5 M jobs); a bigger file streams
_LOOKALIKE_SPACE = (b"\x1c", b"\x1d", b"\x1e", b"\x1f")  # whitespace to str.split/strip, not to bytes.split/strip


_READ = 1 << 22  # decompressed bytes _plain_lines reads at once while it counts the data lines


def _plain_lines(path: Path, stop: int | None = None) -> list[bytes] | None:
    """The file's lines as bytes, when splitting its bytes gives exactly the lines, blanks, comments and
    tokens that :func:`_open_text` and ``str.strip``/``str.split`` give: ASCII (UTF-8 decoding is the
    identity), no ``\r`` but in ``\r\n`` (universal newlines), none of the four characters that only
    ``str`` takes for whitespace, no line longer than :data:`MAX_LINE`, readable to its end and at most
    :data:`_FAST_BYTES`.  Otherwise None: the file is read as text, line by line, with that reader's
    errors (a long line, a truncated .gz), which it raises where it meets them.  ``stop``: raise
    :class:`TooManyJobLines` as soon as more than ``stop`` data lines are read (:func:`_read_counted`)."""
    try:
        with path.open("rb") as fh:
            magic = fh.read(2)
        if magic != b"\x1f\x8b" and path.stat().st_size > _FAST_BYTES:
            return None
        with (gzip.open(path, "rb") if magic == b"\x1f\x8b" else path.open("rb")) as fh:
            content = _read_counted(fh, math.inf if stop is None else stop, str(path))
    except (OSError, EOFError, zlib.error, _TooBlank):  # the text reader says why, at its line
        return None
    if len(content) > _FAST_BYTES or not content.isascii() or any(c in content for c in _LOOKALIKE_SPACE):
        return None
    if b"\r" in content:
        if content.count(b"\r") != content.count(b"\r\n"):
            return None
        content = content.replace(b"\r\n", b"\n")
    lines = content.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()  # the end of the last line, not a line
    if lines and max(map(len, lines)) > MAX_LINE:
        return None
    return lines


def _past_blank(stripped: list[bytes]) -> int:
    """The line (1-based) at which the blank and comment lines of ``stripped`` pass :data:`MAX_BLANK`."""
    blank = 0
    for i, t in enumerate(stripped):
        if not t or t[0] == 59:
            blank += 1
            if blank > MAX_BLANK:
                return i + 1
    return len(stripped)


_MIN_JOB_LINE = 2 * len(FIELDS)  # bytes of the shortest job line: 18 one-digit fields, 17 spaces, a newline


class _TooBlank(Exception):
    """More than :data:`MAX_BLANK` blank or comment lines read: the text reader names the line."""


def _read_counted(fh, stop: float, path: str) -> bytes:
    """At most :data:`_FAST_BYTES` + 1 bytes of ``fh``, :data:`_READ` at a time; :class:`TooManyJobLines`
    as soon as they hold more than ``stop`` data lines (not blank, not a ``;`` comment, as
    :func:`iolab.specs.size.swf_job_lines` counts them), without reading the rest; :class:`_TooBlank` as
    soon as more than :data:`MAX_BLANK` of the lines read must be shorter than a job line (18 fields take at
    least :data:`_MIN_JOB_LINE` bytes with their newline; so many short lines are blank, comments or
    malformed: the text reader judges them).  The lines are counted only once the newlines read could
    exceed ``stop``: a file well within it is read as with one call."""
    chunks: list[bytes] = []
    size = newlines = data = 0
    uncounted: list[bytes] = []  # chunks read since the last count
    rest = b""  # the start of a line whose end is not read yet (counted with it)
    while size <= _FAST_BYTES:
        chunk = fh.read(_READ)
        if chunk:
            chunks.append(chunk)
            uncounted.append(chunk)
            size += len(chunk)
            newlines += chunk.count(b"\n")
        if newlines - size / _MIN_JOB_LINE > MAX_BLANK:
            raise _TooBlank
        if newlines >= stop:  # the lines read (at most newlines + 1) may be more than stop: count them
            lines = (rest + b"".join(uncounted)).split(b"\n")
            uncounted.clear()
            rest = lines.pop() if chunk else b""  # at the end of the file the last piece is a line
            data += sum(1 for line in lines if (text := line.strip()) and text[0] != 59)  # 59: ";"
            if data > stop:
                raise TooManyJobLines(path, int(stop))
        if not chunk:
            break
    return b"".join(chunks)


def _numbers(lines: list[bytes]) -> np.ndarray | None:
    """Stripped data lines (bytes) as an n x 18 float array, converted by numpy's text parser in one
    call, or None if a line is not 18 numbers it reads (then :func:`_block` judges them one by one).
    The parser takes a subset of Python's ``float`` syntax (not ``1_0``) and gives the same value as
    ``float`` for every token it takes (tests/workloads/test_swf_columns.py).

    Lines of integers only (most traces) are read by numpy's integer parser, several times faster than its
    float parser, then converted: the same floats (both round to the nearest), but for ``-0``, which
    ``float`` reads as ``-0.0``, so that lines holding ``-0`` go to the float parser."""
    if not lines:
        return None
    table = None
    if b"-0" not in b" ".join(lines):  # (joined: one search, faster than one per line)
        try:
            table = np.loadtxt(lines, dtype=np.int64, comments=None, ndmin=2, encoding="ascii").astype(np.float64)
        except ValueError:  # a token that is not an int64 (a float, a malformed line): the float parser judges
            pass
    if table is None:
        try:
            table = np.loadtxt(lines, dtype=np.float64, comments=None, ndmin=2, encoding="ascii")
        except ValueError:
            return None
    return table if table.shape == (len(lines), _NCOL) else None


def _any_in(sorted_values: np.ndarray, values: np.ndarray) -> bool:
    """Whether any of ``values`` is one of ``sorted_values`` (ascending)."""
    if not len(sorted_values) or not len(values):
        return False
    at = np.minimum(np.searchsorted(sorted_values, values), len(sorted_values) - 1)
    return bool((sorted_values[at] == values).any())


def read_swf(path: str | Path, *, strict: bool = True, limit: int | None = None,
             max_lines: int | None = None) -> SWFTrace:
    """Read an SWF file (``.gz`` detected by content).  See the module doc for errors.

    Columnar: the data lines are converted to one float array at once and checked as columns;
    only a line that fails a check is parsed again on its own (:func:`_parse_line`), for the reason
    that names its first bad field.  The result is that of reading line by line: the same records,
    the same problems, the same first error, and nothing past ``limit`` accepted records is judged.
    A plain ASCII file (every trace of the Parallel Workloads Archive) is decompressed at once and its
    lines converted by numpy's parser (:func:`_plain_lines`, :func:`_numbers`); any other is read as
    text line by line.  Both give the same trace.  ``max_lines``: a file with more data lines is refused
    (:class:`TooManyJobLines`) before any is converted, without being read to its end."""
    p = Path(path)
    why = not_a_file(p, "SWF file")
    if why:
        raise SWFError(str(p), 0, why)
    trace = SWFTrace(path=str(p))
    numbers: list[int] = []  # every data line's number
    blocks: list[np.ndarray] = []  # their fields, a block of lines at a time (bounded memory)
    oks: list[np.ndarray] = []  # which lines pass every check but the duplicate one
    texts: dict[int, str] = {}  # the lines that do not: their text, to say why
    pending: list = []  # the data lines not yet converted: stripped text (str), or bytes from _plain_lines
    seen: dict[float, int] = {}  # strict: each accepted job number's line (a duplicate stops the read at once)
    accepted = [0]  # strict: lines accepted so far (nothing past ``limit`` of them is judged)
    # strict, while every block was clean (no bad line, no duplicate, within ``limit``): the job numbers
    # accepted, sorted, and the blocks not yet in ``seen`` (job column, first line's index); ``seen`` is
    # filled from them only when a line has to be judged on its own (first_error): a dict entry per job
    # otherwise cost as much as the columns' checks
    known = [np.empty(0)]
    unseen: list[tuple[np.ndarray, int]] = []

    def first_error(table: np.ndarray, ok: np.ndarray, base: int) -> None:
        """strict: raise the block's first bad line (malformed, or a job number used before), if it comes
        before the ``limit``-th accepted line; the block's good job numbers join ``seen``."""
        for col, at in unseen:
            seen.update(zip(col.tolist(), numbers[at:at + len(col)]))
        unseen.clear()
        known[0] = None  # from now on ``seen`` holds every accepted job number
        for i in range(len(ok)):
            if limit is not None and accepted[0] >= limit:
                return
            if ok[i]:
                job = table[i, 0]
                if job not in seen:
                    seen[job] = numbers[base + i]
                    accepted[0] += 1
                    continue
                raise SWFError(str(p), numbers[base + i], f"job number {int(job)} already used on line {seen[job]}")
            reason = _parse_line(texts[base + i], numbers[base + i])
            raise SWFError(str(p), numbers[base + i], reason if isinstance(reason, str) else "refused")

    def convert() -> None:
        base = len(numbers) - len(pending)
        table = _numbers(pending) if pending and isinstance(pending[0], bytes) else None
        if table is not None:  # every line 18 numbers: the checks of _block, on the columns
            ok = _checked(table, np.ones(len(pending), dtype=bool))
            for i in np.flatnonzero(~ok).tolist():
                texts[base + i] = pending[i].decode("ascii")
        else:
            parts = [(t.decode("ascii") if isinstance(t, bytes) else t).split() for t in pending]
            table, ok = _block(parts)
            for i in np.flatnonzero(~ok).tolist():
                texts[base + i] = " ".join(parts[i])
        if strict and len(ok):
            bad = ~ok
            if not bad.any() and known[0] is not None:  # the common case: only the duplicates to look for, by columns
                col = table[:, 0]
                distinct = np.sort(col)  # np.unique(col) if no two are equal (np.unique would load numpy.ma)
                fresh = not (distinct[1:] == distinct[:-1]).any() and not _any_in(known[0], distinct)
                if fresh and (limit is None or accepted[0] + len(col) <= limit):
                    merged = np.concatenate([known[0], distinct])
                    merged.sort(kind="stable")  # two sorted runs: merged in one pass
                    known[0] = merged
                    unseen.append((col, base))
                    accepted[0] += len(col)
                else:
                    first_error(table, ok, base)
            elif not bad.any():  # after a line judged on its own: ``seen`` holds every accepted job number
                jobs = table[:, 0].tolist()
                fresh = seen.keys().isdisjoint(jobs) and len(set(jobs)) == len(jobs)
                if fresh and (limit is None or accepted[0] + len(jobs) <= limit):
                    seen.update(zip(jobs, numbers[base:base + len(jobs)]))
                    accepted[0] += len(jobs)
                else:
                    first_error(table, ok, base)
            else:
                first_error(table, ok, base)
        blocks.append(table)
        oks.append(ok)
        pending.clear()

    def enough() -> bool:  # ``limit`` records accepted already: the distinct job numbers of the good lines
        good = [b[o, 0] for b, o in zip(blocks, oks)]
        return limit is not None and len(np.unique(np.concatenate(good))) >= limit

    def header(text: str, lineno: int) -> None:
        body = text[1:].strip()
        if ":" in body:
            key, _, value = body.partition(":")
            key, value = key.strip(), value.strip()
            if not key or " " in key or key in trace.header:
                return
            if key in _HEADER_COUNTS:
                try:
                    good = int(value.split()[0]) >= 1
                except (ValueError, IndexError):
                    good = False
                if not good:
                    reason = f"header {key}: {_short(value)} is not a positive integer"
                    if strict:
                        raise SWFError(str(p), lineno, reason)
                    trace.problems.append((lineno, reason + " (ignored)"))
                    return
            trace.header[key] = value

    block = _BLOCK if limit is None else min(_BLOCK, max(1024, 2 * limit))
    plain = _plain_lines(p, max_lines)
    if plain is not None:
        stripped = list(map(bytes.strip, plain))
        del plain
        data = [i for i, t in enumerate(stripped) if t and t[0] != 59]  # 59: ";"
        if len(stripped) - len(data) > MAX_BLANK:
            raise SWFError(str(p), _past_blank(stripped), f"more than {MAX_BLANK:,} blank or comment lines: not an SWF "
                                                          "trace iolab reads")
        head = data[0] if data else len(stripped)  # the header: the comments before the first job line
        for i, t in enumerate(stripped[:head]):
            if t[:1] == b";":
                header(t.decode("ascii"), i + 1)
        last = len(stripped)  # lines read: all, or up to the one that completed the block that was enough
        for k in range(0, len(data), block):
            chunk = data[k:k + block]
            numbers.extend(map((1).__add__, chunk))  # 1-based line numbers (map: no Python frame per line)
            pending.extend(map(stripped.__getitem__, chunk))
            if len(pending) == block:
                convert()
                if enough():
                    last = chunk[-1]
                    break
        for i in range(head, last):
            t = stripped[i]
            if t[:1] == b";":
                header(t.decode("ascii"), i + 1)
    else:
        blank = 0
        try:
            for lineno, line in enumerate(_open_text(p), start=1):
                text = line.strip()
                if not text or text.startswith(";"):
                    blank += 1
                    if blank > MAX_BLANK:
                        raise SWFError(str(p), lineno, f"more than {MAX_BLANK:,} blank or comment lines: not an "
                                                       "SWF trace iolab reads")
                    if text:
                        header(text, lineno)
                    continue
                numbers.append(lineno)
                if max_lines is not None and len(numbers) > max_lines:
                    raise TooManyJobLines(str(p), max_lines)
                pending.append(text)
                if len(pending) == block:
                    convert()
                    if enough():
                        break
        except (OSError, EOFError, zlib.error) as exc:  # a truncated or corrupt .gz, an unreadable file
            raise SWFError(str(p), 0, f"cannot read: {exc}") from None
    convert()
    n = len(numbers)
    table = np.concatenate(blocks) if blocks else np.empty((0, _NCOL))
    ok = np.concatenate(oks) if oks else np.empty(0, dtype=bool)
    # a job number already used by an earlier accepted line
    good = np.flatnonzero(ok)
    dup = np.zeros(n, dtype=bool)
    first_line = {}
    if len(good):
        _, first, inverse = np.unique(table[good, 0], return_index=True, return_inverse=True)
        later = first[inverse] != np.arange(len(good))
        dup[good[later]] = True
        first_line = {i: numbers[good[first[inverse[k]]]] for k, i in zip(np.flatnonzero(later).tolist(),
                                                                           good[later].tolist())}
    accepted = ok & ~dup
    end = n
    if limit is not None:
        idx = np.flatnonzero(accepted)
        if len(idx) >= limit:
            end = int(idx[limit - 1]) + 1 if limit > 0 else 0
    for i in np.flatnonzero(~accepted[:end]).tolist():  # in line order: the first is the error of strict
        if dup[i]:
            reason = f"job number {int(table[i, 0])} already used on line {first_line[i]}"
        else:
            reason = _parse_line(texts[i], numbers[i])
            if not isinstance(reason, str):  # cannot happen: the columns' checks are _parse_line's
                raise AssertionError(f"{p}:{numbers[i]}: refused by the column checks, accepted line by line")
        if strict:
            raise SWFError(str(p), numbers[i], reason)
        trace.problems.append((numbers[i], reason))
    keep = accepted.copy()
    keep[end:] = False
    whole = bool(keep.all())  # every line kept (a clean trace read whole): the table as converted, no copy
    trace.table = table if whole else table[keep]
    trace.lines = np.asarray(numbers, dtype=np.int64) if whole else np.asarray(numbers, dtype=np.int64)[keep]
    return trace


def swf_jobs(path: str | Path, *, strict: bool = True, limit: int | None = None,
             procs_per_node: int | None = None, max_nodes: int | None = None, first: int = 0,
             max_lines: int | None = None, rows: bool = False) -> list[Job] | list[SWFJob]:
    """Jobs of an SWF file, in file order.  Skipped lines and unusable records are counted in an
    :class:`iolab.errors.InputWarning`.  ``max_nodes``: the platform's nodes (a bigger job is an error
    naming its line, or skipped with ``strict=False``), from the ``first`` job on.  ``max_lines``: see
    :func:`read_swf`.  A file that gives no job is an :class:`SWFError`: an empty or comments-only file,
    or one whose every job line is malformed or unusable (the first named).  ``rows``: the jobs as
    :class:`SWFJob` tuples (:meth:`SWFTrace.job_rows`), for a caller that only reads them."""
    with collector.paused():
        trace = read_swf(path, strict=strict, limit=limit, max_lines=max_lines)
        jobs = (trace.job_rows if rows else trace.jobs)(procs_per_node, max_nodes=max_nodes, strict=strict,
                                                         first=first)
    dropped = trace.problems + trace.unusable
    if not jobs:
        if not dropped:
            raise SWFError(trace.path, 0, "no job line: the file is empty or holds only comments")
        n, reason = sorted(dropped)[0]
        raise SWFError(trace.path, n, f"no usable job: every job line was skipped ({len(dropped)}); the first: "
                                      f"{reason}")
    if dropped:
        first = "; ".join(f"line {n}: {r}" for n, r in sorted(dropped)[:3])
        warnings.warn(f"{trace.path}: skipped {len(dropped)} line(s) ({len(trace.problems)} malformed, "
                      f"{len(trace.unusable)} unusable: no processor count or too many nodes), first: {first}",
                      InputWarning, stacklevel=2)
    return jobs
