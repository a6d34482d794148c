"""What every study needs: CSV copies of its tables, and the content hash of the data files it reads."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path
from typing import Any, Sequence

from iolab.atomic import atomic_path


def file_sha256(path: str | Path) -> str:
    """A data file's content hash: part of a run's arguments, so a changed file means new runs."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def check_unchanged(path: str | Path, sha256: str) -> None:
    """Refuse a data file whose content changed since its campaign was expanded."""
    if file_sha256(path) != sha256:
        raise ValueError(f"{path} changed since the campaign was expanded (its SHA-256 differs)")


def write_csv(path: Path, rows: Sequence[dict[str, Any]], columns: Sequence[str] = ()) -> None:
    """``rows`` as CSV (the first row's keys are the header); with no rows, ``columns`` alone as the
    header (a file a spreadsheet or pandas opens), else an empty file."""
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        if not rows and columns:
            csv.writer(f).writerow(columns)
        if rows:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
