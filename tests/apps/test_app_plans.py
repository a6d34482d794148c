"""PlannedPhase plans (iolab.apps.phases): pure code, no MPI."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iolab.apps.phases import PlannedPhase, explicit, periodic


def test_periodic_plan_alternates_compute_and_io_per_iteration():
    plan = periodic(3, 8.0, 1000, "write")
    assert [(p.index, p.kind, p.amount, p.iteration) for p in plan] == [
        (0, "compute", 8.0, 1), (1, "write", 1000, 1),
        (2, "compute", 8.0, 2), (3, "write", 1000, 2),
        (4, "compute", 8.0, 3), (5, "write", 1000, 3),
    ]


def test_periodic_plan_drops_empty_phases():
    assert [p.kind for p in periodic(2, 0.0, 10, "read")] == ["read", "read"]
    assert [p.kind for p in periodic(2, 1.5, 0)] == ["compute", "compute"]


def test_explicit_plan_counts_an_iteration_per_compute_phase():
    plan = explicit('[["write", 5], ["compute", 1], ["write", 2.0], ["read", 2], ["compute", 0.5]]')
    assert plan == [PlannedPhase(0, "write", 5, 1), PlannedPhase(1, "compute", 1.0, 1), PlannedPhase(2, "write", 2, 1),
                    PlannedPhase(3, "read", 2, 1), PlannedPhase(4, "compute", 0.5, 2)]


@pytest.mark.parametrize("text, message", [
    ("{}", "JSON list"),
    ("[[1, 2]]", "--phases-json[0]: expected [kind, amount]"),
    ('[["compute", 1], ["nap", 1]]', "--phases-json[1]: kind must be"),
    ('[["compute", -1]]', "finite and >= 0"),
    ('[["compute", "ten"]]', "seconds must be a number"),
    ('[["write", 1.5]]', "bytes must be an integer"),
    ('[["write", true]]', "bytes must be an integer"),
    ("[[", "not valid JSON"),
])
def test_bad_explicit_plans_name_the_entry(text, message):
    with pytest.raises(ValueError) as err:
        explicit(text)
    assert message in str(err.value)


@pytest.mark.parametrize("args, message", [
    ((-1, 1.0, 0), "--iterations"), ((1, float("nan"), 0), "--compute"),
    ((1, 1.0, -3), "--io-volume"), ((1, 1.0, 3, "append"), "--io-kind"),
])
def test_bad_periodic_plans(args, message):
    with pytest.raises(ValueError) as err:
        periodic(*args)
    assert message in str(err.value)


@given(st.lists(st.tuples(st.sampled_from(["compute", "write", "read"]), st.integers(0, 10**12)), max_size=20))
def test_explicit_round_trips_kinds_and_amounts(entries):
    plan = explicit(json.dumps([list(e) for e in entries]))
    assert [(p.kind, p.amount) for p in plan] == [(k, float(a) if k == "compute" else a) for k, a in entries]
    assert [p.index for p in plan] == list(range(len(entries)))
    assert all(b.iteration - a.iteration in (0, 1) for a, b in zip(plan, plan[1:]))
