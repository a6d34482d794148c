"""``iolab validate ... --report DIR``: one page a user can attach to a paper.

:func:`write_report` writes, into DIR:

- ``report.md``: the spec, the date, the machine and the versions of the real run, the
  command; per level the tables of ``iolab validate``'s report (I/O: per policy and app
  the simulated and real slowdown and the makespan, the spread and the distributions when
  present, the rankings; batch: the calibration used and, simulated as written and
  calibrated, the per-run metrics and the per-job turnaround); links to the figures;
- ``scatter.png``: carretero2020 Fig. 9 as a scatter, simulated against real (I/O: every
  app's slowdown under every policy; batch: every job's turnaround, plain and calibrated),
  with the diagonal and a ±10 % band;
- ``report.json``: the report itself (``iolab validate --json``'s document).

Markdown and PNG only: the page renders on GitHub, in any Markdown viewer, and converts
with pandoc.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path

from iolab.atomic import atomic_write_text
from iolab.calibration import describe_costs
from iolab.validation.io_comparison import ranking_words
from iolab.plots import new_figure, save
from iolab.units import cell, column_formats, fmt, pvalue, seconds, short

TIMES = ("makespan", "mean_turnaround")  # a batch run's metrics in seconds (the others are utilisations)


def _fmt(x) -> str:
    """A number in a sentence: 4 significant digits, thousands separated, never in scientific notation."""
    return "-" if x is None else short(x)


def _value(row: str, x) -> str:
    """A cell of a per-app table: the makespan row as a time (its columns hold slowdowns otherwise)."""
    return seconds(x) if row == "makespan" else fmt(x)


def _pct(x) -> str:
    return "-" if x is None or x != x else f"{x:.2%}"


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    decs = column_formats(rows)  # one precision per column, as the command line's tables
    out += ["| " + " | ".join(cell(c, decs[i]) for i, c in enumerate(r)) + " |" for r in rows]
    return out + [""]


def _scatter(points: dict[str, list[tuple[float, float]]], path: Path, what: str) -> Path:
    fig = new_figure(5.2, 4.6)
    ax = fig.add_subplot(1, 1, 1)
    lo, hi = math.inf, -math.inf
    for label, pts in points.items():
        pts = [(s, r) for s, r in pts if s == s and r == r]
        if not pts:
            continue
        xs, ys = zip(*pts)
        ax.scatter(xs, ys, s=18, label=label, alpha=0.8)
        lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
    if lo < hi:
        pad = 0.05 * (hi - lo)
        grid = [lo - pad, hi + pad]
        ax.plot(grid, grid, color="black", lw=0.8, label="real = simulated")
        ax.fill_between(grid, [g * 0.9 for g in grid], [g * 1.1 for g in grid], color="grey", alpha=0.15,
                        label="±10 %")
        ax.set_xlim(*grid)
        ax.set_ylim(*grid)
    ax.set_xlabel(f"simulated {what}")
    ax.set_ylabel(f"real {what}")
    ax.legend(fontsize=7)
    return save(fig, path)


def _samples(samples: dict) -> str:
    """``{"launch": 3, "exit": 3, "io_phase": 12}`` as words: ``samples: 3 launches, 3 exits, 12 I/O phases``."""
    names = {"launch": ("launch", "launches"), "exit": ("exit", "exits"), "io_phase": ("I/O phase", "I/O phases")}
    parts = []
    for k, n in samples.items():
        one, many = names.get(k, (k.replace("_", " "), k.replace("_", " ")))
        parts.append(f"{int(n):,} {one if n == 1 else many}")
    return "samples: " + (", ".join(parts) if parts else "none")


def _costs(simulated_with: dict | None, bandwidth: float) -> str:
    """The bandwidth and ``platform.overheads`` a simulation was given (spec units and seconds)."""
    if not simulated_with:  # a report that does not say what the simulation was given: the bandwidth only
        return f"bandwidth {_fmt(bandwidth)} units/s"
    return describe_costs(simulated_with["bandwidth"], simulated_with["overheads"])


def _io_section(report: dict) -> tuple[list[str], dict]:
    lines: list[str] = []
    points: dict[str, list[tuple[float, float]]] = {}
    s = report["summary"]
    lines += ["## I/O level: per policy", "",
              f"Overall: max error {_pct(s['error_max'])} (slowdown {_pct(s['stretch_error_max'])}, makespan "
              f"{_pct(s['makespan_error_max'])}), geo-mean {_pct(s['error_geomean'])}.", ""]
    for what, r in report["ranking"].items():
        lines.append(f"- ranking by {what}: {ranking_words(r)} "
                     f"(real: {' < '.join(r['emulator'])}; simulated: {' < '.join(r['simulator'])})")
    lines.append("")
    for policy, c in report["policies"].items():
        lines += [f"### {policy}", "", f"Simulated with {_costs(c.get('simulated_with'), c['bandwidth_measured'])} "
                  f"(the spec's bandwidth {_fmt(c['bandwidth_spec'])}); real run {_fmt(c.get('wall_seconds'))} s wall.",
                  ""]
        rows = [[a, v["simulator"], v["emulator"], _pct(v["error"])] for a, v in c["apps"].items()]
        rows.append(["makespan", seconds(c["makespan"]["simulator"]), seconds(c["makespan"]["emulator"]),
                     _pct(c["makespan"]["error"])])
        lines += _table(["", "simulated", "real", "rel. error"], rows)
        points[policy] = [(v["simulator"], v["emulator"]) for v in c["apps"].values()]
        if "spread" in c:
            sp = c["spread"]
            rows = [[a, *(seconds(v[k]) if a == "makespan" else v[k] for k in ("median", "min", "max", "emulator")),
                     _pct(v["percentile"]), _pct(v["error"])]
                    for a, v in [*sp["apps"].items(), ("makespan", sp["makespan"])]]
            lines += [f"{sp['seeds']} jittered simulations ({sp['jitter']['law']}):", ""]
            lines += _table(["", "sim median", "min", "max", "real", "percentile", "error vs median"], rows)
        if "distribution" in c:
            d = c["distribution"]
            rows = [[a, *(seconds(v[k]) if a == "makespan" else v[k] for k in ("real_median", "sim_median")),
                     f"{_value(a, v['band'][0])}..{_value(a, v['band'][1])}",
                     _pct(v["error"]), f"{v['ks']:.2f} (p {pvalue(v['ks_pvalue'])})", v["verdict"]]
                    for a, v in [*d["apps"].items(), ("makespan", d["makespan"])]]
            lines += [f"{d['repeats']} real runs against {d['seeds']} simulations, with "
                      f"{_costs(d.get('simulated_with'), d['bandwidth_median'])}:", ""]
            lines += _table(["", "real median", "sim median", "sim 5..95 %", "error", "KS D", "verdict"], rows)
    if "distribution" in report:
        d = report["distribution"]
        r = d["ranking"]["makespan"]
        lines += [f"Distributions over all policies: {d['noise']} of {d['values']} values noise, {d['model_errors']} "
                  f"model error(s); error of the medians max {_pct(d['error_max'])}, geo-mean "
                  f"{_pct(d['error_geomean'])}; {d['over_10pct']} value(s) over 10 %, "
                  f"{d['over_10pct_inside_band']} of them inside the band. Ranking by median makespan: "
                  f"{ranking_words(r)} (real: {' < '.join(r['emulator'])}; simulated: {' < '.join(r['simulator'])}).",
                  ""]
    return lines, {"points": points, "what": "slowdown"}


def _batch_section(report: dict) -> tuple[list[str], dict]:
    cal = report["calibration"]
    o = cal["spec_seconds"]
    lines = ["## Batch level", "",
             f"Calibration from {cal['source']}: launch {_fmt(cal['wall']['launch'])} s, exit "
             f"{_fmt(cal['wall']['exit'])} s, I/O phase {_fmt(cal['wall']['io_phase'])} s wall = "
             f"{_fmt(o['launch'])}, {_fmt(o['exit'])}, {_fmt(o['io_phase'])} spec s at time scale "
             f"{report['time_scale']:g} ({_samples(cal.get('samples') or {})}).", ""]
    points = {}
    for key, title in (("uncalibrated", "simulated as written"), ("calibrated", "simulated with the calibration")):
        c = report[key]
        lines += [f"### {title}", ""]
        lines += _table(["", "real", "simulated", "rel. error"],
                        [[k.replace("_", " "), *((seconds(v["real"]), seconds(v["sim"])) if k in TIMES
                                                  else (v["real"], v["sim"])), _pct(v["error"])]
                         for k, v in c["run"].items()])
        rows = [[j, v["tier"]["real"] + ("" if v["tier"]["same"] else f" (sim {v['tier']['sim']})"),
                 v["start"]["real"], v["start"]["sim"], v["turnaround"]["real"], v["turnaround"]["sim"],
                 _pct(v["turnaround"]["error"]), ",".join(v["disks"]["real"]) or "-",
                 "same" if v["disks"]["same"] else ",".join(v["disks"]["sim"]) or "-"]
                for j, v in c["jobs"].items()]
        lines += _table(["job", "tier", "start real", "start sim", "turnaround real", "turnaround sim", "error",
                         "disks real", "disks sim"], rows)
        lines += [f"Per-job turnaround error max {_pct(c['turnaround_error_max'])}, geo-mean "
                  f"{_pct(c['turnaround_error_geomean'])}; tier differs: {', '.join(c['tier_differs']) or 'none'}; "
                  f"disks differ: {', '.join(c['disks_differ']) or 'none'}; not compared: "
                  f"{', '.join(c['not_compared']) or 'none'}.", ""]
        points[title] = [(v["turnaround"]["sim"], v["turnaround"]["real"]) for v in c["jobs"].values()]
    return lines, {"points": points, "what": "turnaround (s)"}


def write_report(report: dict, directory: str | Path, *, command: str = "", machine: dict | None = None,
                 json_text: str | None = None) -> Path:
    """Write ``report.md``, ``scatter.png`` and ``report.json`` (``json_text``: the report as the command
    line prints it, non-finite numbers as null; default: ``json.dumps``) into ``directory``; returns the page."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    level = report.get("level", "io")
    body, fig = _batch_section(report) if level == "batch" else _io_section(report)
    machine = machine or {}
    head = [f"# Validation of `{report['spec']}`", "",
            f"{_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; "
            f"{'batch' if level == 'batch' else 'I/O'} level; the real runs on `{machine.get('host', '?')}`.", ""]
    if command:
        head += ["```", command, "```", ""]
    versions = machine.get("versions") or {}
    if versions:
        head += ["Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + ".", ""]
    nice = machine.get("nice") or {}
    if nice:
        head += ["Priorities (nice): " + ", ".join(f"{k} {v}" for k, v in sorted(nice.items())) + ".", ""]
    head += ["Errors are `|real - sim| / sim`; geo-mean `exp(mean |ln(real/sim)|) - 1` (docs/validation.md).", "",
             f"![simulated against real](scatter.png)", ""]
    _scatter(fig["points"], d / "scatter.png", fig["what"])
    atomic_write_text(d / "report.json", json_text if json_text is not None else json.dumps(report, indent=1,
                                                                                            default=str))
    page = d / "report.md"
    atomic_write_text(page, "\n".join(head + body) + "\n")
    return page


__all__ = ["write_report"]
