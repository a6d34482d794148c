"""The journal: one JSON line per finished run, the source of truth of a campaign.

Lines are appended, flushed and fsynced one by one, so a crash or a SIGKILL
loses at most the line being written.  Such a torn last line (no newline, or
not valid JSON) is never trusted: :meth:`Journal.load` ignores it and
:meth:`Journal.open` cuts it off before appending.  If a run appears twice
(``--retry-failed``), the last line wins.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class Journal:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._f = None
        self.ignored = 0  # unreadable lines met by the last load()

    def load(self) -> dict[str, dict[str, Any]]:
        """run id -> last complete record."""
        out: dict[str, dict[str, Any]] = {}
        self.ignored = 0
        if not self.path.exists():
            return out
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        complete, tail = lines[:-1], lines[-1]  # tail: empty, or a torn line
        self.ignored += bool(tail.strip())
        for line in complete:
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                self.ignored += 1
                continue
            if isinstance(rec, dict) and isinstance(rec.get("run_id"), str) and rec.get("status") in ("ok", "failed"):
                out[rec["run_id"]] = rec
            else:
                self.ignored += 1
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
