"""The storage manager's state without Ray: capacity in bytes, names, directories, freeing, pacing."""

from __future__ import annotations

import os
import stat
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.middleware.bucket import TokenBucket
from iolab.middleware.policies.placement import make_layout
from iolab.middleware.storage import NameRefused, StorageState, check_job_name, copy_paced


def make(tmp: Path, capacity: int = 1000, **kw) -> StorageState:
    return StorageState(tmp / "lps", tmp / "hps", capacity, **kw)


# ---------------------------------------------------------------- capacity (hypothesis)

ops = st.lists(st.tuples(st.sampled_from(["alloc", "free"]), st.integers(0, 400), st.integers(0, 20)),
               min_size=1, max_size=40)


def _check(s: StorageState, capacity: int) -> None:
    assert 0 <= s.used <= capacity
    assert s.used == sum(a.nbytes for a in s.live.values())
    assert s.free_bytes == capacity - s.used
    if s.allocator is not None:
        st_ = s.allocator.state
        assert all(u <= d.capacity for u, d in zip(st_.used, st_.disks))
        assert st_.total_used == s.used


def _replay(s: StorageState, seq, capacity: int, on_full: str) -> None:
    now, n = 0.0, 0
    for op, size, pick in seq:
        now += 1
        if op == "alloc":
            job = f"j{n}"
            n += 1
            before = s.free_bytes
            waiting_before = bool(s.waiting)
            a = s.allocate(job, size, now)
            if a.status == "allocated":
                assert size <= before and not waiting_before
            elif a.status == "waiting":
                assert on_full == "wait"
            else:
                assert a.status == "refused" and (on_full == "refuse" or size > capacity)
        else:
            held = sorted(s.live) + list(s.waiting)
            if held:
                job = held[pick % len(held)]
                was_live = job in s.live
                nbytes = s.live[job].nbytes if was_live else 0
                used = s.used
                returned, granted = s.free(job, now)
                assert returned == nbytes
                assert s.used == used - nbytes + sum(g.nbytes for g in granted)
                order = [g.job for g in granted]
                assert order == sorted(order, key=lambda j: int(j[1:]))  # FIFO
        _check(s, capacity)
    for job in list(s.live) + list(s.waiting):
        s.free(job, now + 1)
        _check(s, capacity)
    assert s.used == 0 and not s.live and not s.waiting  # every byte returned


@settings(max_examples=1500, deadline=None)
@given(seq=ops, on_full=st.sampled_from(["wait", "refuse"]))
def test_pool_capacity_never_exceeded_and_all_bytes_return(seq, on_full):
    with tempfile.TemporaryDirectory() as tmp:
        s = make(Path(tmp), 1000, on_full=on_full)
        _replay(s, seq, 1000, on_full)


@settings(max_examples=500, deadline=None)
@given(seq=ops, strategy=st.sampled_from(["best-bandwidth", "round-robin", "worst-fit", "random"]),
       split=st.sampled_from([None, 150]))
def test_disk_placement_never_overfills_a_disk(seq, strategy, split):
    with tempfile.TemporaryDirectory() as tmp:
        disks = make_layout(2, 2, 250)  # 4 disks of 250 B: 1000 B
        s = make(Path(tmp), 0, disks=disks, strategy=strategy, split_threshold=split)
        assert s.capacity == 1000
        _replay(s, seq, 1000, "wait")


def test_waiting_allocation_is_granted_by_a_free(tmp_path):
    s = make(tmp_path, 100)
    assert s.allocate("a", 70, 0).status == "allocated"
    assert s.allocate("b", 50, 1).status == "waiting"
    assert s.allocate("c", 10, 2).status == "waiting"  # FIFO: c does not jump b, though it fits
    returned, granted = s.free("a", 3)
    assert returned == 70 and [g.job for g in granted] == ["b", "c"] and s.used == 60
    rows = [r for r in s.records()["allocations"] if r[0] == "a"]
    assert rows == [["a", "hps", 70, 0, 3, "allocated"]]


def test_refuse_mode_and_oversized_requests(tmp_path):
    s = make(tmp_path, 100, on_full="refuse")
    assert s.allocate("a", 70, 0).status == "allocated"
    assert s.allocate("b", 50, 1).status == "refused"
    assert s.allocate("huge", 101, 1).status == "refused"
    assert [r[5] for r in s.records()["allocations"]] == ["allocated", "refused", "refused"]
    with pytest.raises(RuntimeError):
        s.allocate("a", 1, 2)  # already holds one


def test_disk_ids_recorded(tmp_path):
    s = make(tmp_path, 0, disks=make_layout(1, 2, 100), strategy="worst-fit", split_threshold=60)
    a = s.allocate("a", 120, 0)
    assert a.status == "allocated" and len(a.parts) == 2
    assert {r[1] for r in s.records()["allocations"]} == {"n0.d0", "n0.d1"}


