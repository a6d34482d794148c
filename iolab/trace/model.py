"""In-memory traces: columnar tables built row by row, then frozen to numpy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from .schema import TABLES

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

    def _add(self, table: str, values: dict[str, Any]) -> None:
        names, defaults = _ROW_SCHEMA[table]
        if not names.issuperset(values):
            raise ValueError(f"unknown column(s) for {table}: {sorted(set(values) - names)}")
        get = values.get
        self._rows[table].append(tuple([get(c, d) for c, d in defaults]))

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
        self._rows[table].extend(rows)

    def count(self, table: str) -> int:
        return len(self._rows[table])

    def build(self, **attrs: Any) -> Trace:
        """Freeze the rows; phases and grants in a canonical order (job, index, start)
        so that the same run gives the same file whichever runtime recorded it."""
        tables = {}
        for name, cols in TABLES.items():
            rows = self._rows[name]
            if name in _CANONICAL:
                rows = sorted(rows, key=_CANONICAL[name])
            columns = {}
            for i, (c, k) in enumerate(cols):
                columns[c] = np.array([r[i] for r in rows], dtype=_NP[k]) if rows else np.array([], dtype=_NP[k])
            tables[name] = Table(name, columns)
        return Trace(tables, {**self.attrs, **attrs})


_CANONICAL = {
    "phases": lambda r: (r[0], r[1], r[3]),  # job, index, start
    "grants": lambda r: (r[0], r[1], r[3]),  # job, phase, request
}


def _default(kind: str) -> Any:
    return {"str": "", "int": -1, "float": float("nan")}[kind]


# per table: its column names, and (column, default) in schema order (built once, not per row)
_ROW_SCHEMA = {t: (frozenset(c for c, _ in cols), tuple((c, _default(k)) for c, k in cols))
               for t, cols in TABLES.items()}
