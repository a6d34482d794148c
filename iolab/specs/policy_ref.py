"""A spec's reference to a policy the user wrote: a class in a Python file, in an installed module, or
registered by an installed package under an entry-point name.

Every decision point of a spec that names a policy (the batch ``scheduler``, the I/O ``policy`` and a
batch platform's ``io_node.policy``, ``placement.strategy``, ``allocation``, ``controller.policy``)
takes, besides its built-in names::

    scheduler: {kind: python, path: my_sched.py, class: MySched, options: {depth: 8}}
    scheduler: {kind: python, module: mypkg.scheds, class: MySched}     # installed code
    scheduler: my_sched.py:MySched        # the same as the first, without options
    scheduler: mypkg.scheds:MySched       # the same as the second
    scheduler: my-sched                   # a name an installed package registered (entry points)

``path`` is relative to the spec's folder, as every path of a spec.  Reading a spec never runs the
policy's code: the file is parsed (``ast``) to check that it defines the class at its top level, and
hashed (``sha256``, recorded in every trace the run writes; a spec that gives ``sha256`` pins the
file: another content is refused).  The code runs when a run starts (``iolab.middleware.policies.loader``),
with the rights of the user who runs iolab, as any plugin does.  ``options`` are the keyword arguments
of the class's constructor: JSON-like values only.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
from importlib.metadata import entry_points, packages_distributions, version
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from iolab.specs.base import StrictModel

__all__ = ["BUILTIN", "ENTRY_POINT_GROUPS", "USER", "builtin_or_user", "MAX_POLICY_FILE", "PolicyRef", "is_policy_ref", "parse_policy",
           "registered", "user_policies"]

#: the decision point -> the entry-point group an installed package registers its policies under
ENTRY_POINT_GROUPS = {
    "scheduler": "iolab.schedulers",
    "io": "iolab.io_policies",
    "placement": "iolab.placements",
    "allocation": "iolab.allocators",
    "controller": "iolab.controllers",
}
#: the tags of a decision point's two kinds of value (a pydantic union's discriminator; error locations leave
#: them out: iolab.specs.base.problems_of)
BUILTIN, USER = "policy:builtin", "policy:user"
#: the decision point -> what messages call its policies
POINT_NAMES = {"scheduler": "batch scheduler", "io": "I/O policy", "placement": "placement strategy",
               "allocation": "node allocation", "controller": "controller policy"}
MAX_POLICY_FILE = 4 * 2**20  # bytes: a policy is a source file, not a data set
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_OPTION_TYPES = (str, int, float, bool, type(None))


def registered(point: str) -> dict[str, str]:
    """The names installed packages registered for the decision point ``point``: name -> ``module:Class``
    (read from the packages' metadata; nothing is imported)."""
    group = ENTRY_POINT_GROUPS[point]
    return {ep.name: ep.value for ep in entry_points(group=group)}


def _check_options(value: Any, where: str = "options") -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"{where}: keys must be text, got {k!r}")
            _check_options(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_options(v, f"{where}[{i}]")
    elif not isinstance(value, _OPTION_TYPES):
        raise ValueError(f"{where}: {type(value).__name__} is not a JSON value")


def _class_line(source: str, path: str, cls: str) -> int:
    """The line of ``class <cls>`` at the top level of ``source`` (parsed, never run); a ValueError that
    names the file and line if the file does not parse or does not define it there."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise ValueError(f"{path}:{exc.lineno}: not valid Python ({exc.msg})") from None
    names = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            if node.name == cls:
                return node.lineno
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):  # Cls = make_it(...): a name it defines
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id == cls:
                    return node.lineno
        elif isinstance(node, (ast.Import, ast.ImportFrom)):  # from mylib import Cls
            for alias in node.names:
                if (alias.asname or alias.name.split(".")[-1]) == cls:
                    return node.lineno
    known = f"; it defines {', '.join(names)}" if names else "; it defines no class at its top level"
    raise ValueError(f"{path}: no class {cls!r} at its top level{known}")


class PolicyRef(StrictModel):
    """A policy the user wrote (module doc): ``path`` or ``module``, the ``class``, its ``options``."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, populate_by_name=True,
                              serialize_by_alias=True)

    kind: Literal["python"] = "python"
    path: str | None = Field(None, description="a Python file that defines the class (relative to the spec)")
    module: str | None = Field(None, description="an importable module that defines the class (installed code)")
    class_: str | None = Field(None, alias="class", description="the class's name in that file or module")
    options: dict[str, Any] = Field(default_factory=dict, description="the keyword arguments of the class's "
                                    "constructor (JSON values), recorded in the trace")
    sha256: str | None = Field(None, description="the file's SHA-256 (filled in when the spec is read; given, it "
                               "pins the file: another content is refused)")
    entry_point: str | None = Field(None, description="the name an installed package registered it under")

    @model_validator(mode="before")
    @classmethod
    def _split_module(cls, v: object) -> object:
        # module: pkg.mod:Cls gives the class in one field
        if isinstance(v, dict) and isinstance(v.get("module"), str) and ":" in v["module"]:
            mod, _, name = v["module"].partition(":")
            if v.get("class") not in (None, name) or v.get("class_") not in (None, name):
                raise ValueError(f"module {v['module']!r} names class {name!r}, and class says "
                                 f"{v.get('class') or v.get('class_')!r}")
            v = {**{k: x for k, x in v.items() if k not in ("class", "class_")}, "module": mod, "class": name}
        return v

    @model_validator(mode="after")
    def _resolve(self, info) -> "PolicyRef":
        if (self.path is None) == (self.module is None):
            raise ValueError("give exactly one of path (a Python file) and module (installed code)")
        if not self.class_:
            raise ValueError("class: missing (the name of the policy's class)")
        if not _IDENT.match(self.class_):
            raise ValueError(f"class: {self.class_!r} is not a Python name")
        _check_options(self.options)
        if self.module is not None:
            if not _MODULE.match(self.module):
                raise ValueError(f"module: {self.module!r} is not a module name (pkg.mod)")
            if self.sha256 is not None:
                raise ValueError("sha256 pins a file (path); an installed module is pinned by its version")
            top = self.module.split(".")[0]
            if importlib.util.find_spec(top) is None:  # (a top-level name: found without running any code)
                raise ValueError(f"module: no module {top!r} is installed (for a file of your own, give path:)")
            return self
        ctx = getattr(info, "context", None) or {}
        base = Path(ctx.get("base_dir") or Path.cwd())
        p = Path(self.path).expanduser()
        p = p if p.is_absolute() else base / p
        try:
            if not p.is_file():
                why = "is a directory" if p.is_dir() else "does not exist" if not p.exists() else "is not a regular file"
                raise ValueError(f"path: {str(p)!r} {why}"
                                 + ("" if Path(self.path).is_absolute() else f" (relative paths start at {base})"))
            size = p.stat().st_size
            if size > MAX_POLICY_FILE:
                raise ValueError(f"path: {str(p)!r} holds {size:,} bytes; a policy file is at most "
                                 f"{MAX_POLICY_FILE:,}")
            raw = p.read_bytes()
        except OSError as exc:
            raise ValueError(f"path: {str(p)!r} cannot be read ({exc.strerror or exc})") from None
        digest = hashlib.sha256(raw).hexdigest()
        if self.sha256 is not None and self.sha256.lower() != digest:
            raise ValueError(f"sha256: {str(p)!r} has SHA-256 {digest}, the spec pins {self.sha256}: the file "
                             "changed since the spec was written")
        try:
            source = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"path: {str(p)!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        _class_line(source, str(p), self.class_)
        object.__setattr__(self, "path", str(p.resolve()))
        object.__setattr__(self, "sha256", digest)
        return self

    # -- what a user sees --------------------------------------------------------------------------
    @property
    def where(self) -> str:
        """``file.py:Class`` or ``pkg.mod:Class``."""
        return f"{self.path if self.path is not None else self.module}:{self.class_}"

    def __str__(self) -> str:
        name = Path(self.path).name if self.path is not None else self.module
        return f"{name}:{self.class_}"

    @property
    def label(self) -> str:
        """What runs and traces call it: ``my_sched.py:MySched`` or ``pkg.mod:MySched``."""
        return str(self)

    def provenance(self) -> dict[str, Any]:
        """What a trace records of it: where it came from, its hash and options."""
        out: dict[str, Any] = {"class": self.class_, "options": dict(self.options)}
        if self.path is not None:
            out.update(path=self.path, sha256=self.sha256)
        else:
            out["module"] = self.module
            try:
                top = self.module.split(".")[0]
                dists = packages_distributions().get(top) or []
                if dists:
                    out["distribution"] = f"{dists[0]}=={version(dists[0])}"
            except Exception:  # noqa: BLE001 - provenance is best effort for installed code
                pass
        if self.entry_point:
            out["entry_point"] = self.entry_point
        return out


