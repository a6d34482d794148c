"""``iolab sweep``: run a campaign's runs as Ray tasks, resumably."""

from __future__ import annotations

import sys

import click

from iolab.cli.options import Finite, strict_option

from iolab.campaign import load_runs, run_campaign
from iolab.campaign.runtimes import resolve
from iolab.campaign.study import is_study_document, load_study, module_of
from iolab.errors import RunError, SpecError
from iolab.specs.load import read_document
from iolab.specs.size import MAX_RUNS
from iolab.cli.format import dumps
from iolab.cli.live import SweepView


@click.command()
@strict_option
@click.argument("campaign_path", metavar="CAMPAIGN", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--address", help="join this Ray cluster (host:port or 'auto'); default: start a local Ray")
@click.option("--workers", type=click.IntRange(1, 100_000),
              help="runs in flight at once (local Ray: its num_cpus) [default: CPUs of this machine / the cluster]")
@click.option("--out", "out", type=click.Path(file_okay=False),
              help="output folder: journal, campaign.json, results.h5  [default: results/<campaign name>]")
@click.option("--mode", type=click.Choice(["event", "step"]), help="override the simulator engine of every run")
@click.option("--traces", type=click.Path(file_okay=False), help="also keep every run's full trace (HDF5) here")
@click.option("--retry-failed", is_flag=True, help="rerun the runs recorded as failed")
@click.option("--dry-run", is_flag=True, help="check the campaign and list its runs; run nothing")
@click.option("--flush-every", type=Finite(0.1), default=10.0, show_default=True,
              help="seconds between rewrites of results.h5 (the journal is written at once)")
@click.option("--max-runs", type=click.IntRange(1), default=MAX_RUNS, show_default=True,
              help="refuse a campaign whose axes expand to more runs")
@click.option("--json", "as_json", is_flag=True, help="print the summary (or, with --dry-run, the runs) as JSON")
@click.option("--live", is_flag=True, help="live view on a terminal: runs done/running/failed, throughput, ETA, "
              "what each worker runs (plain progress lines when stderr is not a terminal)")
def sweep(campaign_path: str, address: str | None, workers: int | None, out: str | None, mode: str | None,
          traces: str | None, retry_failed: bool, dry_run: bool, flush_every: float, max_runs: int,
          as_json: bool, live: bool) -> None:
    """Run the campaign in CAMPAIGN (YAML/JSON) on Ray; rerun to resume.

    Every finished run is appended to OUT/journal.jsonl at once; results.h5 is
    rewritten from it periodically and at the end.  A rerun skips finished runs.
    Exit status: 0 if every run succeeded, 1 if some runs failed (recorded with
    their error), 2 for a bad campaign, 130 if interrupted.
    """
    study = is_study_document(read_document(campaign_path))
    if dry_run and study:
        campaign, runs = load_study(campaign_path, max_runs=max_runs)
        click.echo(f"{campaign.name}: {len(runs)} runs (study {campaign.study})")
        for r in runs:
            click.echo(f"{r.index:5d} {r.run_id}  " + " ".join(f"{k}={v}" for k, v in r.params.items()
                                                             if not isinstance(v, (dict, list))))
        return
    if dry_run:
        campaign, runs = load_runs(campaign_path, mode=mode, max_runs=max_runs)
        try:  # as the real sweep does: a runtime that cannot be imported or called is refused here too
            resolve(campaign.runtime)
        except RunError as exc:
            raise SpecError(campaign_path, [("runtime", exc.message)]) from None
        if as_json:
            click.echo(dumps({"campaign": campaign.name, "runtime": campaign.runtime,
                              "runs": [{"run_id": r.run_id, **r.params} for r in runs]}))
            return
        click.echo(f"{campaign.name}: {len(runs)} runs (runtime {campaign.runtime})")
        for r in runs:
            p = r.params
            if r.experiment.get("kind") == "batch":
                click.echo(f"{r.index:5d} {r.run_id}  {p['workload']}  seed={p['seed']} scheduler={p['policy']}")
                continue
            click.echo(f"{r.index:5d} {r.run_id}  {p['workload']}  seed={p['seed']} policy={p['policy']} "
                       f"mapping={p['mapping']} R={p['io_nodes']} P={p['nodes_per_io_node']} b={p['bandwidth']:g}")
        return
    try:
        s = run_campaign(campaign_path, out, workers=workers, address=address, mode=mode, traces=traces,
                         retry_failed=retry_failed, flush_every=flush_every, stop_on_sigterm=True,
                         max_runs=max_runs,
                         progress=(lambda total, stream: SweepView(total, "runs", stream=stream)) if live else True)
    except KeyboardInterrupt:
        click.echo("\ninterrupted: finished runs are in the journal; rerun the same command to resume", err=True)
        sys.exit(130)
    if as_json:
        click.echo(dumps({"campaign": s.name, "executed": s.executed, "skipped": s.skipped, "failed": s.failed,
                          "workers": s.workers, "run_seconds": s.run_seconds, "wall_seconds": s.wall_seconds,
                          "results": str(s.out / "results.h5"), "journal": str(s.out / "journal.jsonl")}))
    elif s.executed:
        click.echo(f"{s.name}: {s.executed} runs in {s.run_seconds:.1f} s ({s.runs_per_second:,.1f} runs/s, "
                   f"{s.workers} in flight; {s.wall_seconds:.1f} s with Ray start and stop), "
                   f"{s.skipped} skipped as done, {s.failed} failed")
    if not as_json:
        click.echo(f"results: {s.out / 'results.h5'} (journal {s.out / 'journal.jsonl'})")
    if study and not s.failed and not s.interrupted:
        campaign, _ = load_study(campaign_path)
        finish = getattr(module_of(campaign.study), "campaign_summary", None)
        if finish is not None:
            finish(campaign.params, s.out)
            click.echo(f"study {campaign.study}: summary and figures in {s.out}", err=as_json)
    if s.failed:
        click.echo(f"{s.failed} run(s) failed; `iolab report {s.out}` lists them", err=True)
        sys.exit(1)
