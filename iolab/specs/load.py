"""Read a spec file (YAML or JSON) into its pydantic model, or explain why not.

Every problem is reported with the path of the field (``apps[1].nodes``) and
the reason, all at once, before anything runs.

Spec kinds.  The loader knows the kinds of its own layer, ``io`` and ``batch``
(:data:`KINDS`).  A kind defined higher up (``campaign``, in
:mod:`iolab.campaign.spec`) is handed to it by the caller that wants it:
``parse_spec(data, kinds={**KINDS, "campaign": Campaign})``.  So the loader never
imports the front and never depends on who imported what first (no
registration on import); ``iolab schema`` shows every kind the command line knows.

What a person writes is read strictly (docs/specs.md, "Reading rules"):

- the file must be UTF-8; ``-`` reads the spec from standard input;
- a key given twice in one mapping is an error naming both lines (YAML's
  "last one wins" would silently drop the first);
- types are strict: ``iterations: true`` or ``iterations: "3"`` is not an
  integer (pydantic strict mode; only quantities with units, ``200GB``, are
  strings that become numbers);
- relative paths inside a spec (a workload's ``path``, a campaign's files)
  are resolved against the folder of the spec file (the working directory
  for ``-``), and a file that does not exist is refused at validation,
  naming the field and the path.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ValidationError

from iolab.errors import SpecError
from iolab.specs.policy_ref import user_policies
from iolab.specs.base import not_a_file, problems_of


def _io_experiment() -> type[BaseModel]:
    from iolab.specs.io import IOExperiment  # lazy: a batch spec is read without building the I/O level's models

    return IOExperiment


def _batch_experiment() -> type[BaseModel]:
    from iolab.specs.batch import BatchExperiment  # lazy: an I/O spec is read without building the batch models

    return BatchExperiment


class _Kinds(Mapping[str, type[BaseModel]]):
    """The spec kinds of this layer, kind -> model; a kind's models are built (their module imported) when
    the kind is first looked up, so reading a batch spec does not pay for the I/O experiment's models
    (~15 ms of ``iolab simulate BATCH``'s start) nor an I/O spec for the batch ones.  Otherwise a plain
    read-only mapping: ``kinds[k]``, ``k in kinds``, ``{**KINDS, ...}``."""

    _MODELS = {"io": _io_experiment, "batch": _batch_experiment}

    def __getitem__(self, kind: str) -> type[BaseModel]:
        return self._MODELS[kind]()

    def __iter__(self):
        return iter(self._MODELS)

    def __len__(self) -> int:
        return len(self._MODELS)

    def __contains__(self, kind: object) -> bool:
        return kind in self._MODELS

    def __repr__(self) -> str:
        return f"KINDS({', '.join(self._MODELS)})"


KINDS: Mapping[str, type[BaseModel]] = _Kinds()

STDIN = "-"
MAX_SPEC_BYTES = 64 * 1024 * 1024  # a spec larger than this is not something a person wrote
_stdin_text: str | None = None  # standard input can be read once; every reader of "-" shares it


_yaml_loader: Any = None  # the loader class, made at the first YAML document (a JSON spec never imports yaml)


def _unique_key_loader() -> Any:
    """yaml's SafeLoader, refusing a key given twice in one mapping (naming both lines); made, and yaml
    imported, at the first YAML document: ``iolab simulate SPEC.json`` does not pay for yaml at its start."""
    global _yaml_loader
    if _yaml_loader is None:
        import yaml  # lazy: a JSON spec is read without yaml (8 ms of the start of `iolab simulate SPEC.json`)

        class _UniqueKeyLoader(yaml.SafeLoader):
            """SafeLoader that refuses a key given twice in one mapping, naming both lines."""

        def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
            loader.flatten_mapping(node)
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = loader.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark, "found an unhashable key (a list or mapping)",
                        key_node.start_mark) from None
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} given twice (lines {seen[key]} and {line})", key_node.start_mark)
                seen[key] = line
            return loader.construct_mapping(node, deep=deep)

        _UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
        _yaml_loader = _UniqueKeyLoader
    return _yaml_loader


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"key {k!r} given twice in one object")
        out[k] = v
    return out


def parse_text(text: str, source: str, json_only: bool = False) -> Any:
    """YAML (or JSON) text into Python data; every problem a :class:`SpecError` naming ``source``
    and the line (duplicate keys, bad syntax, integers too long to convert)."""
    if json_only:
        yaml_error: type[Exception] = json.JSONDecodeError  # no YAML here: yaml is not imported for it
    else:
        import yaml  # lazy: a JSON spec is read without yaml

        yaml_error = yaml.YAMLError
    try:
        if json_only:
            return json.loads(text, object_pairs_hook=_json_pairs)
        return yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 - a SafeLoader subclass
    except (yaml_error, json.JSONDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else (
            f"line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else "(file)"
        )
        problem = getattr(exc, "problem", None) if not isinstance(exc, json.JSONDecodeError) else None
        reason = problem if problem and "given twice" in problem else f"not valid YAML/JSON: {exc}"
        raise SpecError(source, [(where, reason)]) from None
    except (ValueError, RecursionError) as exc:  # a 5000-digit integer, a duplicate JSON key, deep nesting
        raise SpecError(source, [("(file)", f"not readable: {exc}")]) from None


def read_text(path: str | Path) -> str:
    """The text of a spec file (``-``: standard input), checked to be UTF-8."""
    global _stdin_text
    if str(path) == STDIN:
        if _stdin_text is None:
            raw = sys.stdin.buffer.read(MAX_SPEC_BYTES + 1) if hasattr(sys.stdin, "buffer") else \
                sys.stdin.read().encode()
            _stdin_text = _decode(raw, "<stdin>")
        return _stdin_text
    p = Path(path)
    why = not_a_file(p, "file")
    if why:
        raise SpecError(str(p), [("(file)", why)])
    try:
        size = p.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise SpecError(str(p), [("(file)", f"{size} bytes; a spec is at most {MAX_SPEC_BYTES} bytes")])
        raw = p.read_bytes()
    except OSError as exc:
        raise SpecError(str(p), [("(file)", f"cannot read: {exc.strerror or exc}")]) from None
    return _decode(raw, str(p))


def _decode(raw: bytes, source: str) -> str:
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(source, [("(file)", f"more than {MAX_SPEC_BYTES} bytes; not a spec")])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(source, [(f"line {line}", f"not UTF-8 text (byte {raw[exc.start]:#04x} at offset "
                                                  f"{exc.start}); save the file as UTF-8")]) from None


def spec_dir(path: str | Path) -> Path:
    """The folder relative paths of the spec at ``path`` resolve against (cwd for ``-``)."""
    if str(path) == STDIN:
        return Path.cwd()
    return Path(path).resolve().parent


MAX_JOBS = 50_000  # jobs of one batch spec (simulate --max-jobs); inline jobs counted while the document is read
MAX_APPS = 10_000  # apps of one I/O spec (simulate --max-apps); counted while the document is read
MAX_LINE = 1 << 20  # characters of one line of a spec

# The lists counted while a document is read: key path from the root -> (what, default limit, option).
COUNTED = {("apps",): ("apps", MAX_APPS, "--max-apps"), ("workload", "jobs"): ("jobs", MAX_JOBS, "--max-jobs")}


class _TooMany(Exception):
    pass


def lift(option: str) -> str:
    """How to raise a counted limit, for any command: only ``iolab simulate`` has the option."""
    return (f"`iolab simulate {option} N` allows more; emulate, validate and sweep keep this limit "
            "(docs/specs.md, 'Limits')")


def _check_lines(text: str, source: str) -> None:
    """Refuse a line longer than :data:`MAX_LINE` (before the parser builds a 10 MB scalar)."""
    start = 0
    n = len(text)
    if n <= MAX_LINE:
        return
    line = 1
    while start < n:
        end = text.find("\n", start)
        end = n if end < 0 else end
        if end - start > MAX_LINE:
            raise SpecError(source, [(f"line {line}", f"{end - start} characters; a line of a spec is at most "
                                                      f"{MAX_LINE}")])
        start, line = end + 1, line + 1


def count_items(text: str, source: str, limits: Mapping[str, int] | None = None) -> None:
    """Count the entries of the lists of :data:`COUNTED` while the YAML is scanned (events only,
    libyaml's parser where installed; nothing is built) and refuse, at the first entry past the
    limit, naming its line, the count and the option that lifts the limit."""
    import yaml  # lazy: a JSON spec is counted without yaml (count_built)

    limits = limits or {}
    bound = {k: limits.get(what, dflt) for k, (what, dflt, _) in COUNTED.items()}
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    stack: list[list] = []  # per open collection: [kind, pending key (map) or entries so far (seq), its key]
    try:
        for ev in yaml.parse(text, Loader=loader):
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent, yaml.ScalarEvent, yaml.AliasEvent)):
                if stack:
                    top = stack[-1]
                    if top[0] == "map":
                        if top[1] is None:  # this node is a key
                            top[1] = ev.value if isinstance(ev, yaml.ScalarEvent) else ""
                            continue
                        key = top[1]
                        top[1] = None
                    else:
                        key = top[1]
                        top[1] += 1
                        keys = tuple(x[2] for x in stack[1:])  # the path of this list from the root mapping
                        if keys in bound and stack[0][0] == "map" and top[1] > bound[keys]:
                            what, _, option = COUNTED[keys]
                            raise _TooMany(".".join(keys), ev.start_mark.line + 1, what, bound[keys], option)
                else:
                    key = None
                parent_keys_ok = all(x[0] == "map" for x in stack)  # counted lists hang off mappings only
                if isinstance(ev, yaml.MappingStartEvent):
                    stack.append(["map", None, key if parent_keys_ok else None])
                elif isinstance(ev, yaml.SequenceStartEvent):
                    stack.append(["seq", 0, key if parent_keys_ok else None])
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                stack.pop()
    except _TooMany as tm:
        field_, line, what, limit, option = tm.args
        raise SpecError(source, [(field_, f"more than {limit} {what} (counted while reading, line {line}); "
                                          f"this is above the limit: {lift(option)}")]) from None
    except yaml.YAMLError:
        return  # parse_text reports the syntax error with its line


def read_document(path: str | Path, limits: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Read YAML or JSON into a dict, with the file name in every error.  Before anything is
    built: lines are at most :data:`MAX_LINE` characters and the lists of :data:`COUNTED` (apps,
    inline jobs) within their limits (``limits``: ``{"apps": N, "jobs": N}`` overrides)."""
    source = "<stdin>" if str(path) == STDIN else str(path)
    text = read_text(path)
    json_only = str(path) != STDIN and Path(path).suffix.lower() == ".json"
    if not json_only:  # JSON (a .json file) is often one long line, and is read at C speed
        _check_lines(text, source)
        count_items(text, source, limits)
    data = parse_text(text, source, json_only=json_only)
    if not isinstance(data, dict):
        raise SpecError(source, [("(top level)", "a spec is a mapping of fields")])
    if json_only:  # JSON is read at C speed: count what was built, before it is validated
        count_built(data, source, limits)
    return data


def count_built(data: dict[str, Any], source: str, limits: Mapping[str, int] | None = None) -> None:
    """The limits of :func:`count_items` on a document already read (JSON)."""
    limits = limits or {}
    for keys, (what, dflt, option) in COUNTED.items():
        node: Any = data
        for k in keys:
            node = node.get(k) if isinstance(node, dict) else None
        limit = limits.get(what, dflt)
        if isinstance(node, list) and len(node) > limit:
            raise SpecError(source, [(".".join(keys), f"{len(node)} {what}, above the limit of {limit}: "
                                                      f"{lift(option)}")])


def parse_spec(data: dict[str, Any], source: str = "<spec>", kind: str | None = None,
               kinds: Mapping[str, type[BaseModel]] = KINDS, base_dir: str | Path | None = None,
               strict: bool = True) -> Any:
    """Validate a dict as a spec of its ``kind`` (default ``io``), one of ``kinds``.

    ``strict`` (the default: a person wrote ``data``) refuses ``true`` for 1 and
    ``"3"`` for 3.  Relative paths in the spec resolve against ``base_dir``
    (default: the working directory)."""
    if not isinstance(data, dict):
        raise SpecError(source, [("(top level)", "a spec is a mapping of fields")])
    k = kind or data.get("kind", "io")
    if not isinstance(k, str) or k not in kinds:
        raise SpecError(source, [("kind", f"unknown kind {k!r}; known: {', '.join(sorted(kinds))}")])
    context = {"base_dir": Path(base_dir) if base_dir is not None else Path.cwd(), "strict": strict}
    try:
        return kinds[k].model_validate(data, strict=strict, context=context)
    except ValidationError as err:
        raise SpecError(source, problems_of(err)) from None
    except RecursionError:
        raise SpecError(source, [("(top level)", "nested too deeply")]) from None


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any] | None, source: str) -> dict[str, Any]:
    """``data`` with ``overrides`` (dotted keys; None = keep) applied."""
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise SpecError(source, [(key, "cannot override inside a non-mapping")])
        node[parts[-1]] = value
    return data


