"""The ``interference:`` field of a tier, a volume or an I/O node: how its aggregate rate falls with streams.

A shared storage resource with ``k`` concurrent streams delivers ``rate x f(k)`` bytes per
second in total, shared fairly (each stream ``rate x f(k) / k``).  The field takes one of::

    interference: none                          # f = 1 (the default: a lossless fair share)
    interference: lustre-plafrim-b              # a named preset (carretero2020 §3's measurements)
    interference: {gamma: 0.5, knee: 1}         # f(k) = 1 / (1 + gamma * max(0, k - knee))
    interference: {table: {2: 0.9, 4: 0.84}}    # measured shares (k = 1: 1), linear between, flat past the last

The law itself (``factor(k)``) is :mod:`iolab.middleware.policies.interference`; this module
holds the spec model and the presets' data.

**Presets** (carretero2020 §3, Fig. 1, Lustre on PlaFRIM): the aggregate bandwidth lost when
4 applications write at once, ``d = 1 - sum(BW_multi) / BW_single``: 2 % (use case A), 16 % (B)
and 11 % (C; the paper's text says 4 applications, its Fig. 1 caption 2 instances for C).  The
paper measured k = 1 and k = 4 only; a preset is the table ``{1: 1, 4: 1 - d}``: linear between
(a guess, not a measurement) and constant past 4 (also a guess).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator

from iolab.specs.base import StrictModel, raise_if

# name -> aggregate loss d at k = PRESET_K (carretero2020 §3)
PRESETS: dict[str, float] = {"lustre-plafrim-a": 0.02, "lustre-plafrim-b": 0.16, "lustre-plafrim-c": 0.11}
PRESET_K = 4
NONE = "none"


class InterferenceSpec(StrictModel):
    """One of: a preset name, ``{gamma, knee}`` (parametric) or ``{table: {k: share}}`` (measured);
    ``none`` (or the field absent) is no loss."""

    preset: str | None = Field(None, description=f"a named law: {', '.join(PRESETS)} (carretero2020 §3) or none")
    gamma: float | None = Field(None, ge=0, le=100, allow_inf_nan=False,
                                description="parametric: share of the rate lost per stream past the knee")
    knee: int | None = Field(None, ge=1, le=100_000, description="parametric: streams served at the full rate "
                                                                 "(default 1)")
    table: dict[int, float] | None = Field(None, min_length=1, max_length=10_000,
                                           description="measured: streams -> share of the rate delivered in "
                                                       "total (linear between, constant past the last)")

    @classmethod
    def parse(cls, value: Any) -> Any:
        """A bare name is ``{preset: name}``; anything else goes to pydantic as written."""
        if isinstance(value, str):
            return {"preset": value.strip().lower()}
        return value

    @field_validator("preset")
    @classmethod
    def _preset(cls, v: str | None) -> str | None:
        if v is not None and v != NONE and v not in PRESETS:
            raise ValueError(f"unknown interference preset {v!r}; one of {', '.join([NONE, *PRESETS])}, "
                             "or {gamma: G, knee: K}, or {table: {k: share, ...}}")
        return v

    @field_validator("table", mode="before")
    @classmethod
    def _table_keys(cls, v: Any) -> Any:
        """Keys written as text (a spec dumped to JSON, ``"2": 0.9``) are stream counts too."""
        if isinstance(v, dict):
            return {int(k) if isinstance(k, str) and k.strip().isdigit() else k: x for k, x in v.items()}
        return v

    @field_validator("table")
    @classmethod
    def _table(cls, v: dict[int, float] | None) -> dict[int, float] | None:
        if v is None:
            return v
        for k, s in v.items():
            if k < 1:
                raise ValueError(f"table[{k}]: a stream count is >= 1")
            if not (math.isfinite(s) and 0 < s <= 1e6):
                raise ValueError(f"table[{k}] = {s!r}: a share is a finite number > 0")
            if k == 1 and s != 1:
                raise ValueError(f"table[1] = {s!r}: the share of one stream is 1 (the rate is the resource's "
                                 "rate alone; give the rate the resource has with one stream)")
        return dict(sorted(v.items()))

    @model_validator(mode="after")
    def _one_form(self) -> "InterferenceSpec":
        forms = [n for n, given in (("preset", self.preset is not None), ("gamma", self.gamma is not None),
                                    ("table", self.table is not None)) if given]
        problems = []
        if len(forms) > 1:
            problems.append((forms[1], f"give one form of the law, not both {forms[0]} and {forms[1]}"))
        elif self.knee is not None and self.gamma is None:
            problems.append(("knee", "knee goes with gamma ({gamma: G, knee: K})"))
        raise_if(problems)
        return self

    @property
    def kind(self) -> str:
        """``none``, ``preset``, ``parametric`` or ``table``."""
        if self.table is not None:
            return "table"
        if self.gamma is not None:
            return "parametric"
        if self.preset is not None and self.preset != NONE:
            return "preset"
        return NONE


# the field's type: a bare name is read as ``{preset: name}``
Interference = Annotated[InterferenceSpec | None, BeforeValidator(InterferenceSpec.parse)]
INTERFERENCE_HELP = ("aggregate rate with k concurrent streams = rate x f(k): none (default), a preset (" +
                     ", ".join(PRESETS) + "), {gamma: G, knee: K} or {table: {k: share}}")

__all__ = ["INTERFERENCE_HELP", "NONE", "PRESETS", "PRESET_K", "Interference", "InterferenceSpec"]
