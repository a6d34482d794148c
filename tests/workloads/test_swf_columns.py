"""The columnar SWF reader against the simplest line-by-line reader: the same records, the same skipped lines,
the same first error, on seeded random files full of the malformations the module doc lists (and a few it
does not: ``nan``, ``inf``, ``1_0``, blank and comment lines, a limit in the middle of bad lines)."""

from __future__ import annotations

import math
import random

import pytest

from iolab.workloads import swf
from iolab.workloads.swf import FIELDS, MAX_TIME, SWFError, read_swf

INTS = {0, 4, 7, 10, 11, 12, 13, 14, 15, 16}  # job, alloc_procs, req_procs, status, user, ... preceding_job
NONNEG = {3, 8}  # run_time, req_time: >= 0 or -1


def reference(lines: list[str], limit: int | None):
    """Line by line: (records as (line, values with None for -1), problems' line numbers)."""
    records, problems, seen = [], [], {}
    for n, raw in enumerate(lines, start=1):
        t = raw.strip()
        if not t or t.startswith(";"):
            continue
        parts = t.split()
        bad = len(parts) != 18
        vals = []
        if not bad:
            for i, tok in enumerate(parts):
                try:
                    v = float(tok)
                except ValueError:
                    bad = True
                    break
                if not math.isfinite(v) or abs(v) > MAX_TIME or (i in INTS and v != -1 and v != int(v)) \
                        or (i in NONNEG and v < 0 and v != -1):
                    bad = True
                    break
                vals.append(None if v == -1 else (int(v) if i in INTS else v))
        if not bad and (vals[0] is None or vals[0] <= 0 or vals[1] is None or vals[1] < 0):
            bad = True
        if not bad and vals[0] in seen:
            bad = True
        if bad:
            problems.append(n)
            continue
        seen[vals[0]] = n
        records.append((n, tuple(vals)))
        if limit is not None and len(records) >= limit:
            break
    return records, problems


def random_file(rng: random.Random) -> list[str]:
    lines = ["; MaxNodes: 100", "; MaxProcs: 100"]
    for k in range(rng.randint(0, 40)):
        f = [str(rng.randint(1, 30)), str(rng.choice([0, 5, 12.5, 100])), "-1", str(rng.choice([-1, 0, 30, 4.5])),
             str(rng.choice([-1, 0, 4, 8])), "-1", "-1", str(rng.choice([-1, 0, 2, 16])), str(rng.choice([-1, 0, 60])),
             "-1", "1", str(rng.choice([-1, 3, 7])), "1", "-1", "-1", "-1", "-1", "-1"]
        r = rng.random()
        if r < 0.05:
            f = f[:-1]
        elif r < 0.08:
            f.append("7")
        elif r < 0.30:
            i = rng.randrange(18)
            f[i] = rng.choice(["x", "nan", "inf", "-inf", "1e400", "2.5", "-3", "0", "1_0", "1e20", "-1", "0x10",
                               "1e-3", str(MAX_TIME * 2)])
        text = " ".join(f)
        if rng.random() < 0.1:
            lines.append(rng.choice(["", "   ", "; comment", ";Note: x"]))
        lines.append(rng.choice(["", "  ", "\t"]) + text)
    return lines


@pytest.mark.parametrize("block", [None, 3])
@pytest.mark.parametrize("seed", range(40))
def test_the_columnar_reader_agrees_with_a_line_by_line_one(tmp_path, monkeypatch, seed, block):
    """``block``: lines converted at once (3: many blocks, and a limit that stops reading early)."""
    if block:
        monkeypatch.setattr(swf, "_BLOCK", block)
    rng = random.Random(seed)
    for k in range(10):
        lines = random_file(rng)
        path = tmp_path / f"w{k}.swf"
        path.write_text("\n".join(lines) + "\n")
        limit = rng.choice([None, None, 1, 3, 10])
        want, bad = reference(lines, limit)
        got = read_swf(path, strict=False, limit=limit)
        mine = [(r.line, tuple(getattr(r, f) for f in FIELDS)) for r in got.records]
        assert mine == want, (seed, k)
        assert [n for n, _ in got.problems] == bad, (seed, k)
        assert all(type(a) is type(b) for (_, x), (_, y) in zip(mine, want) for a, b in zip(x, y))
        if bad:
            with pytest.raises(SWFError) as err:
                read_swf(path, strict=True, limit=limit)
            assert err.value.line == bad[0]
            assert err.value.reason == got.problems[0][1]
        else:
            assert [(r.line, r.job) for r in read_swf(path, limit=limit).records] == [(n, v[0]) for n, v in want]


