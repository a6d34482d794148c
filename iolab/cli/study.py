"""``iolab study``: the papers' studies, run as campaigns (Ray, resumable), with summary and figures."""

from __future__ import annotations

import functools
import sys
from dataclasses import replace
from pathlib import Path

import click

from iolab.errors import IolabError

from iolab.studies import carretero as carretero_study
from iolab.studies import combined as combined_study
from iolab.studies import dheenadayalan as dheenadayalan_study
from iolab.studies import dheenadayalan_emulated as emulated_ds1
from iolab.studies import lackner as lackner_study
from iolab.studies import monniot as monniot_study
from iolab.studies import soysal as soysal_study
from iolab.studies.as_campaign import Engine, write_campaign
from iolab.atomic import check_output
from iolab.emulator.output_lock import hold_outputs
from iolab.cli.format import dumps, table


def hold_study_output(out_dir) -> None:
    """One study per output folder, held until the command ends: its runs, summary, tables, figures and
    (dheenadayalan) emulated runs; a second study on it is refused with exit 2 and this one's PID.  A folder it
    cannot write is refused first (exit 2)."""
    check_output(out_dir, option="--out", folder=True)
    click.get_current_context().with_resource(hold_outputs([Path(out_dir)], "study output"))


def engine_options(fn):
    """--workers/--jobs, --address, --no-ray, --retry-failed, --campaign: where and how the study's runs go."""
    @click.option("--workers", "--jobs", "workers", type=click.IntRange(1, 100_000),
                  help="runs in flight at once (local Ray: its num_cpus) [default: CPUs of this machine / the cluster]")
    @click.option("--address", help="join this Ray cluster (host:port or 'auto'); default: start a local Ray")
    @click.option("--no-ray", is_flag=True, help="run the runs one after the other in this process (same journal "
                                                  "and results; no Ray start); the default of --quick unless "
                                                  "--workers or --address is given (a few seconds of runs need "
                                                  "no Ray start of ~6 s)")
    @click.option("--retry-failed", is_flag=True, help="rerun the runs recorded as failed")
    @click.option("--campaign", "campaign_file", type=click.Path(dir_okay=False),
                  help="write the study's campaign file here and run nothing (`iolab sweep FILE` runs it)")
    @functools.wraps(fn)
    def wrapper(*args, workers, address, no_ray, retry_failed, campaign_file, **kwargs):
        small = kwargs.get("quick") and workers is None and address is None
        engine = Engine(workers=workers, address=address, use_ray=not (no_ray or small), stop_on_sigterm=True,
                        retry_failed=retry_failed)
        try:
            return fn(*args, engine=engine, campaign_file=campaign_file, **kwargs)
        except KeyboardInterrupt:
            click.echo("\ninterrupted: finished runs are in the journal; rerun the same command to resume", err=True)
            sys.exit(130)
    return wrapper


@click.group()
def study() -> None:
    """Run a paper's study (see docs/studies.md)."""


@study.command("carretero")
@click.option("--quick", is_flag=True, help="small size for CI: 4 alphas x 2 workloads, 25-100 iterations")
@click.option("--workloads", type=click.IntRange(1, 1000), help="workloads per alpha (default 10)")
@click.option("--seed", type=click.IntRange(0), default=2020, show_default=True,
              help="seed of the generated workloads")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/carretero",
              show_default=True,
              help="output folder: the campaign (journal, results.h5), CSV tables, summary.json, figures")
