"""``iolab validate``: the simulator against real runs, policy by policy (carretero2020 Fig. 9)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import yaml

from iolab.atomic import atomic_write_text, check_output
from iolab.plots import check_figure
from iolab.campaign.validation import campaign_traces, is_campaign_results, repeats_campaign
from iolab.calibration import describe_io, read_calibration
from iolab.validation.io_comparison import ranking_words
from iolab.emulator.output_lock import hold_outputs
from iolab.validation.io import TraceMismatch, figure
from iolab.runners import VALIDATIONS, level_of
from iolab.specs.io import IO_POLICIES, LIST_POLICIES, Jitter
from iolab.cli.format import fmt, seconds, table
from iolab.units import pvalue
from iolab.cli.options import Finite, parse_overridden, read_overridden, strict_option
from iolab.cli.outcome import exit_if_failed
from iolab.cli.validate_batch import validate_batch_cli
from iolab.cli.validate_output import emit


def command_line(ctx: click.Context, spec_path: str) -> str:
    """The command as the user gave it (the options set on the command line), for the report."""
    parts = [ctx.command_path, spec_path]
    for p in ctx.command.params:
        if p.name == "spec_path" or ctx.get_parameter_source(p.name) != click.core.ParameterSource.COMMANDLINE:
            continue
        value = ctx.params[p.name]
        parts.append(p.opts[0] if value is True else f"{p.opts[0]} {value}")
    return " ".join(parts)


def parse_policies(text: str) -> list[str]:
    if text.strip().lower() == "all":
        return list(LIST_POLICIES)
    out = []
    for p in text.split(","):
        p = p.strip().lower().replace("_", "-")
        if p not in IO_POLICIES:
            raise click.BadParameter(f"unknown policy {p!r}; known: all, {', '.join(IO_POLICIES)}",
                                     param_hint="--policies")
        out.append(p)
    return out


def value(row: str, v: float) -> str:
    """A cell of a per-app table: the makespan row as a time, an app's slowdown with 4 significant digits."""
    return seconds(v) if row == "makespan" else fmt(v)


def print_policy(run, spec) -> None:
    c = run.comparison
    click.echo(f"\n{run.policy}: simulated with {describe_io(run.calibration, spec)}"
               + (f"; FAILED apps: {', '.join(c['failed'])}" if c["failed"] else ""))
    # the apps' slowdowns (about 1) share their columns with the makespan (thousands of seconds): the
    # makespan is written as a time, so the columns' decimals are the slowdowns' own
    rows = [(a, v["simulator"], v["emulator"], f"{v['error']:.2%}") for a, v in c["apps"].items()]
    m = c["makespan"]
    rows.append(("makespan", seconds(m["simulator"]), seconds(m["emulator"]), f"{m['error']:.2%}"))
    click.echo(table(["", "simulated", "emulated", "rel. error"], rows))
    click.echo(f"slowdown error max {c['stretch_error_max']:.2%}, geo-mean {c['stretch_error_geomean']:.2%}; "
               f"all (slowdowns + makespan) max {c['error_max']:.2%}, geo-mean {c['error_geomean']:.2%}")
    if run.spread:
        sp = run.spread
        j = sp["jitter"]
        how = "phase durations resampled from this run" if j["law"] == "resample" else "normal jitter"
        click.echo(f"{sp['seeds']} simulations, {how} (s.d. compute {j['compute']:.2%}, io {j['io']:.2%}):")
        rows = [(a, f"{value(a, v['median'])} [{value(a, v['min'])}..{value(a, v['max'])}]",
                 seconds(v["emulator"]) if a == "makespan" else v["emulator"],
                 f"{v['percentile']:.0%}", f"{v['error']:.2%}")
                for a, v in [*sp["apps"].items(), ("makespan", sp["makespan"])]]
        click.echo(table(["", "simulated median [min..max]", "emulated", "percentile", "error vs median"], rows))
        click.echo(f"inside the simulated range: {sp['inside']} of {sp['values']}; error vs median max "
                   f"{sp['error_max']:.2%}, geo-mean {sp['error_geomean']:.2%}")
    if run.distribution:
        d = run.distribution
        click.echo(f"{d['repeats']} real runs against {d['seeds']} simulations with {describe_io(d['calibration'], spec)}:")
        rows = [(a, value(a, v['real_median']),
                 f"{value(a, v['sim_median'])} [{value(a, v['band'][0])}..{value(a, v['band'][1])}]",
                 f"{v['percentile']:.0%}", f"{v['error']:.2%}", f"{v['ks']:.2f} (p {pvalue(v['ks_pvalue'])})", v["verdict"])
                for a, v in [*d["apps"].items(), ("makespan", d["makespan"])]]
        click.echo(table(["", "real median", "sim median [5..95 %]", "percentile", "error", "KS D", "verdict"],
                         rows))
    sys.stdout.flush()  # this policy's lines out before the next policy runs, whatever else wrote to stdout


