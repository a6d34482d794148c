"""``iolab policy check``: a policy of one's own on small canned scenarios, in strict mode, beside a built-in.

:func:`check_policy` loads the class (as a run would), finds its decision point (or takes the one given),
and simulates each scenario of that point with the policy in its place, strict mode on, and once more with
the point's built-in reference (``easy``, ``fifo``, ``shared``, ``best-bandwidth``, ``lowest``,
``newest-first``) for comparison.  A scenario either runs to its end (its figures) or stops at the first
broken rule (the rule, the time, the message): :class:`CheckReport` holds both, ``ok`` when no scenario
broke one.  The scenarios are small (a few seconds in all) and cover what each point must handle: jobs that
arrive while others run, a burst, HPS requests, I/O nodes; exclusive and shared I/O nodes, several I/O
nodes, the stepped engine; disks that fill; a loaded volume.
"""

from __future__ import annotations

import ast
import inspect
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from iolab.errors import SpecError
from iolab.invariants import InvariantViolation
from iolab.metrics.io import io_metrics
from iolab.middleware.policies.loader import PolicyLoadError, PolicySource
from iolab.specs.load import parse_spec

__all__ = ["CheckReport", "KIND_OF_POINT", "POINT_OF_KIND", "ScenarioResult", "check_policy", "kind_of_class"]

POINT_OF_KIND = {"batch": "scheduler", "io": "io", "sharing": "io", "placement": "placement",
                 "allocation": "allocation", "controller": "controller"}
KIND_OF_POINT = {"scheduler": "batch", "placement": "placement", "allocation": "allocation", "controller": "controller"}
REFERENCE = {"batch": "easy", "io": "fifo", "sharing": "shared", "placement": "best-bandwidth",
             "allocation": "lowest", "controller": "newest-first"}
_BASES = {"BatchScheduler": "batch", "IOOrder": "io", "Sharing": "sharing", "PlacementPolicy": "placement",
          "NodeAllocator": "allocation", "ControllerPolicy": "controller"}


@dataclass
class ScenarioResult:
    name: str
    what: str  # what the scenario exercises
    figures: dict[str, Any] = field(default_factory=dict)  # the policy's
    reference: dict[str, Any] = field(default_factory=dict)  # the built-in's, on the same scenario
    broke: str = ""  # the broken rule's message ("" if none)
    rule: str = ""


@dataclass
class CheckReport:
    label: str
    kind: str
    results: list[ScenarioResult]

    @property
    def ok(self) -> bool:
        return not any(r.broke for r in self.results)

    def text(self) -> str:
        ref = REFERENCE[self.kind]
        lines = [f"{self.label}: kind {self.kind}, {len(self.results)} scenario(s) in strict mode "
                 f"(beside the built-in {ref})"]
        for r in self.results:
            lines.append(f"  {r.name}: {r.what}")
            if r.broke:
                lines.append(f"    BROKE {r.broke}")
                continue
            mine = ", ".join(f"{k} {_fmt(v)}" for k, v in r.figures.items())
            theirs = ", ".join(f"{k} {_fmt(v)}" for k, v in r.reference.items())
            lines.append(f"    ok: {mine}")
            lines.append(f"    {ref}: {theirs}")
        broken = [r for r in self.results if r.broke]
        lines.append(f"{len(self.results) - len(broken)} of {len(self.results)} scenarios ran to their end; "
                     + ("no rule broken" if not broken else f"{len(broken)} broke a rule"))
        return "\n".join(lines)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "-" if math.isnan(v) else f"{v:,.4g}"
    return str(v)


def kind_of_class(cls: type) -> str:
    """A policy class's kind: by the public base it subclasses, else by the methods it defines."""
    for base in cls.__mro__:
        if base.__name__ in _BASES and base.__module__.startswith("iolab."):
            return _BASES[base.__name__]
    if callable(getattr(cls, "decide", None)):
        return "batch"
    if callable(getattr(cls, "shares", None)):
        return "sharing"
    if callable(getattr(cls, "allocate", None)):
        return "allocation"
    if callable(getattr(cls, "cycle", None)):
        return "controller"
    if callable(getattr(cls, "key", None)):
        return "io"
    choose = getattr(cls, "choose", None)
    if callable(choose):
        params = [p for p in inspect.signature(choose).parameters if p != "self"]
        return "placement" if len(params) == 3 else "io"
    raise PolicyLoadError(f"{cls.__name__}: not a policy of any decision point (it defines none of decide, key, "
                          "choose, shares, allocate, cycle)")


