"""SWF files a hostile or careless user gives: bounded reading of compressed blank lines, a read that stops at
the first fatal line, header counts and negative fields refused with their line, and files that give no job
refused instead of running "0 jobs"."""

from __future__ import annotations

import gzip
import json
import time

import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.specs.size import swf_job_lines
from iolab.workloads import swf
from iolab.workloads.swf import SWFError, read_swf, swf_jobs

JOB = "{n} {s} 0 50 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1"


def jobs(n: int, start: int = 1) -> str:
    return "".join(JOB.format(n=i, s=i) + "\n" for i in range(start, start + n))


def refused(path, **kw) -> SWFError:
    with pytest.raises(SWFError) as err:
        swf_jobs(path, **kw)
    return err.value


@pytest.mark.parametrize("compressed", [True, False])
def test_a_flood_of_blank_lines_is_refused_at_the_line_that_passes_the_bound(tmp_path, compressed):
    text = "; MaxNodes: 8\n" + "\n" * (swf.MAX_BLANK + 10) + jobs(2)
    path = tmp_path / ("b.swf.gz" if compressed else "b.swf")
    if compressed:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    start = time.perf_counter()
    err = refused(path)
    assert err.line == swf.MAX_BLANK + 1 and "blank or comment lines" in err.reason
    assert time.perf_counter() - start < 3


def test_gigabytes_of_compressed_blank_lines_are_refused_without_reading_them(tmp_path):
    path = tmp_path / "bomb.swf.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        block = b"\n" * (1 << 24)
        for _ in range(64):  # 1 GiB of newlines in about 1 MB
            f.write(block)
    start = time.perf_counter()
    err = refused(path)
    assert err.line == swf.MAX_BLANK + 1
    assert time.perf_counter() - start < 5  # the bound is met after ~1 MB of text, not 1 GiB
    assert swf_job_lines(path) == 0  # the size guard stops counting there too


def test_the_decompressed_text_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(swf, "MAX_BYTES", 2000)
    path = tmp_path / "long.swf"
    path.write_text("; é\n" + jobs(100))  # not ASCII: the text reader, which counts characters
    err = refused(path)
    assert "more than 2,000 characters" in err.reason and 30 < err.line < 60


def test_a_strict_read_stops_at_the_first_duplicate(tmp_path, monkeypatch):
    monkeypatch.setattr(swf, "_BLOCK", 4)
    calls = []
    real = swf._checked
    monkeypatch.setattr(swf, "_checked", lambda *a: calls.append(1) or real(*a))
    path = tmp_path / "d.swf"
    path.write_text("; MaxNodes: 8\n" + jobs(2) + JOB.format(n=1, s=9) + "\n" + jobs(400, start=3))
    err = refused(path)
    assert (err.line, err.reason) == (4, "job number 1 already used on line 2")
    assert len(calls) == 1  # the first block of 4 lines: the 100 blocks after it were never converted
    lenient = read_swf(path, strict=False)  # the lenient reader still reads on, and skips it
    assert [n for n, _ in lenient.problems] == [4] and len(lenient.table) == 402


@pytest.mark.parametrize("header,line", [("; MaxNodes: -4", 2), ("; MaxProcs: 0", 2), ("; MaxNodes: many", 2),
                                         ("; MaxRecords: 1.5", 2)])
def test_a_header_count_that_is_not_a_positive_integer_is_refused_with_its_line(tmp_path, header, line):
    path = tmp_path / "h.swf"
    path.write_text("; Version: 2.2\n" + header + "\n" + jobs(3))
    err = refused(path)
    assert err.line == line and "is not a positive integer" in err.reason
    lenient = read_swf(path, strict=False)
    key = header.split(":")[0][2:]
    assert key not in lenient.header and lenient.problems[0][0] == line  # ignored, and said


@pytest.mark.parametrize("field,value", [(4, "-5"), (4, "-0.5"), (9, "-100")])
def test_a_negative_field_other_than_minus_one_is_refused(tmp_path, field, value):
    parts = JOB.format(n=2, s=5).split()
    parts[field - 1] = value
    path = tmp_path / "n.swf"
    path.write_text("; MaxNodes: 8\n" + jobs(1) + " ".join(parts) + "\n")
    err = refused(path)
    assert err.line == 3 and f"field {field}" in err.reason and "negative" in err.reason


def test_minus_one_still_means_unknown(tmp_path):
    parts = JOB.format(n=1, s=0).split()
    parts[3] = "-1"
    path = tmp_path / "u.swf"
    path.write_text(" ".join(parts) + "\n")
    (job,) = swf_jobs(path)
    assert job.runtime == 0


@pytest.mark.parametrize("content,line,reason", [
    ("", 0, "no job line"),
    ("; MaxNodes: 8\n; Note: nothing ran\n\n", 0, "no job line"),
    ("; MaxNodes: 8\n1 0 0 50 -1 -1 -1 -1 100 -1 1 1 1 -1 1 -1 -1 -1\n", 2, "no usable job"),
])
def test_a_file_that_gives_no_job_is_refused(tmp_path, content, line, reason):
    path = tmp_path / "z.swf"
    path.write_text(content)
    err = refused(path)
    assert err.line == line and reason in err.reason


def test_every_line_malformed_under_strict_false_is_refused_too(tmp_path):
    path = tmp_path / "m.swf"
    path.write_text("1 2 3\nx y z\n")
    err = refused(path, strict=False)
    assert err.line == 1 and "no usable job" in err.reason


def spec_file(tmp_path, swf_text: str) -> str:
    (tmp_path / "w.swf").write_text(swf_text)
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"kind": "batch", "scheduler": "fcfs", "workload": {"source": "swf", "path": "w.swf"},
                             "platform": {"nodes": 8, "lps": {"rate": "1GB/s"},
                                          "hps": {"rate": "4GB/s", "capacity": "1TB"}, "stage_rate": "1GB/s"}}))
    return str(p)


@pytest.mark.parametrize("text,where", [("", "(file)"), ("; MaxNodes: -4\n" + jobs(2), "line 1"),
                                        ("; MaxNodes: 8\n" + jobs(1) + "2 5 0 -7 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1\n",
                                         "line 3")])
def test_the_command_line_exits_2_naming_the_line(tmp_path, text, where):
    r = CliRunner().invoke(cli, ["simulate", spec_file(tmp_path, text)])
    assert r.exit_code == 2 and where in r.output and "w.swf" in r.output and "Traceback" not in r.output, r.output
    assert "makespan" not in r.output


def test_a_study_on_a_trace_with_a_negative_header_starts_no_run(tmp_path):
    path = tmp_path / "neg.swf"
    path.write_text("; MaxNodes: -4\n" + jobs(5))
    r = CliRunner().invoke(cli, ["study", "soysal", "--trace", str(path), "--quick", "--no-ray",
                                 "--out", str(tmp_path / "out")])
    assert r.exit_code == 2 and "MaxNodes" in r.output and "Traceback" not in r.output, r.output
    assert not (tmp_path / "out" / "journal.jsonl").exists()
