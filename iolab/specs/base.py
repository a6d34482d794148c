"""Shared pieces of every spec model: strict base class, cross-field problems.

Field-level checks are pydantic constraints, so their errors carry the field's
path.  Checks that involve several fields (an app larger than a partition, two
apps with one id) raise :class:`FieldProblems` from a model validator: it
carries the path of every offending field so that the loader can report each
one by name, exactly like a field-level error.  :func:`problems_of` turns a
pydantic error into those ``(path, reason)`` pairs.
"""

from __future__ import annotations

import math
import stat
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError


class StrictModel(BaseModel):
    """Refuses unknown keys (a typo is an error, not a silently ignored key)."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class FieldProblems(ValueError):
    """Cross-field validation failure naming each offending path.

    ``problems`` is a list of ``(path, reason)``; paths are relative to the
    model that raised, written ``apps[1].nodes``.
    """

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{p}: {r}" for p, r in problems))


def raise_if(problems: list[tuple[str, str]]) -> None:
    if problems:
        raise FieldProblems(problems)


def format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _join(prefix: str, path: str) -> str:
    if prefix == "(top level)" or not prefix:
        return path
    return prefix + (path if path.startswith("[") else "." + path)


def problems_of(err: ValidationError) -> list[tuple[str, str]]:
    """Turn a pydantic error into ``(path, reason)`` pairs a person can read."""
    out: list[tuple[str, str]] = []
    for e in err.errors():
        # Discriminated unions and function validators add their own names
        # to the location; keep only the user's field names and indices.
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and ("[" in p or "function-" in p
                                                                        or p.startswith("policy:"))))
        prefix = format_loc(loc)
        cause = (e.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblems):
            out += [(_join(prefix, p), r) for p, r in cause.problems]
            continue
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if e["type"] == "missing":
            msg = "missing (required field)"
        elif e["type"] == "extra_forbidden":
            msg = "unknown field (check the spelling; `iolab schema` lists the fields)"
        elif e["type"] == "literal_error":
            msg = f"{msg}; got {_cut(repr(e.get('input')))}"
        hint = _yaml_number_hint(e.get("input")) if e["type"] in ("float_type", "float_parsing", "int_type",
                                                                      "int_parsing") else ""
        out.append((prefix, _cut(msg) + hint))
    return out


MAX_REASON = 300  # characters of one reason: a message never echoes a 10 MB field


def _cut(text: str, n: int = MAX_REASON) -> str:
    return text if len(text) <= n else f"{text[:n]}... ({len(text)} characters)"


def _yaml_number_hint(value: Any) -> str:
    """Why a number came as text: YAML 1.1 (PyYAML) reads ``1e308`` as a string; it needs a dot
    and a signed exponent (``1.0e+308``)."""
    if not isinstance(value, str) or len(value) > 64:
        return ""
    try:
        float(value)
    except ValueError:
        return ""
    return (f" (got the text {value!r}: YAML reads a number like 1e308 as text; write it with a dot and a "
            "signed exponent, e.g. 1.0e+308)") if any(c in value.lower() for c in "e") else \
        f" (got the text {value!r}; write the number without quotes)"


# ---------------------------------------------------------------- shared checks

MAX_TIME = 1e15  # seconds (~31.7 million years): every time a run can reach stays below this


def nested_options(info: Any) -> dict[str, Any]:
    """``strict`` and ``context`` for a model validated by hand inside a validator (a workload
    dispatched on its ``source``), so it is read as strictly as the spec around it."""
    ctx = getattr(info, "context", None) or {}
    out: dict[str, Any] = {"context": ctx} if ctx else {}
    if ctx.get("strict"):
        out["strict"] = True
    return out


def resolve_input(value: str, info: Any, what: str) -> str:
    """A spec's input file: relative to the spec's folder (the validation context's
    ``base_dir``, else the working directory), and existing; the absolute path."""
    ctx = getattr(info, "context", None) or {}
    base = Path(ctx.get("base_dir") or Path.cwd())
    try:
        p = Path(value).expanduser()
        p = p if p.is_absolute() else base / p
        kind = file_kind(p)
    except (OSError, ValueError) as exc:  # a NUL byte, a name too long
        raise ValueError(f"{what} {value!r}: not a usable path ({exc})") from None
    if kind == "missing":
        raise ValueError(f"{what} {str(p)!r} does not exist"
                         + ("" if Path(value).is_absolute() else f" (relative paths start at {base})"))
    if kind != "file":
        raise ValueError(f"{what} {str(p)!r} is {kind}, not a regular file")
    return str(p)


def not_a_file(p: str | Path, what: str) -> str:
    """Why ``p`` cannot be read as the input file ``what`` ("" if it is a regular file): ``no such WHAT``, or
    what it is instead (a folder, a FIFO, a device: reading one would block or read garbage)."""
    try:
        kind = file_kind(Path(p))
    except (OSError, ValueError) as exc:
        return f"not a usable path ({exc})"
    if kind == "file":
        return ""
    return f"no such {what}" if kind == "missing" else f"{what} expected, found {kind}"


def file_kind(p: Path) -> str:
    """What ``p`` is, following symbolic links: ``"file"`` (a regular file), ``"missing"``, or the words for
    anything else an input file must not be (a folder, a FIFO, a device, a socket)."""
    try:
        mode = p.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def finite_sum(terms: list[tuple[str, float]], reason: str, limit: float = MAX_TIME) -> list[tuple[str, str]]:
    """Refuse values whose results overflow: ``terms`` are ``(field, seconds)``; their running sum
    must stay finite and below ``limit``.  Names the field where it stops being so."""
    total = 0.0
    for field, value in terms:
        total += value
        if not math.isfinite(total) or total > limit:
            return [(field, f"{reason}: with this value the times reach {total:.3g} s, above the limit "
                            f"{limit:g} s (docs/specs.md, 'Limits')")]
    return []
