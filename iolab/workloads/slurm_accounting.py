"""Slurm's records of jobs that ran: ``sacct --parsable2`` output and the job completion log
(``JobCompType=jobcomp/filetxt``), as jobs a batch spec can replay.

Both give, per job, its id, submit, start and end times (whole seconds, the controller's local time),
node count, time limit and final state.  What is kept (:func:`usable`), as one stated rule:

- a **step** (sacct's ``123.batch``, ``123.extern``, ``123.0``) is not a job: it runs inside its job's
  allocation; it is skipped;
- an **array task** (``123_4``; jobcomp: ``ArrayJobId``/``ArrayTaskId``) is a job of its own; a sacct
  line for tasks not yet started (``123_[5-9]``) is a pending job;
- a job is kept if it **started and ended**: a start and an end are known and start <= end, whatever
  its final state (COMPLETED, FAILED, TIMEOUT, CANCELLED while running, NODE_FAIL...: it held its nodes
  from its start to its end).  Dropped, and counted by reason: jobs that never started (PENDING,
  cancelled while pending: start ``Unknown``/``None``, a start after the end, or no node: the job
  completion log writes a job cancelled while pending with start = end and ``NodeCnt=0``), and jobs
  still running (no end);
- the **time limit** is the job's (``UNLIMITED`` or ``Partition_Limit``: the job's run time rounded up
  to a minute, said in :attr:`Accounting.notes`);
- times are read as wall-clock seconds of the controller's local time (no time zone is in the records).

A missing file, a sacct file without its header or without the needed columns, or a line that does
not parse is refused naming the file and the line (:class:`~iolab.errors.DataError`, exit 2).
"""

from __future__ import annotations

import calendar
import datetime as _dt
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from iolab.errors import DataError
from iolab.specs.slurm_conf import parse_slurm_time

__all__ = ["Accounting", "AccountingJob", "read_accounting", "read_jobcomp", "read_sacct", "wall_seconds"]

UNKNOWN = ("", "unknown", "none", "n/a")


def wall_seconds(text: str) -> float | None:
    """``2026-12-06T18:34:15`` as seconds since 1970 on the same clock (read as UTC: the records carry no
    zone, and only differences and the seconds within a minute matter); None for Unknown/None."""
    t = text.strip()
    if t.lower() in UNKNOWN:
        return None
    try:
        d = _dt.datetime.fromisoformat(t)
    except ValueError:
        raise ValueError(f"not a Slurm time stamp: {text!r} (YYYY-MM-DDTHH:MM:SS)") from None
    if d.year < 1971:  # Slurm's 0 (never) printed as a date
        return None
    return float(calendar.timegm(d.replace(tzinfo=None).timetuple()))


@dataclass(frozen=True)
class AccountingJob:
    """One job as Slurm recorded it (times in :func:`wall_seconds`; ``limit`` in seconds, None: none)."""

    id: str
    name: str
    user: str
    partition: str
    state: str
    submit: float
    start: float | None
    end: float | None
    nodes: int
    limit: float | None
    node_list: str = ""


@dataclass
class Accounting:
    """The jobs a file holds (after skipping steps), the kept ones and why the others were dropped."""

    source: str
    jobs: list[AccountingJob]
    kept: list[AccountingJob] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _limit(text: str) -> float | None:
    t = text.strip()
    if t.lower() in UNKNOWN or t.upper() in ("UNLIMITED", "PARTITION_LIMIT", "INFINITE"):
        return None
    return parse_slurm_time(t)


def _state(text: str) -> str:
    words = text.strip().split()
    return words[0].rstrip("+").upper() if words else "UNKNOWN"


# sacct columns: the first of each tuple that the file has is read
_SACCT = {"id": ("JobID",), "submit": ("Submit",), "start": ("Start",), "end": ("End",),
          "nodes": ("NNodes", "AllocNodes", "ReqNodes"), "limit": ("Timelimit",), "state": ("State",)}
_SACCT_OPTIONAL = {"name": ("JobName",), "user": ("User", "UID"), "partition": ("Partition",),
                   "node_list": ("NodeList",)}
_STEP = re.compile(r"^\d+(?:_(?:\d+|\[[^\]]*\]))?(?:\+\d+)?\.")


