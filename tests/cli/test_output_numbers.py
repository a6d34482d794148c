"""Numbers in user output keep their digits and never turn to scientific notation.

``iolab validate --traces`` prints and writes its numbers with their digits.

No real run: a simulation made with other costs (a slower bandwidth, launch and exit costs) is
stored as the real run of the nominal spec would be (its runtime, its spec, its policy), so
validate reads it as a kept trace.  The reference for every printed cell is the report itself
(``--json`` of the same command): the cell must read back as the report's value to the digits a
person needs (a slowdown of 1.234 is not ``1``, a utilisation of 0.81 is not ``1``).
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.cli.outcome import problems
from iolab.sim.batch.run import simulate_batch
from iolab.sim.io.run import simulate
from iolab.specs import parse_spec
from iolab.trace import TraceBuilder, write_trace
from iolab.units import format_duration, parse_size, pvalue, short, size_text

from small_runs import small_batch

SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")


def io_doc(bandwidth=1.0, **overheads) -> dict:
    """Three apps whose slowdowns are near 1 and whose makespan is thousands of seconds."""
    return {
        "name": "digits", "policy": "fifo",
        "platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": bandwidth, "overheads": overheads},
        "apps": [{"id": f"a{i}", "nodes": 2, "release": 7.0 * i, "iterations": 4, "compute": 1000.0 + 370 * i,
                  "io_volume": v} for i, v in enumerate((300.0, 650.0, 1100.0))],
        "emulator": {"time_scale": 0.001},
    }


def kept_io_traces(tmp_path) -> tuple[str, str]:
    nominal = parse_spec(io_doc())
    spec = tmp_path / "digits.json"
    spec.write_text(json.dumps(io_doc()))
    work = tmp_path / "kept"
    work.mkdir()
    for name, bandwidth in (("fifo.h5", 0.8), ("fifo-r1.h5", 0.83)):
        real = simulate(parse_spec(io_doc(bandwidth, launch=3.0, exit=2.0, io_phase=0.5)))
        real.attrs.update(runtime="emulator", spec=nominal.model_dump(mode="json"), policy="fifo",
                          time_scale=nominal.emulator.time_scale, host="testhost")
        write_trace(real, work / name)
    return str(spec), str(work)


def table_rows(text: str, first: str) -> list[list[str]]:
    """Rows (cells split on two spaces or more) of the tables whose row starts with ``first``."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if line.startswith(first + " ")]


def reads_as(cell: str, value: float, rel: float = 0, abs: float = 0) -> bool:
    return float(cell.replace(",", "")) == pytest.approx(value, rel=rel, abs=abs)


def test_io_tables_keep_the_slowdowns_digits_and_write_the_makespan_as_a_time(tmp_path):
    spec, work = kept_io_traces(tmp_path)
    args = ["validate", spec, "--policies", "fifo", "--traces", work, "--seeds", "5", "--repeats", "2"]
    js = CliRunner().invoke(cli, [*args, "--json"])
    assert js.exit_code == 0, js.output
    c = json.loads(js.output)["policies"]["fifo"]
    assert all(1.0 < v["emulator"] < 2.0 for v in c["apps"].values())  # slowdowns: the case that printed `1`
    assert c["makespan"]["emulator"] > 3600
    out = CliRunner().invoke(cli, [*args, "--report", str(tmp_path / "page")])
    assert out.exit_code == 0, out.output
    text = out.stdout
    assert not SCIENTIFIC.search(text), text
    for app, v in c["apps"].items():
        rows = table_rows(text, app)
        first = rows[0]  # the deterministic table: app, simulated, emulated, rel. error
        assert re.fullmatch(r"\d\.\d{3}", first[1]) and re.fullmatch(r"\d\.\d{3}", first[2]), first
        assert reads_as(first[1], v["simulator"], 6e-4) and reads_as(first[2], v["emulator"], 6e-4)
        spread = rows[1]  # median [min..max], emulated, ...
        assert reads_as(spread[2], c["spread"]["apps"][app]["emulator"], 6e-4)
        dist = rows[2]  # real median, sim median [band], ...
        assert reads_as(dist[1], c["distribution"]["apps"][app]["real_median"], 6e-4)
    m = table_rows(text, "makespan")
    assert m[0][1:3] == [format_duration(c["makespan"]["simulator"]), format_duration(c["makespan"]["emulator"])]
    # report.md: the same digits, no scientific notation anywhere (its median, band and bandwidth cells included)
    md = (tmp_path / "page" / "report.md").read_text()
    assert not SCIENTIFIC.search(md), md
    for app, v in c["apps"].items():
        row = next(line for line in md.splitlines() if line.startswith(f"| {app} |"))
        cells = [x.strip() for x in row.strip("|").split("|")]
        assert reads_as(cells[1], v["simulator"], 6e-4) and reads_as(cells[2], v["emulator"], 6e-4), row
    assert f"| makespan | {format_duration(c['makespan']['simulator'])} | " in md


