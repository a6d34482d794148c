"""The scorecard: every claim's row, the counts per verdict, written as Markdown, CSV and JSON, and the
block of docs/results.md generated from it.

``scorecard.md`` has the counts per paper and verdict, then a table per paper: the claim, the paper's
number, iolab's, the tolerance fixed before the run, the verdict and why, and what in the setting
differs.  A ``--quick`` scorecard says on its first line that its verdicts are quick (reduced sizes).
:func:`results_block` is the section docs/results.md holds between :data:`BEGIN` and :data:`END`;
:func:`rewrite_block` puts a new one in place (``iolab reproduce --docs docs/results.md``).
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from iolab.atomic import atomic_write_text
from iolab.reproduce.claim import PAPERS, Row
from iolab.reproduce.criteria import CANNOT, NOT, PARTLY, REPRODUCED, VERDICT_TEXT, VERDICTS, Cannot, counts

BEGIN = ("<!-- iolab reproduce: generated block, do not edit by hand "
         "(iolab reproduce --paper-size --docs docs/results.md) -->")
END = "<!-- iolab reproduce: end of generated block -->"
SIZES = {"quick": "quick (CI): reduced sizes, quick verdicts, not the papers' sizes",
         "default": "default: the studies' default sizes (some below the papers')",
         "paper": "paper size: the papers' sizes in simulation"}
CSV_COLUMNS = ("id", "paper", "where", "statement", "paper_value", "iolab", "tolerance", "verdict", "why",
               "like_for_like", "departures", "notes", "construction", "experiment", "measure")


@dataclass
class Scorecard:
    rows: list[Row]
    size: str  # quick | default | paper
    command: str = ""
    wall_seconds: dict[str, float] = field(default_factory=dict)  # per paper
    # per paper: further tables its experiments measured (title -> {"columns": [...], "rows": [[...]]})
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def papers(self) -> list[str]:
        return [p for p in PAPERS if any(r.claim.paper == p for r in self.rows)]

    def counts(self, paper: str | None = None) -> dict[str, int]:
        return counts([r.verdict for r in self.rows if paper is None or r.claim.paper == paper])

    def like_for_like(self, paper: str | None = None) -> int:
        """Claims reproduced with no departure from the paper's setting."""
        return sum(1 for r in self.rows if (paper is None or r.claim.paper == paper) and r.verdict == REPRODUCED
                   and r.claim.like_for_like)

    def as_dict(self) -> dict[str, Any]:
        return {"size": self.size, "size_note": SIZES[self.size], "command": self.command,
                "wall_seconds": self.wall_seconds,
                "counts": {p: {**self.counts(p), "reproduced_like_for_like": self.like_for_like(p)}
                           for p in self.papers},
                "total": {**self.counts(), "reproduced_like_for_like": self.like_for_like()},
                "rows": [r.as_dict() for r in self.rows], "tables": self.tables}


