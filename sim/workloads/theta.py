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
file's order).  A missing or bad field raises ``ValueError`` naming
``jobs[i].field``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from iolab.specs.batch import Job

_REQUIRED = ("id", "nodesUsed", "submissionTime", "walltimeSeconds", "runtimeSeconds", "readBytes", "writtenBytes")


@dataclass(frozen=True)
class ThetaTrace:
    origin: float  # Unix time of the earliest submission
    jobs: list[Job]
    raw: list[dict[str, Any]]


def _utc(value: Any, where: str) -> float:
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.strptime(str(value), "%Y-%m-%d %H:%M:%S")
        except ValueError:
            raise ValueError(f"{where}: not a 'YYYY-mm-dd HH:MM:SS' time: {value!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def theta_trace(path: str | Path) -> ThetaTrace:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no such Theta job file: {p}")
    doc = yaml.safe_load(p.read_text())
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise ValueError(f"{p}: expected a mapping with a 'jobs' list")
    raw = doc["jobs"]
    submits = []
    for i, j in enumerate(raw):
        if not isinstance(j, dict):
            raise ValueError(f"{p}: jobs[{i}] is not a mapping")
        for key in _REQUIRED:
            if key not in j:
                raise ValueError(f"{p}: jobs[{i}].{key} is missing")
        submits.append(_utc(j["submissionTime"], f"{p}: jobs[{i}].submissionTime"))
    origin = min(submits) if submits else 0.0
    jobs = []
    for i, (j, sub) in enumerate(zip(raw, submits)):
        read, written = int(j["readBytes"]), int(j["writtenBytes"])
        try:
            jobs.append(Job.model_validate(dict(
                id=str(j["id"]), user="theta", submit=sub - origin, nodes=int(j["nodesUsed"]),
                walltime=float(j["walltimeSeconds"]), runtime=float(j["runtimeSeconds"]),
                input=read, output=written, data=0, storage=max(read, written),
            )))
        except Exception as exc:  # pydantic's message names the Job field
            raise ValueError(f"{p}: jobs[{i}]: {exc}") from None
    return ThetaTrace(origin=origin, jobs=jobs, raw=raw)


def theta_jobs(path: str | Path) -> list[Job]:
    """Jobs of a Theta job file, in file order."""
    return theta_trace(path).jobs
