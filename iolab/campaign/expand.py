"""From a campaign file to its runs: resolve files, generate workloads, validate, hash.

Every run is an independent, fully resolved experiment (I/O, or batch: the base's
``kind``) plus the axis values that produced it.  Its id is a hash of exactly that (the resolved
experiment, the runtime and the axis values; not its position in the list),
so rerunning a campaign recognises the runs already done, adding an axis value
leaves the other runs' ids alone, and editing a workload file changes the ids
of the runs that use it.

Every problem, in the campaign file or in any run it expands to, is collected
and raised at once as a :class:`~iolab.errors.SpecError` naming the field.
"""

from __future__ import annotations

import copy
import hashlib
import json

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from iolab.errors import SpecError
from iolab.names import path_component
from iolab.workloads.carretero import CarreteroParams, generate
from iolab.specs.base import problems_of
from iolab.specs.batch import BatchExperiment, SchedulerSpec
from iolab.specs.policy_ref import PolicyRef
from iolab.specs.io import IOExperiment, Mapping
from iolab.specs.load import KINDS, STDIN, parse_spec, read_document, spec_dir
from iolab.specs.size import MAX_RUNS
from iolab.campaign.spec import Campaign, FileWorkload, GeneratedWorkload

ID_VERSION = 1  # bump if the meaning of a run's parameters changes
MAX_PROBLEMS = 25


@dataclass(frozen=True)
class Run:
    """One run of a campaign: ``experiment`` is the resolved spec as JSON data."""

    run_id: str
    index: int
    params: dict[str, Any]
    experiment: dict[str, Any]
    runtime: str

    def spec(self) -> IOExperiment | BatchExperiment:
        return experiment_of(self.experiment)

    def payload(self) -> dict[str, Any]:
        """What a worker needs (plain data, cheap to ship to a Ray task)."""
        return {"run_id": self.run_id, "index": self.index, "params": self.params,
                "experiment": self.experiment, "runtime": self.runtime}


def experiment_of(data: dict[str, Any]) -> IOExperiment | BatchExperiment:
    """A run's resolved experiment (JSON data) as the spec of its kind."""
    return KINDS[data.get("kind", "io")].model_validate(data)


def load_campaign(path: str | Path) -> Campaign:
    """Read and validate a campaign file (shape only; :func:`expand` does the rest); ``-`` reads
    standard input."""
    source = "<stdin>" if str(path) == STDIN else str(path)
    data = read_document(path)
    data.setdefault("kind", "campaign")
    if data["kind"] != "campaign":
        raise SpecError(source, [("kind", f"expected a campaign, got kind {data['kind']!r}")])
    return parse_spec(data, source, "campaign", kinds={"campaign": Campaign}, base_dir=spec_dir(path))


def _check_base(base: dict[str, Any], fail) -> None:
    """Validate the base as a whole I/O spec, strictly, field by field: a wrong value is an
    error even where an axis overrides it (``base.seed: -5`` with ``axes.seeds``).  Fields the
    base may leave to the axes (missing ones) and checks across fields (which depend on what the
    axes bring) are left to the validation of every run."""
    try:
        IOExperiment.model_validate(base, strict=True)
    except ValidationError as err:
        for e, (path, reason) in zip(err.errors(), problems_of(err)):
            if e["type"] == "missing" or not e["loc"]:
                continue
            fail(f"base.{path}", reason)


# Spec fields added after ID_VERSION, with the value that means "as before": left out of a run's id
# while they hold it, so that a journal written before they existed still recognises its runs (a
# run with another value is another run, with another id).
_ABSENT = object()
ADDED_FIELDS: dict[tuple[str, ...], Any] = {
    ("platform", "overheads"): {"io_phase": 0.0, "launch": 0.0, "gap": 0.0, "exit": 0.0},
    ("platform", "interference"): None,  # no interference law: a lossless fair share, as before
}


