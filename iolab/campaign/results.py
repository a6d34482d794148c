"""The results table of a campaign: one row per finished run, in the campaign's order.

Layout of ``results.h5`` (written atomically: temporary file, then rename)::

    /                attrs: iolab_campaign_results (format version), campaign (name),
                     campaign_spec (JSON), total_runs, finished, failed, pending
    /runs/<column>   one 1-D dataset per column, all of the same length

Strings are UTF-8 variable-length datasets.  Columns: ``index`` (position
in the expansion), ``run_id``, ``status`` (ok / failed), ``error``, the run's
parameters (:data:`PARAM_COLUMNS`), its metrics (:data:`iolab.campaign.task.METRICS`)
and ``wall_seconds``, ``host``, ``trace``.  Missing values are NaN (floats),
-1 (ints) or "" (strings).  Every column but ``wall_seconds``,
``sim_seconds`` and ``host`` is the same whatever the number of workers or the
order in which the runs finished.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from iolab.atomic import atomic_path
from iolab.errors import InputWarning, IolabError
from iolab.campaign import table as T
from iolab.campaign.journal import Journal
from iolab.campaign.task import INT_METRICS, METRICS

FORMAT_VERSION = 1
JOURNAL = "journal.jsonl"
MANIFEST = "campaign.json"
RESULTS = "results.h5"

PARAM_COLUMNS: tuple[tuple[str, str], ...] = (
    ("workload", "str"), ("workload_source", "str"), ("alpha_gen", "float"), ("replicate", "int"),
    ("workload_seed", "int"), ("seed", "int"), ("policy", "str"), ("mapping", "str"), ("io_nodes", "int"),
    ("nodes_per_io_node", "int"), ("bandwidth", "float"), ("apps", "int"), ("runtime", "str"),
    ("mode", "str"), ("dt", "float"),
)
COLUMNS: tuple[tuple[str, str], ...] = (
    (("index", "int"), ("run_id", "str"), ("status", "str"), ("error", "str"))
    + PARAM_COLUMNS
    + tuple((m, "int" if m in INT_METRICS else "float") for m in METRICS)
    + (("wall_seconds", "float"), ("host", "str"), ("trace", "str"))
)
NONDETERMINISTIC = ("wall_seconds", "sim_seconds", "host", "trace")
_MISSING = {"str": "", "int": -1, "float": math.nan}
_DTYPE = {"str": object, "int": np.int64, "float": np.float64}


class ResultsError(IolabError):
    """A results file or folder is missing or not a campaign's results."""