def builtin_or_user(value: object) -> str:
    """The discriminator of a decision point's union: :data:`USER` for a ``kind: python`` value."""
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return USER if kind == "python" else BUILTIN


def is_policy_ref(value: object) -> bool:
    """Whether a spec's raw value names a user policy (a ``kind: python`` mapping, or a ``file.py:Class``
    / ``pkg.mod:Class`` string); a built-in name is not one."""
    if isinstance(value, PolicyRef):
        return True
    if isinstance(value, dict):
        return str(value.get("kind", "")).strip().lower() == "python"
    return isinstance(value, str) and ":" in value


def parse_policy(value: object, point: str, builtins: tuple[str, ...] | frozenset[str]) -> object:
    """A decision point's raw spec value, with a user policy's short forms turned into a ``kind: python``
    mapping (``file.py:Class``, ``pkg.mod:Class``, a registered name); anything else is returned as it is
    for the built-ins' own validation.  An unknown name lists the built-in and the registered ones."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if ":" in text:
        where, _, cls = text.rpartition(":")
        if where.endswith(".py") or "/" in where or "\\" in where:
            return {"kind": "python", "path": where, "class": cls}
        return {"kind": "python", "module": where, "class": cls}
    key = text.lower().replace("_", "-")
    if key in builtins:
        return value
    names = registered(point)
    if text in names:
        mod, _, cls = names[text].partition(":")
        if not cls:
            raise ValueError(f"{text!r} is registered as {names[text]!r} in {ENTRY_POINT_GROUPS[point]}, which "
                             "names no class (write module:Class)")
        return {"kind": "python", "module": mod, "class": cls, "entry_point": text}
    if text.endswith(".py"):
        raise ValueError(f"{text!r}: name the class too ({text}:ClassName)")
    extra = f"; registered by installed packages: {', '.join(sorted(names))}" if names else ""
    raise ValueError(f"unknown {POINT_NAMES[point]} {text!r}; built-in: {', '.join(builtins)}{extra}; or your own "
                     "(file.py:Class, pkg.mod:Class, or {kind: python, path: ..., class: ...})")


def user_policies(model: object, where: str = "") -> list[tuple[str, PolicyRef]]:
    """Every :class:`PolicyRef` inside a spec model, with its field path (``scheduler``,
    ``platform.io_node.policy``, ...), in field order."""
    out: list[tuple[str, PolicyRef]] = []
    if isinstance(model, PolicyRef):
        return [(where, model)]
    fields = getattr(type(model), "model_fields", None)
    if fields is None:
        return out
    for name in fields:
        if name == "workload":  # jobs, not policies (and a spec may hold thousands of them)
            continue
        value = getattr(model, name, None)
        path = f"{where}.{name}" if where else name
        if isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                out += user_policies(v, f"{path}[{i}]")
        elif value is not None and (isinstance(value, PolicyRef) or hasattr(type(value), "model_fields")):
            out += user_policies(value, path)
    return out
