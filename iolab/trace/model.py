"""In-memory traces: columnar tables built row by row (or column-wise), then frozen to numpy."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from iolab.trace.schema import TABLES

_NP = {"str": object, "int": np.int64, "float": np.float64}


@dataclass
class Table:
    """Equally long named columns (numpy arrays; strings are object arrays)."""

    name: str
    columns: dict[str, np.ndarray]

    def __len__(self) -> int:
        first = next(iter(self.columns.values()), None)
        return 0 if first is None else len(first)

    def __getitem__(self, column: str) -> np.ndarray:
        return self.columns[column]

    def rows(self) -> Iterator[dict[str, Any]]:
        names = list(self.columns)
        for values in zip(*(self.columns[n] for n in names)):
            yield {n: (v.item() if hasattr(v, "item") else v) for n, v in zip(names, values)}

    def where(self, column: str, value: Any) -> "Table":
        mask = self.columns[column] == value
        return Table(self.name, {k: v[mask] for k, v in self.columns.items()})

    def to_pandas(self):  # pragma: no cover - pandas is optional
        import pandas as pd  # lazy: pandas only for the table view of a trace

        return pd.DataFrame(self.columns)

    @classmethod
    def empty(cls, name: str) -> "Table":
        return cls(name, {c: np.array([], dtype=_NP[k]) for c, k in TABLES[name]})


@dataclass
class Trace:
    """A run: its tables and attributes (spec, seed, runtime, versions, host...)."""

    tables: dict[str, Table]
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def jobs(self) -> Table:
        return self.tables["jobs"]

    @property
    def phases(self) -> Table:
        return self.tables["phases"]

    @property
    def grants(self) -> Table:
        return self.tables["grants"]

    @property
    def allocations(self) -> Table:
        return self.tables["allocations"]

    @property
    def actions(self) -> Table:
        return self.tables["actions"]

    @property
    def samples(self) -> Table:
        return self.tables["samples"]

    @property
    def predictions(self) -> Table:
        return self.tables["predictions"]

    def job_index(self) -> dict[str, int]:
        return {j: i for i, j in enumerate(self.jobs["id"])}

    def as_dict(self) -> dict[str, dict[str, np.ndarray]]:
        """Plain ``{table: {column: array}}``: ``pandas.DataFrame(d['jobs'])`` works."""
        return {n: dict(t.columns) for n, t in self.tables.items()}


class TraceBuilder:
    """Collects rows; ``build()`` freezes them into a :class:`Trace`."""

    def __init__(self, **attrs: Any):
        self.attrs: dict[str, Any] = dict(attrs)
        self._rows: dict[str, list[tuple]] = {name: [] for name in TABLES}
        # rows given column-wise (extend_columns), in schema order, while the table has no row
        self._cols: dict[str, list[list]] = {}
        # tables given as some of their columns only (extend_columns(only_given=True)), by column
        self._only: dict[str, dict[str, Any]] = {}

    def _add(self, table: str, values: dict[str, Any]) -> None:
        names, defaults = _ROW_SCHEMA[table]
        if not names.issuperset(values):
            raise ValueError(f"unknown column(s) for {table}: {sorted(set(values) - names)}")
        get = values.get
        self._as_rows(table).append(tuple([get(c, d) for c, d in defaults]))

    def _as_rows(self, table: str) -> list[tuple]:
        """The table's row list, its column-wise rows (if any) turned into rows first."""
        if table in self._only:
            raise ValueError(f"{table}: a table of some columns only takes no rows")
        cols = self._cols.pop(table, None)
        if cols is not None:
            self._rows[table].extend(zip(*cols))
        return self._rows[table]

    def extend_columns(self, table: str, columns: dict[str, Any], *, take: bool = False,
                       only_given: bool = False) -> None:
        """Append rows given column-wise: ``{column: sequence}``, equally long sequences; a
        column left out takes its default (as with ``add_*``; no column at all: no row).  The
        same table as the rows would give, without a tuple per row (the batch simulator's
        10^6 prediction rows).  ``take``: the caller hands its lists and arrays over and will not
        change them; the builder keeps them instead of a copy (SDSC-BLUE's jobs table: 28 MB), and
        appends a later ``extend_columns`` of the table to them.  ``only_given``: the built table has
        the given columns only (a trace read for some of its columns: the batch metrics'); such a table
        takes no other rows."""
        names, defaults = _ROW_SCHEMA[table]
        if not names.issuperset(columns):
            raise ValueError(f"unknown column(s) for {table}: {sorted(set(columns) - names)}")
        lengths = {c: len(v) for c, v in columns.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"{table} columns differ in length: {lengths}")
        n = next(iter(lengths.values()), 0)
        if only_given:
            if table in _CANONICAL:
                raise ValueError(f"{table}: its rows are put in canonical order, which needs its every column")
            if self._rows[table] or table in self._cols or table in self._only:
                raise ValueError(f"{table}: a table of some columns only is given once, alone")
            self._only[table] = {c: _column(v, take) for c, v in columns.items()}
            return
        if table in self._only:
            raise ValueError(f"{table}: a table of some columns only is given once, alone")
        if not n:
            return
        cols = [_column(columns[c], take) if c in columns else [d] * n for c, d in defaults]
        if self._rows[table]:  # keep one representation: rows
            self._rows[table].extend(zip(*cols))
        elif table in self._cols:
            for have, new in zip(self._cols[table], cols):
                have.extend(new)
        else:
            self._cols[table] = cols

    def add_job(self, **values: Any) -> None:
        self._add("jobs", values)

    def add_phase(self, **values: Any) -> None:
        self._add("phases", values)

    def add_grant(self, **values: Any) -> None:
        self._add("grants", values)

    def add_allocation(self, **values: Any) -> None:
        self._add("allocations", values)

    def add_action(self, **values: Any) -> None:
        self._add("actions", values)

    def extend(self, table: str, rows: list[tuple]) -> None:
        """Append ready-made rows (tuples in the schema's column order)."""
        width = len(TABLES[table])
        for r in rows:
            if len(r) != width:
                raise ValueError(f"{table} rows have {width} columns, got {len(r)}")
        self._as_rows(table).extend(rows)

    def count(self, table: str) -> int:
        if table in self._only:
            return len(next(iter(self._only[table].values()), ()))
        cols = self._cols.get(table)
        return len(self._rows[table]) + (len(cols[0]) if cols else 0)

    def build(self, **attrs: Any) -> Trace:
        """Freeze the rows; phases and grants in a canonical order (job, index, start)
        so that the same run gives the same file whichever runtime recorded it."""
        tables = {}
        for name, cols in TABLES.items():
            columns = {}
            only = self._only.get(name)
            if only is not None:  # (not a table of canonical order: refused by extend_columns)
                tables[name] = Table(name, {c: np.array(only[c], dtype=_NP[k]) for c, k in cols if c in only})
                continue
            given = self._cols.get(name)
            if given is not None:  # column-wise rows only (a row added later made them rows)
                order = _canonical_order(*(given[i] for i in _CANONICAL_COLUMNS[name])) if name in _CANONICAL else None
                for (c, k), values in zip(cols, given):
                    column = np.array(values, dtype=_NP[k])
                    columns[c] = column if order is None else column[order]
                tables[name] = Table(name, columns)
                continue
            rows = self._rows[name]
            if name in _CANONICAL:
                rows = sorted(rows, key=_CANONICAL[name])
            for i, (c, k) in enumerate(cols):
                columns[c] = np.array([r[i] for r in rows], dtype=_NP[k]) if rows else np.array([], dtype=_NP[k])
            tables[name] = Table(name, columns)
        return Trace(tables, {**self.attrs, **attrs})


