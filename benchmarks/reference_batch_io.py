#!/usr/bin/env python3
"""The simplest correct batch simulator with I/O: FCFS and EASY on node counts, jobs' I/O on one shared LPS link.

An independent second opinion on iolab's batch simulator (``iolab.sim.batch``) for workloads whose jobs
read, checkpoint and write on the LPS tier (lackner2019 §IV-B), and a speed floor it is measured against
(docs/performance.md, "Independent references" and "Scaling").  The sibling of
``benchmarks/reference_easy.py`` (compute only, SWF input).  One file, standard library only, no iolab
import::

    python benchmarks/reference_batch_io.py JOBS.csv|JOBS.jsonl --nodes N [--policy fcfs|easy]
                                            [--lps-rate BYTES/S] [--memory-per-node BYTES]
                                            [--csv OUT.csv|-] [--json] [--exact]

Prints a summary (jobs, makespan, mean wait, mean turnaround, decisions, events, wall time, peak memory);
``--json`` prints it as one JSON object; ``--csv`` writes ``job,submit,start,end`` for every job in file
order (times as Python ``repr``, so they read back exactly).

The input
---------
- A job table, CSV with a header line, or JSON lines (one object per line; the format is chosen by the
  first non-blank character: ``{`` is JSON lines).  Columns/keys: ``id, submit, nodes, walltime,
  runtime, input, output, data`` (others are ignored; ``input``, ``output`` and ``data`` default to 0).
  Times in seconds, volumes in bytes.
- ``id`` is any non-empty text and must be unique; ``nodes`` a positive integer no larger than
  ``--nodes``; ``submit``, ``runtime``, ``input``, ``output``, ``data`` finite and >= 0; ``walltime``
  finite and > 0.  Anything else is an error naming the file, line and field (exit 2, nothing written).
- ``--lps-rate`` R (bytes/s, default 1e9) and ``--memory-per-node`` M (bytes, default 16e9) are the
  platform's ``lps.rate`` and ``memory_per_node``.

A job's steps on LPS (lackner2019 §IV-B; iolab's ``iolab/workloads/steps.py``)
------------------------------------------------------------------------
- The runtime is the job's time alone on LPS, I/O included, so its compute time is
  ``c = max(0, runtime - (input + output + data) / R)``.
- A job without I/O (``input + output + data == 0``) is one compute step of ``runtime``.
- Otherwise, in order: read ``input`` bytes (if > 0); then ``k`` compute segments of ``c / (k + 1)``
  each followed by a checkpoint write of ``data / k`` bytes, where ``k = ceil(data / (nodes * M))``
  (a checkpoint holds at most ``nodes * M`` bytes; k = 0 when data = 0; the ceiling forgives a ratio
  within 1e-12 above an integer); then the last compute segment (``c`` when k = 0); then write
  ``output`` bytes (if > 0).
- A compute step takes its seconds; a step of 0 s ends at the instant it begins.  A read or write is
  one stream on the LPS link.
- A job holds its nodes from its start to the end of its last step.

The LPS link: processor sharing
-------------------------------
- With ``k`` streams on the link each progresses at ``R / k``; nothing else (no latency, no capacity,
  compute does not interfere).
- Simulated the plain way: at every event instant every stream is advanced by ``(t - last) * R / k``;
  the link's next completion is ``last + min(remaining) * k / R``; when it is the next event, the
  streams whose remaining bytes are at most ``least * (1 + 1e-9) + 1e-6`` end there (``--exact``:
  exactly the least).  O(k) per event.
- ``--exact`` runs the same rules in rational arithmetic (``fractions.Fraction``; the input floats are
  taken exactly): no rounding anywhere, slow.  The float runs of two correct programs drift apart on
  long, crowded runs (this model amplifies rounding: a stream ending a few ulps late delays its job's
  next step and slows every other stream a little); the exact run says how far each is from the
  schedule the rules define.

The schedule (iolab's documented semantics, docs/batch-policies.md; ``middleware/policies/batch/backfill.py``)
------------------------------------------------------------------------------------------------------------
- ``--nodes`` identical nodes; the scheduler counts nodes only (no node ids, no storage).
- Jobs are queued in submit order; ties in file order.
- The scheduler decides at every instant at which a job was submitted or a job ended, after *all* of
  that instant's events are applied (submissions, compute ends, link completions and the steps they
  start).  A decision only at such instants: a step change inside a running job is no decision.
- It plans each running job to end at ``start + walltime`` (the reservation is walltime based, the
  actual end is whatever the job's steps take: I/O contention makes jobs overrun); a job whose planned
  end is <= now is assumed to end 1 s from now.
- FCFS: start queued jobs in submit order while the first one fits in the free nodes; nobody overtakes.
- EASY (Lifka's): start jobs in order while they fit; the first that does not is the head.  Its
  reservation (the *shadow time*) is the earliest planned end at which enough nodes are free (every
  release at that instant counted); the *extra* nodes are those free then beyond what the head needs.
  Every later job (submit order) starts now if it fits in the free nodes and either ends by the shadow
  time (``now + walltime <= shadow``) or uses at most the extra nodes (which it then consumes).  The
  jobs started earlier in this decision count as running jobs planned to end at ``now + walltime``.
- A started job whose steps all take 0 (runtime 0, no I/O) ends at its start instant; its nodes are
  available to another decision at that same instant (the scheduler decides again until nothing ends).
"""

