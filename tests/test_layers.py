"""The package's layers, checked by walking every module's imports with ``ast``.

Layers, bottom to top (the table ``LAYERS`` below is the reference):

* bottom: ``iolab.specs``, ``iolab.units``, ``iolab.calibration``, ``iolab.trace``, ``iolab.metrics``,
  ``iolab.workloads`` (the job readers, generators and lackner2019's job steps: they describe jobs, not a
  clock), ``iolab.tiers``, ``iolab.atomic``, ``iolab.forest`` (the controller's model file and its prediction), ``iolab.errors``, ``iolab.invariants``, ``iolab.signals``, ``iolab.mpich_segments``, ``iolab.names``, ``iolab.shared_data``, the package's
  ``__init__`` and the data packages.  They import only one another.
* policies: ``iolab.middleware.policies``, pure decisions (the plan of an I/O experiment
  included); imports only the bottom.  ``iolab.policy``, the public policy API a user's policy file
  imports, is at this level: it names the policies layer's classes and imports nothing else.
* runtimes: ``iolab.apps`` (the MPI application) imports only the bottom: it talks to whoever
  grants its I/O through the coordinator interface it defines (``apps/coordination.py``) and
  loads the implementation by name; ``iolab.sim`` imports the bottom and the policies;
  ``iolab.middleware`` (the Ray actors and the clients that implement the apps' coordinator)
  the bottom, the policies and the apps' interface; ``iolab.emulator`` (the orchestrator of
  real runs) every runtime but the simulator: a real run never depends on the simulator; ``iolab.gym``
  (the Gymnasium environment on the simulator, and the policy that runs an agent in any run) the bottom, the
  policies and the simulator.
* front: ``iolab.cli``, ``iolab.studies``, ``iolab.campaign``, ``iolab.plots``, ``iolab.export``, ``iolab.runners``
  (the table of runners), ``iolab.validation`` (both runtimes on one spec, and their comparison),
  ``iolab.policy_check`` and ``iolab.policy_templates`` (``iolab policy check`` and ``new``), ``iolab.batsim``
  (Batsim's protocol: the socket and a run decided by an external scheduler) and ``python -m iolab`` import
  anything.

Rules: an import goes down or sideways only as the table allows; no cycle between two units
(counting function-local imports too, so a lazy import cannot hide one); no cycle between the
modules of the package at module level; a function-local import only where it keeps a heavy
dependency (``HEAVY``, a light one a command's start should not pay for, ``DEFERRED``, one of iolab's own
modules a command's start should not pay for, ``DEFERRED_MODULES``, or a module that loads one when imported) off the importing module's load, and then with a ``# lazy: <why>``
comment on the import line.
"""

from __future__ import annotations

import ast
import io
import sys
import textwrap
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from shared_data import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

HEAVY = frozenset({"ray", "mpi4py", "h5py", "matplotlib", "scipy", "sklearn", "statsmodels", "pandas",
                   "darshan"})  # darshan: PyDarshan, an optional extra
# Light, but left off the start of a command that does not use it (with a `# lazy:` comment like a heavy one):
# yaml is 8 ms of `iolab simulate SPEC.json`'s start, which reads no YAML (iolab/specs/load.py)
DEFERRED = frozenset({"yaml"})
# iolab's own modules a command's start should not pay for when its run does not use them (the same rule: a
# function-local import of one carries a `# lazy:` comment).  A spec level's models are built only for a spec of
# that level (iolab/specs/load.py): `iolab simulate BATCH.json` does not build the I/O experiment's; the calibration
# (statistics, the trace reader) is loaded for `--calibration` only; the emulator's network modules (socket,
# subprocess) by a command that runs things here only (iolab/cli/network.py); the batch simulator's load controller
# for a spec that has one; the Feitelson generator and the Theta reader for their workloads; the guards of a user's
# policies (and the controller's handler they import) for a run that has one, the I/O policies for a batch platform
# with I/O nodes; the I/O level's metrics for a run of that level (iolab/metrics/__init__.py).
DEFERRED_MODULES = frozenset({"iolab.specs.io", "iolab.specs.batch", "iolab.calibration",
                              "iolab.emulator.netns", "iolab.emulator.launchers", "iolab.emulator.ray_session",
                              "iolab.sim.batch.load_controller", "iolab.sim.batch.io_node_layer", "iolab.workloads.feitelson", "iolab.workloads.theta",
                              "iolab.workloads.job_columns", "iolab.middleware.policies.guard",
                              "iolab.middleware.policies.io_guard", "iolab.metrics.io"})

