"""One real run against its simulation: the bandwidth it got (:func:`measured_bandwidth`), per-app
slowdown and makespan errors (:func:`compare`), and whether two runtimes
rank the policies alike (:func:`ranking`).  Used by :mod:`iolab.validation.io` and
:mod:`iolab.validation.spread`."""

from __future__ import annotations

import math

import numpy as np

from iolab.metrics.io import io_makespan, slowdown
from iolab.trace import Trace
from iolab.validation.relative_errors import geo_error, rel_error


def measured_bandwidth(trace: Trace) -> float:
    """Spec units per spec second the I/O nodes delivered: the volume of the granted
    transfers over the time some transfer was going on (per node, summed)."""
    volume = {(j, int(i)): float(v) for j, i, k, v in zip(trace.phases["job"], trace.phases["index"],
                                                       trace.phases["kind"], trace.phases["volume"])
              if k != "compute"}
    g = trace.grants
    total_v = busy = 0.0
    for node in sorted(set(int(n) for n in g["io_node"])):
        spans = []
        for j, ph, n, gr, rl in zip(g["job"], g["phase"], g["io_node"], g["grant"], g["release"]):
            if int(n) == node and (j, int(ph)) in volume and rl > gr:
                total_v += volume[(j, int(ph))]
                spans.append((float(gr), float(rl)))
        spans.sort()
        end = -math.inf
        for s, e in spans:  # measure of the union of the transfer intervals
            if s > end:
                busy += e - s
                end = e
            elif e > end:
                busy += e - end
                end = e
    if busy <= 0 or total_v <= 0:
        raise ValueError("the trace has no finished transfer to measure a bandwidth from")
    return total_v / busy


def _slowdowns(trace: Trace, tmin: dict[str, float]) -> dict[str, float]:
    """The slowdown from its release of every app that ended ok and has a contention-free time in ``tmin``
    (the simulation's: one yardstick for both runtimes)."""
    j = trace.jobs
    ids = [str(i) for i in j["id"]]
    keep = [k for k, (i, st) in enumerate(zip(ids, j["status"])) if st == "ok" and tmin.get(i, 0) > 0]
    sd = slowdown(np.asarray(j["release"], dtype=float)[keep], np.asarray(j["end"], dtype=float)[keep],
                  [tmin[ids[k]] for k in keep])
    return dict(zip((ids[k] for k in keep), sd.tolist()))


def compare(emu: Trace, sim: Trace) -> dict:
    """Per-app slowdown and makespan errors of one policy."""
    tmin = {str(i): float(t) for i, t in zip(sim.jobs["id"], sim.jobs["min_time"])}
    se, ss = _slowdowns(emu, tmin), _slowdowns(sim, tmin)
    apps = {a: {"emulator": se[a], "simulator": ss[a], "error": rel_error(se[a], ss[a])} for a in ss if a in se}
    mk_e = io_makespan([float(x) for x, st in zip(emu.jobs["end"], emu.jobs["status"]) if st == "ok"])
    mk_s = io_makespan(sim.jobs["end"])
    pairs = [(v["emulator"], v["simulator"]) for v in apps.values()] + [(mk_e, mk_s)]
    errors = [v["error"] for v in apps.values()] + [rel_error(mk_e, mk_s)]
    return {
        "apps": apps,
        "makespan": {"emulator": mk_e, "simulator": mk_s, "error": rel_error(mk_e, mk_s)},
        "max_stretch": {"emulator": max(se.values(), default=math.nan),
                        "simulator": max(ss.values(), default=math.nan),
                        "error": rel_error(max(se.values(), default=math.nan), max(ss.values(), default=math.nan))},
        "stretch_error_max": max((v["error"] for v in apps.values()), default=math.nan),
        "stretch_error_geomean": geo_error([(v["emulator"], v["simulator"]) for v in apps.values()]),
        "error_max": max(errors), "error_geomean": geo_error(pairs),
        "failed": [str(i) for i, st in zip(emu.jobs["id"], emu.jobs["status"]) if st != "ok"],
    }


def ranking(values: dict[str, tuple[float, float]], tie: float = 0.01) -> dict:
    """Policies ordered by (emulator, simulator) value; agreement, ties within ``tie`` excused."""
    names = list(values)
    emu = sorted(names, key=lambda p: values[p][0])
    sim = sorted(names, key=lambda p: values[p][1])
    concordant = discordant = ties = 0
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            (ea, sa), (eb, sb) = values[a], values[b]
            if abs(sa - sb) <= tie * max(abs(sa), abs(sb)):
                ties += 1
            elif (ea - eb) * (sa - sb) > 0:
                concordant += 1
            else:
                discordant += 1
    return {"emulator": emu, "simulator": sim, "same": emu == sim, "agree": discordant == 0,
            "concordant_pairs": concordant, "discordant_pairs": discordant, "tied_pairs": ties}


def ranking_words(r: dict) -> str:
    """One :func:`ranking` in words: the same order, the same up to ties, or how it differs."""
    if r["same"]:
        return "same order"
    if r["discordant_pairs"] == 0:
        return (f"same order up to ties: no discordant pair; {r['tied_pairs']} pair(s) the simulation puts "
                "within 1 % of each other ordered either way")
    return f"order differs: {r['discordant_pairs']} discordant pair(s), {r['tied_pairs']} tie(s) within 1 %"
