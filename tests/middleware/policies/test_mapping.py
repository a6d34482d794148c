"""Make-Pack (carretero2020 Alg. 1), First-Fit and LPT placement."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.middleware.policies import PackJob, first_fit, lpt_assign, make_pack


def test_make_pack_hand_made_case():
    # P = 10, b = 1.  T and V chosen so that the packs are known:
    #   J1: Q=6, T=100, V=60 -> opens pack 0 (L=0.6)
    #   J2: Q=4, T=90,  V=50 -> pack 0 has 4 free nodes but L would be 1.1 > S=1 -> opens pack 1
    #   J3: Q=4, T=80,  V=30 -> pack 0 (6 nodes, first by decreasing P^Pack): L=0.9 <= 1 -> pack 0
    #   J4: Q=2, T=50,  V=10 -> pack 0 is full (10 nodes), pack 1: L=(50+10)/90=.67 -> pack 1
    jobs = [PackJob("J1", 6, 60, 100), PackJob("J2", 4, 50, 90), PackJob("J3", 4, 30, 80),
            PackJob("J4", 2, 10, 50)]
    packs = make_pack(jobs, 10, 1.0, 1.0)
    assert [p.ids for p in packs] == [["J1", "J3"], ["J2", "J4"]]
    assert packs[0].length == 100 and packs[0].nodes == 10
    assert math.isclose(packs[1].load(1.0), 60 / 90)
    # First-Fit ignores the I/O constraint: J2 joins J1.
    assert [p.ids for p in first_fit(jobs, 10, 1.0)] == [["J1", "J2"], ["J3", "J4"]]


def test_make_pack_sorts_by_decreasing_contention_free_time():
    jobs = [PackJob("short", 1, 0, 10), PackJob("long", 1, 0, 99)]
    assert make_pack(jobs, 8, 1.0, 1.0)[0].ids == ["long", "short"]


job_lists = st.lists(
    st.builds(PackJob, id=st.uuids().map(str), nodes=st.integers(1, 16),
              volume=st.floats(0, 200), min_time=st.floats(1, 300)),
    min_size=1, max_size=40, unique_by=lambda j: j.id)


@settings(max_examples=200, deadline=None)
@given(jobs=job_lists, s=st.sampled_from([0.25, 0.5, 1.0, 2.0, math.inf]))
def test_every_pack_respects_eq4_and_eq5_or_holds_a_single_job(jobs, s):
    b, P = 2.0, 16
    jobs = [PackJob(j.id, j.nodes, j.volume, max(j.min_time, j.volume / b)) for j in jobs]
    packs = make_pack(jobs, P, b, s)
    assert sorted(j for p in packs for j in p.ids) == sorted(j.id for j in jobs)
    for p in packs:
        assert p.nodes <= P  # Eq. 5
        if len(p.jobs) > 1 and not math.isinf(s):
            assert p.load(b) <= s * (1 + 1e-9)  # Eq. 4 (a job alone may exceed S)


@settings(max_examples=100, deadline=None)
@given(jobs=job_lists)
def test_infinite_sensibility_is_first_fit(jobs):
    jobs = [PackJob(j.id, j.nodes, j.volume, max(j.min_time, j.volume)) for j in jobs]
    assert [p.ids for p in make_pack(jobs, 16, 1.0, math.inf)] == [p.ids for p in first_fit(jobs, 16, 1.0)]


def test_lpt_places_longest_first_on_the_least_loaded_node():
    # lengths 7, 5, 4, 3, 3 on 2 nodes: 7->n0, 5->n1, 4->n1 (5<7), 3->n0 (7<9), 3->n0? loads 10 vs 9 -> n1
    assert lpt_assign([7, 5, 4, 3, 3], 2) == [[0, 3], [1, 2, 4]]
    assert lpt_assign([1, 2, 3], 1) == [[2, 1, 0]]
    assert lpt_assign([], 3) == [[], [], []]


def test_make_pack_ties_in_pack_size_keep_creation_order():
    # carretero2020 Alg. 1 takes "the first Pack in S_P", S_P sorted by decreasing P^Pack; among
    # packs of equal P^Pack the first is the one created first.  T = [100, 90, 80, 70],
    # Q = [512, 1792, 1280, 128], P = 2048, no I/O: J0 opens pack 0 (512), J1 opens pack 1 (1792),
    # J2 joins pack 0 (now 1792 too), and J3 must go to pack 0, created first -- a sort that
    # kept the previous order (pack 1 ahead of pack 0) sent it to pack 1.
    jobs = [PackJob(f"J{i}", q, 0.0, t) for i, (q, t) in enumerate(zip([512, 1792, 1280, 128], [100, 90, 80, 70]))]
    assert [p.ids for p in make_pack(jobs, 2048, 1.0, 1.0)] == [["J0", "J2", "J3"], ["J1"]]


@settings(max_examples=200, deadline=None)
@given(jobs=job_lists, s=st.sampled_from([0.5, 1.0, math.inf]))
def test_make_pack_picks_the_first_fitting_pack_by_size_then_creation(jobs, s):
    # an independent reading of Alg. 1: replay the packs' growth and check every job went to the
    # first pack, by decreasing P^Pack then creation order, that met Eq. 4 and Eq. 5 when it came
    b, P = 1.0, 16
    jobs = [PackJob(j.id, j.nodes, j.volume, max(j.min_time, j.volume / b)) for j in jobs]
    packs = make_pack(jobs, P, b, s)
    home = {j.id: k for k, p in enumerate(packs) for j in p.jobs}
    state = []  # (nodes, length, volume) of each pack created so far, in creation order
    for job in sorted(jobs, key=lambda j: -j.min_time):
        def fits(k):
            nodes, length, volume = state[k]
            if job.nodes > P - nodes:
                return False
            if math.isinf(s):
                return True
            load = volume / (b * length) if length > 0 else (0.0 if volume <= 0 else math.inf)
            budget = (s - load) * b * length
            return job.volume <= budget + 1e-12 * max(1.0, budget)
        first = next((k for k in sorted(range(len(state)), key=lambda k: (-state[k][0], k)) if fits(k)), len(state))
        assert home[job.id] == first
        if first == len(state):
            state.append((0, 0.0, 0.0))
        nodes, length, volume = state[first]
        state[first] = (nodes + job.nodes, max(length, job.min_time), volume + job.volume)