from __future__ import annotations

import argparse
import csv
import heapq
import json
import math
import resource
import sys
import time
from fractions import Fraction

OVERRUN_GRACE = 1  # a job past its planned end is assumed to end this long after now
FIELDS = ("id", "submit", "nodes", "walltime", "runtime", "input", "output", "data")
OPTIONAL = {"input", "output", "data"}
LINK_TOL = 1e-9  # streams within this relative share of the least remaining end together


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
        self.input: list[float] = []
        self.output: list[float] = []
        self.data: list[float] = []


def _number(where: str, field: str, raw) -> float:
    if raw is None or raw == "":
        raise InputError(f"{where}: field {field!r} is missing")
    if isinstance(raw, bool):
        raise InputError(f"{where}: field {field!r} must be a number, got {raw!r}")
    try:
        v = float(raw)
    except (TypeError, ValueError):
        raise InputError(f"{where}: field {field!r} must be a number, got {raw!r}") from None
    if not math.isfinite(v):
        raise InputError(f"{where}: field {field!r} must be finite, got {raw!r}")
    return v


def _add(w: Workload, where: str, row: dict, seen: dict[str, str]) -> None:
    jid = row.get("id")
    if jid is None or str(jid).strip() == "":
        raise InputError(f"{where}: field 'id' is missing")
    jid = str(jid).strip()
    if jid in seen:
        raise InputError(f"{where}: field 'id': job {jid!r} repeats {seen[jid]}")
    seen[jid] = where
    vals = {}
    for f in FIELDS[1:]:
        raw = row.get(f)
        vals[f] = 0.0 if f in OPTIONAL and (raw is None or raw == "") else _number(where, f, raw)
    if vals["nodes"] != int(vals["nodes"]) or vals["nodes"] < 1:
        raise InputError(f"{where}: field 'nodes' must be a positive integer, got {row.get('nodes')!r}")
    if not vals["walltime"] > 0:
        raise InputError(f"{where}: field 'walltime' must be > 0, got {row.get('walltime')!r}")
    for f in ("submit", "runtime", "input", "output", "data"):
        if vals[f] < 0:
            raise InputError(f"{where}: field {f!r} must be >= 0, got {row.get(f)!r}")
    w.ids.append(jid)
    w.submit.append(vals["submit"])
    w.nodes.append(int(vals["nodes"]))
    w.walltime.append(vals["walltime"])
    w.runtime.append(vals["runtime"])
    w.input.append(vals["input"])
    w.output.append(vals["output"])
    w.data.append(vals["data"])


def read_jobs(path: str) -> Workload:
    """A job table, CSV with a header or JSON lines (chosen by the first non-blank character)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    w = Workload()
    seen: dict[str, str] = {}
    if text.lstrip()[:1] == "{":
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{path}:{lineno}: not JSON: {e.msg}") from None
            if not isinstance(row, dict):
                raise InputError(f"{path}:{lineno}: expected a JSON object")
            _add(w, f"{path}:{lineno}", row, seen)
        return w
    lines = text.splitlines()
    rd = csv.reader(lines)
    header = None
    for lineno, cells in enumerate(rd, start=1):
        if not cells or all(not c.strip() for c in cells):
            continue
        if header is None:
            header = [c.strip() for c in cells]
            missing = [f for f in FIELDS if f not in OPTIONAL and f not in header]
            if missing:
                raise InputError(f"{path}:{lineno}: the header lacks column(s) {', '.join(missing)}")
            continue
        if len(cells) != len(header):
            raise InputError(f"{path}:{lineno}: expected {len(header)} fields, found {len(cells)}")
        _add(w, f"{path}:{lineno}", dict(zip(header, (c.strip() for c in cells))), seen)
    if header is None:
        raise InputError(f"{path}: empty (no header line)")
    return w


# ------------------------------------------------------------------------------------------------ steps
def job_steps(inp: float, out: float, data: float, runtime: float, nodes: int, rate: float,
              memory: float) -> list[tuple[str, float]]:
    """A job's steps on LPS: ("compute", seconds) or ("io", bytes), in order."""
    io = inp + out + data
    compute = max(0, runtime - io / rate)
    if io == 0:
        return [("compute", compute)]
    k = int(math.ceil(data / (nodes * memory) - 1e-12)) if data > 0 else 0
    steps: list[tuple[str, float]] = []
    if inp > 0:
        steps.append(("io", inp))
    for _ in range(k):
        steps.append(("compute", compute / (k + 1)))
        steps.append(("io", data / k))
    steps.append(("compute", compute / (k + 1) if k else compute))
    if out > 0:
        steps.append(("io", out))
    return steps