def test_a_whole_trace_reads_as_line_by_line(kth):
    """KTH-SP2 (27 992 records): the columns and a line-by-line read give the same records."""
    import gzip

    path = kth
    lines = gzip.open(path, "rt").read().splitlines()
    want, bad = reference(lines, None)
    got = read_swf(path, strict=False)
    assert not bad and not got.problems and len(want) == 27992
    assert [(r.line, tuple(getattr(r, f) for f in FIELDS)) for r in got.records] == want


def test_a_trusted_job_is_what_model_construct_builds():
    """The reader's jobs skip pydantic's per-field default lookups (1.7 s and 70 MB of SDSC-BLUE's load):
    each must be the object ``Job.model_construct`` builds, to the attribute, and behave as one."""
    from iolab.specs.batch import Job
    from iolab.workloads.swf import _trusted_job

    rng = random.Random(7)
    for _ in range(200):
        fields = dict(id=str(rng.randint(1, 10**6)), user=rng.choice(["unknown", "12"]), submit=rng.random() * 1e6,
                      nodes=rng.randint(1, 128), walltime=rng.random() * 1e4 + 1, runtime=rng.random() * 1e4)
        a, b = _trusted_job(fields), Job.model_construct(**fields)
        assert a == b and a.__dict__ == b.__dict__ and list(a.__dict__) == list(b.__dict__)
        assert a.model_fields_set == b.model_fields_set
        assert a.__pydantic_extra__ == b.__pydantic_extra__ and a.__pydantic_private__ == b.__pydantic_private__
        assert a.model_dump() == b.model_dump() and a.model_dump_json() == b.model_dump_json()
        assert a.model_copy(update={"nodes": 3}).nodes == 3 and hash(a.id) == hash(b.id)
        c = a.model_copy()
        assert c == a and c is not a and c.__dict__ is not a.__dict__
    # the jobs of a trace share one fields set: a copy with an update must leave the others' alone
    x, y = (_trusted_job(dict(id=i, user="1", submit=0.0, nodes=1, walltime=1.0, runtime=1.0)) for i in "xy")
    z = x.model_copy(update={"input": 5.0})
    assert z.model_fields_set == {"id", "user", "submit", "nodes", "walltime", "runtime", "input"}
    assert x.model_fields_set == y.model_fields_set == {"id", "user", "submit", "nodes", "walltime", "runtime"}
    with pytest.raises(Exception, match="frozen"):
        x.nodes = 2


def test_trusted_jobs_share_their_dicts_keys_and_nothing_else():
    """Their dicts are copies of one key-sharing dict: smaller than model_construct's (CPython), each
    with its own values, and the template is left as it was; a pickled job comes back equal."""
    import pickle
    import platform
    import sys

    from iolab.specs.batch import Job
    from iolab.workloads import swf

    template = dict(swf._JOB_DICT)
    jobs = [swf._trusted_job(dict(id=str(i), user="1", submit=float(i), nodes=1 + i, walltime=9.0, runtime=float(i)))
            for i in range(3)]
    assert [(j.id, j.submit, j.nodes) for j in jobs] == [("0", 0.0, 1), ("1", 1.0, 2), ("2", 2.0, 3)]
    assert dict(swf._JOB_DICT) == template and swf._JOB_DICT["id"] != "2"
    assert pickle.loads(pickle.dumps(jobs)) == jobs
    if platform.python_implementation() == "CPython":
        plain = Job.model_construct(id="0", user="1", submit=0.0, nodes=1, walltime=9.0, runtime=0.0)
        assert sys.getsizeof(jobs[0].__dict__) < sys.getsizeof(plain.__dict__)


def _same_trace(a, b) -> bool:
    import numpy as np

    return (a.header == b.header and a.problems == b.problems and a.lines.tolist() == b.lines.tolist()
            and np.array_equal(a.table, b.table, equal_nan=True)
            and [x.__dict__ for x in a.jobs(strict=False)] == [x.__dict__ for x in b.jobs(strict=False)])


def _read(path, limit, fast: bool):
    """``read_swf`` as it reads the file (``fast``), or through the text reader line by line: the trace
    (or the error of a file it cannot read) with ``strict=False``, and the first error with ``strict=True``."""
    with pytest.MonkeyPatch.context() as mp:
        if not fast:
            mp.setattr(swf, "_plain_lines", lambda p, stop=None: None)
        try:
            trace = read_swf(path, strict=False, limit=limit)
        except SWFError as e:
            trace = (e.line, e.reason)
        try:
            read_swf(path, strict=True, limit=limit)
            first = None
        except SWFError as e:
            first = (e.line, e.reason)
    return trace, first


