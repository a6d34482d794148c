"""The interference law: the aggregate rate of a shared resource with ``k`` concurrent streams.

A tier, a volume, an I/O node or a link with ``k`` streams delivers ``rate x f(k)`` in total,
shared fairly (each stream ``rate x f(k) / k``).  One object, used by both runtimes: the
simulator's links (:class:`iolab.sim.fairshare.FairShareLink`) and the real run's pacing (the
token buckets of :mod:`iolab.middleware.bucket`) ask it for ``factor(k)``.

Kinds:

- ``none``: ``f = 1``, a lossless fair share (the default);
- ``parametric``: ``f(k) = 1 / (1 + gamma * max(0, k - knee))`` (a volume past its knee loses
  throughput as streams are added);
- ``table``: measured ``k -> share`` points, linear between them, constant past the last;
  ``k = 1`` has share 1 (the rate is the resource's rate with one stream), so one stream, and an
  exclusive transfer, always gets the whole rate;
- presets ``lustre-plafrim-a|b|c``: carretero2020 §3's measurements on Lustre, the table
  ``{1: 1, 4: 1 - d}`` with ``d`` = 2 %, 16 %, 11 % (``d = 1 - sum(BW_multi) / BW_single`` at
  4 applications); the points between 1 and 4 and past 4 are interpolation, not measurement.

Pure: no clock, no Ray, no MPI, no files.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from iolab.specs.interference import NONE, PRESET_K, PRESETS

__all__ = ["InterferenceLaw", "NO_INTERFERENCE", "aggregate_loss", "law_of", "tier_laws"]


@dataclass(frozen=True)
class InterferenceLaw:
    """``factor(k)``: share of the rate ``k`` concurrent streams get in total."""

    kind: str = NONE  # none | parametric | table
    gamma: float = 0.0
    knee: int = 1
    points: tuple[tuple[int, float], ...] = ()  # table: (k, share), k increasing
    name: str = ""  # a preset's name ("" otherwise)

    def __post_init__(self):
        if self.kind not in (NONE, "parametric", "table"):
            raise ValueError(f"unknown interference kind {self.kind!r}")
        if self.kind == "parametric" and not (self.gamma >= 0 and math.isfinite(self.gamma) and self.knee >= 1):
            raise ValueError(f"parametric law needs gamma >= 0 and knee >= 1, got {self.gamma!r}, {self.knee!r}")
        if self.kind == "table":
            ks = [k for k, _ in self.points]
            if not ks or ks != sorted(set(ks)) or ks[0] < 1 or any(not (s > 0 and math.isfinite(s))
                                                                  for _, s in self.points):
                raise ValueError(f"a table law needs increasing k >= 1 and shares > 0, got {self.points!r}")

    # -- constructors ----------------------------------------------------------------------------
    @classmethod
    def parametric(cls, gamma: float, knee: int = 1) -> "InterferenceLaw":
        return cls(NONE) if gamma == 0 else cls("parametric", float(gamma), int(knee))

    @classmethod
    def table(cls, points: dict[int, float] | list[tuple[int, float]], name: str = "") -> "InterferenceLaw":
        """Measured shares of the rate; ``k = 1`` is the rate itself (share 1, added if absent)."""
        pts = {int(k): float(s) for k, s in (points.items() if isinstance(points, dict) else points)}
        if pts.setdefault(1, 1.0) != 1.0:
            raise ValueError(f"a table's share at k = 1 is 1 (the rate is the resource's rate alone), got {pts[1]!r}")
        return cls("table", points=tuple(sorted(pts.items())), name=name)

    @classmethod
    def preset(cls, name: str) -> "InterferenceLaw":
        if name not in PRESETS:
            raise ValueError(f"unknown interference preset {name!r}; one of {', '.join(PRESETS)}")
        return cls.table({1: 1.0, PRESET_K: 1.0 - PRESETS[name]}, name=name)

    # -- the law ---------------------------------------------------------------------------------
    def factor(self, k: int) -> float:
        """Share of the rate ``k`` streams get in total (``k = 0``: 1)."""
        if k < 0:
            raise ValueError(f"a stream count is >= 0, got {k}")
        if k == 0 or self.kind == NONE:
            return 1.0
        if self.kind == "parametric":
            return 1.0 / (1.0 + self.gamma * max(0, k - self.knee))
        pts = self.points
        ks = [p[0] for p in pts]
        i = bisect.bisect_left(ks, k)
        if i < len(ks) and ks[i] == k:
            return pts[i][1]
        if i == 0:
            return pts[0][1]
        if i == len(ks):
            return pts[-1][1]
        (k0, s0), (k1, s1) = pts[i - 1], pts[i]
        return s0 + (s1 - s0) * (k - k0) / (k1 - k0)

    def rate(self, rate: float, k: int) -> float:
        """The aggregate rate of a resource of ``rate`` with ``k`` streams."""
        return rate * self.factor(k)

    @property
    def lossless(self) -> bool:
        return self.kind == NONE

    def describe(self) -> str:
        if self.name:
            return f"{self.name} (carretero2020 §3: d = {PRESETS[self.name]:.0%} at k = {PRESET_K})"
        if self.kind == "parametric":
            return f"gamma {self.gamma:g}, knee {self.knee}"
        if self.kind == "table":
            return "table " + ", ".join(f"{k}: {s:.4g}" for k, s in self.points)
        return NONE


NO_INTERFERENCE = InterferenceLaw()


def aggregate_loss(law: InterferenceLaw, k: int = PRESET_K) -> float:
    """carretero2020's ``d = 1 - sum(BW_multi) / BW_single`` with ``k`` streams: ``1 - f(k) / f(1)``."""
    return 1.0 - law.factor(k) / law.factor(1)


def law_of(spec) -> InterferenceLaw:
    """The law of an ``interference:`` field (:class:`iolab.specs.interference.InterferenceSpec`, or None)."""
    if spec is None:
        return NO_INTERFERENCE
    kind = spec.kind
    if kind == "preset":
        return InterferenceLaw.preset(spec.preset)
    if kind == "parametric":
        return InterferenceLaw.parametric(spec.gamma, spec.knee or 1)
    if kind == "table":
        return InterferenceLaw.table(spec.table)
    return NO_INTERFERENCE


def tier_laws(spec) -> dict[str, InterferenceLaw]:
    """The law of each link of a batch spec (``lps``, ``hps``, ``stage``): its tier's ``interference``;
    for a volume the controller watches whose tier gives none, ``controller.model: {gamma, knee}`` (the
    same law, in both runtimes).  The staging link is lossless."""
    p = spec.platform
    out = {"lps": law_of(p.lps.interference), "hps": law_of(p.hps.interference), "stage": NO_INTERFERENCE}
    c = getattr(spec, "controller", None)
    m = c.model if c is not None else None
    if m is not None and m.gamma > 0:
        for v in c.volumes:
            if getattr(p, v).interference is None:
                out[v] = InterferenceLaw.parametric(m.gamma, m.knee)
    return out