def load_spec(path: str | Path, kind: str | None = None, overrides: dict[str, Any] | None = None,
              kinds: Mapping[str, type[BaseModel]] = KINDS, limits: Mapping[str, int] | None = None) -> Any:
    """Load a spec file (``-``: standard input); ``overrides`` (dotted keys) are applied before
    validation; relative paths inside resolve against the file's folder; ``limits``: see
    :func:`read_document`."""
    source = "<stdin>" if str(path) == STDIN else str(path)
    data = apply_overrides(read_document(path, limits), overrides, source)
    return parse_spec(data, source, kind, kinds, base_dir=spec_dir(path))


def input_files(spec: Any, spec_path: str | Path | None = None) -> list[str]:
    """The files a run of ``spec`` reads: the spec file itself (not ``-``), its workload file (SWF, Theta), its
    controller's model file and the files of the user's policies it names, as the spec resolved them.  An output
    must be none of them (:func:`iolab.atomic.check_output`)."""
    out = [str(spec_path)] if spec_path is not None and str(spec_path) != STDIN else []
    path = getattr(getattr(spec, "workload", None), "path", None)
    model = getattr(getattr(spec, "controller", None), "model_file", None)
    policies = [ref.path for _, ref in user_policies(spec) if ref.path is not None]
    return out + [p for p in (path, model) if isinstance(p, str)] + policies