@click.option("--no-figures", is_flag=True, help="write the tables only, no figures (no matplotlib)")
@engine_options
@click.option("--json", "as_json", is_flag=True, help="print the study's summary as JSON on stdout (progress stays on stderr)")
def carretero(quick: bool, workloads: int | None, seed: int, out_dir: str, no_figures: bool, as_json: bool,
              engine: Engine, campaign_file: str | None) -> None:
    """Make-Pack vs First-Fit over the I/O load (carretero2020 §6.2.3-6.2.4, Figs. 10-12, 14, 15)."""
    size = carretero_study.QUICK if quick else carretero_study.StudySize()
    if workloads:
        size = replace(size, workloads=workloads)
    if campaign_file:
        write_campaign(campaign_file, "carretero", carretero_study.campaign_params(size, seed))
        return
    out = Path(out_dir)
    where = ("in this process, one run at a time" if not engine.use_ray
             else f"{engine.workers:,} worker(s)" if engine.workers else "a worker per CPU")
    hold_study_output(out)
    s = carretero_study.run_study(out, size, seed=seed, jobs=engine.workers, figures=not no_figures, engine=engine)
    if as_json:
        click.echo(dumps(s))
        return
    click.echo(f"\n{s['workloads']:,} workloads, {s['events']:,} events in {s['wall_seconds']:.1f} s "
               f"({s['events_per_second']:,.0f} events per second per process; {where})")
    click.echo("geometric means relative to First-Fit (makespan with R = 1, 3, 5 I/O nodes; slowdown = mean over "
               "packs of the pack's largest slowdown, the stretch measure of carretero2020 Fig. 11; packs):")
    click.echo(f"{'strategy':34s} {'R=1':>6s} {'R=3':>6s} {'R=5':>6s} {'slowdown':>8s} {'packs':>6s}")
    for name, e in s["strategies"].items():
        click.echo(f"{carretero_study.LABELS[name]:34s} {e['makespan_R1']:6.3f} {e['makespan_R3']:6.3f} "
                   f"{e['makespan_R5']:6.3f} {e['stretch']:8.3f} {e['packs']:6.3f}")
    click.echo(f"{'paper (Sensibility=1, Fig. 15)':34s} {1.09:6.2f} {0.71:6.2f} {0.53:6.2f}")
    click.echo(f"\nwrote {out / 'results.h5'}, {out / 'runs.csv'}, {out / 'summary.json'}"
               + ("" if no_figures else f" and figures in {out}"))


@study.command("lackner")
@click.option("--quick", is_flag=True, help="small size for CI: 60 jobs, 2 workloads, p in {0, .5, 1}")
@click.option("--workloads", type=click.IntRange(1, 1000), help="workloads (seeds), default 10")
@click.option("--repetitions", type=click.IntRange(1, 1000), help="random assignments per p and workload (paper: 10; default 1)")
@click.option("--jobs-per-workload", "njobs", type=click.IntRange(1, 10_000_000), help="default 500 (Table I)")
@click.option("--sensitivity", is_flag=True,
              help="instead of Figs. 3-4: SAS against random p in 0.3..0.7 at 2048 GB, k = 5, with each workload "
                   "constant the paper does not give at half and double its default (sensitivity.csv, .png)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="output folder: the campaign (journal, results.h5), CSV tables, summary.json, figures "
                   "[default: results/lackner, or results/lackner-sensitivity]")
@click.option("--no-figures", is_flag=True, help="write the tables only, no figures (no matplotlib)")
@engine_options
@click.option("--json", "as_json", is_flag=True, help="print the study's summary as JSON on stdout (progress stays on stderr)")
def lackner(quick, workloads, repetitions, njobs, sensitivity, out_dir, no_figures, as_json, engine,
            campaign_file) -> None:
    """SAS vs random tier assignment (lackner2019 Figs. 3 and 4), or its sensitivity to the workload constants."""
    if sensitivity:
        size = lackner_study.QUICK_SENSITIVITY if quick else lackner_study.SENSITIVITY
    else:
        size = lackner_study.QUICK if quick else lackner_study.LacknerSize()
    out_dir = out_dir or ("results/lackner-sensitivity" if sensitivity else "results/lackner")
    for name, v in (("workloads", workloads), ("repetitions", repetitions), ("jobs", njobs)):
        if v:
            size = replace(size, **{name: v})
    if campaign_file:
        write_campaign(campaign_file, "lackner", lackner_study.params_of(size))
        return
    hold_study_output(out_dir)
    s = lackner_study.run_study(Path(out_dir), size, figures=not no_figures, engine=engine)
    if as_json:
        click.echo(dumps(s))
        return
    if sensitivity:
        click.echo(f"\n{s['runs']} runs in {s['wall_seconds']:.1f} s; SAS over random assignment (< 0: SAS better)")
        click.echo(table(["setting", "makespan vs best p", "vs fit", "turnaround vs best p", "vs fit",
                          "SAS HPS util.", "SAS node util."],
                         [(r["setting"], f"{r['gap_makespan']:+.2%}", f"{r['gap_fit_makespan']:+.2%}",
                           f"{r['gap_mean_turnaround']:+.2%}", f"{r['gap_fit_mean_turnaround']:+.2%}",
                           f"{r['sas_hps_utilisation']:.3f}", f"{r['sas_node_utilisation']:.3f}")
                          for r in s["sensitivity"]]))
        return
    click.echo(f"\n{s['runs']} runs in {s['wall_seconds']:.1f} s")
    click.echo(f"{'case':14s} {'SAS makespan h':>15s} {'best random h (p)':>20s} {'SAS turnaround h':>17s} "
               f"{'best random h (p)':>20s} {'SAS node/HPS util':>18s}")
    for case, h in s["headline"].items():
        click.echo(f"{case:14s} {h['sas_makespan']/3600:15.1f} {h['best_random_makespan']/3600:14.1f} ({h['best_p_makespan']:.2f})"
                   f" {h['sas_turnaround']/3600:17.1f} {h['best_random_turnaround']/3600:14.1f} ({h['best_p_turnaround']:.2f})"
                   f" {h['sas_node_utilisation']:8.2f}/{h['sas_hps_utilisation']:.2f}")
    click.echo(f"paper: {s['paper']}")
    click.echo(f"this run: {s['verdict']}.")
    click.echo(f"wrote {out_dir}/results.h5, runs.csv, summary.json" + ("" if no_figures else ", fig3.png, fig4.png"))