def read_sacct(path: str | Path) -> Accounting:
    """``sacct --parsable2`` (``|`` between fields, a header line first) with at least JobID, Submit, Start,
    End, NNodes (or AllocNodes), Timelimit and State."""
    p = Path(path)
    lines = _lines(p)
    if not lines:
        raise DataError(str(p), [("line 1", "empty: sacct --parsable2 output starts with its header line")])
    header = [h.strip() for h in lines[0][1].split("|")]
    col: dict[str, int] = {}
    missing = []
    for key, names in {**_SACCT, **_SACCT_OPTIONAL}.items():
        at = next((header.index(n) for n in names if n in header), None)
        if at is None and key in _SACCT:
            missing.append("/".join(names))
        elif at is not None:
            col[key] = at
    if missing:
        raise DataError(str(p), [("line 1", f"not a sacct --parsable2 header with the needed columns (missing "
                                            f"{', '.join(missing)}; run sacct --parsable2 -o JobID,Submit,Start,"
                                            f"End,NNodes,Timelimit,State,JobName,User,Partition,NodeList)")])
    jobs = []
    for lineno, line in lines[1:]:
        fields = line.split("|")
        if len(fields) < len(header):
            raise DataError(str(p), [(f"line {lineno}", f"{len(fields)} fields, the header has {len(header)}")])
        get = lambda k: fields[col[k]].strip() if k in col else ""  # noqa: E731
        jid = get("id")
        if _STEP.match(jid):
            continue  # a step of a job: it runs inside the job's allocation
        try:
            nodes = int(get("nodes") or 0)
            jobs.append(AccountingJob(jid, get("name"), re.sub(r"\(\d+\)$", "", get("user")), get("partition"),
                                      _state(get("state")), _need(wall_seconds(get("submit")), "Submit"),
                                      wall_seconds(get("start")), wall_seconds(get("end")), nodes,
                                      _limit(get("limit")), get("node_list")))
        except ValueError as exc:
            raise DataError(str(p), [(f"line {lineno}", str(exc))]) from None
    return _kept(Accounting(str(p), jobs))


_JOBCOMP_KEYS = ("JobId", "UserId", "GroupId", "Name", "JobState", "Partition", "TimeLimit", "StartTime",
                 "EndTime", "NodeList", "NodeCnt", "ProcCnt", "WorkDir", "ReservationName", "Tres", "Account",
                 "QOS", "WcKey", "Cluster", "SubmitTime", "EligibleTime", "ArrayJobId", "ArrayTaskId",
                 "HetJobId", "HetJobOffset", "DerivedExitCode", "ExitCode")
_JOBCOMP = re.compile(r"(?:^| )(" + "|".join(_JOBCOMP_KEYS) + r")=")


def read_jobcomp(path: str | Path) -> Accounting:
    """The job completion log of ``JobCompType=jobcomp/filetxt``: a line ``JobId=... UserId=name(uid) ...
    Name=... JobState=... TimeLimit=<minutes> StartTime=... EndTime=... NodeCnt=... SubmitTime=...`` per
    job (a job name may hold blanks: fields are cut at the known keys)."""
    p = Path(path)
    jobs = []
    for lineno, line in _lines(p):
        marks = list(_JOBCOMP.finditer(line))
        f = {m.group(1): line[m.end():(marks[k + 1].start() if k + 1 < len(marks) else len(line))].strip()
             for k, m in enumerate(marks)}
        need = [k for k in ("JobId", "JobState", "StartTime", "EndTime", "NodeCnt", "SubmitTime") if k not in f]
        if need:
            raise DataError(str(p), [(f"line {lineno}", f"not a jobcomp/filetxt record (no {', '.join(need)})")])
        jid = f["JobId"]
        if "ArrayJobId" in f and f.get("ArrayTaskId", "") not in ("", "4294967294"):
            jid = f"{f['ArrayJobId']}_{f['ArrayTaskId']}"
        try:
            jobs.append(AccountingJob(jid, f.get("Name", ""), re.sub(r"\(\d+\)$", "", f.get("UserId", "")),
                                      f.get("Partition", ""), _state(f["JobState"]),
                                      _need(wall_seconds(f["SubmitTime"]), "SubmitTime"),
                                      wall_seconds(f["StartTime"]), wall_seconds(f["EndTime"]), int(f["NodeCnt"]),
                                      _limit(f.get("TimeLimit", "")), f.get("NodeList", "")))
        except ValueError as exc:
            raise DataError(str(p), [(f"line {lineno}", str(exc))]) from None
    return _kept(Accounting(str(p), jobs))


def read_accounting(path: str | Path) -> Accounting:
    """A sacct --parsable2 file (its first line holds ``|``) or a job completion log."""
    p = Path(path)
    first = next(iter(_lines(p)), (1, ""))[1]
    return read_sacct(p) if "|" in first else read_jobcomp(p)


def _need(v: float | None, what: str) -> float:
    if v is None:
        raise ValueError(f"{what} unknown")
    return v


def _lines(p: Path) -> list[tuple[int, str]]:
    try:
        text = p.read_text(errors="replace")
    except OSError as exc:
        raise DataError(str(p), [("file", exc.strerror or str(exc))], "cannot be read") from None
    return [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]


def _kept(acc: Accounting) -> Accounting:
    for j in acc.jobs:
        if j.start is None or (j.end is not None and j.start > j.end) or j.nodes < 1:
            why = "never started"  # (the job completion log's cancelled-while-pending: start = end, 0 nodes)
        elif j.end is None:
            why = "still running (no end)"
        else:
            acc.kept.append(j)
            continue
        acc.dropped[why] = acc.dropped.get(why, 0) + 1
    unlimited = sum(1 for j in acc.kept if j.limit is None)
    if unlimited:
        acc.notes.append(f"{unlimited} job(s) without a time limit (UNLIMITED, Partition_Limit): their run time "
                         f"rounded up to a minute is used")
    return acc


def limit_of(j: AccountingJob) -> float:
    """The job's time limit in seconds, or its run time rounded up to a minute if it has none."""
    if j.limit is not None:
        return j.limit
    return max(math.ceil((j.end - j.start) / 60.0), 1) * 60.0
