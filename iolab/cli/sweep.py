"""``iolab sweep``: run a campaign's runs as Ray tasks, resumably."""

from __future__ import annotations

import sys

import click

from .options import strict_option

from ..campaign import load_runs, run_campaign
from .live import SweepView


@click.command()
@strict_option
@click.argument("campaign_path", metavar="CAMPAIGN", type=click.Path(dir_okay=False))
@click.option("--address", help="join this Ray cluster (host:port or 'auto'); default: start a local Ray")
@click.option("--workers", type=click.IntRange(1, 100_000),
              help="runs in flight at once (local Ray: its num_cpus) [default: CPUs of this machine / the cluster]")
@click.option("--out", "out", type=click.Path(file_okay=False),
              help="output folder: journal, campaign.json, results.h5  [default: results/<campaign name>]")
@click.option("--mode", type=click.Choice(["event", "step"]), help="override the simulator engine of every run")
@click.option("--traces", type=click.Path(file_okay=False), help="also keep every run's full trace (HDF5) here")
@click.option("--retry-failed", is_flag=True, help="rerun the runs recorded as failed")
@click.option("--dry-run", is_flag=True, help="check the campaign and list its runs; run nothing")
@click.option("--flush-every", type=click.FloatRange(0.1), default=10.0, show_default=True,
              help="seconds between rewrites of results.h5 (the journal is written at once)")
@click.option("--live", is_flag=True, help="live view on a terminal: runs done/running/failed, throughput, ETA, "
              "what each worker runs (plain progress lines when stderr is not a terminal)")
def sweep(campaign_path: str, address: str | None, workers: int | None, out: str | None, mode: str | None,
          traces: str | None, retry_failed: bool, dry_run: bool, flush_every: float, live: bool) -> None:
    """Run the campaign in CAMPAIGN (YAML/JSON) on Ray; rerun to resume.

    Every finished run is appended to OUT/journal.jsonl at once; results.h5 is
    rewritten from it periodically and at the end.  A rerun skips finished runs.
    Exit status: 0 if every run succeeded, 3 if some runs failed (recorded with
    their error), 130 if interrupted.
    """
    if dry_run:
        campaign, runs = load_runs(campaign_path, mode=mode)
        click.echo(f"{campaign.name}: {len(runs)} runs (runtime {campaign.runtime})")
        for r in runs:
            p = r.params
            click.echo(f"{r.index:5d} {r.run_id}  {p['workload']}  seed={p['seed']} policy={p['policy']} "
                       f"mapping={p['mapping']} R={p['io_nodes']} P={p['nodes_per_io_node']} b={p['bandwidth']:g}")
        return
    try:
        s = run_campaign(campaign_path, out, workers=workers, address=address, mode=mode, traces=traces,
                         retry_failed=retry_failed, flush_every=flush_every, stop_on_sigterm=True,
                         progress=(lambda total, stream: SweepView(total, "runs", stream=stream)) if live else True)
    except KeyboardInterrupt:
        click.echo("\ninterrupted: finished runs are in the journal; rerun the same command to resume", err=True)
        sys.exit(130)
    if s.executed:
        click.echo(f"{s.name}: {s.executed} runs in {s.run_seconds:.1f} s ({s.runs_per_second:.3g} runs/s, "
                   f"{s.workers} in flight; {s.wall_seconds:.1f} s with Ray start and stop), "
                   f"{s.skipped} skipped as done, {s.failed} failed")
    click.echo(f"results: {s.out / 'results.h5'} (journal {s.out / 'journal.jsonl'})")
    if s.failed:
        click.echo(f"{s.failed} run(s) failed; `iolab report {s.out}` lists them", err=True)
        sys.exit(3)
