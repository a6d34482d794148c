"""``iolab simulate``: run the simulator on a spec."""

from __future__ import annotations

import gc
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import click

from iolab.cli import resume_collector
from iolab.invariants import InvariantViolation
from iolab.runners import runner
from iolab.signals import ctrl_c_came
from iolab.atomic import check_output
from iolab.specs.load import MAX_APPS
from iolab.specs.size import MAX_BATCH_EVENTS, MAX_EVENTS, MAX_JOBS, io_size
from iolab.trace import write_trace
from iolab.cli.format import batch_metrics_table, dumps, metrics_json, print_metrics, seconds
from iolab.cli.options import IO_POLICY, Finite, parse_overridden, read_overridden, strict_option


@click.command()
@strict_option
@click.argument("spec_path", metavar="SPEC", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--policy", type=IO_POLICY, help="override the spec's I/O policy: a built-in's name or your own (file.py:Class)")
@click.option("--mode", type=click.Choice(["event", "step"]), help="engine: exact next-event, or fixed time step")
@click.option("--dt", type=Finite(0, min_open=True), help="time step of --mode step, seconds")
@click.option("--out", "out", type=click.Path(dir_okay=False), help="write the trace (HDF5) here")
@click.option("--json", "as_json", is_flag=True, help="print metrics as JSON")
@click.option("--max-events", type=click.IntRange(1), default=None,
              help=f"refuse a run estimated to need more events: an I/O experiment's phases (or time steps), "
                   f"default {MAX_EVENTS:,}; a batch experiment's job steps, controller samples and retries, "
                   f"default {MAX_BATCH_EVENTS:,}")
@click.option("--max-jobs", type=click.IntRange(1), default=MAX_JOBS, show_default=True,
              help="refuse a batch experiment with more jobs (inline jobs: counted while the spec is read)")
@click.option("--max-apps", type=click.IntRange(1), default=MAX_APPS, show_default=True,
              help="refuse an I/O experiment with more apps (counted while the spec is read)")
@click.option("--phases", type=click.Choice(["all", "jobs", "none"]), default=None,
              help="batch specs: what the trace keeps of the jobs' phases: a row per phase (all, the default with "
                   "--out), each job's I/O time only (jobs: the jobs table's io_time; for runs of 10^5 jobs and more; "
                   "the default without --out, where no row would be seen), or nothing (none)")
@click.option("--calibration", "calibration", type=click.Path(dir_okay=False), metavar="TRACE",
              help="model the costs measured by the real run traced in TRACE (of the same level: launch, exit, "
                   "per-phase costs and delivered rates; converted with this spec's emulator.time_scale; "
                   "docs/validation.md)")
def simulate(spec_path: str, policy: str | None, mode: str | None, dt: float | None,
             out: str | None, as_json: bool, max_events: int, max_jobs: int, max_apps: int, phases: str | None,
             calibration: str | None) -> None:
    """Simulate the experiment in SPEC (YAML or JSON; - reads standard input) and print its metrics.

    Relative paths inside SPEC start at SPEC's folder.  Exit status: 0 ok, 1 the
    run failed, 2 bad usage or input, 130 interrupted (docs/cli.md).
    """
    if dt is not None and not dt > 0:
        raise click.BadParameter("must be > 0", param_hint="--dt")
    if out:  # before any input is read; again with the spec's own input files once it is read
        check_output(out, [p for p in (spec_path, calibration) if p and p != "-"], option="--out")

    if calibration:
        from iolab.calibration import read_calibration  # lazy: statistics and the trace reader, for --calibration only
    # read once (the level, before the spec is validated; then the spec itself): a YAML spec is parsed in Python
    level, document = read_overridden(spec_path, {"policy": policy, "sim.mode": mode, "sim.dt": dt},
                                      _source(spec_path), {"apps": max_apps, "jobs": max_jobs})
    if level == "batch":
        cal = read_calibration(calibration, "batch") if calibration else None  # a bad trace: exit 2 first
        # without --out no phase row is seen (the metrics read the jobs table): none is kept
        return _simulate_batch(spec_path, document, out, as_json, max_jobs, cal, phases or ("all" if out else "jobs"),
                               calibration, max_events)
    if phases:
        raise click.UsageError("--phases applies to batch experiments; an I/O trace keeps every phase")
    cal = read_calibration(calibration, "io") if calibration else None
    spec, inputs = parse_overridden(document, spec_path, _source(spec_path))
    if out:
        check_output(out, inputs + ([calibration] if calibration else []), option="--out")
    if cal is not None:
        from iolab.calibration import calibrated, describe_io  # lazy: for --calibration only
        if not as_json:
            click.echo(f"calibration: {describe_io(cal, spec)} (spec seconds at time_scale "
                       f"{spec.emulator.time_scale:g})", err=True)
        spec = calibrated(spec, cal)
    size = io_size(spec, MAX_EVENTS if max_events is None else max_events)
    size.check(_source(spec_path), "apps" if spec.sim.mode == "event" else "sim.dt")
    sim = runner("io", "sim")
    run, metrics = sim.run, sim.metrics  # imported here, before the collector's pause
    if size.estimate > 1e6 and not as_json:  # announced once the imports are done: the run itself starts now
        click.echo(f"{spec.name}: about {size.estimate:,.0f} {size.what} to simulate (Ctrl-C stops)", err=True)
    with _collector_paused_on_startup(), partial_kept(out):
        trace = run(spec)
        m = metrics(trace)
    if out:
        write_trace(trace, Path(out))
    if as_json:
        click.echo(dumps(metrics_json(m)))
    else:
        # the policy and runtime as the trace names them
        print_metrics(m, f"{spec.name}: policy {trace.attrs['policy']}, mapping {spec.mapping.kind}, "
                         f"{trace.attrs['runtime']}" + (f" dt={spec.sim.dt}" if spec.sim.mode == "step" else ""))
        if out:
            click.echo(f"trace written to {out}")


@contextmanager
def _collector_paused_on_startup():
    """Python's cyclic garbage collector leaves the objects alive now (modules, classes, pydantic's
    schemas, the spec: they live as long as the run) out of its passes while the run lasts
    (``gc.freeze``; ``gc.unfreeze`` after).  A run allocates objects by the hundred thousand, so the
    collector's full passes come often and would each walk every start-up object again (about a tenth of
    ``iolab simulate`` on KTH-SP2 under EASY: docs/performance.md).  Objects are still freed when unreferenced.

    Started from ``main()``, the command has run with the collector paused until here (``COLLECTOR_KEPT_PAUSED``
    in iolab/cli/__init__.py: its start-up makes next to no garbage); it is on for the run, its youngest
    generation passed over every 10 000 new objects instead of Python's 700 (a run makes them by the hundred
    thousand, few of them in cycles), and at 700 again after it."""
    gc.freeze()
    resume_collector()
    thresholds = gc.get_threshold()
    gc.set_threshold(10_000, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


@contextmanager
def partial_kept(out: str | None):
    """A run stopped by a broken rule or a policy that raised: the trace up to there (the violation's
    ``trace``, complete False) is written to ``out``, and the violation goes on (exit 1)."""
    try:
        yield
    except InvariantViolation as exc:
        trace = getattr(exc, "trace", None)
        if out and trace is not None:
            write_trace(trace, Path(out))
            exc.partial = out
        raise


def _source(spec_path: str) -> str:
    return "<stdin>" if spec_path == "-" else spec_path


class SimProgress:
    """Progress of a long simulation on stderr: one plain line every ``every`` wall seconds, the first
    after ``every`` seconds (a short run prints nothing; stdout stays for results and --json)."""

    def __init__(self, name: str, every: float = 5.0, stream=None):
        self.name, self.every, self.stream = name, every, stream
        self.t0 = time.monotonic()
        self.next = self.t0 + every

    def __call__(self, t: float, submitted: int, total: int) -> None:
        if ctrl_c_came():  # a Ctrl-C whose KeyboardInterrupt Python dropped (iolab/signals.py): stop now
            raise KeyboardInterrupt
        now = time.monotonic()
        if now < self.next:
            return
        self.next = now + self.every
        elapsed = now - self.t0
        print(f"{self.name}: {submitted:,}/{total:,} jobs submitted ({100 * submitted / max(total, 1):.0f} %), "
              f"simulated time {seconds(t)}, {seconds(elapsed)} elapsed{eta(submitted, total, elapsed)}",
              file=self.stream or sys.stderr, flush=True)


def eta(done: int, total: int, elapsed: float) -> str:
    """``, about 0:01:05 left``: the wall time left if the rest goes at the pace so far (jobs submitted per
    wall second; the jobs still queued or running at the end add to it), or nothing before the first job."""
    if done <= 0 or total <= done:
        return ""
    return f", about {seconds(elapsed * (total - done) / done)} left"


def _simulate_batch(spec_path: str, document: dict, out: str | None, as_json: bool, max_jobs: int = MAX_JOBS,
                    cal: dict | None = None, phases: str = "all", calibration: str | None = None,
                    max_events: int | None = None) -> None:
    spec, inputs = parse_overridden(document, spec_path, _source(spec_path))
    if out:
        check_output(out, inputs + ([calibration] if calibration else []), option="--out")
    if cal is not None:
        from iolab.calibration import calibrated, describe_batch  # lazy: for --calibration only
        spec = calibrated(spec, cal)
        if not as_json:
            click.echo(f"calibration: {describe_batch(spec)}", err=True)
    from iolab.workloads import load_jobs_within  # lazy: the batch models, for a batch spec only

    jobs = load_jobs_within(spec, max_jobs, _source(spec_path))
    sim = runner("batch", "sim")
    run, metrics = sim.run, sim.metrics  # imported here, before the collector's pause
    with _collector_paused_on_startup(), partial_kept(out):
        # without --out nobody reads the trace but its metrics: no node set written as text, no other column
        trace = run(spec, jobs, progress=SimProgress(spec.name), phases=phases, node_ids=bool(out),
                    max_events=max_events, source=_source(spec_path), metrics_only=not out)
        m = metrics(trace)
    if out:
        write_trace(trace, Path(out))
    if as_json:
        click.echo(dumps({**asdict(m), "scheduler": trace.attrs["scheduler"]}))  # the scheduler as the trace names it
        return
    click.echo(f"{spec.name}: scheduler {trace.attrs['scheduler']}, {m.jobs:,} jobs on {spec.platform.nodes:,} nodes "
               f"(simulated in {trace.attrs['wall_seconds']:.2f} s of wall time, {trace.attrs['decisions']:,} "
               "scheduling decisions)")
    click.echo(batch_metrics_table(m))
    if out:
        click.echo(f"trace written to {out}")
