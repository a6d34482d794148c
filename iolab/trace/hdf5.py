"""Trace files: HDF5 (h5py), one group per table and one dataset per column.

h5py is imported by the two functions that touch a file, so building, simulating and
measuring a trace in memory (every simulation, every study) never loads it.

Files are written to a temporary name beside the target and renamed, so a
reader never sees half a trace.  Attributes that are not scalars (the spec,
versions) are stored as JSON strings.
"""

from __future__ import annotations

import json
import mmap
import struct
from pathlib import Path
from typing import Any

import numpy as np

from iolab.atomic import atomic_path
from iolab.errors import TraceError
from iolab.specs.base import not_a_file
from iolab.trace.model import Table, Trace
from iolab.trace.schema import ADDED_COLUMNS, SCHEMA_VERSION, TABLES

def _attr_value(v: Any) -> Any:
    if isinstance(v, (str, int, float, bool, np.integer, np.floating)):
        return v
    return "json:" + json.dumps(v, default=str, sort_keys=True)


def _attr_load(v: Any) -> Any:
    if isinstance(v, bytes):
        v = v.decode()
    if isinstance(v, str) and v.startswith("json:"):
        return json.loads(v[5:])
    if isinstance(v, np.generic):
        return v.item()
    return v


def check_tables(trace: Trace) -> None:
    """Refuse a trace whose tables do not fit the schema (before touching the disk)."""
    for name, cols in TABLES.items():
        table = trace.tables.get(name)
        if table is None:
            continue
        lengths = {c: len(table.columns[c]) for c, _ in cols if c in table.columns}
        missing = [c for c, _ in cols if c not in table.columns]
        if missing:
            raise TraceError(f"table {name} lacks column(s) {missing}")
        if len(set(lengths.values())) > 1:
            raise TraceError(f"table {name}: columns differ in length {lengths}")
        for c, kind in cols:
            if kind != "str" and table.columns[c].dtype.kind not in "iufb":
                raise TraceError(f"table {name}: column {c} must be numeric, got {table.columns[c].dtype}")


def write_trace(trace: Trace, path: str | Path) -> Path:
    """Write atomically (temporary file, then rename); returns the path."""
    path = Path(path)
    check_tables(trace)
    import h5py  # lazy: h5py only when a trace file is written, not for a run kept in memory

    str_dtype = h5py.string_dtype(encoding="utf-8")
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        f.attrs["iolab_trace_schema"] = SCHEMA_VERSION
        for k, v in trace.attrs.items():
            f.attrs[k] = _attr_value(v)
        for name, cols in TABLES.items():
            g = f.create_group(name)
            table = trace.tables.get(name) or Table.empty(name)
            g.attrs["rows"] = len(table)
            for c, kind in cols:
                data = table.columns[c]
                if kind == "str":
                    g.create_dataset(c, data=np.asarray(data, dtype=object).astype(str).astype(object)
                                     if len(data) else np.array([], dtype=object), dtype=str_dtype)
                else:
                    g.create_dataset(c, data=data, compression="gzip" if len(data) > 4096 else None)
    return path


_MISSING = {"int": -1, "float": np.nan}


def read_trace(path: str | Path) -> Trace:
    """Read a trace written by :func:`write_trace` (either runtime)."""
    path = Path(path)
    why = not_a_file(path, "trace file")
    if why:
        raise TraceError(f"{path}: {why}")
    bad = damaged_global_heap(path)
    if bad is not None:  # HDF5 itself can loop forever on such a heap: refused before it reads it
        raise TraceError(f"{path}: damaged trace file (the global heap collection at byte {bad} is inconsistent)")
    import h5py  # lazy: h5py only when a trace file is read

    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise TraceError(f"{path}: not an HDF5 file ({exc})") from None
    try:
        with f:
            return _read_open(f, path)
    except TraceError:
        raise
    except (OSError, KeyError, ValueError, TypeError, IndexError, RuntimeError, UnicodeDecodeError,
            OverflowError, RecursionError, AttributeError, SystemError) as exc:
        # a damaged file: h5py/HDF5 report a bad checksum, a broken B-tree, a bad filter or a bad
        # attribute in many ways; all mean the same to the user
        raise TraceError(f"{path}: damaged trace file ({type(exc).__name__}: {str(exc)[:200]})") from None


def damaged_global_heap(path: Path) -> int | None:
    """The offset of the first inconsistent HDF5 global heap collection of ``path`` (None if all are
    consistent).  The variable-length strings of a trace (its text attributes and columns) live in
    such collections (``GCOL``: signature, version 1, three zero bytes, size of at least 4 KiB; then objects of a 16-byte header, index,
    reference count, size, and the data padded to 8 bytes; index 0 is the free space, the rest of the
    collection).  A damaged object size makes libhdf5 walk off the collection and, on some bytes, never
    return: a flipped byte in a trace hung ``iolab report``.  The walk here reads the headers only."""
    with open(path, "rb") as fh:
        try:
            d = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file: h5py names it
            return None
        with d:
            n = len(d)
            i = d.find(b"GCOL")
            while i >= 0:
                if i + 16 > n:
                    return None
                (size,) = struct.unpack_from("<Q", d, i + 8)
                end = i + size
                if d[i + 4:i + 8] != b"\x01\x00\x00\x00" or size < 4096:
                    # not a collection header (libhdf5 makes none under 4 KiB): the four letters in data
                    i = d.find(b"GCOL", i + 4)
                    continue
                if end > n:
                    return i
                p = i + 16
                while p + 16 <= end:
                    idx, _, _, osz = struct.unpack_from("<HHIQ", d, p)
                    if idx == 0:  # the free space: the rest of the collection, its header included
                        if p + osz != end:
                            return i
                        p = end
                        break
                    p += 16 + ((osz + 7) & ~7)
                if p > end:  # the last object runs past the collection (a tail under 16 bytes is unused)
                    return i
                i = d.find(b"GCOL", max(end, i + 4))
    return None


def _read_open(f, path: Path) -> Trace:
    if "iolab_trace_schema" not in f.attrs:
        raise TraceError(f"{path}: not an iolab trace (no iolab_trace_schema attribute)")
    version = int(f.attrs["iolab_trace_schema"])
    if version > SCHEMA_VERSION:
        raise TraceError(f"{path}: trace schema {version} is newer than this iolab ({SCHEMA_VERSION})")
    attrs = {k: _attr_load(v) for k, v in f.attrs.items()}
    tables = {}
    for name, cols in TABLES.items():
        if name not in f:
            tables[name] = Table.empty(name)
            continue
        g = f[name]
        columns = {}
        n = next((len(g[c]) for c, _ in cols if c in g), 0)
        for c, kind in cols:
            if c not in g and (name, c) in ADDED_COLUMNS:  # a trace written before the column existed
                columns[c] = np.full(n, "", dtype=object) if kind == "str" else np.full(n, _MISSING[kind])
                continue
            if c not in g:
                raise TraceError(f"{path}: table {name} lacks column {c}")
            if kind == "str":
                columns[c] = np.array(g[c].asstr()[()], dtype=object)
            else:
                columns[c] = g[c][()]
                if columns[c].dtype.kind not in "iufb" or columns[c].ndim != 1:
                    raise TraceError(f"{path}: table {name}: column {c} is not a numeric column")
        lengths = {len(v) for v in columns.values()}
        if len(lengths) > 1:
            raise TraceError(f"{path}: table {name}: columns differ in length")
        tables[name] = Table(name, columns)
    return Trace(tables, attrs)
