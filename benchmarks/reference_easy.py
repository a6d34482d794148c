#!/usr/bin/env python3
"""The simplest correct batch scheduler simulator: FCFS, EASY and both conservative backfillings on an SWF trace.

An independent second opinion on iolab's batch simulator (``iolab.sim.batch``) for compute-only (LPS)
workloads, and the speed floor it is measured against (docs/performance.md, "Independent references").
One file, standard library only, no iolab import::

    python benchmarks/reference_easy.py TRACE.swf[.gz] [--policy fcfs|easy|conservative|conservative-reinsert] [--nodes N]
                                        [--csv OUT.csv|-] [--json] [--iolab-runtime0]

Prints a summary (jobs, makespan, mean wait, decisions, wall time, peak memory); ``--json`` prints it as
one JSON object; ``--csv`` writes ``job,submit,start,end`` for every job in file order.

Reading the SWF file (the rules of iolab's importer ``iolab/workloads/swf.py``, reproduced here)
-------------------------------------------------------------------------------------------------
- gzip is detected from the content (magic bytes ``1f 8b``), not the name; text is UTF-8, bad bytes
  replaced; blank lines are skipped.
- ``;`` lines are the header: ``; Key: value`` with a key without spaces; the first occurrence of a key
  wins.  ``MaxNodes`` and ``MaxProcs`` are read as the integer before the first space; processors per
  node = MaxProcs / MaxNodes when both are known, non-zero and divide exactly, else 1.
- Every other line is a job record of exactly 18 whitespace-separated numbers (Python ``float`` syntax);
  a non-finite value, an integer field (job, alloc. procs, req. procs, status, user, group, executable,
  queue, partition, preceding job) with a fractional value, a job number that is unknown or <= 0, or a
  submit time that is unknown or < 0 makes the line malformed: an error naming file and line (exit 2).
  A value of exactly ``-1`` means *unknown*.
- processors = requested processors (field 8) if known and non-zero, else allocated processors (field 5).
  A record whose processors are unknown, zero or negative is *unusable* and dropped (counted in the
  summary).  Note the rule's edge: a negative requested count (other than -1) is taken as given, so the
  record is dropped even when field 5 is known.  nodes = ceil(processors / processors per node).
- runtime = run time (field 4) if known and >= 0, else 0 (a job cancelled before it ran: it starts and
  ends at the same instant).
- walltime (what the scheduler plans with) = requested time (field 9) if known and > 0, else
  max(runtime, 1 s).  The runtime may exceed it (logs record such jobs).
- Jobs keep file order; submissions at one instant are queued in file order.  A duplicate job number or
  a job wider than the machine is an error (exit 2), as in iolab.

The machine and the schedule (iolab's documented semantics, docs/batch-policies.md)
------------------------------------------------------------------------------------
- ``--nodes`` compute nodes (default: the header's MaxNodes); a job holds its nodes from its start to
  start + runtime.  No I/O, no storage tier.
- The scheduler decides at every instant at which something happened (submissions, job ends), after all
  of that instant's events are applied.  It plans each running job to end at start + walltime; a job
  that has overrun its walltime (planned end <= now) is assumed to end 1 s from now.
- FCFS: start queued jobs in submit order while the first one fits in the free nodes; nobody overtakes.
- EASY (Lifka's, textbook): start jobs in order while they fit; the first that does not is the head.
  Its reservation (the *shadow time*) is the earliest planned end at which enough nodes are free; the
  *extra* nodes are those free then beyond what the head needs.  Every later job (submit order) starts
  now if it fits in the free nodes and either ends by the shadow time or uses at most the extra nodes
  (which it then consumes).
- Conservative-reinsert (soysal2019's compression): at every decision, every waiting job is
  (re)inserted in submit order at the earliest time >= now at which it fits for its walltime in the
  profile of free nodes (running jobs, then the jobs inserted before it); the jobs placed at *now* start.
  The plan is rebuilt from scratch each time, so nothing is kept between decisions.
- Conservative (Mu'alem-Feitelson 2001): a job gets its reservation at the first decision after its
  submission, at the earliest fit behind the reservations already held; at every later decision
  (compression) the held reservations are re-placed one by one in order of their current start (ties:
  submit order) at their earliest fit >= now, so a reservation never moves later; then the new jobs,
  in submit order.  Jobs placed at *now* start.  It decides at every instant with a waiting job, even
  with no free node (a reservation is made at arrival).
- A job of runtime 0 ends at its start instant, and the nodes it frees are available to another decision
  *at that same instant* (the scheduler decides again until nothing ends at that instant).  iolab before
  the fix of issue 8 item 7a takes no decision then; ``--iolab-runtime0`` reproduces that behaviour (the
  freed nodes wait for the next event) so that every other difference can be checked to be zero.
"""