def only_class(path: Path) -> str:
    """The one class a policy file defines at its top level that subclasses a public base (parsed, not run)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        raise PolicyLoadError(f"{path}:{exc.lineno}: not valid Python ({exc.msg})") from None
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    policies = [n.name for n in classes if any(getattr(b, "id", getattr(b, "attr", "")) in _BASES for b in n.bases)]
    found = policies or [n.name for n in classes]
    if len(found) != 1:
        raise PolicyLoadError(f"{path}: name the class (FILE:CLASS); it defines "
                              + (", ".join(found) if found else "no class"))
    return found[0]


def check_policy(path: str | Path, cls: str | None = None, kind: str | None = None) -> CheckReport:
    """Run the policy ``cls`` of the file ``path`` on its kind's scenarios (module doc)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise PolicyLoadError(f"{path}: no such file")
    cls = cls or only_class(path)
    ref = {"kind": "python", "path": str(path), "class": cls}
    probe = PolicySource("scheduler", cls, {}, str(path), None, path.read_text(encoding="utf-8"), None)._class()
    kind = kind or kind_of_class(probe)
    if kind not in SCENARIOS:
        raise PolicyLoadError(f"unknown kind {kind!r}; one of {', '.join(SCENARIOS)}")
    label = f"{path.name}:{cls}"
    results = []
    for name, (what, build, measure) in SCENARIOS[kind].items():
        r = ScenarioResult(name, what)
        try:
            r.figures = measure(_run(build(ref), path.parent))
        except InvariantViolation as exc:
            r.broke, r.rule = str(exc), exc.rule
        r.reference = measure(_run(build(REFERENCE[kind]), path.parent))
        results.append(r)
    return CheckReport(label, kind, results)


def _run(doc: dict, base: Path):
    try:
        spec = parse_spec(doc, "scenario", base_dir=base)
    except SpecError as exc:
        raise PolicyLoadError("; ".join(f"{p}: {r}" for p, r in exc.problems)) from None
    if doc.get("kind") == "batch":
        from iolab.sim.batch.run import simulate_batch  # lazy: the batch simulator, for batch scenarios

        return simulate_batch(spec, strict=True)
    from iolab.sim.io.run import simulate  # lazy: the I/O simulator, for I/O scenarios

    return simulate(spec, strict=True)


# ---------------------------------------------------------------- the scenarios

def _platform(nodes: int, **extra) -> dict:
    return {"nodes": nodes, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
            "hps": {"rate": "10 GB/s", "capacity": "200 GB"}, "stage_rate": "5 GB/s", **extra}


def _jobs(n: int, nodes: int, spread: float, seed: int, io: bool = False, hps: bool = False) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        runtime = float(rng.integers(20, 400))
        job = {"id": f"j{i:02d}", "submit": float(np.round(rng.uniform(0, spread))),
               "nodes": int(rng.integers(1, nodes + 1)), "walltime": runtime * float(rng.uniform(1.0, 3.0)),
               "runtime": runtime}
        if io:
            job["data"] = f"{int(rng.integers(5, 60))}GB"
        if hps and rng.random() < 0.6:
            job.update(input=f"{int(rng.integers(5, 40))}GB", output=f"{int(rng.integers(5, 40))}GB",
                       storage=f"{int(rng.integers(40, 120))}GB")
        out.append(job)
    return out


def _batch(scheduler, platform, workload, **extra) -> dict:
    return {"kind": "batch", "name": "check", "platform": platform, "scheduler": scheduler,
            "workload": workload, **extra}


def _batch_figures(trace) -> dict[str, Any]:
    rows = list(trace.jobs.rows())
    ended = [r for r in rows if r["status"] == "ok"]
    waits = [r["start"] - r["release"] for r in ended]
    return {"jobs ended": f"{len(ended)}/{len(rows)}",
            "makespan s": max(r["end"] for r in ended) - min(r["release"] for r in rows) if ended else math.nan,
            "mean wait s": float(np.mean(waits)) if waits else math.nan,
            "decisions": trace.attrs.get("decisions", "-")}


def _io_doc(policy, io_nodes: int, apps: int, mode: str = "event", release: bool = False) -> dict:
    return {"name": "check", "policy": policy, "sim": {"mode": mode, "dt": 0.5},
            "platform": {"io_nodes": io_nodes, "nodes_per_io_node": 16, "bandwidth": 1.0},
            "apps": [{"id": f"A{i}", "nodes": 2, "iterations": 10 + 3 * i, "compute": 2.0 + 1.5 * i,
                      "io_volume": 1.0 + 0.5 * (i % 3), **({"release": 5.0 * i} if release else {}),
                      **({"io_node": i % io_nodes} if io_nodes > 1 else {})}
                     for i in range(apps)]}


def _io_figures(trace) -> dict[str, Any]:
    m = io_metrics(trace)
    return {"makespan s": m.makespan, "max slowdown": m.max_stretch,
            "grants": len(trace.grants)}


