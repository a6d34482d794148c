"""The criteria a claim is judged by, and the registry's claims against a planted change of the paper's number."""

from __future__ import annotations

from dataclasses import replace

import pytest

from iolab.reproduce.claim import Claim, judge
from iolab.reproduce.criteria import (
    CANNOT, NOT, PARTLY, REPRODUCED, Between, Cannot, Each, Near, NearEach, SameSet, Share, counts,
)
from iolab.reproduce.registry import CLAIMS


def test_near_within_outside_and_on_the_papers_side():
    c = Near(1.09, 0.05, relative=True, side_of=1.0)
    assert c.judge(1.12)[0] == REPRODUCED  # 1.09 +- 0.0545
    assert c.judge(1.2)[0] == PARTLY  # outside, but above 1 as the paper
    assert c.judge(0.9)[0] == NOT
    assert Near(0.0, 0.0).judge(0.0)[0] == REPRODUCED and Near(0.0, 0.0).judge(1.0)[0] == NOT


def test_a_mapping_is_judged_case_by_case():
    c = Near(0.8, 0.05, side_of=0.0)
    assert c.judge({"a": 0.79, "b": 0.82})[0] == REPRODUCED
    assert c.judge({"a": 0.79, "b": 0.5})[0] == PARTLY
    assert Between(0.55, 0.85).judge({"a": 0.4, "b": 0.3})[0] == NOT
    assert Between(0.9, 1.0, partly_lo=0.75, partly_hi=0.9).judge(0.8)[0] == PARTLY


def test_each_near_each_same_set_and_share():
    assert Each("<", 0, "x").judge({"a": -1, "b": -2})[0] == REPRODUCED
    assert Each("<", 0, "x").judge({"a": -1, "b": 2})[0] == PARTLY
    assert Each("<", 0, "x").judge({"a": 1})[0] == NOT
    ne = NearEach({"t1": 2.4, "t2": -5.7}, tol=3.0, side_of=0.0)
    assert ne.judge({"t1": 1.0, "t2": -4.0})[0] == REPRODUCED
    assert ne.judge({"t1": 9.0, "t2": -1.0})[0] == PARTLY  # both on the paper's side of 0
    assert ne.judge({"t1": -9.0, "t2": 1.0})[0] == NOT
    assert NearEach({"a": 0.0}, tol=1.0, side_of=None).judge({"a": 5.0})[0] == NOT
    with pytest.raises(ValueError):
        ne.judge({"t1": 1.0})  # a missing case is not a pass
    assert SameSet(("a", "b")).judge(["b", "a"])[0] == REPRODUCED
    assert SameSet(("a", "b")).judge(["a", "c"])[0] == PARTLY
    assert SameSet(("a", "b")).judge([])[0] == NOT
    assert [Share(0.9, 0.5, "x").judge(v)[0] for v in (0.95, 0.6, 0.1)] == [REPRODUCED, PARTLY, NOT]


def test_judging_unreadable_missing_cannot_and_by_construction():
    c = Claim("p.x", "carretero2020", "Fig. 0", "s", Near(1.0, 0.1), "m", "e")
    assert judge(c, {}).verdict == NOT  # nothing measured: a failure, not a pass
    assert judge(c, {"m": "no number"}).verdict == NOT
    assert judge(c, {"m": {"cannot": "no real run"}}).verdict == CANNOT
    built = replace(c, construction="fitted to it")
    row = judge(built, {"m": 1.0})
    assert row.verdict == CANNOT and "by construction" in row.why  # never counted as reproduced
    assert judge(built, {"m": 5.0}).verdict == NOT  # disagreeing despite the construction: a failure
    assert judge(replace(c, criterion=Cannot("why", "x")), {}).verdict == CANNOT
    why = judge(c, {"m": 2.0, "_why": {"m": "the reason"}}).why
    assert why.endswith("Why: the reason")
    assert counts([REPRODUCED, NOT, NOT]) == {REPRODUCED: 1, PARTLY: 0, NOT: 2, CANNOT: 0}


def _papers_value(crit):
    """A measurement equal to the paper's own number, for the criteria that hold one."""
    if isinstance(crit, Near):
        return crit.target
    if isinstance(crit, Between):
        return (crit.lo + crit.hi) / 2
    if isinstance(crit, NearEach):
        return dict(crit.targets)
    return None


def _planted(crit):
    """The criterion with the paper's number moved far away."""
    if isinstance(crit, Near):
        return replace(crit, target=crit.target + 1000 * (abs(crit.target) + crit.tol + 1))
    if isinstance(crit, Between):
        return replace(crit, lo=crit.hi + 1000, hi=crit.hi + 2000, partly_lo=None, partly_hi=None)
    if isinstance(crit, NearEach):
        return replace(crit, targets={k: v + 1000 for k, v in crit.targets.items()}, side_of=None)
    return None


NUMERIC = [c for c in CLAIMS if _papers_value(c.criterion) is not None]


def test_the_registry_has_numeric_claims_of_every_paper():
    assert {c.paper for c in NUMERIC} == {c.paper for c in CLAIMS}


@pytest.mark.parametrize("claim", NUMERIC, ids=lambda c: c.id)
def test_a_planted_change_of_the_papers_number_flips_the_verdict(claim):
    m = {claim.measure: _papers_value(claim.criterion)}
    got = judge(replace(claim, construction=""), m).verdict
    assert got == REPRODUCED, (claim.id, got)
    planted = replace(claim, criterion=_planted(claim.criterion), construction="")
    assert judge(planted, m).verdict != REPRODUCED


def test_every_claim_is_complete_and_unique():
    ids = [c.id for c in CLAIMS]
    assert len(ids) == len(set(ids))
    for c in CLAIMS:
        assert c.id.startswith(c.paper + ".")
        assert c.statement and c.where and c.measure and c.experiment
        assert c.criterion.paper and c.criterion.tolerance
        assert not (isinstance(c.criterion, Cannot) and not c.criterion.reason)
