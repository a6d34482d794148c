"""``iolab study``: the papers' studies, with progress, CSV, JSON and figures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click


@click.group()
def study() -> None:
    """Run a paper's study (see docs/studies.md)."""


@study.command("carretero")
@click.option("--quick", is_flag=True, help="small size for CI: 4 alphas x 2 workloads, 25-100 iterations")
@click.option("--workloads", type=click.IntRange(1, 1000), help="workloads per alpha (default 10)")
@click.option("--seed", type=int, default=2020, show_default=True)
@click.option("--jobs", type=click.IntRange(1, 256), default=lambda: os.cpu_count() or 1,
              show_default="number of CPUs", help="worker processes")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/carretero",
              show_default=True)
@click.option("--no-figures", is_flag=True)
def carretero(quick: bool, workloads: int | None, seed: int, jobs: int, out_dir: str, no_figures: bool) -> None:
    """Make-Pack vs First-Fit over the I/O load (carretero2020 §6.2.3-6.2.4, Figs. 10-12, 14, 15)."""
    from dataclasses import replace

    from ..studies.carretero import LABELS, QUICK, StudySize, run_study

    size = QUICK if quick else StudySize()
    if workloads:
        size = replace(size, workloads=workloads)
    out = Path(out_dir)
    s = run_study(out, size, seed=seed, jobs=jobs, figures=not no_figures)
    click.echo(f"\n{s['workloads']} workloads, {s['events']} events in {s['wall_seconds']:.1f} s "
               f"({s['events_per_second']:.3g} events/s per process, {jobs} processes)")
    click.echo("geometric means relative to First-Fit (makespan; stretch = mean over packs of the pack's max slowdown):")
    click.echo(f"{'strategy':34s} {'R=1':>6s} {'R=3':>6s} {'R=5':>6s} {'stretch':>8s} {'packs':>6s}")
    for name, e in s["strategies"].items():
        click.echo(f"{LABELS[name]:34s} {e['makespan_R1']:6.3f} {e['makespan_R3']:6.3f} {e['makespan_R5']:6.3f} "
                   f"{e['stretch']:8.3f} {e['packs']:6.3f}")
    click.echo(f"{'paper (Sensibility=1, Fig. 15)':34s} {1.09:6.2f} {0.71:6.2f} {0.53:6.2f}")
    click.echo(f"\nwrote {out / 'runs.csv'}, {out / 'summary.json'}" + ("" if no_figures else f" and figures in {out}"))


@study.command("lackner")
@click.option("--quick", is_flag=True, help="small size for CI: 60 jobs, 2 workloads, p in {0, .5, 1}")
@click.option("--workloads", type=click.IntRange(1, 1000), help="workloads (seeds), default 10")
@click.option("--repetitions", type=click.IntRange(1, 1000), help="random assignments per p and workload (paper: 10; default 1)")
@click.option("--jobs-per-workload", "njobs", type=click.IntRange(1, 10_000_000), help="default 500 (Table I)")
@click.option("--jobs", type=click.IntRange(1, 256), default=lambda: os.cpu_count() or 1,
              show_default="number of CPUs", help="worker processes")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/lackner", show_default=True)
@click.option("--no-figures", is_flag=True)
def lackner(quick, workloads, repetitions, njobs, jobs, out_dir, no_figures) -> None:
    """SAS vs random tier assignment (lackner2019 Figs. 3 and 4)."""
    from dataclasses import replace

    from ..studies.lackner import QUICK, LacknerSize, run_study

    size = QUICK if quick else LacknerSize()
    for name, v in (("workloads", workloads), ("repetitions", repetitions), ("jobs", njobs)):
        if v:
            size = replace(size, **{name: v})
    s = run_study(Path(out_dir), size, jobs=jobs, figures=not no_figures)
    click.echo(f"\n{s['runs']} runs in {s['wall_seconds']:.1f} s")
    click.echo(f"{'case':14s} {'SAS makespan h':>15s} {'best random h (p)':>20s} {'SAS turnaround h':>17s} "
               f"{'best random h (p)':>20s} {'SAS node/HPS util':>18s}")
    for case, h in s["headline"].items():
        click.echo(f"{case:14s} {h['sas_makespan']/3600:15.1f} {h['best_random_makespan']/3600:14.1f} ({h['best_p_makespan']:.2f})"
                   f" {h['sas_turnaround']/3600:17.1f} {h['best_random_turnaround']/3600:14.1f} ({h['best_p_turnaround']:.2f})"
                   f" {h['sas_node_utilisation']:8.2f}/{h['sas_hps_utilisation']:.2f}")
    click.echo(f"paper: {s['paper']}")
    click.echo(f"wrote {out_dir}/runs.csv, summary.json" + ("" if no_figures else ", fig3.png, fig4.png"))