def test_batch_run_table_keeps_the_utilisations_digits(tmp_path):
    doc = small_batch("digits-batch")
    doc["workload"] = [{"id": j, "submit": 100 * i, "nodes": n, "walltime": 9000, "runtime": r, "input": "10GB",
                        "output": "10GB", "storage": "30GB"}
                       for i, (j, n, r) in enumerate((("a", 3, 8000), ("b", 2, 5100), ("c", 1, 2300)))]
    spec = parse_spec(doc)
    real = simulate_batch(parse_spec({**doc, "platform": {**doc["platform"], "overheads": {"launch": 37.0}}}))
    real.attrs.update(runtime="emulator-batch", spec=spec.model_dump(mode="json"), host="testhost",
                      calibration={"version": 2, "wall": {"launch": 0.37, "exit": 0.0123, "io_phase": 0.00002},
                                   "samples": {"launch": 2, "exit": 2, "io_phase": 4},
                                   "delivered": {"lps": 0.9, "hps": float("nan"), "stage": 0.95}})
    work = tmp_path / "kept"
    write_trace(real, work / f"{spec.scheduler.kind}.h5")
    (tmp_path / "b.json").write_text(json.dumps(doc))
    args = ["validate", str(tmp_path / "b.json"), "--traces", str(work)]
    js = CliRunner().invoke(cli, [*args, "--json"])
    assert js.exit_code == 0, js.output
    run = json.loads(js.output)["uncalibrated"]["run"]
    assert 0 < run["node_utilisation"]["real"] < 1 and run["node_utilisation"]["real"] != 0.5
    out = CliRunner().invoke(cli, [*args, "--report", str(tmp_path / "page")])
    assert out.exit_code == 0, out.output
    assert not SCIENTIFIC.search(out.stdout), out.stdout  # the calibration line's 2e-05 s included
    for key in ("node_utilisation", "hps_utilisation"):
        row = table_rows(out.stdout, key.replace("_", " "))[0]
        assert re.fullmatch(r"\d\.\d{4}", row[1]) and reads_as(row[1], run[key]["real"], abs=5e-5), row
        assert reads_as(row[2], run[key]["sim"], abs=5e-5), row
    row = table_rows(out.stdout, "makespan")[0]
    assert row[1:3] == [format_duration(run["makespan"]["real"]), format_duration(run["makespan"]["sim"])]
    md = (tmp_path / "page" / "report.md").read_text()
    assert not SCIENTIFIC.search(md), md
    assert f"| makespan | {format_duration(run['makespan']['real'])} | " in md


def test_a_deleted_work_folder_is_reported_with_the_time_it_was_seen_as_a_time():
    tb = TraceBuilder()
    tb.add_job(id="A", status="ok", start=0.0, end=14000.0, release=0.0, rank=0, nodes=1)
    trace = tb.build(runtime="emulator", work_dir="/tmp/w", work_dir_deleted=13860.4)
    (said,) = problems(trace)
    assert "the work folder /tmp/w was deleted during the run (seen at 3:51:00)" in said, said


@pytest.mark.parametrize("nbytes, text", [
    (200e9, "200 GB"), (2048e9, "2.048 TB"), (2**40, "1 TiB"), (1.5 * 2**30, "1.5 GiB"), (512, "512 B"),
    (1234567, "1.235 MB"),  # neither unit exact in 4 digits: rounded, in a decimal unit
])
def test_size_text_is_exact_when_it_can_be_and_reads_back(nbytes, text):
    assert size_text(nbytes) == text
    assert parse_size(text) == pytest.approx(nbytes, rel=5e-4)


@pytest.mark.parametrize("value, text", [(0.8, "0.8"), (13860.4, "13,860"), (2e-05, "0.00002"), (2.0, "2"),
                                         (float("nan"), "-"), (120, "120")])
def test_short_numbers_in_sentences(value, text):
    assert short(value) == text


def test_pvalues_never_in_scientific_notation():
    assert [pvalue(p) for p in (0.81, 0.0123, 0.001, 3.2e-05, float("nan"))] == ["0.81", "0.012", "0.001",
                                                                                 "< 0.001", "-"]