BOTTOM = frozenset({
    "iolab", "iolab.specs", "iolab.units", "iolab.calibration", "iolab.trace", "iolab.metrics",
    "iolab.atomic", "iolab.forest", "iolab.errors", "iolab.tiers", "iolab.workloads", "iolab.invariants", "iolab.signals", "iolab.collector", "iolab.mpich_segments", "iolab.names", "iolab.shared_data",
    "iolab.examples", "iolab.templates",
})
POLICIES = "iolab.middleware.policies"
FRONT = frozenset({"iolab.cli", "iolab.studies", "iolab.reproduce", "iolab.campaign", "iolab.plots", "iolab.export", "iolab.runners",
                   "iolab.validation", "iolab.policy_check", "iolab.policy_templates",
                   "iolab.batsim",  # Batsim's protocol: the ZeroMQ transport and a run driven by an external scheduler
                   "iolab.__main__"})

# unit -> the units it may import (besides itself).  The front may import anything.
LAYERS: dict[str, frozenset[str]] = {
    **{unit: BOTTOM for unit in BOTTOM},
    POLICIES: BOTTOM,
    # the public policy API: names from the policies layer, for a user's policy file (and the front)
    "iolab.policy": BOTTOM | {POLICIES},
    "iolab.sim": BOTTOM | {POLICIES},
    "iolab.apps": BOTTOM,
    "iolab.middleware": BOTTOM | {POLICIES, "iolab.apps"},
    "iolab.emulator": BOTTOM | {POLICIES, "iolab.middleware", "iolab.apps"},  # never the simulator
    # learned schedulers: the Gymnasium environment drives the simulator; the agent's policy is a policy
    "iolab.gym": BOTTOM | {POLICIES, "iolab.sim"},
}


# ---------------------------------------------------------------------------------------
# The walker


@dataclass(frozen=True)
class Import:
    source: str          # importing module
    path: Path
    line: int
    text: str            # the statement as written (first line)
    target: str          # a module of the package, or the top-level name of an outside one
    internal: bool
    local: bool          # inside a function (runs when the function runs)
    type_only: bool      # under ``if TYPE_CHECKING:`` (never runs)
    lazy_comment: str | None  # the text after ``# lazy:``, if the statement carries one

    def where(self, root: Path = REPO) -> str:
        try:
            shown = self.path.relative_to(root)
        except ValueError:
            shown = self.path
        return f"{shown}:{self.line}"


@dataclass
class Package:
    modules: dict[str, Path]                    # module name -> file
    packages: set[str]                          # the names that are packages (__init__.py)
    imports: list[Import] = field(default_factory=list)


def discover(roots: dict[str, Path]) -> Package:
    """Every module under the package folders ``roots`` (package name -> folder)."""
    modules: dict[str, Path] = {}
    packages: set[str] = set()
    for name, folder in roots.items():
        if not (folder / "__init__.py").is_file():
            continue
        packages.add(name)
        modules[name] = folder / "__init__.py"
        for py in sorted(folder.glob("*.py")):
            if py.name != "__init__.py":
                modules[f"{name}.{py.stem}"] = py
    pkg = Package(modules, packages)
    for name in sorted(modules):
        pkg.imports += imports_of(name, modules[name], pkg)
    return pkg


def roots_from_pyproject(repo: Path = REPO) -> dict[str, Path]:
    tool = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping: dict[str, str] = tool["package-dir"]
    out: dict[str, Path] = {}
    for package in tool["packages"]:
        parts = package.split(".")
        for i in range(len(parts), 0, -1):
            head = ".".join(parts[:i])
            if head in mapping:
                out[package] = repo / mapping[head] / Path(*parts[i:]) if parts[i:] else repo / mapping[head]
                break
    return out


