"""A batch spec run with its decisions made by an external scheduler over Batsim's protocol.

    trace = run_batsim(spec, "tcp://127.0.0.1:28000")                  # the simulator
    trace = run_batsim(spec, "ipc:///tmp/s.sock", real=True, out="r.h5")  # a real run: MPI jobs on the nodes it names

The adapter (:class:`~iolab.middleware.policies.batsim.BatsimScheduler`) replaces the spec's scheduler and is
called through its guard, as a user's scheduler is: the same kernel, rules and strict checks in both runtimes.
SIMULATION_BEGINS is sent before the run starts (a scheduler that is not there is found at once), SIMULATION_ENDS
after its last job.  The trace names the scheduler ``batsim(ENDPOINT)`` and holds, in its ``batsim`` attribute,
what crossed the socket (messages, events each way, bytes, the wall seconds spent waiting for the scheduler).
"""

from __future__ import annotations

import math
import time
from typing import Any

from iolab.middleware.policies.batsim import BatsimScheduler
from iolab.middleware.policies.guard import GuardedScheduler
from iolab.runners import runner
from iolab.workloads import load_workload

from iolab.batsim.socket import SchedulerSocket

DEFAULT_TIMEOUT = 30.0  # seconds a scheduler may take to answer one message


def platform_info(spec) -> dict[str, Any]:
    """What iolab adds to SIMULATION_BEGINS (its ``iolab`` field): the tiers and I/O nodes a Batsim platform
    does not describe."""
    p = spec.platform
    info: dict[str, Any] = {"tiers": {"lps": {"rate": p.lps.rate},
                                      "hps": {"rate": p.hps.rate, "capacity": p.hps.total_capacity}},
                            "stage_rate": p.stage_rate, "memory_per_node": p.memory_per_node}
    if p.io_nodes is not None:
        info.update(io_nodes=p.io_nodes, nodes_per_io_node=p.io_nodes_span, io_node_rate=p.io_node.rate)
    return info


def run_batsim(spec, endpoint: str, *, real: bool = False, timeout: float = DEFAULT_TIMEOUT,
               strict: bool | None = None, jobs: list | None = None, **options):
    """Run ``spec`` decided by the scheduler at ``endpoint``; returns the trace.  ``real``: a real run
    (``options``: the real runner's, e.g. ``out``, ``time_scale``, ``work_dir``); else the simulator
    (``options``: ``phases``, ``node_ids``, ``progress``...)."""
    jobs = load_workload(spec) if jobs is None else jobs
    sock = SchedulerSocket(endpoint, timeout)
    label = f"batsim({endpoint})"
    adapter = BatsimScheduler(sock.exchange, jobs, nodes=spec.platform.nodes, workload=spec.name,
                              iolab=platform_info(spec), name=label)
    guard = GuardedScheduler(adapter, label)
    t0 = time.perf_counter()
    try:
        adapter.begin()
        if real:
            trace = runner("batch", "real").run(spec, scheduler=guard, strict=strict, **options)
        else:
            trace = runner("batch", "sim").run(spec, jobs, scheduler=guard, strict=strict, **options)
        ends = [float(e) for e in trace.jobs["end"] if math.isfinite(float(e))]
        adapter.end(max(ends, default=0.0))
    except BaseException as exc:
        partial = getattr(exc, "trace", None)
        if partial is not None:
            partial.attrs["batsim"] = _stats(adapter, sock, time.perf_counter() - t0)
        raise
    finally:
        sock.close()
    trace.attrs["batsim"] = _stats(adapter, sock, time.perf_counter() - t0)
    return trace


def _stats(adapter: BatsimScheduler, sock: SchedulerSocket, wall: float) -> dict[str, Any]:
    s = adapter.stats()
    s.update(endpoint=sock.endpoint, bytes_sent=sock.sent, bytes_received=sock.received, wall_seconds=wall,
             waiting_seconds=sock.waited, messages_per_second=s["messages"] / wall if wall > 0 else math.nan)
    return s


__all__ = ["DEFAULT_TIMEOUT", "platform_info", "run_batsim"]
