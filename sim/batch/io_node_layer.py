"""The batch simulator's I/O nodes: a job's tier I/O split into parts, arbitrated, moved at max-min fair rates.

On a platform with I/O nodes (``platform.io_nodes``; docs/simulator.md, "I/O nodes"), a job's read and
write phases on its tier (not its staging) go through the I/O nodes of its compute nodes, one part per
I/O node.  The parts, requests, grants, releases, suspensions (a granted part released, a waiting one
withdrawn, both asking again at resume for their bytes left), I/O time and grant rows are the book both
runtimes keep (:class:`~iolab.middleware.policies.batch.io_node_book.IONodeBook`); this layer adds what
the simulator moves, each part's bytes left and rate:

- a granted part is a **stream** on two links in series: its I/O node (``io_node.rate x f(k)``, ``f`` the
  I/O node's interference law, ``k`` its streams) and the job's tier (the tier's rate and law, as
  without I/O nodes).  Rates are max-min fair over all those links (:func:`~iolab.sim.batch.maxmin.max_min_rates`),
  recomputed whenever a stream starts or ends; a calibrated run (``platform.overheads.delivered``) moves
  each part at its tier's delivered share of that rate, whichever link is its bottleneck;
- under a sharing policy other than ``shared`` (``job-fair``, a TBF, a user's
  :class:`~iolab.middleware.policies.io_order.Sharing`) the I/O node's link is replaced by one **cap** per
  stream, its share of the node's ``io_node.rate x f(k)`` (the policy asked whenever a stream starts or
  ends on that node): a part held back by its tier leaves its share unused, as the real run's per-stream
  token bucket lanes do (docs/sharing.md).

The layer stands in for the tier links of :class:`~iolab.sim.batch.engine.BatchEngine`: each tier's entry of
``engine.links`` becomes a :class:`TierView` of the one layer, with the link interface the engine and the
controller use (``add``, ``remove``, ``pop_finished``, ``next_completion``, ``version``, ``len``,
``remaining_of``).  Requests and releases at one instant are recorded, and the I/O nodes dispatch once,
when the engine asks for the next completion after the instant's events and decisions (as the I/O level's
simulator dispatches after a phase boundary).

Cost per change: O(streams x links) for the rates, O(streams) for the next completion: the mode is meant
for machines of tens to hundreds of nodes (docs/simulator.md).
"""

from __future__ import annotations

import itertools
import math

from iolab.middleware.policies.arbiter import IONodeArbiter
from iolab.middleware.policies.batch.io_node_book import IONodeBook, IOPart, IOPhase
from iolab.middleware.policies.batch.io_parts import JobIOFacts, node_counts
from iolab.middleware.policies.interference import law_of
from iolab.workloads.steps import job_steps

from iolab.sim.batch.maxmin import max_min_rates

__all__ = ["IONodeLayer", "TierView"]

_TOL = 1e-9  # relative: a part with less than this share of its bytes left is done


class _Part(IOPart):
    __slots__ = ("left", "rate")

    def __init__(self, job, node: int, step: int, volume: float):
        super().__init__(job, node, step, volume)
        self.left = volume
        self.rate = 0.0


class _Phase(IOPhase):
    __slots__ = ("index", "tier", "seq")  # the engine's job index, the job's tier, when it (last) joined


