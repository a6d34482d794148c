"""Quantities written with a unit: sizes, rates and durations, as specs and the app's arguments write them.

One grammar for every place a person writes a quantity (a batch spec's sizes, rates and
durations; ``python -m iolab.apps.jacobi --io-volume``/``--chunk-bytes``)::

    quantity := number [spaces] [unit]        (spaces around it are ignored)
    number   := digits | digits.digits | .digits, optionally followed by e[+-]digits
    unit     := case-insensitive, one of the tables below

Sizes (:func:`parse_size`): none or ``B`` = 1 byte; ``k``/``kB``, ``M``/``MB``, ``G``/``GB``,
``T``/``TB``, ``P``/``PB`` are powers of 10; ``KiB``, ``MiB``, ``GiB``, ``TiB``, ``PiB`` powers
of 2.  Rates (:func:`parse_rate`): a size, optionally followed by ``/s``, per second.
Durations (:func:`parse_duration`): none, ``s`` or ``sec`` = 1 s; ``m`` or ``min`` = 60 s;
``h`` = 3600 s; ``d`` = 86400 s; ``w`` = 7 d; ``y`` = 365 d (8760 h, the year of reliability
figures such as an MTBF).  (``m`` is mega in a size and minutes in a duration.)

Every parser takes the text and returns a float, or raises ``ValueError`` saying what was
wrong and how to write it (docs/specs.md, "Units").  The other way round, for a person to read:
:func:`format_size`, :func:`size_text`, :func:`format_duration`, and the numbers of the command
line's tables and of report pages (:func:`fmt`, :func:`seconds`, :func:`short`, :func:`pvalue`:
never in scientific notation; docs/cli.md, "Numbers in the output").
"""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

GB = 10**9

SIZE_UNITS: dict[str, int] = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "t": 10**12, "tb": 10**12, "p": 10**15, "pb": 10**15,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50,
}
TIME_UNITS: dict[str, int] = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400,
                              "w": 7 * 86400, "y": 365 * 86400}

_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def _split(text: str) -> tuple[float, str] | None:
    m = _QUANTITY.match(text)
    return (float(m.group(1)), m.group(2)) if m else None


def parse_size(text: str) -> float:
    """``"200GB"`` -> 200e9, ``"16GiB"`` -> 17179869184.0, ``"1048576"`` -> 1048576.0."""
    parts = _split(text)
    if parts is None:
        raise ValueError(f"not a size: {text!r} (write e.g. 200GB, 16GiB or a number of bytes)")
    value, unit = parts
    if unit.lower() not in SIZE_UNITS:
        raise ValueError(f"unknown size unit {unit!r} in {text!r}; use B, kB, MB, GB, TB, PB or KiB..PiB")
    return value * SIZE_UNITS[unit.lower()]


def parse_rate(text: str) -> float:
    """``"1.5 GB/s"`` -> 1.5e9 (bytes per second); ``/s`` may be left out."""
    body = text.strip()
    if body.lower().endswith("/s"):
        body = body[:-2]
    return parse_size(body)


def format_size(nbytes: float, digits: int = 15) -> str:
    """A size as a person writes it, in the largest decimal unit it reaches: 2048e9 -> ``"2048 GB"``,
    1000 -> ``"1 kB"``, 512 -> ``"512 B"``.  With the default ``digits`` :func:`parse_size` gives the
    value back; when a decimal unit cannot hold it exactly, the number of bytes (``"1234567 B"``
    stays exact)."""
    v = float(nbytes)
    for unit in ("PB", "TB", "GB", "MB", "kB"):
        scale = SIZE_UNITS[unit.lower()]
        if abs(v) >= scale:
            text = f"{v / scale:.{digits}g} {unit}"
            if digits < 15 or parse_size(text) == v:
                return text
            break
    return f"{v:.{digits}g} B" if v != int(v) or abs(v) >= 1e15 else f"{int(v)} B"


def format_duration(seconds: float, decimals: int = 0) -> str:
    """A duration as a clock reads it: ``m:ss`` below an hour, ``h:mm:ss`` above, ``N d h:mm:ss``
    from a day (``decimals`` digits of the seconds kept); ``-`` for nan, ``inf`` for infinity.
    Negative durations keep their sign."""
    if seconds != seconds:
        return "-"
    if seconds in (float("inf"), float("-inf")):
        return "inf" if seconds > 0 else "-inf"
    sign = "-" if seconds < 0 else ""
    scale = 10 ** decimals
    ticks = int(round(abs(seconds) * scale))
    whole, frac = divmod(ticks, scale)
    m, s = divmod(whole, 60)
    h, m = divmod(m, 60)
    d, h = divmod(h, 24)
    sec = f"{s:02d}" + (f".{frac:0{decimals}d}" if decimals else "")
    if d:
        return f"{sign}{d} d {h}:{m:02d}:{sec}"
    return f"{sign}{h}:{m:02d}:{sec}" if h else f"{sign}{m}:{sec}"


