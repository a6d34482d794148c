"""The ``iolab`` command line: the group only; one module per command."""

from __future__ import annotations

import importlib

import click

from .. import __version__


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
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)


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
    "controller": "iolab.cli.controller:controller",
}


def register(name: str, target: str) -> None:
    """Add a command ``name`` implemented at ``module:attr``."""
    COMMANDS[name] = target


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="iolab")
def cli() -> None:
    """iolab: I/O- and storage-aware scheduling, emulated for real and simulated at scale."""


def main() -> None:
    cli(prog_name="iolab")
