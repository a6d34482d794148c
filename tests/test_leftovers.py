"""Leftovers of interrupted writes and the modes of what iolab writes.

A writer SIGKILLed mid-write (real process, real signal) leaves its hidden
temporary file; the next write of the same target removes it, but never the
temporary file of a writer still running.  Checkpoints (rank files 0600, folders
0700) are private whatever the umask; records (manifest, traces) follow it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from iolab.apps import checkpoint
from iolab.atomic import atomic_path, atomic_write_text, remove_stale_temporaries
from iolab.middleware.storage import QuotaExceeded, StorageState

WRITER = textwrap.dedent("""
    import sys, time
    from iolab.atomic import atomic_path
    with atomic_path(sys.argv[1]) as tmp:
        with open(tmp, "wb") as f:
            f.write(b"x" * 1_000_000)
            f.flush()
            print("writing", flush=True)
            time.sleep(60)
""")


def start_writer(target: Path) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "writing"
    return p


def temporaries(target: Path) -> list[Path]:
    return sorted(target.parent.glob(f".{target.name}.*.tmp"))


def test_a_sigkilled_writer_leaves_a_temporary_the_next_write_removes(tmp_path):
    target = tmp_path / "trace.h5"
    p = start_writer(target)
    p.send_signal(signal.SIGKILL)
    p.wait()
    left = temporaries(target)
    assert len(left) == 1 and left[0].stat().st_size == 1_000_000 and not target.exists()
    older = tmp_path / ".trace.h5.k2x_9qzp.tmp"  # the name iolab gave before it named the writer's pid
    older.write_bytes(b"y")
    atomic_write_text(target, "complete")
    assert temporaries(target) == [] and target.read_text() == "complete"


def test_the_temporary_of_a_writer_still_running_is_kept(tmp_path):
    target = tmp_path / "trace.h5"
    p = start_writer(target)
    try:
        atomic_write_text(target, "mine")
        assert len(temporaries(target)) == 1  # the live writer's file is left alone
        assert target.read_text() == "mine"
    finally:
        p.kill()
        p.wait()
    assert len(remove_stale_temporaries(target)) == 1  # its writer is gone now
    assert temporaries(target) == []


def test_stale_checkpoint_temporaries_go_with_the_next_manifest(tmp_path):
    path = tmp_path / "app.manifest.json"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".app.manifest.json.tmp{int(dead.stdout)}"
    stale.write_text("{half")
    other = tmp_path / ".other.json.tmp1"  # another target's: not ours to remove
    other.write_text("x")
    checkpoint.write_manifest(path, {"version": 1}, fsync=False)
    assert not stale.exists() and other.exists()


def test_checkpoints_are_private_and_records_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        ckpt = checkpoint.checkpoint_dir(tmp_path / "tier", "app", 3)
        f = checkpoint.rank_file(ckpt, 0)
        size = checkpoint.write_rank_file(f, np.zeros((4, 4)), {}, 50_000, lambda n: None,
                                          checkpoint.pattern(0, 0, 4096), fsync=False)
        checkpoint.write_manifest(tmp_path / "out" / "app.manifest.json", {"version": 1}, fsync=False)
        with atomic_path(tmp_path / "out" / "t.h5") as tmp:
            tmp.write_bytes(b"x")
    finally:
        os.umask(old)
    assert size == 50_000
    assert f.stat().st_mode & 0o777 == 0o600
    for d in (ckpt, ckpt.parent):  # tier/app/ckpt-000003 and tier/app: created private
        assert d.stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "out" / "app.manifest.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "out" / "t.h5").stat().st_mode & 0o777 == 0o644


class Quota:
    """The job side of the quota, straight on a storage manager's state (no Ray)."""

    def __init__(self, state: StorageState, job: str):
        self.state, self.job = state, job

    def reserve(self, path, nbytes, paths):
        self.state.reserve(self.job, path, nbytes, paths, 0.0)

    def settle(self, path):
        self.state.settle(self.job, path)


def test_the_checkpoint_writer_reserves_before_writing_and_a_refusal_writes_nothing(tmp_path):
    s = StorageState(tmp_path / "lps", tmp_path / "hps", 1_000_000)
    s.allocate("j", 120_000, 0.0)
    d = s.open_dir("hps", "j")
    q = Quota(s, "j")
    fill = checkpoint.pattern(0, 0, 4096)
    a = checkpoint.rank_file(checkpoint.checkpoint_dir(d, "app", 1), 0)
    assert checkpoint.write_rank_file(a, np.zeros((2, 2)), {}, 100_000, lambda n: None, fill, False, quota=q) == 100_000
    assert s.in_use("j") == 100_000 and s.reservations["j"] == {}
    b = checkpoint.rank_file(checkpoint.checkpoint_dir(d, "app", 2), 0)
    with pytest.raises(QuotaExceeded, match="past its allocation of 120000 B"):
        checkpoint.write_rank_file(b, np.zeros((2, 2)), {}, 30_000, lambda n: None, fill, False, quota=q)
    assert not b.exists() and list(b.parent.iterdir()) == []  # not a byte
    assert checkpoint.drop({"files": [{"path": str(a)}]}) == 100_000  # making room, as the app does
    assert checkpoint.write_rank_file(b, np.zeros((2, 2)), {}, 30_000, lambda n: None, fill, False, quota=q) == 30_000
