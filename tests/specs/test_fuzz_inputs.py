"""Fuzzing every input a person hands to iolab: the three spec kinds (io, batch, campaign), the
importers (SWF, Theta) and the spec reader on raw bytes.

Each case is a valid document mutated by hypothesis (a value replaced by a nasty one, a key
deleted or added, the text cut or its bytes flipped) and then given to the command line in this
process.  A case fails the test if it

- raises anything but a clean refusal (exit 2 with a message): a **traceback**;
- runs longer than :data:`HANG_SECONDS`: a **hang** (SIGALRM);
- is accepted and its run yields a non-finite metric: **nonsensical**.

Bounded to well under a minute by default (460 cases, the same every run); ``IOLAB_FUZZ_SCALE=10``
(an env var) tries ten times as many, ``IOLAB_FUZZ_RANDOM=1`` new random ones each run.  The figures (cases tried, refused cleanly, ran) are printed at the end of the module (``-s``)
and, with ``IOLAB_FUZZ_REPORT=FILE``, written as JSON.
"""

from __future__ import annotations

import copy
import json
import math
import os
import signal
from collections import Counter
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iolab.campaign.expand import expand, load_campaign
from iolab.campaign.task import execute
from iolab.cli import cli
from iolab.errors import IolabError
from iolab.workloads import swf_jobs, theta_jobs

SCALE = float(os.environ.get("IOLAB_FUZZ_SCALE", "1"))
HANG_SECONDS = 20
FIGURES: Counter = Counter()

IO = {"kind": "io", "name": "fz", "platform": {"io_nodes": 2, "nodes_per_io_node": 32, "bandwidth": 2.0},
      "policy": "fifo", "mapping": "first-fit", "seed": 1, "sim": {"mode": "event", "dt": 1.0},
      "apps": [{"id": "A", "nodes": 8, "release": 0, "iterations": 3, "compute": 10, "io_volume": 5},
               {"id": "B", "nodes": 16, "release": 2, "phases": [{"compute": 1}, {"write": 2}, {"read": 1}]}]}
BATCH = {"kind": "batch", "name": "fz",
         "platform": {"nodes": 16, "lps": {"rate": "1GB/s"}, "hps": {"rate": "15GB/s", "capacity": "200GB"},
                      "stage_rate": "5GB/s"},
         "scheduler": "sas", "placement": "worst-fit", "seed": 2,
         "workload": [{"id": 1, "submit": 0, "nodes": 2, "walltime": 100, "runtime": 50, "input": "1GB",
                       "output": "2GB", "storage": "3GB"},
                      {"id": 2, "submit": 10, "nodes": 16, "walltime": 200, "runtime": 200}]}
FEITELSON = {**BATCH, "workload": {"source": "feitelson", "jobs": 20, "shortest": 60, "longest": 3600}}
CAMPAIGN = {"kind": "campaign", "name": "fz", "base": {k: v for k, v in IO.items() if k != "kind"},
            "axes": {"policies": ["fifo", "stretch"], "seeds": [1], "platform": {"bandwidth": [1.0, 2.0]},
                     "workloads": [{"generate": "carretero", "alpha": [1.0], "count": 1,
                                    "params": {"apps": [2, 3], "iterations": [2, 4], "nodes_per_io_node": 32}}]}}

NASTY = st.one_of(
    st.sampled_from([None, True, False, 0, -1, 1, 3, "3", "", "x", "x/../../../tmp/evil", ".", "..",
                     1e308, -1e308, 1e-320, float("nan"), float("inf"), 2**63, 10**30, 10**400, "1e308",
                     [], {}, [1], {"a": 1}, "200GB", "-5GB", "1 GB/s", "5m", "é\u202e", "\x00"]),
    st.integers(min_value=-10**6, max_value=10**7),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)


