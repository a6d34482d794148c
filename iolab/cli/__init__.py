"""The ``iolab`` command line: the group only; one module per command.

Exit codes, the same for every command (docs/cli.md): 0 ok; 1 the run failed
(a run-time error, :class:`iolab.errors.RunError`, a strict
:class:`iolab.invariants.InvariantViolation`, some campaign runs failed);
2 bad usage or input (every other :class:`iolab.errors.IolabError`, click's
usage errors); 130 interrupted (Ctrl-C, SIGTERM where a command traps it).
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys

# numpy's OpenBLAS starts a thread per core at import, and idle ones spin: no command does linear algebra
# large enough to gain from them, and an MPI rank a real run launches inherits this (one thread a rank).
# A value the user set is kept.  Before any import of numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click  # noqa: E402

from iolab import __version__  # noqa: E402
from iolab import signals  # noqa: E402
from iolab.invariants import InvariantViolation, PolicyRaised  # noqa: E402
from iolab.cli import network  # noqa: E402

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class LazyGroup(click.Group):
    """Imports a command's module only when it runs (keeps ``iolab --help`` fast)."""

    def __init__(self, *args, lazy: dict[str, str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = lazy or {}

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx, name):
        if name in self.lazy:
            module, attr = self.lazy[name].rsplit(":", 1)
            command = getattr(importlib.import_module(module), attr)
        else:
            command = super().get_command(ctx, name)
        if name not in COLLECTOR_KEPT_PAUSED:
            resume_collector()  # paused by main() for the command's imports: on again for its work
        return command

    def invoke(self, ctx):
        """Run the command; Ctrl-C exits 130 and a strict invariant violation 1, for every command
        (click alone would print "Aborted!" and exit 1 on Ctrl-C)."""
        try:
            with signals.ctrl_c_noted():
                result = super().invoke(ctx)
                if signals.ctrl_c_came():  # Python dropped its KeyboardInterrupt (iolab/signals.py): the work went on
                    click.echo("\ninterrupted (Ctrl-C came while Python could not raise it; the command "
                               "finished first)", err=True)
                    ctx.exit(EXIT_INTERRUPTED)
                return result
        except KeyboardInterrupt:
            click.echo("\ninterrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except PolicyRaised as exc:
            click.echo(f"error: {exc}", err=True)
            _partial_note(exc)
            ctx.exit(EXIT_FAILED)
        except InvariantViolation as exc:
            click.echo(f"error: the run broke a rule: {exc}", err=True)
            _partial_note(exc)
            ctx.exit(EXIT_FAILED)


def _partial_note(exc: BaseException) -> None:
    """The partial trace a stopped run wrote, if it wrote one (``exc.partial``: its path)."""
    path = getattr(exc, "partial", None)
    if path:
        click.echo(f"the run's trace up to that point (partial) was written to {path}", err=True)


# The commands that keep the cyclic garbage collector paused by main() through their own start-up (reading the
# spec, importing the runtime, reading the workload) and turn it on themselves when their work starts, after
# freezing what the start-up made (iolab/cli/simulate.py, _collector_paused_on_startup).
COLLECTOR_KEPT_PAUSED = frozenset({"simulate"})
_paused_by_main = False


def resume_collector() -> None:
    """Turn the cyclic collector on again if :func:`main` paused it for the start-up; else leave it as it is
    (a test's CliRunner, a caller that paused it on purpose)."""
    global _paused_by_main
    if _paused_by_main:
        _paused_by_main = False
        gc.enable()


COMMANDS = {
    "schema": "iolab.cli.schema:schema",
    "simulate": "iolab.cli.simulate:simulate",
    "report": "iolab.cli.report:report",
    "workload": "iolab.cli.workload:workload",
    "study": "iolab.cli.study:study",
    "sweep": "iolab.cli.sweep:sweep",
    "emulate": "iolab.cli.emulate:emulate",
    "validate": "iolab.cli.validate:validate",
    "examples": "iolab.cli.examples:examples",
    "export": "iolab.cli.export:export",
    "controller": "iolab.cli.controller:controller",
    "storage": "iolab.cli.storage:storage",
    "policy": "iolab.cli.policy:policy",
    "batsim": "iolab.cli.batsim:batsim",
    "reproduce": "iolab.cli.reproduce:reproduce",
    "slurm": "iolab.cli.slurm:slurm",
}


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="iolab")
def cli() -> None:
    """iolab: I/O- and storage-aware scheduling, emulated for real and simulated at scale."""


def main() -> None:
    # The start-up's objects (modules, classes, pydantic's schemas) live as long as the process: the cyclic
    # collector's passes over them while the command's modules are imported find next to nothing (500 objects
    # on `iolab simulate` of KTH-SP2) and cost ~6 ms.  Paused until the command starts its work
    # (LazyGroup.get_command, or the command itself: COLLECTOR_KEPT_PAUSED).
    global _paused_by_main
    if gc.isenabled():
        gc.disable()
        _paused_by_main = True
    atexit.register(_no_collection_at_exit)
    try:
        try:  # a local run: re-executed in a namespace of its own (cli/network.py), after probing for one
            network.private_network(sys.argv[1:])
        except KeyboardInterrupt:  # Ctrl-C during the probe: as during the command (LazyGroup.invoke)
            click.echo("\ninterrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        cli(prog_name="iolab")  # exit codes: LazyGroup.invoke and iolab.errors
    finally:  # a command that stopped before its work (bad input): the collector as the caller had it
        resume_collector()


def _no_collection_at_exit() -> None:
    """At the process's exit (an ``atexit`` handler, registered first so it runs last), leave the objects
    still allocated to the operating system rather than to the cyclic garbage collector's final passes
    (``gc.freeze``): those would free a run's reference cycles object by object, a tenth of ``iolab
    simulate`` on KTH-SP2 (docs/performance.md).  The exit handlers registered after it (Ray's,
    MPI's, weakref finalizers') still run before it.  What it gives up: an object that is garbage in a
    reference cycle at exit is not finalized; iolab writes its files in ``with`` blocks."""
    gc.freeze()
