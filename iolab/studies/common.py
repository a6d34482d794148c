"""What every study needs: CSV copies of its tables, progress lines (the campaign engine's)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Sequence

from ..atomic import atomic_path
from ..atomic import atomic_write_text  # noqa: F401  (only studies/carretero.py still imports it from here)
from ..campaign.progress import Progress  # noqa: F401  (the studies' progress lines are the campaign's)


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        if rows:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
