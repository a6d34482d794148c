"""Plain-text tables and JSON output for the command line."""

from __future__ import annotations

import json
import math
from typing import Any, Sequence


def fmt(v: Any, digits: int = 4) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        return f"{v:.{digits}g}" if abs(v) < 1e6 else f"{v:.6g}"
    return str(v)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 4) -> str:
    cells = [[fmt(c, digits) for c in r] for r in rows]
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
