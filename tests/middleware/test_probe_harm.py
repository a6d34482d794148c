"""``iolab storage probe`` does no harm and says what it measures: a size above the free space is refused
before anything is written; a writer that fails (a tmpfs that fills) or is killed stops the probe at once and
its files are removed; a cached or memory file system is named as not measuring the device; shares that no
law describes are not written as a law; --writers 1 is refused."""

from __future__ import annotations

import contextlib
import math
import multiprocessing as mp
import os
import signal
import subprocess
import threading
import time

import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.cli.storage import fit_refusal
from iolab.metrics.interference_fit import fit_interference
from iolab.middleware import storage_probe
from iolab.middleware.policies.interference import InterferenceLaw
from iolab.middleware.storage_probe import ProcessWriters, WriterFailed, probe, probe_plan

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@contextlib.contextmanager
def tmpfs(path, size: str):
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def probe_cli(*args):
    r = CliRunner().invoke(cli, ["storage", "probe", *[str(a) for a in args]])
    assert "Traceback" not in r.output, r.output
    return r


@root_only
def test_a_size_above_the_free_space_is_refused_before_writing(tmp_path):
    with tmpfs(tmp_path / "small", "4m") as d:
        start = time.perf_counter()
        r = probe_cli(d, "--writers", "1..2", "--size", "8MiB", "-o", tmp_path / "law.yaml")
        assert r.exit_code == 2 and "--size 8MiB" in r.output and "free" in r.output, r.output
        assert time.perf_counter() - start < 2 and list(d.iterdir()) == []
        assert not (tmp_path / "law.yaml").exists()


@root_only
def test_a_tmpfs_that_fills_stops_the_probe_and_leaves_no_file(tmp_path):
    """The free space was there when the probe was planned, and is gone while it writes (another writer)."""
    with tmpfs(tmp_path / "fills", "12m") as d:
        start = time.perf_counter()
        with pytest.raises(WriterFailed, match="No space left on device"):
            ProcessWriters(str(d), 8 << 20, unit=4096, repeats=1).run(2)
        assert time.perf_counter() - start < 10
        assert list(d.iterdir()) == []


@root_only
def test_a_memory_file_system_is_said_not_to_be_a_device(tmp_path):
    with tmpfs(tmp_path / "mem", "64m") as d:
        plan = probe_plan(str(d), 1 << 20, 4096, 2, direct=False)
        assert plan.filesystem == "tmpfs" and not plan.device and "memory" in plan.why
        r = probe_cli(d, "--writers", "1..2", "--size", "2MiB", "--unit", "64KiB", "--json")
        assert "not measuring the device: tmpfs keeps files in memory" in r.output
        assert list(d.iterdir()) == []


def test_a_cached_file_system_is_said_not_to_be_measured(tmp_path):
    d = tmp_path / "disk"
    d.mkdir()
    out = tmp_path / "law.yaml"
    r = probe_cli(d, "--writers", "1..2", "--size", "2MiB", "--unit", "64KiB", "-o", out)
    assert "not measuring the device" in r.output, r.output
    if r.exit_code == 0:  # the shares stayed near 1: a law, written with the note beside it
        assert "# not measuring the device:" in out.read_text()
    else:  # the cache gave more to more writers: no law, nothing written
        assert r.exit_code == 1 and "no law fitted" in r.output and not out.exists(), r.output
    assert list(d.iterdir()) == []


def _blocked_writer(path, size, direct, go, out):
    go.wait()
    open(path, "wb").close()
    time.sleep(120)


def test_a_killed_writer_stops_the_probe_at_once_and_its_files_go(tmp_path, monkeypatch):
    monkeypatch.setattr(storage_probe, "_write", _blocked_writer)
    before = set(mp.active_children())

    def kill_one():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            kids = [p for p in mp.active_children() if p not in before]
            if len(kids) == 3 and len(list(tmp_path.glob(".iolab-probe-3-*"))) == 3:
                os.kill(kids[1].pid, signal.SIGKILL)
                return
            time.sleep(0.05)

    threading.Thread(target=kill_one, daemon=True).start()
    start = time.perf_counter()
    with pytest.raises(WriterFailed, match="exit code -9"):
        ProcessWriters(str(tmp_path), 1 << 20, unit=4096, repeats=1).run(3)
    assert time.perf_counter() - start < 10  # not the hour a lost writer used to cost
    assert list(tmp_path.iterdir()) == []
    assert not [p for p in mp.active_children() if p not in before]  # the other writers are ended


def test_the_units_response_is_measured_even_when_the_writers_end_at_once(tmp_path):
    results = probe(ProcessWriters(str(tmp_path), 64 << 10, unit=4096, repeats=3), 2)
    assert all(math.isfinite(r.response) and r.response > 0 for r in results)


def test_one_writer_is_refused_as_it_measures_no_law(tmp_path):
    r = probe_cli(tmp_path, "--writers", "1")
    assert r.exit_code == 2 and "K from 2" in r.output


class LawWriters:
    def __init__(self, shares):
        self.shares = shares

    def run(self, k):
        end = k / self.shares[k]  # k units of work at share s(k) of one unit per second
        return [(0.0, end, 1)] * k, [0.1]


@pytest.mark.parametrize("shares,refused", [
    ({1: 1.0, 2: 0.9, 3: 0.82, 4: 0.75}, ""),  # a loss the parametric form describes
    ({1: 1.0, 2: 1.02, 3: 0.99, 4: 1.01}, ""),  # lossless, within noise
    ({1: 1.0, 2: 1.45, 3: 2.60, 4: 1.88}, "more writers got more"),  # the cached file system of the issue
    ({1: 1.0, 2: 0.2, 3: 1.1, 4: 0.1}, "comes near the shares"),  # no law of the form fits
])
def test_shares_no_law_describes_are_not_written_as_one(shares, refused):
    fit = fit_interference({r.k: r.aggregate for r in probe(LawWriters(shares), 4)})
    why = fit_refusal(fit)
    assert (refused in why) if refused else why == "", why


def test_the_law_fits_a_known_one_through_the_refusal_check():
    law = InterferenceLaw.parametric(0.3, 1)
    fit = fit_interference({k: k / (k / law.factor(k)) for k in range(1, 5)})
    assert fit_refusal(fit) == "" and fit["parametric"]["gamma"] == pytest.approx(0.3, abs=1e-3)