def parse_jitter(text: str):
    """``auto`` (measured on each real run), ``none``, or ``COMPUTE,IO`` relative s.d."""
    t = text.strip().lower()
    if t == "auto":
        return "auto"
    if t == "none":
        return Jitter()
    parts = t.split(",")
    try:
        if len(parts) != 2:
            raise ValueError("give two numbers")
        return Jitter(compute=float(parts[0]), io=float(parts[1]))
    except ValueError as exc:
        reason = exc.errors()[0]["msg"] if hasattr(exc, "errors") else str(exc)
        raise click.BadParameter(f"{text!r}: expected auto, none or COMPUTE,IO (e.g. 0.01,0.04): {reason}",
                                 param_hint="--jitter") from None


@click.command()
@strict_option
@click.argument("spec_path", metavar="SPEC", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--policies", default="all", show_default=True, help="'all' (the 8 list policies) or p1,p2,...")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON (nothing else on stdout)")
@click.option("--figure", "figure_path", type=click.Path(dir_okay=False), help="simulated vs real stretch (.png, .svg or .pdf)")
@click.option("--address", help="join this Ray (GCS host:port) instead of starting a local one")
@click.option("--work-dir", type=click.Path(file_okay=False),
              help="checkpoints and logs, one folder per policy, and each policy's trace POLICY.h5")
@click.option("--keep-work", is_flag=True, help="without --work-dir: keep each real run's work folder (under "
              "$TMPDIR) after a run that ended well; it is always kept after a failed or interrupted run, and "
              "its path is printed")
@click.option("--time-scale", type=Finite(0, min_open=True), help="override emulator.time_scale")
@click.option("--seeds", type=click.IntRange(min=0), default=20, show_default=True,
              help="also simulate each policy this many times with phase jitter and place the real run "
                   "in that distribution (0: only the deterministic simulation)")
@click.option("--jitter", "jitter_text", default="auto", show_default=True,
              help="durations of those simulations: auto (resampled from each real run's phases), none, "
                   "or COMPUTE,IO (relative s.d. of a normal law)")
@click.option("--traces", "traces_dir", type=click.Path(file_okay=False, exists=True),
              help="do not emulate: reuse the traces DIR/POLICY.h5 of an earlier --work-dir DIR run "
                   "(batch specs: DIR/SCHEDULER.h5)")
@click.option("--report", "report_dir", type=click.Path(file_okay=False),
              help="also write a self-contained page: DIR/report.md, DIR/scatter.png, DIR/report.json")
@click.option("--campaign", "campaign_path", type=click.Path(dir_okay=False),
              help="I/O specs: do not run anything; write the campaign of the real runs (every policy --repeats "
                   "times, runtime emulate) to FILE for `iolab sweep FILE --traces DIR/traces --out DIR` (on a "
                   "cluster too), then validate with --traces DIR")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True,
              help="I/O specs: run each policy this many times for real and compare the runs with the --seeds "
                   "simulations as distributions (medians, 5-95 % band, Kolmogorov-Smirnov)")
@click.option("--calibration", "calibration", type=click.Path(dir_okay=False), metavar="TRACE",
              help="simulate with the costs measured by the real run in TRACE (e.g. of another spec; "
                   "default: each real run's own, in-sample; docs/validation.md)")
