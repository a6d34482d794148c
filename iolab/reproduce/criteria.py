"""How a claim is judged: the test and its tolerance, fixed in the registry before any run.

A criterion takes what an experiment measured and returns a verdict and a line saying why:

- ``reproduced``: inside the tolerance the registry states for the paper's number, or the paper's
  direction holds everywhere the criterion looks;
- ``partly``: outside the tolerance but on the paper's side of a stated reference (e.g. better than the
  baseline, as the paper says, by another amount), or the direction holds in some places only;
- ``not``: neither;
- ``cannot``: the claim cannot be tested here (:class:`Cannot`; the reason is the registry's).

Every criterion holds the paper's number it compares with, so changing that number in the registry
changes the verdict (tested).  Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

REPRODUCED, PARTLY, NOT, CANNOT = "reproduced", "partly", "not", "cannot"
VERDICTS = (REPRODUCED, PARTLY, NOT, CANNOT)
VERDICT_TEXT = {REPRODUCED: "reproduced", PARTLY: "partly", NOT: "not reproduced", CANNOT: "cannot be tested here"}

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _num(x: Any) -> float:
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"not a finite number: {x!r}")
    return v


def _fmt(x: float) -> str:
    return f"{x:.4g}"


@dataclass(frozen=True)
class Criterion:
    """Base: ``judge(measured) -> (verdict, why)``; ``paper`` is the paper's number or direction as shown."""

    def judge(self, measured: Any) -> tuple[str, str]:  # pragma: no cover - the subclasses'
        raise NotImplementedError

    @property
    def paper(self) -> str:  # pragma: no cover - the subclasses'
        raise NotImplementedError

    @property
    def tolerance(self) -> str:  # pragma: no cover - the subclasses'
        raise NotImplementedError


def _each(judge_one, measured: Any) -> tuple[str, str]:
    """A single-number criterion applied to every value of a mapping (label -> number): reproduced if every
    value is, partly if any is reproduced or partly, not otherwise; a single number is judged as it is."""
    if not isinstance(measured, Mapping):
        return judge_one(measured)
    if not measured:
        raise ValueError("nothing measured")
    got = {str(k): judge_one(v) for k, v in measured.items()}
    verdicts = [v for v, _ in got.values()]
    why = "; ".join(f"{k}: {w}" for k, (_, w) in got.items())
    if all(v == REPRODUCED for v in verdicts):
        return REPRODUCED, why
    return (PARTLY if any(v in (REPRODUCED, PARTLY) for v in verdicts) else NOT), why


@dataclass(frozen=True)
class Near(Criterion):
    """The measured number within ``tol`` of the paper's ``target`` (absolute, or relative with
    ``relative``); ``partly`` if outside it but on the same side of ``side_of`` as the paper.  A mapping of
    numbers (one per case) is reproduced if every case is, partly if some case is reproduced or partly."""

    target: float
    tol: float
    relative: bool = False
    side_of: float | None = None
    unit: str = ""

    def judge(self, measured: Any) -> tuple[str, str]:
        return _each(self._one, measured)

    def _one(self, measured: Any) -> tuple[str, str]:
        m = _num(measured)
        bound = self.tol * abs(self.target) if self.relative else self.tol
        band = f"{_fmt(self.target)} ± {_fmt(bound)}{self.unit}"
        if abs(m - self.target) <= bound + 1e-12:
            return REPRODUCED, f"{_fmt(m)} within {band}"
        if self.side_of is not None and (m - self.side_of) * (self.target - self.side_of) > 0:
            return PARTLY, f"{_fmt(m)} outside {band}, on the paper's side of {_fmt(self.side_of)}"
        return NOT, f"{_fmt(m)} outside {band}"

    @property
    def paper(self) -> str:
        return f"{_fmt(self.target)}{self.unit}"

    @property
    def tolerance(self) -> str:
        t = f"±{self.tol:.0%}" if self.relative else f"±{_fmt(self.tol)}{self.unit}"
        return t + (f"; partly: same side of {_fmt(self.side_of)}" if self.side_of is not None else "")


@dataclass(frozen=True)
class Between(Criterion):
    """The measured number in ``[lo, hi]``; ``partly`` in the wider ``[partly_lo, partly_hi]`` if given.  A
    mapping of numbers is judged case by case as :class:`Near` does."""

    lo: float
    hi: float
    partly_lo: float | None = None
    partly_hi: float | None = None
    unit: str = ""

    def judge(self, measured: Any) -> tuple[str, str]:
        return _each(self._one, measured)

    def _one(self, measured: Any) -> tuple[str, str]:
        m = _num(measured)
        if self.lo - 1e-12 <= m <= self.hi + 1e-12:
            return REPRODUCED, f"{_fmt(m)} in [{_fmt(self.lo)}, {_fmt(self.hi)}]"
        if self.partly_lo is not None and self.partly_lo <= m <= (self.partly_hi if self.partly_hi is not None
                                                                 else math.inf):
            return PARTLY, f"{_fmt(m)} outside [{_fmt(self.lo)}, {_fmt(self.hi)}], inside the partly band"
        return NOT, f"{_fmt(m)} outside [{_fmt(self.lo)}, {_fmt(self.hi)}]"

    @property
    def paper(self) -> str:
        return f"{_fmt(self.lo)}–{_fmt(self.hi)}{self.unit}"

    @property
    def tolerance(self) -> str:
        if self.partly_lo is None:
            return "inside the range"
        hi = _fmt(self.partly_hi) if self.partly_hi is not None else "∞"
        return f"inside the range; partly: [{_fmt(self.partly_lo)}, {hi}]"


