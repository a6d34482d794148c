"""Loading a policy the user wrote, and reporting what goes wrong inside it with the user's own file and line.

A spec names a user policy by a :class:`iolab.specs.policy_ref.PolicyRef` (a file, an installed module or a
registered name; reading the spec never runs its code).  :func:`load_policy` runs the code: it imports the
file or module, checks what the class says of the API version and builds it with the spec's ``options``.
:class:`PolicySource` is the same reference with the file's text, so another process (a Ray actor on this
host or another) builds the same object from the same bytes (:meth:`PolicySource.load`).

Errors:

- :class:`PolicyLoadError` (a ``ValueError``: bad input, exit 2): the file does not import, the class is
  missing, is not a policy of that decision point, wants a newer API, or refuses its options; the message
  names the file and line where it failed;
- :class:`iolab.invariants.PolicyRaised` (exit 1): the policy raised while deciding; raised by the
  guards (:mod:`.guard`) with :func:`user_frames`, which keeps the frames of the user's code and leaves
  iolab's out.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import linecache
import sys
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolab.errors import IolabError, SpecError
from iolab.specs.policy_ref import user_policies

__all__ = ["API_VERSION", "POINT_OF_FIELD", "REQUIRED", "PolicyLoadError", "PolicySource", "check_spec_policies",
           "load_policy", "policy_name", "user_frames"]

#: the version of the public policy API (``iolab.policy``): a policy class may say which it was written for
#: (``api_version = 1``); a newer one than this is refused, an older one is accepted while it is supported
API_VERSION = 1

#: the decision point -> the methods a class must have to be a policy of it (one of each tuple)
REQUIRED: dict[str, tuple[tuple[str, ...], ...]] = {
    "scheduler": (("decide",),),
    "io": (("key", "choose", "shares"),),
    "placement": (("choose",),),
    "allocation": (("allocate",),),
    "controller": (("cycle",),),
}
_POINT_NAMES = {"scheduler": "a batch scheduler (decide)",
                "io": "an I/O policy (an order: key or choose; or a sharing: shares)",
                "placement": "a placement policy (choose)", "allocation": "a node allocator (allocate)",
                "controller": "a load controller policy (cycle)"}
_OWN_PACKAGES = ("iolab", "iolab.sim", "iolab.middleware", "iolab.emulator", "iolab.apps")
_own_dirs: tuple[str, ...] | None = None


class PolicyLoadError(IolabError, ValueError):
    """A user policy could not be built (bad input, exit 2): the message names the file and the line."""

    def __init__(self, message: str):
        IolabError.__init__(self, message)
        ValueError.__init__(self, message)

    def __str__(self) -> str:
        return self.message


#: a spec field that names a policy -> its decision point
POINT_OF_FIELD = {"scheduler": "scheduler", "policy": "io", "platform.io_node.policy": "io",
                  "placement.strategy": "placement", "allocation": "allocation", "controller.policy": "controller"}


def check_spec_policies(spec: Any, source: str = "<spec>") -> None:
    """Build every policy of the user's that ``spec`` names, once, before a run starts: a file that does not
    import, a class that is not a policy of its decision point or refuses its options is a
    :class:`~iolab.errors.SpecError` naming the spec's field (exit 2), not a failure mid-run."""
    problems = []
    for where, ref in user_policies(spec):
        point = POINT_OF_FIELD.get(where)
        if point is None:
            continue
        try:
            PolicySource.of(ref, point).load()
        except PolicyLoadError as exc:
            problems.append((where, exc.message))
    if problems:
        raise SpecError(source, problems)


@dataclass(frozen=True)
class PolicySource:
    """A user policy as shipped to another process: the reference's fields and, for a file, its text."""

    point: str
    cls: str
    options: dict = field(default_factory=dict)
    path: str | None = None
    module: str | None = None
    text: str | None = None
    sha256: str | None = None

    @classmethod
    def of(cls, ref: Any, point: str) -> "PolicySource":
        """From a :class:`~iolab.specs.policy_ref.PolicyRef`: the file is read now (and checked against the
        hash the spec recorded when it was read)."""
        text = None
        if ref.path is not None:
            try:
                raw = Path(ref.path).read_bytes()
            except OSError as exc:
                raise PolicyLoadError(f"{ref.path}: cannot be read ({exc.strerror or exc})") from None
            digest = hashlib.sha256(raw).hexdigest()
            if ref.sha256 is not None and digest != ref.sha256:
                raise PolicyLoadError(f"{ref.path}: changed since the spec was read (SHA-256 {digest}, the spec "
                                      f"recorded {ref.sha256})")
            text = raw.decode("utf-8", errors="replace")
        return cls(point, ref.class_, dict(ref.options), ref.path, ref.module, text, ref.sha256)

    @property
    def label(self) -> str:
        """``my_sched.py:MySched`` (what messages and traces call it)."""
        return f"{Path(self.path).name if self.path else self.module}:{self.cls}"

    def load(self) -> Any:
        """The policy object (the class built with the options)."""
        return _build(self._class(), self)

    def _class(self) -> type:
        if self.path is not None:
            module = _module_of_file(self.path, self.text, self.sha256)
        else:
            try:
                module = importlib.import_module(self.module)
            except ImportError as exc:
                raise PolicyLoadError(f"module {self.module!r}: cannot be imported ({exc})") from None
            except Exception as exc:  # noqa: BLE001 - the user's module raised on import
                raise PolicyLoadError(f"module {self.module!r} raised while imported: "
                                      f"{user_frames(exc)}") from None
        obj = getattr(module, self.cls, None)
        if obj is None:
            raise PolicyLoadError(f"{self.label}: {self.path or self.module} has no {self.cls!r} once imported")
        if not isinstance(obj, type):
            raise PolicyLoadError(f"{self.label}: {self.cls!r} is a {type(obj).__name__}, not a class")
        return obj


