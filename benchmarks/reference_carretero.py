#!/usr/bin/env python3
"""A minimal pack simulator for carretero2020's I/O model: FIFO, longest-remaining and stretch.

An independent second opinion on iolab's I/O simulator (``iolab.sim.io.run.simulate``, event mode) and the
speed floor it is measured against (docs/performance.md, "Independent references").  One file, no iolab
import (PyYAML reads the spec)::

    python benchmarks/reference_carretero.py SPEC.yaml [--plan PLAN.json] [--policy P] [--json]

SPEC is an iolab I/O spec (``kind: io``; YAML or JSON): ``platform: {io_nodes, nodes_per_io_node,
bandwidth}``, ``policy``, ``mapping`` and ``apps``, each app with ``id``, ``nodes``, ``release`` (default 0),
``io_node`` (default 0) and either ``phases`` (a list of ``{compute: s}``, ``{write: v}``, ``{read: v}``) or
``iterations`` x (``compute`` s then one I/O phase of ``io_volume`` units).  Jitter is not modelled.

The plan (which I/O node and pack each app is on) is an input, not computed here:

- mapping ``none`` (no ``--plan``): every app runs on its ``io_node`` from its release, no packs;
- otherwise ``--plan PLAN.json``: ``{"packed": true, "nodes": [[["a", "c"], ["b"]], [["d"]]]}``, for each
  I/O node the sequence of its packs, each a list of app ids (or positions in ``apps``).

Output: every app's start and end, and the makespan (the last end, carretero2020 Eq. 3); ``--json``.

The model (carretero2020 §4-5, as docs/simulator.md states it)
-------------------------------------------------------------
- An app runs its phases in order.  A compute phase of ``w`` seconds ends ``w`` after it begins.  An I/O
  phase of volume ``v > 0`` becomes a request to the app's I/O node; once granted it transfers alone
  at bandwidth ``b`` for ``v / b`` seconds, never preempted.  An I/O phase of volume 0 takes no time and
  asks for nothing.
- An I/O node serves one transfer at a time.  Whenever it is free and requests wait, it grants the first
  one in the policy's order; everything that happens at one instant (phase ends, app and pack starts,
  new requests) happens before the node chooses, so every request present at that instant competes.
- The orders (``middleware/policies/io_order.py``), smaller first, ties by request time then position
  of the app in the spec (its rank):

  - ``fifo``: (request time, rank);
  - ``longest-remaining``: (-remaining, request time, rank), where remaining = T_i(b) - done: T_i(b) =
    total compute + total volume / b (Eq. 1), done = the compute seconds and volume/b of the phases
    the app has completed, fixed when the request is made;
  - ``stretch`` (worst current stretch first, re-evaluated at each grant): (rho, request time, rank),
    rho = min(1, (done + v/b) / (now - start + v/b)), 1 if the denominator is <= 0, where start is when
    the app started.
- Packs: the packs of an I/O node run one after the other; the apps of a pack all start at the later
  of the end of the previous pack (its last app's end; 0 for the first) and the latest release among
  them.  I/O nodes are independent: each is simulated on its own.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import resource
import sys
import time

import yaml

POLICIES = ("fifo", "longest-remaining", "stretch")


class InputError(Exception):
    pass


class App:
    __slots__ = ("rank", "id", "release", "kinds", "amounts", "min_time", "io_node",
                 "phase", "done", "start", "end")

    def __init__(self, rank, id, release, kinds, amounts, min_time, io_node):
        self.rank, self.id, self.release = rank, id, release
        self.kinds, self.amounts, self.min_time, self.io_node = kinds, amounts, min_time, io_node
        self.phase = -1
        self.done = 0.0
        self.start = math.nan
        self.end = math.nan


# ------------------------------------------------------------------------------------------------ input
def _num(v, where: str, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 \
            or (positive and v == 0):
        raise InputError(f"{where}: expected a finite number {'> 0' if positive else '>= 0'}, got {v!r}")
    return float(v)


def read_spec(path: str) -> dict:
    try:
        with open(path) as fh:
            doc = yaml.safe_load(fh)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        raise InputError(f"{path}: not YAML/JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("kind", "io") != "io":
        raise InputError(f"{path}: not an I/O spec (kind io)")
    return doc


def build(doc: dict, path: str) -> tuple[list[App], float, int]:
    pl = doc.get("platform") or {}
    b = _num(pl.get("bandwidth"), f"{path}: platform.bandwidth", positive=True)
    io_nodes = int(pl.get("io_nodes") or 1)
    jit = ((doc.get("sim") or {}).get("jitter") or {})
    if any(jit.get(k, 0) for k in ("compute", "io")):
        raise InputError(f"{path}: sim.jitter is not modelled by the reference")
    apps = []
    for rank, a in enumerate(doc.get("apps") or []):
        where = f"{path}: apps[{rank}]"
        if a.get("phases") is not None:
            kinds, amounts = [], []
            for i, ph in enumerate(a["phases"]):
                if not isinstance(ph, dict) or len(ph) != 1 or next(iter(ph)) not in ("compute", "write", "read"):
                    raise InputError(f"{where}.phases[{i}]: one of compute, write or read")
                (k, v), = ph.items()
                kinds.append(k == "compute")
                amounts.append(_num(v, f"{where}.phases[{i}].{k}"))
            compute = sum(x for c, x in zip(kinds, amounts) if c)
            volume = sum(x for c, x in zip(kinds, amounts) if not c)
        else:
            try:
                n, w, v = int(a["iterations"]), _num(a["compute"], f"{where}.compute"), \
                    _num(a["io_volume"], f"{where}.io_volume")
            except KeyError as e:
                raise InputError(f"{where}: missing {e.args[0]} (give phases, or iterations + compute + io_volume)") \
                    from None
            kinds, amounts = [True, False] * n, [w, v] * n
            compute, volume = n * w, n * v
        node = int(a.get("io_node") or 0)
        if not 0 <= node < io_nodes:
            raise InputError(f"{where}.io_node: I/O node {node} does not exist (platform.io_nodes = {io_nodes})")
        apps.append(App(rank, str(a["id"]), _num(a.get("release") or 0.0, f"{where}.release"), kinds, amounts,
                        compute + volume / b, node))
    if not apps:
        raise InputError(f"{path}: no apps")
    return apps, b, io_nodes


def read_plan(path: str, apps: list[App], io_nodes: int) -> tuple[bool, list[list[list[int]]]]:
    """(packed, for each I/O node its packs as lists of ranks); ``"packed": false`` runs every app of an
    I/O node from its release, as mapping none does."""
    try:
        with open(path) as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot read the plan: {e}") from None
    by_id = {a.id: a.rank for a in apps}
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    if not isinstance(nodes, list) or len(nodes) > io_nodes:
        raise InputError(f"{path}: nodes must be a list of at most {io_nodes} I/O nodes' pack lists")
    seen: set[int] = set()
    out = []
    for n, packs in enumerate(nodes):
        out.append([])
        for k, pack in enumerate(packs):
            if not pack:
                raise InputError(f"{path}: nodes[{n}][{k}]: an empty pack")
            ranks = []
            for x in pack:
                r = x if isinstance(x, int) else by_id.get(x)
                if r is None or not 0 <= r < len(apps) or r in seen:
                    raise InputError(f"{path}: nodes[{n}][{k}]: unknown or repeated app {x!r}")
                seen.add(r)
                ranks.append(r)
            out[-1].append(ranks)
    if len(seen) != len(apps):
        raise InputError(f"{path}: the plan leaves out {len(apps) - len(seen)} app(s)")
    return bool(doc.get("packed", True)), out


# ------------------------------------------------------------------------------------------------ one I/O node
def stretch_key(r, now):
    """Worst current stretch first (re-evaluated at each grant); r = (requested at, rank, app, v / b)."""
    t_req, rank, app, io_time = r
    elapsed = now - app.start + io_time
    rho = 1.0 if elapsed <= 0 else min(1.0, (app.done + io_time) / elapsed)
    return (rho, t_req, rank)


def run_node(packs: list[list[App]], packed: bool, b: float, policy: str) -> None:
    """Simulate one I/O node; sets every app's start and end."""
    # FIFO and longest-remaining keys are fixed when the request is made: a heap of (key, app).
    # Stretch changes while a request waits: a list, scanned at each grant.
    dynamic = policy == "stretch"
    heap: list[tuple[float, int, App]] = []  # (time, sequence, app): a compute phase ends or an app starts
    seq = 0
    waiting: list[tuple] = []
    busy: App | None = None
    busy_until = math.inf
    pending = list(packs) if packed else []
    left = 0

    def push(t, app):
        nonlocal seq
        heapq.heappush(heap, (t, seq, app))
        seq += 1

    def start_pack(t):
        nonlocal left
        pack = pending.pop(0)
        at = max([t] + [a.release for a in pack])
        left = len(pack)
        for a in pack:
            push(at, a)

    def advance(app, t):
        """The app has finished its current phase (or starts) at t: begin the next phase that takes time."""
        i = app.phase + 1
        while i < len(app.kinds):
            x = app.amounts[i]
            if app.kinds[i]:  # compute: ends x later (x = 0 ends within this instant)
                app.phase = i
                push(t + x, app)
                return
            if x > 0:
                app.phase = i
                if dynamic:
                    waiting.append((t, app.rank, app, x / b))
                elif policy == "fifo":
                    heapq.heappush(waiting, ((t, app.rank), app))
                else:  # longest-remaining: remaining = T_i(b) - done, fixed now
                    heapq.heappush(waiting, ((-(app.min_time - app.done), t, app.rank), app))
                return
            i += 1  # empty I/O phase
        app.phase = i
        app.end = t
        if packed:
            nonlocal left
            left -= 1
            if left == 0 and pending:
                start_pack(t)

    if packed:
        if pending:
            start_pack(0.0)
    else:
        for a in (a for pack in packs for a in pack):
            push(a.release, a)
    while heap or busy is not None:
        t = min(heap[0][0] if heap else math.inf, busy_until)
        if busy_until == t:  # the transfer ends: the app goes on, the node is free
            app, busy, busy_until = busy, None, math.inf
            app.done += app.amounts[app.phase] / b
            advance(app, t)
        while heap and heap[0][0] == t:
            _, _, app = heapq.heappop(heap)
            if app.phase < 0:  # an app starts
                app.start = t
            else:  # a compute phase ends
                app.done += app.amounts[app.phase]
            advance(app, t)
        if busy is None and waiting:
            if dynamic:
                best = min(range(len(waiting)), key=lambda i: stretch_key(waiting[i], t))
                busy = waiting.pop(best)[2]
            else:
                busy = heapq.heappop(waiting)[1]
            busy_until = t + busy.amounts[busy.phase] / b


