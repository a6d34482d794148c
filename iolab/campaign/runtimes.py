"""The seam between a campaign and what executes one run.

A runtime is a function ``fn(spec, *, mode, run_id, workdir) -> Trace``.  Two
are built in: ``sim`` (:func:`iolab.sim.run.simulate`) and ``emulate`` (the
emulator's ``run_emulation``, looked up when needed).  A campaign may also
name ``module:function``, imported in every worker (the module must be
importable there, e.g. through ``PYTHONPATH``).
"""

from __future__ import annotations

import importlib
import tempfile
from pathlib import Path
from typing import Any, Callable

from ..errors import RunError

Runtime = Callable[..., Any]

# Where the emulator's entry point may live; the first importable one is used.
EMULATOR_ENTRIES: tuple[str, ...] = ("emulator:run_emulation", "iolab.emulator.run:run_emulation",
                                     "emulator.orchestrator:run_emulation")


def run_sim(spec, *, mode: str, run_id: str = "", workdir: Path | None = None):
    from iolab.sim.run import simulate

    return simulate(spec, mode=mode)


def _import(target: str) -> Callable | None:
    module, attr = target.split(":", 1)
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    return getattr(mod, attr, None)


def emulator_entry() -> Callable | None:
    for target in EMULATOR_ENTRIES:
        fn = _import(target)
        if callable(fn):
            return fn
    return None


def run_emulate(spec, *, mode: str, run_id: str = "", workdir: Path | None = None):
    """UNTESTED: calls ``iolab.emulator.run.run_emulation(spec, policy=, out=, work_dir=) -> Trace``.

    Each emulated run starts MPI processes and an arbiter actor in the Ray
    cluster the task runs in; give the campaign a ``cpus_per_run`` that
    matches the apps' ranks so that Ray does not oversubscribe the nodes.
    """
    fn = emulator_entry()
    if fn is None:
        raise RunError("runtime 'emulate' needs emulator.run_emulation, which this installation lacks")
    name = run_id or spec.name
    work = Path(workdir) if workdir else Path(tempfile.gettempdir())
    return fn(spec, policy=spec.policy, out=work / f"{name}.emulated.h5", work_dir=work / f"{name}.work")


BUILTIN: dict[str, Runtime] = {"sim": run_sim, "emulate": run_emulate}


def resolve(name: str) -> Runtime:
    """The runtime called ``name``; raises RunError saying why it is unavailable."""
    if name in BUILTIN:
        if name == "emulate" and emulator_entry() is None:
            raise RunError("runtime 'emulate': the emulator entry point (one of "
                           f"{', '.join(EMULATOR_ENTRIES)}) is not available in this installation")
        return BUILTIN[name]
    if ":" not in name:
        raise RunError(f"unknown runtime {name!r}; use sim, emulate or module:function")
    module, attr = name.split(":", 1)
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise RunError(f"runtime {name!r}: cannot import {module} ({exc})") from None
    fn = getattr(mod, attr, None)
    if not callable(fn):
        raise RunError(f"runtime {name!r}: {module} has no function {attr}")
    return fn
