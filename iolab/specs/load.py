"""Read a spec file (YAML or JSON) into its pydantic model, or explain why not.

Every problem is reported with the path of the field (``apps[1].nodes``) and
the reason, all at once, before anything runs.

Spec kinds.  The loader knows the kinds of its own layer, ``io`` and ``batch``
(:data:`KINDS`).  A kind defined higher up (``campaign``, in
:mod:`iolab.campaign.spec`) is handed to it by the caller that wants it:
``parse_spec(data, kinds={**KINDS, "campaign": Campaign})``.  So the loader never
imports the front and never depends on who imported what first (no
registration on import); ``iolab schema`` shows every kind the command line knows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import SpecError
from .base import problems_of
from .batch import BatchExperiment
from .io import IOExperiment

KINDS: Mapping[str, type[BaseModel]] = {"io": IOExperiment, "batch": BatchExperiment}


def read_document(path: str | Path) -> dict[str, Any]:
    """Read YAML or JSON into a dict, with the file name in every error."""
    p = Path(path)
    if not p.is_file():
        raise SpecError(str(p), [("(file)", "no such file")])
    text = p.read_text()
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else (
            f"line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else "(file)"
        )
        raise SpecError(str(p), [(where, f"not valid YAML/JSON: {exc}")]) from None
    if not isinstance(data, dict):
        raise SpecError(str(p), [("(top level)", "a spec is a mapping of fields")])
    return data


def parse_spec(data: dict[str, Any], source: str = "<spec>", kind: str | None = None,
               kinds: Mapping[str, type[BaseModel]] = KINDS) -> Any:
    """Validate a dict as a spec of its ``kind`` (default ``io``), one of ``kinds``."""
    k = kind or data.get("kind", "io")
    if k not in kinds:
        raise SpecError(source, [("kind", f"unknown kind {k!r}; known: {', '.join(sorted(kinds))}")])
    try:
        return kinds[k].model_validate(data)
    except ValidationError as err:
        raise SpecError(source, problems_of(err)) from None


def load_spec(path: str | Path, kind: str | None = None, overrides: dict[str, Any] | None = None,
              kinds: Mapping[str, type[BaseModel]] = KINDS) -> Any:
    """Load a spec file; ``overrides`` (dotted keys) are applied before validation."""
    data = read_document(path)
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise SpecError(str(path), [(key, "cannot override inside a non-mapping")])
        node[parts[-1]] = value
    return parse_spec(data, str(path), kind, kinds)
