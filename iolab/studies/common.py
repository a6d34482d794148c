"""What every study needs: CSV files, progress lines, a process pool."""

from __future__ import annotations

import csv
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..atomic import atomic_path
from ..atomic import atomic_write_text  # noqa: F401  (only studies/carretero.py still imports it from here)


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        if rows:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


class Progress:
    """``[ 12/120] 10% elapsed 3.1s eta 27.9s  label`` lines on stderr."""

    def __init__(self, total: int, label: str = "", stream=None, every: float = 1.0):
        self.total, self.label, self.stream = total, label, stream or sys.stderr
        self.done = 0
        self.t0 = time.monotonic()
        self.every = every
        self._last = -1e9

    def step(self, note: str = "") -> None:
        self.done += 1
        now = time.monotonic()
        if now - self._last < self.every and self.done < self.total:
            return
        self._last = now
        el = now - self.t0
        eta = el / self.done * (self.total - self.done) if self.done else float("nan")
        pct = 100 * self.done / self.total if self.total else 100
        w = len(str(self.total))
        print(f"[{self.done:>{w}}/{self.total}] {pct:3.0f}% elapsed {el:.1f}s eta {eta:.1f}s  {self.label} {note}",
              file=self.stream, flush=True)


def run_parallel(fn: Callable, tasks: Iterable[tuple], jobs: int, progress: Progress | None = None) -> list:
    """Apply ``fn(*task)`` to every task; results in task order."""
    tasks = list(tasks)
    if jobs <= 1:
        out = []
        for t in tasks:
            out.append(fn(*t))
            if progress:
                progress.step()
        return out
    results: list = [None] * len(tasks)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futs = {pool.submit(fn, *t): i for i, t in enumerate(tasks)}
        for fut in as_completed(futs):
            results[futs[fut]] = fut.result()
            if progress:
                progress.step()
    return results
