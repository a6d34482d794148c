"""Shared pieces of every spec model: strict base class, cross-field problems.

Field-level checks are pydantic constraints, so their errors carry the field's
path.  Checks that involve several fields (an app larger than a partition, two
apps with one id) raise :class:`FieldProblems` from a model validator: it
carries the path of every offending field so that the loader can report each
one by name, exactly like a field-level error.  :func:`problems_of` turns a
pydantic error into those ``(path, reason)`` pairs.
"""

from __future__ import annotations

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
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and ("[" in p or "function-" in p)))
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
            msg = f"{msg}; got {e.get('input')!r}"
        out.append((prefix, msg))
    return out
