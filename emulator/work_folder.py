"""The work folder of one ``iolab emulate``: kept while the run goes, removed when it ended well.

A real run writes its checkpoints (the apps' HDF5 files: ~100 MB for the quick start), logs and
host files into a work folder (``--work-dir``, default ``OUT``'s stem + ``.work`` beside the
trace).  When the run ended well (a complete trace, every app or job ``ok``) the folder holds
nothing the trace does not, and ``iolab emulate`` removes it; it is kept, and its path said, when
the run failed or was interrupted (its logs say why), with ``--keep-work``, and when ``--work-dir``
named a folder that existed before the run (it may hold more than this run's files).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from iolab.emulator.settings import default_work_dir


def work_folder(spec, out: str | Path | None, work_dir: str | Path | None) -> Path:
    """The folder a run of ``spec`` works in: the rule of :func:`iolab.emulator.io.run.run_emulation`
    and :func:`iolab.emulator.batch.run.run_batch_emulation` (``--work-dir``, the spec's
    ``emulator.work_dir``, else :func:`default_work_dir`)."""
    given = work_dir if work_dir is not None else spec.emulator.work_dir
    return (Path(given) if given else default_work_dir(spec, out)).resolve()


def ended_well(trace) -> bool:
    """A complete trace in which every app (job) ended ``ok``."""
    complete = trace.attrs.get("complete", True)
    if complete is False or str(complete) == "False":
        return False
    return all(str(s) == "ok" for s in trace.jobs["status"])


def finish(work: Path, *, well: bool, keep: bool, existed: bool) -> str:
    """Remove ``work`` after a run that ended well (unless ``keep`` or it ``existed`` before the
    run); returns the sentence that says what happened to it."""
    if not work.exists():
        return ""
    if well and not keep and not existed:
        shutil.rmtree(work, ignore_errors=True)
        if not work.exists():
            return f"work folder {work} removed (the run ended well; --keep-work keeps it)"
        return f"work folder {work} could not be removed entirely"
    why = ("kept (--keep-work)" if keep else "kept (it existed before the run)" if existed and well
           else "kept for inspection (the run did not end well)")
    return f"work folder {why}: {work} (logs in {work / 'logs'})"


__all__ = ["ended_well", "finish", "work_folder"]
