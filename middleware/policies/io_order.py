"""The list-scheduling priority orders of carretero2020 §5.1, and ``shared``.

A list policy is a priority order: whenever an I/O node is free, it grants
exclusive access to the waiting request that comes first in that order, and
the transfer runs to completion (no preemption).  Each order is a *key*
function over an :class:`IORequest` snapshot; smaller keys go first.  Every
key ends with ``(requested_at, rank)`` so that ties are broken the same way
in every runtime: first come, then lowest system id.

``shared`` is not an order: it grants every request at once and the
transfers split the I/O node's bandwidth equally.

Nothing here reads a clock: ``now`` is always passed in by the caller (the
simulator's virtual time, or the wall clock of the Ray arbiter).
"""

from __future__ import annotations

from abc import abstractmethod

from dataclasses import dataclass
from operator import itemgetter
from typing import Callable, NamedTuple, Sequence


class IORequest(NamedTuple):
    """What an arbiter knows about an app when the app asks for I/O.

    All durations are contention-free seconds (volume / bandwidth).

    - ``rank``: the app's system id (its position in the spec); lower is older.
    - ``requested_at``: when the request reached the arbiter.
    - ``volume`` / ``io_time``: size and contention-free duration of this phase.
    - ``remaining``: contention-free time the app still has to do, this phase included.
    - ``total``: T_i(b), carretero2020 Eq. 1.
    - ``start``: when the app started (its release, or its pack's start).
    - ``done``: contention-free time of the phases the app has completed.
    - ``io_received``: seconds of I/O the app has completed so far.
    - ``phase``: index of the I/O phase asked for (in the app's phase list).

    Built in one place, :meth:`iolab.middleware.policies.io_apps.IOApp.request`.
    """

    app: str
    rank: int
    requested_at: float
    volume: float
    io_time: float
    remaining: float
    total: float
    start: float
    done: float = 0.0
    io_received: float = 0.0
    phase: int = -1


Key = Callable[[IORequest, float], tuple]


def stretch_at(now: float) -> Callable[[IORequest], tuple]:
    """The stretch order at ``now`` as a key of the request alone: (current stretch, requested_at, rank).

    The current stretch is the stretch the app would have if granted now (Eq. 2 applied to
    its progress): min(1, (done + io_time) / (now - start + io_time)), 1 if that elapsed
    time is <= 0."""
    def key(r: IORequest) -> tuple:
        io_time = r.io_time
        elapsed = now - r.start + io_time
        return (1.0 if elapsed <= 0 else min(1.0, (r.done + io_time) / elapsed), r.requested_at, r.rank)
    return key


def io_share_at(now: float) -> Callable[[IORequest], tuple]:
    """The bandwidth order at ``now`` as a key of the request alone: (I/O share, requested_at, rank).

    The I/O share is the fraction of its time in the system the app has spent transferring:
    io_received / (now - start), 0 before any time has passed."""
    def key(r: IORequest) -> tuple:
        elapsed = now - r.start
        return (r.io_received / elapsed if elapsed > 0 else 0.0, r.requested_at, r.rank)
    return key


