"""Shared pieces of every spec model: strict base class, cross-field problems.

Field-level checks are pydantic constraints, so their errors carry the field's
path.  Checks that involve several fields (an app larger than a partition, two
apps with one id) raise :class:`FieldProblems` from a model validator: it
carries the path of every offending field so that the loader can report each
one by name, exactly like a field-level error.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


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
