"""The fair-share link: every stream progresses at rate / k, and ``pop_finished`` returns the
streams within tolerance of the least, in the order they joined.  Checked against a plain
restatement of the rule on random links (the link tests a cheap bound before the exact rule)."""

from __future__ import annotations

import random

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
        for i in range(rng.randint(1, 30)):
            off = rng.choice([0.0, 0.0, 1e-13, 1e-10, 1e-9, 1e-6, rng.uniform(0, 10), rng.uniform(0, 1e9)])
            link.remaining[i] = base + off * rng.choice([1, 1, -1]) * max(1.0, abs(base))
        expected = _plain_finished(dict(link.remaining))
        got = link.pop_finished(link.last)
        assert got == expected, case
        assert not set(got) & set(link.remaining)
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
