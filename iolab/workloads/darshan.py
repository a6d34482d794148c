"""Darshan logs (PyDarshan) as iolab workloads: an I/O experiment's apps or batch jobs.

Per log (:func:`read_darshan`):

- the job: ``jobid``, ``uid``, ranks (``nprocs``), start (Unix seconds) and
  run time; the nodes are the distinct host names of the DXT records when
  the log has DXT (Darshan's counters record no host), else
  ``ceil(nprocs / ranks_per_node)``;
- the bytes read and written per module (``POSIX``, ``MPI-IO``, ``STDIO``);
  the job's volume is POSIX + STDIO (MPI-IO goes through POSIX, so adding it
  would count the same bytes twice), or MPI-IO + STDIO when the log has no
  POSIX records;
- when the I/O happened, as a histogram of ``bins`` equal time bins over
  ``[0, run time]`` per direction: from the DXT_POSIX segments (each
  segment's bytes spread evenly over its start..end) when present, else from
  each record's read and write start/end timestamps (the record's bytes
  spread over that span).  Each histogram is then scaled so that its total is
  the volume above (DXT may have stopped tracing when its buffer filled; the
  counters have every byte).  A direction with bytes but no timestamps is
  spread over the whole run.

The log is **streamed**: one record (with its DXT segments) is in memory at a
time, read straight from the C buffer into numpy; what is kept is two
histograms of ``bins`` floats, the module totals and the set of DXT host
names (at most one per rank).  Nothing grows with the number of records or
segments.

:func:`job_phases` turns the histograms into alternating phases: each run of
consecutive bins with I/O becomes a read phase (its read bytes) then a write
phase (its write bytes), each run of bins without I/O a compute phase of
that duration.  Volumes are in data units of ``unit_bytes``.  What this
approximates is listed in docs/workloads.md.
"""

from __future__ import annotations

import math
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from iolab.errors import IolabError
from iolab.specs.base import not_a_file

MODULES = ("POSIX", "MPI-IO", "STDIO")
_PREFIX = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO"}
_SEGMENT = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8")])


class DarshanLogError(IolabError):
    """A Darshan log that cannot be read (missing, not a log, truncated); names the file."""

    def __init__(self, path: str | Path, reason: str):
        self.path, self.reason = str(path), reason
        super().__init__(f"{path}: {reason}")


@dataclass
class DarshanJob:
    path: str
    jobid: int
    uid: int
    nprocs: int
    start: float  # Unix seconds
    run_time: float
    nodes: int
    nodes_from: str  # "dxt hosts" or "ranks / ranks_per_node"
    hosts: int  # distinct DXT host names (0 without DXT)
    modules: dict[str, dict[str, int]]  # module -> {"read": bytes, "write": bytes}
    read_bytes: int
    write_bytes: int
    volume_from: str  # which modules make the volume
    timing_from: str  # "DXT_POSIX segments" or "counter timestamps"
    bin_width: float
    read_hist: np.ndarray = field(repr=False)
    write_hist: np.ndarray = field(repr=False)
    records: int = 0
    segments: int = 0

    @property
    def io_time(self) -> float:
        """Seconds during which some I/O happened (bins with bytes)."""
        return float(np.count_nonzero((self.read_hist + self.write_hist) > 0)) * self.bin_width


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """libdarshan-util prints its errors on fd 2; ours (naming the file) replace them."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _backend():
    try:
        from darshan.backend import cffi_backend as be  # lazy: PyDarshan (an optional extra) only to import logs
    except ImportError:
        raise IolabError("reading Darshan logs needs PyDarshan: pip install 'iolab[darshan]' (or pip install darshan)") \
            from None
    return be


def _spread(hist: np.ndarray, width: float, start: np.ndarray, end: np.ndarray, nbytes: np.ndarray) -> None:
    """Add each interval's bytes to the bins it overlaps, in proportion to the overlap."""
    n = len(hist)
    start = np.clip(start, 0.0, n * width)
    end = np.clip(np.maximum(end, start), 0.0, n * width)
    i0 = np.minimum((start / width).astype(np.int64), n - 1)
    i1 = np.minimum((end / width).astype(np.int64), n - 1)
    one = i0 == i1
    np.add.at(hist, i0[one], nbytes[one])
    for a, b, k0, k1, v in zip(start[~one], end[~one], i0[~one], i1[~one], nbytes[~one]):
        edges = np.clip(np.arange(k0, k1 + 2) * width, a, b)
        hist[k0:k1 + 1] += v * np.diff(edges) / (b - a)


