"""``iolab slurm``: a real Slurm as the ground truth of the ``slurm`` scheduler.

- ``replay SPEC``: submit the spec's jobs to a Slurm cluster (sleep jobs of their sizes, limits and
  run times), read when Slurm ran each, and compare with the simulations (:mod:`iolab.validation.slurm_replay`);
- ``compare LOG``: the same comparison for a recorded log (``sacct --parsable2`` output or a job
  completion log), without submitting anything.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from iolab.atomic import atomic_write_text, check_output
from iolab.emulator.launchers import expand_hostlist
from iolab.emulator.slurm_replay import cluster_config
from iolab.errors import IolabError
from iolab.middleware.policies.batch.registry import SCHEDULERS
from iolab.plots import check_figure
from iolab.plots.slurm_replay import replay_figure
from iolab.specs.load import input_files, load_spec
from iolab.specs.slurm_conf import SlurmConf
from iolab.workloads.slurm_accounting import read_accounting, wall_seconds
from iolab.validation.slurm_replay import (POLICIES, TARGET_MAKESPAN, TARGET_SHARE, compare, conf_from_config,
                                        replay as replay_on_cluster)


@click.group()
def slurm() -> None:
    """A real Slurm against the simulator's slurm scheduler: replay a spec on a cluster, or compare a log."""


def _print(result, as_json: bool, extra: dict | None = None) -> None:
    if as_json:
        click.echo(json.dumps({**(extra or {}), **result.to_json()}, indent=2))
        return
    c = result.conf
    click.echo(f"{len(result.jobs)} jobs on {result.nodes} nodes; Slurm's configuration: {c.SchedulerType}, "
               f"SchedulerParameters={c.SchedulerParameters.line() or '(defaults)'}, {c.PriorityType}"
               + (f" (not modelled: {', '.join(c.SchedulerParameters.ignored)})" if c.SchedulerParameters.ignored else ""))
    click.echo(f"recorded: makespan {result.results[0].makespan_real:.0f} s, mean wait {result.real_mean_wait:.1f} s")
    click.echo(f"{'policy':<13} {'within bf_interval':>18} {'mean |err|':>10} {'max |err|':>9} "
               f"{'makespan':>9} {'error':>7} {'mean wait':>9} {'same rank':>9}")
    for r in result.results:
        click.echo(f"{r.policy:<13} {r.within:>8}/{len(r.errors):<3} ({100 * r.share:3.0f} %) {r.mean_abs:>9.1f}s "
                   f"{r.max_abs:>8.1f}s {r.makespan:>8.0f}s {100 * r.makespan_error:>+6.1f}% {r.mean_wait:>8.1f}s "
                   f"{r.same_rank:>5}/{len(r.errors)}")
    s = result.slurm
    if s is None:
        click.echo("targets for slurm: not measured (slurm is not among --policies)")
        return
    click.echo(f"targets for slurm: >= {100 * TARGET_SHARE:.0f} % of jobs within bf_interval ({s.interval:g} s): "
               f"{100 * s.share:.0f} %; makespan within {100 * TARGET_MAKESPAN:.0f} %: {100 * s.makespan_error:+.1f} %"
               f" -> {'met' if result.targets_met() else 'NOT met'}")


def _figure(result, figure: str | None, title: str) -> None:
    if figure:
        click.echo(f"figure: {replay_figure(result, figure, title)}", err=True)


@slurm.command("replay")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@click.option("--time-scale", type=float, default=1.0, show_default=True,
              help="divide the submit times, run times and limits by this (limits stay whole minutes, >= 1)")
@click.option("--partition", default=None, help="the partition to fill (default: the cluster's default one)")
@click.option("--policies", default=",".join(POLICIES), show_default=True, help="simulated policies to compare")
@click.option("--record", "record_out", type=click.Path(dir_okay=False), default=None,
              help="also write Slurm's record of the jobs (its job completion log lines) to this file")
