"""A finished real run's verdict: exit 1 when any app or job did not end ``ok`` or the work folder
was deleted under the run (the trace is written first; docs/cli.md, "Exit codes")."""

from __future__ import annotations

import click

from iolab.cli import EXIT_FAILED
from iolab.units import seconds


def problems(trace) -> list[str]:
    """What went wrong in one real run: apps/jobs that did not end ok, a deleted work folder."""
    out = []
    bad = [str(i) for i, st in zip(trace.jobs["id"], trace.jobs["status"]) if st != "ok"] if len(trace.jobs) else []
    if bad:
        out.append(f"{len(bad)} of {len(trace.jobs)} app(s)/job(s) did not end ok: {', '.join(bad[:10])}"
                   + (" ..." if len(bad) > 10 else ""))
    gone = trace.attrs.get("work_dir_deleted")
    if gone is not None:
        out.append(f"the work folder {trace.attrs.get('work_dir', '')} was deleted during the run "
                   f"(seen at {seconds(float(gone))}): its logs and checkpoints are lost")
    return out


def exit_if_failed(traces, where: str) -> None:
    """After the results are printed: say what failed on stderr and exit 1, or return."""
    found = [p for t in traces for p in problems(t)]
    if found:
        for p in found:
            click.echo(f"run failed: {p}", err=True)
        click.echo(f"trace written to {where}" if where else "", err=True, nl=bool(where))
        raise click.exceptions.Exit(EXIT_FAILED)
