"""``iolab batsim``: a batch spec decided by an external scheduler over Batsim's protocol (docs/batsim.md)."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import click

from iolab.atomic import check_output
from iolab.batsim.run import DEFAULT_TIMEOUT, run_batsim
from iolab.batsim.socket import check_endpoint
from iolab.cli.emulate import kept_on_failure
from iolab.cli.emulate_batch import batch_sink
from iolab.cli.format import dumps, seconds, table
from iolab.cli.network import NETNS_MARKER
from iolab.cli.options import Finite, strict_option
from iolab.cli.outcome import exit_if_failed
from iolab.cli.simulate import SimProgress, partial_kept
from iolab.emulator.work_folder import ended_well, finish, work_folder
from iolab.errors import Interrupted
from iolab.runners import level_of, runner
from iolab.specs.load import input_files, load_spec
from iolab.trace import write_trace


@click.command()
@strict_option
@click.argument("spec_path", metavar="SPEC", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--socket", "endpoint", required=True, metavar="ENDPOINT",
              help="the scheduler's ZeroMQ endpoint: tcp://HOST:PORT (pybatsim's -s) or ipc://PATH")
@click.option("--timeout", type=Finite(0, min_open=True), default=DEFAULT_TIMEOUT, show_default=True,
              help="seconds the scheduler may take to answer one message; then the run stops (exit 1)")
@click.option("--real", is_flag=True, help="a real run (as iolab emulate): the MPI jobs start on the nodes the "
              "scheduler names; default: the simulator")
@click.option("--out", type=click.Path(dir_okay=False), help="write the trace here (--real: default run.h5)")
@click.option("--time-scale", type=Finite(0, min_open=True), help="--real: wall seconds per spec second")
@click.option("--work-dir", type=click.Path(file_okay=False), help="--real: checkpoints and logs")
@click.option("--keep-work", is_flag=True, help="--real: keep the work folder after a run that ended well")
@click.option("--json", "as_json", is_flag=True, help="print metrics and the protocol's counts as JSON")
@click.option("--quiet", is_flag=True, help="--real: no progress line")
def batsim(spec_path: str, endpoint: str, timeout: float, real: bool, out: str | None, time_scale: float | None,
           work_dir: str | None, keep_work: bool, as_json: bool, quiet: bool) -> None:
    """Run the batch experiment SPEC with its decisions made by the scheduler listening at ENDPOINT (a pybatsim
    scheduler, or any program speaking Batsim 4's JSON protocol); the spec's own scheduler is not used.

    iolab plays Batsim's side: it sends SIMULATION_BEGINS, JOB_SUBMITTED, JOB_COMPLETED, REQUESTED_CALL, ...
    and applies EXECUTE_JOB, REJECT_JOB, KILL_JOB and CALL_ME_LATER; a reply that breaks the protocol, names a
    job that is not waiting or nodes that are not free, or does not come within --timeout stops the run (exit 1).
    """
    check_endpoint(endpoint)
    if not real and (time_scale is not None or work_dir is not None or keep_work):
        raise click.UsageError("--time-scale, --work-dir and --keep-work apply to a real run (--real)")
    if real and endpoint.startswith("tcp://") and os.environ.get(NETNS_MARKER) == "1":
        raise click.UsageError(
            f"a real run runs in a network namespace of its own (docs/emulator.md, \"Network exposure\"): the "
            f"scheduler's {endpoint} on this host is out of its reach; start the scheduler on an ipc:// endpoint "
            "(pybatsim SCHED -s ipc:///tmp/sched.sock) or set IOLAB_NETWORK=open")
    spec = load_spec(spec_path)
    if level_of(spec) != "batch":
        raise click.UsageError(f"{spec_path}: Batsim's protocol decides batch jobs; this is an I/O experiment "
                               "(kind: io)")
    out = out or ("run.h5" if real else None)
    if out:
        check_output(out, input_files(spec, spec_path), option="--out", devices=not real)
    if real:
        return _real(spec, spec_path, endpoint, timeout, out, time_scale, work_dir, keep_work, as_json, quiet)
    with partial_kept(out):
        trace = run_batsim(spec, endpoint, timeout=timeout, phases="all" if out else "jobs", node_ids=bool(out),
                           progress=SimProgress(spec.name), source=spec_path)
    if out:
        write_trace(trace, Path(out))
    _report(spec, trace, out, as_json)


def _real(spec, path, endpoint, timeout, out, time_scale, work_dir, keep_work, as_json, quiet) -> None:
    if work_dir is not None:
        check_output(work_dir, input_files(spec, path), option="--work-dir", folder=True)
    work = work_folder(spec, out, work_dir)
    existed = work_dir is not None and work.exists()
    with kept_on_failure(work):
        try:
            trace = run_batsim(spec, endpoint, real=True, timeout=timeout, out=out, time_scale=time_scale,
                               work_dir=work_dir, progress=batch_sink(spec, quiet, False), source=path)
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted; partial trace in {out}") from None
    write_trace(trace, Path(out))  # again: with the protocol's counts
    _report(spec, trace, out, as_json)
    click.echo(finish(work, well=ended_well(trace), keep=keep_work, existed=existed), err=True)
    exit_if_failed([trace], out if as_json else "")


def _report(spec, trace, out: str | None, as_json: bool) -> None:
    m = runner("batch", "sim").metrics(trace)
    b = trace.attrs["batsim"]
    if as_json:
        click.echo(dumps({**asdict(m), "scheduler": trace.attrs["scheduler"], "batsim": b}))
        return
    click.echo(f"{spec.name}: scheduler {trace.attrs['scheduler']}, {m.jobs:,} jobs on {spec.platform.nodes:,} nodes "
               f"({trace.attrs['runtime']})")
    click.echo(table(["makespan", "mean turnaround", "node utilisation", "HPS utilisation", "jobs on HPS"],
                     [(seconds(m.makespan), seconds(m.mean_turnaround), m.node_utilisation, m.hps_utilisation,
                       m.hps_jobs)]))
    click.echo(f"protocol: {b['messages']:,} messages ({b['events_sent']:,} events sent, {b['events_received']:,} "
               f"received), {_rate(b['messages_per_second'])} messages/s; {b['wall_seconds']:.2f} s of wall time, "
               f"{b['waiting_seconds']:.2f} s of it waiting for the scheduler")
    if out:
        click.echo(f"trace written to {out}")


def _rate(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"
