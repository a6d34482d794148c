"""``iolab emulate``: run an experiment for real (MPI apps + the Ray arbiter)."""

from __future__ import annotations

from contextlib import contextmanager
from importlib.resources import files
from pathlib import Path

import click

from iolab.calibration import describe_io
from iolab.emulator.work_folder import ended_well, finish, work_folder
from iolab.atomic import check_output
from iolab.errors import Interrupted
from iolab.runners import level_of, runner
from iolab.cli.emulate_batch import emulate_batch
from iolab.cli.format import dumps, metrics_json, print_metrics, seconds
from iolab.cli.live import LiveView
from iolab.cli.options import IO_POLICY, Finite, parse_overridden, read_overridden, strict_option
from iolab.cli.outcome import exit_if_failed

EXAMPLE = "table1-emulation.yaml"


def example_path() -> Path:
    return Path(str(files("iolab.examples") / EXAMPLE))


@click.command()
@strict_option
@click.argument("spec_path", metavar="[SPEC]", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--policy", type=IO_POLICY, help="override the spec's I/O policy: a built-in's name or your own (file.py:Class)")
@click.option("--time-scale", type=Finite(0, min_open=True), help="wall seconds per spec second (overrides emulator.time_scale)")
@click.option("--out", type=click.Path(dir_okay=False), default="run.h5", show_default=True,
              help="trace file (HDF5, the simulator's schema)")
@click.option("--address", help="join this Ray (GCS host:port) instead of starting a local one")
@click.option("--work-dir", type=click.Path(file_okay=False), help="checkpoints and logs (default: OUT's stem + .work)")
@click.option("--keep-work", is_flag=True, help="keep the work folder (checkpoints, logs) after a run that ended "
              "well; it is always kept after a failed or interrupted run, and its path is printed")
@click.option("--json", "as_json", is_flag=True, help="print metrics as JSON")
@click.option("--quiet", is_flag=True, help="no progress line")
@click.option("--live", is_flag=True, help="live view on a terminal: per I/O node its grant and queue, per tier "
              "used/free capacity, per app/job its phase and progress (plain lines when stderr is not a terminal)")
@click.option("--launcher", type=click.Choice(["srun", "mpiexec"], case_sensitive=False),
              help="how apps and batch jobs start (default: srun inside a Slurm allocation, i.e. SLURM_JOB_ID set; "
                   "else mpiexec)")
def emulate(spec_path, policy, time_scale, out, address, work_dir, keep_work, as_json, quiet, launcher,
            live) -> None:
    """Emulate SPEC (default: the built-in carretero2020 Table 1 example) for real.

    Every app (or batch job) runs under mpiexec, or as an srun step inside a Slurm
    allocation; its I/O phases are granted by the Ray arbiter
    under the policy; the trace (spec seconds) goes to --out.  Ctrl-C stops
    every app and writes a partial trace (attribute complete = False).  The work folder is
    removed after a run that ended well (--keep-work keeps it), kept otherwise.
    """
    if time_scale is not None and not time_scale > 0:
        raise click.BadParameter("must be > 0", param_hint="--time-scale")
    path = spec_path or str(example_path())
    source = "<stdin>" if path == "-" else path
    _, document = read_overridden(path, {"policy": policy, "emulator.time_scale": time_scale}, source)
    spec, inputs = parse_overridden(document, path, source)
    check_output(out, inputs, option="--out", devices=False)
    if work_dir is not None:
        check_output(work_dir, inputs, option="--work-dir", folder=True)
    work = work_folder(spec, out, work_dir)
    existed = work_dir is not None and work.exists()
    if level_of(spec) == "batch":  # a batch experiment: the real-clock batch loop (emulator/batch/run.py)
        with kept_on_failure(work):
            trace = emulate_batch(spec, path, out=out, address=address, work_dir=work_dir, as_json=as_json,
                                  quiet=quiet, live=live, launcher=launcher)
        click.echo(finish(work, well=ended_well(trace), keep=keep_work, existed=existed), err=True)
        return exit_if_failed([trace], out if as_json else "")
    real = runner("io", "real")
    with kept_on_failure(work):
        try:
            trace = real.run(spec, out=out, address=address, work_dir=work_dir,
                             progress=LiveView(not quiet) if live else not quiet, source=path, launcher=launcher)
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted; partial trace in {out}") from None
    m = real.metrics(trace)
    done = finish(work, well=ended_well(trace), keep=keep_work, existed=existed)
    if as_json:
        click.echo(dumps({**metrics_json(m), "failures": trace.attrs.get("failures", {})}))
        click.echo(done, err=True)
        return exit_if_failed([trace], out)
    print_metrics(m, f"{spec.name}: policy {trace.attrs['policy']}, mapping {spec.mapping.kind}, emulator "
                     f"(time scale {trace.attrs['time_scale']:g}, {trace.attrs['wall_seconds']:.0f} s wall)")
    for app, f in trace.attrs.get("failures", {}).items():
        click.echo(f"{app}: {f['status']} at {seconds(f['time'])}: {f['reason']}")
    if isinstance(trace.attrs.get("calibration"), dict):  # what `iolab simulate --calibration` will model
        ran = spec.model_copy(update={"emulator": spec.emulator.model_copy(
            update={"time_scale": trace.attrs["time_scale"]})})  # in the seconds of the run (--time-scale)
        click.echo(f"measured beyond the model (spec seconds): {describe_io(trace.attrs['calibration'], ran)}")
    click.echo(f"trace written to {out}")
    click.echo(done)
    exit_if_failed([trace], "")


@contextmanager
def kept_on_failure(work: Path):
    """A run that raises (failed, interrupted) keeps its work folder: say where it is.  A run refused
    before it started (bad input: exit 2, one line) has nothing there to look at, and says nothing."""
    try:
        yield
    except BaseException:
        if (work / "logs").is_dir():
            click.echo(f"work folder kept for inspection: {work} (logs in {work / 'logs'})", err=True)
        raise
