"""``iolab storage probe``: the fit recovers a known law from writers throttled by it; the real probe
runs real writer processes and writes a fragment a spec accepts."""

from __future__ import annotations

import random

import pytest
import yaml
from click.testing import CliRunner

from iolab.cli import cli
from iolab.metrics.interference_fit import fit_interference
from iolab.middleware.policies.interference import InterferenceLaw, law_of
from iolab.middleware.storage_probe import ProcessWriters, probe
from iolab.specs import parse_spec


class LawWriters:
    """Fake writers on a fake directory: k writers of ``size`` bytes share ``rate x f(k)`` (the known
    law), released together; times are virtual, with a seeded +-``noise`` on each end."""

    def __init__(self, rate, law, size, noise=0.0, seed=1):
        self.rate, self.law, self.size, self.noise = rate, law, size, noise
        self.rng = random.Random(seed)
        self.calls = []

    def run(self, k):
        self.calls.append(k)
        end = k * self.size / (self.rate * self.law.factor(k))
        rows = [(0.0, end * (1 + self.rng.uniform(-self.noise, self.noise)), self.size) for _ in range(k)]
        unit = 1e6 * (k + 1) / (self.rate * self.law.factor(k + 1))
        return rows, [unit]


@pytest.mark.parametrize("law", [InterferenceLaw.parametric(0.3, 1), InterferenceLaw.parametric(0.5, 3),
                                 InterferenceLaw.parametric(0.0)], ids=lambda law: law.describe())
def test_the_fit_recovers_a_parametric_law(law):
    w = LawWriters(5e8, law, 1 << 28, noise=0.005)
    results = probe(w, 6)
    assert w.calls == [1, 2, 3, 4, 5, 6]
    for r in results:  # the measured aggregate is the law's (within the noise)
        assert r.aggregate == pytest.approx(5e8 * law.factor(r.k), rel=0.011)
    fit = fit_interference({r.k: r.aggregate for r in results})
    p = fit["parametric"]
    assert p["gamma"] == pytest.approx(law.gamma, abs=0.02)
    if law.gamma > 0:
        assert p["knee"] == law.knee
    for k, share in fit["table"].items():
        assert share == pytest.approx(law.factor(k) / law.factor(1), rel=0.025)
    # the unit's response grows with the load as the law says
    assert [r.response for r in results] == sorted(r.response for r in results)


def test_the_fit_recovers_a_table_law_exactly_without_noise():
    law = InterferenceLaw.preset("lustre-plafrim-b")
    fit = fit_interference({r.k: r.aggregate for r in probe(LawWriters(1e9, law, 1 << 26), 5)})
    assert fit["table"] == pytest.approx({k: law.factor(k) for k in range(2, 6)})


def real_outcome(res, law_file=None) -> bool:
    """A real probe on this machine's cached disk: the law (exit 0), or no law when the cache gave more to
    more writers (exit 1, saying so, nothing written).  Whether the fit was taken."""
    assert res.exit_code in (0, 1), res.output
    if res.exit_code == 1:
        assert "no law fitted" in res.output and (law_file is None or not law_file.exists()), res.output
    return res.exit_code == 0


def test_the_real_probe_writes_a_fragment_a_spec_takes(tmp_path, monkeypatch):
    d = tmp_path / "dir"
    d.mkdir()
    res = CliRunner().invoke(cli, ["storage", "probe", str(d), "--writers", "1..2", "--size", "4MiB",
                                   "--unit", "64KiB", "-o", str(tmp_path / "real.yaml")])
    real_outcome(res, tmp_path / "real.yaml")
    assert list(d.iterdir()) == []  # the writers' files are removed
    # the fragment of a fit, written by the command with writers of a known lossy law
    import iolab.cli.storage as storage_cli

    law = InterferenceLaw.parametric(0.3, 1)
    monkeypatch.setattr(storage_cli, "ProcessWriters", lambda *a, **k: LawWriters(5e8, law, 1 << 26))
    res = CliRunner().invoke(cli, ["storage", "probe", str(d), "--writers", "1..3", "--size", "4MiB",
                                   "--unit", "64KiB", "-o", str(tmp_path / "law.yaml")])
    assert res.exit_code == 0, res.output
    frag = yaml.safe_load((tmp_path / "law.yaml").read_text())
    spec = parse_spec({"kind": "batch", "scheduler": "fcfs",
                       "platform": {"nodes": 1, "lps": {"rate": "1GB/s", **frag},
                                    "hps": {"rate": "1GB/s", "capacity": "1TB"}, "stage_rate": "1GB/s"},
                       "workload": {"source": "inline", "jobs": [{"id": "a", "submit": 0, "nodes": 1,
                                                                  "walltime": 10, "runtime": 1}]}})
    got = law_of(spec.platform.lps.interference)
    assert got.kind == "table" and got.factor(1) == 1.0
    assert got.factor(3) == pytest.approx(law.factor(3), rel=1e-3)


