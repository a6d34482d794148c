"""The journal: one JSON line per finished run, the source of truth of a campaign.

Lines are appended, flushed and fsynced one by one, so a crash or a SIGKILL
loses at most the line being written.  Such a torn last line (no newline, or
not valid JSON) is never trusted: :meth:`Journal.load` ignores it and
:meth:`Journal.open` cuts it off before appending.  If a run appears twice
(``--retry-failed``), the last line wins.

A line that is not a record of the expected shape (an edit by hand, a
foreign file) is not trusted either: it is skipped, counted in
:attr:`Journal.ignored`, and its line number and reason kept in
:attr:`Journal.problems` (the callers report them); the run it names runs again.
"""

from __future__ import annotations

import json
import os
import math
from pathlib import Path
from typing import Any

_SCALAR = (str, int, float, bool, type(None))


def record_problem(rec: Any, nested_params: bool = False) -> str | None:
    """Why ``rec`` is not a journal record, or None if it is one.  A sweep run's params are plain
    values (they become results columns); a study run's (``nested_params``) nest, its workload's."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    if not isinstance(rec.get("run_id"), str) or not rec["run_id"]:
        return "no run_id"
    if rec.get("status") not in ("ok", "failed"):
        return f"status {rec.get('status')!r} is neither ok nor failed"
    for part in ("params", "metrics"):
        v = rec.get(part, {})
        if not isinstance(v, dict):
            return f"{part} is not a mapping"
        if not (part == "params" and nested_params) and not all(isinstance(x, _SCALAR) for x in v.values()):
            return f"{part} is not a mapping of plain values"
    rows = rec.get("rows", [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return "rows is not a list of mappings"
    for k, v in rec.get("metrics", {}).items():
        if v is not None and (isinstance(v, (str, bool)) or not math.isfinite(float(v))):
            return f"metric {k} is not a finite number: {v!r}"
    return None


class Journal:
    def __init__(self, path: str | Path, nested_params: bool = False):
        self.path = Path(path)
        self.nested_params = nested_params  # a study's journal (see record_problem)
        self._f = None
        self.ignored = 0  # unreadable lines met by the last load()
        self.problems: list[tuple[int, str]] = []  # (line number, reason) of those lines

    def load(self) -> dict[str, dict[str, Any]]:
        """run id -> last complete record."""
        out: dict[str, dict[str, Any]] = {}
        self.ignored = 0
        self.problems = []
        if not self.path.exists():
            return out
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        complete, tail = lines[:-1], lines[-1]  # tail: empty, or a torn line
        if tail.strip():
            self.problems.append((len(lines), "incomplete last line (a run stopped while being recorded)"))
        for n, line in enumerate(complete, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                why = record_problem(rec, self.nested_params)
            except (ValueError, TypeError, RecursionError) as exc:  # not JSON, not UTF-8, a huge integer
                why = f"not a JSON record ({str(exc)[:80]})"
            if why is None:
                out[rec["run_id"]] = rec
            else:
                self.problems.append((n, why))
        self.ignored = len(self.problems)
        return out

    def open(self) -> "Journal":
        """Open for appending, first cutting off a torn last line."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):
                keep = data.rfind(b"\n") + 1
                with open(self.path, "r+b") as f:
                    f.truncate(keep)
                    f.flush()
                    os.fsync(f.fileno())
        self._f = open(self.path, "a", encoding="utf-8")
        return self

    def append(self, record: dict[str, Any]) -> None:
        if self._f is None:
            self.open()
        self._f.write(json.dumps(record, sort_keys=True, allow_nan=False, default=str) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def __enter__(self) -> "Journal":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()
