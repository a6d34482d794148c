"""Batsim's JSON workloads (jobs and profiles) to and from iolab's batch jobs.

A Batsim workload (Batsim 4, ``docs/input-workload.rst``) is ``{"nb_res": N, "jobs": [...], "profiles":
{...}}``; a job is ``{"id", "subtime", "res", "walltime", "profile"}`` plus any field its author adds; a
profile says what the job does.  iolab's job is lackner2019's: nodes, walltime, a runtime that includes its
I/O at R_lps, and its bytes (input, output, checkpoint data, the HPS request).

Reading (:func:`read_batsim_workload`), each job's profile gives its runtime and bytes:

- ``delay``: runtime = ``delay``, no I/O;
- ``parallel_homogeneous`` (``cpu`` flops on each node, ``com`` bytes between each pair of nodes): compute
  time ``cpu / flops + com x (res - 1) / bandwidth`` (each node sends ``com`` to every other node over its own
  link at ``bandwidth``);
- ``parallel_homogeneous_total``: the same with ``cpu / res`` and ``com / res``;
- ``parallel_homogeneous_pfs`` (``bytes_to_read``, ``bytes_to_write`` per node, from or to the parallel file
  system): ``res x bytes_to_read`` of input, ``res x bytes_to_write`` of output;
- ``composed`` (``seq`` of profile names, ``repeat`` times): the sum of its parts' compute time and bytes; the
  bytes written by its last writing step are the output, those written before are checkpoint data.

The runtime is the profile's compute time plus its bytes at R_lps (iolab's model: a job's runtime is its
time alone on LPS).  Fields iolab adds to a job (``input``, ``output``, ``data``, ``storage`` in bytes,
``user``) set the bytes it moves within that runtime, in place of the profile's (a ``delay`` job of 600 s with
``input: 6e9`` runs 600 s alone on LPS, 6 of them reading); ``iolab`` (what a run did with it, written by
:func:`to_batsim_workload`) is ignored.  A job without a walltime (Batsim: no limit) gets its runtime (at least 1 s), as iolab plans with
one.  Other profile types (``parallel``, ``data_staging``, ``smpi``, ``usage_trace``) are refused, naming the job.

Writing (:func:`to_batsim_workload`): every job with a ``delay`` profile of its runtime (shared by jobs of
the same runtime), iolab's fields where they are not 0, and, from a run's trace, what the run did
(``iolab: {start, end, status, tier, alloc}``); reading it back gives the same jobs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping

from iolab.errors import IolabError
from iolab.names import is_safe_name

SUPPORTED = ("delay", "parallel_homogeneous", "parallel_homogeneous_total", "parallel_homogeneous_pfs", "composed")
IOLAB_FIELDS = ("input", "output", "data", "storage")
MAX_COMPOSED_DEPTH = 32  # a composed profile may name composed profiles: this deep at most (a cycle is refused)


class BatsimWorkloadError(IolabError):
    """A Batsim workload iolab cannot read (exit 2), naming the file, the job or profile and the field."""


def _number(v: Any, where: str, *, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 \
            or (positive and v <= 0):
        raise ValueError(f"{where}: {v!r} is not a {'positive' if positive else 'non-negative'} finite number")
    return float(v)


class _Profiles:
    """The workload's profiles, each read once: name -> (compute seconds, bytes read, bytes written before the
    last write, bytes of the last write)."""

    def __init__(self, profiles: Mapping[str, Any], flops: float, bandwidth: float):
        self.raw, self.flops, self.bandwidth = profiles, flops, bandwidth
        self.done: dict[str, tuple[float, float, float, float]] = {}

    def of(self, name: str, res: int, stack: tuple[str, ...] = ()) -> tuple[float, float, float, float]:
        key = f"{name}@{res}"
        if key in self.done:
            return self.done[key]
        p = self.raw.get(name)
        where = f"profiles.{name}"
        if not isinstance(p, Mapping):
            raise ValueError(f"{where}: no such profile" if p is None else f"{where}: not an object")
        kind = p.get("type")
        if kind == "delay":
            out = (_number(p.get("delay"), f"{where}.delay"), 0.0, 0.0, 0.0)
        elif kind in ("parallel_homogeneous", "parallel_homogeneous_total"):
            cpu, com = _number(p.get("cpu", 0), f"{where}.cpu"), _number(p.get("com", 0), f"{where}.com")
            if kind == "parallel_homogeneous_total":
                cpu, com = cpu / res, com / res
            out = (cpu / self.flops + com * (res - 1) / self.bandwidth, 0.0, 0.0, 0.0)
        elif kind == "parallel_homogeneous_pfs":
            read = _number(p.get("bytes_to_read", 0), f"{where}.bytes_to_read") * res
            write = _number(p.get("bytes_to_write", 0), f"{where}.bytes_to_write") * res
            out = (0.0, read, 0.0, write)
        elif kind == "composed":
            if name in stack or len(stack) >= MAX_COMPOSED_DEPTH:
                raise ValueError(f"{where}: composed profiles nest in a cycle or deeper than {MAX_COMPOSED_DEPTH}: "
                                 + " -> ".join(stack + (name,)))
            seq, repeat = p.get("seq"), p.get("repeat", 1)
            if not isinstance(seq, list) or not seq or not all(isinstance(x, str) for x in seq):
                raise ValueError(f"{where}.seq: a non-empty list of profile names")
            if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= 10**6:
                raise ValueError(f"{where}.repeat: an integer from 1 to 1000000, got {repeat!r}")
            compute = read = before = last = 0.0
            for _ in range(repeat):
                for part in seq:
                    c, r, b, w = self.of(part, res, stack + (name,))
                    compute, read = compute + c, read + r
                    if w > 0 or b > 0:  # a writing step: what was the last write is now written before
                        before, last = before + last + b, w if w > 0 else last
            out = (compute, read, before, last)
        else:
            raise ValueError(f"{where}.type: {kind!r} is not read by iolab; it reads {', '.join(SUPPORTED)} "
                             "(docs/workloads.md)")
        self.done[key] = out
        return out


def read_batsim_workload(path: str | Path, *, lps_rate: float, flops: float = 1e9, bandwidth: float = 1.25e9,
                         nodes: int | None = None) -> tuple[list[dict[str, Any]], int, list[str]]:
    """The jobs of the Batsim workload at ``path`` as iolab job dicts (``iolab.specs.batch.Job``'s fields),
    the platform's node count (``nodes``, else the file's ``nb_res``, else the largest job) and notes on
    what was made up.  ``lps_rate`` (bytes/s) turns bytes into runtime, ``flops`` (per node) and
    ``bandwidth`` (bytes/s of a node's link) the parallel profiles' work.  Raises
    :class:`BatsimWorkloadError` naming the field."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise BatsimWorkloadError(f"{path}: cannot read it: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BatsimWorkloadError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    try:
        return _read(doc, lps_rate, flops, bandwidth, nodes)
    except ValueError as exc:
        raise BatsimWorkloadError(f"{path}: {exc}") from None


def _read(doc: Any, lps_rate: float, flops: float, bandwidth: float, nodes: int | None):
    if not isinstance(doc, dict):
        raise ValueError("a Batsim workload is a JSON object with jobs, profiles and nb_res")
    jobs, profiles = doc.get("jobs"), doc.get("profiles", {})
    if not isinstance(jobs, list) or not jobs:
        raise ValueError("jobs: a non-empty list of jobs")
    if not isinstance(profiles, dict):
        raise ValueError("profiles: an object of profiles by name")
    nb_res = doc.get("nb_res")
    if nb_res is not None and (isinstance(nb_res, bool) or not isinstance(nb_res, int) or nb_res < 1):
        raise ValueError(f"nb_res: a positive integer, got {nb_res!r}")
    table = _Profiles(profiles, flops, bandwidth)
    out, seen, made_up = [], {}, 0
    for i, j in enumerate(jobs):
        where = f"jobs[{i}]"
        if not isinstance(j, dict):
            raise ValueError(f"{where}: not an object")
        jid = j.get("id")
        jid = str(jid) if isinstance(jid, int) and not isinstance(jid, bool) else jid
        if not is_safe_name(jid):
            raise ValueError(f"{where}.id: {jid!r} is not an iolab job id (letters, digits, _ . : -, starting with "
                             "a letter or digit, at most 64 characters)")
        if jid in seen:
            raise ValueError(f"{where}.id: {jid!r} is also jobs[{seen[jid]}]")
        seen[jid] = i
        res = j.get("res")
        if isinstance(res, bool) or not isinstance(res, int) or res < 1:
            raise ValueError(f"{where}.res: a positive integer, got {res!r}")
        submit = _number(j.get("subtime"), f"{where}.subtime")
        prof = j.get("profile")
        if not isinstance(prof, str):
            raise ValueError(f"{where}.profile: a profile name, got {prof!r}")
        try:
            compute, read, before, last = table.of(prof, res)
        except ValueError as exc:
            raise ValueError(f"{where} ({jid}): {exc}") from None
        runtime = compute + (read + before + last) / lps_rate  # the profile's bytes at R_lps
        io = {"input": read, "output": last, "data": before, "storage": 0.0}
        for name in IOLAB_FIELDS:  # the bytes moved within that runtime
            if name in j:
                io[name] = _number(j[name], f"{where}.{name}")
        wall = j.get("walltime")
        if wall is None or (isinstance(wall, (int, float)) and not isinstance(wall, bool) and wall <= 0):
            wall, made_up = max(runtime, 1.0), made_up + 1  # Batsim: -1 or absent is no limit
        else:
            wall = _number(wall, f"{where}.walltime", positive=True)
        job = {"id": jid, "submit": submit, "nodes": res, "walltime": wall, "runtime": runtime}
        job.update({k: v for k, v in io.items() if v > 0})
        if "user" in j:
            job["user"] = str(j["user"])
        out.append(job)
    largest = max(job["nodes"] for job in out)
    total = nodes if nodes is not None else nb_res if nb_res is not None else largest
    if largest > total:
        worst = next(job for job in out if job["nodes"] == largest)
        raise ValueError(f"job {worst['id']} needs {largest} nodes; the platform has {total}"
                         + (" (nb_res)" if nodes is None and nb_res is not None else ""))
    notes = [f"{made_up} job(s) without a walltime (Batsim: no limit) were given their runtime"] if made_up else []
    return out, total, notes


def _num(v: float) -> float | int:
    """An integral float as an int (a JSON file a person reads: 3600, not 3600.0)."""
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else float(v)


def to_batsim_workload(jobs: list[Any], nb_res: int, *, runs: Mapping[str, Mapping[str, Any]] | None = None,
                       meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A Batsim workload of iolab ``jobs`` (``iolab.specs.batch.Job``, or objects with its fields) on ``nb_res``
    nodes; ``runs``: by job id, what a run did with it (written under the job's ``iolab`` field); ``meta``: a
    top-level ``iolab`` object (where it came from)."""
    profiles: dict[str, dict[str, Any]] = {}
    out = []
    for job in jobs:
        runtime = float(job.runtime)
        name = f"delay_{_num(runtime)}"
        profiles.setdefault(name, {"type": "delay", "delay": _num(runtime)})
        entry: dict[str, Any] = {"id": str(job.id), "subtime": _num(float(job.submit)), "res": int(job.nodes),
                                 "walltime": _num(float(job.walltime)), "profile": name}
        for field in IOLAB_FIELDS:
            v = float(getattr(job, field, 0.0) or 0.0)
            if v > 0:
                entry[field] = _num(v)
        user = str(getattr(job, "user", "") or "")
        if user and user != "0":
            entry["user"] = user
        if runs is not None and str(job.id) in runs:
            entry["iolab"] = dict(runs[str(job.id)])
        out.append(entry)
    doc: dict[str, Any] = {"nb_res": int(nb_res), "jobs": out, "profiles": profiles}
    if meta:
        doc["iolab"] = dict(meta)
    return doc


__all__ = ["BatsimWorkloadError", "IOLAB_FIELDS", "SUPPORTED", "read_batsim_workload", "to_batsim_workload"]
