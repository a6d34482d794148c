"""Options several commands share, and the one place a command's overrides of its spec are resolved and the
spec parsed."""

from __future__ import annotations

import math
import os
from typing import Any

import click

from iolab.specs.io_policies import IO_POLICY_NAMES, normalise_policy
from iolab.specs.load import apply_overrides, input_files, parse_spec, read_document, spec_dir

# the overrides only an I/O experiment takes (a batch spec names its scheduler), by their options
IO_OVERRIDES = {"policy": "--policy", "sim.mode": "--mode", "sim.dt": "--dt"}


def read_overridden(spec_path: str, overrides: dict[str, Any], source: str,
                    limits: dict[str, int] | None = None) -> tuple[str, dict]:
    """A command's spec document with its options' ``overrides`` (dotted keys; None: not given) applied, and
    its level (``io`` or ``batch``), read once: a batch spec given an I/O experiment's option is refused
    (exit 2, naming the options) before anything else."""
    document = read_document(spec_path, limits)
    level = document.get("kind", "io")
    if level == "batch":
        given = [opt for key, opt in IO_OVERRIDES.items() if overrides.get(key) is not None]
        if given:
            options = ", ".join(given[:-1]) + (" and " if len(given) > 1 else "") + given[-1]
            verb = "apply" if len(given) > 1 else "applies"
            raise click.UsageError(f"{options} {verb} to I/O experiments; a batch spec names its scheduler")
    return level, apply_overrides(document, overrides, source)


def parse_overridden(document: dict, spec_path: str, source: str) -> tuple[Any, list[str]]:
    """The spec of a document :func:`read_overridden` returned, its relative paths from the spec's folder (as
    :func:`iolab.specs.load.load_spec` resolves them), and the files a run of it reads, which no output may be
    (:func:`iolab.specs.load.input_files`)."""
    spec = parse_spec(document, source, base_dir=spec_dir(spec_path))
    return spec, input_files(spec, spec_path)


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


class IOPolicyParam(click.ParamType):
    """An I/O policy on the command line: a built-in's name (any case, ``_`` or ``-``), a built-in with its
    options as an inline mapping (``'{kind: tbf, default_rate: 0.25}'``, YAML flow style; the spec checks
    it), or a policy of the user's, ``file.py:Class`` (the file relative to the working directory) or
    ``pkg.mod:Class``."""

    name = "POLICY"

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        key = normalise_policy(value)
        if key in IO_POLICY_NAMES:
            return key
        if value.lstrip().startswith("{"):
            import yaml  # lazy: only an inline mapping needs YAML (a command's start does not pay for it)

            try:
                mapping = yaml.safe_load(value)
            except yaml.YAMLError as exc:
                self.fail(f"{value!r} is not a mapping ({str(exc).splitlines()[0]})", param, ctx)
            if not isinstance(mapping, dict):
                self.fail(f"{value!r} is not a mapping", param, ctx)
            return mapping
        if ":" in value:
            where, _, cls = value.rpartition(":")
            if where.endswith(".py") or "/" in where:
                path = os.path.abspath(os.path.expanduser(where))
                if not os.path.isfile(path):
                    self.fail(f"{where!r}: no such file", param, ctx)
                return f"{path}:{cls}"
            return value
        self.fail(f"{value!r} is not one of {', '.join(IO_POLICY_NAMES)}, nor a built-in with options "
                  "('{kind: tbf, rules: [...], default_rate: R}'), nor a policy of your own (file.py:Class or "
                  "pkg.mod:Class)", param, ctx)

    def get_metavar(self, param, ctx=None):
        return "[NAME|'{kind: tbf, ...}'|file.py:Class]"


IO_POLICY = IOPolicyParam()


class Finite(click.FloatRange):
    """A float option that is a finite number (``nan``, ``inf`` refused: ``float()`` takes both, and every
    comparison with NaN is false, so a range check alone lets it through), within the range given."""

    name = "finite number"

    def convert(self, value, param, ctx):
        v = click.FLOAT.convert(value, param, ctx)  # float(), before the range check
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(v, param, ctx)
