"""Options several commands share."""

from __future__ import annotations

import os

import click


def _set_strict(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        # every run of this command checks, in this process and in those it starts (Ray
        # workers, MPI apps, campaign tasks): they all read IOLAB_STRICT (iolab.invariants)
        os.environ["IOLAB_STRICT"] = "1"
    return value


strict_option = click.option(
    "--strict", is_flag=True, expose_value=False, is_eager=True, callback=_set_strict,
    help="check every decision and state change against the model's invariants (docs/architecture.md); "
         "the first violation stops the run with the rule, the time and the job, exit 1")
