"""``iolab validate`` on a ``kind: batch`` spec: print the job-by-job comparison (docs/validation.md)."""

from __future__ import annotations

import click

from iolab.validation.io import TraceMismatch
from iolab.runners import VALIDATIONS
from iolab.cli.format import seconds, table
from iolab.units import short
from iolab.cli.outcome import exit_if_failed
from iolab.cli.validate_output import emit


TIMES = ("makespan", "mean_turnaround")  # the run metrics in seconds (the others are utilisations)


def _pct(x: float) -> str:
    return f"{x:.2%}" if x == x else "-"


def print_comparison(title: str, c: dict) -> None:
    click.echo(f"\n{title}")
    rows = [(job, v["tier"]["real"] + ("" if v["tier"]["same"] else f" (sim {v['tier']['sim']})"),
             v["start"]["real"], v["start"]["sim"], v["turnaround"]["real"], v["turnaround"]["sim"],
             _pct(v["turnaround"]["error"]), v["stage_in"]["real"], v["stage_in"]["sim"])
            for job, v in c["jobs"].items()]
    click.echo(table(["job", "tier", "start real", "start sim", "turnaround real", "turnaround sim", "error",
                      "stage-in real", "stage-in sim"], rows))
    # times (makespan, mean turnaround) beside utilisations (fractions): the times as h:mm:ss, so the
    # columns' decimals are the utilisations' own
    rows = [(k.replace("_", " "), *((seconds(v["real"]), seconds(v["sim"])) if k in TIMES else (v["real"], v["sim"])),
             _pct(v["error"])) for k, v in c["run"].items()]
    click.echo(table(["", "real", "simulated", "rel. error"], rows))
    click.echo(f"turnaround error per job: max {_pct(c['turnaround_error_max'])}, geo-mean "
               f"{_pct(c['turnaround_error_geomean'])}; largest start difference {seconds(c['start_diff_max'])}; "
               f"tier differs: {', '.join(c['tier_differs']) or 'none'}; disks differ: "
               f"{', '.join(c['disks_differ']) or 'none'}"
               + (f"; not compared (not ok in both): {', '.join(c['not_compared'])}" if c["not_compared"] else "")
               + (f"; suspensions by the load controller: real {c['suspensions']['real']}, simulated "
                  f"{c['suspensions']['sim']}" if c["suspensions"]["real"] or c["suspensions"]["sim"] else ""))


def validate_batch_cli(spec, as_json: bool, address, work_dir, traces_dir, calibration, *, report_dir=None,
                       command: str = "", keep_work: bool = False) -> None:
    try:
        report, traces = VALIDATIONS["batch"](spec, address=address, work_dir=work_dir, traces=traces_dir,
                                   calibration=calibration, progress=not as_json,
                                   note=None if as_json else lambda m: click.echo(m, err=True),
                                   keep_work=keep_work, work_note=lambda m: click.echo(m, err=True))
    except TraceMismatch as exc:
        raise click.UsageError(str(exc)) from None
    if emit(report, as_json=as_json, report_dir=report_dir, command=command,
            machine={"host": report["real"]["host"], "versions": report["real"]["versions"]}):
        return exit_if_failed([traces["real"]], "")
    cal = report["calibration"]
    o = cal["spec_seconds"]
    click.echo(f"{report['spec']}: scheduler {report['scheduler']}, real run {report['real']['wall_seconds']:.0f} s "
               f"wall at time scale {report['time_scale']:g}")
    click.echo(f"calibration from {cal['source']}: launch {short(cal['wall']['launch'], 3)} s, exit "
               f"{short(cal['wall']['exit'], 3)} s, I/O phase {short(cal['wall']['io_phase'], 3)} s wall = "
               f"{short(o['launch'])}, {short(o['exit'])}, {short(o['io_phase'])} spec s")
    d = cal.get("delivered") or {}
    click.echo("delivered link shares: " + ", ".join(
        f"{k} {short(v, 3)}" if v == v else f"{k} not measured (taken as 1: the full rate)" for k, v in d.items()))
    print_comparison("simulated as written (no launch/exit costs unless the spec sets platform.overheads):",
                     report["uncalibrated"])
    print_comparison("simulated with the calibration:", report["calibrated"])
    exit_if_failed([traces["real"]], "")
