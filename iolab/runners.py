"""The table of runners: which function runs an experiment, by its level and the runtime asked for.

Two levels (the spec's ``kind``): ``io`` (apps sharing I/O nodes, carretero2020) and ``batch`` (a
batch scheduler with its storage tiers, lackner2019).  Two runtimes: ``sim``, the simulator, and
``real``, a real run (MPI apps or jobs under ``mpiexec`` on this machine, or ``srun`` steps inside
a Slurm allocation: the real runner's ``launcher`` option, chosen as docs/cli.md says).

``iolab simulate``, ``iolab emulate``, ``iolab validate`` and the campaigns' built-in runtimes
pick their runner here, so a level or a runtime is added in one place::

    trace = runner(level_of(spec), "sim").run(spec)

Each runner keeps its own keyword options (an I/O simulation takes a policy and an engine, a
batch one the phases its trace keeps, a real run an output file and a work folder...); what they
share is the first argument, the spec, and the result, a :class:`~iolab.trace.Trace`.
:data:`VALIDATIONS` holds, per level, the comparison of the two runtimes (``iolab validate``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Literal

from iolab.emulator.batch.run import run_batch_emulation
from iolab.emulator.io.run import run_emulation
from iolab.validation.io import validate as validate_io
from iolab.validation.batch import validate_batch
from iolab.metrics.batch_trace import trace_batch_metrics
from iolab.metrics.io import io_metrics
from iolab.sim.batch.run import simulate_batch, simulated_makespan
from iolab.sim.io.run import simulate
from iolab.trace import Trace

Level = Literal["io", "batch"]
Runtime = Literal["sim", "real"]
LEVELS: tuple[str, ...] = ("io", "batch")
RUNTIMES: tuple[str, ...] = ("sim", "real")


@dataclass(frozen=True)
class Runner:
    """How one runtime runs the experiments of one level."""

    level: str
    runtime: str
    run: Callable[..., Trace]  # run(spec, **options) -> Trace
    metrics: Callable[[Trace], Any]  # the level's metrics of the trace it returns


RUNNERS: dict[tuple[str, str], Runner] = {
    ("io", "sim"): Runner("io", "sim", simulate, io_metrics),
    ("io", "real"): Runner("io", "real", run_emulation, io_metrics),
    ("batch", "sim"): Runner("batch", "sim", simulate_batch, trace_batch_metrics),
    # the real runtime does not import the simulator: its wall-time check gets the simulated makespan here
    ("batch", "real"): Runner("batch", "real", partial(run_batch_emulation, makespan_of=simulated_makespan),
                              trace_batch_metrics),
}

# per level: emulate, simulate, compare (both runtimes' runners of the level, with the costs the
# real run measured: docs/validation.md)
VALIDATIONS: dict[str, Callable[..., Any]] = {"io": validate_io, "batch": validate_batch}


def level_of(spec) -> str:
    """The level of a spec (``io`` or ``batch``): its ``kind``."""
    level = getattr(spec, "kind", "io")
    if level not in LEVELS:
        raise ValueError(f"no runner for kind {level!r}; known: {', '.join(LEVELS)}")
    return level


def runner(level: str, runtime: str) -> Runner:
    """The runner of ``level`` in ``runtime``; ValueError naming both if there is none."""
    try:
        return RUNNERS[level, runtime]
    except KeyError:
        raise ValueError(f"no runner for level {level!r} in runtime {runtime!r}; levels: {', '.join(LEVELS)}, "
                         f"runtimes: {', '.join(RUNTIMES)}") from None


def runner_for(spec, runtime: str) -> Runner:
    """The runner of ``spec``'s level in ``runtime``."""
    return runner(level_of(spec), runtime)


__all__ = ["LEVELS", "RUNNERS", "RUNTIMES", "Runner", "VALIDATIONS", "level_of", "runner", "runner_for"]
