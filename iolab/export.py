"""A trace in formats other tools read: SWF, Batsim's ``jobs.csv``, plain CSV per table.

- :func:`to_swf`: the Standard Workload Format (Parallel Workloads Archive,
  version 2.2), one line per job in submission order.  Submit, wait
  (``start - submit``) and run time (``end - start``) come from the run;
  processors are nodes (the header says ``MaxNodes = MaxProcs``); the
  requested time is the spec's walltime when the trace's spec can give the
  jobs back (else -1); user ids are the digits of the spec's user names
  (``u20`` -> 20), or numbers given in order of first appearance when a name
  has none.  Times are written with up to 6 decimals (SWF files usually hold
  whole seconds; a simulator's are not).  Status: 1 completed, 0 failed,
  5 killed or never started (wait and run time -1 then).
- :func:`to_batsim_csv`: the columns of Batsim's ``_jobs.csv`` output (the
  file evalys's ``JobSet.from_csv`` loads): ``job_id, workload_name, profile,
  submission_time, requested_number_of_resources, requested_time, success,
  final_state, starting_time, execution_time, finish_time, waiting_time,
  turnaround_time, stretch, allocated_resources, consumed_energy, metadata``.
  ``allocated_resources`` are node ids in interval notation (``0-3 7``): the
  ones the run recorded, or the lowest free ids at each job's start (the
  simulator does not place jobs on nodes).  Jobs that never started are left
  out (Batsim lists only jobs that ran or were rejected).
- :func:`to_batsim_json`: a Batsim JSON workload (``nb_res``, ``jobs``, ``profiles``) that Batsim (and
  ``iolab workload import batsim``) reads back: every job of the trace with a ``delay`` profile of its
  runtime (the spec's jobs when the trace's spec gives them back: their walltime and bytes too; else the
  trace's ``min_time``, walltime -1 for Batsim's "no limit"), and what the run did under the job's ``iolab``
  field (status, and for a job that ran its start, end, tier and node ids ``alloc``);
  :mod:`iolab.workloads.batsim` describes both directions.
- :func:`to_csv_dir`: one ``TABLE.csv`` per table of the trace schema (header
  row of the schema's columns; NaN as an empty field) plus ``attrs.json``.

Every file is written atomically (temporary file, then rename).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from iolab.atomic import atomic_write_text
from iolab.errors import TraceError
from iolab.metrics.batch import id_ranges
from iolab.metrics.batch_trace import job_nodes, total_nodes_of
from iolab.metrics.partial import cut_short
from iolab.trace import Trace
from iolab.trace.schema import TABLES
from iolab.workloads.batsim import to_batsim_workload

FORMATS = ("swf", "batsim-csv", "batsim-json", "csv")

BATSIM_COLUMNS = (
    "job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources", "requested_time",
    "success", "final_state", "starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time",
    "stretch", "allocated_resources", "consumed_energy", "metadata",
)
_BATSIM_STATE = {"ok": "COMPLETED_SUCCESSFULLY", "failed": "COMPLETED_FAILED", "killed": "COMPLETED_KILLED"}
_SWF_STATUS = {"ok": 1, "failed": 0, "killed": 5, "pending": 5}


def _num(v: float) -> str:
    """A time or count for a text format: integral values without decimals, others with up to 6."""
    if v != v:
        return "-1"
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.6f}".rstrip("0").rstrip(".")


def _user_ids(users: list[str]) -> list[int]:
    """``u20`` -> 20, ``7`` -> 7; names without digits get numbers in order of first appearance."""
    out, seen = [], {}
    for u in users:
        m = re.fullmatch(r"\D*(\d+)", u)
        if m:
            out.append(int(m.group(1)))
        else:
            seen.setdefault(u, -(len(seen) + 1))
            out.append(seen[u])
    if seen:  # after the largest numeric id, so they never collide
        top = max([x for x in out if x >= 0], default=0)
        out = [x if x >= 0 else top - x for x in out]
    return out


def _order(trace: Trace) -> np.ndarray:
    j = trace.jobs
    return np.lexsort((j["rank"], j["release"].astype(float)))


def to_swf(trace: Trace, source: str = "", jobs: Mapping[str, Any] | None = None) -> str:
    """``jobs``: the spec's jobs by id (walltime, user; see ``iolab.cli.export.spec_jobs``), if known."""
    j = trace.jobs
    total = total_nodes_of(trace)
    jobs = jobs or {}
    ids = [str(x) for x in j["id"]]
    numeric = all(re.fullmatch(r"[1-9]\d*", x) for x in ids) and len(set(ids)) == len(ids)
    users = _user_ids([str(jobs[i].user) if i in jobs else "" for i in ids])
    a = trace.attrs
    head = [
        "; Version: 2.2",
        f"; Computer: iolab {a.get('runtime', '?')} (scheduler {a.get('scheduler', '?')}, seed {a.get('seed', '?')})",
        f"; MaxJobs: {len(j)}",
        f"; MaxRecords: {len(j)}",
        f"; MaxNodes: {total}",
        f"; MaxProcs: {total}",
        "; UnixStartTime: 0",
        f"; Note: exported by iolab from {source or 'a trace'}; wait and run time are the run's "
        "(run time = end - start, on HPS including stage-in and stage-out); processors = nodes",
    ]
    if not numeric:
        head.append("; Note: job numbers are 1..n in submission order (the trace's ids are not all positive integers)")
    if not jobs:
        head.append("; Note: requested time unknown (-1): the trace's spec did not give its jobs back")
    cut = cut_short(trace)
    if cut is not None:
        head.append(f"; Note: {cut.describe('jobs')}; a job cut short has status 5 (cancelled) and ends when it "
                    "was killed")
    lines = head
    killed_at = ended_when_killed(trace)
    for k, i in enumerate(_order(trace), start=1):
        jid = ids[i]
        st, en, sub = float(j["start"][i]), float(j["end"][i]), float(j["release"][i])
        if not math.isfinite(en):
            en = killed_at.get(jid, en)
        ran = math.isfinite(st) and math.isfinite(en)
        status = _SWF_STATUS.get(str(j["status"][i]), 5) if ran else 5
        n = int(j["nodes"][i])
        req = float(jobs[jid].walltime) if jid in jobs else math.nan
        fields = [jid if numeric else str(k), _num(sub), _num(st - sub if ran else math.nan),
                  _num(en - st if ran else math.nan), str(n) if ran else "-1", "-1", "-1", str(n), _num(req), "-1",
                  str(status), str(users[i]) if jid in jobs else "-1", "-1", "-1", "-1", "-1", "-1", "-1"]
        lines.append(" ".join(fields))
    return "\n".join(lines) + "\n"