from __future__ import annotations

import argparse
import bisect
import csv
import gzip
import heapq
import json
import math
import resource
import sys
import time

FIELDS = ("job", "submit", "wait", "run_time", "alloc_procs", "avg_cpu", "used_mem", "req_procs", "req_time",
          "req_mem", "status", "user", "group", "executable", "queue", "partition", "preceding_job", "think_time")
INT_FIELDS = {0, 4, 7, 10, 11, 12, 13, 14, 15, 16}  # positions of the integer fields
OVERRUN_GRACE = 1.0  # a job past its planned end is assumed to end this long after now


class InputError(Exception):
    """Bad input: the message names the file (and line) and the reason."""


# ------------------------------------------------------------------------------------------------ reading
class Workload:
    """Jobs as parallel lists (file order)."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.submit: list[float] = []
        self.nodes: list[int] = []
        self.walltime: list[float] = []
        self.runtime: list[float] = []
        self.header: dict[str, str] = {}
        self.unusable = 0

    def header_int(self, key: str) -> int | None:
        v = self.header.get(key)
        try:
            return int(v.split()[0]) if v else None
        except ValueError:
            return None


def _parse(text: str) -> list[float | None] | str:
    parts = text.split()
    if len(parts) != 18:
        return f"expected 18 fields, found {len(parts)}"
    try:
        vals = list(map(float, parts))
    except ValueError:
        vals = None
    if vals is None or not math.isfinite(sum(vals)):  # find the culprit, slowly
        for i, tok in enumerate(parts):
            try:
                v = float(tok)
            except ValueError:
                return f"field {i + 1} ({FIELDS[i]}) is not a number: {tok!r}"
            if not math.isfinite(v):
                return f"field {i + 1} ({FIELDS[i]}) is not finite: {tok!r}"
        vals = list(map(float, parts))  # a sum that overflowed: every value is finite
    for i in INT_FIELDS:
        v = vals[i]
        if v != int(v) and v != -1:
            return f"field {i + 1} ({FIELDS[i]}) must be an integer: {parts[i]!r}"
    out: list[float | None] = [None if v == -1 else v for v in vals]
    if out[0] is None or out[0] <= 0:
        return "job number (field 1) must be a positive integer"
    if out[1] is None or out[1] < 0:
        return "submit time (field 2) must be >= 0"
    return out


def read_swf(path: str) -> Workload:
    try:
        with open(path, "rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        fh = gzip.open(path, "rt", encoding="utf-8", errors="replace") if gz else \
            open(path, "rt", encoding="utf-8", errors="replace")
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    w = Workload()
    records = []
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            text = raw.strip()
            if not text:
                continue
            if text[0] == ";":
                key, colon, value = text[1:].strip().partition(":")
                key = key.strip()
                if colon and key and " " not in key:
                    w.header.setdefault(key, value.strip())
                continue
            rec = _parse(text)
            if isinstance(rec, str):
                raise InputError(f"{path}:{lineno}: {rec}")
            records.append((lineno, rec))
    n, p = w.header_int("MaxNodes"), w.header_int("MaxProcs")
    ppn = p // n if n and p and p % n == 0 else 1
    seen: dict[str, int] = {}
    for lineno, r in records:
        procs = r[7] if r[7] else r[4]  # requested, else allocated (None and 0 fall through)
        if not procs or procs <= 0:
            w.unusable += 1
            continue
        jid = str(int(r[0]))
        if jid in seen:
            raise InputError(f"{path}:{lineno}: job number {jid} repeats line {seen[jid]}")
        seen[jid] = lineno
        runtime = r[3] if r[3] is not None and r[3] >= 0 else 0.0
        w.ids.append(jid)
        w.submit.append(r[1])
        w.nodes.append(int(math.ceil(procs / ppn)))
        w.walltime.append(r[8] if r[8] is not None and r[8] > 0 else max(runtime, 1.0))
        w.runtime.append(runtime)
    return w


# ------------------------------------------------------------------------------------------------ policies
def decide_fcfs(now, free, queue, nodes, walltime, running):
    starts = []
    for j in queue:
        if nodes[j] > free:
            break
        starts.append(j)
        free -= nodes[j]
    return starts


def decide_easy(now, free, queue, nodes, walltime, running):
    starts = []
    k = 0
    while k < len(queue) and nodes[queue[k]] <= free:  # in order while they fit
        j = queue[k]
        starts.append(j)
        free -= nodes[j]
        k += 1
    if k == len(queue) or free == 0:
        return starts
    # the head: shadow time and extra nodes, from the planned ends (running jobs + those just started),
    # computed when a later job first fits in the free nodes
    need = nodes[queue[k]]
    shadow = None
    for j in queue[k + 1:]:
        n = nodes[j]
        if n > free:
            continue
        if shadow is None:
            ends = sorted([(e if e > now else now + OVERRUN_GRACE, m) for m, e in running.values()]
                          + [(now + walltime[i], nodes[i]) for i in starts])
            avail, i = free, 0
            while avail < need:
                avail += ends[i][1]
                i += 1
            shadow = ends[i - 1][0]
            while i < len(ends) and ends[i][0] == shadow:  # every release at the shadow time counts
                avail += ends[i][1]
                i += 1
            extra = avail - need
        if now + walltime[j] <= shadow:
            starts.append(j)
            free -= n
        elif n <= extra:
            starts.append(j)
            free -= n
            extra -= n
        if free == 0:
            break
    return starts


def free_profile(now, free, running):
    """The free nodes as a step function: segment i covers [times[i], times[i+1]), the last runs forever."""
    rel: dict[float, int] = {}
    for n, e in running.values():
        t = e if e > now else now + OVERRUN_GRACE
        rel[t] = rel.get(t, 0) + n
    times = [now]
    avail = [free]
    for t in sorted(rel):
        times.append(t)
        avail.append(avail[-1] + rel[t])
    return times, avail


def place(times, avail, n, d):
    """Reserve n nodes for d seconds at the earliest breakpoint from which they stay free; its start."""
    i = 0
    while True:
        s, end, k = times[i], times[i] + d, i
        while k < len(times) and times[k] < end:
            if avail[k] < n:
                break
            k += 1
        else:
            break  # fits from times[i]
        i = k + 1  # blocked at segment k: try from the next breakpoint
    # reserve [s, end): split the profile at the end, then debit
    b = bisect.bisect_left(times, end, i)
    if b == len(times) or times[b] != end:
        times.insert(b, end)
        avail.insert(b, avail[b - 1])
    for k in range(i, b):
        avail[k] -= n
    return s


def decide_conservative(now, free, queue, nodes, walltime, running):
    times, avail = free_profile(now, free, running)
    starts = []
    for j in queue:
        if place(times, avail, nodes[j], walltime[j]) == now:
            starts.append(j)
        if avail[0] == 0:  # nothing more can start now; later jobs only matter to later decisions
            break
    return starts


class MualemFeitelson:
    """Conservative backfilling with reservations kept between decisions (see the module's doc)."""

    def __init__(self):
        self.held: dict[int, float] = {}  # job -> start of its reservation at the last decision

    def __call__(self, now, free, queue, nodes, walltime, running):
        rank = {j: i for i, j in enumerate(queue)}
        known = sorted((j for j in queue if j in self.held), key=lambda j: (self.held[j], rank[j]))
        fresh = [j for j in queue if j not in self.held]
        times, avail = free_profile(now, free, running)
        self.held = {}
        starts = []
        for j in known + fresh:
            s = place(times, avail, nodes[j], walltime[j])
            if s == now:
                starts.append(j)
            else:
                self.held[j] = s
        return starts


POLICIES = {"fcfs": decide_fcfs, "easy": decide_easy, "conservative": MualemFeitelson,
            "conservative-reinsert": decide_conservative}
STATEFUL = {"conservative"}  # decides at every instant with a waiting job, even with no free node


# ------------------------------------------------------------------------------------------------ simulation
def simulate(w: Workload, total_nodes: int, policy: str, iolab_runtime0: bool = False):
    """Start and end time of every job (file order) and the number of decisions."""
    decide = POLICIES[policy]() if policy in STATEFUL else POLICIES[policy]
    nj = len(w.ids)
    for j in range(nj):
        if w.nodes[j] > total_nodes:
            raise InputError(f"job {w.ids[j]} needs {w.nodes[j]} nodes; the machine has {total_nodes}")
    submit, nodes, walltime, runtime = w.submit, w.nodes, w.walltime, w.runtime
    order = sorted(range(nj), key=lambda j: (submit[j], j))
    start = [math.nan] * nj
    end = [math.nan] * nj
    queue: list[int] = []  # submit order
    running: dict[int, tuple[int, float]] = {}  # job -> (nodes, planned end)
    heap: list[tuple[float, int]] = []  # (end, job)
    free = total_nodes
    nxt = 0
    decisions = 0
    while nxt < nj or heap:
        t = heap[0][0] if heap else math.inf
        if nxt < nj and submit[order[nxt]] < t:
            t = submit[order[nxt]]
        while heap and heap[0][0] == t:
            _, j = heapq.heappop(heap)
            free += nodes[j]
            del running[j]
        while nxt < nj and submit[order[nxt]] == t:
            queue.append(order[nxt])
            nxt += 1
        first = True
        while queue and (free > 0 or (first and policy in STATEFUL)):
            first = False
            decisions += 1
            starts = decide(t, free, queue, nodes, walltime, running)
            if not starts:
                break
            ended_now = []
            for j in starts:
                if nodes[j] > free:
                    raise AssertionError(f"policy {policy} overbooks the machine with job {w.ids[j]} at {t}")
                free -= nodes[j]
                start[j] = t
                if runtime[j] > 0:
                    end[j] = t + runtime[j]
                    running[j] = (nodes[j], t + walltime[j])
                    heapq.heappush(heap, (end[j], j))
                else:
                    end[j] = t
                    ended_now.append(j)
            k = 0  # the policies start a prefix of the queue, then (backfilling) some later jobs
            while k < len(starts) and starts[k] == queue[k]:
                k += 1
            del queue[:k]
            for j in starts[k:]:
                queue.remove(j)
            for j in ended_now:  # runtime 0: it ends at once and frees its nodes at this instant
                free += nodes[j]
            if not ended_now or iolab_runtime0:
                break  # otherwise decide again at the same instant
    if queue:
        raise RuntimeError(f"{len(queue)} job(s) never started; first: {w.ids[queue[0]]}")
    return start, end, decisions


def summary(w: Workload, start, end) -> dict:
    nj = len(w.ids)
    return {"jobs": nj, "unusable": w.unusable, "runtime0_jobs": sum(r == 0 for r in w.runtime),
            "makespan": (max(end) - min(w.submit)) if nj else 0.0,
            "mean_wait": (sum(s - q for s, q in zip(start, w.submit)) / nj) if nj else 0.0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("swf", help="SWF trace, plain or gzip")
    ap.add_argument("--policy", choices=sorted(POLICIES), default="easy")
    ap.add_argument("--nodes", type=int, help="compute nodes (default: the header's MaxNodes)")
    ap.add_argument("--csv", help="write job,submit,start,end here ('-' for stdout)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--iolab-runtime0", action="store_true",
                    help="no new decision when a runtime-0 job ends (iolab before issue 8 item 7a)")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        w = read_swf(a.swf)
        nodes = a.nodes if a.nodes is not None else w.header_int("MaxNodes")
        if not nodes or nodes < 1:
            raise InputError(f"{a.swf}: no MaxNodes in the header and no --nodes given"
                             if a.nodes is None else f"--nodes must be >= 1, got {a.nodes}")
        start, end, decisions = simulate(w, nodes, a.policy, a.iolab_runtime0)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if a.csv:
        out = sys.stdout if a.csv == "-" else open(a.csv, "w", newline="")
        wr = csv.writer(out)
        try:
            wr.writerow(["job", "submit", "start", "end"])
            wr.writerows(zip(w.ids, map(repr, w.submit), map(repr, start), map(repr, end)))
        except BrokenPipeError:  # e.g. piped into head
            sys.stdout = None
            return 0
        if out is not sys.stdout:
            out.close()
    s = summary(w, start, end)
    s.update(policy=a.policy, nodes=nodes, decisions=decisions, wall_seconds=time.perf_counter() - t0,
             peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    if a.json:
        print(json.dumps(s))
    elif a.csv != "-":
        print(f"{a.swf}: {a.policy}, {s['jobs']} jobs ({s['unusable']} unusable, {s['runtime0_jobs']} of runtime 0) "
              f"on {nodes} nodes, "
              f"{decisions} decisions\nmakespan {s['makespan']:.6g} s   mean wait {s['mean_wait']:.6g} s\n"
              f"wall {s['wall_seconds']:.3f} s   peak memory {s['peak_rss_mb']:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
