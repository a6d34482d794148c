"""Read a spec file (YAML or JSON) into its pydantic model, or explain why not.

Every problem is reported with the path of the field (``apps[1].nodes``) and
the reason, all at once, before anything runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import SpecError
from .base import FieldProblems

# kind -> model class.  Other parts register their kinds (batch, campaign) here.
_KINDS: dict[str, Callable[[], type[BaseModel]]] = {}


def register_kind(kind: str, model: Callable[[], type[BaseModel]]) -> None:
    """Register a spec kind; ``model`` is a thunk so imports stay lazy."""
    _KINDS[kind] = model


def kinds() -> dict[str, type[BaseModel]]:
    return {k: f() for k, f in _KINDS.items()}


def _io_model() -> type[BaseModel]:
    from .io import IOExperiment

    return IOExperiment


def _batch_model() -> type[BaseModel]:
    from .batch import BatchExperiment

    return BatchExperiment


def _campaign_model() -> type[BaseModel]:
    from iolab.campaign.spec import Campaign

    return Campaign


register_kind("io", _io_model)
register_kind("batch", _batch_model)
register_kind("campaign", _campaign_model)


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


def parse_spec(data: dict[str, Any], source: str = "<spec>", kind: str | None = None) -> Any:
    """Validate a dict as a spec of its ``kind`` (default ``io``)."""
    k = kind or data.get("kind", "io")
    if k not in _KINDS:
        raise SpecError(source, [("kind", f"unknown kind {k!r}; known: {', '.join(sorted(_KINDS))}")])
    model = _KINDS[k]()
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise SpecError(source, problems_of(err)) from None


def load_spec(path: str | Path, kind: str | None = None, overrides: dict[str, Any] | None = None) -> Any:
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
    return parse_spec(data, str(path), kind)


def json_schema(kind: str = "io") -> dict[str, Any]:
    return _KINDS[kind]().model_json_schema()
