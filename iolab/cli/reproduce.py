"""``iolab reproduce``: every claim of the five papers, run like for like, and the scorecard (docs/reproduce.md)."""

from __future__ import annotations

from pathlib import Path

import click

from iolab.atomic import atomic_write_text, check_output
from iolab.cli.format import dumps
from iolab.cli.study import hold_study_output
from iolab.errors import IolabError
from iolab.reproduce.claim import PAPERS
from iolab.reproduce.criteria import VERDICT_TEXT
from iolab.reproduce.run import Options, paper_of, reproduce as run_reproduce
from iolab.reproduce.scorecard import counts_table, results_block, rewrite_block
from iolab.studies.as_campaign import Engine


@click.command("reproduce")
@click.argument("papers", nargs=-1)
@click.option("--quick", "size", flag_value="quick", help="small sizes for CI; the scorecard says its verdicts are quick")
@click.option("--paper-size", "size", flag_value="paper", help="the papers' sizes (simulation; hours on 2 cores)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/reproduce", show_default=True,
              help="output folder: a folder per paper (its campaigns, measurements.json), scorecard.md/.csv/.json, "
                   "figures/")
@click.option("--real", is_flag=True, help="also the real runs the experiments offer (dheenadayalan2017's DS1 "
                                           "pairs on real processes; minutes each)")
@click.option("--docs", "docs", type=click.Path(dir_okay=False, exists=True),
              help="rewrite the generated block of this file (docs/results.md) from the scorecard")
@click.option("--workers", type=click.IntRange(1, 100_000), help="runs in flight at once (local Ray)")
@click.option("--address", help="join this Ray cluster (host:port or 'auto')")
@click.option("--no-ray", is_flag=True, help="run every campaign in this process (the default of --quick unless "
                                             "--workers or --address is given)")
@click.option("--no-figures", is_flag=True, help="no figures (no matplotlib)")
@click.option("--json", "as_json", is_flag=True, help="print the scorecard as JSON on stdout")
def reproduce(papers, size, out_dir, real, docs, workers, address, no_ray, no_figures, as_json) -> None:
    """Run the experiment behind every headline claim of PAPERS (default: all five: carretero2020,
    lackner2019, monniot2023, soysal2019, dheenadayalan2017) and write the scorecard.  Without --quick or
    --paper-size: the studies' default sizes.  A rerun resumes the experiments' campaigns."""
    size = size or "default"
    try:
        wanted = [paper_of(p) for p in papers]
    except ValueError as exc:
        raise IolabError(str(exc)) from None
    if docs:  # before any experiment runs: a file with no block to rewrite would be found out at the end
        if not Path(docs).is_file():  # a device or a FIFO is no page to rewrite
            raise IolabError(f"--docs {docs}: not a regular file; name the page whose generated block to rewrite")
        check_output(docs, option="--docs")
        try:
            rewrite_block(Path(docs).read_text(), "")
        except (ValueError, UnicodeDecodeError) as exc:
            raise IolabError(f"--docs {docs}: {exc}; nothing was run") from None
    small = size == "quick" and workers is None and address is None
    engine = Engine(workers=workers, address=address, use_ray=not (no_ray or small), stop_on_sigterm=True,
                    progress=not as_json)
    out = Path(out_dir)
    hold_study_output(out)
    flag = {"quick": ["--quick"], "paper": ["--paper-size"]}.get(size, [])
    command = " ".join(["iolab reproduce", *wanted, *flag] + (["--real"] if real else []))
    opts = Options(size=size, figures=not no_figures, engine=engine, real=real, command=command)
    card = run_reproduce(wanted, out, opts, say=lambda s: click.echo(s, err=True))
    if docs:
        path = Path(docs)
        try:
            atomic_write_text(path, rewrite_block(path.read_text(), results_block(card)))
        except ValueError as exc:
            raise IolabError(f"{path}: {exc}") from None
    if as_json:
        click.echo(dumps(card.as_dict()))
        return
    click.echo(("quick verdicts (reduced sizes): " if size == "quick" else "") + f"{len(card.rows)} claims of "
               f"{', '.join(card.papers)}")
    click.echo(counts_table(card))
    for r in card.rows:
        if r.verdict in ("not", "cannot"):
            click.echo(f"  {VERDICT_TEXT[r.verdict]:22s} {r.claim.id}: {r.why}")
    click.echo(f"\nwrote {out / 'scorecard.md'}, {out / 'scorecard.csv'}, {out / 'scorecard.json'}"
               + ("" if no_figures else f", figures in {out / 'figures'}") + (f"; rewrote {docs}" if docs else ""))


__all__ = ["reproduce", "PAPERS"]
