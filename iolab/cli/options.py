"""Options several commands share."""

from __future__ import annotations

import math
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


class Finite(click.FloatRange):
    """A float option that is a finite number (``nan``, ``inf`` refused: ``float()`` takes both, and every
    comparison with NaN is false, so a range check alone lets it through), within the range given."""

    name = "finite number"

    def convert(self, value, param, ctx):
        v = click.FLOAT.convert(value, param, ctx)  # float(), before the range check
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(v, param, ctx)