class IONodeLayer:
    """The I/O nodes of one batch run; :meth:`install` puts it in front of ``engine``'s tier links."""

    def __init__(self, io_nodes: int, span: int, rate: float, policy: str, law=None, *, strict: bool = False):
        self.io_book = IONodeBook(io_nodes, policy, rate, law, strict=strict, arbiter=IONodeArbiter)
        self.policy, self.arbiters, self.checker = self.io_book.policy, self.io_book.arbiters, self.io_book.checker
        self.grants = self.io_book.grants  # the trace's grants rows (job, phase, io_node, request, grant, release)
        self.span = span
        self.rate = rate
        self.law = law
        self.engine = None
        self.tiers: dict[str, object] = {}  # tier name -> the engine's link (its rate and law)
        # tier name -> the share of its path's rate a real part delivered (the calibration's; 1: the spec's)
        self.share: dict[str, float] = {}
        self.version = 0
        self.last = 0.0
        self.phases: dict[int, _Phase] = {}  # job index -> its phase in the layer
        self.paused: dict[int, _Phase] = {}  # suspended job index -> its phase (bytes left per part)
        self.streams: list[tuple[_Phase, _Part]] = []  # granted parts, in grant order
        self.ready: list[int] = []  # job indices whose phase has nothing left to move
        self.dirty = False  # the rates need solving
        self._seq = itertools.count()

    @classmethod
    def from_spec(cls, spec, *, strict: bool = False) -> "IONodeLayer | None":
        p = spec.platform
        if p.io_nodes is None:
            return None
        return cls(p.io_nodes, p.io_nodes_span, p.io_node.rate, p.io_node.policy, law_of(p.io_node.interference),
                   strict=strict)

    def install(self, engine) -> None:
        """Stand in for ``engine``'s tier links (their rates and laws are kept: install after the
        tiers' laws and the controller's volumes are in place)."""
        self.engine = engine
        d = getattr(engine.overheads, "delivered", None)
        for name in ("lps", "hps"):
            self.tiers[name] = engine.links[name]
            engine.links[name] = TierView(self, name)
            self.share[name] = float(getattr(d, name)) if d is not None else 1.0
        engine.io_nodes = self
        if engine._all_rows:  # the phase rows: one per part of a phase through them (BatchEngine._part_rows)
            engine._parts_ended = self.io_book.ended
            engine.rec.phases.io_node = []

    # -- the link interface (through TierView) -------------------------------------------------
    def add(self, key: int, amount: float, now: float, tier: str) -> None:
        self.advance(now)
        ph = self.paused.pop(key, None)
        if ph is None:
            s = self.engine.state[key]
            st = s.steps[s.step]
            job = self.io_book.jobs.get(s.queued.id) or self._job(s)
            # the step's index without overheads, the index of the steps the facts hold
            ph = self.io_book.open(job, st.index if st.index >= 0 else s.step, amount, now, _Phase, _Part)
            ph.index, ph.tier = key, tier
            asked = [p for p in ph.parts.values() if not self._finished(p)]
            for part in asked:
                self.io_book.request(part, part.left, now)
        else:  # resumed: every part not over asks again for its bytes left
            asked = self.io_book.resume(ph.job, now, lambda p: p.left)
        self.phases[key] = ph
        ph.seq = next(self._seq)
        if not asked:
            self.ready.append(key)
        self.version += 1

    def remove(self, key: int, now: float) -> float:
        """``key``'s job is suspended: its parts leave their I/O nodes; returns its bytes left."""
        self.advance(now)
        ph = self.phases.pop(key)
        if key in self.ready:
            self.ready.remove(key)
        for part in self.io_book.suspend(ph.job, now, self._progress(now)):
            self.streams.remove((ph, part))
            part.rate = 0.0
            self.dirty = True
        self.paused[key] = ph
        self.version += 1
        return sum(p.left for p in ph.parts.values())

    def advance(self, now: float) -> None:
        dt = now - self.last
        if dt > 0:
            for _, part in self.streams:
                part.left -= part.rate * dt
            self.last = now

    def next_completion(self) -> float:
        """Dispatch the I/O nodes touched at this instant, solve the rates, and say when the first
        stream ends (``inf`` if none)."""
        self._settle()
        if self.ready:
            return self.last
        best = math.inf
        for _, part in self.streams:
            if part.rate > 0:
                best = min(best, self.last + max(part.left, 0.0) / part.rate)
        return best

    def pop_finished(self, now: float) -> list[int]:
        """The jobs whose phase ended at ``now`` (their last part done), in the order their phases began."""
        self.advance(now)
        done = [(ph, part) for ph, part in self.streams if self._finished(part)]
        if not done and self.streams and not self.ready:  # the event was for the first end: rounding
            first = min(self.streams, key=lambda e: e[1].left / e[1].rate if e[1].rate > 0 else math.inf)
            done = [first]
        for ph, part in done:
            self.streams.remove((ph, part))
            part.left = 0.0
            part.end = now
            part.rate = 0.0
            self.io_book.release(part, now, part.asked, finished=True)
            self.dirty = True
        cand = {ph.index: ph for ph, _ in done}
        cand.update((key, self.phases[key]) for key in self.ready)
        out = []
        for ph in sorted(cand.values(), key=lambda ph: ph.seq):
            if ph.index in self.ready or all(self._finished(p) for p in ph.parts.values()):
                del self.phases[ph.index]
                self.io_book.phase_done(ph, now)
                out.append(ph.index)
        self.ready.clear()
        self.version += 1
        return out

    def remaining_of(self, key: int, default=None):
        ph = self.phases.get(key)
        if ph is None:
            return default
        return sum(max(p.left, 0.0) for p in ph.parts.values())

    def streams_on(self, tier: str) -> int:
        return sum(1 for ph, _ in self.streams if ph.tier == tier)

    def close(self, t: float) -> None:
        """The run is over: strict mode checks that nothing waits or holds a grant."""
        self.io_book.close(t)

    # -- inside ----------------------------------------------------------------------------------------
    @staticmethod
    def _finished(part: _Part) -> bool:
        return part.left <= _TOL * max(1.0, part.volume)

    def _progress(self, now: float):
        """What a granted part moved when its job is suspended: all of it if it just ended (it is over)."""
        def progress(part: _Part) -> tuple[float, bool]:
            if self._finished(part):
                part.left, part.end = 0.0, now
                return part.asked, True
            return part.asked - max(part.left, 0.0), False
        return progress

    def _job(self, s):
        """Job ``s`` as the I/O nodes see it.  What the list policies rank about it is built as the real run
        builds it (:mod:`iolab.middleware.io_node_state`): from the job's steps without the calibration's overhead
        steps and without an advance stage-in, at the spec's rates (not the delivered shares)."""
        r = self.engine.rates
        steps = job_steps(s.job, s.tier, r.lps, self.engine.memory).steps
        facts = JobIOFacts(s.queued.id, s.index, steps, {"lps": r.lps, "hps": r.hps, "stage": r.stage}, self.rate)
        return self.io_book.add_job(facts, s.start, node_counts(s.node_ids, self.span), int(s.job.nodes),
                                 str(s.job.user))

    def _settle(self) -> None:
        if self.io_book.pending:
            for part in self.io_book.dispatch(self.last):
                self.streams.append((part.job.phase, part))
                self.dirty = True
            self.version += 1
        if self.dirty:
            self._solve()
            self.dirty = False

    def _solve(self) -> None:
        """Max-min fair rates over the spec's rates (each tier link's capacity without its delivered
        share), then each part at its tier's delivered share of its rate: a real run measures the share of
        a lone phase against the lesser of its tier's and its I/O node's rates, the whole path, so the share
        slows a part whichever link is its bottleneck."""
        k_node: dict[int, int] = {}
        k_tier: dict[str, int] = {}
        for ph, part in self.streams:
            k_node[part.node] = k_node.get(part.node, 0) + 1
            k_tier[ph.tier] = k_tier.get(ph.tier, 0) + 1
        caps: dict[object, float] = {}
        share = self.share
        for name, k in k_tier.items():
            caps[name] = self.tiers[name].total_rate(k) / share[name]  # the engine's link runs at the share
        if self.io_book.sharing:  # one cap per stream, its share of its I/O node
            for i, c in enumerate(self._caps(k_node)):
                caps[("part", i)] = c
            paths = [(("part", i), ph.tier) for i, (ph, _) in enumerate(self.streams)]
        else:
            for j, k in k_node.items():
                caps[("io", j)] = self.rate * (self.law.factor(k) if self.law is not None else 1.0)
            paths = [(("io", part.node), ph.tier) for ph, part in self.streams]
        rates = max_min_rates(paths, caps)
        for (ph, part), r in zip(self.streams, rates):
            part.rate = r * share[ph.tier]

    def _caps(self, k_node: dict[int, int]) -> list[float]:
        """Each granted part's cap, in ``streams`` order: its share of its I/O node's ``rate x f(k)``, the
        policy's answer for the parts on that node (the book's, asked again only when they changed)."""
        index = {id(part): i for i, (_, part) in enumerate(self.streams)}
        caps = [0.0] * len(self.streams)
        for j in k_node:  # in the order of their first stream
            parts, shares = self.io_book.shares(j, self.last, lambda p: p.asked - max(p.left, 0.0))
            total = self.rate * (self.law.factor(k_node[j]) if self.law is not None else 1.0)
            for part, x in zip(parts, shares):
                caps[index[id(part)]] = total * x
        return caps


