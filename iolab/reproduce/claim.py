"""A claim of a paper, and its row in the scorecard once its experiment has measured it.

A :class:`Claim` is one line of :mod:`iolab.reproduce.registry`: what the paper says (its number or its
direction, in :attr:`Claim.criterion`, with the tolerance fixed before the run), where it says it,
which measurement of which experiment answers it, and what in iolab's setting differs from the paper's.
:func:`judge` turns a claim and the measurements into a :class:`Row`.

Three labels keep a row honest:

- ``departures``: what differs from the paper's setting (another trace, a rescaled capacity, a fitted
  constant, the simulator where the paper ran real jobs) and why; empty only for a like-for-like
  comparison;
- ``notes``: what iolab chose where the paper says nothing (a constant it does not give, a simulator's
  convention): stated beside the row, not a departure from the paper's setting;
- ``construction``: set when an agreement would follow from the setting itself (a capacity scaled to
  the demand, a law given as input); a criterion met there is shown as agreeing *by construction*
  and counted as ``cannot``, never as reproduced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from iolab.reproduce.criteria import CANNOT, NOT, REPRODUCED, Cannot, Criterion

PAPERS = ("carretero2020", "lackner2019", "monniot2023", "soysal2019", "dheenadayalan2017")


@dataclass(frozen=True)
class Claim:
    id: str  # "<paper>.<figure or section>.<what>", unique
    paper: str  # one of PAPERS
    where: str  # "Fig. 5", "Table 1", "§5"
    statement: str  # the paper's claim in one line
    criterion: Criterion  # the paper's number or direction and the tolerance, fixed before the run
    measure: str  # key of the measurement that answers it (the paper's experiments write it)
    experiment: str  # what runs, in a user's words (a command, a study and its size)
    departures: str = ""  # what differs from the paper's setting, and why ("": like for like)
    construction: str = ""  # why an agreement would follow from the setting ("": it would not)
    notes: str = ""  # what iolab chose where the paper is silent

    @property
    def like_for_like(self) -> bool:
        return not self.departures and not self.construction


@dataclass(frozen=True)
class Row:
    """A claim's line of the scorecard."""

    claim: Claim
    measured: Any  # what the experiment measured (None if it could not)
    verdict: str
    why: str  # one line: the criterion's reading of the measurement, or why it cannot be tested

    def as_dict(self) -> dict[str, Any]:
        c = self.claim
        return {"id": c.id, "paper": c.paper, "where": c.where, "statement": c.statement,
                "paper_value": c.criterion.paper, "tolerance": c.criterion.tolerance, "iolab": show(self.measured),
                "measured": self.measured, "verdict": self.verdict, "why": self.why,
                "like_for_like": c.like_for_like and self.verdict != CANNOT, "departures": c.departures,
                "notes": c.notes, "construction": c.construction, "experiment": c.experiment, "measure": c.measure}


def judge(claim: Claim, measurements: Mapping[str, Any]) -> Row:
    """The claim's row: its criterion applied to its measurement; a missing or unreadable measurement is
    ``not`` with the reason (an experiment that ran and measured nothing is a failure, not a pass).  A
    verdict other than reproduced gets the experiment's own explanation of its measurement, if it gave one
    (``measurements["_why"][measure]``: what in the run's numbers makes it differ from the paper)."""
    row = _judged(claim, measurements)
    note = (measurements.get("_why") or {}).get(claim.measure)
    if note and row.verdict != REPRODUCED:
        return Row(claim, row.measured, row.verdict, f"{row.why}. Why: {note}")
    return row


def _judged(claim: Claim, measurements: Mapping[str, Any]) -> Row:
    if claim.measure not in measurements:
        if isinstance(claim.criterion, Cannot):
            return Row(claim, None, *claim.criterion.judge(None))
        return Row(claim, None, NOT, f"no measurement {claim.measure!r}: its experiment did not run or did not "
                                     "measure it")
    measured = measurements[claim.measure]
    if isinstance(measured, Mapping) and set(measured) == {"cannot"}:  # the experiment could not measure it here
        return Row(claim, None, CANNOT, str(measured["cannot"]))
    try:
        verdict, why = claim.criterion.judge(measured)
    except (TypeError, ValueError, KeyError) as exc:
        return Row(claim, measured, NOT, f"unreadable measurement: {exc}")
    if claim.construction and verdict == REPRODUCED:
        verdict, why = CANNOT, f"agrees by construction ({claim.construction}): {why}"
    return Row(claim, measured, verdict, why)


def show(x: Any) -> str:
    """A measurement as a table cell: numbers to 4 significant digits, mappings as ``k: v`` pairs."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, float)):
        return "nan" if isinstance(x, float) and math.isnan(x) else f"{x:.4g}"
    if isinstance(x, Mapping):
        return ", ".join(f"{k}: {show(v)}" for k, v in x.items())
    if isinstance(x, (list, tuple, set)):
        return "{" + ", ".join(show(v) for v in x) + "}"
    return str(x)


__all__ = ["Claim", "PAPERS", "Row", "judge", "show"]
