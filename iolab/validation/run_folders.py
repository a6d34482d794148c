"""The work folders of ``iolab validate``'s real runs when no ``--work-dir`` is given.

Each real run then works in a folder of its own under ``$TMPDIR``
(``iolab-emulate-SPEC-STAMP-POLICY``, ``iolab-batch-SPEC-STAMP-SCHEDULER``): its checkpoints
(about 100 MB for carretero2020's Table 1) and logs.  As ``iolab emulate`` does
(:mod:`iolab.emulator.work_folder`), the folder is removed when the run ended well (a complete
trace, every app or job ``ok``: the trace holds what the comparison needs), kept and its path said
when the run failed, was interrupted or ``--keep-work`` was given.  With ``--work-dir DIR`` the
folders are ``DIR/POLICY`` and stay (they are what ``--traces DIR`` reuses); a spec that names
its own ``emulator.work_dir`` works there, and that folder stays too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from iolab.emulator.settings import default_work_dir
from iolab.emulator.work_folder import ended_well, finish
from iolab.names import path_component
from iolab.trace import Trace


def temporary_folder(spec, label: str) -> Path | None:
    """A new folder under ``$TMPDIR`` for the real run ``label`` (a policy, ``POLICY-rK``, a scheduler) of
    ``spec``; None when the spec names its own ``emulator.work_dir`` (the run works there, and it stays)."""
    if spec.emulator.work_dir:
        return None
    base = default_work_dir(spec, None)
    return base.with_name(f"{base.name}-{path_component(label)}")


def run_in(work: Path | None, run: Callable[[], Trace], *, keep: bool,
           say: Callable[[str], None] = lambda _msg: None) -> Trace:
    """``run()`` (a real run working in the temporary folder ``work``), then remove ``work`` if the run
    ended well and not ``keep``; otherwise keep it.  ``say`` is told which.  A run that raises (failed,
    interrupted) keeps its folder and says where it is.  ``work`` None: just ``run()``."""
    if work is None:
        return run()
    try:
        trace = run()
    except BaseException:
        if work.exists():
            say(f"work folder kept for inspection: {work} (logs in {work / 'logs'})")
        raise
    said = finish(work, well=ended_well(trace), keep=keep, existed=False)
    if said:
        say(said)
    return trace


__all__ = ["run_in", "temporary_folder"]