@study.command("monniot")
@click.option("--quick", is_flag=True, help="small size for CI: 1N1D and nNnD, 8 and 32 TB-eq, sum-cap scaling")
@click.option("--theta", type=click.Path(dir_okay=False), help="Theta job file (default ../shared/data/theta-2022-week4-io-jobs.yaml)")
@click.option("--scaling", type=click.Choice(["sum-cap", "peak", "none"]), multiple=True,
              help="platform scaling(s); default sum-cap and peak (quick: sum-cap)")
@click.option("--requeue", is_flag=True, help="also run round-robin and best-bandwidth with requeue (12 x 5 min)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/monniot", show_default=True,
              help="output folder: the campaign (journal, results.h5), CSV tables, summary.json, figures")
@click.option("--no-figures", is_flag=True, help="write the tables only, no figures (no matplotlib)")
@engine_options
@click.option("--json", "as_json", is_flag=True, help="print the study's summary as JSON on stdout (progress stays on stderr)")
def monniot(quick, theta, scaling, requeue, out_dir, no_figures, as_json, engine, campaign_file) -> None:
    """StorAlloc platform sizing on a Theta week (monniot2023 §5, Figs. 4, 6, 7)."""
    size = monniot_study.QUICK if quick else monniot_study.MonniotSize()
    if scaling:
        size = replace(size, scalings=tuple(scaling))
    if requeue:
        size = replace(size, requeue=(False, True))
    if campaign_file:
        path = Path(theta) if theta else monniot_study.default_theta_path()
        if not path.is_file():
            raise IolabError(f"Theta job file not found: {path} (pass --theta or set IOLAB_SHARED_DATA)")
        write_campaign(campaign_file, "monniot", monniot_study.params_of(size, path))
        return
    try:
        hold_study_output(out_dir)
        s = monniot_study.run_study(Path(out_dir), size, theta=theta, figures=not no_figures, engine=engine)
    except FileNotFoundError as err:  # a missing input file is bad input: exit 2
        raise IolabError(str(err)) from None
    if as_json:
        click.echo(dumps(s))
        return
    i = s["input"]
    click.echo(f"\n{s['runs']} runs in {s['wall_seconds']:.2f} s; {i['requests']} requests, sum_cap "
               f"{i['sum_cap'] / 1e12:.3f} TB, peak concurrent demand {i['peak_demand'] / 1e9:.0f} GB "
               f"({100 * i['peak_over_sum_cap']:.0f} % of sum_cap; the paper's year: <= "
               f"{100 * i['paper_peak_over_sum_cap_at_most']:.0f} %)")
    for sc, h in s["headline"].items():
        f = s["scalings"][sc]["factor"]
        click.echo(f"\n[{sc} scaling: capacities x {f:.3g}] % of sum_cap allocated, min-max over runs:")
        for key, per in h["pct_sum_cap"].items():
            cells = "  ".join(f"{c}: {v['min']:.1f}-{v['max']:.1f}" for c, v in per.items())
            click.echo(f"  {key:8s} {cells}   (all runs >= 99.5 % from: {h['first_capacity_all_full'].get(key)})")
        for c, per in h["fig7_max_failed_refused"].items():
            click.echo(f"  Fig. 7 {c}: " + ", ".join(f"{k} {v['failed']}f/{v['refused']}r" for k, v in per.items()))
    click.echo("\npaper: " + s["paper"]["fig4_split"] + "; " + s["paper"]["fig7"])
    click.echo(f"wrote {out_dir}/results.h5, runs.csv, disks.csv, summary.json" + ("" if no_figures else ", " + ", ".join(s.get("figures", []))))


