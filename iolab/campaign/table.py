"""The results table of a study run as a campaign: columns come from the rows the runs return.

A study's run (:mod:`.study`) returns one row or several (a dict of plain
values each) and, optionally, rows of further named tables (monniot2023's
per-disk rows).  Its journal record keeps them as JSON, with non-finite floats
written as ``{"$float": "inf"}`` (JSON has no infinity; carretero2020's First-Fit
has sensibility infinity).  The table has one line per returned row, in campaign
order, prefixed by the run's ``index``, ``run_id``, ``status`` and ``error`` and
followed by ``task_seconds`` (the task's wall time) and ``host``; a failed run
has one line with only those.  The columns keep the order of the study's rows
(the record lists it: JSON objects in the journal have sorted keys).  Column kinds are inferred from the values: bool, int, float (an int
column that also holds floats is float), str.  Missing values are NaN (floats),
-1 (ints), False (bools) or "" (strings), as in a sweep's table.

The file layout is a sweep's (``/`` attributes, ``/runs/<column>``) plus an
attribute ``study`` and, per table group, an attribute ``columns`` (JSON list
of ``[name, kind]`` in table order); further tables are groups ``/<name>/<column>``
whose lines start with the run's ``index`` and ``run_id``.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable

import numpy as np

PREFIX = (("index", "int"), ("run_id", "str"), ("status", "str"), ("error", "str"))
SUFFIX = (("task_seconds", "float"), ("host", "str"))
TABLE_PREFIX = (("index", "int"), ("run_id", "str"))
MISSING = {"str": "", "int": -1, "float": math.nan, "bool": False}
DTYPE = {"str": object, "int": np.int64, "float": np.float64, "bool": np.bool_}
NONDETERMINISTIC = ("task_seconds", "host", "wall_seconds", "seconds", "sim_seconds")


# ---- JSON encoding of rows (journal side)

def encode(value: Any) -> Any:
    """A row value as JSON data: numpy scalars to Python, non-finite floats to ``{"$float": "inf"}``."""
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$float"}:
        return float(value["$float"])
    if isinstance(value, dict):
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


# ---- columns

def _kind(values: Iterable[Any]) -> str:
    kinds = set()
    for v in values:
        if v is None:
            continue
        if isinstance(v, bool):
            kinds.add("bool")
        elif isinstance(v, int):
            kinds.add("int")
        elif isinstance(v, float):
            kinds.add("float")
        else:
            kinds.add("str")
    if not kinds:
        return "float"
    if kinds <= {"bool"}:
        return "bool"
    if kinds <= {"int"}:
        return "int"
    if kinds <= {"int", "float"}:
        return "float"
    return "str"


def _cell(value: Any, kind: str) -> Any:
    if value is None:
        return MISSING[kind]
    if kind == "str":
        return str(value)
    if kind == "bool":
        return bool(value)
    return int(value) if kind == "int" else float(value)


def columns_of(rows: list[dict[str, Any]], fixed: tuple[tuple[str, str], ...] = (),
               order: Iterable[str] = ()) -> list[tuple[str, str]]:
    """``fixed`` columns, then ``order``, then every other key in order of first appearance, with its inferred kind."""
    names: dict[str, None] = {}
    skip = {n for n, _ in fixed}
    for n in order:
        if n not in skip:
            names.setdefault(n, None)
    for r in rows:
        for k in r:
            if k not in skip:
                names.setdefault(k, None)
    return list(fixed) + [(n, _kind(r.get(n) for r in rows)) for n in names]


def make_table(rows: list[dict[str, Any]], prefix, suffix=(), order: Iterable[str] = ()):
    """([(column, kind)], {column: array}) of ``rows``."""
    middle = [c for c in columns_of(rows, order=order) if c[0] not in {n for n, _ in (*prefix, *suffix)}]
    cols = list(prefix) + middle + list(suffix)
    data = {n: np.array([_cell(r.get(n), k) for r in rows], dtype=DTYPE[k]) for n, k in cols}
    return cols, data


def record_output(rec: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The rows and further tables of a study run's record, decoded."""
    return [decode(r) for r in rec.get("rows", [])], {k: [decode(r) for r in v]
                                                     for k, v in (rec.get("tables") or {}).items()}


def build(manifest: dict[str, Any], records: dict[str, dict[str, Any]]):
    """(columns, attrs, tables) of a study campaign: its runs that have a record, in campaign order."""
    rows: list[dict[str, Any]] = []
    tables: dict[str, list[dict[str, Any]]] = {}
    order: dict[str, dict[str, None]] = {}
    finished = failed = 0
    for r in manifest["runs"]:
        rec = records.get(r["run_id"])
        if rec is None:
            continue
        finished += 1
        head = {"index": r["index"], "run_id": r["run_id"], "status": rec["status"], "error": rec.get("error", "")}
        tail = {"task_seconds": rec.get("wall_seconds"), "host": rec.get("host", "")}
        for name, cols in (rec.get("columns") or {}).items():
            order.setdefault(name, {}).update(dict.fromkeys(cols))
        out_rows, out_tables = record_output(rec) if rec["status"] == "ok" else ([], {})
        if rec["status"] != "ok":
            failed += 1
        for row in out_rows or [{}]:
            rows.append({**head, **row, **tail})
        for name, trs in out_tables.items():
            tables.setdefault(name, []).extend({"index": r["index"], "run_id": r["run_id"], **t} for t in trs)
    cols, data = make_table(rows, PREFIX, SUFFIX, order.get("runs", ()))
    extra = {name: make_table(trs, TABLE_PREFIX, (), order.get(name, ())) for name, trs in tables.items()}
    attrs = {"iolab_campaign_results": 1, "campaign": manifest["name"], "study": manifest["study"],
             "campaign_spec": json.dumps(manifest.get("spec", {}), sort_keys=True),
             "total_runs": len(manifest["runs"]), "finished": finished, "failed": failed,
             "pending": len(manifest["runs"]) - finished}
    return data, attrs, {"runs": cols, **{n: c for n, (c, _) in extra.items()}}, {n: d for n, (_, d) in extra.items()}


# ---- HDF5

def write_group(f, name: str, cols: list[tuple[str, str]], data: dict[str, np.ndarray]) -> None:
    import h5py  # lazy: h5py only when a results file is read or written

    g = f.create_group(name)
    g.attrs["columns"] = json.dumps([list(c) for c in cols])
    for c, kind in cols:
        if kind == "str":
            g.create_dataset(c, data=np.asarray(data[c], dtype=object), dtype=h5py.string_dtype("utf-8"))
        else:
            g.create_dataset(c, data=np.asarray(data[c], dtype=DTYPE[kind]))


def read_group(g) -> tuple[list[tuple[str, str]], dict[str, np.ndarray]]:
    cols = [tuple(c) for c in json.loads(g.attrs["columns"])]
    data = {c: (np.array(g[c].asstr()[()], dtype=object) if k == "str" else g[c][()]) for c, k in cols}
    return cols, data


def is_generic(f) -> bool:
    """A results file whose table columns are listed in the file (a study's)."""
    return "runs" in f and "columns" in f["runs"].attrs