@dataclass(frozen=True)
class Each(Criterion):
    """Every measured value (a mapping label -> number) satisfies ``value OP limit``: reproduced if all,
    partly if some, not if none.  ``what`` names the direction in the paper's words."""

    op: str
    limit: float
    what: str

    def __post_init__(self):
        if self.op not in _OPS:
            raise ValueError(f"unknown comparison {self.op!r}")

    def judge(self, measured: Any) -> tuple[str, str]:
        vals = {str(k): _num(v) for k, v in dict(measured).items()}
        if not vals:
            raise ValueError("nothing measured")
        ok = [k for k, v in vals.items() if _OPS[self.op](v, self.limit)]
        bad = [k for k in vals if k not in ok]
        n = f"{len(ok)} of {len(vals)}"
        if not bad:
            return REPRODUCED, f"{n} hold"
        return (PARTLY if ok else NOT), f"{n} hold (not: {', '.join(bad)})"

    @property
    def paper(self) -> str:
        return self.what

    @property
    def tolerance(self) -> str:
        return f"every value {self.op} {_fmt(self.limit)}; partly: some"


@dataclass(frozen=True)
class NearEach(Criterion):
    """Several numbers (label -> paper's value): reproduced if every measured one is within ``tol``
    (absolute) of the paper's; partly if at least half lie on the paper's side of ``side_of``."""

    targets: Mapping[str, float] = field(default_factory=dict)
    tol: float = 0.0
    side_of: float | None = 0.0  # None: no partly verdict
    unit: str = ""

    def judge(self, measured: Any) -> tuple[str, str]:
        m = {str(k): _num(v) for k, v in dict(measured).items()}
        missing = [k for k in self.targets if k not in m]
        if missing:
            raise ValueError(f"missing measurements: {', '.join(missing)}")
        near = [k for k, t in self.targets.items() if abs(m[k] - t) <= self.tol + 1e-12]
        side = [] if self.side_of is None else [
            k for k, t in self.targets.items() if (m[k] - self.side_of) * (t - self.side_of) > 0]
        n = len(self.targets)
        if len(near) == n:
            return REPRODUCED, f"all {n} within ±{_fmt(self.tol)}{self.unit}"
        if self.side_of is not None and 2 * len(side) >= n:
            return PARTLY, f"{len(near)} of {n} within ±{_fmt(self.tol)}{self.unit}; {len(side)} of {n} on the " \
                           f"paper's side of {_fmt(self.side_of)}"
        return NOT, f"{len(near)} of {n} within ±{_fmt(self.tol)}{self.unit}" + (
            f", {len(side)} of {n} on the paper's side of {_fmt(self.side_of)}" if self.side_of is not None else "")

    @property
    def paper(self) -> str:
        return ", ".join(f"{k}: {_fmt(v)}{self.unit}" for k, v in self.targets.items())

    @property
    def tolerance(self) -> str:
        return f"each ±{_fmt(self.tol)}{self.unit}" + (
            f"; partly: half or more on the paper's side of {_fmt(self.side_of)}" if self.side_of is not None else "")


@dataclass(frozen=True)
class SameSet(Criterion):
    """The measured set of names (e.g. the two worst policies) equals the paper's: reproduced if equal,
    partly if they share a member, not otherwise."""

    expected: tuple[str, ...]

    def judge(self, measured: Any) -> tuple[str, str]:
        got = set(map(str, measured))
        want = set(self.expected)
        if got == want:
            return REPRODUCED, f"{{{', '.join(sorted(got))}}}"
        both = got & want
        return (PARTLY if both else NOT), f"{{{', '.join(sorted(got))}}}: {len(both)} of {len(want)} in common"

    @property
    def paper(self) -> str:
        return "{" + ", ".join(self.expected) + "}"

    @property
    def tolerance(self) -> str:
        return "the same set; partly: overlapping"


@dataclass(frozen=True)
class Share(Criterion):
    """A measured share in [0, 1] (of cases where the paper's direction holds): reproduced at ``full`` or
    more, partly at ``part`` or more."""

    full: float
    part: float
    what: str

    def judge(self, measured: Any) -> tuple[str, str]:
        m = _num(measured)
        if m >= self.full - 1e-12:
            return REPRODUCED, f"{m:.0%} of cases"
        return (PARTLY if m >= self.part - 1e-12 else NOT), f"{m:.0%} of cases"

    @property
    def paper(self) -> str:
        return self.what

    @property
    def tolerance(self) -> str:
        return f"≥ {self.full:.0%} of cases; partly: ≥ {self.part:.0%}"


@dataclass(frozen=True)
class Cannot(Criterion):
    """A claim this testbed cannot test like for like (``reason``, one line); ``paper`` as the paper states it."""

    reason: str
    stated: str

    def judge(self, measured: Any) -> tuple[str, str]:
        return CANNOT, self.reason

    @property
    def paper(self) -> str:
        return self.stated

    @property
    def tolerance(self) -> str:
        return "—"


def counts(verdicts: Sequence[str]) -> dict[str, int]:
    """How many of each verdict, in :data:`VERDICTS` order."""
    return {v: sum(1 for x in verdicts if x == v) for v in VERDICTS}


__all__ = ["Between", "CANNOT", "Cannot", "Criterion", "Each", "NOT", "Near", "NearEach", "PARTLY", "REPRODUCED",
           "SameSet", "Share", "VERDICTS", "VERDICT_TEXT", "counts"]