@study.command("dheenadayalan")
@click.option("--quick", is_flag=True, help="small size for CI: DS2 of 40 jobs, DS3 of 10; the simulated DS1 under the "
                                            "real DS1 runs' controller (tier probe, r_threshold 45 s); the real DS1 "
                                            "runs' jobs a tenth as long at half the time scale (10-15 s wall each; "
                                            "the quick study 25-45 s)")
@click.option("--no-emulate", is_flag=True, help="skip DS1's real runs (MPI jobs, real suspensions): simulate only")
@click.option("--fitted", is_flag=True, help="the paper's sizes with the constants it leaves open fitted (service "
                                             "times x 1.29, arrivals every 700 s, DS3's own draw): DS2's and DS3's "
                                             "no-controller FCFS totals within 5 %% of Table 1's (docs/controller.md)")
@click.option("--seed", type=click.IntRange(0), help="seed of the drawn data sets (default 2017)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/dheenadayalan",
              show_default=True,
              help="output folder: the campaign (journal, results.h5), CSV tables, summary.json, figures")
@click.option("--no-figures", is_flag=True, help="write the tables only, no figures (no matplotlib)")
@engine_options
@click.option("--json", "as_json", is_flag=True, help="print the study's summary as JSON on stdout (progress stays on stderr)")
def dheenadayalan(quick: bool, no_emulate: bool, fitted: bool, seed: int | None, out_dir: str, no_figures: bool,
                  as_json: bool, engine: Engine, campaign_file: str | None) -> None:
    """The storage load controller against FCFS and EASY (dheenadayalan2017 Table 1, Fig. 1), simulated; DS1
    also on real processes at a small scale (after the simulations, one real run after the other)."""
    if quick and fitted:
        raise IolabError("--fitted and --quick: the fit is of the paper's sizes (DS2 of 152 jobs, DS3 of 21); "
                         "drop one of them")
    full = dheenadayalan_study.DheenadayalanSize()
    size = dheenadayalan_study.QUICK if quick else dheenadayalan_study.FITTED if fitted else full
    if seed is not None:
        size = replace(size, seed=seed)
    if campaign_file:
        write_campaign(campaign_file, "dheenadayalan", dheenadayalan_study.params_of(size))
        return
    emulate = None if no_emulate else (emulated_ds1.QUICK if quick else emulated_ds1.FULL)
    hold_study_output(out_dir)
    s = dheenadayalan_study.run_study(Path(out_dir), size, figures=not no_figures, engine=engine, emulate=emulate,
                                      say=lambda msg: click.echo(msg, err=True))
    failed = any(r["status"] != "ok" for r in s.get("emulated", {}).get("runs", []))
    if as_json:
        click.echo(dumps(s))
        if failed:
            raise click.exceptions.Exit(1)
        return
    click.echo(f"{'data set':8s} {'sched':5s} {'completion':>12s} {'+controller':>12s} {'flow':>12s} "
               f"{'+controller':>12s} {'suspensions':>11s}   paper (completion, flow)")
    by = {(r["dataset"], r["scheduler"], r["controller"]): r for r in s["rows"]}
    for (ds, sched, on), r in by.items():
        if on:
            continue
        c = by[(ds, sched, True)]
        p = dheenadayalan_study.PAPER.get(ds, {}).get(sched)
        paper = f"{p[0]} -> {p[1]}, {p[2]} -> {p[3]}" if p else "-"
        click.echo(f"{ds:8s} {sched:5s} {r['completion_hms']:>12s} {c['completion_hms']:>12s} {r['flow_hms']:>12s} "
                   f"{c['flow_hms']:>12s} {c['suspensions']:11d}   {paper}")
    if quick:
        click.echo(f"quick size: DS2 of {size.ds2_jobs} jobs (the paper's: {full.ds2_jobs}) and DS3 of {size.ds3_jobs} "
                   f"({full.ds3_jobs}), so their times are not comparable with the paper's column; DS1 is the "
                   "paper's six jobs. The full size: iolab study dheenadayalan (docs/studies.md).")
    if size.ds1_controller == "real":
        c = emulated_ds1.EmulatedDS1().controller
        click.echo(f"DS1's simulated controller: the real runs' (benchmark unit {c['model']['probe']} probe, r_threshold "
                   f"{c['r_threshold']:g} s, d {c['d']:g} s, recent {c['recent']:g} s, omega {c['omega'] / 1e6:g} MB; "
                   "§5: 60 s, which the stated law never reaches); DS2 and DS3: §5's parameters.")
    if fitted:
        click.echo(f"fitted: service times x {size.service_scale:g}, arrivals every {size.mean_interarrival:g} s on "
                   f"average, DS3 drawn with seed {size.ds3_seed} (the constants the paper leaves open, fitted to "
                   "Table 1's no-controller FCFS totals of DS2 and DS3; docs/controller.md)")
    em = s.get("emulated")
    if em:
        st = em["settings"]
        click.echo(f"\nDS1 on real processes (time scale {st['time_scale']:g}, bytes scale {st['bytes_scale']:g}, "
                   f"jobs x {st['job_factor']:g}; spec seconds) and the same spec simulated:")
        click.echo(f"{'run':20s} {'runtime':8s} {'completion':>11s} {'flow':>11s} {'suspensions':>11s}  status")
        for r in em["rows"]:
            click.echo(f"{r['run']:20s} {r['runtime']:8s} {r['completion_hms'] or '-':>11s} {r['flow_hms'] or '-':>11s} "
                       f"{r['suspensions']:11d}  {r['status']}{': ' + r['error'] if r['error'] else ''}")
        for r in em["runs"]:
            if "sim_max_abs_error" in r:
                click.echo(f"{r['run']}: per-job completion error sim vs real max {100 * r['sim_max_abs_error']:.1f} %, "
                           f"mean {100 * r['sim_mean_abs_error']:.1f} % (twin fitted to the run: "
                           f"{100 * r['fitted_max_abs_error']:.1f} %, {100 * r['fitted_mean_abs_error']:.1f} %)"
                           + ("; reused" if r["reused"] else f"; {r['wall_seconds']:.0f} s wall"))
        note = emulated_ds1.error_note(em, quick)
        if note:
            click.echo(note)
        click.echo(f"EASY not run for real: {em['easy']['why']}")
    click.echo(f"volume: LPS 100 MB/s, interference {s.get('volume_law', '-')}")
    for line in s.get("why", []):  # a result against the paper says why
        click.echo(f"why: {line}")
    real = f" + {len(em['runs'])} real" if em else ""
    click.echo(f"{s['runs']} simulated runs{real}, {s['wall_seconds']:.1f} s; wrote {out_dir}/results.h5, runs.csv, jobs.csv, "
               "suspensions.csv, summary.json" + ("" if no_figures else ", fig1-gantt.png")
               + (", emulated/*.h5, emulated-vs-sim.csv" if em else "")
               + (", fig1-gantt-emulated.png" if s.get("figure_emulated") else ""))
    if failed:
        raise click.exceptions.Exit(1)  # a real run failed (its row says why); the simulated results are written


