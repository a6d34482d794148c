"""``iolab report``: the metrics of a saved trace."""

from __future__ import annotations

import click

from ..metrics import io_metrics
from ..trace import read_trace
from .format import dumps
from .simulate import metrics_json, print_metrics


@click.command()
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="print metrics as JSON")
def report(path: str, as_json: bool) -> None:
    """Print the metrics of the trace in PATH (written by simulate or emulate)."""
    trace = read_trace(path)
    m = io_metrics(trace)
    if as_json:
        click.echo(dumps(metrics_json(m)))
    else:
        a = trace.attrs
        print_metrics(m, f"{path}: runtime {a.get('runtime', '?')}, policy {a.get('policy', '?')}, seed {a.get('seed', '?')}")
