"""How many files one command walks through, and how often it goes back and forth between them.

usage: python benchmarks/code_walk.py [--files] [--pairs] [--calls] [--every-process] -- IOLAB_ARGS...
       e.g. python benchmarks/code_walk.py --pairs -- simulate examples/carretero-table1.yaml --out /tmp/t.h5
            python benchmarks/code_walk.py --every-process -- emulate examples/combined-small.yaml --out /tmp/r.h5

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

By default the command runs in this process, and what it runs in other processes (a real run's MPI ranks
and Ray workers, the command re-executed in its own network namespace) is not seen.  ``--every-process``
runs it as a child (through ``iolab.cli.main``, the in-process walk's entry) with the same hook in every Python process it starts: the folder
``code_walk_site/`` goes first on ``PYTHONPATH``, and its ``sitecustomize`` installs the hook (in every
thread) when ``IOLAB_CODE_WALK`` names a folder; each process appends each file it enters (with the time)
and each return it sees, the first time, to a file of its own there, as it goes (a Ray worker is killed,
not exited).  A file counts once, where the first process enters it; a pair once, whichever processes
return it.  A call between processes (an actor's method, a rank started by ``mpiexec``) has no caller
frame in the process that serves it, so it is no return here.
The code measured is the ``iolab`` this interpreter imports (the repository it was installed from, printed
first); run it with a checkout's own ``.venv/bin/python`` to measure that checkout.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

FOLDERS = ("iolab", "sim", "middleware", "emulator", "apps")  # the project's own files
FOLDER_ENV, REPO_ENV = "IOLAB_CODE_WALK", "IOLAB_CODE_WALK_REPO"  # --every-process: where the walks go, what is measured
SITE = Path(__file__).resolve().parent / "code_walk_site"  # its sitecustomize calls instrument_this_process


class Walk:
    """The files a run enters and its (callee file, caller file) returns, fed by the profiler hook."""

    def __init__(self, repo: Path, this_file: str, sink=None):
        self.sink = sink  # a text file each new file and pair is written to at once (--every-process)
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
            if (code.co_name == "<module>" and code.co_filename != self.this_file
                    and frame.f_globals.get("__name__") != "__main__"):  # a program's main is run, not imported
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
                if self.sink is not None:
                    self.sink.write(f"F\t{time.time()!r}\t{path}\n")
            return
        caller = self._caller(frame)
        if caller is None:
            return
        caller_path = self.project_path(caller.f_code.co_filename)
        if caller_path != path and (path, caller_path) not in self.pairs:
            self.pairs[(path, caller_path)] = (frame.f_code.co_qualname, caller.f_code.co_qualname)
            if self.sink is not None:
                self.sink.write(f"P\t{path}\t{caller_path}\t{frame.f_code.co_qualname}\t{caller.f_code.co_qualname}\n")

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


def instrument_this_process() -> None:
    """The hook in this process and its threads, writing to ``$IOLAB_CODE_WALK/<pid>.walk`` (the
    sitecustomize of ``code_walk_site/`` calls it at start-up)."""
    folder, repo = os.environ.get(FOLDER_ENV), os.environ.get(REPO_ENV)
    if not folder or not repo:
        return
    sink = open(Path(folder) / f"{os.getpid()}.walk", "a", buffering=1)  # a line at a time: a killed process keeps it
    walk = Walk(Path(repo), str(Path(__file__).resolve()), sink)
    threading.setprofile(walk.hook)
    sys.setprofile(walk.hook)


def every_process(repo: Path, args: list[str]) -> tuple[Walk, int]:
    """``iolab ARGS`` in a child process, with the hook in every Python process it starts: the merged walk (files in
    the order the first process entered them) and the number of processes that entered the project."""
    folder = Path(tempfile.mkdtemp(prefix="iolab-walk-"))
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, FOLDER_ENV: str(folder), REPO_ENV: str(repo),
           "PYTHONPATH": str(SITE) + (os.pathsep + path if path else "")}
    main = "import sys; from iolab.cli import main; sys.argv[0] = 'iolab'; main()"  # the entry the in-process walk calls
    subprocess.run([sys.executable, "-c", main, *args], env=env, check=False)
    first: dict[str, float] = {}
    walk = Walk(repo, "")
    processes = 0
    for f in sorted(folder.glob("*.walk")):
        lines = f.read_text().splitlines()
        processes += any(line.startswith("F\t") for line in lines)
        for line in lines:
            kind, a, b, *fns = line.split("\t")
            if kind == "F":
                first[b] = min(first.get(b, float("inf")), float(a))
            elif kind == "P" and len(fns) == 2:
                walk.pairs.setdefault((a, b), (fns[0], fns[1]))
        f.unlink()
    folder.rmdir()
    walk.files = sorted(first, key=first.get)
    return walk, processes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", action="store_true", help="list the files in the order the run first enters them")
    parser.add_argument("--pairs", action="store_true", help="list the returns: callee file -> caller file")
    parser.add_argument("--calls", action="store_true",
                        help="with --pairs: the functions of each pair's first return (callee <- caller)")
    parser.add_argument("--every-process", action="store_true",
                        help="run the command as a child, with the hook in every Python process it starts")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the arguments of iolab")
    opts = parser.parse_args(argv)
    args = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    if not args:
        parser.error("give the command's arguments after --, e.g. -- simulate examples/carretero-table1.yaml")

    import iolab

    repo = Path(iolab.__file__).resolve().parents[1]
    print(f"code of {repo}", file=sys.stderr)
    where = ""
    if opts.every_process:
        walk, processes = every_process(repo, args)
        where = f" in {processes} processes"
    else:
        walk = Walk(repo, str(Path(__file__).resolve()))
        walk.run(args)

    back = len(walk.pairs) - (len(walk.files) - 1)
    print(f"{len(walk.files)} files, {len(walk.pairs)} returns ({back} back and forth){where}: "
          f"iolab {' '.join(args)}")
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
