"""Plain-text tables and JSON output for the command line."""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

from iolab.units import format_duration


def fmt(v: Any, digits: int = 4) -> str:
    """One value on its own: an integer with thousands separators, a float with ``digits``
    significant digits (never in scientific notation: 13 860 is ``13,860``), nan as ``-``."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int) or (hasattr(v, "dtype") and getattr(v.dtype, "kind", "") in "iu"):
        return f"{int(v):,}"
    if isinstance(v, float) or hasattr(v, "dtype"):
        v = float(v)
        if math.isnan(v):
            return "-"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:,.{decimals_for(abs(v), digits)}f}"
    return str(v)


def decimals_for(magnitude: float, digits: int = 4) -> int:
    """Decimals that give a number of this magnitude about ``digits`` significant digits (none
    from ``10**digits`` up, at most ``digits + 2`` below 1)."""
    if magnitude == 0 or not math.isfinite(magnitude):
        return 0
    return max(0, min(digits + 2, digits - 1 - math.floor(math.log10(magnitude))))


def column_formats(rows: Sequence[Sequence[Any]], digits: int = 4) -> list[int | None]:
    """Per column, the decimals its floats are written with: the same for the whole column, those
    its largest value needs for ``digits`` significant digits, none when every value is whole
    (None: a column without floats)."""
    out: list[int | None] = []
    for col in zip(*rows) if rows else []:
        vals = [abs(float(c)) for c in col if isinstance(c, float) and math.isfinite(c)]
        floats = any(isinstance(c, float) for c in col)
        if vals and all(v == int(v) for v in vals):  # whole numbers: no decimals to show
            out.append(0)
        else:
            out.append(decimals_for(max(vals), digits) if vals else (0 if floats else None))
    return out


def cell(v: Any, decimals: int | None) -> str:
    if isinstance(v, float) and decimals is not None:
        if math.isnan(v):
            return "-"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:,.{decimals}f}"
    return fmt(v)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 4, per_row: bool = False) -> str:
    """A plain-text table: text left-aligned in the first column, numbers right-aligned, each
    column's floats with the same decimals (:func:`column_formats`), thousands separated.
    ``per_row``: each row holds one quantity (its statistics in the columns), so the decimals are
    the same along a row instead."""
    rows = [[float(c) if hasattr(c, "dtype") and getattr(c.dtype, "kind", "") == "f" else c for c in r] for r in rows]
    if per_row:
        decs_of_row = [column_formats([[c] for c in r[1:]], digits)[0] if len(r) > 1 else None for r in rows]
        cells = [[cell(c, decs_of_row[k] if i else None) for i, c in enumerate(r)] for k, r in enumerate(rows)]
    else:
        decs = column_formats(rows, digits)
        cells = [[cell(c, decs[i]) for i, c in enumerate(r)] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = lambda r: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
    out = [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    return "\n".join(out)


def seconds(v: float, digits: int = 4) -> str:
    """A time: ``h:mm:ss`` from a minute on (``1:23:20``, ``3 d 4:05:06``), else seconds with
    their unit (``12.35 s``); nan as ``-``."""
    v = float(v)
    if math.isnan(v):
        return "-"
    if abs(v) >= 60 or math.isinf(v):
        return format_duration(v)
    return f"{int(v)} s" if v == int(v) else f"{fmt(v, digits)} s"


def dumps(obj: Any) -> str:
    def clean(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x

    def other(x):  # numpy scalars and arrays, paths
        if hasattr(x, "tolist"):
            return clean(x.tolist())
        return str(x)

    return json.dumps(clean(obj), indent=2, default=other)