def test_real_writers_report_their_bytes(tmp_path):
    rows, _ = ProcessWriters(str(tmp_path), 3 << 20, unit=4096, repeats=1).run(3)
    assert sorted(r[2] for r in rows) == [3 << 20] * 3
    assert all(r[1] >= r[0] for r in rows)


@pytest.mark.parametrize("args, words", [(["--writers", "0"], "--writers"), (["--writers", "1..x"], "--writers"),
                                         (["--size", "12 parsecs"], "--size"), (["--size", "1"], "at least")])
def test_bad_options_are_named(tmp_path, args, words):
    res = CliRunner().invoke(cli, ["storage", "probe", str(tmp_path), *args])
    assert res.exit_code == 2 and words in res.output and "Traceback" not in res.output


def test_a_missing_directory_is_named(tmp_path):
    res = CliRunner().invoke(cli, ["storage", "probe", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "not a directory" in res.output


def _o_direct_works(directory) -> bool:
    """The reference: open a file in ``directory`` with O_DIRECT and write one aligned page."""
    import mmap
    import os

    path, buf = os.path.join(directory, "ref-direct"), mmap.mmap(-1, 4096)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
        try:
            return os.write(fd, buf) == 4096
        finally:
            os.close(fd)
            os.unlink(path)
    except OSError:
        return False
    finally:
        buf.close()


def test_direct_writers_write_whole_aligned_blocks(tmp_path):
    if not _o_direct_works(tmp_path):
        pytest.skip(f"{tmp_path} refuses O_DIRECT here")
    size = (3 << 20) // 2  # 1.5 MiB: O_DIRECT writes whole 1 MiB blocks, so 2 MiB; buffered writes 1.5 MiB
    direct, _ = ProcessWriters(str(tmp_path), size, direct=True, unit=4096, repeats=1).run(2)
    buffered, _ = ProcessWriters(str(tmp_path), size, direct=False, unit=4096, repeats=1).run(2)
    assert [r[2] for r in direct] == [2 << 20] * 2 and [r[2] for r in buffered] == [size] * 2
    assert list(tmp_path.iterdir()) == []


def test_probe_direct_says_whether_it_wrote_o_direct(tmp_path, monkeypatch):
    import json
    import os

    d = tmp_path / "dir"
    d.mkdir()
    args = ["storage", "probe", str(d), "--direct", "--writers", "1..2", "--size", "4MiB", "--unit", "64KiB"]
    res = CliRunner().invoke(cli, [*args, "--json", "-o", str(tmp_path / "law.yaml")])
    assert json.loads(res.stdout)["direct"] is _o_direct_works(d)
    if real_outcome(res, tmp_path / "law.yaml"):
        assert ("O_DIRECT" in (tmp_path / "law.yaml").read_text()) is _o_direct_works(d)
    assert list(d.iterdir()) == []
    # a system without O_DIRECT (macOS, say): the probe says so and writes buffered, fsync'd
    monkeypatch.delattr(os, "O_DIRECT")
    res = CliRunner().invoke(cli, [*args, "--json"])
    real_outcome(res)
    assert "refuses O_DIRECT" in res.stderr and json.loads(res.stdout)["direct"] is False
