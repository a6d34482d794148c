"""``iolab export``: a trace in formats other tools read (SWF, Batsim's jobs.csv, CSV per table)."""

from __future__ import annotations

import click

from ..errors import TraceError
from ..export import FORMATS, export_trace
from ..metrics.batch_trace import is_batch_trace
from ..trace import read_trace


@click.command()
@click.argument("trace_path", metavar="TRACE", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True,
              help="swf: Standard Workload Format 2.2; batsim-csv: Batsim's jobs.csv columns (evalys reads it); "
                   "csv: one TABLE.csv per trace table plus attrs.json, into the directory -o names")
@click.option("-o", "--output", type=click.Path(), required=True,
              help="file to write (a directory for --format csv)")
def export(trace_path: str, fmt: str, output: str) -> None:
    """Write TRACE (from simulate or emulate) as FORMAT.  swf and batsim-csv take a batch trace
    (an I/O trace's apps are exported as jobs on its R x P nodes too); csv takes any trace."""
    trace = read_trace(trace_path)
    if fmt != "csv" and not is_batch_trace(trace) and "nodes_per_io_node" not in trace.attrs:
        raise TraceError(f"{trace_path}: neither a batch nor an I/O trace; --format {fmt} needs one")
    try:
        written = export_trace(trace, fmt, output, source=str(trace_path))
    except ValueError as exc:  # jobs that overcommit the nodes: no valid node assignment
        raise TraceError(f"{trace_path}: {exc}") from None
    rows = len(trace.jobs)
    click.echo(f"{output}: {fmt}, {rows} jobs" + (f", {len(written)} files" if fmt == "csv" else ""))
