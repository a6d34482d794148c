"""What every ``iolab validate`` ends with: the ``--report DIR`` page and the ``--json`` document."""

from __future__ import annotations

import click

from iolab.plots.validation import write_report
from iolab.cli.format import dumps


def emit(report: dict, *, as_json: bool, report_dir: str | None, command: str, machine: dict) -> bool:
    """Write the page if asked (``machine``: the real run's host and versions); print the report as JSON
    if asked.  True when the JSON went to stdout (nothing else must follow)."""
    if report_dir:
        page = write_report(report, report_dir, command=command, machine=machine, json_text=dumps(report))
        if not as_json:
            click.echo(f"report written to {page}", err=True)
    if as_json:
        click.echo(dumps(report))
    return as_json
