"""Checkpoints of the Jacobi app: one HDF5 file per rank, a JSON manifest, atomic updates.

Layout, for app ``A`` and a write phase with index ``P`` granted into ``DIR``::

    DIR/A/ckpt-00000P/rank-00000.h5     one file per rank (serial h5py)
    DIR/A/ckpt-00000P/rank-00001.h5
    OUT/A.manifest.json                 names the latest *complete* checkpoint

Each rank file holds the rank's block ``u`` (float64, its interior unknowns)
and a ``filler`` dataset (uint8, deterministic bytes from the seed) sized so
that the files of all ranks add up to the phase's volume exactly (HDF5's
metadata overhead is measured once with a probe file and subtracted).  Numeric
attributes say where the block sits (``rows``, ``cols``, ``dims``, ...).

Atomicity: a file is written under a hidden temporary name, flushed (and
``fsync``-ed unless disabled) and renamed into place; after a barrier, rank 0
writes the manifest the same way (temp + fsync + ``os.replace``); only then are
the files of the previous checkpoint and leftovers of interrupted ones deleted.
A crash at any point leaves the manifest naming a whole checkpoint.

Modes: checkpoint folders are created 0700 and rank files 0600 (they are the
job's data on a shared tier); the manifest and the summary are records in
the output folder and follow the umask.

Quota: ``write_rank_file(..., quota=Q)`` asks ``Q.reserve(path, nbytes,
paths)`` for the file's bytes before writing a byte (the storage manager's
quota on the job's HPS directory, :mod:`iolab.middleware.storage_client`;
refused with an exception, the file is not written) and ``Q.settle(path)``
once it is in place or abandoned.  :func:`drop` deletes a checkpoint's files
to make room for the next one when both would not fit (the app does it only
when its coordinator says so, see :mod:`iolab.apps.phase_driver`).

Files are opened without HDF5 file locking: each file has one writer and is
only read after it was renamed into place, and locking fails on some parallel
file systems.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from iolab.atomic import remove_stale_temporaries

if TYPE_CHECKING:
    import h5py

MANIFEST_VERSION = 1
DEFAULT_CHUNK = 2 * 1024 * 1024

Throttle = Callable[[int], None]


def _unpaced(n: int) -> None:
    """The throttle of a write no link paces (``throttle=None``): nothing to wait for."""


# -- names ---------------------------------------------------------------------------
def manifest_path(out_dir: str | Path, app_id: str) -> Path:
    return Path(out_dir) / f"{app_id}.manifest.json"


def summary_path(out_dir: str | Path, app_id: str) -> Path:
    """Where rank 0 of the Jacobi app leaves its JSON summary (success or failure)."""
    return Path(out_dir) / f"{app_id}.summary.json"


def checkpoint_dir(directory: str | Path, app_id: str, phase: int) -> Path:
    return Path(directory).resolve() / app_id / f"ckpt-{phase:06d}"


def rank_file(ckpt_dir: Path, rank: int) -> Path:
    return ckpt_dir / f"rank-{rank:05d}.h5"


def share(total: int, size: int, rank: int) -> int:
    """Bytes of ``total`` that ``rank`` writes (the first ``total % size`` ranks one more)."""
    base, extra = divmod(int(total), size)
    return base + (1 if rank < extra else 0)


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def _private_dir(path: Path) -> None:
    """Create ``path`` and its missing parents mode 0700 (the umask cannot widen it)."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    try:
        _fsync_file(path)
    except OSError:  # some file systems refuse fsync on directories
        pass


# -- rank files ------------------------------------------------------------------------
def load_h5py():
    """h5py, imported on the first call: the manifests, names and sizes need none, and a driver or
    a rank that checks its arguments starts without it.  A rank calls it before its first phase
    (h5py takes ~1 s to import on a loaded machine: not inside a timed I/O phase)."""
    import h5py  # lazy: h5py only once a rank is about to run, or a rank file is written or read

    return h5py


def _layout(f: h5py.File, block: np.ndarray, attrs: dict[str, np.ndarray], filler: int) -> h5py.Dataset:
    for key, value in attrs.items():
        f.attrs[key] = value
    f.create_dataset("u", data=block, track_times=False)
    return f.create_dataset("filler", shape=(filler,), dtype=np.uint8, track_times=False)


