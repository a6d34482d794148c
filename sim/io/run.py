"""Simulate an experiment: pick the engine, run it, return the trace."""

from __future__ import annotations

import time

from iolab.invariants import InvariantViolation
from iolab.specs.io import IOExperiment
from iolab.trace import Trace
from iolab.trace.provenance import provenance

from iolab.sim.io.event import EventEngine
from iolab.sim.io.recorder import Recorder
from iolab.sim.io.scenario import Scenario
from iolab.sim.io.stepped import SteppedEngine
from iolab.middleware.policies.io_guard import policy_label
from iolab.middleware.policies.loader import check_spec_policies


def run_options(spec: IOExperiment, policy=None, mode: str | None = None, dt: float | None = None) -> tuple:
    """The policy, engine and time step of a run of ``spec``: those given, else the spec's."""
    return policy or spec.policy, mode or spec.sim.mode, dt or spec.sim.dt


def run_engine(spec: IOExperiment, *, policy: str | None = None, mode: str | None = None,
               dt: float | None = None, rows: bool = True, scenario: Scenario | None = None,
               strict: bool | None = None) -> Recorder:
    """Run one engine (:func:`run_options`); ``strict`` checks every decision (default: ``IOLAB_STRICT``)."""
    sc = scenario or Scenario.from_spec(spec)
    policy, mode, dt = run_options(spec, policy, mode, dt)
    if mode == "event":
        engine = EventEngine(sc, policy, rows, strict=strict)
    elif mode == "step":
        engine = SteppedEngine(sc, policy, dt, rows, strict=strict)
    else:
        raise ValueError(f"unknown simulation mode {mode!r} (event or step)")
    try:
        return engine.run()
    except InvariantViolation as exc:  # a broken rule or a policy that raised: what ran so far goes with it
        exc.record = engine.rec
        raise


def simulate(spec: IOExperiment, *, policy: str | None = None, mode: str | None = None,
             dt: float | None = None, strict: bool | None = None) -> Trace:
    """Run the simulator on ``spec`` and return the full trace.

    ``strict``: check every decision and state change with the I/O level's checker
    (:mod:`iolab.middleware.policies.io_checker`) and raise
    :class:`~iolab.invariants.InvariantViolation` at the first broken rule; ``None``
    follows ``IOLAB_STRICT`` (:func:`iolab.invariants.strict_default`)."""
    policy, mode, dt = run_options(spec, policy, mode, dt)
    spec = spec.model_copy(update={"policy": policy})
    check_spec_policies(spec)
    t0 = time.perf_counter()
    sc = Scenario.from_spec(spec)
    extra = {}
    try:
        rec = run_engine(spec, policy=policy, mode=mode, dt=dt, scenario=sc, strict=strict)
    except InvariantViolation as exc:
        rec = getattr(exc, "record", None)
        if rec is None:
            raise
        extra = {"complete": False, "stopped": str(exc)}  # the trace up to where the run stopped goes with it
        exc.trace = _trace(spec, sc, rec, policy, mode, dt, time.perf_counter() - t0, extra)
        raise
    return _trace(spec, sc, rec, policy, mode, dt, time.perf_counter() - t0, extra)


def _trace(spec, sc: Scenario, rec: Recorder, policy, mode: str, dt: float, wall: float, extra: dict) -> Trace:
    return rec.trace(
        **provenance(spec, f"sim-{mode}"), policy=policy_label(policy), mode=mode, dt=dt if mode == "step" else 0.0,
        wall_seconds=wall, events=rec.events, bandwidth=spec.platform.bandwidth,
        io_nodes=spec.platform.io_nodes, nodes_per_io_node=spec.platform.nodes_per_io_node,
        packed=sc.plan.packed, packs=sc.plan.pack_count, unit_bytes=1, **extra,
    )