class _Log:
    """One open log, read record by record (the C reader is sequential per module)."""

    def __init__(self, be, path: Path):
        self.be, self.path = be, path
        self.log = be.log_open(str(path))
        if self.log["handle"] == be.ffi.NULL:
            raise DarshanLogError(path, "not a Darshan log (its header cannot be read)")
        try:
            self.job = be.log_get_job(self.log)
            self.modules = be.log_get_modules(self.log)
        except Exception as exc:
            self.close()
            raise DarshanLogError(path, f"not a Darshan log ({exc})") from None

    def close(self) -> None:
        if self.log["handle"] != self.be.ffi.NULL:
            self.be.log_close(self.log)
            self.log["handle"] = self.be.ffi.NULL

    def _raw(self, mod: str):
        """The next record buffer of ``mod`` (a void **), or None at the end; raises if the data is bad."""
        be = self.be
        buf = be.ffi.new("void **")
        r = be.libdutil.darshan_log_get_record(self.log["handle"], self.modules[mod]["idx"], buf)
        if r < 0:
            raise DarshanLogError(self.path, f"truncated or corrupt {mod} data (the log ends inside its records)")
        return buf if r > 0 else None

    def records(self, mod: str) -> Iterator[dict[str, Any]]:
        be = self.be
        while (buf := self._raw(mod)) is not None:
            rec = be._make_generic_record(be.ffi.cast(be._structdefs[mod], buf), mod, "dict")
            be.libdutil.darshan_free(buf[0])
            yield rec

    def dxt(self, mod: str) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        """(host name, write segments, read segments) per DXT record."""
        be = self.be
        size = be.ffi.sizeof("struct dxt_file_record")
        while (buf := self._raw(mod)) is not None:
            rec = be.ffi.cast(be._structdefs[mod], buf)[0]
            w, r = int(rec.write_count), int(rec.read_count)
            host = be.ffi.string(rec.hostname).decode("utf-8", "replace")
            seg = np.frombuffer(be.ffi.buffer(be.ffi.cast("char *", buf[0]) + size, (w + r) * _SEGMENT.itemsize),
                                dtype=_SEGMENT).copy()
            be.libdutil.darshan_free(buf[0])
            yield host, seg[:w], seg[w:]


def read_darshan(path: str | Path, *, bins: int = 1024, ranks_per_node: int = 1) -> DarshanJob:
    """Read one log (see the module doc); raises :class:`DarshanLogError` naming the file."""
    p = Path(path)
    why = not_a_file(p, "Darshan log")
    if why:
        raise DarshanLogError(p, why)
    if bins < 1 or ranks_per_node < 1:
        raise ValueError("bins and ranks_per_node must be >= 1")
    be = _backend()
    with _quiet_stderr():
        log = _Log(be, p)
        try:
            return _read(log, p, bins, ranks_per_node)
        finally:
            log.close()