def paths(doc, prefix=()):
    """Every path (tuple of keys/indices) into ``doc``."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


@st.composite
def mutated(draw, seed_doc):
    doc = copy.deepcopy(seed_doc)
    for _ in range(draw(st.integers(1, 3))):
        where = [p for p in paths(doc) if p]
        path = draw(st.sampled_from(where))
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        action = draw(st.sampled_from(["replace", "replace", "replace", "delete", "add"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "nodes", "path", "source", "kind"]))] = draw(NASTY)
        else:
            parent[path[-1]] = draw(NASTY)
        if not doc:
            break
    return doc


def dump(doc) -> str:
    """YAML that keeps what hypothesis made (NaN, huge ints) as YAML would read it."""
    return yaml.safe_dump(doc, allow_unicode=True)


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


@pytest.fixture(autouse=True)
def alarm():
    old = signal.signal(signal.SIGALRM, _alarm)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def guarded(fn):
    """Run ``fn`` under the hang alarm; 'hang' if it takes too long."""
    signal.alarm(HANG_SECONDS)
    try:
        return fn()
    except Hang:
        FIGURES["hang"] += 1
        pytest.fail(f"hang: more than {HANG_SECONDS} s")
    finally:
        signal.alarm(0)


def classify_cli(args: list[str], text: str | bytes, tmp: Path, suffix=".yaml", check_metrics=True) -> None:
    f = tmp / f"spec{suffix}"
    f.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    r = guarded(lambda: CliRunner().invoke(cli, args + [str(f)]))
    FIGURES["tried"] += 1
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        FIGURES["traceback"] += 1
        raise AssertionError(f"traceback on\n{text!r}\n{r.output}") from r.exception
    if r.exit_code == 2:
        assert r.output.strip(), "a refusal says why"
        FIGURES["refused"] += 1
        return
    assert r.exit_code == 0, f"exit {r.exit_code} on\n{text!r}\n{r.output}"
    FIGURES["ran"] += 1
    if check_metrics:
        m = json.loads(r.output)
        bad = {k: v for k, v in m.items() if isinstance(v, (int, float, type(None))) and k in
               ("makespan", "max_stretch", "mean_turnaround", "node_utilisation") and
               (v is None or not math.isfinite(v))}
        if bad:
            FIGURES["nonsensical"] += 1
            raise AssertionError(f"accepted spec with non-finite metrics {bad}:\n{text}")


SIM = ["simulate", "--json", "--max-events", "20000", "--max-jobs", "60"]
FUZZ = settings(max_examples=int(60 * SCALE), deadline=None, derandomize=not os.environ.get("IOLAB_FUZZ_RANDOM"),
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.filter_too_much, HealthCheck.data_too_large])


@FUZZ
@given(doc=mutated(IO))
def test_fuzz_io_specs(doc, tmp_path):
    classify_cli(SIM, dump(doc), tmp_path)


@FUZZ
@given(doc=st.one_of(mutated(BATCH), mutated(FEITELSON)))
def test_fuzz_batch_specs(doc, tmp_path):
    classify_cli(SIM, dump(doc), tmp_path)


@settings(FUZZ, max_examples=int(40 * SCALE))
@given(doc=mutated(CAMPAIGN))
def test_fuzz_campaigns(doc, tmp_path):
    """Dry run through the CLI, then the first runs through the worker: none ok with a non-finite metric."""
    classify_cli(["sweep", "--dry-run", "--json"], dump(doc), tmp_path, check_metrics=False)
    f = tmp_path / "spec.yaml"
    try:
        runs = guarded(lambda: expand(load_campaign(f), f))
    except IolabError:
        return
    for run in runs[:2]:
        rec = guarded(lambda: execute(run.payload()))
        if rec["status"] == "ok":
            bad = {k: v for k, v in rec["metrics"].items() if k in ("makespan", "max_stretch") and v is None}
            if bad:
                FIGURES["nonsensical"] += 1
                raise AssertionError(f"a run recorded ok with non-finite metrics {bad}")


@FUZZ
@given(raw=st.binary(max_size=300), doc=mutated(IO), cut=st.integers(0, 400), flip=st.integers(0, 400))
def test_fuzz_raw_bytes(raw, doc, cut, flip, tmp_path):
    """The spec reader on bytes: random ones, and a valid spec cut short or with a byte flipped."""
    text = bytearray(dump(doc).encode("utf-8", "surrogatepass"))
    text = text[:cut] if cut < len(text) else text
    if text and flip < len(text):
        text[flip] ^= 0x80
    for data, suffix in ((raw, ".yaml"), (bytes(text), ".yaml"), (raw, ".json")):
        classify_cli(SIM, data, tmp_path, suffix=suffix)


SWF_TOKENS = st.sampled_from(["1", "0", "-1", "2", "100", "4", "3.5", "x", "nan", "inf", "1e308", "-7",
                              "99999999999999999999", ";", "; MaxNodes: 0", "; MaxProcs: 4"])


@FUZZ
@given(lines=st.lists(st.lists(SWF_TOKENS, min_size=0, max_size=20).map(" ".join), max_size=12),
       strict=st.booleans())
def test_fuzz_swf(lines, strict, tmp_path):
    good = ["1 0 1 100 4 -1 -1 4 200 -1 1 3 1 -1 1 -1 -1 -1", "2 5 1 50 8 -1 -1 8 100 -1 1 3 1 -1 1 -1 -1 -1"]
    f = tmp_path / "t.swf"
    f.write_text("\n".join(good + lines) + "\n")
    FIGURES["tried"] += 1
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            jobs = guarded(lambda: swf_jobs(f, strict=strict))
    except IolabError as exc:
        assert str(f) in exc.message
        FIGURES["refused"] += 1
        return
    FIGURES["ran"] += 1
    assert all(math.isfinite(j.submit) and math.isfinite(j.runtime) for j in jobs)


THETA_JOB = {"id": 1, "nodesUsed": 2, "submissionTime": "2019-01-01 00:00:00", "walltimeSeconds": 100,
             "runtimeSeconds": 50, "readBytes": 10, "writtenBytes": 20}


@FUZZ
@given(doc=mutated({"jobs": [THETA_JOB, {**THETA_JOB, "id": 2}, {**THETA_JOB, "id": 3}]}))
def test_fuzz_theta(doc, tmp_path):
    f = tmp_path / "theta.yaml"
    f.write_text(dump(doc))
    FIGURES["tried"] += 1
    try:
        jobs = guarded(lambda: theta_jobs(f))
    except IolabError as exc:
        assert str(f) in exc.message
        FIGURES["refused"] += 1
        return
    FIGURES["ran"] += 1
    assert all(math.isfinite(j.submit) and j.nodes >= 1 for j in jobs)


def test_zz_fuzz_figures():
    """Print (and with IOLAB_FUZZ_REPORT, write) the figures of this module's cases."""
    figures = {k: FIGURES.get(k, 0) for k in ("tried", "refused", "ran", "traceback", "hang", "nonsensical")}
    print(f"\nfuzz figures: {figures}")
    if os.environ.get("IOLAB_FUZZ_REPORT"):
        Path(os.environ["IOLAB_FUZZ_REPORT"]).write_text(json.dumps(figures, indent=1))
    if figures["tried"]:
        assert figures["refused"] + figures["ran"] == figures["tried"]
