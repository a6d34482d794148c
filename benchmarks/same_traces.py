"""Are two sets of traces the same run?  Compares every table column by column, and the
attributes except the ones that name the run (time stamps, versions, host).

usage: python benchmarks/same_traces.py BEFORE AFTER     (two .h5 files, or two directories:
       every *.h5 of BEFORE against the file of the same name in AFTER)

Prints one line per file: ``same`` or the first differences (table, column, rows, values);
exits 1 if any differ.  Used to show that a refactoring changed no decision.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from iolab.trace import read_trace

IGNORED_ATTRS = {"created", "iolab_version", "python", "host", "versions", "wall_seconds", "command"}


def differences(a_path: Path, b_path: Path, limit: int = 5) -> list[str]:
    a, b = read_trace(a_path), read_trace(b_path)
    out: list[str] = []
    ta, tb = a.as_dict(), b.as_dict()
    for table in sorted(set(ta) | set(tb)):
        ca, cb = ta.get(table, {}), tb.get(table, {})
        for col in sorted(set(ca) | set(cb)):
            if col not in ca or col not in cb:
                out.append(f"{table}.{col}: only in {'after' if col in cb else 'before'}")
                continue
            x, y = np.asarray(ca[col]), np.asarray(cb[col])
            if x.shape != y.shape:
                out.append(f"{table}.{col}: {x.shape[0]} rows before, {y.shape[0]} after")
                continue
            if x.dtype.kind == "f" and y.dtype.kind == "f":
                bad = ~((x == y) | (np.isnan(x) & np.isnan(y)))
            else:
                bad = x != y
            if np.any(bad):
                rows = np.flatnonzero(bad)
                shown = ", ".join(f"row {r}: {x[r]!r} -> {y[r]!r}" for r in rows[:3])
                out.append(f"{table}.{col}: {rows.size} rows differ ({shown})")
    aa, ab = getattr(a, "attrs", {}), getattr(b, "attrs", {})
    for k in sorted((set(aa) | set(ab)) - IGNORED_ATTRS):
        va, vb = aa.get(k), ab.get(k)
        same = np.array_equal(np.asarray(va, dtype=object), np.asarray(vb, dtype=object)) if va is not None and vb is not None else va is vb
        if not same and str(va) != str(vb):
            out.append(f"attr {k}: {str(va)[:60]!r} -> {str(vb)[:60]!r}")
    return out[:limit] + ([f"... {len(out) - limit} more"] if len(out) > limit else [])


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    before, after = map(Path, argv)
    pairs = ([(p, after / p.name) for p in sorted(before.glob("*.h5"))] if before.is_dir() else [(before, after)])
    bad = 0
    for p, q in pairs:
        if not q.exists():
            print(f"{p.name}: missing in {after}")
            bad += 1
            continue
        diff = differences(p, q)
        print(f"{p.name}: " + ("same" if not diff else "DIFFERENT\n  " + "\n  ".join(diff)))
        bad += bool(diff)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