def ended_when_killed(trace: Trace) -> dict[str, float]:
    """The end of each started job of an interrupted run that has none in the trace: when it was
    killed (:func:`iolab.metrics.partial.cut_short`); empty for a complete trace."""
    cut = cut_short(trace)
    return dict(cut.killed_at) if cut is not None else {}


def batsim_rows(trace: Trace, jobs: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    j = trace.jobs
    nodes = job_nodes(trace)
    jobs = jobs or {}
    wl = str(trace.attrs.get("spec", {}).get("name", "iolab")) if isinstance(trace.attrs.get("spec"), dict) else "iolab"
    rows = []
    killed_at = ended_when_killed(trace)
    for i in _order(trace):
        jid = str(j["id"][i])
        st, en, sub = float(j["start"][i]), float(j["end"][i]), float(j["release"][i])
        if not math.isfinite(en):
            en = killed_at.get(jid, en)
        if not (math.isfinite(st) and math.isfinite(en)):
            continue
        status = str(j["status"][i])
        run, ta = en - st, en - sub
        rows.append({
            "job_id": jid, "workload_name": wl, "profile": str(j["tier"][i]) or "job", "submission_time": sub,
            "requested_number_of_resources": int(j["nodes"][i]),
            "requested_time": float(jobs[jid].walltime) if jid in jobs else -1.0,
            "success": 1 if status == "ok" else 0, "final_state": _BATSIM_STATE.get(status, "COMPLETED_FAILED"),
            "starting_time": st, "execution_time": run, "finish_time": en, "waiting_time": st - sub,
            "turnaround_time": ta, "stretch": ta / run if run > 0 else 1.0,
            "allocated_resources": id_ranges(nodes[i]), "consumed_energy": -1, "metadata": "",
        })
    return rows


def to_batsim_csv(trace: Trace, jobs: Mapping[str, Any] | None = None) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=BATSIM_COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in batsim_rows(trace, jobs):
        w.writerow({k: (_num(v) if isinstance(v, float) else v) for k, v in r.items()})
    return buf.getvalue()


def to_batsim_json(trace: Trace, jobs: Mapping[str, Any] | None = None, source: str = "") -> str:
    """The trace as a Batsim JSON workload (see the module's docstring); ``jobs``: the spec's jobs by id."""
    j = trace.jobs
    nodes = job_nodes(trace)
    jobs = jobs or {}
    killed_at = ended_when_killed(trace)
    listed, runs = [], {}
    for i in _order(trace):
        jid = str(j["id"][i])
        st, en = float(j["start"][i]), float(j["end"][i])
        if not math.isfinite(en):
            en = killed_at.get(jid, en)
        run: dict[str, Any] = {"status": str(j["status"][i])}
        if math.isfinite(st) and math.isfinite(en):
            run.update(start=st, end=en, tier=str(j["tier"][i]), alloc=id_ranges(nodes[i]))
        runs[jid] = run
        if jid in jobs:
            listed.append(jobs[jid])
        else:  # the trace alone: its runtime, no walltime (Batsim's -1: no limit), its bytes unsplit (left out)
            listed.append(_TraceJob(jid, float(j["release"][i]), int(j["nodes"][i]), -1.0, float(j["min_time"][i])))
    a = trace.attrs
    meta = {"exported_by": "iolab export --format batsim-json", "source": source or "a trace",
            "scheduler": str(a.get("scheduler", "?")), "runtime": a.get("runtime", "?"),
            "jobs_from": "the trace's spec" if jobs else "the trace (walltime and bytes unknown)"}
    return json.dumps(to_batsim_workload(listed, total_nodes_of(trace), runs=runs, meta=meta), indent=1) + "\n"


class _TraceJob:
    """A job as the trace alone gives it (its spec unknown)."""

    def __init__(self, id: str, submit: float, nodes: int, walltime: float, runtime: float):
        self.id, self.submit, self.nodes, self.walltime, self.runtime = id, submit, nodes, walltime, runtime


def _cell(v: Any) -> Any:
    if isinstance(v, (float, np.floating)):
        return "" if v != v else repr(float(v))
    if isinstance(v, np.integer):
        return int(v)
    return v


def to_csv_dir(trace: Trace, out: str | Path) -> list[Path]:
    """``out/TABLE.csv`` for every table and ``out/attrs.json``; returns the files written."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise TraceError(f"{out}: exists and is not a directory (csv writes one file per table into a directory)")
    written = []
    for name, cols in TABLES.items():
        table = trace.tables.get(name)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([c for c, _ in cols])
        if table is not None and len(table):
            for row in zip(*(table.columns[c] for c, _ in cols)):
                w.writerow([_cell(v) for v in row])
        path = out / f"{name}.csv"
        atomic_write_text(path, buf.getvalue())
        written.append(path)
    attrs = out / "attrs.json"
    atomic_write_text(attrs, json.dumps(trace.attrs, indent=1, sort_keys=True, default=str) + "\n")
    return written + [attrs]


def export_trace(trace: Trace, fmt: str, out: str | Path, source: str = "",
                 jobs: Mapping[str, Any] | None = None) -> list[Path]:
    if fmt == "swf":
        atomic_write_text(out, to_swf(trace, source, jobs))
    elif fmt == "batsim-csv":
        atomic_write_text(out, to_batsim_csv(trace, jobs))
    elif fmt == "batsim-json":
        atomic_write_text(out, to_batsim_json(trace, jobs, source))
    elif fmt == "csv":
        return to_csv_dir(trace, out)
    else:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    return [Path(out)]


__all__ = ["BATSIM_COLUMNS", "FORMATS", "batsim_rows", "export_trace", "to_batsim_csv", "to_batsim_json",
           "to_csv_dir", "to_swf"]
