"""``iolab report``: the metrics of a saved trace, or the summary of a campaign's results."""

from __future__ import annotations

import math

from pathlib import Path

import click

from iolab.campaign.results import is_results, load
from iolab.atomic import check_output
from iolab.errors import TraceError
from iolab.campaign.summary import summarise
from iolab.metrics import io_metrics
from iolab.metrics.batch_trace import batch_report, is_batch_trace
from iolab.metrics.partial import cut_short
from iolab.plots.campaign import strategy_boxplots
from iolab.plots.trace import gantt, utilisation
from iolab.trace import read_trace
from iolab.trace.facts import check_trace
from iolab.cli.format import dumps, metrics_json, print_metrics, seconds, table


@click.command()
@click.argument("path", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="print metrics (or the campaign summary) as JSON")
@click.option("--figures", "figures", type=click.Path(file_okay=False),
              help="also draw figures into this folder (trace: Gantt chart and node utilisation over time; "
                   "campaign: per-strategy box plots of makespan and max slowdown)")
@click.option("--format", "fig_format", type=click.Choice(["png", "svg"]), default="png", show_default=True,
              help="file format of the figures")
def report(path: str, as_json: bool, figures: str | None, fig_format: str) -> None:
    """Report on PATH: a trace (written by simulate or emulate), or a campaign's
    results (the folder `iolab sweep --out` wrote, or its results.h5)."""
    if figures:
        check_output(figures, [path], option="--figures", folder=True)
    try:
        if is_results(path):
            _campaign(path, as_json, figures, fig_format)
        else:
            _trace(path, as_json, figures, fig_format)
    except TraceError as exc:  # every refusal names the file it refuses
        if path not in exc.message:
            raise TraceError(f"{path}: {exc.message}") from None
        raise


def _trace(path: str, as_json: bool, figures: str | None, fig_format: str) -> None:
    trace = read_trace(path)
    check_trace(trace, path)
    if is_batch_trace(trace):
        _batch(path, trace, as_json, figures, fig_format)
        return
    m = io_metrics(trace)
    cut = cut_short(trace)
    if as_json:
        click.echo(dumps({**metrics_json(m), **partial_json(cut)}))
    else:
        a = trace.attrs
        print_metrics(m, f"{path}: runtime {a.get('runtime', '?')}, policy {a.get('policy', '?')}, "
                         f"seed {a.get('seed', '?')}", cut)
    if figures:
        out = Path(figures)
        g = gantt(trace, out / f"gantt.{fig_format}")
        u = utilisation(trace, out / f"utilisation.{fig_format}")
        click.echo(f"figures: {g.path}, {u}", err=as_json)


BATCH_ROWS = (("wait", "wait s"), ("run", "run s"), ("turnaround", "turnaround s"),
              ("bounded_slowdown", "bounded slowdown"), ("utilisation", "node utilisation"),
              ("hps_utilisation", "HPS utilisation"))


def partial_json(cut) -> dict:
    """For an interrupted run: ``complete: false``, when it stopped and what it cut (nothing for a
    complete one, whose JSON is that of ``simulate --json``)."""
    if cut is None:
        return {}
    return {"complete": False, "interrupted_at": cut.at, "cut": [{"id": i, "state": s} for i, s in cut.cut]}


