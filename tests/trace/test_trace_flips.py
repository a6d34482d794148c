"""Damaged trace files: ``iolab report`` on a real trace with bytes flipped at many offsets either
refuses it cleanly (exit 2, the file named, no traceback) or reads it (exit 0).

HDF5 has no checksum on iolab's small uncompressed datasets, so a flipped byte inside a number is
read as another number; what must never happen is a traceback, a hang or another exit code.
``IOLAB_FUZZ_SCALE`` (default 1) multiplies the number of offsets tried.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.sim.batch.run import simulate_batch
from iolab.sim.io.run import simulate
from iolab.specs import load_spec, parse_spec
from iolab.trace import read_trace, write_trace
from shared_data import REPO

SCALE = float(os.environ.get("IOLAB_FUZZ_SCALE", "1"))
BATCH = {"kind": "batch", "platform": {"nodes": 16, "lps": {"rate": "1GB/s"},
                                       "hps": {"rate": "15GB/s", "capacity": "200GB"}, "stage_rate": "5GB/s"},
         "scheduler": "sas", "seed": 3, "workload": {"source": "feitelson", "jobs": 12}}


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, bytes]:
    d = tmp_path_factory.mktemp("traces")
    io = write_trace(simulate(load_spec(REPO / "examples" / "carretero-table1.yaml")), d / "io.h5")
    batch = write_trace(simulate_batch(parse_spec(BATCH)), d / "batch.h5")
    return {"io": io.read_bytes(), "batch": batch.read_bytes()}


def offsets(size: int, n: int) -> list[int]:
    """``n`` offsets spread over the file, the first 4 KiB (superblock, root group) densely."""
    head = list(range(0, min(size, 4096), max(1, 4096 // (n // 2))))
    step = max(1, size // (n - len(head)))
    return sorted(set(head + list(range(0, size, step))))


@pytest.mark.parametrize("kind", ["io", "batch"])
def test_flipped_bytes_are_refused_cleanly_or_read(traces, kind, tmp_path):
    data = traces[kind]
    n = int(120 * SCALE)
    outcomes = {"read": 0, "refused": 0}
    runner = CliRunner()
    for k, off in enumerate(offsets(len(data), n)):
        damaged = bytearray(data)
        damaged[off] ^= 0xFF
        path = tmp_path / f"flip-{k}.h5"
        path.write_bytes(bytes(damaged))
        r = runner.invoke(cli, ["report", "--json", str(path)])
        assert r.exception is None or isinstance(r.exception, SystemExit), (
            f"offset {off}: traceback\n{r.output}")
        assert r.exit_code in (0, 2), f"offset {off}: exit {r.exit_code}\n{r.output}"
        if r.exit_code == 2:
            assert str(path) in r.output, f"offset {off}: the refusal does not name the file\n{r.output}"
            outcomes["refused"] += 1
        else:
            outcomes["read"] += 1
        path.unlink()
    print(f"{kind}: {outcomes}")
    assert sum(outcomes.values()) >= n // 2


def test_reader_names_the_damage(traces, tmp_path):
    """Cut in half: the reader says which file and that it is damaged or not HDF5."""
    path = tmp_path / "half.h5"
    path.write_bytes(traces["io"][: len(traces["io"]) // 2])
    from iolab.errors import TraceError

    with pytest.raises(TraceError, match=str(path)):
        read_trace(path)


def _first_heap_object_sizes(data: bytes) -> list[int]:
    """Offsets of the size fields of the objects of the first global heap collection (``GCOL``)."""
    import struct

    i = data.find(b"GCOL")
    (size,) = struct.unpack_from("<Q", data, i + 8)
    p, out = i + 16, []
    while p + 16 <= i + size:
        idx, _, _, osz = struct.unpack_from("<HHIQ", data, p)
        if idx == 0:
            break
        out.append(p + 8)
        p += 16 + ((osz + 7) & ~7)
    return out


@pytest.mark.parametrize("kind", ["io", "batch"])
def test_a_damaged_string_heap_is_refused_not_read_forever(traces, kind, tmp_path):
    """A heap object whose size is damaged made libhdf5 loop forever while reading the trace's text
    attributes (``iolab report`` hung on such a file). The reader checks the heap first (or libhdf5
    reports the bad pointer): exit 2, the file and the damage named, within a bounded time (a
    subprocess, so a hang fails the test)."""
    import subprocess
    import sys

    data = traces[kind]
    sizes = _first_heap_object_sizes(data)
    assert len(sizes) > 5
    for field in sizes[len(sizes) // 2:len(sizes) // 2 + 3]:  # objects with others after them
        damaged = bytearray(data)
        damaged[field] ^= 0xFF  # the size's low byte: the walk ends off the objects' boundaries
        path = tmp_path / f"heap-{field}.h5"
        path.write_bytes(bytes(damaged))
        r = subprocess.run([sys.executable, "-m", "iolab", "report", str(path)], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 2, r.stderr
        assert str(path) in r.stderr and "damaged trace file" in r.stderr and "Traceback" not in r.stderr