@dataclass
class Results:
    """Equally long columns (numpy arrays) plus the file's attributes."""

    columns: dict[str, np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)
    # a study's results (see .table): further tables name -> columns, and every table's [(column, kind)]
    tables: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    schema: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.columns["run_id"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def rows(self) -> list[dict[str, Any]]:
        names = list(self.columns)
        return [{n: (v.item() if hasattr(v, "item") else v) for n, v in zip(names, vals)}
                for vals in zip(*(self.columns[n] for n in names))]

    def to_pandas(self):  # pragma: no cover - pandas is optional
        import pandas as pd  # lazy: pandas only for the table view of the results

        return pd.DataFrame(self.columns)

    def table(self, name: str = "runs") -> dict[str, np.ndarray]:
        """The columns of ``runs`` (this table) or of a study's further table ``name``."""
        return self.columns if name == "runs" else self.tables[name]


def _cell(value: Any, kind: str) -> Any:
    if value is None:
        return _MISSING[kind]
    if kind == "str":
        return str(value)
    if kind == "int":
        return int(value)
    return float(value)


def record_row(index: int, rec: dict[str, Any]) -> dict[str, Any]:
    p, m = rec.get("params", {}), rec.get("metrics", {})
    src = {**p, **m, "index": index, "run_id": rec["run_id"], "status": rec["status"], "error": rec.get("error", ""),
           "wall_seconds": rec.get("wall_seconds"), "host": rec.get("host", ""), "trace": rec.get("trace", "")}
    return {c: _cell(src.get(c), k) for c, k in COLUMNS}


def build(manifest: dict[str, Any], records: dict[str, dict[str, Any]]) -> Results:
    """The table of the manifest's runs that have a record, in campaign order."""
    rows = [record_row(r["index"], records[r["run_id"]]) for r in manifest["runs"] if r["run_id"] in records]
    columns = {c: np.array([row[c] for row in rows], dtype=_DTYPE[k]) for c, k in COLUMNS}
    failed = sum(1 for row in rows if row["status"] != "ok")
    attrs = {"iolab_campaign_results": FORMAT_VERSION, "campaign": manifest["name"],
             "campaign_spec": json.dumps(manifest.get("spec", {}), sort_keys=True),
             "total_runs": len(manifest["runs"]), "finished": len(rows), "failed": failed,
             "pending": len(manifest["runs"]) - len(rows)}
    return Results(columns, attrs)


def build_study(manifest: dict[str, Any], records: dict[str, dict[str, Any]]) -> Results:
    """The table of a study campaign (:mod:`.table`): its rows, in campaign order."""
    data, attrs, schema, tables = T.build(manifest, records)
    return Results(data, attrs, tables, schema)


def write_h5(results: Results, path: str | Path) -> Path:
    import h5py  # lazy: h5py only when a results file is read or written

    path = Path(path)
    if results.schema:  # a study's table: columns listed in the file
        with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
            for k, v in results.attrs.items():
                f.attrs[k] = v
            for name, cols in results.schema.items():
                T.write_group(f, name, cols, results.table(name))
        return path
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        for k, v in results.attrs.items():
            f.attrs[k] = v
        g = f.create_group("runs")
        for c, kind in COLUMNS:
            data = results.columns[c]
            if kind == "str":
                g.create_dataset(c, data=np.asarray(data, dtype=object), dtype=h5py.string_dtype("utf-8"))
            else:
                g.create_dataset(c, data=data)
    return path


def read_h5(path: str | Path) -> Results:
    import h5py  # lazy: h5py only when a results file is read or written

    path = Path(path)
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise ResultsError(f"{path}: not an HDF5 file ({exc})") from None
    try:
        with f:
            return _read_results(f, path)
    except ResultsError:
        raise
    except (OSError, RuntimeError, KeyError, ValueError, TypeError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: damaged results file ({type(exc).__name__}: {str(exc)[:200]})") from None


def _read_results(f, path: Path) -> Results:
    if "iolab_campaign_results" not in f.attrs or "runs" not in f:
        raise ResultsError(f"{path}: not a campaign results file")
    attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}
    if T.is_generic(f):
        schema, tables = {}, {}
        for name in f:
            schema[name], tables[name] = T.read_group(f[name])
        return Results(tables.pop("runs"), attrs, tables, schema)
    g = f["runs"]
    cols = {}
    for c, kind in COLUMNS:
        if c not in g:
            raise ResultsError(f"{path}: results lack column {c}")
        cols[c] = np.array(g[c].asstr()[()], dtype=object) if kind == "str" else g[c][()]
    return Results(cols, attrs)


def is_results(path: str | Path) -> bool:
    """True for a campaign output folder or a results HDF5 file."""
    p = Path(path)
    if p.is_dir():
        return (p / MANIFEST).is_file() or (p / RESULTS).is_file()
    if p.is_file():
        try:
            import h5py  # lazy: h5py only when a results file is read or written

            with h5py.File(p, "r") as f:
                return "iolab_campaign_results" in f.attrs
        except (OSError, RuntimeError, KeyError, ValueError):  # not HDF5, or damaged: not results
            return False
    return False


def read_manifest(path: str | Path) -> dict[str, Any]:
    """``campaign.json``, checked: a :class:`ResultsError` naming the file and what is wrong."""
    path = Path(path)
    try:
        manifest = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:  # unreadable, not JSON / UTF-8
        raise ResultsError(f"{path}: not a readable campaign manifest ({str(exc)[:200]})") from None
    if not isinstance(manifest, dict):
        raise ResultsError(f"{path}: not a campaign manifest (a JSON object)")
    if not isinstance(manifest.get("name"), str):
        raise ResultsError(f"{path}: no campaign name")
    runs = manifest.get("runs")
    if not isinstance(runs, list):
        raise ResultsError(f"{path}: no list of runs")
    for i, r in enumerate(runs):
        if not (isinstance(r, dict) and isinstance(r.get("run_id"), str) and isinstance(r.get("index"), int)
                and not isinstance(r.get("index"), bool)):
            raise ResultsError(f"{path}: runs[{i}] is not a run (run_id and index)")
    return manifest


def load(path: str | Path) -> Results:
    """Results from a campaign folder (manifest + journal, the freshest) or a results.h5.
    Journal lines that are not records are skipped with an :class:`iolab.errors.InputWarning`."""
    p = Path(path)
    if p.is_dir():
        if (p / MANIFEST).is_file():
            manifest = read_manifest(p / MANIFEST)
            journal = Journal(p / JOURNAL, nested_params="study" in manifest)
            records = journal.load()
            if journal.problems:
                first = "; ".join(f"line {n}: {r}" for n, r in journal.problems[:3])
                warnings.warn(f"{journal.path}: skipped {len(journal.problems)} line(s) that are not run records "
                              f"(first: {first})", InputWarning, stacklevel=2)
            try:
                if "study" in manifest:
                    return build_study(manifest, records)
                return build(manifest, records)
            except (TypeError, ValueError, OverflowError) as exc:
                raise ResultsError(f"{p}: the journal's records do not fit the results table ({exc})") from None
        if (p / RESULTS).is_file():
            return read_h5(p / RESULTS)
        raise ResultsError(f"{p}: no {MANIFEST} or {RESULTS} here (not a campaign output folder)")
    if not p.is_file():
        raise ResultsError(f"{p}: no such file or folder")
    return read_h5(p)


def equal(a: Results, b: Results, ignore: Iterable[str] = NONDETERMINISTIC) -> bool:
    """Same rows and values in every deterministic column (NaN equals NaN)."""
    skip = set(ignore)
    for c, kind in COLUMNS:
        if c in skip:
            continue
        x, y = a.columns[c], b.columns[c]
        if len(x) != len(y):
            return False
        if kind == "float":
            if not np.array_equal(x, y, equal_nan=True):
                return False
        elif not np.array_equal(x, y):
            return False
    return True
