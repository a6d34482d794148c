"""``iolab storage probe DIR``: measure a directory's interference law (docs/storage.md)."""

from __future__ import annotations

import math
import os
import re

import click

from iolab.atomic import atomic_write_text, check_output
from iolab.errors import IolabError, RunError
from iolab.metrics.interference_fit import fit_interference
from iolab.middleware.storage_probe import ProcessWriters, WriterFailed, direct_supported, probe, probe_plan
from iolab.specs.interference import InterferenceSpec
from iolab.units import parse_size
from iolab.cli.format import dumps, table


@click.group()
def storage() -> None:
    """Storage tiers: measure a directory's behaviour under concurrent writers."""


def _writers(text: str) -> int:
    m = re.fullmatch(r"\s*(?:1\s*\.\.\s*)?(\d+)\s*", text)
    if not m or not 2 <= int(m.group(1)) <= 64:
        raise IolabError(f"--writers {text!r}: give K or 1..K with K from 2 to 64 (a law compares k writers "
                         "with one)")
    return int(m.group(1))


MAX_SHARE = 1.25  # a share above this: more writers got more, so the device was not what limited them
MAX_RMS = 0.15  # a parametric fit further than this from the shares describes nothing


def fit_refusal(fit: dict) -> str:
    """Why the measured shares give no law a spec should take ("" if they give one)."""
    over = {k: s for k, s in fit["table"].items() if not (math.isfinite(s) and 0 < s <= MAX_SHARE)}
    if over:
        k, s = next(iter(over.items()))
        return (f"the aggregate with {k} writers is {s:.2f} times the one-writer rate: more writers got more, so "
                "the device did not limit them (a cache absorbed the writes, or the sizes are too small to last)")
    rms = fit["parametric"]["rms"]
    if not (math.isfinite(rms) and rms <= MAX_RMS):
        return f"no law of the form 1 / (1 + gamma (k - knee)) comes near the shares (rms {rms:.2f})"
    try:
        InterferenceSpec.model_validate({"table": fit["table"]})
    except ValueError as exc:
        return f"the table is not a law a spec takes ({exc})"
    return ""


def _size(text: str, name: str) -> int:
    try:
        v = parse_size(text)
    except ValueError as exc:
        raise IolabError(f"{name} {text!r}: {exc}") from None
    if not (v >= 4096 and math.isfinite(v)):
        raise IolabError(f"{name} {text!r}: at least 4 KiB")
    return int(v)


def fragment(fit: dict, directory: str, direct: bool, size: int, note: str = "") -> str:
    """The spec fragment (YAML) of a fit: the table as measured, the parametric form beside it; ``note``: why
    the probe did not measure the device, said in the fragment too."""
    p = fit["parametric"]
    table_text = ", ".join(f"{k}: {v:.4f}" for k, v in fit["table"].items())
    return (f"# iolab storage probe {directory} (fsync'd writers, {'O_DIRECT' if direct else 'buffered'}, "
            f"{size} B each): shares of the one-writer rate\n"
            + (f"# not measuring the device: {note}\n" if note else "") +
            f"interference: {{table: {{{table_text}}}}}\n"
            f"# the parametric fit (rms {p['rms']:.4f}): interference: {{gamma: {p['gamma']:.4g}, knee: {p['knee']}}}\n")


@storage.command("probe")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--writers", "writers_text", default="1..4", show_default=True,
              help="K or 1..K: measure k = 1..K concurrent writers")
@click.option("--size", "size_text", default="256MiB", show_default=True, help="bytes each writer writes")
@click.option("--unit", "unit_text", default="1MiB", show_default=True,
              help="the small fsync'd unit whose response time is measured under each load")
@click.option("--direct", is_flag=True, help="open the writers' files with O_DIRECT (where the file system allows)")
@click.option("-o", "--out", type=click.Path(dir_okay=False), help="write the spec fragment (YAML) here")
@click.option("--json", "as_json", is_flag=True, help="print the measurements and the fit as JSON")
def probe_cmd(directory, writers_text, size_text, unit_text, direct, out, as_json) -> None:
    """Run k concurrent fsync'd writer processes in DIRECTORY for k = 1..K; print the aggregate
    throughput and the response time of a small fsync'd unit per k, fit the interference law
    (a table and the parametric form) and print (or write) the spec fragment."""
    if out:
        check_output(out, option="-o")
    k_max = _writers(writers_text)
    size, unit = _size(size_text, "--size"), _size(unit_text, "--unit")
    if not os.path.isdir(directory):
        raise IolabError(f"{directory}: not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise IolabError(f"{directory}: not writable")
    used_direct = bool(direct) and direct_supported(directory)
    if direct and not used_direct:
        click.echo(f"note: {directory} refuses O_DIRECT (so do some file systems, and tmpfs before Linux 6.6); buffered writes, fsync'd", err=True)
    plan = probe_plan(directory, size, unit, k_max, used_direct)
    if plan.needed > plan.free:
        raise IolabError(f"--size {size_text}: {k_max} writers of {size:,} bytes and the unit need {plan.needed:,} "
                         f"bytes at once; {directory} has {plan.free:,} free: a smaller --size or fewer --writers")
    if not plan.device:
        click.echo(f"note: not measuring the device: {plan.why}", err=True)
    try:
        results = probe(ProcessWriters(directory, size, used_direct, unit), k_max)
    except WriterFailed as exc:
        raise RunError(f"probe stopped: {exc}; its files are removed") from None
    except OSError as exc:
        raise RunError(f"probe of {directory} failed: {exc}") from None
    fit = fit_interference({r.k: r.aggregate for r in results})
    refusal = fit_refusal(fit)
    text = "" if refusal else fragment(fit, directory, used_direct, size, plan.why)
    if out and text:
        atomic_write_text(out, text)
    if as_json:
        click.echo(dumps({"directory": directory, "direct": used_direct, "size": size, "unit": unit,
                          "filesystem": plan.filesystem, "measures_device": plan.device and not refusal,
                          "not_measuring": "; ".join(x for x in (plan.why, refusal) if x),
                          "results": [{"k": r.k, "aggregate": r.aggregate, "share": fit["shares"][r.k],
                                       "response": r.response, "seconds": r.seconds} for r in results],
                          "fit": None if refusal else fit}))
    else:
        click.echo(table(["k", "aggregate MB/s", "share", "unit response s", "seconds"],
                         [[r.k, r.aggregate / 1e6, fit["shares"][r.k], r.response, r.seconds] for r in results]))
        click.echo(text, nl=False)
    if refusal:
        raise RunError(f"no law fitted, not measuring the device: {refusal}"
                       + (f"; nothing written to {out}" if out else ""))
