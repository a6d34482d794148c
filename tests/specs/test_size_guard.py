"""``--max-jobs`` against every workload source: the estimate is the number of jobs the run would
simulate, counted independently here (the simulated trace's rows, the file's lines), and a run above
the limit is refused (exit 2, naming the option) before anything is simulated."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from iolab.cli import cli
from iolab.specs import load_spec
from iolab.specs.size import batch_size
from shared_data import shared_file

PLATFORM = {"nodes": 16, "lps": {"rate": "1GB/s"}, "hps": {"rate": "15GB/s", "capacity": "200GB"},
            "stage_rate": "5GB/s"}
SWF_LINE = "{job} {submit} 1 100 4 -1 -1 4 200 -1 1 3 1 -1 1 -1 -1 -1\n"


def spec(tmp_path: Path, workload, nodes: int = 16) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump({"kind": "batch", "platform": {**PLATFORM, "nodes": nodes}, "scheduler": "easy",
                                 "workload": workload}))
    return p


def simulated_jobs(path: Path) -> int:
    r = CliRunner().invoke(cli, ["simulate", str(path), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)["jobs"]


def refused_at(path: Path, limit: int) -> str:
    r = CliRunner().invoke(cli, ["simulate", str(path), "--max-jobs", str(limit)])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "--max-jobs" in r.output and "workload.jobs" in r.output
    return r.output


def swf_file(tmp_path: Path, n: int, gz: bool) -> Path:
    lines = ["; Version: 2.2\n", "; a comment line\n", "\n"]
    lines += [SWF_LINE.format(job=i + 1, submit=10 * i) for i in range(n)]
    p = tmp_path / ("t.swf.gz" if gz else "t.swf")
    data = "".join(lines).encode()
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_swf_without_limit_counts_its_job_lines(tmp_path, gz):
    p = spec(tmp_path, {"source": "swf", "path": str(swf_file(tmp_path, 30, gz))})
    n = simulated_jobs(p)
    assert n == 30
    assert batch_size(load_spec(p)).estimate == n
    assert "estimated 30 jobs" in refused_at(p, n - 1)
    assert simulated_jobs(p) == n  # at the limit: runs


@pytest.mark.parametrize("skip,limit", [(0, 10), (25, None), (25, 10), (5, 100)])
def test_swf_skip_and_limit(tmp_path, skip, limit):
    w = {"source": "swf", "path": str(swf_file(tmp_path, 30, False)), "skip": skip}
    if limit is not None:
        w["limit"] = limit
    p = spec(tmp_path, w)
    n = simulated_jobs(p)
    assert batch_size(load_spec(p)).estimate == n
    refused_at(p, n - 1)


def test_kth_trace_without_limit_is_refused_at_100_jobs():
    kth = shared_file("KTH-SP2-1996-2.1-cln.swf.gz")
    with gzip.open(kth, "rt") as fh:  # the reference: the trace's job lines
        lines = sum(1 for line in fh if line.strip() and not line.lstrip().startswith(";"))
    example = Path(__file__).resolve().parents[2] / "examples" / "kth-sp2-easy.yaml"
    assert lines > 27_000
    size = batch_size(load_spec(example), 100)
    assert size.too_big and size.estimate == 101  # counted only up to one past the limit
    assert batch_size(load_spec(example), 10**6).estimate == lines
    assert "--max-jobs" in refused_at(example, 100)


def test_theta_counts_its_jobs(tmp_path):
    theta = shared_file("theta-2022-week4-io-jobs.yaml")
    p = spec(tmp_path, {"source": "theta", "path": str(theta)}, nodes=4392)
    n = simulated_jobs(p)
    assert n == len(yaml.safe_load(theta.read_text())["jobs"]) > 10
    assert batch_size(load_spec(p)).estimate == n
    refused_at(p, n - 1)


def test_inline_and_feitelson(tmp_path):
    jobs = [{"id": i, "submit": i, "nodes": 1, "walltime": 100, "runtime": 50} for i in range(7)]
    p = spec(tmp_path, jobs)
    assert simulated_jobs(p) == batch_size(load_spec(p)).estimate == 7
    refused_at(p, 6)
    p = spec(tmp_path, {"source": "feitelson", "jobs": 40})
    n = simulated_jobs(p)
    assert batch_size(load_spec(p)).estimate == n
    refused_at(p, n - 1)


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_swf_job_lines_counts_as_a_line_by_line_read(tmp_path, monkeypatch, chunk):
    """The counter reads a chunk at a time and splits it: the same count as reading line by line
    (blank lines, comments with spaces before the ``;``, a CR inside a line, no final newline), with a
    line cut between two chunks, and stopping at ``stop``."""
    import random

    from iolab.specs import size

    monkeypatch.setattr(size, "_CHUNK", chunk)
    rng = random.Random(chunk)
    for k in range(300):
        lines = [rng.choice([b"", b"  ", b"; Max: 1", b"  ;y", b"\t;", b"1 2 3", b"\t", b"\r", b"a\rb", b" 7 \x0b"])
                 for _ in range(rng.randint(0, 30))]
        data = b"\n".join(lines) + rng.choice([b"", b"\n"])
        path = tmp_path / f"f{k}.swf"
        path.write_bytes(gzip.compress(data) if k % 2 else data)
        want = sum(1 for line in data.split(b"\n") if line.strip() and not line.strip().startswith(b";"))
        for stop in (float("inf"), 1, 3, 10):
            assert size.swf_job_lines(path, stop) == min(want, stop), (data, stop)


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 22])
def test_the_reader_refuses_past_stop_exactly_where_the_counter_does(tmp_path, monkeypatch, chunk):
    """``iolab simulate`` leaves the count of an SWF file's job lines to its reader (one pass over the file):
    the reader refuses a file (TooManyJobLines) exactly when :func:`swf_job_lines` counts more than ``stop``
    lines, on the fast path (read a chunk at a time, lines cut between chunks) and on the line-by-line one
    (a non-ASCII line sends a file there), and otherwise reads the same lines as without a stop."""
    import random

    from iolab.specs import size
    from iolab.workloads import swf

    monkeypatch.setattr(swf, "_READ", chunk)
    rng = random.Random(chunk)
    for k in range(200):
        lines = [rng.choice([b"", b"  ", b"; Max: 1", b"  ;y", b"\t;", b"1 2 3", b"\t", b"\r", b" 7 \x0b", b"x"])
                 for _ in range(rng.randint(0, 30))]
        if k % 4 == 3:
            lines.insert(rng.randint(0, len(lines)), "caf\u00e9".encode())
        data = b"\n".join(lines) + rng.choice([b"", b"\n"])
        path = tmp_path / f"f{k}.swf"
        path.write_bytes(gzip.compress(data) if k % 2 else data)
        want = size.swf_job_lines(path)
        for stop in (0, 1, 3, 10, 29):
            if want > stop:
                with pytest.raises(swf.TooManyJobLines):
                    swf.read_swf(path, strict=False, max_lines=stop)
            else:
                assert swf.read_swf(path, strict=False, max_lines=stop).problems == \
                    swf.read_swf(path, strict=False).problems, (data, stop)


def test_a_huge_swf_file_is_refused_without_being_read_to_its_end(tmp_path):
    """A gzip file cut short after ~9 MB of job lines: read to its end it cannot be read (exit 2, "cannot
    read"); with --max-jobs 100 it is refused for its size, so its reader stopped long before the cut."""
    data = "".join(SWF_LINE.format(job=i + 1, submit=10 * i) for i in range(150_000)).encode()
    packed = gzip.compress(data)
    path = tmp_path / "huge.swf.gz"
    path.write_bytes(packed[: len(packed) - 200])
    p = spec(tmp_path, {"source": "swf", "path": str(path)})
    assert "estimated 101 jobs, above the limit of 100" in refused_at(p, 100)
    r = CliRunner().invoke(cli, ["simulate", str(p), "--max-jobs", "200000"])
    assert r.exit_code == 2 and "cannot read" in r.output and "Traceback" not in r.output, r.output


def test_the_command_parses_a_theta_file_once(tmp_path, monkeypatch):
    """A Theta job file is YAML read in Python (60 ms for 57 jobs): ``iolab simulate`` counts the jobs its
    reader read instead of parsing the file a second time to count them; the limit holds the same."""
    from iolab.specs import size
    from iolab.workloads import theta

    theta_path = shared_file("theta-2022-week4-io-jobs.yaml")
    parsed = []
    for module in (size, theta):
        real = module.parse_text
        monkeypatch.setattr(module, "parse_text", lambda text, source, *a, _real=real, **k:
                            parsed.append(source) or _real(text, source, *a, **k))
    p = spec(tmp_path, {"source": "theta", "path": str(theta_path)}, nodes=4392)
    n = simulated_jobs(p)
    assert parsed == [str(theta_path)]
    assert "estimated 57 jobs, above the limit of 56" in refused_at(p, n - 1) and n == 57


@pytest.mark.parametrize("level", ["batch", "io"])
def test_the_command_parses_its_spec_once(tmp_path, monkeypatch, level):
    """The document read to learn the spec's level is the one validated: a YAML spec of 5 000 inline jobs took
    2.4 s to simulate when it was parsed twice, 1.1 s parsed once."""
    from iolab.specs import load

    if level == "batch":
        p = spec(tmp_path, [{"id": i, "submit": i, "nodes": 1, "walltime": 100, "runtime": 50} for i in range(7)])
    else:
        p = tmp_path / "io.yaml"
        p.write_text(yaml.safe_dump({"platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": 1.0},
                                     "policy": "fifo", "apps": [{"id": "A", "nodes": 4, "release": 0,
                                                                 "iterations": 2, "compute": 10, "io_volume": 5}]}))
    parsed = []
    real = load.parse_text
    monkeypatch.setattr(load, "parse_text", lambda text, source, *a, **k: parsed.append(source) or real(text, source, *a, **k))
    r = CliRunner().invoke(cli, ["simulate", str(p), "--json"] + (["--policy", "stretch"] if level == "io" else []))
    assert r.exit_code == 0, r.output
    assert parsed == [str(p)]
    if level == "batch":
        assert json.loads(r.output)["jobs"] == 7
