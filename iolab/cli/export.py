"""``iolab export``: a trace in formats other tools read (SWF, Batsim's jobs.csv, CSV per table)."""

from __future__ import annotations

import json

import click

from iolab.workloads import load_workload

from iolab.atomic import check_output
from iolab.errors import TraceError
from iolab.export import FORMATS, batsim_rows, export_trace
from iolab.metrics.batch_trace import is_batch_trace
from iolab.metrics.partial import cut_short
from iolab.specs.load import parse_spec
from iolab.trace import Trace, read_trace
from iolab.trace.facts import check_trace


def spec_jobs(trace: Trace) -> dict:
    """The spec's jobs by id (their walltime and user), when the trace's spec gives them back; else {}."""
    spec = trace.attrs.get("spec")
    if not isinstance(spec, dict) or spec.get("kind") != "batch":
        return {}
    try:
        return {j.id: j for j in load_workload(parse_spec(spec))}
    except Exception:  # a workload file that moved, a spec of an older iolab: export without walltimes
        return {}


@click.command()
@click.argument("trace_path", metavar="TRACE", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True,
              help="swf: Standard Workload Format 2.2; batsim-csv: Batsim's jobs.csv columns (evalys reads it); "
                   "batsim-json: a Batsim JSON workload (jobs, delay profiles, what the run did under each job's "
                   "iolab field; iolab workload import batsim reads it back); "
                   "csv: one TABLE.csv per trace table plus attrs.json, into the directory -o names")
@click.option("-o", "--output", type=click.Path(), required=True,
              help="file to write (a directory for --format csv)")
@click.option("--json", "as_json", is_flag=True, help="print what was written as JSON")
def export(trace_path: str, fmt: str, output: str, as_json: bool) -> None:
    """Write TRACE (from simulate or emulate) as FORMAT.  swf, batsim-csv and batsim-json take a batch trace
    (an I/O trace's apps are exported as jobs on its R x P nodes too); csv takes any trace."""
    check_output(output, [trace_path], option="-o", folder=fmt == "csv")
    trace = read_trace(trace_path)
    check_trace(trace, trace_path)
    if len(trace.jobs) == 0:  # as `iolab report` refuses it: nothing a run left to export
        raise TraceError(f"{trace_path}: trace has no jobs (no /jobs rows): nothing to export")
    if fmt != "csv" and not is_batch_trace(trace) and "nodes_per_io_node" not in trace.attrs:
        raise TraceError(f"{trace_path}: neither a batch nor an I/O trace; --format {fmt} needs one")
    try:
        written = export_trace(trace, fmt, output, source=str(trace_path),
                               jobs=spec_jobs(trace) if fmt != "csv" else None)
    except ValueError as exc:  # jobs that overcommit the nodes: no valid node assignment
        raise TraceError(f"{trace_path}: {exc}") from None
    total = len(trace.jobs)
    rows = total if fmt == "swf" else len(batsim_rows(trace)) if fmt == "batsim-csv" else total
    cut = cut_short(trace)
    if as_json:
        click.echo(json.dumps({"output": str(output), "format": fmt, "jobs": rows, "jobs_in_trace": total,
                               "complete": cut is None,
                               "files": [str(w) for w in written] if fmt == "csv" else [str(output)]}))
        return
    click.echo(f"{output}: {fmt}, {rows:,} of {total:,} jobs" + (f", {len(written)} files" if fmt == "csv" else ""))
    if rows < total:
        click.echo(f"  not written: {total - rows:,} jobs that never started (batsim-csv has a row per job that ran)")
    if cut is not None:
        how = ("the trace's tables as they are (the cut jobs have status killed and no end)" if fmt == "csv"
               else "a job cut short is written as killed, ending when it was killed")
        click.echo(f"  {cut.describe('jobs')}; {how}; what the run would have done after is missing")