class TierView:
    """A tier's link as the engine and the load controller see it, on a platform with I/O nodes: the
    tier's streams are the granted parts of the jobs on it, kept by the one :class:`IONodeLayer`."""

    __slots__ = ("layer", "name")

    def __init__(self, layer: IONodeLayer, name: str):
        self.layer, self.name = layer, name

    @property
    def version(self) -> int:
        return self.layer.version

    @property
    def rate(self) -> float:
        return self.layer.tiers[self.name].rate

    @property
    def law(self):
        return self.layer.tiers[self.name].law

    def total_rate(self, k: int) -> float:
        return self.layer.tiers[self.name].total_rate(k)

    def add(self, key: int, amount: float, now: float) -> None:
        self.layer.add(key, amount, now, self.name)

    def remove(self, key: int, now: float) -> float:
        return self.layer.remove(key, now)

    def next_completion(self) -> float:
        return self.layer.next_completion()

    def pop_finished(self, now: float) -> list[int]:
        return self.layer.pop_finished(now)

    def remaining_of(self, key: int, default=None):
        return self.layer.remaining_of(key, default)

    def __len__(self) -> int:
        return self.layer.streams_on(self.name)

    def __contains__(self, key: int) -> bool:
        ph = self.layer.phases.get(key)
        return ph is not None and ph.tier == self.name
