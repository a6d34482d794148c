"""``iolab reproduce``: run every paper's experiments, judge every claim of the registry, write the scorecard.

Each paper's experiments are campaigns (:mod:`iolab.studies`: resumable, on Ray or in this process)
under ``OUT/<paper>/``; their measurements go to ``OUT/<paper>/measurements.json``, which a rerun
reads back for the papers it does not run again (``iolab reproduce lackner2019`` rejudges every paper
it has measurements of).  The verdicts come from the registry at the time of judging, so a changed
tolerance or paper number in the registry changes the scorecard without rerunning anything.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterable

from iolab.atomic import atomic_write_text
from iolab.reproduce import carretero, dheenadayalan, lackner, monniot, soysal
from iolab.reproduce.claim import PAPERS, Claim, judge
from iolab.reproduce.figures import draw_scorecard
from iolab.reproduce.registry import CLAIMS
from iolab.reproduce.scorecard import Scorecard, write
from iolab.studies.as_campaign import Engine

EXPERIMENTS: dict[str, ModuleType] = {"carretero2020": carretero, "lackner2019": lackner,
                                        "monniot2023": monniot, "soysal2019": soysal,
                                        "dheenadayalan2017": dheenadayalan}
ALIASES = {p.rstrip("0123456789"): p for p in PAPERS}  # carretero -> carretero2020
SIZE_NAMES = ("quick", "default", "paper")


def paper_of(name: str) -> str:
    """A paper's name as the registry spells it (``carretero`` or ``carretero2020``)."""
    if name in PAPERS:
        return name
    if name in ALIASES:
        return ALIASES[name]
    raise ValueError(f"unknown paper {name!r}; known: {', '.join(PAPERS)} (or without the year)")


@dataclass
class Options:
    size: str = "default"
    figures: bool = True
    engine: Engine | None = None
    real: bool = False  # also the real runs a paper's experiments offer (dheenadayalan2017's DS1 pairs)
    command: str = ""


def measure(paper: str, out: Path, opts: Options, say: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """Run ``paper``'s experiments into ``out/<paper>`` and keep their measurements there."""
    if opts.size not in SIZE_NAMES:
        raise ValueError(f"size must be one of {', '.join(SIZE_NAMES)}, got {opts.size!r}")
    folder = out / paper
    say(f"{paper}: running its experiments ({opts.size} size) in {folder}")
    t0 = time.perf_counter()
    m = EXPERIMENTS[paper].run(folder, opts.size, opts.engine or Engine(use_ray=False, progress=False),
                               figures=opts.figures, real=opts.real)
    record = {"paper": paper, "size": opts.size, "wall_seconds": time.perf_counter() - t0, "measurements": m}
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / "measurements.json", json.dumps(record, indent=1, default=_plain) + "\n")
    say(f"{paper}: done in {record['wall_seconds']:.1f} s")
    return record


def _plain(x: Any) -> Any:
    return x.item() if hasattr(x, "item") else str(x)


def load_measurements(out: Path, papers: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The measurement records kept in ``out`` for ``papers`` (those that have one)."""
    got = {}
    for p in papers:
        path = out / p / "measurements.json"
        if path.is_file():
            got[p] = json.loads(path.read_text())
    return got


def scorecard(records: dict[str, dict[str, Any]], size: str, claims: Iterable[Claim] = CLAIMS,
              command: str = "") -> Scorecard:
    """Every claim of the papers in ``records`` judged against their measurements."""
    rows = []
    for c in claims:
        if c.paper in records:
            rows.append(judge(c, records[c.paper]["measurements"]))
    return Scorecard(rows, size, command, {p: r["wall_seconds"] for p, r in records.items()},
                     {p: r["measurements"].get("_tables", {}) for p, r in records.items()})


def reproduce(papers: Iterable[str], out: Path, opts: Options, say: Callable[[str], None] = lambda s: None
              ) -> Scorecard:
    """Measure ``papers`` (all five if empty), then judge them and every other paper already measured in
    ``out`` at the same size; write the scorecard and its figures into ``out``."""
    wanted = [paper_of(p) for p in papers] or list(PAPERS)
    records = {}
    for p in wanted:
        records[p] = measure(p, out, opts, say)
    for p, rec in load_measurements(out, [p for p in PAPERS if p not in records]).items():
        if rec.get("size") == opts.size:
            records[p] = rec
    card = scorecard({p: records[p] for p in PAPERS if p in records}, opts.size, command=opts.command)
    write(out, card)
    if opts.figures:
        draw_scorecard(card, out / "figures")
    return card


__all__ = ["EXPERIMENTS", "Options", "SIZE_NAMES", "load_measurements", "measure", "paper_of", "reproduce",
           "scorecard"]
