"""Where the real input data lives (../shared/data beside the repository), and its checksums."""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("IOLAB_SHARED_DATA", REPO.parent / "shared" / "data"))
CHECKSUMS = Path(__file__).resolve().parent / "data" / "shared-data.sha256"  # `sha256sum -c` reads it too


def expected_sha256() -> dict[str, str]:
    """File name -> the SHA-256 the tests' figures were written for (README.md, "Input data")."""
    out = {}
    for line in CHECKSUMS.read_text().splitlines():
        digest, _, name = line.partition("  ")
        out[name.strip()] = digest
    return out


@functools.lru_cache(maxsize=None)
def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def shared_file(name: str) -> Path:
    """A file of ../shared/data, or skip the test saying where it was looked for; a file whose content is not
    the one the tests were written for fails the test, saying so (their figures would not hold)."""
    path = SHARED_DATA / name
    if not path.is_file():
        pytest.skip(f"{name} not found in {SHARED_DATA} (set IOLAB_SHARED_DATA to the folder holding it; "
                    "README.md, 'Input data', says where each file comes from)")
    want = expected_sha256().get(name)
    if want is not None and sha256_of(path) != want:
        pytest.fail(f"{path}: SHA-256 {sha256_of(path)}, not the {want} the tests were written for "
                    "(`make check-data`; README.md, 'Input data')")
    return path
