"""Learned batch schedulers: a Gymnasium environment on a batch spec (:class:`BatchSchedulingEnv`, needs
``gymnasium``: ``pip install 'iolab[gym]'``) and the policy that runs an agent's function in any run
(:class:`AgentScheduler`, numpy only).  docs/gym.md."""

from __future__ import annotations

from typing import Any

from iolab.gym.agent import AgentScheduler, load_agent
from iolab.gym.observation import JOB_FEATURES, Encoding, View


def __getattr__(name: str) -> Any:
    if name == "BatchSchedulingEnv":
        from iolab.gym.env import BatchSchedulingEnv  # lazy: gymnasium, for the environment only

        return BatchSchedulingEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["AgentScheduler", "BatchSchedulingEnv", "Encoding", "JOB_FEATURES", "View", "load_agent"]
