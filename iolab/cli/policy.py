"""``iolab policy``: write a policy of one's own from a template, and check it on small scenarios."""

from __future__ import annotations

import re
from pathlib import Path

import click

from iolab.cli.format import dumps
from iolab.policy_check import check_policy
from iolab.policy_templates import KINDS, template

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@click.group()
def policy() -> None:
    """Policies of your own: `new` writes a template and its tests, `check` runs one (docs/policies.md)."""


def _class_name(name: str) -> str:
    parts = re.split(r"[_\-\s]+", name)
    return "".join(p[:1].upper() + p[1:] for p in parts if p)


@policy.command()
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("name")
@click.option("-o", "--out", "folder", type=click.Path(file_okay=False), default=".", show_default=True,
              help="the folder to write NAME.py and test_NAME.py into")
@click.option("--json", "as_json", is_flag=True, help="print what was written as JSON")
def new(kind: str, name: str, folder: str, as_json: bool) -> None:
    """Write NAME.py (a commented, working KIND policy) and test_NAME.py (its tests) into a folder.

    KIND: batch (scheduler), io (an I/O node's order), sharing (an I/O node's bandwidth sharing),
    placement (HPS disks), allocation (compute nodes), controller (the load controller's suspensions)."""
    module = name[:-3] if name.endswith(".py") else name
    if not _NAME.match(module):
        raise click.BadParameter(f"{name!r}: a Python module name (letters, digits, _)", param_hint="NAME")
    cls = _class_name(module)
    out = Path(folder)
    targets = [out / f"{module}.py", out / f"test_{module}.py"]
    clash = [str(t) for t in targets if t.exists()]
    if clash:
        raise click.UsageError(f"{clash[0]} exists; choose another NAME or folder (nothing was written)")
    out.mkdir(parents=True, exist_ok=True)
    source, test = template(kind, cls, module)
    targets[0].write_text(source)
    targets[1].write_text(test)
    if as_json:
        click.echo(dumps({"kind": kind, "policy": str(targets[0]), "class": cls, "tests": str(targets[1])}))
        return
    click.echo(f"wrote {targets[0]} (class {cls}) and {targets[1]}")
    click.echo(f"next: iolab policy check {targets[0]}:{cls}")


@policy.command()
@click.argument("target", metavar="FILE[:CLASS]")
@click.option("--kind", type=click.Choice(KINDS), help="the decision point (default: from the class)")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
def check(target: str, kind: str | None, as_json: bool) -> None:
    """Run the policy in FILE (its CLASS, or the one policy class it defines) on its kind's small scenarios in
    strict mode, beside the built-in of that kind.  Exit 0 if no rule was broken, 1 if one was, 2 if the
    policy does not load."""
    path, _, cls = target.partition(":") if not target.endswith(".py") else (target, "", "")
    if target.count(":") > 1 or (cls and not _NAME.match(cls)):
        raise click.BadParameter(f"{target!r}: FILE or FILE:CLASS", param_hint="FILE[:CLASS]")
    report = check_policy(path, cls or None, kind)
    if as_json:
        click.echo(dumps({"policy": report.label, "kind": report.kind, "ok": report.ok,
                          "scenarios": [{"name": r.name, "what": r.what, "figures": r.figures,
                                         "reference": r.reference, "broke": r.broke, "rule": r.rule}
                                        for r in report.results]}))
    else:
        click.echo(report.text())
    if not report.ok:
        raise SystemExit(1)