# ------------------------------------------------------------------------------------------------ policies
def planned_ends(now, running, walltime, started):
    """(planned end, nodes) of the running jobs and of those started in this decision, sorted."""
    ends = [(e if e > now else now + OVERRUN_GRACE, n) for n, e in running.values()]
    ends += [(now + walltime[j], n) for j, n in started]
    return sorted(ends)


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
        starts.append(queue[k])
        free -= nodes[queue[k]]
        k += 1
    if k == len(queue) or free == 0:
        return starts
    need = nodes[queue[k]]
    ends = planned_ends(now, running, walltime, [(j, nodes[j]) for j in starts])
    avail, i = free, 0
    while avail < need:
        avail += ends[i][1]
        i += 1
    shadow = ends[i - 1][0]
    while i < len(ends) and ends[i][0] == shadow:  # every release at the shadow time counts
        avail += ends[i][1]
        i += 1
    extra = avail - need
    for j in queue[k + 1:]:
        n = nodes[j]
        if n > free:
            continue
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


POLICIES = {"fcfs": decide_fcfs, "easy": decide_easy}


# ------------------------------------------------------------------------------------------------ simulation
def simulate(w: Workload, total_nodes: int, policy: str, rate: float = 1e9, memory: float = 16e9,
             on_step=None, exact: bool = False):
    """Start and end time of every job (file order), the number of decisions and of event instants;
    ``on_step(job index, kind, amount, end)`` is called at the end of every step (for debugging).
    ``exact``: every time and volume a ``fractions.Fraction`` (the input floats taken exactly), no
    rounding anywhere, streams end together only when their remaining bytes are equal; the times
    returned are then the exact ones rounded once to floats."""
    decide = POLICIES[policy]
    tol, slack = (0, 0) if exact else (LINK_TOL, 1e-6)
    if exact:
        F = Fraction
        w2 = Workload()
        w2.ids, w2.nodes = w.ids, w.nodes
        for f in ("submit", "walltime", "runtime", "input", "output", "data"):
            setattr(w2, f, [F(x) for x in getattr(w, f)])
        w, rate, memory = w2, F(rate), F(memory)
    nj = len(w.ids)
    for j in range(nj):
        if w.nodes[j] > total_nodes:
            raise InputError(f"job {w.ids[j]}: field 'nodes': {w.nodes[j]} nodes; the machine has {total_nodes}")
    submit, nodes, walltime = w.submit, w.nodes, w.walltime
    order = sorted(range(nj), key=lambda j: (submit[j], j))
    start = [math.nan] * nj
    end = [math.nan] * nj
    steps: list[list] = [[] for _ in range(nj)]  # the steps a started job has left; steps[j][0] is current
    queue: list[int] = []  # submit order
    running: dict[int, tuple[int, float]] = {}  # job -> (nodes, planned end)
    timers: list[tuple[float, int]] = []  # (end of the current compute step, job)
    link: dict[int, float] = {}  # job -> bytes its stream has left
    last = 0  # the instant the link's streams were last advanced to
    free = total_nodes
    nxt = 0
    decisions = instants = 0

    def step_done(j: int, t: float) -> None:
        kind, amount = steps[j].pop(0)
        if on_step is not None:
            on_step(j, kind, amount, t)

    def begin_step(j: int, t: float) -> bool:
        """Start job j's current step at t (skipping 0 s compute steps); True if the job ended."""
        nonlocal free
        while steps[j]:
            kind, amount = steps[j][0]
            if kind == "io":
                link[j] = amount
                return False
            if amount > 0:
                heapq.heappush(timers, (t + amount, j))
                return False
            step_done(j, t)
        end[j] = t
        free += nodes[j]
        del running[j]
        return True

    while nxt < nj or timers or link:
        # the next instant: a submission, a compute end or the link's next completion
        t_link = last + min(link.values()) * len(link) / rate if link else math.inf
        t = min(submit[order[nxt]] if nxt < nj else math.inf, timers[0][0] if timers else math.inf, t_link)
        instants += 1
        # the link: advance every stream to t; at its completion the least streams end
        finished = []
        if link:
            if t == t_link:
                least = min(link.values())
                finished = [j for j, r in link.items() if r <= least * (1 + tol) + slack]
            k = len(link)
            done = (t - last) * rate / k
            for j in link:
                link[j] -= done
            for j in finished:
                del link[j]
        last = t
        changed = False
        for j in finished:
            step_done(j, t)
            changed |= begin_step(j, t)
        while timers and timers[0][0] == t:
            _, j = heapq.heappop(timers)
            step_done(j, t)
            changed |= begin_step(j, t)
        while nxt < nj and submit[order[nxt]] == t:
            queue.append(order[nxt])
            nxt += 1
            changed = True
        while changed and queue:
            changed = False
            decisions += 1
            started = decide(t, free, queue, nodes, walltime, running)
            for j in started:
                if nodes[j] > free:
                    raise AssertionError(f"policy {policy} overbooks the machine with job {w.ids[j]} at {t}")
                free -= nodes[j]
                start[j] = t
                running[j] = (nodes[j], t + walltime[j])
                steps[j] = job_steps(w.input[j], w.output[j], w.data[j], w.runtime[j], nodes[j], rate, memory)
            taken = set(started)
            queue = [j for j in queue if j not in taken]
            for j in started:
                changed |= begin_step(j, t)  # a job of no duration ends now: decide again
    if queue:
        raise RuntimeError(f"{len(queue)} job(s) never started; first: {w.ids[queue[0]]}")
    if exact:
        start, end = [float(x) for x in start], [float(x) for x in end]
    return start, end, decisions, instants


