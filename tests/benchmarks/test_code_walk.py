"""benchmarks/code_walk.py: the walk of a command, in its process and in every process it starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "code_walk.py"


def walk(*args: str, every: bool = False) -> tuple[str, list[str], list[str]]:
    """The summary line, the files in order and the returns of ``iolab ARGS``."""
    cmd = [sys.executable, str(SCRIPT), "--files", "--pairs", *(["--every-process"] if every else []), "--", *args]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, check=True).stdout.splitlines()
    head = next(line for line in out if " files, " in line)
    rest = out[out.index(head) + 1:]
    files = [line.split(None, 1)[1] for line in rest if line[:4].strip().isdigit()]
    pairs = [line.strip() for line in rest if line.startswith("  ") and " -> " in line]
    return head, files, pairs


def test_a_one_process_command_walks_the_same_with_the_hook_in_every_process(tmp_path):
    args = ("simulate", "examples/carretero-table1.yaml", "--out", str(tmp_path / "t.h5"))
    head, files, pairs = walk(*args)
    head2, files2, pairs2 = walk(*args[:-1], str(tmp_path / "t2.h5"), every=True)
    assert files2 == files and pairs2 == pairs  # the child's walk is the in-process one
    assert "in 1 processes" in head2
    assert len(files) > 20 and len(pairs) >= len(files) - 1
    assert files[0] == "iolab/cli/__init__.py" and "sim/io/event.py" in files


@pytest.mark.mpi
@pytest.mark.ray
def test_a_real_run_is_walked_in_its_ranks_and_its_actors_too(tmp_path):
    spec = tmp_path / "tiny.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "tiny", "platform": {"io_nodes": 1, "nodes_per_io_node": 4, "bandwidth": 1.0},
        "apps": [{"id": a, "nodes": 2, "iterations": 2, "compute": 0.3, "io_volume": 0.2} for a in "AB"],
        "emulator": {"ranks_per_app": 2, "unit_bytes": 1 << 20, "grid": 32, "lease": 20}}))
    head, files, pairs = walk("emulate", str(spec), "--policy", "fifo", "--out", str(tmp_path / "r.h5"), every=True)
    processes = int(head.split(" in ")[1].split()[0])
    assert processes >= 4  # the command (and its re-execution), two apps' ranks, the arbiter's Ray worker
    assert "apps/jacobi.py" in files  # run only by the MPI ranks
    assert "middleware/arbiter_actor.py" in files and "middleware/arbiter_state.py" in files  # only in the actor
    assert any(p.startswith("middleware/arbiter_state.py -> middleware/arbiter_actor.py") for p in pairs)
    assert (tmp_path / "r.h5").is_file()
