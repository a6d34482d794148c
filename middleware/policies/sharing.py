"""The built-in bandwidth-sharing policies, written through the public :class:`~.io_order.Sharing` API.

Each is a :class:`~.io_order.Sharing` (``shares(streams, now)``: one fraction of the I/O node's aggregate
rate per stream, each > 0, their sum at most 1), the class a user's own sharing subclasses; the runtimes
call these exactly as they call a user's (docs/sharing.md):

- :class:`JobFair` (``job-fair``), ThemisIO's job-fair sharing (Huang et al., SC'23): every job on the I/O
  node an equal share, split equally among its streams;
- :class:`SizeFair` (``size-fair``), ThemisIO's size-fair sharing: every job a share proportional to its
  size (its compute nodes), split equally among its streams;
- :class:`UserFair` (``user-fair``), ThemisIO's user-fair sharing: every user an equal share, split
  job-fair among the user's jobs;
- :class:`TokenBucketFilter` (``{kind: tbf, rules: [...], default_rate: R}``), Lustre's NRS TBF policy:
  one token bucket per class (a job, or a user), its rate from the first rule that matches the class, the
  default rate for the others; each class's share is its rate over the I/O node's aggregate rate, all of
  them scaled down in proportion when the rates add up to more than the node carries, and bandwidth left
  unused when they add up to less (a cap, not a weight).

In iolab an I/O node's arbiter holds at most one request per app (I/O level) or per job (a batch job's
part on that I/O node), so every stream on an I/O node is a different job: :class:`JobFair` always
answers ``1/k``, the division ``shared`` makes (docs/sharing.md says where the runs still differ).

Pure: no clock (``now`` is passed in), no Ray, no files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Sequence

from iolab.middleware.policies.io_order import Sharing, Stream

__all__ = ["SHARING_POLICIES", "JobFair", "SizeFair", "TBFRule", "TokenBucketFilter", "UserFair", "sharing_policy"]


def _split(streams: Sequence[Stream], weight_of_job: dict[str, float]) -> list[float]:
    """Each job's weight over the sum of the weights, split equally among the job's streams."""
    count: dict[str, int] = {}
    for s in streams:
        count[s.job] = count.get(s.job, 0) + 1
    total = math.fsum(weight_of_job.values())
    return [weight_of_job[s.job] / total / count[s.job] for s in streams]


class JobFair(Sharing):
    """ThemisIO job-fair: every job an equal share of the I/O node, split equally among its streams."""

    name = "job-fair"
    description = "ThemisIO job-fair: each job an equal share, split among its streams"

    def shares(self, streams: Sequence[Stream], now: float) -> list[float]:
        k = len(streams)
        if len({s.job for s in streams}) == k:  # one stream per job (always, on an iolab I/O node)
            return [1.0 / k] * k
        return _split(streams, {s.job: 1.0 for s in streams})


class SizeFair(Sharing):
    """ThemisIO size-fair: every job a share proportional to its compute nodes, split among its streams."""

    name = "size-fair"
    description = "ThemisIO size-fair: each job a share proportional to its nodes"

    def shares(self, streams: Sequence[Stream], now: float) -> list[float]:
        weights = {s.job: float(max(1, s.nodes)) for s in streams}
        if len(weights) == len(streams):  # one stream per job
            total = math.fsum(weights.values())
            return [weights[s.job] / total for s in streams]
        return _split(streams, weights)


class UserFair(Sharing):
    """ThemisIO user-fair: every user an equal share, split job-fair among the user's jobs (streams of an
    unknown user, ``""``, are one user)."""

    name = "user-fair"
    description = "ThemisIO user-fair: each user an equal share, job-fair within a user"

    def shares(self, streams: Sequence[Stream], now: float) -> list[float]:
        jobs_of: dict[str, set[str]] = {}
        for s in streams:
            jobs_of.setdefault(s.user, set()).add(s.job)
        users = len(jobs_of)
        return _split(streams, {s.job: 1.0 / (users * len(jobs_of[s.user])) for s in streams})


@dataclass(frozen=True)
class TBFRule:
    """One TBF rule: a class that matches every condition given gets ``rate`` (units per second, the I/O
    node's units).  ``job`` and ``user`` are shell-style patterns (``*``, ``?``, ``[...]``: Lustre's jobid
    wildcards); ``min_nodes`` / ``max_nodes`` bound the job's size (an iolab addition: Lustre classifies by
    NID, job id, user, group or opcode, not by size)."""

    rate: float
    job: str | None = None
    user: str | None = None
    min_nodes: int | None = None
    max_nodes: int | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if not (self.rate > 0 and math.isfinite(self.rate)):
            raise ValueError(f"TBF rule {self.name or ''}: rate must be a finite number > 0, got {self.rate!r}")

    def matches(self, s: Stream) -> bool:
        return ((self.job is None or fnmatchcase(s.job, self.job))
                and (self.user is None or fnmatchcase(s.user, self.user))
                and (self.min_nodes is None or s.nodes >= self.min_nodes)
                and (self.max_nodes is None or s.nodes <= self.max_nodes))


class TokenBucketFilter(Sharing):
    """Lustre NRS TBF (docs/sharing.md, what of it is modelled).

    ``rules``: :class:`TBFRule`, first match wins (the list order is the precedence Lustre's rule list
    gives); ``default_rate``: the rate of a class no rule matches (None: no cap, the I/O node's whole
    rate, as Lustre's ``default`` rule's 10 000 RPC/s is in effect); ``classify``: ``job`` (one bucket per
    job, Lustre's ``tbf jobid``) or ``user`` (one per user, ``tbf uid``; the rules may then name only
    ``user``); ``rate``: the I/O node's rate with one stream and ``law`` its interference law (the runtime
    gives both): the node carries ``rate x law.factor(k)`` with ``k`` streams.

    A class's share is its rate over that aggregate, split equally among the class's streams (a class's
    requests wait in one FIFO queue); when the classes' rates add up to more than the aggregate, every share
    is scaled by the same factor (TBF serves backlogged classes in the order of their deadlines, one every
    ``1 / rate``: in proportion to their rates), and when they add up to less, the rest of the node's
    bandwidth stays unused (a token bucket never lends its tokens)."""

    name = "tbf"
    description = "Lustre NRS TBF: a token bucket per job (or user), rates from rules"

    def __init__(self, rules: Sequence[TBFRule] = (), default_rate: float | None = None, classify: str = "job",
                 rate: float | None = None, law=None):
        if classify not in ("job", "user"):
            raise ValueError(f"tbf: classify is job or user, got {classify!r}")
        if classify == "user" and any(r.job is not None or r.min_nodes is not None or r.max_nodes is not None
                                      for r in rules):
            raise ValueError("tbf: with classify: user a rule names only user (a bucket holds several jobs)")
        if default_rate is not None and not (default_rate > 0 and math.isfinite(default_rate)):
            raise ValueError(f"tbf: default_rate must be a finite number > 0, got {default_rate!r}")
        if rate is None or not (rate > 0 and math.isfinite(rate)):
            raise ValueError(f"tbf needs its I/O node's rate (a finite number > 0), got {rate!r}")
        self.rules = tuple(rules)
        self.default_rate = default_rate
        self.classify = classify
        self.rate = float(rate)
        self.law = None if law is None or getattr(law, "lossless", False) else law
        self._rate_of: dict[tuple, float | None] = {}  # a class's matching: (key, user, nodes) -> rate

    def __repr__(self) -> str:
        return f"TokenBucketFilter({len(self.rules)} rules, default {self.default_rate}, by {self.classify})"

    def class_rate(self, s: Stream) -> float | None:
        """The rate of ``s``'s class: the first matching rule's, else the default (None: no cap)."""
        key = (s.job, s.user, s.nodes)
        if key not in self._rate_of:
            self._rate_of[key] = next((r.rate for r in self.rules if r.matches(s)), self.default_rate)
        return self._rate_of[key]

    def shares(self, streams: Sequence[Stream], now: float) -> list[float]:
        k = len(streams)
        aggregate = self.rate * (self.law.factor(k) if self.law is not None else 1.0)
        by_class = [s.user for s in streams] if self.classify == "user" else [s.job for s in streams]
        count: dict[str, int] = {}
        want: dict[str, float] = {}
        for s, c in zip(streams, by_class):
            count[c] = count.get(c, 0) + 1
            if c not in want:
                r = self.class_rate(s)
                want[c] = 1.0 if r is None else r / aggregate
        total = math.fsum(want.values())
        scale = 1.0 / total if total > 1.0 else 1.0
        return [want[c] * scale / count[c] for c in by_class]


#: the sharing policies a spec names without options
SHARING_POLICIES: dict[str, Sharing] = {p.name: p for p in (JobFair(), SizeFair(), UserFair())}


def sharing_policy(name: str) -> Sharing:
    """A built-in sharing policy without options, by name (``job_fair`` and ``job-fair`` are the same)."""
    key = name.strip().lower().replace("_", "-")
    try:
        return SHARING_POLICIES[key]
    except KeyError:
        raise ValueError(f"unknown sharing policy {name!r}; known: {', '.join(SHARING_POLICIES)}") from None