def summary(w: Workload, start, end) -> dict:
    nj = len(w.ids)
    return {"jobs": nj,
            "makespan": (max(end) - min(w.submit)) if nj else 0.0,
            "mean_wait": (sum(s - q for s, q in zip(start, w.submit)) / nj) if nj else 0.0,
            "mean_turnaround": (sum(e - q for e, q in zip(end, w.submit)) / nj) if nj else 0.0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("jobs", help="job table: CSV with a header, or JSON lines")
    ap.add_argument("--policy", choices=sorted(POLICIES), default="easy")
    ap.add_argument("--nodes", type=int, required=True, help="compute nodes")
    ap.add_argument("--lps-rate", type=float, default=1e9, help="R_lps, bytes/s (default 1e9)")
    ap.add_argument("--memory-per-node", type=float, default=16e9,
                    help="checkpoint bytes per node (default 16e9)")
    ap.add_argument("--csv", help="write job,submit,start,end here ('-' for stdout)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--exact", action="store_true",
                    help="exact rational arithmetic (fractions.Fraction): slow, no rounding at all")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        for name, v in (("--nodes", a.nodes), ("--lps-rate", a.lps_rate), ("--memory-per-node", a.memory_per_node)):
            if not (math.isfinite(v) and v > 0):
                raise InputError(f"{name} must be > 0, got {v}")
        w = read_jobs(a.jobs)
        wide = next((k for k, n in enumerate(w.nodes) if n > a.nodes), None)
        if wide is not None:
            raise InputError(f"{a.jobs}: job {w.ids[wide]}: field 'nodes': {w.nodes[wide]} nodes; the machine has "
                             f"{a.nodes} (--nodes)")
        start, end, decisions, instants = simulate(w, a.nodes, a.policy, a.lps_rate, a.memory_per_node,
                                                   exact=a.exact)
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
    s.update(policy=a.policy, nodes=a.nodes, decisions=decisions, instants=instants,
             wall_seconds=time.perf_counter() - t0,
             peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    if a.json:
        print(json.dumps(s))
    elif a.csv != "-":
        print(f"{a.jobs}: {a.policy}, {s['jobs']} jobs on {a.nodes} nodes, {decisions} decisions, "
              f"{instants} event instants\nmakespan {s['makespan']:.6g} s   mean wait {s['mean_wait']:.6g} s   "
              f"mean turnaround {s['mean_turnaround']:.6g} s\n"
              f"wall {s['wall_seconds']:.3f} s   peak memory {s['peak_rss_mb']:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