@study.command("soysal")
@click.option("--quick", is_flag=True, help="small size for CI: first 600 KTH jobs, lambda in {1, 0.1, 0} and the "
                                            "predictor; advance stage-in for lambda in {1, 0} under FCFS and SAS")
@click.option("--trace", default="kth", show_default=True, help="kth, sdsc-blue or a path to an SWF file")
@click.option("--no-advance", is_flag=True, help="only the T_NAP runs (Figs. 3a, 4, 5), not the advance stage-in runs")
@click.option("--window", type=click.IntRange(0), default=None,
              help="the advance runs cut the trace into windows of at most N jobs, each from an empty machine; "
                   "0: one run of the whole trace [default: 500]")
@click.option("--backfill-depth", type=click.IntRange(0), default=None,
              help="the advance runs' scheduler.backfill_depth D (Slurm's bf_max_job_test: each decision plans, "
                   "tracks and considers the head and D jobs behind it) [default: no limit]")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/soysal", show_default=True,
              help="output folder: the campaign (journal, results.h5), runs.csv, advance.csv, summary.json, figures")
@click.option("--no-figures", is_flag=True, help="write the tables only, no figures (no matplotlib)")
@engine_options
@click.option("--json", "as_json", is_flag=True, help="print the study's summary as JSON on stdout (progress stays on stderr)")
def soysal(quick: bool, trace: str, no_advance: bool, window: int | None, backfill_depth: int | None, out_dir: str,
           no_figures: bool, as_json: bool, engine: Engine, campaign_file: str | None) -> None:
    """soysal2019: T_NAP against walltime quality and scheduler (Figs. 3a, 4, 5), and advance stage-in."""
    size = soysal_study.QUICK if quick else soysal_study.Size()
    if no_advance:
        size = replace(size, advance=False)
    if window is not None:
        size = replace(size, advance_window=window or None)
    if backfill_depth is not None:
        size = replace(size, advance_backfill_depth=backfill_depth)
    try:
        if campaign_file:
            soysal_study.trace_path(trace)  # a bad trace is refused here, not by the sweep
            write_campaign(campaign_file, "soysal", soysal_study.params_of(size, trace))
            return
        hold_study_output(out_dir)
        s = soysal_study.run_study(Path(out_dir), size, trace=trace, figures=not no_figures, engine=engine)
    except (FileNotFoundError, ValueError) as exc:
        raise IolabError(str(exc)) from None
    if as_json:
        click.echo(dumps(s))
        return
    click.echo(f"\n{s['runs'] + s['advance_runs']} runs in {s['wall_seconds']:.1f} s; requested/used time "
               f"{s['requested_over_used']:.2f} (paper, KTH: ~1.5)")
    click.echo(f"{'scheduler':22s} {'estimate':12s} {'instant':>8s} {'<=1s':>6s} {'<=600s':>7s} {'>600s':>6s}")
    for r in s["records"]:
        click.echo(f"{r['scheduler']:22s} {r['estimate']:12s} {r['share_instant']:8.3f} {r['share_<=1s']:6.3f} "
                   f"{r['share_<=600s']:7.3f} {r['share_>600s']:6.3f}")
    adv = [r for r in s["advance"] if r["advance"]]
    if adv:
        cut = f"windows of <= {s['advance_window']} jobs" if s.get("advance_window") else "the whole trace as one run"
        depth = s.get("advance_backfill_depth")
        cut += f", backfill depth {depth}" if depth is not None else ""
        click.echo(f"\nadvance stage-in (I/O: lackner2019 model; {cut}):\n{'scheduler':14s} {'estimate':12s} {'copies':>7s} "
                   f"{'hidden s':>10s} {'early GB':>10s} {'wasted GB':>10s} {'wasted link s':>13s} {'turnaround Δ s':>15s}")
        for r in adv:
            click.echo(f"{r['scheduler']:14s} {r['estimate']:12s} {r['early_copies']:7.0f} {r['hidden_seconds']:10.0f} "
                       f"{r['early_bytes'] / 1e9:10.1f} {r['wasted_bytes'] / 1e9:10.1f} "
                       f"{r['wasted_link_seconds']:13.0f} {r['turnaround_change']:15.1f}")
    figs = ", fig3a.png, fig4.png, fig5.png" + (", fig_advance.png" if adv else "")
    click.echo(f"wrote {out_dir}/results.h5, runs.csv, advance.csv, summary.json" + ("" if no_figures else figs))