_overheads: dict[tuple, int] = {}


def metadata_overhead(shape: tuple[int, int], attrs: dict[str, np.ndarray]) -> int:
    """Bytes an HDF5 rank file holds beyond its datasets (measured once per layout)."""
    key = (tuple(shape), tuple((k, np.asarray(v).dtype.str, np.asarray(v).shape) for k, v in sorted(attrs.items())))
    if key not in _overheads:
        block = np.zeros(shape)
        with tempfile.TemporaryDirectory(prefix="iolab-h5probe-") as tmp:
            probe = Path(tmp) / "probe.h5"
            with load_h5py().File(probe, "w", libver="latest", locking=False) as f:
                _layout(f, block, attrs, 1)[0] = 1
            _overheads[key] = probe.stat().st_size - block.nbytes - 1
    return _overheads[key]


def pattern(seed: int, rank: int, nbytes: int) -> np.ndarray:
    """The deterministic filler bytes of one rank (one chunk, repeated)."""
    return np.random.default_rng([seed, rank]).integers(0, 256, size=nbytes, dtype=np.uint8)


def write_rank_file(
    path: Path,
    block: np.ndarray,
    attrs: dict[str, np.ndarray],
    nbytes: int,
    throttle: Throttle | None,
    fill: np.ndarray,
    fsync: bool = True,
    quota: Any = None,
    carried: bool = True,
) -> int:
    """Write one rank's file of ``nbytes`` bytes (at least its block) atomically; return its size.

    ``throttle(n)`` is called before every write of ``n`` bytes (None: no link paces the write), and
    ``throttle(0)`` once the file is in place (a paced writer waits there for the link to carry its last
    bytes; ``carried=False`` leaves that wait to the caller, who may have more to do while the link carries
    them); ``fill`` is one chunk of filler bytes (its size is the chunk size).  The first call books the file's
    header, block and first filler chunk together, before anything else: a paced link carries them
    while the folder is made, the quota answers and the HDF5 file is laid out, instead of idling.
    ``quota``: see the module's doc (reserve the file's bytes before writing any, settle them after).
    The file is 0600, its new folders 0700.
    """
    throttle = throttle or _unpaced
    block = np.ascontiguousarray(block)
    overhead = metadata_overhead(block.shape, attrs)
    filler = max(0, nbytes - overhead - block.nbytes)
    chunk = fill.size
    first = min(chunk, filler)  # filler bytes booked with the header
    throttle(overhead + block.nbytes + first)
    _private_dir(path.parent)
    tmp = _temporary(path)
    if quota is not None:  # before any byte: a refusal leaves nothing on disk
        quota.reserve(str(path), overhead + block.nbytes + filler, [str(path), str(tmp)])
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        os.close(fd)
        with load_h5py().File(tmp, "w", libver="latest", locking=False) as f:
            data = _layout(f, block, attrs, filler)
            if first:
                data[:first] = fill[:first]
            for offset in range(first, filler, chunk):
                n = min(chunk, filler - offset)
                throttle(n)
                data[offset : offset + n] = fill[:n]
        if fsync:
            _fsync_file(tmp)
        os.replace(tmp, path)
        if carried:
            throttle(0)  # the file ends once the link has carried its last bytes (a paced writer's booking)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        if quota is not None:
            quota.settle(str(path))
    return path.stat().st_size


def drop(manifest: dict | None) -> int:
    """Delete the files ``manifest`` names (a checkpoint the next one supersedes, or the
    staged input once read) to make room; returns the bytes freed.  Until the next
    checkpoint is complete there is then none to restart from."""
    freed = 0
    for entry in (manifest or {}).get("files", []):
        p = Path(entry["path"])
        try:
            size = p.stat().st_size
            p.unlink()
            freed += size
        except FileNotFoundError:
            continue
    return freed