def _column(values: Any, take: bool) -> Any:
    """The builder's own appendable copy of a given column: a list or an array.array as given
    (``take``) or sliced (a copy in C: the batch simulator's times come as arrays of doubles, no
    boxed float per row); anything else as a list."""
    if isinstance(values, (list, array)):
        return values if take else values[:]
    return list(values)


def _canonical_order(job, index, start) -> np.ndarray:
    """The permutation that sorts column-wise rows as ``sorted(rows, key=(job, index, start))`` does.

    Runtimes record a job's rows in (index, start) order, so a stable sort by job alone is almost
    always the answer: it is checked, and where it is not (or a value is NaN) the rows are sorted by
    the whole key, as rows are.  Either way the same order, ties kept in insertion order."""
    n = len(job)
    try:  # each job as the rank of its id among the distinct ids: an integer sort, not one of objects
        rank = {v: r for r, v in enumerate(sorted(set(job)))}
        jobs = np.fromiter(map(rank.__getitem__, job), dtype=np.intp, count=n)
    except TypeError:  # ids that do not order among themselves: numpy's sort of the objects
        jobs = np.array(job, dtype=object)
    order = np.argsort(jobs, kind="stable")
    if n > 1:
        try:
            j, i, t = jobs[order], np.asarray(index)[order], np.asarray(start)[order]
            same = j[1:] == j[:-1]
            ahead = (i[1:] > i[:-1]) | ((i[1:] == i[:-1]) & (t[1:] >= t[:-1]))
            sorted_within = bool(np.all(~same.astype(bool) | ahead.astype(bool)))
        except (TypeError, ValueError):  # values numpy does not compare as Python does: the whole key
            sorted_within = False
        if not sorted_within:
            order = np.array(sorted(range(n), key=lambda r: (job[r], index[r], start[r])), dtype=np.intp)
    return order


_CANONICAL_COLUMNS = {"phases": (0, 1, 3), "grants": (0, 1, 3)}  # (job, index, start), (job, phase, request)
_CANONICAL = {name: (lambda r, i=i: (r[i[0]], r[i[1]], r[i[2]])) for name, i in _CANONICAL_COLUMNS.items()}


def _default(kind: str) -> Any:
    return {"str": "", "int": -1, "float": float("nan")}[kind]


# per table: its column names, and (column, default) in schema order (built once, not per row)
_ROW_SCHEMA = {t: (frozenset(c for c, _ in cols), tuple((c, _default(k)) for c, k in cols))
               for t, cols in TABLES.items()}