@dataclass(frozen=True)
class ListPolicy:
    """A priority order; ``time_dependent`` keys change while a request waits.

    The order is given in exactly one of three forms; ``key(request, now)`` is derived from the
    other two:

    - ``wait_key(request)``: an order that does not change while a request waits, a function
      of the request alone.  The wait queue (``io_queue``) computes it once per request and
      keeps the waiting requests in a heap on it.  Where the order is request fields as they
      are (fifo, lowest-id), it is an ``operator.itemgetter``, which costs no Python call.
    - ``key_at(now)``: a time-dependent order (``time_dependent=True``), as a function of
      ``now`` that returns the key of the request alone at that time.  A grant builds it once
      and ranks every waiting request with it (one call per request, not three).
    - ``key(request, now)``: any order (with ``time_dependent``, re-evaluated at each grant;
      without it, taken at the request's time).
    """

    name: str
    key: Key | None = None
    time_dependent: bool = False
    description: str = ""
    exclusive: bool = True
    wait_key: Callable[[IORequest], tuple] | None = None
    key_at: Callable[[float], Callable[[IORequest], tuple]] | None = None
    #: the whole choice at once: ``choose(waiting, now)`` returns one of the waiting requests (a user's
    #: :class:`IOOrder` that defines ``choose``); re-asked at every grant, as a time-dependent order
    choose: Callable[[Sequence[IORequest], float], IORequest] | None = None

    def __post_init__(self) -> None:
        if self.choose is not None:
            if self.key is not None or self.wait_key is not None or self.key_at is not None:
                raise ValueError(f"policy {self.name!r}: a choose is the whole order; give it alone")
            object.__setattr__(self, "time_dependent", True)
            return
        given = [name for name in ("key", "wait_key", "key_at") if getattr(self, name) is not None]
        if not given:
            raise ValueError(f"policy {self.name!r}: give a key, a wait_key, a key_at or a choose")
        if self.wait_key is not None and (len(given) > 1 or self.time_dependent):
            raise ValueError(f"policy {self.name!r}: a wait_key is for an order that does not change "
                             "while a request waits; give it alone")
        if self.key_at is not None and (len(given) > 1 or not self.time_dependent):
            raise ValueError(f"policy {self.name!r}: a key_at is for a time-dependent order; give it alone, "
                             "with time_dependent=True")
        if self.wait_key is not None:
            wait_key = self.wait_key
            object.__setattr__(self, "key", lambda r, now: wait_key(r))
        elif self.key_at is not None:
            key_at = self.key_at
            object.__setattr__(self, "key", lambda r, now: key_at(now)(r))

    def _key_now(self, now: float) -> Callable[[IORequest], tuple]:
        """The order at ``now`` as a key of the request alone."""
        if self.wait_key is not None:
            return self.wait_key
        if self.key_at is not None:
            return self.key_at(now)
        key = self.key
        return lambda r: key(r, now)

    def pick(self, queue: Sequence[IORequest], now: float) -> IORequest:
        """The request to grant next; ``queue`` must not be empty."""
        if len(queue) == 1:
            return queue[0]
        if not queue:
            raise ValueError("pick() needs at least one waiting request")
        if self.choose is not None:
            return self.choose(queue, now)
        return min(queue, key=self._key_now(now))

    def order(self, queue: Sequence[IORequest], now: float) -> list[IORequest]:
        """The whole queue in grant order (for displays and tests)."""
        if self.choose is not None:  # the first choice, then the choice among the rest, ...
            rest, out = list(queue), []
            while rest:
                first = self.pick(rest, now)
                rest.remove(first)
                out.append(first)
            return out
        return sorted(queue, key=self._key_now(now))


class IOOrder:
    """The public base of an exclusive I/O order (``iolab.policy.IOOrder``): whenever an I/O node is
    free it grants the waiting request that comes first, and the transfer runs to its end alone (no
    preemption), as carretero2020's list policies do.  Define one of:

    - ``key(request, now)``: the request's rank (a number, or a tuple of numbers and texts); smaller
      goes first; ties go to the earlier request, then the lower system id.  Unless ``time_dependent``
      is True it is taken once, when the request arrives (``now`` is then its ``requested_at``);
      with ``time_dependent`` every waiting request is ranked again at each grant;
    - ``choose(waiting, now)``: the whole choice, one of the waiting requests (asked at each grant).

    ``request`` is an :class:`IORequest`.  The built-in orders (``fifo``, ``stretch``, ...) are
    :class:`ListPolicy` objects with the same ``key(request, now)``."""

    name: str = ""
    api_version: int = 1
    time_dependent: bool = False
    exclusive = True


