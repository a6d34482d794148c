"""The clocked part both emulators share (:func:`run_clock`), and the partial trace an
interrupted run leaves (:func:`save_partial`)."""

from __future__ import annotations

from iolab.signals import sigterm_as_interrupt
from iolab.trace import write_trace

from iolab.emulator.progress import StatusLine


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
