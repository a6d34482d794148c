"""Names that become paths: the one place that checks and sanitises them.

A spec's ``name``, an app's or a job's id, a campaign's name and an output's
name all end up as a file or directory name somewhere (a work directory, a
per-job tier directory, a trace file).  None of them may lead out of the
directory the user chose or the documented default: no ``/``, no ``..``, no
leading dot, no control characters, nothing longer than a file name may be.

- :data:`NAME_PATTERN` is the grammar of a name a person writes in a spec
  (letters, digits, ``_ . : -``, starting with a letter or digit, at most
  :data:`MAX_NAME` characters); spec models use it as their field pattern.
- :func:`check_name` refuses a name outside that grammar (``ValueError``
  naming the field).
- :func:`path_component` turns *any* string into a safe single path
  component (for names that were not validated, e.g. built by a program);
  it never returns ``""``, ``"."`` or ``".."`` and never contains ``/``.
- :func:`inside` checks that a path built from a name stays inside its root.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

MAX_NAME = 64
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$"
_NAME = re.compile(NAME_PATTERN)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")


def is_safe_name(name: object) -> bool:
    """True if ``name`` is a string in the spec name grammar (so a safe path component)."""
    return (isinstance(name, str) and 0 < len(name) <= MAX_NAME and bool(_NAME.match(name))
            and name not in (".", ".."))


def check_name(name: object, field: str = "name") -> str:
    """``name`` itself if safe as a path component, else ``ValueError`` naming ``field``."""
    if not is_safe_name(name):
        raise ValueError(f"{field}: {name!r} is not a valid name: use 1 to {MAX_NAME} letters, digits, "
                         "'_', '.', ':' or '-', starting with a letter or digit (it becomes a file name)")
    return name  # type: ignore[return-value]


def path_component(name: object, default: str = "unnamed") -> str:
    """A single, safe path component made from ``name``.

    Safe names come back unchanged.  Anything else has every run of other
    characters replaced by ``_``, leading dots and ``_`` stripped, is cut to
    :data:`MAX_NAME` characters and, if it changed, gets 8 hex digits of the
    original's hash so that two different names stay different.
    """
    text = str(name) if name is not None else ""
    if is_safe_name(text):
        return text
    clean = _UNSAFE.sub("_", text).lstrip("._-:")[: MAX_NAME - 9]
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{clean or default}-{digest}"


def inside(root: str | Path, path: str | Path) -> bool:
    """True if ``path`` (resolved, symlinks followed) is ``root`` or below it."""
    r, p = Path(root).resolve(), Path(path).resolve()
    return p == r or r in p.parents


__all__ = ["MAX_NAME", "NAME_PATTERN", "check_name", "inside", "is_safe_name", "path_component"]