def _read(log: _Log, p: Path, bins: int, ranks_per_node: int) -> DarshanJob:
    job = log.job
    run_time = float(job.get("run_time") or 0.0)
    if run_time <= 0:
        run_time = float(job["end_time_sec"] - job["start_time_sec"]) + 1.0
    width = max(run_time, 1e-6) / bins
    mods = log.modules
    # the C reader reads modules in the log's order; DXT modules come after the counters
    order = sorted(mods, key=lambda m: mods[m]["idx"])
    totals = {m: {"read": 0, "write": 0} for m in MODULES if m in mods}
    hist = {m: {"read": np.zeros(bins), "write": np.zeros(bins)} for m in MODULES if m in mods}
    hosts: set[str] = set()
    dxt_hist = {"read": np.zeros(bins), "write": np.zeros(bins)}
    records = segments = 0
    has_dxt = "DXT_POSIX" in mods
    for mod in order:
        if mod in MODULES:
            pre = _PREFIX[mod]
            for rec in log.records(mod):
                records += 1
                c, f = rec["counters"], rec["fcounters"]
                for kind, cname, fname in (("read", "BYTES_READ", "READ"), ("write", "BYTES_WRITTEN", "WRITE")):
                    b = int(c.get(f"{pre}_{cname}", 0))
                    if b <= 0:
                        continue
                    totals[mod][kind] += b
                    a = float(f.get(f"{pre}_F_{fname}_START_TIMESTAMP", 0.0))
                    e = float(f.get(f"{pre}_F_{fname}_END_TIMESTAMP", 0.0))
                    if e > 0 or a > 0:
                        _spread(hist[mod][kind], width, np.array([a]), np.array([e]), np.array([float(b)]))
        elif mod in ("DXT_POSIX", "DXT_MPIIO"):
            for host, wseg, rseg in log.dxt(mod):
                records += 1
                if host:
                    hosts.add(host)
                if mod != "DXT_POSIX":
                    continue
                segments += len(wseg) + len(rseg)
                for kind, seg in (("write", wseg), ("read", rseg)):
                    if len(seg):
                        _spread(dxt_hist[kind], width, seg["start"], seg["end"], seg["length"].astype(float))
    if "POSIX" in totals:
        vol_mods = ["POSIX"] + (["STDIO"] if "STDIO" in totals else [])
    else:
        vol_mods = [m for m in ("MPI-IO", "STDIO") if m in totals]
    out = {}
    for kind in ("read", "write"):
        shape = np.zeros(bins)
        for m in vol_mods:
            h = dxt_hist[kind] if (m == "POSIX" and has_dxt and dxt_hist[kind].sum() > 0) else hist[m][kind]
            want = totals[m][kind]
            if want <= 0:
                continue
            if h.sum() <= 0:  # bytes without timestamps: over the whole run
                h = np.ones(bins)
            shape += h * (want / h.sum())
        out[kind] = shape
    nodes = len(hosts) if hosts else int(math.ceil(int(job["nprocs"]) / ranks_per_node))
    return DarshanJob(
        path=str(p), jobid=int(job["jobid"]), uid=int(job["uid"]), nprocs=int(job["nprocs"]),
        start=float(job["start_time_sec"]) + float(job.get("start_time_nsec", 0)) * 1e-9, run_time=run_time,
        nodes=max(1, nodes), nodes_from="DXT host names" if hosts else f"ranks / {ranks_per_node} per node",
        hosts=len(hosts), modules=totals,
        read_bytes=sum(totals[m]["read"] for m in vol_mods), write_bytes=sum(totals[m]["write"] for m in vol_mods),
        volume_from=" + ".join(vol_mods) or "none",
        timing_from="DXT_POSIX segments" if has_dxt and segments else "counter timestamps",
        bin_width=width, read_hist=out["read"], write_hist=out["write"], records=records, segments=segments,
    )


def job_phases(job: DarshanJob, unit_bytes: float) -> list[dict[str, float]]:
    """Alternating compute / read / write phases of the job (volumes in units of ``unit_bytes``)."""
    r, w = job.read_hist, job.write_hist
    active = (r + w) > 0
    phases: list[dict[str, float]] = []
    i, n = 0, len(active)
    while i < n:
        k = i
        while k < n and active[k] == active[i]:
            k += 1
        if active[i]:
            rb, wb = float(r[i:k].sum()), float(w[i:k].sum())
            if rb > 0:
                phases.append({"read": rb / unit_bytes})
            if wb > 0:
                phases.append({"write": wb / unit_bytes})
        else:
            phases.append({"compute": (k - i) * job.bin_width})
        i = k
    return phases or [{"compute": job.run_time}]


