"""The profile kept as releases come and go (``KeptReleases``) is the profile accumulated afresh.

A runtime's sequence of starts (free counts down, a release in), ends (a release out, free counts
up), moved releases (a longer estimate, a fall back to LPS that gives the bytes back) and clock
steps (jobs past their expected end) on random integer byte counts: at every step the profile
``Profile.from_snapshot`` builds from the kept columns has the breakpoints and the counts, float for
float, of adding each release over ``[end, inf)`` by hand (the plain reference) and of accumulating
the same releases from a plain sorted list.  Fractional byte counts turn the kept columns off and the
profiles stay the same.  The kernel hands its releases kept so (the batch runs).
"""

from __future__ import annotations

import bisect
import math
import random

import pytest

from iolab.middleware.policies.batch.profile import KeptReleases, Profile
from iolab.middleware.policies.batch.snapshot import Snapshot


def _reference(now, free, hps_free, releases, grace, cap) -> Profile:
    """Each release added over ``[end, inf)`` in order of end (a job past its end: at ``now + grace``)."""
    prof = Profile(now, free, float(hps_free), 1e-9 * max(1.0, cap))
    for end, _, n, b in sorted(releases, key=lambda r: r[0] if r[0] > now else now + grace):
        prof.add(end if end > now else now + grace, math.inf, -n, -b)
    return prof


def _snapshot(now, free, hps_free, releases, grace, cap, total) -> Snapshot:
    return Snapshot.trusted(now=now, total_nodes=total, free_nodes=free, queue=(), running=(), hps_capacity=cap,
                            hps_free=hps_free, overrun_grace=grace, releases=releases)


def _columns_of(p: Profile):
    return p.times, p.nodes, p.hps


def _run(rng: random.Random, steps: int, fractional: bool, columns: bool = True):
    """A random sequence of a runtime's changes; yields (kept, free, hps_free, now, grace, cap, total)."""
    total, cap = rng.choice([(8, 1000.0), (64, 2.0 ** 40), (16, 0.0)])
    grace = rng.choice([1.0, 0.5])
    kept = KeptReleases(total, cap, columns)
    free, hps_free, now = total, cap, 0.0
    running: dict[int, tuple] = {}
    order = 0
    for _ in range(steps):
        r = rng.random()
        if r < 0.4 and free:  # a start
            n = rng.randint(1, free)
            b = float(rng.randint(0, int(min(hps_free, cap / 4)))) if hps_free >= 1 and rng.random() < 0.6 else 0.0
            if fractional and b and rng.random() < 0.3:
                b = min(hps_free, b + 0.25)
            end = now + rng.choice([0.5, 1.0, 2.0, 2.0, 3.0, 5.0, rng.uniform(0.1, 10.0)])  # ties, and at now + grace
            key = (end, order, n, b)
            order += 1
            free -= n
            hps_free -= b
            kept.hold(key)
            running[key[1]] = key
        elif r < 0.7 and running:  # an end (early, on time or late)
            key = running.pop(rng.choice(list(running)))
            kept.drop(key)
            free += key[2]
            hps_free += key[3]
        elif r < 0.8 and running:  # a moved release: a longer estimate, or a fall back to LPS
            i = rng.choice(list(running))
            end, o, n, b = old = running[i]
            if b and rng.random() < 0.5:
                new = (now + rng.choice([1.0, 4.0]), o, n, 0.0)
                hps_free += b
            else:
                new = (max(end, now) + rng.choice([1.0, 2.0, 2.5]), o, n, b)
            kept.drop(old)
            kept.hold(new)
            running[i] = new
        else:  # the clock moves: some jobs run past their expected end
            now += rng.choice([0.5, 1.0, 1.5, rng.uniform(0.0, 3.0)])
        assert sorted(running.values()) == list(kept)
        yield kept, free, hps_free, now, grace, cap, total


@pytest.mark.parametrize("seed", range(40))
def test_kept_columns_are_the_accumulated_profile_float_for_float(seed):
    rng = random.Random(seed)
    used = overran = 0
    for kept, free, hps_free, now, grace, cap, total in _run(rng, 300, fractional=False):
        snap = _snapshot(now, free, hps_free, kept, grace, cap, total)
        got = Profile.from_snapshot(snap)
        plain = Profile.from_snapshot(_snapshot(now, free, hps_free, list(kept), grace, cap, total))
        ref = _reference(now, free, hps_free, list(kept), grace, cap)
        assert _columns_of(got) == _columns_of(ref) == _columns_of(plain)
        assert got.rising and got.eps == ref.eps
        if kept.columns(free, float(hps_free), now, grace) is not None:
            used += 1
            overran += bool(kept) and kept[0][0] <= now
    assert kept.exact
    assert used > 50 and overran > 0  # the kept columns answered, also with jobs past their end