def parse_duration(text: str) -> float:
    """``"5m"`` -> 300.0 seconds, ``"2h"`` -> 7200.0, ``"30"`` -> 30.0."""
    parts = _split(text)
    if parts is None or parts[1].lower() not in TIME_UNITS:
        raise ValueError(f"not a duration: {text!r} (write e.g. 300, 300s, 5m, 2h, 1d, 5y)")
    return parts[0] * TIME_UNITS[parts[1].lower()]


# -- numbers written for a person (the command line's tables, report pages) ---------------------------


def fmt(v: Any, digits: int = 4) -> str:
    """One value on its own: an integer with thousands separators, a float with ``digits``
    significant digits (never in scientific notation: 13 860 is ``13,860``), nan as ``-``."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int) or (hasattr(v, "dtype") and getattr(v.dtype, "kind", "") in "iu"):
        return f"{int(v):,}"
    if isinstance(v, float) or hasattr(v, "dtype"):
        v = float(v)
        return _not_finite(v) or f"{v:,.{decimals_for(abs(v), digits)}f}"
    return str(v)


def decimals_for(magnitude: float, digits: int = 4) -> int:
    """Decimals that give a number of this magnitude about ``digits`` significant digits (none
    from ``10**digits`` up, at most ``digits + 2`` below 1)."""
    if magnitude == 0 or not math.isfinite(magnitude):
        return 0
    return max(0, min(digits + 2, digits - 1 - math.floor(math.log10(magnitude))))


def column_formats(rows: Sequence[Sequence[Any]], digits: int = 4) -> list[int | None]:
    """Per column, the decimals its floats are written with: the same for the whole column, those
    its largest value needs for ``digits`` significant digits, none when every value is whole
    (None: a column without floats)."""
    out: list[int | None] = []
    for col in zip(*rows) if rows else []:
        vals = [abs(float(c)) for c in col if isinstance(c, float) and math.isfinite(c)]
        floats = any(isinstance(c, float) for c in col)
        if vals and all(v == int(v) for v in vals):  # whole numbers: no decimals to show
            out.append(0)
        else:
            out.append(decimals_for(max(vals), digits) if vals else (0 if floats else None))
    return out


def cell(v: Any, decimals: int | None) -> str:
    if isinstance(v, float) and decimals is not None:
        return _not_finite(v) or f"{v:,.{decimals}f}"
    return fmt(v)


def _not_finite(v: float) -> str:
    """How a table writes nan (``-``) and the infinities; ``""`` for a finite number."""
    if math.isnan(v):
        return "-"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return ""


def seconds(v: float, digits: int = 4) -> str:
    """A time: ``h:mm:ss`` from a minute on (``1:23:20``, ``3 d 4:05:06``), else seconds with
    their unit (``12.35 s``); nan as ``-``."""
    v = float(v)
    if math.isnan(v):
        return "-"
    if abs(v) >= 60 or math.isinf(v):
        return format_duration(v)
    return f"{int(v)} s" if v == int(v) else f"{fmt(v, digits)} s"


def size_text(nbytes: float) -> str:
    """A size for a person to read: exact in a decimal unit when that takes at most 4 significant
    digits (``200 GB``, ``2.048 TB``), else exact in a binary one (1 TiB is ``1 TiB``, not
    ``1.09951 TB``), else 4 significant digits of a decimal unit (``1.235 MB``)."""
    v = float(nbytes)
    exact = format_size(v)
    if len(exact.split()[0].replace(".", "").strip("0")) <= 4:
        return exact
    for unit in ("PiB", "TiB", "GiB", "MiB", "KiB"):
        scale = SIZE_UNITS[unit.lower()]
        if abs(v) >= scale and (v / scale * 1000) == int(v / scale * 1000):
            return f"{v / scale:g} {unit}"
    return format_size(v, 4)


def short(v: Any, digits: int = 4) -> str:
    """A number in a sentence: :func:`fmt` without the trailing zeros a table column needs
    (0.8 is ``0.8``, 13 860.4 is ``13,860``, 2e-05 is ``0.00002``)."""
    text = fmt(v, digits)
    if "." in text and text[-1:].isdigit():
        text = text.rstrip("0").rstrip(".")
    return text


def pvalue(p: float) -> str:
    """A test's p-value: two significant digits, ``< 0.001`` below that (never ``3.2e-05``), nan as ``-``."""
    p = float(p)
    if p != p:
        return "-"
    return "< 0.001" if p < 0.001 else f"{p:.2g}"
