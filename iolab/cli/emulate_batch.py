"""``iolab emulate`` on a ``kind: batch`` spec: run it, print the batch metrics."""

from __future__ import annotations

from dataclasses import asdict

import click

from iolab.errors import Interrupted
from iolab.runners import runner
from iolab.cli.format import batch_metrics_table, dumps, seconds
from iolab.cli.live import LiveView


def batch_sink(spec, quiet: bool, live: bool):
    """``--live``: the live view (plain lines every ``progress_every`` s off a terminal)."""
    if not live:
        return not quiet
    return LiveView(not quiet, prefix="batch", every=spec.emulator.progress_every)


def emulate_batch(spec, path: str, *, out, address, work_dir, as_json: bool, quiet: bool, live: bool = False,
                  launcher: str | None = None):
    """Run the batch experiment (its overrides applied), print its metrics; returns the trace."""
    real = runner("batch", "real")
    try:
        trace = real.run(spec, out=out, address=address, work_dir=work_dir,
                         progress=batch_sink(spec, quiet, live), source=path, launcher=launcher)
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted; partial trace in {out}") from None
    m = real.metrics(trace)
    a = trace.attrs  # the scheduler as the trace names it, as iolab simulate prints it
    if as_json:
        click.echo(dumps({**asdict(m), "scheduler": a["scheduler"], "failures": a.get("failures", {}),
                          "wall_seconds": a["wall_seconds"], "staging_rate_achieved": a["staging_rate_achieved"],
                          "staging_rate_target": a["staging_rate_target"],
                          "launch_overhead": a.get("launch_overhead", {})}))
        return trace
    click.echo(f"{spec.name}: scheduler {a['scheduler']}, {m.jobs:,} jobs on {spec.platform.nodes:,} nodes, "
               f"emulator ({a.get('launcher', 'mpiexec')}, time scale {a['time_scale']:g}, bytes scale {a['bytes_scale']:g}, "
               f"{a['wall_seconds']:.0f} s wall)")
    click.echo(batch_metrics_table(m))
    for job, f in a.get("failures", {}).items():
        click.echo(f"{job}: {f['status']} at {seconds(f['time'])}: {f['reason']}")
    click.echo(f"trace written to {out}")
    return trace