def simulate(apps: list[App], b: float, io_nodes: int, policy: str, plan=None, packed: bool = True) -> None:
    """Every app's start and end; ``plan`` = for each I/O node its packs (lists of ranks), or None for
    mapping none (every app on its ``io_node``)."""
    if policy not in POLICIES:
        raise InputError(f"policy {policy!r} is not in the reference (it has {', '.join(POLICIES)})")
    if plan is None:
        plan, packed = [[[a.rank for a in apps if a.io_node == n]] for n in range(io_nodes)], False
    for packs in plan:
        run_node([[apps[r] for r in pack] for pack in packs], packed, b, policy)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", help="iolab I/O spec (YAML or JSON)")
    ap.add_argument("--plan", help="JSON plan: I/O node and pack of every app (needed unless mapping is none)")
    ap.add_argument("--policy", help="override the spec's policy: " + ", ".join(POLICIES))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        doc = read_spec(a.spec)
        apps, b, io_nodes = build(doc, a.spec)
        mapping = doc.get("mapping", "none")
        mapping = mapping.get("kind", "none") if isinstance(mapping, dict) else mapping
        packed, plan = read_plan(a.plan, apps, io_nodes) if a.plan else (False, None)
        if plan is None and mapping != "none":
            raise InputError(f"{a.spec}: mapping {mapping!r} needs --plan (the reference does not build packs)")
        policy = (a.policy or doc.get("policy", "fifo")).strip().lower().replace("_", "-")
        simulate(apps, b, io_nodes, policy, plan, packed)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    res = {"policy": policy, "makespan": max(x.end for x in apps),
           "apps": [{"id": x.id, "start": x.start, "end": x.end} for x in apps],
           "wall_seconds": time.perf_counter() - t0,
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if a.json:
        print(json.dumps(res))
    else:
        print(f"{a.spec}: policy {policy}, {len(apps)} apps on {io_nodes} I/O node(s)")
        for x in apps:
            print(f"  {x.id:>12}  start {x.start:12.6g}  end {x.end:12.6g}")
        print(f"makespan {res['makespan']:.9g} s   wall {res['wall_seconds']:.3f} s   "
              f"peak memory {res['peak_rss_mb']:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
