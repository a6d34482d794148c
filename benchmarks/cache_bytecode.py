"""Cache the bytecode of the iolab being measured, as a user's installation has it.

A benchmark that times whole ``iolab`` processes must not time the compilation of iolab's own modules:
``pip install`` of the wheel writes their ``.pyc`` files, and an editable install writes them at the
first import, unless ``PYTHONDONTWRITEBYTECODE`` is set, as it is on some build machines (this one):
then every run compiles again every module it imports (about 0.09 s of CPU for ``iolab simulate``, a
third of a KTH-SP2 run's start-up).  :func:`compile_iolab` writes them once, beside the sources, before
the first timed run (``python -m compileall``; the files are ignored by git).  The references are one
script each, compiled at every run as any script is.
"""

from __future__ import annotations

import compileall
import importlib.util
import sys
from pathlib import Path


def package_dirs() -> list[Path]:
    """The folders the installed iolab imports its modules from (the checkout's, for an editable install)."""
    dirs: list[Path] = []
    for name in ("iolab", "iolab.sim", "iolab.middleware", "iolab.emulator", "iolab.apps"):
        spec = importlib.util.find_spec(name)
        for d in (spec.submodule_search_locations or []) if spec is not None else []:
            p = Path(d)
            if p.is_dir() and not any(p == q or q in p.parents for q in dirs):
                dirs.append(p)
    return dirs


def compile_iolab(quiet: bool = True) -> list[Path]:
    """Write the ``.pyc`` of every iolab module (those present and current are kept); the folders."""
    dirs = package_dirs()
    for d in dirs:
        compileall.compile_dir(str(d), quiet=2 if quiet else 1, workers=1)
    if not quiet:
        print(f"bytecode cached in {', '.join(map(str, dirs))}", file=sys.stderr)
    return dirs


if __name__ == "__main__":
    for d in compile_iolab(quiet=False):
        print(d)
