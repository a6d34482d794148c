"""Batsim's interval sets: a set of resource ids written ``"0-3 7 9-10"`` (docs/interval-set.rst of Batsim 4).

Intervals are closed (``a-b`` holds a and b), separated by spaces; any representation of a set is read (unsorted,
overlapping, ``a-a``), and :func:`format_ids` writes the canonical one (disjoint, maximal, sorted, ``a`` for a
one-element interval), the one every Batsim implementation reads and writes alike.
"""

from __future__ import annotations

import re
from typing import Iterable

_INTERVAL = re.compile(r"(\d+)(?:-(\d+))?\Z")
MAX_IDS = 10_000_000  # ids one set may hold: a larger one is a typo (0-99999999999), not a machine


def parse_ids(text: str) -> tuple[int, ...]:
    """The ids of the interval set ``text``, sorted and distinct; ValueError saying what is wrong."""
    if not isinstance(text, str):
        raise ValueError(f"an interval set is a string such as \"0-3 7\", got {text!r}")
    ids: set[int] = set()
    parts = text.split()
    if not parts:
        raise ValueError("an empty interval set")
    for part in parts:
        m = _INTERVAL.match(part)
        if m is None:
            raise ValueError(f"{part!r} is not an interval (a or a-b, non-negative integers)")
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) is not None else a
        if b < a:
            raise ValueError(f"{part!r}: the interval ends before it starts")
        if b - a + 1 + len(ids) > MAX_IDS:
            raise ValueError(f"{part!r}: more than {MAX_IDS:,} ids")
        ids.update(range(a, b + 1))
    return tuple(sorted(ids))


def format_ids(ids: Iterable[int]) -> str:
    """The canonical interval set of ``ids``: ``[0, 1, 2, 5]`` -> ``"0-2 5"``."""
    out: list[str] = []
    run_start = prev = None
    for x in sorted(set(ids)):
        if prev is not None and x == prev + 1:
            prev = x
            continue
        if run_start is not None:
            out.append(f"{run_start}-{prev}" if prev != run_start else str(run_start))
        run_start = prev = x
    if run_start is not None:
        out.append(f"{run_start}-{prev}" if prev != run_start else str(run_start))
    return " ".join(out)


__all__ = ["MAX_IDS", "format_ids", "parse_ids"]
