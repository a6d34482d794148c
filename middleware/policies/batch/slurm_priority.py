"""The order in which Slurm 22.05 considers pending jobs: priority/basic or priority/multifactor.

Both schedulers (the main one and the backfill pass) sort the pending jobs by decreasing priority, then
by submit time, then by job id (job_scheduler.c ``sort_job_queue2``).

- ``priority/basic``: each new job gets a priority one less than the job before it: submit order.
- ``priority/multifactor`` (priority_multifactor.c ``_get_priority_internal``): the integer part of
  ``PriorityWeightAge x age + PriorityWeightJobSize x size + PriorityWeightFairshare x fair-share``
  (at least 1), with ``age = min(waited, PriorityMaxAge) / PriorityMaxAge``, ``size = nodes / N`` (with
  ``PriorityFavorSmall``: ``(N - nodes) / N``; a whole-node job's CPU share equals its node share) and
  the classic fair-share ``2^(-usage / shares)`` of the job's user: ``usage`` the user's share of the node
  seconds used so far, halved every ``PriorityDecayHalfLife`` (0: no decay), ``shares`` an equal share per
  user seen.  Slurm recomputes priorities every ``PriorityCalcPeriod`` (and a new job's at its
  submission); so does this model, on the run's own clock.  Slurm's fair-share reads the accounting
  database's usage; on a cluster without it the factor is not what this model gives.
"""

from __future__ import annotations

import math

__all__ = ["Multifactor", "basic_order"]


def basic_order(queue) -> list:
    """priority/basic: submit order (the snapshot's queue order; ties stay in it)."""
    return sorted(queue, key=lambda q: q.submit)


class Multifactor:
    """priority/multifactor's priorities, recomputed at the calc period's ticks; keeps each user's
    decayed usage from the jobs it sees end."""

    def __init__(self, total_nodes: int, *, weight_age: float = 0, weight_size: float = 0,
                 weight_fairshare: float = 0, max_age: float = 7 * 86400, favor_small: bool = False,
                 half_life: float = 7 * 86400, calc_period: float = 300):
        self.total_nodes = total_nodes
        self.weight_age, self.weight_size, self.weight_fs = weight_age, weight_size, weight_fairshare
        self.max_age, self.favor_small = max_age, favor_small
        self.half_life, self.calc_period = half_life, calc_period
        self.usage: dict[str, float] = {}  # user -> decayed node seconds, as of self.at
        self.at = 0.0
        self.prio: dict[str, int] = {}  # job -> priority of the last computation
        self.tick = -math.inf  # time of the last full recomputation

    def _decay(self, t: float) -> None:
        if t > self.at and self.half_life > 0:
            f = 0.5 ** ((t - self.at) / self.half_life)
            for u in self.usage:
                self.usage[u] *= f
        self.at = max(self.at, t)

    def used(self, user: str, node_seconds: float, t: float) -> None:
        """A job of ``user`` ended at ``t`` having held nodes for ``node_seconds``."""
        self._decay(t)
        self.usage[user] = self.usage.get(user, 0.0) + node_seconds

    def fairshare(self, user: str) -> float:
        total = sum(self.usage.values())
        users = max(len(self.usage | {user: 0.0}), 1)
        if total <= 0:
            return 1.0
        return 2.0 ** (-(self.usage.get(user, 0.0) / total) / (1.0 / users))

    def priority(self, q, t: float) -> int:
        age = min(max(t - q.submit, 0.0), self.max_age) / self.max_age if self.max_age > 0 else 1.0
        n = self.total_nodes
        size = (n - q.nodes) / n if self.favor_small else q.nodes / n
        p = self.weight_age * age + self.weight_size * size + self.weight_fs * self.fairshare(q.user)
        return max(int(p), 1)

    def order(self, queue, t: float) -> list:
        """The queue by decreasing priority, then submit time (then the queue's order)."""
        tick = math.floor(t / self.calc_period) * self.calc_period if self.calc_period > 0 else t
        if tick != self.tick:  # the decay thread's recomputation of every pending job
            self.tick = tick
            self._decay(tick)
            self.prio = {q.id: self.priority(q, tick) for q in queue}
        for q in queue:
            if q.id not in self.prio:  # a new job: computed at its submission
                self.prio[q.id] = self.priority(q, q.submit)
        return sorted(queue, key=lambda q: (-self.prio[q.id], q.submit))
