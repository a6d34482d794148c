"""The seam between a campaign and what executes one run.

A runtime is a function ``fn(spec, *, mode, run_id, workdir) -> Trace``.  Two
are built in: ``sim`` and ``emulate``, the simulator's and the real run's runner of
the spec's level (:data:`iolab.runners.RUNNERS`: an I/O or a batch experiment).
A campaign may also name ``module:function``, imported in every worker (the module
must be importable there, e.g. through ``PYTHONPATH``); ``mode`` is the I/O
simulator's engine (``event`` or ``step``), None for a batch spec.
"""

from __future__ import annotations

import importlib
import inspect
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from iolab.errors import RunError
from iolab.runners import level_of, runner_for

Runtime = Callable[..., Any]


def run_sim(spec, *, mode: str | None, run_id: str = "", workdir: Path | None = None):
    """The simulator's runner of the spec's level (``mode``: the I/O engine; a batch spec has one)."""
    sim = runner_for(spec, "sim")
    return sim.run(spec, mode=mode) if level_of(spec) == "io" else sim.run(spec)


def run_emulate(spec, *, mode: str | None, run_id: str = "", workdir: Path | None = None):
    """A real run, by the real runner of the spec's level (I/O runs tested through ``iolab validate
    --campaign``: tests/validation/test_validate_campaign.py).

    Each emulated run starts MPI processes and an arbiter actor in the Ray
    cluster the task runs in; give the campaign a ``cpus_per_run`` that
    matches the apps' ranks so that Ray does not oversubscribe the nodes.

    The trace goes to ``RUN.h5`` in ``workdir`` (the sweep's ``--traces DIR``), the file the sweep
    writes the returned trace to, so a run that fails half way leaves its partial trace there and an
    ok one one file, not two.  The run's work folder ``RUN.work`` keeps its logs and the apps'
    manifests; the checkpoints the apps wrote (``io-node-*``, ~100 MB a Table 1 run) are removed once
    the run ended ok, so a campaign of many real runs does not fill the disk.
    """
    name = run_id or spec.name
    work = Path(workdir) if workdir else Path(tempfile.gettempdir())
    run_dir = work / f"{name}.work"
    real = runner_for(spec, "real")
    if level_of(spec) == "batch":
        return real.run(spec, out=work / f"{name}.h5", work_dir=run_dir)
    trace = real.run(spec, policy=spec.policy, out=work / f"{name}.h5", work_dir=run_dir)
    if trace.attrs.get("complete") and not trace.attrs.get("failures"):
        for d in run_dir.glob("io-node-*"):
            shutil.rmtree(d, ignore_errors=True)
    return trace


BUILTIN: dict[str, Runtime] = {"sim": run_sim, "emulate": run_emulate}


def resolve(name: str) -> Runtime:
    """The runtime called ``name``; raises RunError saying why it is unavailable."""
    if name in BUILTIN:
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
    if not takes_runtime_call(fn):
        raise RunError(f"runtime {name!r}: not a runtime: a runtime is fn(spec, *, mode, run_id, workdir) -> Trace "
                       "(docs/campaigns.md, 'Runtimes')")
    return fn


def takes_runtime_call(fn: Callable) -> bool:
    """Whether ``fn(spec, mode=, run_id=, workdir=)`` binds to ``fn``'s signature (a function without one,
    e.g. a C builtin such as ``os.system``, is not a runtime)."""
    try:
        inspect.signature(fn).bind(None, mode="event", run_id="", workdir=None)
    except (TypeError, ValueError):
        return False
    return True