def test_kept_columns_cover_overruns_at_and_before_the_next_end():
    """Jobs past their end release at now + grace: in one segment with an end there, and the
    accumulation (None) when another end falls between now and then."""
    kept = KeptReleases(10, 100.0)
    for key in [(1.0, 0, 2, 10.0), (1.0, 1, 1, 0.0), (3.0, 2, 3, 5.0), (4.0, 3, 1, 0.0)]:
        kept.hold(key)
    free, room = 10 - 7, 100.0 - 15.0
    assert kept.columns(free, room, 0.0, 1.0) == ([0.0, 1.0, 3.0, 4.0], [3, 6, 9, 10], [85.0, 95.0, 100.0, 100.0])
    # at 2.0 the jobs ending at 1.0 overran: they release at 3.0, with the job ending at 3.0
    assert kept.columns(free, room, 2.0, 1.0) == ([2.0, 3.0, 4.0], [3, 9, 10], [85.0, 100.0, 100.0])
    assert kept.columns(free, room, 1.5, 1.0) == ([1.5, 2.5, 3.0, 4.0], [3, 6, 9, 10], [85.0, 95.0, 100.0, 100.0])
    assert kept.columns(free, room, 2.0, 1.5) is None  # 3.0 falls before the stand-in end 3.5
    assert kept.columns(free + 1, room, 0.0, 1.0) is None  # not the snapshot's free counts
    for now, grace in [(2.0, 1.0), (1.5, 1.0), (2.0, 1.5), (5.0, 1.0)]:
        snap = _snapshot(now, free, room, kept, grace, 100.0, 10)
        ref = _reference(now, free, room, list(kept), grace, 100.0)
        assert _columns_of(Profile.from_snapshot(snap)) == _columns_of(ref)


@pytest.mark.parametrize("seed", range(10))
def test_fractional_bytes_turn_the_kept_columns_off_and_the_profile_stays(seed):
    rng = random.Random(100 + seed)
    off = 0
    for kept, free, hps_free, now, grace, cap, total in _run(rng, 300, fractional=True):
        snap = _snapshot(now, free, hps_free, kept, grace, cap, total)
        ref = _reference(now, free, hps_free, list(kept), grace, cap)
        plain = Profile.from_snapshot(_snapshot(now, free, hps_free, list(kept), grace, cap, total))
        assert _columns_of(Profile.from_snapshot(snap)) == _columns_of(plain)
        assert Profile.from_snapshot(snap).times == ref.times
        if not kept.exact:
            off += 1
            assert kept.columns(free, float(hps_free), now, grace) is None
    if cap:
        assert off  # a fractional byte count came in


def test_bytes_beyond_exact_floats_turn_the_kept_columns_off():
    """Free bytes and the releases' bytes always sum to the free bytes the columns started from (a
    release that comes in is taken from the free ones): that sum must be an integer below 2**53."""
    for start, exact in [(2.0 ** 53, False), (2.0 ** 53 - 1, True), (1000.5, False), (1000.0, True)]:
        kept = KeptReleases(4, start)
        assert kept.exact is exact
        kept.hold((5.0, 0, 1, 7.0))
        assert list(kept) == [(5.0, 0, 1, 7.0)]
        assert (kept.columns(3, start - 7.0, 0.0, 1.0) is not None) is exact


