"""An I/O node's policy from a spec's value: a built-in by name or with options, or a user's order or
sharing, guarded.

:func:`io_policy` is what every runtime calls with the spec's ``policy`` (an I/O experiment's) or
``platform.io_node.policy`` (a batch platform's), and the I/O node's rate and interference law: a name (a
list order, ``shared``, or a sharing of :mod:`.sharing`), a built-in given with options (``{kind: tbf,
...}``, :class:`iolab.specs.io_policies.TBFSpec`: built here with the node's rate and law, which its rates
are measured against), a :class:`~iolab.specs.policy_ref.PolicyRef`, a :class:`~.loader.PolicySource` (the
same, shipped to a Ray actor with the file's text), or a policy object already built.  A user's class
becomes

- an exclusive order (it defines ``key`` or ``choose``: :class:`~.io_order.IOOrder`): a
  :class:`~.io_order.ListPolicy` whose key or choice goes through the guard below, so that it queues and
  grants with the very code of the built-in orders;
- a sharing (it defines ``shares``: :class:`~.io_order.Sharing`): a :class:`GuardedSharing`.

The guard (as :mod:`.guard` does for a batch scheduler): what the user's code raises becomes
:class:`iolab.invariants.PolicyRaised` with the user's file and line, and its answers are checked
(``rule`` of the violation):

- ``malformed-decision``: a key that is not a number or a tuple of numbers and texts (or is NaN); shares
  that are not one positive finite number per stream, or sum to more than 1;
- ``grant-not-waiting``: a ``choose`` that returns something other than one of the waiting requests.

A key is followed by ``(requested_at, rank)``, so that ties go as in the built-in orders.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from iolab.invariants import InvariantViolation

from iolab.middleware.policies.guard import call_user
from iolab.middleware.policies.io_order import (
    POLICIES, IORequest, ListPolicy, SharedPolicy, Sharing, Stream, get_policy,
)
from iolab.middleware.policies.loader import PolicySource
from iolab.middleware.policies.sharing import SHARING_POLICIES, TBFRule, TokenBucketFilter, sharing_policy

__all__ = ["GuardedSharing", "io_policy", "policy_label", "shippable"]

_SHARE_TOL = 1e-9


def io_policy(value: Any, *, rate: float | None = None, law=None):
    """The policy object of a spec's I/O policy value (module doc); ``rate`` and ``law``: the I/O node's
    rate with one stream (the spec's units per second) and interference law, for a built-in whose options
    are rates (TBF)."""
    if isinstance(value, str):
        key = value.strip().lower().replace("_", "-")
        if key in SHARING_POLICIES:
            return sharing_policy(key)
        if key not in POLICIES:
            raise ValueError(f"unknown I/O policy {value!r}; known: {', '.join([*POLICIES, *SHARING_POLICIES])}")
        return get_policy(key)
    if isinstance(value, (ListPolicy, SharedPolicy, GuardedSharing, Sharing)):
        return value
    if isinstance(value, PolicySource):
        src = value
    elif getattr(value, "kind", None) == "python":
        src = PolicySource.of(value, "io")
    elif getattr(value, "kind", None) == "tbf":
        rules = [TBFRule(r.rate, r.job, r.user, r.min_nodes, r.max_nodes, r.name) for r in value.rules]
        return TokenBucketFilter(rules, value.default_rate, value.classify, rate=rate, law=law)
    else:
        build = getattr(value, "policy", None)  # a built-in given with options (its spec builds it)
        if callable(build):
            return build()
        raise TypeError(f"not an I/O policy: {value!r}")
    return _guarded(src.load(), src.label)


def shippable(value: Any) -> Any:
    """What to hand a Ray actor for the spec's I/O policy: a name as it is, a user's reference as a
    :class:`~.loader.PolicySource` carrying the file's text (the actor may run on another host)."""
    if getattr(value, "kind", None) == "python" and not isinstance(value, PolicySource):
        return PolicySource.of(value, "io")
    return value


def policy_label(value: Any) -> str:
    """A short text for an I/O policy value or object: a built-in's name, ``file.py:Class`` for a user's.  What
    a trace's ``policy`` attribute and a campaign's ``policy`` column call the policy."""
    if isinstance(value, str):
        return value
    if isinstance(value, PolicySource):
        return value.label
    if getattr(value, "kind", None) == "python":
        return str(value)
    kind = getattr(value, "kind", None)
    if isinstance(kind, str):
        return kind
    return str(getattr(value, "name", value))


def _guarded(user: Any, label: str):
    if callable(getattr(user, "shares", None)) and not (callable(getattr(user, "key", None))
                                                        or callable(getattr(user, "choose", None))):
        return GuardedSharing(user, label)
    description = (type(user).__doc__ or "").strip().split("\n")[0]
    if callable(getattr(user, "choose", None)):
        return ListPolicy(label, choose=_guarded_choose(user, label), description=description)
    key = _guarded_key(user, label)
    if getattr(user, "time_dependent", False):
        return ListPolicy(label, key_at=lambda now: (lambda r: key(r, now)), time_dependent=True,
                          description=description)
    return ListPolicy(label, wait_key=lambda r: key(r, r.requested_at), description=description)


def _rank(value: Any, label: str, now: float, r: IORequest) -> tuple:
    parts = value if isinstance(value, tuple) else (value,)
    for x in parts:
        if isinstance(x, str) or (isinstance(x, (int, float)) and x == x):
            continue
        raise InvariantViolation("malformed-decision", now, r.app, f"policy {label}: key returned {value!r}; a "
                                 "number or a tuple of numbers and texts (not NaN, not None)")
    return parts


def _guarded_key(user: Any, label: str):
    method = user.key

    def key(r: IORequest, now: float) -> tuple:
        return _rank(call_user(label, now, method, r, now), label, now, r) + (r.requested_at, r.rank)
    return key


def _guarded_choose(user: Any, label: str):
    method = user.choose

    def choose(waiting: Sequence[IORequest], now: float) -> IORequest:
        c = call_user(label, now, method, tuple(waiting), now)
        for r in waiting:
            if r is c:
                return r
        for r in waiting:
            if r == c:
                return r
        raise InvariantViolation("grant-not-waiting", now, label, f"policy {label}: choose returned {c!r:.80}, not "
                                 f"one of the {len(waiting)} waiting requests")
    return choose


class GuardedSharing:
    """A user's :class:`~.io_order.Sharing` as the runtimes call it: ``shares`` checked (module doc)."""

    exclusive = False
    equal = False  # the links must ask it
    time_dependent = False

    def __init__(self, user: Any, label: str):
        self.user = user
        self.name = label
        self.description = (type(user).__doc__ or "").strip().split("\n")[0]

    def __repr__(self) -> str:
        return f"GuardedSharing({self.name})"

    def shares(self, streams: Sequence[Stream], now: float) -> list[float]:
        out = call_user(self.name, now, self.user.shares, tuple(streams), now)
        try:
            values = [float(x) for x in out]
        except (TypeError, ValueError):
            raise InvariantViolation("malformed-decision", now, self.name, f"policy {self.name}: shares returned "
                                     f"{out!r:.80}; one number per stream") from None
        if len(values) != len(streams):
            raise InvariantViolation("malformed-decision", now, self.name, f"policy {self.name}: {len(values)} "
                                     f"shares for {len(streams)} streams")
        for st, x in zip(streams, values):
            if not (x > 0 and math.isfinite(x)):
                raise InvariantViolation("malformed-decision", now, st.id, f"policy {self.name}: share {x!r} of "
                                         f"stream {st.id}; each share is a finite number > 0")
        total = math.fsum(values)
        if total > 1 + _SHARE_TOL:
            raise InvariantViolation("malformed-decision", now, self.name, f"policy {self.name}: the shares sum to "
                                     f"{total:.6g}, more than the whole bandwidth (1)")
        return values
