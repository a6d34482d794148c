"""How many files one command walks through, and how often it goes back and forth between them.

usage: python benchmarks/code_walk.py [--files] [--pairs] [--calls] -- IOLAB_ARGS...
       e.g. python benchmarks/code_walk.py --pairs -- simulate examples/carretero-table1.yaml --out /tmp/t.h5

Runs ``iolab IOLAB_ARGS...`` in this process under Python's profiler hook (``sys.setprofile``) and keeps
the calls into the project's own files (``iolab/``, ``sim/``, ``middleware/``, ``emulator/``, ``apps/``),
leaving out what runs while a module is imported.  It counts:

- **files**: each project file once, in the order the run first enters it;
- **returns**: a function of one file returning to the project file that called it (the nearest project
  frame up the stack, library frames in between skipped); each (callee file, caller file) pair once,
  however often a loop repeats it;
- **back and forth**: returns less (files - 1).  A walk through F files needs at least F - 1 returns, one
  back to each file's first caller; the others are calls into a file the walk had already entered from
  elsewhere, what a reader following the run goes back for.

In-process walks only: what a command runs in other processes (a real run's MPI ranks and Ray workers) is
not seen here; docs/architecture.md ("Three experiments, file by file") says how those were counted.
The code measured is the ``iolab`` this interpreter imports (the repository it was installed from, printed
first); run it with a checkout's own ``.venv/bin/python`` to measure that checkout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

FOLDERS = ("iolab", "sim", "middleware", "emulator", "apps")  # the project's own files


class Walk:
    """The files a run enters and its (callee file, caller file) returns, fed by the profiler hook."""

    def __init__(self, repo: Path, this_file: str):
        self.roots = [str(repo / d) + "/" for d in FOLDERS]
        self.repo_len = len(str(repo)) + 1
        self.this_file = this_file
        self.files: list[str] = []
        self.pairs: dict[tuple[str, str], tuple[str, str]] = {}  # pair -> (callee function, caller function), first seen
        self._where: dict[str, str] = {}  # code file name -> project path, "" outside the project

    def project_path(self, filename: str) -> str:
        path = self._where.get(filename)
        if path is None:
            real = str(Path(filename).resolve()) if filename and not filename.startswith("<") else ""
            path = next((real[self.repo_len:] for root in self.roots if real.startswith(root)), "")
            self._where[filename] = path
        return path

    def _importing(self, frame) -> bool:
        """A module's top level is on the stack: the call runs while that module is imported."""
        while frame is not None:
            code = frame.f_code
            if code.co_name == "<module>" and code.co_filename != self.this_file:
                return True
            frame = frame.f_back
        return False

    def _caller(self, frame):
        """The nearest project frame below this one, or None."""
        frame = frame.f_back
        while frame is not None:
            if self.project_path(frame.f_code.co_filename):
                return frame
            frame = frame.f_back
        return None

    def hook(self, frame, event, arg) -> None:
        if event != "call" and event != "return":
            return
        path = self.project_path(frame.f_code.co_filename)
        if not path or self._importing(frame):
            return
        if event == "call":
            if path not in self.files:
                self.files.append(path)
            return
        caller = self._caller(frame)
        if caller is None:
            return
        caller_path = self.project_path(caller.f_code.co_filename)
        if caller_path != path and (path, caller_path) not in self.pairs:
            self.pairs[(path, caller_path)] = (frame.f_code.co_qualname, caller.f_code.co_qualname)

    def run(self, args: list[str]) -> None:
        from iolab.cli import main

        sys.argv = ["iolab", *args]
        sys.setprofile(self.hook)
        try:
            main()
        except SystemExit:
            pass
        finally:
            sys.setprofile(None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", action="store_true", help="list the files in the order the run first enters them")
    parser.add_argument("--pairs", action="store_true", help="list the returns: callee file -> caller file")
    parser.add_argument("--calls", action="store_true",
                        help="with --pairs: the functions of each pair's first return (callee <- caller)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the arguments of iolab")
    opts = parser.parse_args(argv)
    args = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    if not args:
        parser.error("give the command's arguments after --, e.g. -- simulate examples/carretero-table1.yaml")

    import iolab

    repo = Path(iolab.__file__).resolve().parents[1]
    walk = Walk(repo, str(Path(__file__).resolve()))
    print(f"code of {repo}", file=sys.stderr)
    walk.run(args)

    back = len(walk.pairs) - (len(walk.files) - 1)
    print(f"{len(walk.files)} files, {len(walk.pairs)} returns ({back} back and forth): iolab {' '.join(args)}")
    if opts.files:
        for i, path in enumerate(walk.files, 1):
            print(f"{i:4d} {path}")
    if opts.pairs:
        for (callee, caller), (callee_fn, caller_fn) in sorted(walk.pairs.items()):
            line = f"  {callee} -> {caller}"
            print(line + (f"   ({callee_fn} <- {caller_fn})" if opts.calls else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
