"""How far a real run is from its simulation, as one number: the relative error of one quantity and the
geometric mean of the ratios of many (both levels' comparisons use them: docs/validation.md)."""

from __future__ import annotations

import math

import numpy as np


def rel_error(emu: float, sim: float) -> float:
    return abs(emu - sim) / abs(sim) if sim else math.nan


def geo_error(pairs: list[tuple[float, float]]) -> float:
    logs = [abs(math.log(e / s)) for e, s in pairs if e > 0 and s > 0]
    return math.exp(float(np.mean(logs))) - 1 if logs else math.nan