class Stream(NamedTuple):
    """One transfer granted on an I/O node, as a bandwidth-sharing policy sees it.

    - ``id``: the stream's name (an app at the I/O level; a job's part, ``job@node``, at the batch level);
    - ``job``: the app or job it moves bytes for; ``user``: that job's user ("" when unknown);
    - ``rank``: the app's or job's system id (lower is older); ``nodes``: its compute nodes (its size);
    - ``volume``: the bytes of this transfer; ``moved``: the bytes moved so far (a real run: booked);
    - ``granted``: when it was granted (spec seconds)."""

    id: str
    job: str
    rank: int
    nodes: int
    volume: float
    moved: float
    granted: float
    user: str = ""


class Sharing:
    """The public base of a bandwidth-sharing policy (``iolab.policy.Sharing``): an I/O node grants every
    request at once and its transfers share its bandwidth; ``shares(streams, now)`` says how.  It returns
    one number per stream (in the order given): the fraction of the node's aggregate rate that stream
    gets, each > 0, their sum at most 1 (a sum below 1 leaves bandwidth unused, as a token-bucket cap
    does).  It is asked again whenever a stream starts or ends on that I/O node.  The built-in ``shared``
    gives each stream 1/k."""

    name: str = ""
    api_version: int = 1
    exclusive = False

    @abstractmethod  # (no ABCMeta: marks the method a subclass must define; iolab's loader reads it)
    def shares(self, streams: Sequence[Stream], now: float) -> Sequence[float]:  # pragma: no cover
        raise NotImplementedError(f"{type(self).__name__} must define shares(streams, now)")


@dataclass(frozen=True)
class SharedPolicy:
    """No arbitration: every request is granted at once, bandwidth split equally (a :class:`Sharing`
    whose shares are 1/k; the simulator's fair-share links apply it without asking)."""

    name: str = "shared"
    time_dependent: bool = False
    description: str = "no arbitration; concurrent transfers share the bandwidth equally"
    exclusive: bool = False
    equal: bool = True  # every stream 1/k: the links need not ask shares()

    def shares(self, streams: Sequence[Stream], now: float) -> list[float]:
        k = len(streams)
        return [1.0 / k] * k


POLICIES: dict[str, ListPolicy | SharedPolicy] = {
    p.name: p
    for p in (
        ListPolicy("lowest-id", wait_key=itemgetter(1, 2),  # (rank, requested_at)
                   description="(1) lowest system id first"),
        ListPolicy("longest-io", wait_key=lambda r: (-r.io_time, r.requested_at, r.rank),
                   description="(2) longest I/O phase first (resource occupation)"),
        ListPolicy("shortest-io", wait_key=lambda r: (r.io_time, r.requested_at, r.rank),
                   description="(3) shortest I/O phase first (avoid long waits)"),
        ListPolicy("shortest-remaining", wait_key=lambda r: (r.remaining, r.requested_at, r.rank),
                   description="(4) least remaining work first (free the machine early)"),
        ListPolicy("longest-remaining", wait_key=lambda r: (-r.remaining, r.requested_at, r.rank),
                   description="(5) most remaining work first (platform occupation)"),
        ListPolicy("fifo", wait_key=itemgetter(2, 1),  # (requested_at, rank)
                   description="(6) earliest request first, then lowest id"),
        ListPolicy("bandwidth", key_at=io_share_at, time_dependent=True,
                   description="(7) lowest ratio of I/O time received to time in the system first"),
        ListPolicy("stretch", key_at=stretch_at, time_dependent=True,
                   description="(8) worst current stretch first"),
        SharedPolicy(),
    )
}


def get_policy(name: str) -> ListPolicy | SharedPolicy:
    """Look a policy up by name (``Longest_IO`` and ``longest-io`` are the same)."""
    key = name.strip().lower().replace("_", "-")
    try:
        return POLICIES[key]
    except KeyError:
        raise ValueError(f"unknown I/O policy {name!r}; known: {', '.join(POLICIES)}") from None