def _comments(source: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string
    return out


def _lazy_reason(comments: dict[int, str], node: ast.stmt) -> str | None:
    for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
        text = comments.get(line, "")
        # the comment may follow another one: "# noqa: F401  # lazy: why"
        for chunk in text.split("#")[1:]:
            chunk = chunk.strip()
            if chunk.startswith("lazy:"):
                return chunk[len("lazy:"):].strip()
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve(pkg: Package, importer: str, module: str | None, level: int) -> str:
    if not level:
        return module or ""
    base = importer if importer in pkg.packages else importer.rpartition(".")[0]
    parts = base.split(".")
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([module] if module else []))


def _target(pkg: Package, name: str) -> tuple[str, bool]:
    """The module ``name`` names: the longest prefix that is a module of the package, or the
    top-level name of an outside package."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        head = ".".join(parts[:i])
        if head in pkg.modules:
            return head, True
    return parts[0], False


def imports_of(name: str, path: Path, pkg: Package) -> list[Import]:
    source = path.read_text()
    tree = ast.parse(source, str(path))
    comments = _comments(source)
    lines = source.splitlines()
    out: list[Import] = []
    seen: set[tuple[int, str]] = set()

    def record(node: ast.stmt | ast.expr, dotted: str, local: bool, type_only: bool) -> None:
        target, internal = _target(pkg, dotted)
        if (node.lineno, target) in seen:  # ``from x import a, b``: one import of x
            return
        seen.add((node.lineno, target))
        out.append(Import(
            source=name, path=path, line=node.lineno, text=lines[node.lineno - 1].strip(),
            target=target, internal=internal, local=local, type_only=type_only,
            lazy_comment=_lazy_reason(comments, node) if isinstance(node, ast.stmt) else None,
        ))

    def visit(node: ast.AST, local: bool, type_only: bool) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                record(node, alias.name, local, type_only)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(pkg, name, node.module, node.level)
            if base == "__future__":
                return
            for alias in node.names:
                full = f"{base}.{alias.name}"
                # ``from pkg import sub`` imports the submodule when it is one
                record(node, full if full in pkg.modules else base, local, type_only)
        elif isinstance(node, ast.Call) and _dynamic_import(node):
            record(node, node.args[0].value, local, type_only)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, local, True)
            for child in node.orelse:
                visit(child, local, type_only)
            return
        inner = local or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inner, type_only)

    visit(tree, False, False)
    return out


def _dynamic_import(call: ast.Call) -> bool:
    """``importlib.import_module("literal")`` or ``__import__("literal")``."""
    func = call.func
    named = (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in {"import_module", "__import__"})
    return named and bool(call.args) and isinstance(call.args[0], ast.Constant) and isinstance(
        call.args[0].value, str)


def unit_of(module: str) -> str:
    """The unit of the layer table a module belongs to."""
    if module == POLICIES or module.startswith(POLICIES + "."):
        return POLICIES
    return ".".join(module.split(".")[:2])


def parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def heavy_loads(pkg: Package) -> dict[str, frozenset[str]]:
    """Module -> the heavy outside packages that loading it loads (its parents' included)."""
    direct: dict[str, set[str]] = {m: set() for m in pkg.modules}
    deps: dict[str, set[str]] = {m: set(parents(m)) & set(pkg.modules) for m in pkg.modules}
    for imp in pkg.imports:
        if imp.local or imp.type_only:
            continue
        if imp.internal:
            deps[imp.source].add(imp.target)
            deps[imp.source].update(p for p in parents(imp.target) if p in pkg.modules)
            if imp.target in DEFERRED_MODULES:
                direct[imp.source].add(imp.target)
        elif imp.target in HEAVY | DEFERRED:
            direct[imp.source].add(imp.target)
    loads = {m: set(s) for m, s in direct.items()}
    changed = True
    while changed:
        changed = False
        for m in pkg.modules:
            before = len(loads[m])
            for d in deps[m]:
                loads[m] |= loads[d]
            changed |= len(loads[m]) != before
    return {m: frozenset(s) for m, s in loads.items()}


def brings(pkg: Package, loads: dict[str, frozenset[str]], imp: Import) -> frozenset[str]:
    """The heavy packages ``imp`` loads that its module has not loaded already."""
    if imp.internal:
        new = loads[imp.target] | (frozenset({imp.target}) & DEFERRED_MODULES)
    else:
        new = frozenset({imp.target}) & (HEAVY | DEFERRED)
    return new - loads[imp.source]


def lazy_problems(pkg: Package) -> list[str]:
    loads = heavy_loads(pkg)
    out = []
    for imp in pkg.imports:
        if not imp.local:
            continue
        extra = brings(pkg, loads, imp)
        if not extra:
            already = loads[imp.source] & (loads[imp.target] if imp.internal else {imp.target})
            why = (f"already loaded with {imp.source} ({', '.join(sorted(already))})" if already
                   else "a light module")
            out.append(f"{imp.where()}: function-local import of {imp.target}, {why}: move it to "
                       f"the top of the module  [{imp.text}]")
        elif not imp.lazy_comment:
            out.append(f"{imp.where()}: function-local import of {imp.target} (loads "
                       f"{', '.join(sorted(extra))}) without a `# lazy: <why>` comment  [{imp.text}]")
    return out


def unit_edges(pkg: Package) -> dict[tuple[str, str], list[Import]]:
    edges: dict[tuple[str, str], list[Import]] = {}
    for imp in pkg.imports:
        if not imp.internal:
            continue
        a, b = unit_of(imp.source), unit_of(imp.target)
        if a != b:
            edges.setdefault((a, b), []).append(imp)
    return edges


def module_edges(pkg: Package) -> dict[tuple[str, str], list[Import]]:
    edges: dict[tuple[str, str], list[Import]] = {}
    for imp in pkg.imports:
        if imp.internal and not imp.local and not imp.type_only and imp.source != imp.target:
            edges.setdefault((imp.source, imp.target), []).append(imp)
    return edges


def cycles(edges: dict[tuple[str, str], list[Import]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), sorted."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(out)


def describe_cycle(comp: list[str], edges: dict[tuple[str, str], list[Import]]) -> str:
    members = set(comp)
    lines = [" <-> ".join(comp) + ", through:"]
    for (a, b), imps in sorted(edges.items()):
        if a in members and b in members:
            against = "" if allowed(a, b) else "  <-- against the layers"
            for imp in imps:
                lazy = " (function-local)" if imp.local else ""
                lines.append(f"    {a} -> {b}: {imp.where()}{lazy}  [{imp.text}]{against}")
    return "\n".join(lines)


def allowed(a: str, b: str) -> bool:
    """May unit ``a`` import unit ``b``?"""
    return a in FRONT or b in LAYERS.get(a, frozenset())


def layer_problems(pkg: Package) -> list[str]:
    out = []
    for (a, b), imps in sorted(unit_edges(pkg).items()):
        if allowed(a, b):
            continue
        for imp in imps:
            out.append(f"{imp.where()}: {a} may not import {b}  [{imp.text}]")
    return out


# ---------------------------------------------------------------------------------------
# The package's own checks

PACKAGE = discover(roots_from_pyproject())


def _report(problems: list[str], what: str) -> str:
    return f"{len(problems)} {what}:\n" + "\n".join(problems)


def test_every_unit_has_a_layer():
    units = {unit_of(m) for m in PACKAGE.modules}
    assert units - FRONT - set(LAYERS) == set(), "add these to LAYERS in tests/test_layers.py"


def test_no_cycle_between_units():
    edges = unit_edges(PACKAGE)
    found = [describe_cycle(c, edges) for c in cycles(edges)]
    assert not found, _report(found, "cycle(s) between units")


def test_no_module_level_cycle():
    edges = module_edges(PACKAGE)
    found = [describe_cycle(c, edges) for c in cycles(edges)]
    assert not found, _report(found, "module-level import cycle(s)")


def test_layers_are_respected():
    problems = layer_problems(PACKAGE)
    assert not problems, _report(problems, "import(s) against the layers")


def test_function_local_imports_are_lazy_and_heavy():
    problems = lazy_problems(PACKAGE)
    assert not problems, _report(problems, "function-local import(s) to fix")


# ---------------------------------------------------------------------------------------
# The walker on small packages made for the purpose (so the checks above can fail)


def make_package(tmp_path: Path, files: dict[str, str]) -> Package:
    root = tmp_path / "iolab"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    folders = {p.parent for p in root.rglob("__init__.py")}
    return discover({".".join(("iolab", *f.relative_to(root).parts)): f for f in folders})


def test_walker_finds_a_cycle_hidden_in_a_function(tmp_path):
    pkg = make_package(tmp_path, {
        "__init__.py": "",
        "sim/__init__.py": "",
        "sim/run.py": "from ..trace import hdf5\n",
        "trace/__init__.py": "",
        "trace/hdf5.py": "import h5py\n\ndef f():\n    from iolab.sim.run import x  # lazy: h5py\n",
    })
    edges = unit_edges(pkg)
    assert cycles(edges) == [["iolab.sim", "iolab.trace"]]
    text = describe_cycle(cycles(edges)[0], edges)
    assert "trace/hdf5.py:4 (function-local)" in text and "sim/run.py:1" in text
    assert text.count("<-- against the layers") == 1 and "iolab.trace -> iolab.sim" in text.splitlines()[-1]
    # the function-local import loads nothing heavy the module has not: reported
    assert lazy_problems(pkg) == [
        f"{tmp_path}/iolab/trace/hdf5.py:4: function-local import of iolab.sim.run, already loaded "
        "with iolab.trace.hdf5 (h5py): move it to the top of the module  [from iolab.sim.run import x  "
        "# lazy: h5py]"]
    assert layer_problems(pkg) == [
        f"{tmp_path}/iolab/trace/hdf5.py:4: iolab.trace may not import iolab.sim  "
        "[from iolab.sim.run import x  # lazy: h5py]"]


def test_walker_judges_function_local_imports(tmp_path):
    pkg = make_package(tmp_path, {
        "__init__.py": "",
        "errors.py": "",
        "plots/__init__.py": "import matplotlib\n",
        "plots/trace.py": "X = 1\n",
        "cli/__init__.py": "",
        "cli/report.py": textwrap.dedent("""\
            import importlib

            def a():
                from ..plots.trace import X  # lazy: matplotlib only for figures
            def b():
                from ..plots import trace
            def c():
                from .. import errors  # lazy: no reason to be
            def d():
                return importlib.import_module("iolab.errors")
            class K:
                def e(self):
                    import ray  # noqa: F401  # lazy: Ray only when a run starts
            """),
    })
    problems = lazy_problems(pkg)
    where = [p.split(": ")[0].rsplit("/", 1)[1] for p in problems]
    # a: fine (matplotlib comes with the parent package); b: no comment; c, d: light; e: fine
    assert where == ["report.py:6", "report.py:8", "report.py:10"]
    assert "without a `# lazy: <why>` comment" in problems[0] and "a light module" in problems[1]


def test_walker_resolves_relative_imports_and_type_only_ones(tmp_path):
    pkg = make_package(tmp_path, {
        "__init__.py": "",
        "specs/__init__.py": "from .load import parse\n",
        "specs/load.py": "from . import io\nfrom .io import A\n",
        "specs/io.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                        "    from ..campaign.spec import C\n"),
        "campaign/__init__.py": "",
        "campaign/spec.py": "from ..specs import parse\n",
    })
    targets = sorted((i.source, i.target, i.type_only) for i in pkg.imports if i.internal)
    assert targets == [
        ("iolab.campaign.spec", "iolab.specs", False),
        ("iolab.specs", "iolab.specs.load", False),
        ("iolab.specs.io", "iolab.campaign.spec", True),
        ("iolab.specs.load", "iolab.specs.io", False),
        ("iolab.specs.load", "iolab.specs.io", False),
    ]
    # a type-only import still counts for the layers, not for the module-level cycles
    assert layer_problems(pkg)[0].endswith("iolab.specs may not import iolab.campaign  "
                                           "[from ..campaign.spec import C]")
    assert cycles(module_edges(pkg)) == []
    assert cycles(unit_edges(pkg)) == [["iolab.campaign", "iolab.specs"]]