def write(out: Path, card: Scorecard) -> list[Path]:
    """``scorecard.md``, ``scorecard.csv`` and ``scorecard.json`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    data = card.as_dict()
    atomic_write_text(out / "scorecard.json", json.dumps(data, indent=1, default=_plain) + "\n")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    w.writeheader()
    w.writerows(data["rows"])
    atomic_write_text(out / "scorecard.csv", buf.getvalue())
    atomic_write_text(out / "scorecard.md", markdown(card))
    return [out / "scorecard.md", out / "scorecard.csv", out / "scorecard.json"]


def _plain(x: Any) -> Any:
    return x.item() if hasattr(x, "item") else str(x)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def counts_table(card: Scorecard) -> str:
    head = ("| paper | claims | reproduced (like for like) | partly | not | cannot be tested here |\n"
            "|---|---|---|---|---|---|\n")
    lines = []
    for p in card.papers + [None]:
        c = card.counts(p)
        lines.append(f"| {p or '**all**'} | {sum(c.values())} | {c[REPRODUCED]} ({card.like_for_like(p)}) | "
                     f"{c[PARTLY]} | {c[NOT]} | {c[CANNOT]} |")
    return head + "\n".join(lines) + "\n"


def paper_table(rows: Sequence[Row]) -> str:
    head = ("| claim | paper | iolab | tolerance | verdict | setting's differences |\n"
            "|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        c = r.claim
        verdict = f"**{VERDICT_TEXT[r.verdict]}**: {r.why}"
        base = c.departures or ("—" if isinstance(c.criterion, Cannot) else "like for like")
        diff = "; ".join(x for x in (base, f"open in the paper: {c.notes}" if c.notes else "",
                                     f"by construction: {c.construction}" if c.construction else "") if x)
        lines.append(f"| `{c.id}` ({c.where}): {_cell(c.statement)} | {_cell(c.criterion.paper)} | "
                     f"{_cell(r.as_dict()['iolab'])} | {_cell(c.criterion.tolerance)} | {_cell(verdict)} | "
                     f"{_cell(diff)} |")
    return head + "\n".join(lines) + "\n"


def extra_tables(card: Scorecard, paper: str) -> str:
    """A paper's further tables (what its experiments examined beside the claims)."""
    parts = []
    for title, t in card.tables.get(paper, {}).items():
        head = "| " + " | ".join(map(_cell, t["columns"])) + " |\n|" + "---|" * len(t["columns"]) + "\n"
        body = "\n".join("| " + " | ".join(_cell(c) for c in row) + " |" for row in t["rows"])
        parts.append(f"\n{title}:\n\n{head}{body}\n")
    return "".join(parts)


def markdown(card: Scorecard) -> str:
    parts = [f"# Scorecard: the five papers' claims, like for like\n",
             f"Size: **{SIZES[card.size]}**." + (" These verdicts are quick: read them as a check of the "
                                                  "pipeline, not as the papers' results." if card.size == "quick"
                                                  else ""),
             f"Command: `{card.command}`\n" if card.command else "",
             "A claim counts as reproduced only inside the tolerance its registry entry fixed before the run "
             "(iolab/reproduce/registry.py); *like for like* counts those with no departure from the paper's "
             "setting.\n", counts_table(card)]
    for p in card.papers:
        parts.append(f"\n## {p}\n")
        parts.append(paper_table([r for r in card.rows if r.claim.paper == p]))
        parts.append(extra_tables(card, p))
    return "\n".join(parts)


def results_block(card: Scorecard) -> str:
    """The generated section of docs/results.md (between the markers, markers included)."""
    body = [BEGIN, "", f"Size: {SIZES[card.size]}. Command: `{card.command}`." if card.command
            else f"Size: {SIZES[card.size]}.", "", counts_table(card)]
    for p in card.papers:
        body += [f"### {p}", "", paper_table([r for r in card.rows if r.claim.paper == p]) + extra_tables(card, p)]
    body.append(END)
    return "\n".join(body) + "\n"


_BLOCK = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", re.S)


def rewrite_block(text: str, block: str) -> str:
    """``text`` with its generated block replaced by ``block``; ValueError if it has none (or several)."""
    found = _BLOCK.findall(text)
    if len(found) != 1:
        raise ValueError(f"expected one generated block between the markers, found {len(found)}")
    return _BLOCK.sub(lambda _: block, text)


def read_block(text: str) -> str:
    """The generated block of ``text`` (markers included)."""
    m = _BLOCK.search(text)
    if m is None:
        raise ValueError("no generated block between the markers")
    return m.group(0)


def block_rows(block: str) -> list[dict[str, str]]:
    """The claim rows of a generated block: id, paper value, iolab, tolerance, verdict (as shown)."""
    out = []
    for line in block.splitlines():
        m = re.match(r"^\| `([^`]+)` \(", line)
        if not m:
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        verdict = re.match(r"\*\*(.+?)\*\*", cells[4])
        out.append({"id": m.group(1), "paper_value": cells[1], "iolab": cells[2], "tolerance": cells[3],
                    "verdict": next(k for k, v in VERDICT_TEXT.items() if verdict and v == verdict.group(1))})
    return out


__all__ = ["BEGIN", "END", "SIZES", "Scorecard", "block_rows", "counts_table", "markdown", "read_block",
           "results_block", "rewrite_block", "write", "VERDICTS"]