@click.option("--figure", type=click.Path(dir_okay=False), default=None, help="write the comparison's figure here")
@click.option("--json", "as_json", is_flag=True, help="print the comparison as JSON")
def replay(spec: str, time_scale: float, partition: str | None, policies: str, record_out: str | None,
           figure: str | None, as_json: bool) -> None:
    """Submit SPEC's jobs to Slurm as sleep jobs, then compare Slurm's schedule with the simulated ones."""

    if not time_scale > 0:
        raise click.BadParameter("must be > 0", param_hint="--time-scale")
    exp = load_spec(spec)
    if getattr(exp, "kind", None) != "batch":
        raise IolabError(f"{spec}: a replay needs a batch spec (kind: batch)")
    inputs = input_files(exp, spec)  # the outputs are checked before anything is submitted
    if record_out:
        check_output(record_out, inputs, option="--record")
    if figure:
        check_figure(figure, inputs)
    names = _policies(policies)
    done = replay_on_cluster(exp, spec, time_scale=time_scale, partition=partition, policies=names,
                             keep_record=bool(record_out), note=lambda line: click.echo(line, err=True))
    if record_out:
        atomic_write_text(Path(record_out), "\n".join(done.record) + "\n")
    result = done.result
    _print(result, as_json, {"spec": spec, "time_scale": time_scale, **done.details()})
    _figure(result, figure, f"{Path(spec).name} on Slurm ({result.nodes} nodes)")


def _policies(text: str) -> tuple[str, ...]:
    """``--policies``: built-in schedulers' names, checked before anything is submitted or simulated."""
    names = tuple(p.strip() for p in text.split(",") if p.strip())
    unknown = [n for n in names if n not in SCHEDULERS]
    if unknown or not names:
        raise click.BadParameter(f"{', '.join(unknown) or 'none given'}: not a built-in scheduler "
                                 f"(one or more of {', '.join(SCHEDULERS)}, comma-separated)", param_hint="--policies")
    return names


@slurm.command("compare")
@click.argument("log", type=click.Path(exists=True, dir_okay=False))
@click.option("--nodes", type=click.IntRange(1, 10_000_000), default=None,
              help="the partition's node count (default: the distinct nodes of the log's node lists)")
@click.option("--scheduler-parameters", default=None, help="the cluster's SchedulerParameters (slurm.conf)")
@click.option("--priority-type", type=click.Choice(["priority/basic", "priority/multifactor"]), default=None,
              help="the cluster's PriorityType (default priority/basic)")
@click.option("--from-cluster", is_flag=True, help="read the settings from this host's cluster (scontrol show config)")
@click.option("--bf-cycle-at", default=None, help="when a backfill cycle ran, on the records' clock "
              "(YYYY-MM-DDTHH:MM:SS; sdiag's 'Last cycle when'): the cycles are every bf_interval from it")
@click.option("--policies", default=",".join(POLICIES), show_default=True, help="simulated policies to compare")
@click.option("--figure", type=click.Path(dir_okay=False), default=None, help="write the comparison's figure here")
@click.option("--json", "as_json", is_flag=True, help="print the comparison as JSON")
def compare_log(log: str, nodes: int | None, scheduler_parameters: str | None, priority_type: str | None,
                from_cluster: bool, bf_cycle_at: str | None, policies: str, figure: str | None,
                as_json: bool) -> None:
    """Compare a recorded LOG (sacct --parsable2 output or a job completion log) with the simulations."""

    if figure:
        check_figure(figure, [log])
    chosen = _policies(policies)
    acc = read_accounting(log)
    if not acc.kept:
        raise IolabError(f"{log}: no job that started and ended ({', '.join(f'{v} {k}' for k, v in acc.dropped.items()) or 'empty'})")
    if from_cluster:
        conf = conf_from_config(cluster_config())
    else:
        data: dict = {}
        if scheduler_parameters:
            data["SchedulerParameters"] = scheduler_parameters
        if priority_type:
            data["PriorityType"] = priority_type
        try:
            conf = SlurmConf(**data)
        except ValueError as exc:
            raise click.BadParameter(str(exc).splitlines()[-1].strip(), param_hint="--scheduler-parameters") from None
    if bf_cycle_at:
        try:
            conf = conf.model_copy(update={"bf_cycle_at": wall_seconds(bf_cycle_at)})
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--bf-cycle-at") from None
    if nodes is None:
        names = {n for j in acc.kept for n in (expand_hostlist(j.node_list) if j.node_list else [])}
        nodes = max(len(names), max(j.nodes for j in acc.kept))
    if acc.dropped and not as_json:
        click.echo(f"left out: {', '.join(f'{v} {k}' for k, v in acc.dropped.items())}", err=True)
    result = compare(acc.kept, nodes, conf, chosen)
    _print(result, as_json, {"log": log, "dropped": acc.dropped})
    _figure(result, figure, f"{Path(log).name} ({nodes} nodes)")