def _batch(path: str, trace, as_json: bool, figures: str | None, fig_format: str) -> None:
    r = batch_report(trace)
    a = trace.attrs
    if as_json:
        click.echo(dumps({"trace": str(path), "runtime": a.get("runtime"), "scheduler": a.get("scheduler"),
                          "seed": a.get("seed"), **r.to_dict(), **partial_json(cut_short(trace))}))
    else:
        cut = cut_short(trace)
        st = ", ".join(f"{n:,} {s}" for s, n in sorted(r.statuses.items()))
        makespan = (f"makespan - (interrupted at {seconds(cut.at)})" if cut is not None
                    else f"makespan {seconds(r.makespan)}")
        click.echo(f"{path}: {a.get('runtime', '?')}, scheduler {a.get('scheduler', '?')}, seed {a.get('seed', '?')}: "
                   f"{r.jobs:,} jobs ({st}), {r.finished:,} measured, on {r.total_nodes:,} nodes; {makespan}")
        if cut is not None:
            click.echo(f"INTERRUPTED: {cut.describe('jobs')}; the figures below count the jobs cut short as "
                       "ending when they were killed.")
        rows = [(label, *(getattr(r, key)[c] for c in ("mean", "median", "p95", "max"))) for key, label in BATCH_ROWS
                if not (key == "hps_utilisation" and r.hps_capacity <= 0)]
        click.echo(table(["", "mean", "median", "p95", "max"], rows, per_row=True))
        click.echo(f"bounded slowdown = max(1, turnaround / max(run, {r.tau:g} s)); run = end - start (on HPS it "
                   "includes stage-in and stage-out); utilisation = fraction of the nodes (HPS capacity) held, "
                   "weighted by time over [first submit, last end]; p95 by linear interpolation for jobs.")
    if figures:
        from iolab.plots.batch import batch_gantt, batch_utilisation  # lazy: matplotlib only when drawing

        out = Path(figures)
        g = batch_gantt(trace, out / f"gantt.{fig_format}")
        u = batch_utilisation(trace, out / f"utilisation.{fig_format}")
        click.echo(f"figures: {g.path}, {u}", err=as_json)


def _campaign(path: str, as_json: bool, figures: str | None, fig_format: str) -> None:
    res = load(path)
    if res.attrs.get("study"):  # a study's campaign: its own summary is summary.json beside the results
        a = res.attrs
        click.echo(f"study {a['study']} (campaign {a['campaign']}): {a['finished']} of {a['total_runs']} runs finished, "
                   f"{a['failed']} failed, {a['pending']} pending; {len(res)} result rows; the study's tables and "
                   f"figures: `iolab study {a['study']} --out DIR` or summary.json in the output folder")
        return
    s = summarise(res)
    if as_json:
        click.echo(dumps(s))
    else:
        click.echo(f"campaign {s['campaign']}: {s['finished']} of {s['total_runs']} runs finished, "
                   f"{s['failed']} failed, {s['pending']} pending")
        rows = []
        batch = bool(s["strategies"]) and all(math.isfinite(e.get("mean_turnaround", {}).get("gmean", math.nan))
                                              for e in s["strategies"].values())
        for name, e in s["strategies"].items():
            mk, rel, st = e["makespan"], e["makespan_relative"], e["max_stretch"]
            if batch:
                tt, nu = e["mean_turnaround"], e["node_utilisation"]
                rows.append((name, e["runs"], e["failed"], mk["gmean"], mk["gsd"], rel["gmean"], rel["gsd"],
                             tt["gmean"], tt["gsd"], nu["gmean"]))
            else:
                rows.append((name, e["runs"], e["failed"], mk["gmean"], mk["gsd"], rel["gmean"], rel["gsd"],
                             st["gmean"], st["gsd"], st["min"], st["max"]))
        if batch:
            click.echo(table(["scheduler", "runs", "failed", "makespan s", "x/", "rel. makespan", "x/",
                              "mean turnaround s", "x/", "node utilisation"], rows))
            click.echo("geometric means over the runs; x/ = geometric standard deviation (spread factor); rel. "
                       "makespan = makespan over the best scheduler's on the same instance; mean turnaround = "
                       "each run's mean of end - submit over its jobs.")
        else:
            click.echo(table(["strategy", "runs", "failed", "makespan s", "x/", "rel. makespan", "x/", "max slowdown",
                              "x/", "min", "max"], rows))
            click.echo("makespan, rel. makespan and max slowdown: geometric means over the runs; x/ = geometric standard "
                       "deviation (spread factor); rel. makespan = makespan over the best strategy's on the same "
                       "instance; max slowdown = the run's largest slowdown (>= 1; max_stretch in --json), min and max "
                       "over the runs.")
        if s["failures"]:
            click.echo(f"\nfailed runs ({len(s['failures'])}):")
            for f in s["failures"][:20]:
                click.echo(f"  {f['run_id']}  {f['strategy']}  {f['workload']}: {f['error']}")
            if len(s["failures"]) > 20:
                click.echo(f"  ... {len(s['failures']) - 20} more (iolab report --json)")
    if figures:
        made = strategy_boxplots(res, figures, fig_format)
        click.echo("figures: " + ", ".join(str(p) for p in made), err=as_json)