def emulable_phases(phases: list[dict[str, float]], min_units: float) -> tuple[list[dict[str, float]], dict[str, float]]:
    """Phases a real run can replay: every I/O phase at least ``min_units``, no read before a write.

    An I/O phase below ``min_units`` is carried into the next phase of the same
    kind (a remainder at the end into the last phase kept), its compute
    neighbours joining; a kind whose whole volume is below ``min_units`` is
    raised to it; reads before the first write get a write of their volume at
    the start (a real run reads only what it wrote: the input files of the
    traced job existed before it).  Returns the phases and what changed
    (``merged`` phases, ``added`` units).
    """
    out: list[dict[str, float] | None] = [dict(p) for p in phases]
    merged = 0
    added = 0.0
    for kind in ("read", "write"):
        idx = [i for i, p in enumerate(out) if p is not None and kind in p]
        if not idx:
            continue
        total = sum(out[i][kind] for i in idx)  # type: ignore[index]
        if total < min_units:  # one phase of min_units where the largest was
            keep = max(idx, key=lambda i: out[i][kind])  # type: ignore[index]
            for i in idx:
                if i != keep:
                    out[i] = None
                    merged += 1
            out[keep][kind] = min_units  # type: ignore[index]
            added += min_units - total
            continue
        carry = 0.0
        kept: list[int] = []
        for i in idx:
            v = out[i][kind] + carry  # type: ignore[index]
            if v < min_units:
                carry, out[i] = v, None
                merged += 1
            else:
                out[i][kind], carry = v, 0.0  # type: ignore[index]
                kept.append(i)
        if carry > 0:  # the tail was too small: into the last phase kept
            out[kept[-1]][kind] += carry  # type: ignore[index]
    # join compute phases that became neighbours
    joined: list[dict[str, float]] = []
    for p in (x for x in out if x is not None):
        if "compute" in p and joined and "compute" in joined[-1]:
            joined[-1]["compute"] += p["compute"]
        else:
            joined.append(p)
    first = next((k for p in joined for k in p if k != "compute"), None)
    if first == "read":
        before = 0.0
        for p in joined:
            if "write" in p:
                break
            before += p.get("read", 0.0)
        joined.insert(0, {"write": before})
        added += before
    return joined, {"merged": float(merged), "added": added}


def _ident(job: DarshanJob, seen: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]", "-", f"j{job.jobid}")[:56]
    ident, k = base, 1
    while ident in seen:
        k += 1
        ident = f"{base}-{k}"
    seen.add(ident)
    return ident


def releases(jobs: list[DarshanJob]) -> tuple[list[float], float]:
    """Each log's release (submit) in seconds, and the idle time left out.

    A log is released at its start relative to the earliest log, with every stretch of time in
    which none of the logs ran cut out: logs that ran together keep their offsets, logs recorded
    months apart follow one another (the next starts when the last one before it ended).  Returns
    the releases, in the order of ``jobs``, and the seconds cut."""
    order = sorted(range(len(jobs)), key=lambda i: jobs[i].start)
    out = [0.0] * len(jobs)
    cut = 0.0
    ended = None  # the latest end of the logs so far (their own clock)
    t0 = jobs[order[0]].start if jobs else 0.0
    for i in order:
        j = jobs[i]
        if ended is not None and j.start > ended:
            cut += j.start - ended
        out[i] = round(j.start - t0 - cut, 6)
        ended = j.start + j.run_time if ended is None else max(ended, j.start + j.run_time)
    return out, cut


def _mbs(rate: float) -> str:
    mb = rate / 1e6
    return f"{mb:,.0f} MB/s" if mb >= 100 else f"{mb:.4g} MB/s"


def own_rate(job: DarshanJob) -> float:
    """The rate the log observed, bytes per second: its bytes over the time of its bins with I/O
    (0 for a log without I/O)."""
    moved = job.read_bytes + job.write_bytes
    return moved / job.io_time if moved > 0 and job.io_time > 0 else 0.0


