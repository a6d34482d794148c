"""The fair-share link: every stream progresses at R(k) / k, and ``pop_finished`` returns the
streams within tolerance of the least, in the order they joined.  Checked against a plain
restatement of the tolerance rule on random links, and against a brute-force processor-sharing
stepper (every stream's amount left decreased at every event, O(k) per event: the former
implementation's method) on random arrivals, with and without a rate that falls with k."""

from __future__ import annotations

import math
import random

import pytest

from iolab.sim.fairshare import FairShareLink


def _plain_finished(remaining: dict, rel_tol: float = 1e-9) -> list:
    least = min(remaining.values())
    return [k for k, r in remaining.items() if r <= least + rel_tol * max(1.0, abs(r)) or r <= rel_tol]


def test_pop_finished_is_the_tolerance_rule_on_random_links():
    rng = random.Random(3)
    popped_several = 0
    for case in range(3000):
        link = FairShareLink(rng.choice([1.0, 3.0, 1e9]))
        base = rng.choice([0.0, 1e-12, 1.0, 1e3, 1e12, -1e-3])
        amounts = {}
        for i in rng.sample(range(100), rng.randint(1, 30)):  # keys joined in an order other than theirs
            off = rng.choice([0.0, 0.0, 1e-13, 1e-10, 1e-9, 1e-6, rng.uniform(0, 10), rng.uniform(0, 1e9)])
            amounts[i] = base + off * rng.choice([1, 1, -1]) * max(1.0, abs(base))
            link.add(i, amounts[i], 0.0)
        assert link.remaining == amounts  # join order, amounts as given
        expected = _plain_finished(amounts)
        got = link.pop_finished(0.0)
        assert got == expected, case
        assert not set(got) & set(link.remaining)
        assert len(link) == len(amounts) - len(got)
        popped_several += len(got) > 1
    assert popped_several > 300  # ties within tolerance were exercised


def test_each_stream_progresses_at_rate_over_k():
    link = FairShareLink(10.0)
    link.add("a", 10.0, 0.0)
    link.add("b", 30.0, 0.0)
    assert link.next_completion() == 2.0  # 10 units at 5/s
    assert link.pop_finished(2.0) == ["a"] and link.remaining == {"b": 20.0}
    assert link.next_completion() == 4.0  # alone: 20 units at 10/s
    assert link.pop_finished(4.0) == ["b"] and len(link) == 0


def test_removed_stream_keeps_what_it_had_left_and_frees_its_share():
    link = FairShareLink(10.0)
    link.add("a", 10.0, 0.0)
    link.add("b", 30.0, 0.0)
    assert link.remove("b", 1.0) == pytest.approx(25.0)  # 5 units moved at 5/s
    assert "b" not in link and link.remaining_of("b", -1.0) == -1.0
    assert link.next_completion() == pytest.approx(1.5)  # 5 units left of a, alone at 10/s
    assert link.pop_finished(1.5) == ["a"]
    assert link.pop_finished(2.0) == [] and link.next_completion() == math.inf


class _Knee:
    """R(k) = rate / (1 + gamma max(0, k - knee)): the contention law of the controller's volumes."""

    def __init__(self, gamma: float, knee: int):
        self.gamma, self.knee = gamma, knee

    def factor(self, k: int) -> float:
        return 1.0 / (1.0 + self.gamma * max(0, k - self.knee))


