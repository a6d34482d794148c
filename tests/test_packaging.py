"""Packaging: one import package (``iolab``), every subpackage listed, the version written once,
and — when the suite runs against an installed wheel (``make test-wheel``) — that it really
tests the wheel and that only ``iolab`` landed in site-packages."""

from __future__ import annotations

import os
import re
import sys
from importlib import metadata
from importlib.resources import files
from pathlib import Path

import pytest

from shared_data import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

WHEEL = os.environ.get("IOLAB_TEST_WHEEL") == "1"


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_every_python_folder_is_a_listed_package():
    tool = pyproject()["tool"]["setuptools"]
    listed = set(tool["packages"])
    found = set()
    for name, root in tool["package-dir"].items():
        for init in (REPO / root).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / root).parts
            found.add(".".join((name, *rel)))
    data_only = {name for name in listed - found  # folders of package data (no Python), listed to ship them
                 if any(name == k or name.startswith(k + ".") for k in tool["package-dir"])
                 and _folder(tool["package-dir"], name).is_dir()}
    assert found | data_only == listed, f"not listed: {sorted(found - listed)}; listed but absent: {sorted(listed - found - data_only)}"


def _folder(package_dir: dict, name: str) -> Path:
    """The folder of package ``name`` under the package-dir mapping."""
    root = max((k for k in package_dir if name == k or name.startswith(k + ".")), key=len)
    rest = name[len(root):].lstrip(".").split(".") if name != root else []
    return REPO.joinpath(package_dir[root], *[r for r in rest if r])


def test_the_version_is_written_once():
    assert "version" in pyproject()["project"]["dynamic"]
    pattern = re.compile(r"""^\s*(__version__|version)\s*=\s*["']\d""", re.M)
    hits = [str(p.relative_to(REPO)) for p in REPO.rglob("*")
            if p.suffix in {".py", ".toml", ".cfg"}
            and not any(part.startswith((".venv", "build", "dist", ".git")) for part in p.relative_to(REPO).parts)
            and pattern.search(p.read_text(errors="replace"))]
    assert hits == ["iolab/__init__.py"]


def test_installed_metadata_agrees_with_the_package():
    import iolab

    assert metadata.version("iolab") == iolab.__version__


def test_examples_and_templates_are_package_data():
    from iolab.cli.examples import shipped

    assert {"table1-emulation.yaml", "kth-sp2-easy.yaml", "campaigns/quick.yaml", "validation/multi-node-io.yaml",
            "validation/batch-sas-disks.yaml"} <= set(shipped("iolab.examples"))
    assert {"emulate.sbatch", "sweep.sbatch", "validate.sbatch"} <= set(shipped("iolab.templates"))
    assert files("iolab.examples").joinpath("table1-emulation.yaml").read_text().startswith(("#", "kind", "name"))


@pytest.mark.skipif(not WHEEL, reason="only when the suite runs against the installed wheel (make test-wheel)")
def test_the_suite_runs_against_the_installed_wheel_not_the_tree():
    import iolab
    import iolab.sim

    for mod in (iolab, iolab.sim):
        path = Path(mod.__file__).resolve()
        assert "site-packages" in path.parts, f"{mod.__name__} imported from {path}, not from the installed wheel"


@pytest.mark.skipif(not WHEEL, reason="only when the suite runs against the installed wheel (make test-wheel)")
def test_only_iolab_lands_in_site_packages():
    dist = metadata.distribution("iolab")
    tops = set()
    for f in dist.files:
        parts = Path(f).parts
        if parts[0] == "..":  # console scripts in bin/
            continue
        tops.add(parts[0])
    extra = {t for t in tops if t != "iolab" and not re.fullmatch(r"iolab-[^/]+\.dist-info", t)}
    assert not extra, f"the wheel installs more than iolab: {sorted(extra)}"
    assert any(Path(f).parts[:2] == ("iolab", "sim") for f in dist.files)


@pytest.mark.mpi
@pytest.mark.ray
def test_a_real_run_s_ranks_import_the_driver_s_iolab(tmp_path):
    """The ranks of a real run start with the driver's interpreter and environment, no ``PYTHONPATH``
    added: they import the iolab the driver imported (under ``make test-wheel``, the wheel's in
    its venv's ``site-packages``, not a checkout's)."""
    import json
    import subprocess

    import iolab

    spec = {"name": "where", "platform": {"io_nodes": 1, "nodes_per_io_node": 2, "bandwidth": 1.0},
            "apps": [{"id": "A", "nodes": 1, "iterations": 2, "compute": 0.2, "io_volume": 0.2}],
            "emulator": {"ranks_per_app": 1, "unit_bytes": 1 << 20, "grid": 16, "lease": 20}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-m", "iolab", "emulate", "spec.json", "--out", "run.h5", "--work-dir",
                        "work", "--keep-work", "--quiet"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads((tmp_path / "work" / "apps" / "A.summary.json").read_text())
    assert summary["ok"] and summary["ranks"] == 1
    assert Path(summary["package"]) == Path(iolab.__file__).parent
    if WHEEL:
        site = Path(sys.prefix).resolve()
        assert Path(summary["package"]).resolve().is_relative_to(site) and "site-packages" in Path(
            summary["package"]).parts, summary["package"]
