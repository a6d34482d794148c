"""``iolab workload``: generate synthetic workloads, or import real ones, as spec files."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import click
import yaml

from iolab.atomic import atomic_write_text, check_output
from iolab.cli.options import Finite
from iolab.errors import IolabError
from iolab.units import format_size, parse_rate, seconds, size_text
from iolab.emulator.io.prerun_checks import H5_OVERHEAD
from iolab.workloads.carretero import CarreteroParams
from iolab.workloads.carretero import generate as gen
from iolab.workloads.batsim import read_batsim_workload
from iolab.workloads.darshan import LACKNER_PLATFORM, batch_spec, io_spec, read_darshan
from iolab.workloads.slurm_script import slurm_jobs
from iolab.emulator.launchers import expand_hostlist
from iolab.validation.slurm_replay import replay_spec
from iolab.workloads.slurm_accounting import read_accounting
from iolab.specs.batch import SCHEDULERS, parse_duration
from iolab.specs.load import parse_spec


@click.group()
def workload() -> None:
    """Generate synthetic workloads (generate carretero) or import real ones (import darshan|slurm|batsim) as spec
    files."""


@workload.command("generate")
@click.argument("model", type=click.Choice(["carretero"]))
@click.option("--alpha", type=Finite(0, min_open=True), required=True, help="target I/O load alpha_gen (> 0)")
@click.option("--seed", type=int, default=0, show_default=True, help="seed of every random draw")
@click.option("--io-nodes", type=click.IntRange(1, 100_000), default=1, show_default=True, help="R: I/O nodes of the platform")
@click.option("--nodes-per-io-node", type=int, default=2048, show_default=True, help="P, a power of two")
@click.option("--mapping", type=click.Choice(["none", "first-fit", "make-pack"]), default="first-fit", show_default=True,
              help="how the apps are mapped onto the I/O nodes (carretero2020 §5.2)")
@click.option("--apps", "apps_range", default="25,100", show_default=True,
              help="number of apps, uniform on LO,HI (or exactly N); the paper's range by default")
@click.option("--iterations", "iter_range", default="250,1000", show_default=True,
              help="iterations per app, uniform on LO,HI (or exactly N): fewer for a real run")
@click.option("--compute", "compute_range", default="10,100", show_default=True,
              help="compute seconds per iteration, uniform on LO,HI")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="spec file to write (YAML or .json)")
@click.option("--json", "as_json", is_flag=True, help="print what was written as JSON")
def generate(model: str, alpha: float, seed: int, io_nodes: int, nodes_per_io_node: int,
             mapping: str, apps_range: str, iter_range: str, compute_range: str, output: str, as_json: bool) -> None:
    """Generate a MODEL workload (carretero2020 §6.2.2) as an experiment spec."""
    check_output(output, option="-o")
    if seed < 0:
        raise click.BadParameter("must be >= 0", param_hint="--seed")
    ranges = {"apps": _range(apps_range, "--apps", int, 1), "iterations": _range(iter_range, "--iterations", int, 1),
              "compute": _range(compute_range, "--compute", float, 0)}
    try:
        params = CarreteroParams(nodes_per_io_node=nodes_per_io_node, **ranges)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--nodes-per-io-node") from None
    spec = gen(alpha, seed, params, io_nodes=io_nodes)
    spec = spec.model_copy(update={"mapping": spec.mapping.model_copy(update={"kind": mapping})})
    data = spec.model_dump(mode="json", exclude_none=True)
    data["apps"] = [{k: v for k, v in a.items() if k not in ("io_kind",) or v != "write"} for a in data["apps"]]
    path = Path(output)
    text = (json.dumps(data, indent=1) if path.suffix == ".json"
            else f"# carretero2020 §6.2.2 workload: alpha_gen={alpha}, seed={seed}; actual I/O load "
                 f"(Eq. 6) = {spec.io_load():.4f}\n" + yaml.safe_dump(data, sort_keys=False, width=120))
    atomic_write_text(path, text)
    if as_json:
        click.echo(json.dumps({"output": str(path), "apps": len(spec.apps), "io_load": spec.io_load(),
                               "alpha_gen": alpha, "seed": seed}, indent=2))
        return
    click.echo(f"{path}: {len(spec.apps)} apps, I/O load {spec.io_load():.4f} (alpha_gen {alpha})")


def _range(text: str, hint: str, kind, least):
    """``LO,HI`` or ``N`` (= N,N) of ``kind`` with least <= LO <= HI, else a usage error naming ``hint``."""
    parts = [t.strip() for t in text.split(",")]
    try:
        if len(parts) not in (1, 2):
            raise ValueError("give LO,HI or N")
        lo, hi = kind(parts[0]), kind(parts[-1])
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError("not finite")
    except ValueError as exc:
        raise click.BadParameter(f"{text!r}: {exc}", param_hint=hint) from None
    if not least <= lo <= hi:
        raise click.BadParameter(f"{text!r}: need {least} <= LO <= HI", param_hint=hint)
    if kind is int and hi > 10**7:
        raise click.BadParameter(f"{text!r}: at most 10000000", param_hint=hint)
    return (lo, hi)


@workload.group("import")
def import_() -> None:
    """Import real workloads (Darshan logs, Slurm job scripts, Batsim JSON workloads) as an experiment spec."""


def _write_spec(data: dict, output: str, header: list[str]) -> None:
    """Validate ``data`` as a spec (a bug here must not leave a file the simulator refuses), then write it."""
    path = Path(output)
    parse_spec(data, source=str(path))
    text = (json.dumps(data, indent=1) if path.suffix == ".json"
            else "".join(f"# {h}\n" for h in header) + yaml.safe_dump(data, sort_keys=False, width=120))
    atomic_write_text(path, text)


EMULATOR_GRID = 8  # the smallest Jacobi grid: the smallest I/O phase a real run can replay


@import_.command("darshan")
@click.argument("logs", metavar="LOG...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="spec file to write (YAML or .json)")
@click.option("--kind", type=click.Choice(["io", "batch"]), default="io", show_default=True,
              help="io: one app per log with its compute and I/O phases; batch: one job per log (input/output bytes)")
@click.option("--unit-bytes", type=click.IntRange(4096), default=1 << 20, show_default=True,
              help="io: bytes of one data unit (the spec's volumes are in units)")
@click.option("--bandwidth", type=Finite(0, min_open=True), default=None,
              help="io: I/O node bandwidth in units/s (default: the rate the logs observed)")
@click.option("--volumes", type=click.Choice(["time", "bytes"]), default="time", show_default=True,
              help="io: time: each log's I/O volumes scaled so that at the platform's bandwidth its I/O takes "
                   "the time it took in its log (logs of different systems keep their own I/O times); bytes: the "
                   "logs' bytes, each I/O phase lasting bytes / bandwidth")
@click.option("--bins", type=click.IntRange(1, 1_000_000), default=1024, show_default=True,
              help="time bins per log: the resolution of the phases (run time / bins)")
@click.option("--ranks-per-node", type=click.IntRange(1), default=1, show_default=True,
              help="nodes = ranks / this when the log has no DXT host names")
@click.option("--nodes", type=click.IntRange(1), default=None,
              help="batch: compute nodes of the platform (default: the largest job)")
@click.option("--align", type=click.Choice(["start", "zero"]), default="start", show_default=True,
              help="start: release (submit) each log at its start relative to the earliest, the time in which no "
                   "log ran left out; zero: all at 0")
@click.option("--for-emulator", is_flag=True,
              help="io: make the spec one iolab emulate runs (I/O phases of at least one checkpoint of an 8x8 "
                   "grid on one rank, a write before the first read); what changes is listed in the spec")
@click.option("--json", "as_json", is_flag=True, help="print what was written as JSON")
def import_darshan(logs: tuple[str, ...], output: str, kind: str, unit_bytes: int, bandwidth: float | None,
                   volumes: str, bins: int, ranks_per_node: int, nodes: int | None, align: str, for_emulator: bool,
                   as_json: bool) -> None:
    """Import Darshan LOGs (needs PyDarshan: pip install 'iolab[darshan]').  What is approximated:
    docs/workloads.md."""
    check_output(output, logs, option="-o")
    jobs = [read_darshan(p, bins=bins, ranks_per_node=ranks_per_node) for p in logs]
    if align == "zero":
        for j in jobs:
            j.start = 0.0
    header = [f"imported from {len(jobs)} Darshan log(s) by iolab workload import darshan --kind {kind}"]
    for j in jobs:
        mods = ", ".join(f"{m} r {v['read']} w {v['write']}" for m, v in j.modules.items())
        header.append(f"{Path(j.path).name}: job {j.jobid}, {j.nprocs} ranks, {j.nodes} nodes ({j.nodes_from}), "
                      f"run {seconds(j.run_time)}; bytes {mods}; volume = {j.volume_from}; timing from {j.timing_from}")
    if kind == "io":
        # the emulator's own limit (emulator/io/prerun_checks.py): a rank's share of an I/O phase holds its grid block
        min_units = (EMULATOR_GRID**2 * 8 + H5_OVERHEAD) / unit_bytes if for_emulator else None
        data, notes = io_spec(jobs, unit_bytes=unit_bytes, bandwidth=bandwidth, min_io_units=min_units,
                              volumes=volumes)
        if for_emulator:
            data["emulator"].update(grid=EMULATOR_GRID, ranks_per_app=1, max_ranks=max(16, len(jobs)))
        header += notes
    else:
        data = batch_spec(jobs, nodes=nodes)
    _write_spec(data, output, header)
    n, noun = (len(data["apps"]), "app") if kind == "io" else (len(data["workload"]["jobs"]), "job")
    what = f"{n:,} {noun}{'' if n == 1 else 's'}"
    if as_json:
        click.echo(json.dumps({"output": str(output), "kind": kind, "logs": len(jobs), noun + "s": n}))
        return
    click.echo(f"{output}: {what} from {len(jobs)} Darshan log(s)")


@import_.command("slurm")
@click.argument("scripts", metavar="SCRIPT...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="spec file to write (YAML or .json)")
@click.option("--nodes", type=click.IntRange(1), default=None,
              help="compute nodes of the platform (default: the largest job)")
@click.option("--scheduler", type=click.Choice([s for s in SCHEDULERS if s != "random-tier"]), default="sas",
              show_default=True, help="the spec's batch scheduler (sas chooses the tier; see docs/workloads.md)")
@click.option("--default-time", default="1h", show_default=True,
              help="walltime of a script without #SBATCH --time (300, 5m, 2h, 1d)")
@click.option("--now", "now", default=None,
              help="submission time of the scripts (ISO, e.g. 2026-11-22T08:00): needed by --begin dates and times")
@click.option("--json", "as_json", is_flag=True, help="print what was written as JSON")
def import_slurm(scripts: tuple[str, ...], output: str, nodes: int | None, scheduler: str, default_time: str,
                 now: str | None, as_json: bool) -> None:
    """Import Slurm batch SCRIPTs (#SBATCH options, #DW and #BB_LUA burst-buffer directives) as batch jobs:
    one job per script, its burst buffer as the HPS request, its staged files as input and output."""
    check_output(output, scripts, option="-o")
    try:
        dflt = float(parse_duration(default_time))  # type: ignore[arg-type]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--default-time") from None
    try:
        when = dt.datetime.fromisoformat(now) if now else None
    except ValueError:
        raise click.BadParameter(f"not an ISO date and time: {now!r}", param_hint="--now") from None
    parsed, jobs = slurm_jobs(list(scripts), default_time=dflt, now=when)
    data_jobs = [j.model_dump(mode="json", exclude={"estimate"}) for j in jobs]
    cap = max([2048e9] + [j.storage for j in jobs])
    data = {"kind": "batch", "name": "slurm", "scheduler": scheduler,
            "platform": {"nodes": nodes or max(j.nodes for j in jobs), **LACKNER_PLATFORM,
                         "hps": {"rate": "15 GB/s", "capacity": format_size(cap)}},
            "workload": {"source": "inline", "jobs": data_jobs}}
    header = [f"imported from {len(parsed)} Slurm script(s) by iolab workload import slurm; runtime = walltime "
              "(a script does not say how long it runs); platform: lackner2019's, edit it"]
    for s, j in zip(parsed, jobs):
        st = "; ".join(f"{x.direction} {x.source} -> {x.destination} {size_text(x.bytes)} ({x.from_})" for x in s.staged)
        header.append(f"{Path(s.path).name}: job {j.id}, {s.nodes:,} nodes, walltime {seconds(s.walltime)}"
                      + ("" if s.time_given else " (default)") + f", begin +{seconds(s.begin)}, burst buffer "
                      f"{size_text(s.capacity)}" + (f"; {st}" if st else ""))
    _write_spec(data, output, header)
    if as_json:
        click.echo(json.dumps({"output": str(output), "kind": "batch", "jobs": len(jobs), "scripts": len(parsed)}))
        return
    click.echo(f"{output}: {len(jobs):,} job{'' if len(jobs) == 1 else 's'} from {len(parsed):,} Slurm "
               f"script{'' if len(parsed) == 1 else 's'}")


@import_.command("batsim")
@click.argument("workload_file", metavar="WORKLOAD", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="spec file to write (YAML or .json)")
@click.option("--nodes", type=click.IntRange(1, 10_000_000), default=None,
              help="compute nodes of the platform (default: the workload's nb_res, else the largest job)")
@click.option("--scheduler", type=click.Choice([s for s in SCHEDULERS if s != "random-tier"]), default="easy",
              show_default=True, help="the spec's batch scheduler")
@click.option("--flops", type=Finite(0, min_open=True), default=1e9, show_default=True,
              help="flop/s of a node: the compute time of parallel_homogeneous profiles (cpu / flops)")
@click.option("--bandwidth", type=Finite(0, min_open=True), default=1.25e9, show_default=True,
              help="bytes/s of a node's link: the communication time of parallel_homogeneous profiles "
                   "(com x (res - 1) / bandwidth)")
@click.option("--json", "as_json", is_flag=True, help="print what was written as JSON")
def import_batsim(workload_file: str, output: str, nodes: int | None, scheduler: str, flops: float, bandwidth: float,
                  as_json: bool) -> None:
    """Import a Batsim JSON WORKLOAD (jobs and their delay, parallel_homogeneous[_total|_pfs] or composed
    profiles) as a batch spec on lackner2019's platform (edit it).  How profiles become runtimes and bytes:
    docs/workloads.md."""
    check_output(output, [workload_file], option="-o")
    lps = float(parse_rate(LACKNER_PLATFORM["lps"]["rate"]))
    jobs, total, notes = read_batsim_workload(workload_file, lps_rate=lps, flops=flops, bandwidth=bandwidth,
                                              nodes=nodes)
    cap = max([2048e9] + [j.get("storage", 0.0) for j in jobs])
    data = {"kind": "batch", "name": "batsim", "scheduler": scheduler,
            "platform": {"nodes": total, **LACKNER_PLATFORM, "hps": {"rate": "15 GB/s", "capacity": format_size(cap)}},
            "workload": {"source": "inline", "jobs": jobs}}
    header = [f"imported from the Batsim workload {Path(workload_file).name} by iolab workload import batsim "
              f"(flops {flops:g}/s per node, link {bandwidth:g} B/s); runtime = the profile's compute time + its "
              "bytes at R_lps; platform: lackner2019's, edit it"] + notes
    _write_spec(data, output, header)
    if as_json:
        click.echo(json.dumps({"output": str(output), "kind": "batch", "jobs": len(jobs), "nodes": total}))
        return
    click.echo(f"{output}: {len(jobs):,} job{'' if len(jobs) == 1 else 's'} on {total:,} nodes from the Batsim "
               f"workload {workload_file}")


@import_.command("sacct")
@click.argument("log", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="spec file to write (YAML or .json)")
@click.option("--nodes", type=click.IntRange(1), default=None,
              help="compute nodes of the platform (default: the distinct nodes the log's node lists name, at "
                   "least the largest job)")
@click.option("--scheduler-parameters", default=None, help="the cluster's SchedulerParameters, for the spec's "
              "slurm scheduler (default: Slurm's defaults)")
@click.option("--json", "as_json", is_flag=True, help="print what was written as JSON")
def import_sacct(log: str, output: str, nodes: int | None, scheduler_parameters: str | None, as_json: bool) -> None:
    """Import Slurm's accounting of jobs that ran (sacct --parsable2 output, or the job completion log of
    JobCompType=jobcomp/filetxt) as batch jobs under the slurm scheduler: recorded submit times, node
    counts, time limits and run times (docs/workloads.md states which records are kept)."""
    check_output(output, [log], option="-o")
    acc = read_accounting(log)
    if not acc.kept:
        raise IolabError(f"{log}: no job that started and ended "
                         f"({', '.join(f'{v} {k}' for k, v in acc.dropped.items()) or 'no job'})")
    names = {n for j in acc.kept for n in (expand_hostlist(j.node_list) if j.node_list else [])}
    n = nodes or max([len(names)] + [j.nodes for j in acc.kept])
    conf = {"SchedulerParameters": scheduler_parameters} if scheduler_parameters else {}
    data = replay_spec(acc.kept, n, {"kind": "slurm", "conf": conf})
    data["name"] = "sacct"
    t0 = min(j.submit for j in acc.kept)
    header = [f"imported from {log} by iolab workload import sacct: {len(acc.kept)} job(s) that ran, "
              f"{sum(acc.dropped.values())} left out ({', '.join(f'{v} {k}' for k, v in acc.dropped.items()) or 'none'})",
              f"time 0 = the first submission, {dt.datetime.fromtimestamp(t0, dt.timezone.utc):%Y-%m-%dT%H:%M:%S} "
              "(the controller's clock); walltime = the time limit, runtime = end - start; platform: edit its tiers"]
    header += acc.notes
    _write_spec(data, output, header)
    if as_json:
        click.echo(json.dumps({"output": str(output), "kind": "batch", "jobs": len(acc.kept), "dropped": acc.dropped,
                               "nodes": n}))
        return
    click.echo(f"{output}: {len(acc.kept):,} job(s) on {n} nodes; left out: "
               f"{', '.join(f'{v} {k}' for k, v in acc.dropped.items()) or 'none'}")