def _stepper(rate, law, arrivals, removals=()):
    """Brute force: from event to event, every stream's amount left less (dt * R(k) / k); a stream ends
    when its amount left reaches 0 (relative 1e-12).  ``arrivals``: (t, key, amount); ``removals``:
    (t, key): the key leaves (suspended) and joins again at once with what it had left, at the end of
    the join order.  Returns {key: end}."""
    events = sorted([(t, 0, key, a) for t, key, a in arrivals] + [(t, 1, key, 0.0) for t, key in removals])
    rem: dict = {}
    ends: dict = {}
    now = 0.0
    i = 0
    while i < len(events) or rem:
        k = len(rem)
        r = rate * (law.factor(k) if law else 1.0) if k else 0.0
        t_end = now + min(rem.values()) * k / r if k else math.inf
        t_ev = events[i][0] if i < len(events) else math.inf
        t = min(t_end, t_ev)
        if k:
            done = (t - now) * r / k
            for key in rem:
                rem[key] -= done
        now = t
        least = min(rem.values(), default=0.0)
        for key in [key for key, x in rem.items() if x <= 1e-12 * max(1.0, abs(x)) or t == t_end and x <= least * (1 + 1e-12)]:
            ends[key] = now
            del rem[key]
        while i < len(events) and events[i][0] == now:
            _, kind, key, a = events[i]
            i += 1
            if kind == 0:
                rem[key] = a
            elif key in rem:
                rem[key] = rem.pop(key)  # leaves and joins again: its amount unchanged
    return ends


def _link_run(rate, law, arrivals, removals=()):
    """The same arrivals through FairShareLink, driven as the engines drive it."""
    link = FairShareLink(rate, law=law)
    events = sorted([(t, 0, key, a) for t, key, a in arrivals] + [(t, 1, key, 0.0) for t, key in removals])
    ends = {}
    i = 0
    while i < len(events) or len(link):
        t_end = link.next_completion()
        t_ev = events[i][0] if i < len(events) else math.inf
        if t_end <= t_ev:
            for key in link.pop_finished(t_end):
                ends[key] = t_end
            continue
        _, kind, key, a = events[i]
        i += 1
        if kind == 0:
            link.add(key, a, t_ev)
        elif key in link:
            left = link.remove(key, t_ev)
            link.add(key, left, t_ev)
    return ends


@pytest.mark.parametrize("law", [None, _Knee(0.5, 2), _Knee(3.0, 0)], ids=["fair", "knee2", "steep"])
def test_virtual_time_link_matches_a_brute_force_stepper(law):
    rng = random.Random(11)
    for case in range(200):
        rate = rng.choice([1.0, 7.5, 1e9, 1e11])
        n = rng.randint(1, 40)
        t = 0.0
        arrivals = []
        for key in range(n):
            t += rng.choice([0.0, rng.expovariate(1.0), rng.expovariate(0.01)])
            arrivals.append((t, key, rng.choice([0.0, 1.0, rng.uniform(1, 100)]) * rate * rng.choice([1e-3, 1, 10])))
        removals = [(rng.uniform(0, t + 1), rng.randrange(n)) for _ in range(rng.randint(0, 5))]
        want = _stepper(rate, law, arrivals, removals)
        got = _link_run(rate, law, arrivals, removals)
        assert got.keys() == want.keys(), case
        for key in want:
            assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-9), (case, key)


def test_a_long_busy_link_keeps_its_precision():
    """A link that never empties over a long run (V would grow without bound): ends still agree with
    the stepper to 1e-9 (the link rebases its virtual progress)."""
    rng = random.Random(5)
    arrivals = []
    t = 0.0
    for key in range(3000):
        t += rng.expovariate(1.0)
        arrivals.append((t, key, rng.choice([1e-3, 1.0, 1.6]) * 1e9))  # offered 0.87 of the rate
    arrivals.append((0.0, "long", 1e9 * 1e5))  # keeps the link busy throughout
    want = _stepper(1e9, None, arrivals)
    rebased = []
    FairShareLink._rebase, plain = (lambda self: (rebased.append(self._v), plain(self))), FairShareLink._rebase
    try:
        got = _link_run(1e9, None, arrivals)
    finally:
        FairShareLink._rebase = plain
    assert rebased  # the run went through rebases
    worst = max(abs(got[k] - want[k]) / max(1.0, want[k]) for k in want)
    assert worst < 1e-9
