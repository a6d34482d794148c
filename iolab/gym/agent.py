"""A learned (or any) agent as a batch scheduler of the public policy API: ``agent(observation) -> action``, the
observation and actions of :mod:`.observation`, called at each decision until it waits.  The same loop drives the
Gymnasium environment (:mod:`.env`), whose agent is the learner on the other side of ``env.step``; here the agent is
a function, so a policy trained in the environment decides any run, simulated or real::

    scheduler: {kind: python, module: iolab.gym.agent, class: AgentScheduler,
                options: {agent: "my_agents.py:act", k: 16}}

``agent``: ``module:function`` or ``path/to/file.py:function`` (a file relative to the working directory), a
callable taking the observation dict and returning an action (int); or, from Python, the callable itself.

At a decision it asks the agent only if one of the first ``k`` waiting jobs can start now; after each start it
asks again (the observation changed), and stops at the first wait (or an action that cannot be done now).  When
it leaves jobs waiting while nothing runs, it asks to be called ``idle_wait`` seconds later, as a run would
otherwise end with ``never-started``.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from pathlib import Path
from typing import Any, Callable

from iolab.middleware.policies.batch.snapshot import BatchScheduler, Decision, Snapshot

from iolab.gym.observation import Encoding, View

Agent = Callable[[dict], Any]


def load_agent(ref: str | Agent) -> Agent:
    """``module:function``, ``file.py:function`` or a callable."""
    if callable(ref):
        return ref
    if not isinstance(ref, str) or ":" not in ref:
        raise ValueError(f"agent: {ref!r}: give module:function or path/to/file.py:function")
    where, _, name = ref.rpartition(":")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise ValueError(f"agent: {where}: no such file (relative to {Path.cwd()})")
        spec = importlib.util.spec_from_file_location(f"iolab_agent_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise ValueError(f"agent: {ref}: {where} has no function {name}")
    return fn


class AgentScheduler(BatchScheduler):
    """``agent(observation) -> action`` as a batch scheduler; ``k`` job slots, ``tiers`` (the agent also chooses
    LPS or HPS), ``io_nodes`` (the length of the ``io_nodes`` observation), ``idle_wait`` (seconds)."""

    name = "agent"

    def __init__(self, agent: str | Agent, k: int = 16, tiers: bool = False, io_nodes: int = 1,
                 idle_wait: float = 60.0):
        self.agent = load_agent(agent)
        self.encoding = Encoding(k=k, tiers=bool(tiers), io_nodes=int(io_nodes))
        if not (idle_wait > 0 and math.isfinite(idle_wait)):
            raise ValueError(f"idle_wait: seconds > 0, got {idle_wait!r}")
        self.idle_wait = float(idle_wait)
        self.io_rates: dict[str, float] = {}
        self.name = f"agent({agent if isinstance(agent, str) else getattr(agent, '__name__', 'callable')})"

    def act(self, observation: dict, view: View) -> Any:
        """The agent's action on ``observation`` (the environment overrides it: its agent is on the other side)."""
        return self.agent(observation)

    def started_job(self, job, now: float) -> None:
        """``job`` (a :class:`~iolab.policy.QueuedJob`) starts at ``now`` (the environment keeps its submit time)."""

    def decide(self, snap: Snapshot) -> Decision:
        view = View.of(snap, self.io_rates)
        enc = self.encoding
        while view.queue and view.any_fits(enc.k):
            chosen = enc.start_of(view, self.act(enc.observe(view), view))
            if chosen is None:
                break
            view.start(*chosen)
            self.started_job(chosen[0], snap.now)
        idle = not snap.running and not view.started and view.queue
        return Decision(snap.now, tuple(view.started), wake_at=snap.now + self.idle_wait if idle else None)


__all__ = ["Agent", "AgentScheduler", "load_agent"]
