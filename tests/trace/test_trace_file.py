"""Trace files: atomic, self-describing, refused clearly when not a trace."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from iolab.errors import TraceError
from iolab.specs import parse_spec
from iolab.trace import TraceBuilder, read_trace, write_trace
from iolab.sim.io.run import simulate

SPEC = {"platform": {"nodes_per_io_node": 4, "bandwidth": 2.0}, "seed": 17,
        "apps": [{"id": "a", "nodes": 2, "iterations": 3, "compute": 1, "io_volume": 4}]}


def test_attributes_carry_the_spec_and_seed(tmp_path):
    path = write_trace(simulate(parse_spec(SPEC)), tmp_path / "t.h5")
    t = read_trace(path)
    assert t.attrs["seed"] == 17
    assert t.attrs["spec"]["apps"][0]["io_volume"] == 4
    assert t.attrs["runtime"] == "sim-event"
    assert list(t.phases["kind"]) == ["compute", "write"] * 3
    assert t.as_dict()["jobs"]["end"][0] == 9.0  # 3 x (1 + 4/2)
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left


def test_an_inconsistent_trace_is_refused_before_writing(tmp_path):
    tb = TraceBuilder()
    tb.add_job(id="x", nodes=1)
    trace = tb.build()
    trace.tables["phases"].columns["start"] = np.array([1.0])  # 1 row where the others have 0
    with pytest.raises(TraceError, match="columns differ in length"):
        write_trace(trace, tmp_path / "bad.h5")
    trace.tables["phases"].columns["start"] = np.array([], dtype=object)
    with pytest.raises(TraceError, match="must be numeric"):
        write_trace(trace, tmp_path / "bad.h5")
    assert list(tmp_path.iterdir()) == []


def test_a_write_that_fails_midway_leaves_neither_file_nor_temporary(tmp_path, monkeypatch):
    trace = simulate(parse_spec(SPEC))
    write_trace(trace, tmp_path / "t.h5")
    before = (tmp_path / "t.h5").read_bytes()
    calls = {"n": 0}
    real = h5py.Group.create_dataset

    def flaky(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 10:
            raise OSError("disk full")
        return real(self, *a, **k)

    monkeypatch.setattr(h5py.Group, "create_dataset", flaky)
    with pytest.raises(OSError, match="disk full"):
        write_trace(trace, tmp_path / "t.h5")
    assert [p.name for p in tmp_path.iterdir()] == ["t.h5"]  # old file intact, no temporary
    assert (tmp_path / "t.h5").read_bytes() == before


def test_reading_something_else_is_a_clear_error(tmp_path):
    with pytest.raises(TraceError, match="no such trace"):
        read_trace(tmp_path / "nope.h5")
    (tmp_path / "text.h5").write_text("hello")
    with pytest.raises(TraceError, match="not an HDF5 file"):
        read_trace(tmp_path / "text.h5")
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f["x"] = 1
    with pytest.raises(TraceError, match="not an iolab trace"):
        read_trace(tmp_path / "other.h5")


def test_builder_refuses_unknown_columns():
    with pytest.raises(ValueError, match="unknown column"):
        TraceBuilder().add_phase(job="a", colour="red")


def test_atomic_files_get_the_usual_mode_and_leave_nothing_on_failure(tmp_path):
    import os

    from iolab.atomic import atomic_path
    from iolab.studies.common import write_csv

    old = os.umask(0o022)
    try:
        write_csv(tmp_path / "r.csv", [{"a": 1}])
        path = write_trace(simulate(parse_spec(SPEC)), tmp_path / "t.h5")
    finally:
        os.umask(old)
    assert (tmp_path / "r.csv").stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
    assert path.stat().st_mode & 0o777 == 0o644
    with pytest.raises(ZeroDivisionError):
        with atomic_path(tmp_path / "x.csv") as tmp:
            tmp.write_text("half")
            1 / 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "t.h5"]


def test_a_trace_written_before_an_added_column_reads_with_its_default(tmp_path):
    tb = TraceBuilder()
    tb.extend("samples", [(1.0, "lps", 0.5, 2, 1e6, 0.0, 0.25, 0.4, 10.0, 0.1),
                          (2.0, "lps", 0.7, 3, 2e6, 1.0, 0.5, 0.6, 20.0, 0.0)])
    path = tmp_path / "t.h5"
    write_trace(tb.build(runtime="test"), path)
    assert list(read_trace(path).samples.columns["predicted"]) == [0.4, 0.6]
    with h5py.File(path, "r+") as f:  # as an iolab from before the columns wrote it
        for c in ("predicted", "ops_rate", "queued"):
            del f["samples"][c]
    old = read_trace(path).samples.columns
    assert list(old["response"]) == [0.5, 0.7]
    assert all(np.isnan(old[c]).all() for c in ("predicted", "ops_rate", "queued"))
    with h5py.File(path, "r+") as f:  # a column that was always there is still required
        del f["samples"]["score"]
    with pytest.raises(TraceError, match="lacks column score"):
        read_trace(path)