def _disks(strategy, overflow: bool) -> dict:
    doc = _batch("sas", _platform(6), _jobs(12, 3, 600, seed=3, hps=True), seed=5,
                 placement={"strategy": strategy, "split": "25GB"})
    doc["platform"]["hps"] = {"rate": "15 GB/s", "servers": [{"nodes": [
        {"network_bw": "15 GB/s", "disks": [{"capacity": "40GB" if overflow else "80GB", "read_bw": "10GB/s",
                                             "write_bw": "8GB/s", "count": 3}]}]}]}
    return doc


def _placement_figures(trace) -> dict[str, Any]:
    status = [r["status"] for r in trace.allocations.rows()]
    return {"parts allocated": status.count("allocated"), "refused": status.count("refused"),
            "failed": status.count("failed"), **{k: v for k, v in _batch_figures(trace).items() if k != "decisions"}}


def _controller(policy) -> dict:
    work = [{"id": j, "submit": 10 * i, "nodes": 1, "walltime": 3000, "runtime": 1500, "data": "20GB"}
            for i, j in enumerate("abc")] + [{"id": "d", "submit": 30, "nodes": 1, "walltime": 3000, "runtime": 1500}]
    return _batch("fcfs", _platform(4), work, controller={
        "d": 25, "ws": 100, "alpha": 0.75, "r_threshold": 0.5, "t": 50, "short_sleep": 25, "omega": "100MB",
        "recent": 100, "p": "1GB", "volumes": ["lps"], "policy": policy})


def _controller_figures(trace) -> dict[str, Any]:
    acts = list(trace.actions.rows())
    return {"suspensions": len(acts), "jobs suspended": len({r["job"] for r in acts}),
            **{k: v for k, v in _batch_figures(trace).items() if k != "decisions"}}


_IO_NODES = {"io_nodes": 2, "nodes_per_io_node": 4, "io_node": {"rate": "2 GB/s", "policy": "fifo"}}

Scenario = tuple[str, Callable[[Any], dict], Callable[[Any], dict]]
SCENARIOS: dict[str, dict[str, Scenario]] = {
    "batch": {
        "arrivals": ("12 jobs of 1-4 nodes arriving over 10 min on 4 nodes, walltimes 1-3x the runtime",
                     lambda p: _batch(p, _platform(4), _jobs(12, 4, 600, seed=1)), _batch_figures),
        "burst": ("24 jobs of 1-8 nodes all at once on 8 nodes",
                  lambda p: _batch(p, _platform(8), _jobs(24, 8, 0, seed=2)), _batch_figures),
        "tiers": ("16 jobs, most asking for HPS space (200 GB) with staged input and output",
                  lambda p: _batch(p, _platform(6), _jobs(16, 3, 900, seed=4, hps=True)), _batch_figures),
        "io-nodes": ("12 jobs with checkpoints behind 2 I/O nodes (the snapshot's I/O node loads)",
                     lambda p: _batch(p, _platform(8, **_IO_NODES), _jobs(12, 4, 600, seed=5, io=True)),
                     _batch_figures),
    },
    "io": {
        "one-node": ("5 apps on one I/O node", lambda p: _io_doc(p, 1, 5), _io_figures),
        "two-nodes": ("6 apps released over time on two I/O nodes", lambda p: _io_doc(p, 2, 6, release=True),
                      _io_figures),
        "stepped": ("5 apps on one I/O node, the fixed-step engine (dt 0.5 s)",
                    lambda p: _io_doc(p, 1, 5, mode="step"), _io_figures),
        "batch-io-nodes": ("a batch platform's 2 I/O nodes (io_node.policy)",
                           lambda p: _batch("fcfs", _platform(8, **{**_IO_NODES, "io_node": {"rate": "2 GB/s",
                                                                                              "policy": p}}),
                                            _jobs(12, 4, 300, seed=6, io=True)), _batch_figures),
    },
    "placement": {
        "disks": ("12 SAS jobs on 3 disks of 80 GB, requests split at 25 GB", lambda p: _disks(p, False),
                  _placement_figures),
        "full": ("the same on disks of 40 GB: requests that cannot all fit", lambda p: _disks(p, True),
                 _placement_figures),
    },
    "allocation": {
        "io-nodes": ("12 jobs with checkpoints on 8 nodes behind 2 I/O nodes",
                     lambda p: _batch("easy", _platform(8, **_IO_NODES), _jobs(12, 4, 600, seed=5, io=True),
                                      allocation=p), _batch_figures),
        "fragments": ("24 jobs of 1-8 nodes at once (free ids become scattered)",
                      lambda p: _batch("easy", _platform(8), _jobs(24, 8, 0, seed=2), allocation=p), _batch_figures),
    },
    "controller": {
        "three-writers": ("three jobs checkpointing to LPS and one computing, LPS loaded",
                          _controller, _controller_figures),
    },
}
SCENARIOS["sharing"] = SCENARIOS["io"]
