"""``iolab examples``: list the sample specs and sbatch templates shipped in the package, or copy them.

After ``pip install iolab`` (no source tree) they are package data:
``iolab.examples`` (the repo's ``examples/``) and ``iolab.templates`` (the repo's
``slurm/templates/``).
"""

from __future__ import annotations

import json
import shutil
from importlib.resources import as_file, files
from pathlib import Path

import click

from iolab.atomic import check_output


def shipped(package: str) -> list[str]:
    """Relative names of the data files of ``package`` (sorted): every file but the package's own modules
    (``__init__.py``); the example policies (``policies/*.py``) are data too."""
    root = files(package)
    out: list[str] = []

    def walk(node, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir():
                if child.name != "__pycache__":
                    walk(child, f"{prefix}{child.name}/")
            elif child.name != "__init__.py" and not child.name.endswith(".pyc"):
                out.append(prefix + child.name)

    walk(root, "")
    return sorted(out)


def copy_shipped(package: str, dest: Path) -> list[Path]:
    """Copy the data files of ``package`` into ``dest`` (subfolders kept); refuse to overwrite."""
    names = shipped(package)
    targets = [dest / n for n in names]
    clash = [str(t) for t in targets if t.exists()]
    if clash:
        raise click.UsageError(f"would overwrite {clash[0]} (and {len(clash) - 1} more); choose an empty directory")
    for name, target in zip(names, targets):
        target.parent.mkdir(parents=True, exist_ok=True)
        with as_file(files(package).joinpath(*name.split("/"))) as src:
            shutil.copyfile(src, target)
    return targets


@click.command()
@click.option("--copy", "dest", type=click.Path(file_okay=False), help="copy them into this directory")
@click.option("--templates", is_flag=True, help="the sbatch templates (slurm/templates) instead of the specs")
@click.option("--json", "as_json", is_flag=True, help="print the list as a JSON array")
def examples(dest: str | None, templates: bool, as_json: bool) -> None:
    """List (or copy) the sample specs shipped with iolab, or its sbatch templates."""
    package = "iolab.templates" if templates else "iolab.examples"
    if dest is not None:
        check_output(dest, option="--copy", folder=True)
    names = shipped(package) if dest is None else [str(t) for t in copy_shipped(package, Path(dest))]
    if as_json:
        click.echo(json.dumps(names, indent=2))
        return
    for name in names:
        click.echo(name)