ODD = ["\r\n", "\r", "\x1c", "\xe9", "\xa0", "\ufeff", "\x0b", "\x0c", "\x00", "1" * (swf.MAX_LINE + 1)]


@pytest.mark.parametrize("block", [None, 3])
@pytest.mark.parametrize("seed", range(25))
def test_the_bytes_and_text_readers_give_the_same_trace(tmp_path, monkeypatch, seed, block):
    """A plain ASCII file is split as bytes and converted by numpy's parser; any other (CRLF, a lone CR,
    non-ASCII, the separators only ``str`` takes for whitespace, a line too long, a truncated .gz) is
    read as text: both give the same header, records, problems, jobs and first error, with a limit too."""
    import gzip

    if block:
        monkeypatch.setattr(swf, "_BLOCK", block)
    rng = random.Random(1000 + seed)
    for k in range(8):
        lines = random_file(rng)
        if rng.random() < 0.3:
            lines.insert(rng.randrange(len(lines) + 1), "; Late: header")
        odd = rng.choice(ODD + [None] * 4)
        data = "\n".join(lines) + rng.choice(["\n", ""])
        if odd == "\r\n":
            data = data.replace("\n", "\r\n")
        elif odd is not None:
            at = rng.randrange(len(data) + 1)
            data = data[:at] + odd + data[at:]
        raw = data.encode("utf-8")
        path = tmp_path / f"w{k}.swf"
        truncated = False
        if rng.random() < 0.5:
            raw = gzip.compress(raw)
            if rng.random() < 0.2:
                raw, truncated = raw[: len(raw) * 2 // 3], True  # the fast path gives up, the text reader says where
        path.write_bytes(raw)
        plain = odd is None or odd in ("\r\n", "\x0b", "\x0c", "\x00")
        assert (swf._plain_lines(path) is not None) == (plain and not truncated), (seed, k, odd)
        limit = rng.choice([None, None, 1, 3, 10])
        (fast, fast_first), (text, text_first) = _read(path, limit, True), _read(path, limit, False)
        assert fast_first == text_first, (seed, k, odd)
        if isinstance(fast, tuple) or isinstance(text, tuple):
            assert fast == text, (seed, k, odd)
        else:
            assert _same_trace(fast, text), (seed, k, odd)


@pytest.mark.parametrize("odd", ["\r", "\x1c", "\xe9", "1" * (swf.MAX_LINE + 1)])
def test_what_the_bytes_split_would_read_otherwise_goes_to_the_text_reader(tmp_path, odd):
    path = tmp_path / "w.swf"
    path.write_text("; MaxNodes: 4\n1 0 -1 5 1 -1 -1 1 10 -1 1 3 1 -1 -1 -1 -1 -1\n" + odd + "2 0 -1 5 1 -1 -1 1 10 -1 1 3 1 -1 -1 -1 -1 -1\n",
                    encoding="utf-8", newline="")
    assert swf._plain_lines(path) is None


def test_the_kth_trace_takes_the_fast_path(kth):
    assert len(swf._plain_lines(kth)) == 28016 - 0  # every line of the file, headers included


def test_numpys_parser_reads_a_token_as_float_does_or_not_at_all():
    """:func:`swf._numbers` converts what ``float`` converts, to the same value, or refuses the block
    (which then goes through ``float`` line by line): never another value, never a token ``float`` refuses."""
    rng = random.Random(5)
    alphabet = "0123456789+-.eEinfatyINFATY_"
    for _ in range(20000):
        if rng.random() < 0.5:
            tok = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
        else:
            tok = repr(rng.uniform(-1e9, 1e9) * rng.choice([1, 1e-300, 1e300, 1e-5]))[: rng.randint(1, 25)]
        try:
            want = float(tok)
        except ValueError:
            want = None
        table = swf._numbers([(" ".join(["1"] * 17) + " " + tok).encode()])
        if table is None:
            continue  # refused: the line goes to float
        got = table[0, 17]
        assert want is not None, tok
        assert got == want or (math.isnan(got) and math.isnan(want)), tok
        assert math.copysign(1, got) == math.copysign(1, want), tok


def test_integer_lines_read_as_float_reads_them():
    """:func:`swf._numbers` reads a block of integers with numpy's integer parser: the same floats as ``float``
    (rounded alike past 2**53, an int64's overflow read by the float parser), ``-0`` included, on any line of
    the block; a block with one float token is read by the float parser, every value as ``float`` reads it."""
    def line(last: str) -> bytes:
        return (" ".join(["1"] * 17) + " " + last).encode()

    for tok in ("0", "-0", "+0", "-000", "7", "-1", "+12", "00012", str(2 ** 53 + 1), str(2 ** 63 - 1), str(2 ** 63),
                str(-2 ** 63), str(-2 ** 63 - 1), "9" * 20):
        for block in ([line(tok)], [line("5"), line(tok)], [line(tok), line("2.5")]):
            table = swf._numbers(block)
            assert table is not None, tok
            for row, text in zip(table, block):
                want = [float(x) for x in text.split()]
                assert row.tolist() == want and [math.copysign(1, x) for x in row] == [math.copysign(1, x) for x in
                                                                                        want], (tok, block)


def test_the_readers_jobs_are_what_model_construct_builds(kth):
    """``SWFTrace.jobs`` builds its jobs without a call per job: each is still ``Job.model_construct`` of its
    fields, to the attribute order and the fields set, and jobs of one user share the user's string."""
    from iolab.specs.batch import Job

    jobs = read_swf(kth, limit=500).jobs()
    assert len(jobs) == 500
    for job in jobs:
        fields = {f: getattr(job, f) for f in ("id", "user", "submit", "nodes", "walltime", "runtime")}
        built = Job.model_construct(**fields)
        assert job == built and list(job.__dict__.items()) == list(built.__dict__.items())
        assert job.model_fields_set == built.model_fields_set and job.__pydantic_extra__ is None
        assert type(job.nodes) is int and type(job.submit) is float and type(job.id) is str
    by_user = {}
    for job in jobs:
        assert by_user.setdefault(job.user, job.user) is job.user


def test_a_file_above_the_fast_paths_size_is_read_as_text(tmp_path, monkeypatch):
    """Above ``_FAST_BYTES`` decompressed (plain or gzip) the file streams through the text reader: the same trace."""
    import gzip

    lines = ["; MaxNodes: 100"] + [f"{i} {i} -1 5 4 -1 -1 4 10 -1 1 3 1 -1 -1 -1 -1 -1" for i in range(1, 60)]
    text = "\n".join(lines) + "\n"
    (tmp_path / "a.swf").write_text(text)
    (tmp_path / "a.swf.gz").write_bytes(gzip.compress(text.encode()))
    want = {name: read_swf(tmp_path / name) for name in ("a.swf", "a.swf.gz")}
    assert all(swf._plain_lines(tmp_path / name) is not None for name in want)
    monkeypatch.setattr(swf, "_FAST_BYTES", len(text) - 1)
    for name, trace in want.items():
        assert swf._plain_lines(tmp_path / name) is None
        assert _same_trace(read_swf(tmp_path / name), trace)


@pytest.mark.parametrize("seed", range(20))
def test_the_readers_rows_are_its_jobs(tmp_path, seed):
    """``SWFTrace.job_rows`` (what a run reads, ``load_workload(rows=True)``) gives every job of ``jobs``, the
    same fields of the same types and values, the same unusable records; the kernel's queued view of a row,
    cut from the tuple, is ``QueuedJob.from_job`` of the job."""
    from iolab.middleware.policies.batch.snapshot import QueuedJob, cut_queued
    from iolab.specs.batch import Job

    path = tmp_path / "t.swf"
    path.write_text("\n".join(random_file(random.Random(seed))) + "\n")
    jobs_trace, rows_trace = read_swf(path, strict=False), read_swf(path, strict=False)
    jobs, rows = jobs_trace.jobs(max_nodes=8, strict=False), rows_trace.job_rows(max_nodes=8, strict=False)
    assert rows_trace.unusable == jobs_trace.unusable
    assert len(rows) == len(jobs)
    for job, row in zip(jobs, rows):
        for name in Job.model_fields:
            mine, theirs = getattr(row, name), getattr(job, name)
            assert mine == theirs and type(mine) is type(theirs), name
        assert row.stated is row and job.stated is job
    assert cut_queued(rows) == [QueuedJob.from_job(j) for j in jobs] == [QueuedJob.from_job(r) for r in rows]
    assert all(type(q) is QueuedJob for q in cut_queued(rows)) and cut_queued(jobs) is None
