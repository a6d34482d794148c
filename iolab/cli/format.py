"""Plain-text tables and JSON output for the command line."""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

from iolab.units import cell, column_formats, decimals_for, fmt, seconds  # re-exported: the command line's formatters


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