def io_spec(jobs: list[DarshanJob], *, unit_bytes: int, bandwidth: float | None = None, io_nodes: int = 1,
            nodes_per_io_node: int | None = None, policy: str = "fifo", name: str = "darshan",
            min_io_units: float | None = None, volumes: str = "time") -> tuple[dict[str, Any], list[str]]:
    """An I/O experiment (``kind: io``) whose apps replay the logs' I/O pattern.

    The apps share one I/O node (mapping ``none``; ``nodes_per_io_node`` defaults to the sum of
    the apps' nodes) of one ``bandwidth`` (data units per second), by default the rate the logs
    observed together: their bytes over the time their bins show I/O.  Logs recorded on different
    systems (or with different contention) observed different rates; with ``volumes="time"`` each
    app's I/O volumes are scaled by (bandwidth / its log's own rate), so that alone on the platform
    each I/O phase takes the time it took in its log (one log: the factor is 1 at the default
    bandwidth).  ``volumes="bytes"`` keeps the logs' bytes: an app's I/O then takes bytes /
    bandwidth.  Releases: :func:`releases`.  With ``min_io_units`` the phases go through
    :func:`emulable_phases`.  Returns the spec and notes on what changed.
    """
    if volumes not in ("time", "bytes"):
        raise ValueError(f"volumes must be 'time' or 'bytes', not {volumes!r}")
    if bandwidth is None:
        moved = sum(j.read_bytes + j.write_bytes for j in jobs)
        busy = sum(j.io_time for j in jobs)
        bandwidth = moved / busy / unit_bytes if moved > 0 and busy > 0 else 1.0
    rel, cut = releases(jobs)
    seen: set[str] = set()
    apps = []
    notes = []
    if cut > 0:
        notes.append(f"releases: {cut:,.0f} s in which none of the logs ran left out (the logs did not all run "
                     "together; each follows the one before it)")
    for j, release in zip(jobs, rel):
        ident = _ident(j, seen)
        rate = own_rate(j)
        factor = bandwidth * unit_bytes / rate if volumes == "time" and rate > 0 else 1.0
        phases = job_phases(j, unit_bytes / factor)
        if not math.isclose(factor, 1.0, rel_tol=1e-9):
            notes.append(f"{ident}: I/O volumes x {factor:.4g} (its log's rate {_mbs(rate)}, the platform's "
                         f"{_mbs(bandwidth * unit_bytes)}): its I/O takes its log's {j.io_time:,.1f} s")
        if min_io_units is not None:
            phases, ch = emulable_phases(phases, min_io_units)
            if ch["merged"] or ch["added"]:
                notes.append(f"{ident}: for a real run, {ch['merged']:g} I/O phases below {min_io_units:g} units "
                             f"merged, {ch['added']:g} units added")
        apps.append({"id": ident, "nodes": j.nodes, "release": release, "phases": phases})
    return {
        "kind": "io", "name": name,
        "platform": {"io_nodes": io_nodes, "nodes_per_io_node": nodes_per_io_node or sum(a["nodes"] for a in apps),
                     "bandwidth": float(bandwidth)},
        "policy": policy, "mapping": "none", "emulator": {"unit_bytes": int(unit_bytes)}, "apps": apps,
    }, notes


LACKNER_PLATFORM = {"lps": {"rate": "1 GB/s"}, "hps": {"rate": "15 GB/s", "capacity": "2048 GB"},
                    "stage_rate": "5 GB/s"}


def batch_spec(jobs: list[DarshanJob], *, nodes: int | None = None, scheduler: str = "easy",
               name: str = "darshan") -> dict[str, Any]:
    """A batch experiment (``kind: batch``): one job per log, input = bytes read, output = bytes written.

    Submit = the log's start relative to the earliest, with the time no log ran cut out
    (:func:`releases`; Darshan records no submission); walltime = runtime = the run time (no request recorded);
    ``storage`` (the HPS request) = input + output.  The platform is
    lackner2019's (edit it); its nodes default to the largest job.
    """
    seen: set[str] = set()
    out = []
    for j, submit in zip(jobs, releases(jobs)[0]):
        out.append({"id": _ident(j, seen), "user": str(j.uid), "submit": submit, "nodes": j.nodes,
                    "walltime": max(j.run_time, 1.0), "runtime": j.run_time, "input": j.read_bytes,
                    "output": j.write_bytes, "storage": j.read_bytes + j.write_bytes})
    cap = max(2048e9, max(j["storage"] for j in out))
    platform = {"nodes": nodes or max(j["nodes"] for j in out), **LACKNER_PLATFORM,
                "hps": {"rate": "15 GB/s", "capacity": cap}}
    return {"kind": "batch", "name": name, "platform": platform, "scheduler": scheduler,
            "workload": {"source": "inline", "jobs": out}}


__all__ = ["DarshanJob", "DarshanLogError", "MODULES", "batch_spec", "emulable_phases", "io_spec", "job_phases",
           "own_rate", "read_darshan", "releases"]
