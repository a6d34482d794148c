"""Checkpoint files and manifest (iolab.apps.checkpoint), on one process, no MPI."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iolab.apps import checkpoint as ck

ATTRS = {"rank": np.int64(0), "rows": np.array([0, 4], dtype=np.int64), "sweeps": np.int64(7)}


class Meter:
    def __init__(self):
        self.calls: list[int] = []

    def __call__(self, n: int) -> None:
        self.calls.append(n)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 20), cols=st.integers(1, 20), extra=st.integers(0, 5_000_000))
def test_a_rank_file_has_exactly_the_asked_size_and_every_byte_is_throttled(tmp_path_factory, rows, cols, extra):
    tmp = tmp_path_factory.mktemp("ck")
    block = np.random.default_rng(0).random((rows, cols))
    want = ck.metadata_overhead(block.shape, ATTRS) + block.nbytes + extra
    meter = Meter()
    fill = ck.pattern(3, 0, 1 << 20)
    size = ck.write_rank_file(tmp / "r.h5", block, ATTRS, want, meter, fill, fsync=False)
    assert size == want == (tmp / "r.h5").stat().st_size
    assert sum(meter.calls) == want and max(meter.calls[1:], default=0) <= 1 << 20
    with h5py.File(tmp / "r.h5") as f:
        assert np.array_equal(f["u"][...], block) and f.attrs["sweeps"] == 7
        assert np.array_equal(f["filler"][: min(extra, 1000)], fill[: min(extra, 1000)])
    assert [p.name for p in tmp.iterdir()] == ["r.h5"]


def test_an_unpaced_write_has_no_throttle_and_the_same_file(tmp_path):
    block = np.arange(16.0).reshape(4, 4)
    want = ck.metadata_overhead(block.shape, ATTRS) + block.nbytes + 300_000
    fill = ck.pattern(3, 0, 4096)
    paced = ck.write_rank_file(tmp_path / "paced.h5", block, ATTRS, want, Meter(), fill, fsync=False)
    unpaced = ck.write_rank_file(tmp_path / "unpaced.h5", block, ATTRS, want, None, fill, fsync=False)
    assert paced == unpaced == want == (tmp_path / "unpaced.h5").stat().st_size
    with h5py.File(tmp_path / "paced.h5") as a, h5py.File(tmp_path / "unpaced.h5") as b:
        assert np.array_equal(a["u"][...], b["u"][...]) and np.array_equal(a["filler"][...], b["filler"][...])


def test_a_volume_below_the_block_still_writes_the_block(tmp_path):
    block = np.ones((8, 8))
    size = ck.write_rank_file(tmp_path / "r.h5", block, ATTRS, 10, Meter(), ck.pattern(0, 0, 4096), fsync=False)
    assert size > block.nbytes


def test_a_failed_write_leaves_no_file_and_no_temporary(tmp_path):
    calls = []

    def broken(n):
        calls.append(n)
        if len(calls) == 3:  # the block and one filler chunk are in the temporary file
            raise OSError("disk full")

    with pytest.raises(OSError):
        ck.write_rank_file(tmp_path / "r.h5", np.ones((4, 4)), ATTRS, 100_000, broken, ck.pattern(0, 0, 1000))
    assert len(calls) == 3 and list(tmp_path.iterdir()) == []


def test_read_counts_exactly_the_asked_bytes_wrapping_around(tmp_path):
    block = np.arange(12.0).reshape(3, 4)
    ck.write_rank_file(tmp_path / "r.h5", block, ATTRS, 10_000, Meter(), ck.pattern(0, 0, 4096), fsync=False)
    meter = Meter()
    got, n = ck.read_rank_file(tmp_path / "r.h5", 50_000, meter, chunk=4096)
    assert n == 50_000 == sum(meter.calls) and np.array_equal(got, block)


def manifest_for(tmp_path: Path, phase: int, ranks: int = 2) -> dict:
    d = ck.checkpoint_dir(tmp_path / "tier", "app", phase)
    for r in range(ranks):
        ck.write_rank_file(ck.rank_file(d, r), np.zeros((2, 2)), ATTRS, 5000, Meter(), ck.pattern(0, r, 4096),
                           fsync=False)
    return ck.make_manifest("app", 4, [2, 1], phase, phase // 2 + 1, 10 * phase, d, ranks)


def test_manifest_commit_then_prune_keeps_only_the_latest_checkpoint(tmp_path):
    first = manifest_for(tmp_path, 1)
    path = ck.manifest_path(tmp_path / "out", "app")
    ck.write_manifest(path, first)
    assert ck.read_manifest(path) == json.loads(json.dumps(first))
    ck.prune(None, first)
    # an interrupted phase 3 left a partial folder; phase 5 then completes
    partial = ck.checkpoint_dir(tmp_path / "tier", "app", 3)
    partial.mkdir()
    (partial / ".rank-00001.h5.tmp99").write_bytes(b"x")
    second = manifest_for(tmp_path, 5)
    ck.write_manifest(path, second)
    ck.prune(first, second)
    assert ck.read_manifest(path)["phase"] == 5 and second["total_bytes"] == 10_000
    assert sorted(p.name for p in (tmp_path / "tier" / "app").iterdir()) == ["ckpt-000005"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["app.manifest.json"]


def test_unreadable_manifests_are_reported(tmp_path):
    assert ck.read_manifest(tmp_path / "none.json") is None
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="unreadable"):
        ck.read_manifest(tmp_path / "bad.json")
    (tmp_path / "old.json").write_text('{"version": 0}')
    with pytest.raises(ValueError, match="unknown format"):
        ck.read_manifest(tmp_path / "old.json")


def test_shares_add_up():
    assert [ck.share(10, 4, r) for r in range(4)] == [3, 3, 2, 2]
    assert sum(ck.share(3_000_001, 3, r) for r in range(3)) == 3_000_001