def test_the_kernel_hands_its_releases_kept():
    """A batch run's snapshots carry the kernel's kept releases, whose columns answer."""
    from iolab.middleware.policies.batch import SAS, TierRates
    from iolab.middleware.policies.batch.kernel import BatchKernel
    from iolab.specs.batch import Job

    jobs = [Job(id=f"j{i}", submit=float(i // 2), nodes=1 + i % 3, walltime=10.0 + i, runtime=5.0 + i,
                storage=1000.0 * i, input=10.0 * i) for i in range(8)]
    k = BatchKernel(jobs, SAS(), total_nodes=4, hps_capacity=4000.0, rates=TierRates(lps=1.0, hps=10.0, stage=5.0))
    answered = 0
    for t in (0.0, 1.0, 2.0, 3.0):
        for s in k.jobs:
            if s.queued.submit == t:
                k.submit(s, t)
        k.decide(t)
        snap = k.snapshot(t + 0.5)
        assert type(snap.releases) is KeptReleases and len(snap.releases) == len(k.running)
        ref = _reference(snap.now, snap.free_nodes, snap.hps_free, list(snap.releases), 1.0, 4000.0)
        assert _columns_of(Profile.from_snapshot(snap)) == _columns_of(ref)
        answered += snap.releases.columns(snap.free_nodes, snap.hps_free, snap.now, 1.0) is not None
    assert answered == 4


@pytest.mark.parametrize("seed", range(20))
def test_first_with_room_is_the_bisection_of_the_rounded_column(seed):
    """``first_with_room`` finds, without building it, what a bisection of ``[x + eps for x in room]``
    finds: on rising columns with long runs of equal values and needs at the rounding's edge."""
    from iolab.middleware.policies.batch.profile import first_with_room

    rng = random.Random(seed)
    for _ in range(200):
        eps = rng.choice([0.0, 1e-9, 1e-9 * 2.0 ** 40, 0.3])
        room, x = [], rng.choice([0.0, 1e6, 2.0 ** 40])
        for _ in range(rng.randint(0, 30)):
            x += rng.choice([0.0, 0.0, 0.0, 1.0, 1e-7, 2.0 ** rng.randint(-10, 41)])
            room.append(x)
        values = room + [v + eps for v in room] + [1.0]
        need = rng.choice(values) if room else 1.0
        need = rng.choice([need, math.nextafter(need, math.inf), math.nextafter(need, -math.inf), need - eps])
        lo = rng.randint(0, len(room))
        rounded = [v + eps for v in room]
        assert first_with_room(room, eps, need, lo) == bisect.bisect_left(rounded, need, lo)


def test_first_with_room_past_a_value_that_rounds_short():
    """0.27262546200350957 is at least need - eps, yet it + eps falls short of need: not it."""
    from iolab.middleware.policies.batch.profile import first_with_room

    x, eps, need = 0.27262546200350957, 0.1, 0.3726254620035096
    assert x >= need - eps and not x + eps >= need
    assert first_with_room([0.0, x, x, x, 1.0], eps, need) == 4
    assert first_with_room([0.0, x, x, x], eps, need) == 4


@pytest.mark.parametrize("seed", range(10))
def test_releases_kept_without_columns_give_the_same_profiles(seed):
    """``columns=False`` (a policy that builds no profile from the releases): the sorted releases only,
    the columns never answer, and a profile built from them is the reference's, float for float."""
    rng = random.Random(200 + seed)
    steps = 0
    for kept, free, hps_free, now, grace, cap, total in _run(rng, 300, fractional=False, columns=False):
        assert not kept.exact and kept.times == [] and kept.columns(free, float(hps_free), now, grace) is None
        got = Profile.from_snapshot(_snapshot(now, free, hps_free, kept, grace, cap, total))
        ref = _reference(now, free, hps_free, list(kept), grace, cap)
        assert _columns_of(got) == _columns_of(ref)
        steps += 1
    assert steps == 300


def test_the_kernel_keeps_the_columns_only_for_policies_that_read_a_profile():
    from iolab.middleware.policies.batch.backfill import EASY, FCFS, Conservative
    from iolab.middleware.policies.batch.kernel import BatchKernel
    from iolab.middleware.policies.batch.snapshot import TierRates

    def kernel(policy, **kw):
        return BatchKernel([], policy, total_nodes=8, hps_capacity=100.0, rates=TierRates(lps=1.0, hps=15.0, stage=5.0),
                           **kw)

    def kept(policy, **kw):
        return kernel(policy, **kw)._releases.exact

    assert kept(EASY()) and kept(Conservative()) and kept(FCFS()) and kept(FCFS(project=False, hps_requests=True))
    assert not kept(EASY(project=False))  # the shadow rule reads the sorted releases only
    # FCFS's starts: the jobs in queue order while their nodes are free; through its quick entry (nobody
    # reads a snapshot) no release is kept at all, else (a recorded decision) the sorted releases only
    assert kernel(FCFS(project=False))._releases is None
    assert not kept(FCFS(project=False), on_decision=lambda d: None)
    assert kernel(EASY(project=False))._releases is not None  # its quick entry reads them