def test_parts_placed_by_the_caller_are_held_as_given(tmp_path):
    """The batch kernel places the bytes; the manager holds exactly those parts on its own books."""
    s = make(tmp_path, 0, disks=make_layout(1, 2, 100), strategy="worst-fit", on_full="refuse")
    a = s.allocate("a", 90, 0, parts=[("n0.d1", 50), ("n0.d1", 40)])  # worst-fit would have used both disks
    assert a.status == "allocated" and a.parts == (("n0.d1", 50), ("n0.d1", 40))
    assert s.allocator.state.used == [0, 90]
    assert s.allocate("b", 20, 1, parts=[("n0.d1", 20)]).status == "refused"  # 10 B left on d1: no room
    with pytest.raises(ValueError, match="parts sum to 30 B, not 20 B"):
        s.allocate("c", 20, 1, parts=[("n0.d0", 30)])
    with pytest.raises(ValueError, match="unknown disk"):
        s.allocate("d", 20, 1, parts=[("n9.d0", 20)])
    assert s.free("a", 2)[0] == 90 and s.allocator.state.used == [0, 0]
    pool = make(tmp_path / "pool", 100)
    with pytest.raises(ValueError, match="one pool"):
        pool.allocate("a", 10, 0, parts=[("n0.d0", 10)])


# ---------------------------------------------------------------- names and directories

@pytest.mark.parametrize("name", ["..", ".", "../x", "a/b", "/etc", ".hidden", "", "-rf", "a\x00b", "a b",
                                  "x" * 200, "é", None, 3])
def test_names_that_could_escape_are_refused(tmp_path, name):
    s = make(tmp_path)
    with pytest.raises(NameRefused):
        s.job_dir("lps", name)
    with pytest.raises(NameRefused):
        s.allocate(name, 1, 0)


def test_symlinks_cannot_lead_out_of_a_tier(tmp_path):
    s = make(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (s.roots["lps"] / "jobs").mkdir()
    os.symlink(outside, s.roots["lps"] / "jobs" / "evil")
    with pytest.raises(NameRefused):
        s.open_dir("lps", "evil")
    with pytest.raises(NameRefused):
        s.inside("lps", s.roots["lps"] / "jobs" / "evil" / "f")
    with pytest.raises(NameRefused):
        s.inside("hps", s.roots["hps"] / ".." / "lps")
    # a symlinked "jobs" folder is refused too
    s2 = make(tmp_path / "two")
    os.symlink(outside, s2.roots["hps"] / "jobs")
    assert s2.allocate("j", 1, 0).status == "allocated"
    with pytest.raises(NameRefused):
        s2.open_dir("hps", "j")
    assert list(outside.iterdir()) == []


def test_directories_are_0700_and_removed_when_freed(tmp_path):
    old = os.umask(0)
    try:
        s = make(tmp_path, 100)
        assert s.allocate("j1", 40, 0).status == "allocated"
        d = s.open_dir("hps", "j1")
        lps = s.open_dir("lps", "j2")
    finally:
        os.umask(old)
    for p in (d, lps, s.roots["lps"], s.roots["hps"]):
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o700, p
    (d / "data").write_bytes(b"x" * 10)
    assert s.free("j1", 1) == (40, []) and not d.exists() and s.free_bytes == 100
    s.free("j2", 1)
    assert not lps.exists()
    assert s.free("j1", 2) == (0, [])  # freeing twice (a crash) is harmless


def test_hps_directory_needs_an_allocation(tmp_path):
    s = make(tmp_path)
    with pytest.raises(RuntimeError):
        s.open_dir("hps", "nobody")
    with pytest.raises(ValueError):
        s.job_dir("tape", "j")


def test_check_job_name_accepts_spec_ids():
    for name in ("1", "job-7", "a.b_c:d"):
        assert check_job_name(name) == name


# ---------------------------------------------------------------- pacing and hooks

def test_copy_paced_keeps_the_rate_and_the_bytes(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "f1").write_bytes(os.urandom(1_000_000))
    (src / "f2").write_bytes(os.urandom(500_000))
    bucket = TokenBucket(3e6)  # 1.5 MB at 3 MB/s: >= 0.5 s
    t = time.perf_counter()
    n, files = copy_paced([src / "f1", src / "f2"], tmp_path / "dst", lambda k: bucket.acquire(k, time.perf_counter()),
                          chunk=100_000)
    took = time.perf_counter() - t
    assert n == 1_500_000 and (tmp_path / "dst" / "f1").read_bytes() == (src / "f1").read_bytes()
    assert 0.45 <= took < 3.0
    assert sorted(Path(f).name for f in files) == ["f1", "f2"]


def test_links_share_one_bucket_per_link(tmp_path):
    s = make(tmp_path, rates={"stage": 1000.0, "hps": None})
    assert s.acquire("stage", 500, 0.0) == pytest.approx(0.5)
    assert s.acquire("stage", 500, 0.0) == pytest.approx(1.0)  # a second stream waits behind the first
    assert s.acquire("hps", 10**9, 0.0) == 0.0
    with pytest.raises(ValueError):
        s.acquire("tape", 1, 0.0)


def test_suspend_resume_are_recorded(tmp_path):
    s = make(tmp_path)
    s.suspend("j", 1.0)
    with pytest.raises(RuntimeError):
        s.suspend("j", 1.5)
    s.resume("j", 2.0)
    with pytest.raises(RuntimeError):
        s.resume("j", 3.0)
    assert s.records()["actions"] == [["j", 1.0, 2.0]]


def test_counters_give_each_links_bytes_operations_and_queue(tmp_path):
    s = make(tmp_path, rates={"lps": 1000.0})
    s.acquire("lps", 300, now=0.0)
    s.acquire("lps", 700, now=0.0)
    c = s.counters(now=0.4)
    assert c["lps"] == {"bytes": 1000, "bookings": 2, "queued": pytest.approx(0.6), "streams": 0}  # unnamed
    assert c["hps"]["bookings"] == 0 and c["hps"]["queued"] == 0.0
