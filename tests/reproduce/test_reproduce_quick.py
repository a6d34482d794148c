"""``iolab reproduce --quick``: every claim of the registry runs and gets a row; the scorecard's files; the
generated section of docs/results.md against the scorecard."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.reproduce.claim import PAPERS
from iolab.reproduce.criteria import NOT, REPRODUCED, VERDICTS, Near
from iolab.reproduce.registry import CLAIMS
from iolab.reproduce.run import load_measurements, scorecard
from iolab.reproduce.scorecard import (
    BEGIN, END, _cell, block_rows, read_block, results_block, rewrite_block,
)
from shared_data import REPO, SHARED_DATA

pytestmark = [pytest.mark.long, pytest.mark.skipif(not (SHARED_DATA / "KTH-SP2-1996-2.1-cln.swf.gz").is_file(),
                                                   reason="the shared traces are not here")]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    res = CliRunner().invoke(cli, ["reproduce", "--quick", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out, res.output


def test_every_claim_runs_at_quick_and_has_a_row(quick):
    out, text = quick
    data = json.loads((out / "scorecard.json").read_text())
    assert data["size"] == "quick"
    rows = {r["id"]: r for r in data["rows"]}
    assert sorted(rows) == sorted(c.id for c in CLAIMS)
    for c in CLAIMS:
        r = rows[c.id]
        assert r["verdict"] in VERDICTS
        assert "no measurement" not in r["why"] and "unreadable" not in r["why"], (c.id, r["why"])
        assert r["why"], c.id  # every verdict says why
    total = data["total"]
    assert sum(total[v] for v in VERDICTS) == len(CLAIMS)
    assert all(sum(data["counts"][p][v] for v in VERDICTS) == sum(1 for c in CLAIMS if c.paper == p) for p in PAPERS)
    assert "quick" in text and "quick" in (out / "scorecard.md").read_text().splitlines()[2]
    with open(out / "scorecard.csv") as f:
        assert [r["id"] for r in csv.DictReader(f)] == [r["id"] for r in data["rows"]]
    assert all((out / "figures" / f"{p}.png").is_file() for p in PAPERS)
    for p in PAPERS:  # each paper's campaigns and measurements, rejudged without rerunning
        assert (out / p / "measurements.json").is_file()


def test_a_planted_change_of_a_papers_number_flips_the_quick_verdict(quick):
    out, _ = quick
    records = load_measurements(out, PAPERS)
    card = scorecard(records, "quick")
    row = next(r for r in card.rows if r.claim.id == "carretero2020.fig7.starving")
    assert row.verdict == REPRODUCED  # Table 1's starving policy: 1.83, the paper's "up to 1.8"
    planted = [replace(c, criterion=Near(3.0, 0.1)) if c.id == row.claim.id else c for c in CLAIMS]
    again = next(r for r in scorecard(records, "quick", planted).rows if r.claim.id == row.claim.id)
    assert again.verdict == NOT and again.measured == row.measured


def test_the_generated_results_section_matches_the_scorecard(quick, tmp_path):
    out, _ = quick
    card = scorecard(load_measurements(out, PAPERS), "quick", command="iolab reproduce --quick")
    page = tmp_path / "results.md"
    page.write_text(f"# Results\n\nbefore\n\n{BEGIN}\nold\n{END}\n\nafter\n")
    page.write_text(rewrite_block(page.read_text(), results_block(card)))
    text = page.read_text()
    assert text.startswith("# Results\n\nbefore\n\n") and text.endswith("\nafter\n")
    got = block_rows(read_block(text))
    want = [r.as_dict() for r in card.rows]
    assert [g["id"] for g in got] == [w["id"] for w in want]
    for g, w in zip(got, want):
        assert g["verdict"] == w["verdict"]
        assert g["iolab"] == _cell(w["iolab"]) and g["paper_value"] == _cell(w["paper_value"])
    with pytest.raises(ValueError):
        rewrite_block("no block here", results_block(card))


def test_docs_results_block_is_a_scorecard_of_the_current_registry():
    """docs/results.md's generated section: one row per claim of the registry, with the registry's paper numbers
    and tolerances, and counts that add up from its rows (regenerate it with `iolab reproduce --paper-size --docs
    docs/results.md` when the registry changes)."""
    block = read_block((REPO / "docs" / "results.md").read_text())
    rows = block_rows(block)
    by = {c.id: c for c in CLAIMS}
    assert sorted(r["id"] for r in rows) == sorted(by)
    for r in rows:
        c = by[r["id"]]
        assert r["paper_value"] == _cell(c.criterion.paper) and r["tolerance"] == _cell(c.criterion.tolerance)
    total = re.search(r"^\| \*\*all\*\* \| (\d+) \| (\d+) \(\d+\) \| (\d+) \| (\d+) \| (\d+) \|$", block, re.M)
    assert total, "the counts table has no total line"
    counted = [sum(1 for r in rows if r["verdict"] == v) for v in VERDICTS]
    assert [int(x) for x in total.groups()] == [len(rows), *counted]


def test_docs_option_rewrites_the_block_from_a_rerun_that_resumes(quick, tmp_path):
    out, _ = quick
    page = tmp_path / "results.md"
    page.write_text(f"intro\n\n{BEGIN}\n{END}\n")
    res = CliRunner().invoke(cli, ["reproduce", "carretero", "--quick", "--no-figures", "--out", str(out),
                                   "--docs", str(page)])
    assert res.exit_code == 0, res.output
    assert res.output.count("runs already done") == 3  # the campaigns resumed: nothing ran again
    rows = block_rows(read_block(page.read_text()))
    assert sorted(r["id"] for r in rows) == sorted(c.id for c in CLAIMS)  # every paper measured in out, rejudged
    assert page.read_text().startswith("intro\n")


@pytest.mark.parametrize("what", ["no block", "two blocks", "not text", "a device"])
def test_a_docs_page_it_cannot_rewrite_is_refused_before_any_experiment(tmp_path, what):
    """A page with no generated block (or two), a file that is not text, or a device would be found out only
    after the whole reproduction (hours at --paper-size --real): it is refused first, exit 2, nothing run."""
    page = tmp_path / "page.md"
    if what == "no block":
        page.write_text("intro only\n")
    elif what == "two blocks":
        page.write_text(f"{BEGIN}\n{END}\n{BEGIN}\n{END}\n")
    elif what == "not text":
        page.write_bytes(b"\xff\xfe\x00\x01")
    else:
        page = Path("/dev/null")
    before = page.read_bytes() if page.is_file() else None
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["reproduce", "carretero", "--quick", "--no-figures", "--out", str(out),
                                   "--docs", str(page)])
    assert res.exit_code == 2 and f"--docs {page}" in res.output, res.output
    assert "Traceback" not in res.output
    assert not out.exists()  # no experiment ran, no scorecard
    if before is not None:
        assert page.read_bytes() == before
