"""The clocked part both emulators share (:func:`run_clock`), the partial traces a run writes as
it goes (:class:`PartialTraces`), and the partial trace an interrupted run leaves (:func:`save_partial`)."""

from __future__ import annotations

import time

from iolab.signals import sigterm_as_interrupt
from iolab.trace import write_trace

from iolab.emulator.progress import StatusLine


PARTIAL_EVERY = 5.0  # wall seconds between the partial traces written while a run goes


class PartialTraces:
    """Writes the trace so far (``complete = False``) to ``out`` at most every :data:`PARTIAL_EVERY`
    wall seconds, so that a driver killed at any moment (``kill -9``) leaves the run up to then; the
    complete trace replaces it at the end.  A failed write is said once and never stops the run."""

    def __init__(self, out, progress: StatusLine):
        self.out, self.progress = out, progress
        self.at = 0.0
        self.failed = False

    def write(self, make_trace, force: bool = False) -> None:
        """``make_trace()`` to the output if :data:`PARTIAL_EVERY` seconds have passed (or ``force``)."""
        if self.out is None or (not force and time.time() - self.at < PARTIAL_EVERY):
            return
        self.at = time.time()
        try:
            write_trace(make_trace(), self.out)
        except Exception as exc:  # noqa: BLE001 - a failed snapshot is said, never fatal to the run
            if not self.failed:
                self.progress.note(f"could not write the partial trace to {self.out}: {exc}")
            self.failed = True


def save_partial(make_trace, out, work_dir, progress: StatusLine) -> None:
    """After an interrupt: write what ``make_trace()`` gives to ``out`` (else
    ``WORK/partial.h5``) and say where; a failure is reported, never raised, so the
    interrupt itself still propagates."""
    try:
        trace = make_trace()
        path = out if out is not None else work_dir / "partial.h5"
        write_trace(trace, path)
        progress.note(f"partial trace written to {path}")
    except Exception as exc:
        progress.note(f"could not write the partial trace: {exc}")


def run_clock(loop, interrupted, make_trace, out):
    """Run ``loop()``; on Ctrl-C or SIGTERM (:mod:`iolab.signals`) call ``interrupted(out)``
    (kill, partial trace) and re-raise; otherwise build the complete trace
    (``make_trace(complete=True)``), write it to ``out`` if given and return it."""
    try:
        with sigterm_as_interrupt():
            loop()
    except KeyboardInterrupt:
        interrupted(out)
        raise
    trace = make_trace(complete=True)
    if out is not None:
        write_trace(trace, out)
    return trace
