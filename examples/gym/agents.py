"""Agents for iolab's batch scheduling environment (iolab.gym, docs/gym.md): functions observation -> action.

The observation's ``jobs`` rows are the first K waiting jobs, columns ``present, nodes, walltime, wait, io, hps,
fits``; action ``i < K`` starts the job of row ``i`` on LPS, the last action waits.
"""

from __future__ import annotations

import numpy as np

WALLTIME, FITS = 2, 6


def head(obs) -> int:
    """FCFS: always the job at the head of the queue (it waits when the head does not fit)."""
    return 0


def sjf(obs) -> int:
    """Shortest job first: of the jobs that fit now, the one with the shortest walltime."""
    jobs = obs["jobs"]
    fits = np.flatnonzero(jobs[:, FITS] > 0)
    if fits.size == 0:
        return len(jobs)  # wait
    return int(fits[np.argmin(jobs[fits, WALLTIME])])


def random_agent(seed: int = 0, k: int = 16):
    """A uniformly random action among the K + 1 (an invalid one waits)."""
    rng = np.random.default_rng(seed)
    return lambda obs: int(rng.integers(k + 1))
