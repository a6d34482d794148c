"""The Theta job list with Darshan I/O (monniot2023 §5.1's kind of input).

The YAML holds ``jobs:``, one mapping per job with Cobalt fields
(``id``, ``nodesUsed``, ``submissionTime``, ``startTime``, ``endTime`` as
UTC ``YYYY-mm-dd HH:MM:SS``, ``walltimeSeconds``, ``runtimeSeconds``) and
Darshan totals (``readBytes``, ``writtenBytes``, ``runs`` per application
run).  Each becomes a :class:`iolab.specs.batch.Job`:

- ``submit`` = seconds since the earliest submission of the file
  (:func:`theta_trace` returns that origin as a Unix time);
- ``nodes`` = ``nodesUsed``; ``walltime`` = ``walltimeSeconds``;
  ``runtime`` = ``runtimeSeconds``;
- ``input`` = ``readBytes``, ``output`` = ``writtenBytes``, no checkpoint data;
- ``storage`` = max(read, written) bytes: monniot2023 §5.1 sizes a job's
  storage request "conservatively based on the maximum of either read or
  write volume";
- ``user``: the file has no user field; every job gets ``"theta"``.

Jobs keep the file's order (monniot2023 replays requests in the Darshan
file's order).  Bad records raise :class:`iolab.errors.DataError` (a
``ValueError`` too) naming the file and *every* bad record's ``jobs[i].field``
with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from iolab.errors import DataError, SpecError
from iolab.specs.base import MAX_TIME, not_a_file, problems_of
from iolab.specs.batch import Job
from iolab.specs.load import parse_text, read_text

MAX_PROBLEMS = 50


class ThetaError(DataError, ValueError):
    """Bad records of a Theta job file: ``problems`` are ``(jobs[i].field, reason)``."""

    def __init__(self, path: str, problems: list[tuple[str, str]]):
        shown = problems[:MAX_PROBLEMS]
        if len(problems) > MAX_PROBLEMS:
            shown.append(("...", f"{len(problems) - MAX_PROBLEMS} more problems"))
        super().__init__(path, shown, "bad Theta job file")

_REQUIRED = ("id", "nodesUsed", "submissionTime", "walltimeSeconds", "runtimeSeconds", "readBytes", "writtenBytes")


@dataclass(frozen=True)
class ThetaTrace:
    origin: float  # Unix time of the earliest submission
    jobs: list[Job]
    raw: list[dict[str, Any]]


def _utc(value: Any, where: str | None = None) -> float:
    """Unix time of a UTC ``YYYY-mm-dd HH:MM:SS``; ``where`` prefixes the error (iolab.studies.monniot)."""
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.strptime(str(value), "%Y-%m-%d %H:%M:%S")
        except ValueError:
            raise ValueError((f"{where}: " if where else "") + f"not a 'YYYY-mm-dd HH:MM:SS' time: {value!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _number(j: dict[str, Any], key: str, kind: type) -> Any:
    v = j[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        raise ValueError(f"not a finite number: {v!r}")
    if kind is int and v != int(v):
        raise ValueError(f"not an integer: {v!r}")
    if abs(v) > MAX_TIME and key.endswith("Seconds"):  # the run's times would overflow
        raise ValueError(f"above {MAX_TIME:g} s: {v!r}")
    return kind(v)


def theta_trace(path: str | Path) -> ThetaTrace:
    """Read a Theta job file; every bad record is named in one :class:`ThetaError`."""
    p = Path(path)
    why = not_a_file(p, "Theta job file")
    if why:
        raise ThetaError(str(p), [("(file)", why)])
    try:
        doc = parse_text(read_text(p), str(p))
    except SpecError as err:  # not UTF-8, not YAML, a key given twice
        raise ThetaError(str(p), err.problems) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise ThetaError(str(p), [("(top level)", "expected a mapping with a 'jobs' list")])
    raw = doc["jobs"]
    problems: list[tuple[str, str]] = []
    rows: list[tuple[int, dict[str, Any], float]] = []
    for i, j in enumerate(raw):
        if not isinstance(j, dict):
            problems.append((f"jobs[{i}]", "not a mapping"))
            continue
        missing = [key for key in _REQUIRED if key not in j]
        if missing:
            problems += [(f"jobs[{i}].{key}", "missing") for key in missing]
            continue
        try:
            rows.append((i, j, _utc(j["submissionTime"])))
        except (ValueError, OverflowError, OSError) as exc:
            problems.append((f"jobs[{i}].submissionTime", str(exc)))
    origin = min((sub for _, _, sub in rows), default=0.0)
    jobs = []
    seen: dict[str, int] = {}
    for i, j, sub in rows:
        values: dict[str, Any] = {}
        for key, kind in (("readBytes", int), ("writtenBytes", int), ("nodesUsed", int),
                          ("walltimeSeconds", float), ("runtimeSeconds", float)):
            try:
                values[key] = _number(j, key, kind)
            except (ValueError, OverflowError) as exc:
                problems.append((f"jobs[{i}].{key}", str(exc)))
        if len(values) < 5:
            continue
        read, written = values["readBytes"], values["writtenBytes"]
        job_id = str(j["id"])
        if job_id in seen:
            problems.append((f"jobs[{i}].id", f"duplicate id {job_id!r} (also jobs[{seen[job_id]}])"))
            continue
        seen[job_id] = i
        try:
            jobs.append(Job.model_validate(dict(
                id=job_id, user="theta", submit=sub - origin, nodes=values["nodesUsed"],
                walltime=values["walltimeSeconds"], runtime=values["runtimeSeconds"],
                input=read, output=written, data=0, storage=max(read, written),
            )))
        except ValidationError as err:  # names the Job field
            problems += [(f"jobs[{i}].{_FIELD.get(f, f)}", r) for f, r in problems_of(err)]
    if problems:  # in file order
        problems.sort(key=lambda pr: int(pr[0][5:].split("]")[0]) if pr[0].startswith("jobs[") else -1)
        raise ThetaError(str(p), problems)
    return ThetaTrace(origin=origin, jobs=jobs, raw=raw)


# Job fields -> the file's keys, so that errors name what the file says
_FIELD = {"id": "id", "submit": "submissionTime", "nodes": "nodesUsed", "walltime": "walltimeSeconds",
          "runtime": "runtimeSeconds", "input": "readBytes", "output": "writtenBytes", "storage": "readBytes"}


def theta_jobs(path: str | Path) -> list[Job]:
    """Jobs of a Theta job file, in file order."""
    return theta_trace(path).jobs
