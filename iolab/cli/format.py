"""Plain-text tables and JSON output for the command line, and the metrics tables the commands print."""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

import click

from iolab.units import cell, column_formats, fmt, seconds  # re-exported: the command line's formatters


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 4, per_row: bool = False) -> str:
    """A plain-text table: text left-aligned in the first column, numbers right-aligned, each
    column's floats with the same decimals (:func:`column_formats`), thousands separated.
    ``per_row``: each row holds one quantity (its statistics in the columns), so the decimals are
    the same along a row instead."""
    rows = [[float(c) if hasattr(c, "dtype") and getattr(c.dtype, "kind", "") == "f" else c for c in r] for r in rows]
    if per_row:
        decs_of_row = [column_formats([[c] for c in r[1:]], digits)[0] if len(r) > 1 else None for r in rows]
        cells = [[cell(c, decs_of_row[k] if i else None) for i, c in enumerate(r)] for k, r in enumerate(rows)]
    else:
        decs = column_formats(rows, digits)
        cells = [[cell(c, decs[i]) for i, c in enumerate(r)] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = lambda r: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
    out = [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    return "\n".join(out)


def dumps(obj: Any) -> str:
    def clean(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x

    def other(x):  # numpy scalars and arrays, paths
        if hasattr(x, "tolist"):
            return clean(x.tolist())
        return str(x)

    return json.dumps(clean(obj), indent=2, default=other)


def metrics_json(m) -> dict:
    return {
        "makespan": m.makespan,
        "max_stretch": m.max_stretch,
        "io_load": m.io_load,
        "packs": m.packs,
        "apps": [{"id": a.id, "stretch": a.stretch, "slowdown": a.slowdown, "end": a.end,
                  "io_node": a.io_node, "pack": a.pack} for a in m.apps],
    }


def print_metrics(m, title: str, cut=None) -> None:
    """The per-app table and the run's totals.  One word per quantity (docs/metrics.md): the table
    and the totals show slowdowns (>= 1); ``--json`` also gives the stretches (<= 1).  ``cut``
    (:func:`iolab.metrics.partial.cut_short`): the run was interrupted; its apps cut short have
    no end, and no makespan or idle time is printed as if the run had finished."""
    click.echo(title)
    if cut is not None:
        click.echo(f"INTERRUPTED: {cut.describe('apps')}.")
    status = dict(cut.cut) if cut is not None else {}
    rows = [(a.id, a.io_node, a.pack, a.nodes, a.release, a.start, a.end, a.min_time, a.slowdown, a.io_wait)
            + ((status.get(a.id, "ended"),) if cut is not None else ()) for a in m.apps]
    click.echo(table(["app", "I/O node", "pack", "nodes", "release s", "start s", "end s", "T_min s", "slowdown",
                      "I/O wait s"] + (["state"] if cut is not None else []), rows))
    if cut is not None:
        makespan = f"makespan - (interrupted at {seconds(cut.at)}; {cut.finished} of {cut.total} apps had ended)"
        idle = "-"
    else:
        makespan = f"makespan {seconds(m.makespan)}"
        idle = seconds(m.idle_time)
    click.echo(
        f"\n{makespan}   max slowdown {fmt(m.max_stretch)}   I/O load alpha {fmt(m.io_load)}   packs {m.packs}\n"
        f"per compute node: exec {seconds(m.exec_time)}, delay {seconds(m.delay_time)}, idle {idle}\n"
        "slowdown = (end - release) / T_min, >= 1 (1 / the stretch of carretero2020 Eq. 2); T_min = the app's "
        "time alone on its I/O node; max slowdown is max_stretch in --json."
    )


def batch_metrics_table(m) -> str:
    """A batch run's metrics (:class:`iolab.metrics.batch.BatchMetrics`) as one row, as both runtimes print it."""
    return table(["makespan", "mean turnaround", "node utilisation", "HPS utilisation", "jobs on HPS"],
                 [(seconds(m.makespan), seconds(m.mean_turnaround), m.node_utilisation, m.hps_utilisation,
                   m.hps_jobs)])