def _without(d: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """``d`` without the key at ``path``: the dicts along it copied, everything else shared."""
    head, *rest = path
    if not rest:
        return {k: v for k, v in d.items() if k != head}
    return {**d, head: _without(d[head], tuple(rest))}


def _as_before(experiment: dict[str, Any]) -> dict[str, Any]:
    """``experiment`` without the :data:`ADDED_FIELDS` that hold their "as before" value."""
    out = experiment
    for path, default in ADDED_FIELDS.items():
        node: Any = out
        for key in path:
            node = node.get(key, _ABSENT) if isinstance(node, dict) else _ABSENT
        if node == default:
            out = _without(out, path)
    return out


def run_id(experiment: dict[str, Any], params: dict[str, Any], runtime: str) -> str:
    """16 hex digits of SHA-256 over the canonical JSON of the resolved run (:data:`ADDED_FIELDS` at
    their "as before" value left out)."""
    body = {"v": ID_VERSION, "runtime": runtime, "experiment": _as_before(experiment),
            "params": {k: v for k, v in params.items() if k != "index"}}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def mapping_label(m: Mapping) -> str:
    if m.kind != "make-pack":
        return m.kind
    s = m.sensibility
    return f"make-pack(S={s if isinstance(s, str) else f'{s:g}'})"


def generated_seed(model: str, alpha: float, k: int, seed: int) -> int:
    """The generator seed of workload ``k`` at ``alpha`` for campaign seed ``seed`` (stable across versions)."""
    digest = hashlib.sha256(f"{model}|{alpha!r}|{k}|{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 2**63


@lru_cache(maxsize=256)
def _generate(alpha: float, seed: int, params_json: str) -> dict[str, Any]:
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in json.loads(params_json).items()}
    spec = generate(alpha, seed, CarreteroParams(**params))
    return {"apps": [a.model_dump(mode="json", exclude_none=True) for a in spec.apps],
            "platform": {"nodes_per_io_node": spec.platform.nodes_per_io_node,
                         "bandwidth": spec.platform.bandwidth}}


def _merge(low: dict[str, Any], high: dict[str, Any]) -> dict[str, Any]:
    """Deep merge of mappings; ``high`` wins; lists are replaced, not merged."""
    out = copy.deepcopy(low)
    for k, v in high.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


class _Expander:
    def __init__(self, campaign: Campaign, source: str, root: Path, mode: str | None):
        self.c, self.source, self.root = campaign, source, root
        self.mode = mode or campaign.mode
        self.problems: list[tuple[str, str]] = []
        self.level = "io"
        self.base_dir = root  # where the base's relative paths start
        self.base = self._base()
        self._files: dict[int, dict[str, Any] | None] = {}

    def fail(self, path: str, reason: str) -> None:
        if (path, reason) not in self.problems:
            self.problems.append((path, reason))

    def _read(self, field: str, rel: str) -> dict[str, Any] | None:
        p = Path(rel)
        p = p if p.is_absolute() else self.root / p
        try:
            return read_document(p)
        except SpecError as err:
            for where, reason in err.problems:
                self.fail(field, f"{p}: {reason}" if where in ("(file)", "(top level)") else f"{p}: {where}: {reason}")
            return None

    def _base(self) -> dict[str, Any]:
        base = self.c.base
        if isinstance(base, str):
            path = Path(base) if Path(base).is_absolute() else self.root / base
            self.base_dir = path.parent
            base = self._read("base", base) or {}
        base = dict(base or {})
        if base.get("kind", "io") not in ("io", "batch"):
            self.fail("base.kind", f"the base is an I/O (kind io) or a batch experiment (kind batch), not "
                                   f"{base['kind']!r}")
        if base.get("kind") == "batch":
            self.level = "batch"
            return base
        base.pop("kind", None)
        _check_base(base, self.fail)
        return base

    def count(self) -> int:
        """The number of runs the axes expand to (before duplicates are dropped), without expanding."""
        ax = self.c.axes
        if self.level == "batch":
            return len(ax.seeds or [1]) * len(ax.schedulers or [1])
        sizes = len(ax.platform.io_nodes or [1]) * len(ax.platform.nodes_per_io_node or [1]) * \
            len(ax.platform.bandwidth or [1])
        entries = ax.workloads or []
        workloads = sum(len(w.alpha) * w.count if isinstance(w, GeneratedWorkload) else 1 for w in entries) or 1
        return len(ax.seeds or [1]) * sizes * workloads * len(ax.mappings or [1]) * len(ax.policies or [1])

    # ---- workload instances: (label, contribution, params)

    def workloads(self, seed: int, platform: dict[str, Any]) -> Iterator[tuple[str, dict, dict]]:
        entries = self.c.axes.workloads
        if not entries:
            yield self.base.get("name", "base"), {}, {"workload": self.base.get("name", "base"),
                                                      "workload_source": "base", "alpha_gen": None,
                                                      "replicate": 0, "workload_seed": None}
            return
        for i, w in enumerate(entries):
            if isinstance(w, FileWorkload):
                doc = self._files.setdefault(i, self._read(f"axes.workloads[{i}].spec", w.spec))
                if doc is None:
                    continue
                label = w.label or path_component(Path(w.spec).stem)
                contribution = {k: doc[k] for k in ("apps", "platform") if k in doc}
                if "apps" not in doc:
                    self.fail(f"axes.workloads[{i}].spec", f"{w.spec}: has no apps")
                    continue
                yield label, contribution, {"workload": label, "workload_source": w.spec, "alpha_gen": None,
                                            "replicate": 0, "workload_seed": None, "_entry": i}
            else:
                yield from self._generated(i, w, seed, platform)

    def _generated(self, i: int, w: GeneratedWorkload, seed: int, platform: dict[str, Any]):
        overrides = w.params.overrides()
        overrides.setdefault("nodes_per_io_node", platform.get("nodes_per_io_node", 2048))
        overrides.setdefault("bandwidth", platform.get("bandwidth", 1.0))
        label0 = w.label or w.generate
        for alpha in w.alpha:
            for k in range(w.count):
                gseed = generated_seed(w.generate, alpha, k, seed)
                try:
                    contribution = _generate(alpha, gseed, json.dumps(overrides, sort_keys=True))
                except (ValueError, TypeError) as exc:
                    self.fail(f"axes.workloads[{i}].params", f"{w.generate} generator: {exc}")
                    return
                label = f"{label0}-a{alpha:g}-{k}"
                yield label, contribution, {"workload": label, "workload_source": w.generate, "alpha_gen": alpha,
                                            "replicate": k, "workload_seed": gseed, "_entry": i}

    # ---- the product

    def runs(self) -> list[Run]:
        if self.level == "batch":
            return self._batch_runs()
        from iolab.middleware.policies.io_guard import policy_label  # lazy: the I/O policies, for an I/O campaign only

        c, ax = self.c, self.c.axes
        if ax.schedulers:
            self.fail("axes.schedulers", "applies to a batch base (kind batch); an I/O base sweeps axes.policies")
            return []
        base_platform = dict(self.base.get("platform") or {})
        seeds = ax.seeds or [self.base.get("seed", 0)]
        policies = ax.policies or [None]  # None: each experiment's own (the base's, validated with it)
        try:
            mappings = ax.mappings or [Mapping.model_validate(
                {"kind": self.base["mapping"]} if isinstance(self.base.get("mapping"), str)
                else self.base.get("mapping", {}))]
        except ValidationError as err:
            for p, r in problems_of(err):
                self.fail(f"base.mapping.{p}", r)
            return []
        sizes = [(r, p, b) for r in (ax.platform.io_nodes or [None])
                 for p in (ax.platform.nodes_per_io_node or [None])
                 for b in (ax.platform.bandwidth or [None])]
        out: list[Run] = []
        seen: dict[str, int] = {}
        for seed in seeds:
            for r, p, b in sizes:
                size = {k: v for k, v in (("io_nodes", r), ("nodes_per_io_node", p), ("bandwidth", b)) if v is not None}
                for label, contribution, wparams in self.workloads(seed, {**base_platform, **size}):
                    entry = wparams.pop("_entry", None)
                    for m in mappings:
                        exp = _merge(self.base, contribution)
                        exp = _merge(exp, {"platform": size, "mapping": m.model_dump(mode="json"), "seed": seed,
                                           "name": label, "kind": "io"})
                        if self.mode or c.dt:
                            exp = _merge(exp, {"sim": {k: v for k, v in (("mode", self.mode), ("dt", c.dt)) if v}})
                        spec = self._validate(exp, entry, label)
                        if spec is None:
                            continue
                        for policy in policies:
                            s = spec if policy is None else spec.model_copy(update={"policy": policy})
                            experiment = s.model_dump(mode="json")
                            params = {
                                **wparams, "seed": seed, "policy": policy_label(s.policy), "mapping": mapping_label(m),
                                "io_nodes": s.platform.io_nodes, "nodes_per_io_node": s.platform.nodes_per_io_node,
                                "bandwidth": s.platform.bandwidth, "apps": len(s.apps), "runtime": c.runtime,
                                "mode": s.sim.mode, "dt": s.sim.dt,
                            }
                            rid = run_id(experiment, params, c.runtime)
                            if rid in seen:  # the same run twice (e.g. two identical workload files)
                                continue
                            seen[rid] = len(out)
                            out.append(Run(rid, len(out), {"index": len(out), **params}, experiment, c.runtime))
        return out

    def _batch_runs(self) -> list[Run]:
        """A batch base's runs: every seed under every scheduler (the base's own when the axes give none)."""
        c, ax = self.c, self.c.axes
        io_only = [("axes.policies", ax.policies), ("axes.workloads", ax.workloads), ("axes.mappings", ax.mappings),
                   ("axes.platform", ax.platform.model_dump(exclude_none=True)), ("dt", c.dt)]
        for field, given in io_only:
            if given:
                self.fail(field, "applies to I/O experiments; a batch base sweeps axes.seeds and axes.schedulers")
        if c.mode:  # the I/O simulator's engine (the campaign's, not a --mode given to the sweep)
            self.fail("mode", "applies to I/O experiments; a batch base sweeps axes.seeds and axes.schedulers")
        if self.problems:
            return []
        base = self._validate_batch(self.base, "base")
        if base is None:
            return []
        seeds = ax.seeds or [base.seed]
        schedulers = ax.schedulers or [base.scheduler]
        label = base.name
        out: list[Run] = []
        for seed in seeds:
            for i, sched in enumerate(schedulers):
                where = f"axes.schedulers[{i}]" if ax.schedulers else "base"
                exp = {**_merge(self.base, {"seed": seed}),  # the axis's scheduler replaces the base's whole
                       "scheduler": sched.model_dump(mode="json", exclude_defaults=not isinstance(sched, PolicyRef))}
                spec = self._validate_batch(exp, where)
                if spec is None:
                    continue
                experiment = spec.model_dump(mode="json")
                params = {"workload": label, "workload_source": "base" if not isinstance(c.base, str) else c.base,
                          "alpha_gen": None, "replicate": 0, "workload_seed": None, "seed": seed,
                          "policy": scheduler_column(sched), "mapping": None, "io_nodes": None,
                          "nodes_per_io_node": None, "bandwidth": None, "apps": None, "runtime": c.runtime,
                          "mode": None, "dt": None}
                rid = run_id(experiment, params, c.runtime)
                if any(r.run_id == rid for r in out):
                    continue
                out.append(Run(rid, len(out), {"index": len(out), **params}, experiment, c.runtime))
        return out

    def _validate_batch(self, exp: dict[str, Any], where: str) -> BatchExperiment | None:
        try:
            return BatchExperiment.model_validate(exp, strict=True,
                                                  context={"base_dir": self.base_dir, "strict": True})
        except ValidationError as err:
            for p, r in problems_of(err):
                self.fail(f"{where}: {p}" if where != "base" else f"base.{p}", r)
            return None

    def _validate(self, exp: dict[str, Any], entry: int | None, label: str) -> IOExperiment | None:
        try:
            return IOExperiment.model_validate(exp, strict=True)
        except ValidationError as err:
            where = f"axes.workloads[{entry}]" if entry is not None else "base"
            for p, r in problems_of(err):
                top = p.split(".")[0].split("[")[0]
                if top == "platform" and self.c.axes.platform.model_dump(exclude_none=True):
                    origin = "axes.platform"
                elif top == "mapping" and self.c.axes.mappings:
                    origin = "axes.mappings"
                else:
                    origin = where
                self.fail(f"{origin} ({label}): {p}", r)
            return None


def scheduler_column(s: SchedulerSpec | PolicyRef) -> str:
    """A scheduler as the runs' ``policy`` column: the name its traces give it (``label``: a built-in's kind,
    ``file.py:Class`` for a user's) and the options given (``random-tier(p=0.4)``), so that two runs that differ
    only in an option differ in the column too."""
    given = s.options if isinstance(s, PolicyRef) else s.model_dump(mode="json", exclude_defaults=True,
                                                                      exclude={"kind"})
    return s.label + (f"({', '.join(f'{k}={v}' for k, v in sorted(given.items()))})" if given else "")


def expand(campaign: Campaign, source: str | Path = "<campaign>", *, root: str | Path | None = None,
           mode: str | None = None, max_runs: int | None = None) -> list[Run]:
    """All runs of ``campaign`` in axis order; relative paths are resolved from ``root``
    (default: the folder of ``source``).  ``mode`` overrides the simulator engine.  A campaign
    whose axes expand to more than ``max_runs`` runs (default :data:`iolab.specs.size.MAX_RUNS`)
    is refused before it is expanded."""
    root = Path(root) if root is not None else spec_dir(source)
    limit = MAX_RUNS if max_runs is None else max_runs
    ex = _Expander(campaign, str(source), root, mode)
    n = ex.count()
    if n > limit:
        ex.fail("axes", f"the axes expand to {n} runs, above the limit of {limit}; pass --max-runs N to "
                        "allow it (docs/specs.md, 'Limits')")
    runs = ex.runs() if not ex.problems else []
    if not ex.problems and not runs:
        ex.fail("axes", "the campaign expands to no runs")
    if ex.problems:
        problems = ex.problems[:MAX_PROBLEMS]
        if len(ex.problems) > MAX_PROBLEMS:
            problems.append(("...", f"{len(ex.problems) - MAX_PROBLEMS} more problems"))
        raise SpecError(str(source), problems)
    return runs


def load_runs(path: str | Path, mode: str | None = None, max_runs: int | None = None) -> tuple[Campaign, list[Run]]:
    """Load a campaign file and expand it; raises SpecError before anything runs."""
    campaign = load_campaign(path)
    source = "<stdin>" if str(path) == STDIN else path
    return campaign, expand(campaign, source, root=spec_dir(path), mode=mode, max_runs=max_runs)


