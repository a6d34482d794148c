"""Strict mode for a batch platform's I/O nodes: the I/O level's rules, per I/O node, on a batch run's parts.

A batch job's phase on a platform with I/O nodes is split into parts, one request per I/O node
(:mod:`.io_parts`).  The runtime tells an :class:`IONodeChecker` of every request, dispatch (with its
grants), release and cancellation (a suspended job's parts), and of every phase's end; the checker keeps
its own books (who waits and who is granted on each I/O node, the bytes each part moved) and raises
:class:`~iolab.invariants.InvariantViolation` naming the I/O node (or job), the spec time and the rule,
the rules of :class:`~iolab.middleware.policies.io_checker.IOChecker`:

- ``exclusive-io``: under a list policy, a grant while the I/O node serves another part;
- ``grant-not-waiting``: a grant to a job with no waiting request on that I/O node;
- ``release-not-granted``: a release (a part's end or a suspension) of a part that holds no grant;
- ``idle-while-waiting``: a dispatch grants nothing although, by the checker's books, a request waits
  and (list policy) no part holds the I/O node, or (``shared``) at all;
- ``bytes-conserved``: a part moves more than it asked, a part ends without having moved its bytes,
  a phase ends whose parts do not add up to its volume;
- ``unfinished``: the run ends while a request waits or a grant is held.

Pure: the simulator's I/O-node layer feeds it (``iolab.sim.batch.io_node_layer``), and a real run can.
"""

from __future__ import annotations

from iolab.invariants import InvariantViolation
from iolab.middleware.policies.io_checker import REL, IOChecker

__all__ = ["IONodeChecker"]

_differ = IOChecker._differ  # the I/O level's tolerance on volumes (sums in another order)


class IONodeChecker:
    """``io_nodes`` I/O nodes; ``exclusive``: their policy is a list policy (one grant at a time)."""

    def __init__(self, io_nodes: int, exclusive: bool):
        self.exclusive = bool(exclusive)
        self.waiting: list[dict[str, float]] = [{} for _ in range(io_nodes)]  # job -> bytes asked
        self.active: list[dict[str, float]] = [{} for _ in range(io_nodes)]
        self.moved: dict[tuple[str, int, int], float] = {}  # (job, phase, I/O node) -> bytes moved so far

    @staticmethod
    def _node(node: int) -> str:
        return f"I/O node {node}"

    def requested(self, node: int, job: str, phase: int, nbytes: float, t: float) -> None:
        if job in self.waiting[node] or job in self.active[node]:
            raise InvariantViolation("grant-not-waiting", t, self._node(node),
                                     f"job {job} asks again while it already waits or holds a grant")
        self.waiting[node][job] = nbytes

    def dispatched(self, node: int, granted, t: float) -> None:
        """``granted``: the job ids the I/O node granted at ``t`` (possibly none)."""
        waiting, active = self.waiting[node], self.active[node]
        for job in granted:
            if job not in waiting:
                raise InvariantViolation("grant-not-waiting", t, self._node(node),
                                         f"grants job {job}, which has no waiting request there")
            if self.exclusive and active:
                raise InvariantViolation("exclusive-io", t, self._node(node),
                                         f"grants job {job} while {', '.join(active)} transfers")
            active[job] = waiting.pop(job)
        if waiting and (not self.exclusive or not active):
            why = "no part holds it" if self.exclusive else "shared grants every request"
            raise InvariantViolation("idle-while-waiting", t, self._node(node),
                                     f"grants nothing to {', '.join(waiting)} although {why}")

    def released(self, node: int, job: str, phase: int, moved: float, finished: bool, part: float,
                 t: float) -> None:
        """``job``'s part of ``phase`` on ``node`` gives its grant back after moving ``moved`` bytes in
        it; ``finished``: the part is over (else suspended); ``part``: the part's bytes in all."""
        asked = self.active[node].pop(job, None)
        if asked is None:
            raise InvariantViolation("release-not-granted", t, self._node(node),
                                     f"job {job} releases it without a grant")
        if moved > asked * (1 + REL) + REL:
            raise InvariantViolation("bytes-conserved", t, self._node(node),
                                     f"job {job} moved {moved:g} B on a grant of {asked:g} B")
        key = (job, phase, node)
        total = self.moved[key] = self.moved.get(key, 0.0) + moved
        if finished and _differ(total, part):
            raise InvariantViolation("bytes-conserved", t, self._node(node),
                                     f"job {job}'s part of phase {phase} ends after {total:g} B of {part:g} B")

    def cancelled(self, node: int, job: str, t: float) -> None:
        """A waiting request withdrawn (its job was suspended)."""
        if self.waiting[node].pop(job, None) is None:
            raise InvariantViolation("grant-not-waiting", t, self._node(node),
                                     f"job {job} withdraws a request it does not have")

    def phase_done(self, job: str, phase: int, volume: float, nodes, t: float) -> None:
        """A phase of ``volume`` bytes whose parts were on ``nodes`` ended."""
        total = sum(self.moved.pop((job, phase, n), 0.0) for n in nodes)
        if _differ(total, volume):
            raise InvariantViolation("bytes-conserved", t, f"job {job}",
                                     f"phase {phase} of {volume:g} B ends after its parts moved {total:g} B")

    def close(self, t: float) -> None:
        for node, (w, a) in enumerate(zip(self.waiting, self.active)):
            if w or a:
                raise InvariantViolation("unfinished", t, self._node(node),
                                         f"the run is over while {', '.join([*w, *a])} waits or holds a grant")