# the list policies the third arbitration value may be (fifo and shared are the study's first two, the sharing
# policies its last three)
DYNAMIC_POLICIES = ("shortest-remaining", "stretch", "bandwidth", "shortest-io", "longest-io", "longest-remaining",
                    "lowest-id")


@study.command("combined")
@click.option("--quick", is_flag=True, help="small size for CI: one workload of 40 jobs, all 48 lever combinations")
@click.option("--workloads", type=click.IntRange(1, 1000), help="workload seeds 1..N (default 5; quick: 1)")
@click.option("--jobs-per-workload", "njobs", type=click.IntRange(2, 100_000),
              help="Feitelson jobs per workload (default 120; quick: 40)")
@click.option("--policy", "dynamic", type=click.Choice(DYNAMIC_POLICIES), default="shortest-remaining",
              show_default=True, help="the dynamic I/O-node list policy compared with fifo and shared")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/combined", show_default=True,
              help="output folder: the campaign (journal, results.h5), runs.csv, combined.csv, levers.csv, "
                   "summary.json, combined.png")
@click.option("--no-figures", is_flag=True, help="write the tables only, no figures (no matplotlib)")
@engine_options
@click.option("--json", "as_json", is_flag=True, help="print the study's summary as JSON on stdout (progress stays on stderr)")
def combined(quick: bool, workloads: int | None, njobs: int | None, dynamic: str, out_dir: str, no_figures: bool,
             as_json: bool, engine: Engine, campaign_file: str | None) -> None:
    """One machine, both levels: I/O-node arbitration, tier choice, I/O-aware allocation and the load
    controller, each alone and together, on one workload (docs/studies.md)."""
    size = combined_study.QUICK if quick else combined_study.CombinedSize()
    size = replace(size, policies=(*size.policies[:2], dynamic, *size.policies[3:]))
    if workloads:
        size = replace(size, seeds=tuple(range(1, workloads + 1)))
    if njobs:
        size = replace(size, jobs=njobs)
    if campaign_file:
        write_campaign(campaign_file, "combined", combined_study.params_of(size))
        return
    hold_study_output(out_dir)
    s = combined_study.run_study(Path(out_dir), size, figures=not no_figures, engine=engine)
    if as_json:
        click.echo(dumps(s))
        return
    click.echo(f"\n{s['runs']} runs ({s['combinations']} lever combinations x {len(size.seeds)} workload(s) of "
               f"{size.jobs} jobs) in {s['wall_seconds']:.1f} s; means over the workloads, change against the "
               f"baseline {combined_study.label_of(tuple(v[0] for v in (size.policies, size.tiers, size.allocations, size.controllers)))}:")
    click.echo(table(["policy / tier / allocation / controller", "makespan h", "turnaround h", "bsld", "I/O h",
                      "HPS util.", "node util.", "susp."],
                     [(r["combination"], f"{r['makespan'] / 3600:.2f} ({r['makespan_vs_baseline']:+.1%})",
                       f"{r['mean_turnaround'] / 3600:.2f} ({r['mean_turnaround_vs_baseline']:+.1%})",
                       f"{r['mean_bsld']:.2f} ({r['mean_bsld_vs_baseline']:+.1%})",
                       f"{r['total_io_time'] / 3600:.1f} ({r['total_io_time_vs_baseline']:+.1%})",
                       f"{r['hps_utilisation']:.3f}", f"{r['node_utilisation']:.3f}", f"{r['suspensions']:.1f}")
                      for r in s["table"]]))
    spread = len(size.seeds) > 1
    click.echo("\neach lever setting against its baseline value: alone (the others at baseline"
               + ("; [range over the workloads]" if spread else "") + ") / together (mean over every combination "
               "of the others); times: relative change, utilisations: difference")
    click.echo(table(["lever", "setting", "makespan", "turnaround", "bsld", "I/O time", "HPS util.", "node util."],
                     [(r["lever"], r["setting"], *(_change_pair(r, m, spread) for m in combined_study.METRICS))
                      for r in s["levers"]]))
    click.echo(f"wrote {out_dir}/results.h5, runs.csv, combined.csv, levers.csv, summary.json"
               + ("" if no_figures else ", combined.png"))


def _change_pair(r: dict, m: str, spread: bool = False) -> str:
    """A lever row's ``alone / together`` change of metric ``m``: % for times, a difference for utilisations;
    ``spread``: the alone effect's range over the workloads too, ``alone [min, max] / together``."""
    f = "{:+.3f}" if m in combined_study.SHARES else "{:+.1%}"
    rng = f" [{f.format(r[m + '_alone_min'])}, {f.format(r[m + '_alone_max'])}]" if spread else ""
    return f"{f.format(r[m + '_alone'])}{rng} / {f.format(r[m + '_together'])}"
