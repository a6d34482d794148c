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

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterator, Literal

Level = Literal["io", "batch"]
Runtime = Literal["sim", "real"]
LEVELS: tuple[str, ...] = ("io", "batch")
RUNTIMES: tuple[str, ...] = ("sim", "real")


def _resolve(where: str) -> Any:
    """``"module:attr"`` -> the attribute, imported now.  The table names its functions by where they
    live, as the command line's ``LazyGroup`` names its commands: ``iolab simulate`` of a batch spec
    then imports the batch simulator only, not the real runtimes (Ray's actors, the MPI launchers) nor
    the I/O level's validation (a third of its start-up before)."""
    module, attr = where.split(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Runner:
    """How one runtime runs the experiments of one level: ``run(spec, **options) -> Trace`` and the
    level's ``metrics(trace)``, imported on first use from where the table names them."""

    level: str
    runtime: str
    run_at: str  # "module:function", called as run(spec, **options) -> Trace
    metrics_at: str  # "module:function": the level's metrics of the trace it returns
    # keyword arguments bound to run, each "module:attr" (the real batch run gets the simulated makespan)
    bound: tuple[tuple[str, str], ...] = ()

    @property
    def run(self) -> Callable[..., Any]:
        fn = _resolve(self.run_at)
        return partial(fn, **{k: _resolve(v) for k, v in self.bound}) if self.bound else fn

    @property
    def metrics(self) -> Callable[[Any], Any]:
        return _resolve(self.metrics_at)


_IO_METRICS = "iolab.metrics.io:io_metrics"
_BATCH_METRICS = "iolab.metrics.batch_trace:trace_batch_metrics"
RUNNERS: dict[tuple[str, str], Runner] = {
    ("io", "sim"): Runner("io", "sim", "iolab.sim.io.run:simulate", _IO_METRICS),
    ("io", "real"): Runner("io", "real", "iolab.emulator.io.run:run_emulation", _IO_METRICS),
    ("batch", "sim"): Runner("batch", "sim", "iolab.sim.batch.run:simulate_batch", _BATCH_METRICS),
    # the real runtime does not import the simulator: its wall-time check gets the simulated makespan here
    ("batch", "real"): Runner("batch", "real", "iolab.emulator.batch.run:run_batch_emulation", _BATCH_METRICS,
                              bound=(("makespan_of", "iolab.sim.batch.run:simulated_makespan"),)),
}


class _Validations(Mapping):
    """Level -> its validation function, imported on first use."""

    _AT = {"io": "iolab.validation.io:validate", "batch": "iolab.validation.batch:validate_batch"}

    def __getitem__(self, level: str) -> Callable[..., Any]:
        return _resolve(self._AT[level])

    def __iter__(self) -> Iterator[str]:
        return iter(self._AT)

    def __len__(self) -> int:
        return len(self._AT)


# per level: emulate, simulate, compare (both runtimes' runners of the level, with the costs the
# real run measured: docs/validation.md)
VALIDATIONS: Mapping[str, Callable[..., Any]] = _Validations()


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