def _module_of_file(path: str, text: str | None, sha256: str | None) -> types.ModuleType:
    """The user's file as a module of its own (one per path and content: a name made of their hash), its
    source kept in ``linecache`` so that tracebacks show its lines in any process."""
    if text is None:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    digest = sha256 or hashlib.sha256(text.encode("utf-8")).hexdigest()
    # one module per file and content: the same text at two paths is two modules (each traceback names its own file)
    name = "iolab_user_policy_" + hashlib.sha256(f"{path}\0{digest}".encode("utf-8", "surrogatepass")).hexdigest()[:16]
    module = sys.modules.get(name)
    if module is not None:
        return module
    linecache.cache[path] = (len(text), None, text.splitlines(True), path)
    try:
        code = compile(text, path, "exec")
    except SyntaxError as exc:
        raise PolicyLoadError(f"{path}:{exc.lineno}: not valid Python ({exc.msg})") from None
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module  # (a dataclass or a pickle inside it looks its module up)
    try:
        exec(code, module.__dict__)  # noqa: S102 - the user's own policy, named in their spec
    except BaseException as exc:
        del sys.modules[name]
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise PolicyLoadError(f"{path} raised while imported: {user_frames(exc)}") from None
    return module


def _build(cls: type, src: PolicySource) -> Any:
    missing = [alts for alts in REQUIRED[src.point] if not any(_defines(cls, m) for m in alts)]
    if missing:
        want = " or ".join(missing[0])
        raise PolicyLoadError(f"{src.label}: not {_POINT_NAMES[src.point]}: the class has no method {want}")
    version = getattr(cls, "api_version", API_VERSION)
    if not isinstance(version, int) or version > API_VERSION:
        raise PolicyLoadError(f"{src.label}: written for policy API version {version!r}; this iolab has version "
                              f"{API_VERSION}")
    try:
        return cls(**src.options)
    except TypeError as exc:
        if _raised_here(exc, cls):  # the call itself: an option the constructor does not take
            raise PolicyLoadError(f"{src.label}: options {src.options!r} do not fit its constructor ({exc})") from None
        raise PolicyLoadError(f"{src.label} raised while built with options {src.options!r}: "
                              f"{user_frames(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - the user's constructor refused its options
        raise PolicyLoadError(f"{src.label} raised while built with options {src.options!r}: "
                              f"{user_frames(exc)}") from None


def _defines(cls: type, method: str) -> bool:
    """Whether ``cls`` has ``method``, and not only as the public base's placeholder (``abstractmethod``)."""
    fn = getattr(cls, method, None)
    return callable(fn) and not getattr(fn, "__isabstractmethod__", False)


def _raised_here(exc: BaseException, cls: type) -> bool:
    """Whether a TypeError came from calling the class itself (a wrong keyword), not from inside its code."""
    tb = exc.__traceback__
    return tb is not None and tb.tb_next is None


def load_policy(ref: Any, point: str) -> Any:
    """The policy object a spec's reference names (``point``: ``scheduler``, ``io``, ``placement``,
    ``allocation`` or ``controller``)."""
    return PolicySource.of(ref, point).load()


def policy_name(policy: Any) -> str:
    """What runs and messages call a policy object: its ``name`` attribute, else its class's name."""
    name = getattr(policy, "name", None)
    return name if isinstance(name, str) and name else type(policy).__name__


def _own_folders() -> tuple[str, ...]:
    """The folders of iolab's code packages (the examples' folder is not one: its policies are a user's)."""
    global _own_dirs
    if _own_dirs is None:
        found = []
        for name in _OWN_PACKAGES:
            spec = importlib.util.find_spec(name)
            for d in (spec.submodule_search_locations or []) if spec is not None else []:
                found.append(str(Path(d).resolve()) + "/")
        _own_dirs = tuple(found)
    return _own_dirs


def user_frames(exc: BaseException, limit: int = 6) -> str:
    """``ZeroDivisionError: division by zero (my_sched.py:12 in decide: return 1 / 0)``: the exception and
    the frames of the code outside iolab (the user's), innermost last; iolab's own frames are left out."""
    own = _own_folders()
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(own) and not f.filename.startswith("<frozen")]
    where = "; ".join(f"{f.filename}:{f.lineno} in {f.name}" + (f": {f.line.strip()}" if f.line else "")
                      for f in frames[-limit:])
    head = f"{type(exc).__name__}: {exc}"
    return f"{head} ({where})" if where else head