@click.pass_context
def validate(ctx, spec_path, policies, as_json, figure_path, address, work_dir, keep_work, time_scale, seeds,
             jitter_text, traces_dir, calibration, repeats, report_dir, campaign_path) -> None:
    """Emulate SPEC under each policy, simulate it with the costs the run measured, compare.

    Stretch is shown as the slowdown (time in the system / contention-free time,
    >= 1).  Errors are |emulated - simulated| / simulated; geo-mean is
    exp(mean |ln(emu/sim)|) - 1.  Rankings order the policies by makespan and
    by max stretch in each runtime.  A batch spec (kind: batch) is run once and
    compared job by job with its simulation as written and with the launch, exit
    and per-phase costs measured by a real run (--calibration; docs/validation.md).
    Without --work-dir each real run works in a folder under $TMPDIR, removed after
    a run that ended well (--keep-work keeps it), kept and named otherwise.
    """
    source = "<stdin>" if spec_path == "-" else spec_path
    _, document = read_overridden(spec_path, {"emulator.time_scale": time_scale}, source)
    spec, inputs = parse_overridden(document, spec_path, source)
    inputs += [calibration] if calibration else []
    for option, where, folder in (("--work-dir", work_dir, True), ("--report", report_dir, True),
                                  ("--campaign", campaign_path, False)):
        if where:
            check_output(where, inputs, option=option, folder=folder)
    if figure_path:
        check_figure(figure_path, inputs)
    if not campaign_path:  # one validation per work folder and report folder (held until the command ends)
        ctx.with_resource(hold_outputs([work_dir, report_dir], "output of iolab validate"))
    if level_of(spec) == "batch":
        given = [f"--{n.replace('_', '-')}" for n in ("policies", "seeds", "jitter_text", "figure_path", "repeats",
                                                      "campaign_path")
                 if ctx.get_parameter_source(n) == click.core.ParameterSource.COMMANDLINE]
        if given:
            raise click.UsageError(f"{', '.join(given).replace('-text', '').replace('-path', '')} apply to I/O "
                                   "specs; a batch spec names its scheduler")
        return validate_batch_cli(spec, as_json, address, work_dir, traces_dir, calibration,
                                  report_dir=report_dir, command=command_line(ctx, spec_path), keep_work=keep_work)
    cal = read_calibration(calibration, "io") if calibration else None  # a bad trace: exit 2 before anything runs
    names = parse_policies(policies)
    jitter = parse_jitter(jitter_text)
    if repeats > 1 and seeds < 1:
        raise click.BadParameter("--repeats > 1 compares distributions: give --seeds >= 1", param_hint="--repeats")
    if campaign_path:
        doc = repeats_campaign(spec, names, repeats)
        text = (json.dumps(doc, indent=1) if campaign_path.endswith(".json")
                else yaml.safe_dump(doc, sort_keys=False, width=120))
        atomic_write_text(Path(campaign_path), text)
        click.echo(f"{campaign_path}: {len(names) * repeats} real runs ({len(names)} policies x {repeats}). Run:\n"
                   f"  iolab sweep {campaign_path} --traces DIR/traces --out DIR   (or slurm/templates/sweep.sbatch)\n"
                   f"then:\n  iolab validate {spec_path} --policies {','.join(names)} --repeats {repeats} "
                   "--traces DIR")
        return
    if traces_dir and is_campaign_results(traces_dir):
        traces_dir = campaign_traces(traces_dir, names)
    try:
        report, runs = VALIDATIONS["io"](spec, names, address=address, work_dir=work_dir, progress=not as_json,
                                    on_policy=None if as_json else (lambda r: print_policy(r, spec)), seeds=seeds, jitter=jitter,
                                    traces=traces_dir, repeats=repeats, calibration=cal, keep_work=keep_work,
                                    note=lambda m: click.echo(m, err=True))
    except TraceMismatch as exc:
        raise click.UsageError(str(exc)) from None
    if figure_path:
        report["figure"] = str(figure(runs, figure_path))
    a = runs[0].emulated.attrs if runs else {}
    if emit(report, as_json=as_json, report_dir=report_dir, command=command_line(ctx, spec_path),
            machine={"host": a.get("host"), "versions": a.get("versions"), "nice": a.get("nice")}):
        return exit_if_failed(real_traces(runs), "")
    s = report["summary"]
    click.echo(f"\nall policies: max error {s['error_max']:.2%} (slowdown {s['stretch_error_max']:.2%}, makespan "
               f"{s['makespan_error_max']:.2%}), geo-mean {s['error_geomean']:.2%}")
    for what, r in report["ranking"].items():
        click.echo(f"ranking by {what}: {ranking_words(r)}\n  emulator:  {' < '.join(r['emulator'])}\n"
                   f"  simulator: {' < '.join(r['simulator'])}")
    if "spread" in report:
        sp = report["spread"]
        click.echo(f"\nagainst {sp['seeds']} jittered simulations per policy: real value inside the simulated "
                   f"range {sp['inside']} of {sp['values']}; error vs median max {sp['error_max']:.2%} "
                   f"(makespan {sp['makespan_error_max']:.2%}), geo-mean {sp['error_geomean']:.2%}")
        for what, r in sp["ranking"].items():
            click.echo(f"ranking by median {what}: {ranking_words(r)}")
    if "distribution" in report:
        d = report["distribution"]
        click.echo(f"\n{d['repeats']} real runs against {d['seeds']} simulations per policy: {d['noise']} of "
                   f"{d['values']} values noise (real median inside the simulated 5-95 % band), {d['model_errors']} "
                   f"model error(s); error of the medians max {d['error_max']:.2%}, geo-mean "
                   f"{d['error_geomean']:.2%}; {d['over_10pct']} over 10 %, {d['over_10pct_inside_band']} of them "
                   f"inside the band; ranking by median makespan: {ranking_words(d['ranking']['makespan'])}")
    if figure_path:
        click.echo(f"figure written to {figure_path}")
    exit_if_failed(real_traces(runs), "")


def real_traces(runs) -> list:
    """The real run of each policy, for the exit code."""
    return [r.emulated for r in runs]
