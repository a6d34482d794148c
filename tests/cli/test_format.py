"""How numbers are written in tables and summaries (docs/cli.md, "Numbers in the output")."""

from __future__ import annotations

import math
import re

import pytest

from iolab.cli.format import fmt, seconds, table
from iolab.units import format_duration, format_size, parse_size


@pytest.mark.parametrize("v", [13_860.0, 676_400.0, 28_763_800.0, 1.386e4, 0.000123, 123.456, 1e12])
def test_no_scientific_notation_and_thousands_separated(v):
    text = fmt(v)
    assert "e" not in text.lower()
    assert float(text.replace(",", "")) == pytest.approx(v, rel=1e-3, abs=1e-6)
    if abs(v) >= 1000:
        assert re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", text), text


def test_one_precision_per_column():
    out = table(["app", "end s", "slowdown", "n"], [("A", 12614.3, 1.2013, 3), ("B", 15246.0, 1.45, 2048),
                                                     ("C", math.nan, 1.0, 1)])
    rows = [ln.split() for ln in out.splitlines()[2:]]
    assert [r[1] for r in rows] == ["12,614", "15,246", "-"]  # same decimals (none) down the column
    decimals = {len(r[2].split(".")[1]) for r in rows}
    assert decimals == {3} and [r[3] for r in rows] == ["3", "2,048", "1"]


def test_per_row_precision_for_a_table_of_statistics():
    out = table(["", "mean", "max"], [("wait s", 0.031, 0.5), ("run s", 400.8, 12_345.0)], per_row=True)
    wait, run = (ln.split() for ln in out.splitlines()[2:])
    assert len(wait[2].split(".")[1]) == len(wait[3].split(".")[1]) == 4 and run[-1] == "12,345"


@pytest.mark.parametrize("s,text", [(0.7, "0:01"), (61, "1:01"), (3600, "1:00:00"), (13_860, "3:51:00"),
                                    (676_400, "7 d 19:53:20"), (-5, "-0:05")])
def test_durations_as_a_clock_reads_them(s, text):
    assert format_duration(s) == text
    h, m, sec = ([0] + [int(x) for x in text.lstrip("-").split(" d ")[-1].split(":")])[-3:]
    days = int(text.lstrip("-").split(" d ")[0]) if " d " in text else 0
    assert abs(abs(s) - (days * 86400 + h * 3600 + m * 60 + sec)) <= 0.5


def test_seconds_below_a_minute_keep_their_unit():
    assert seconds(40.0) == "40 s" and seconds(4.5) == "4.500 s" and seconds(90) == "1:30" and seconds(math.nan) == "-"


@pytest.mark.parametrize("b", [2048e9, 1000, 512, 1_234_567_891, 50e9, 2**40, 0, 22_517_726])
def test_sizes_with_a_unit_read_back_as_the_same_bytes(b):
    text = format_size(b)
    assert parse_size(text) == b and text.split()[-1] in ("B", "kB", "MB", "GB", "TB", "PB")
    assert "e" not in text.split()[0].lower()


def test_the_formatters_format_takes_from_units_are_used_there_or_imported_from_it():
    """iolab.units writes each formatter once; format.py imports only those it uses or another module (the
    package's, a test's, a benchmark's) imports from it."""
    import ast

    from shared_data import REPO

    tree = ast.parse((REPO / "iolab" / "cli" / "format.py").read_text())
    taken = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "iolab.units"
             for a in n.names}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    imported = set()
    for path in (p for d in REPO.iterdir() if d.is_dir() and not d.name.startswith(".") for p in d.rglob("*.py")):
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, ast.ImportFrom) and n.module == "iolab.cli.format":
                imported |= {a.name for a in n.names}
    assert taken and not taken - used - imported, sorted(taken - used - imported)