def read_rank_file(path: Path, nbytes: int, throttle: Throttle, chunk: int = DEFAULT_CHUNK) -> tuple[np.ndarray, int]:
    """Read ``nbytes`` of dataset bytes from one rank file (``u`` then ``filler``, wrapping around).

    Returns the block ``u`` and the bytes counted (``nbytes``, or the file's
    dataset bytes if ``nbytes`` is 0 or negative).
    """
    with load_h5py().File(path, "r", locking=False) as f:
        u, filler = f["u"], f["filler"]
        row = u.shape[1] * u.dtype.itemsize
        total = u.shape[0] * row + filler.shape[0]
        if total == 0:
            raise ValueError(f"{path}: checkpoint holds no data to read")
        want = total if nbytes <= 0 else int(nbytes)
        block = np.empty(u.shape, dtype=u.dtype)
        done = 0
        while done < want:
            # the block, a few rows at a time
            for r0 in range(0, u.shape[0], max(1, chunk // max(row, 1))):
                if done >= want:
                    break
                r1 = min(u.shape[0], r0 + max(1, chunk // max(row, 1)))
                n = min((r1 - r0) * row, want - done)
                throttle(n)
                block[r0:r1] = u[r0:r1]
                done += n
            # then the filler
            for offset in range(0, filler.shape[0], chunk):
                if done >= want:
                    break
                n = min(chunk, filler.shape[0] - offset, want - done)
                throttle(n)
                filler[offset : offset + n]
                done += n
        throttle(0)  # the read ends once the link has carried its last bytes (a paced reader's booking)
        return block, done


def load_block(path: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The block ``u`` and the attributes of one rank file."""
    with load_h5py().File(path, "r", locking=False) as f:
        return f["u"][...], {k: np.asarray(v) for k, v in f.attrs.items()}


# -- manifest ----------------------------------------------------------------------------
def write_manifest(path: Path, manifest: dict, fsync: bool = True) -> None:
    """Replace the manifest (or any JSON record) atomically (temporary file, fsync, rename).

    Temporary files of an earlier writer of ``path`` that died mid-write go first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    tmp = _temporary(path)
    with open(tmp, "w") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
        fh.flush()
        if fsync:
            os.fsync(fh.fileno())
    os.replace(tmp, path)
    if fsync:
        _fsync_dir(path.parent)


def read_manifest(path: Path) -> dict | None:
    """The manifest, ``None`` if there is none; ``ValueError`` if it is unreadable."""
    try:
        with open(path) as fh:
            manifest = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"checkpoint manifest {path} is unreadable: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION:
        raise ValueError(f"checkpoint manifest {path} has an unknown format")
    return manifest


def make_manifest(app_id: str, grid: int, dims: list[int], phase: int, iteration: int, sweeps: int,
                  ckpt_dir: Path, ranks: int) -> dict:
    """Rank 0, after the barrier: describe the checkpoint in ``ckpt_dir`` (sizes from the files)."""
    files = []
    for rank in range(ranks):
        path = rank_file(ckpt_dir, rank)
        files.append({"rank": rank, "path": str(path), "bytes": path.stat().st_size})
    return {
        "version": MANIFEST_VERSION,
        "app_id": app_id,
        "grid": grid,
        "ranks": ranks,
        "dims": list(dims),
        "phase": phase,
        "iteration": iteration,
        "sweeps": sweeps,
        "directory": str(ckpt_dir),
        "files": files,
        "total_bytes": sum(f["bytes"] for f in files),
        "created": time.time(),
    }


def prune(previous: dict | None, current: dict) -> None:
    """Delete what the new checkpoint ``current`` supersedes.

    That is the files of ``previous`` and every other ``ckpt-*`` folder (left by
    an interrupted phase) next to the current one, plus temporary files.
    """
    keep = {f["path"] for f in current["files"]}
    current_dir = Path(current["directory"])
    if previous:
        for entry in previous["files"]:
            if entry["path"] not in keep:
                Path(entry["path"]).unlink(missing_ok=True)
        old_dir = Path(previous["directory"])
        if old_dir != current_dir and old_dir.is_dir():
            shutil.rmtree(old_dir, ignore_errors=True)
    for other in current_dir.parent.glob("ckpt-*"):
        if other != current_dir and other.is_dir():
            shutil.rmtree(other, ignore_errors=True)
    for stale in current_dir.glob(".*.tmp*"):
        stale.unlink(missing_ok=True)
