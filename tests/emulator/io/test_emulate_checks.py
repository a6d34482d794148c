"""Specs the emulator cannot run fail before any process (or Ray) starts, with a clear message."""

from __future__ import annotations

import pytest

from iolab.errors import RunError, SpecError
from iolab.specs.load import parse_spec


def spec(apps=2, **emulator):
    return parse_spec({
        "name": "bad", "platform": {"io_nodes": 1, "nodes_per_io_node": 64, "bandwidth": 1.0},
        "apps": [{"id": f"a{i}", "nodes": 8, "iterations": 2, "compute": 1, "io_volume": 1} for i in range(apps)],
        "emulator": {"unit_bytes": 1 << 20, "grid": 32, **emulator},
    })


@pytest.fixture
def no_processes(monkeypatch):
    import iolab.emulator.shell
    from iolab.emulator import ray_session

    def refuse(*a, **k):
        raise AssertionError("a process was started")

    monkeypatch.setattr(iolab.emulator.shell, "spawn", refuse)
    monkeypatch.setattr(ray_session.RaySession, "open", classmethod(refuse))


def test_too_many_ranks(no_processes, tmp_path):
    from iolab.emulator.io.run import run_emulation

    with pytest.raises(SpecError, match=r"emulator.max_ranks: the apps need 16 MPI ranks.*limit is 12"):
        run_emulation(spec(ranks_per_app=8, max_ranks=12), work_dir=tmp_path)


def test_io_phase_smaller_than_a_checkpoint(no_processes, tmp_path):
    from iolab.emulator.io.run import run_emulation

    with pytest.raises(SpecError, match=r"apps\[0\].*checkpoint of the 2000x2000 grid"):
        run_emulation(spec(grid=2000), work_dir=tmp_path)


def test_unwritable_work_dir(no_processes, tmp_path):
    from iolab.emulator.io.run import run_emulation

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(RunError, match="work directory .*a-file/work: cannot create it"):
        run_emulation(spec(), work_dir=blocker / "work")


def test_bad_override_names_the_field(no_processes, tmp_path):
    from iolab.emulator.io.run import run_emulation

    with pytest.raises(SpecError, match="emulator.time_scale"):
        run_emulation(spec(), time_scale=-1, work_dir=tmp_path)
    with pytest.raises(SpecError, match="unknown I/O policy"):
        run_emulation(spec(), "nope", work_dir=tmp_path)


def test_missing_mpiexec(no_processes, tmp_path, monkeypatch):
    from iolab.emulator import launchers
    from iolab.emulator.io.run import run_emulation

    def missing():
        raise launchers.MpiexecNotFound("no mpiexec next to python nor on PATH")

    monkeypatch.setattr(launchers, "find_mpiexec", missing)
    with pytest.raises(RunError, match="no mpiexec"):
        run_emulation(spec(), work_dir=tmp_path)
