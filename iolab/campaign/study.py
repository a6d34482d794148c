"""A paper's study as a campaign: the study says which runs it needs, the engine runs them.

A study campaign file names a study and its size instead of a base and axes::

    kind: campaign
    name: lackner
    study: lackner                 # iolab.studies.lackner, or a dotted module path
    params: {jobs: 500, workloads: 10, repetitions: 1}   # the study's size (its defaults otherwise)

The study module provides (see ``iolab/studies/as_campaign.py`` and docs/studies.md):

- ``campaign_runs(params: dict) -> list[dict]``: every run's arguments (JSON
  data), in order; the arguments are all a run depends on;
- ``campaign_task(args: dict)``: one run; returns a row (a dict of plain values),
  a list of rows, or ``{"rows": [...], "tables": {name: [rows]}}``;
- optionally ``RUN_VERSION`` (an int, bumped when a run's meaning changes).

A run's id is 16 hex digits of SHA-256 over (study, RUN_VERSION, arguments), so
rerunning the campaign recognises finished runs exactly as a sweep does.  The
journal, the Ray loop and the resume semantics are :mod:`.sweep`'s.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import platform
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from pydantic import Field

from iolab.errors import SpecError
from iolab.specs.base import StrictModel
from iolab.specs.load import parse_spec, read_document
from iolab.specs.size import MAX_JOBS, MAX_RUNS
from iolab.campaign.spec import Name
from iolab.campaign.table import encode

STUDY_PACKAGE = "iolab.studies"


class StudyCampaign(StrictModel):
    """A study run as a campaign (see docs/studies.md)."""

    kind: Literal["campaign"] = "campaign"
    name: Name
    description: str = ""
    study: str = Field(..., min_length=1, pattern=r"^[A-Za-z_][\w.]*$",
                       description="a study of iolab.studies (lackner, monniot, carretero...) or a module path")
    params: dict[str, Any] = Field(default_factory=dict, description="the study's size and options")
    cpus_per_run: float = Field(1.0, gt=0, le=4096, description="Ray CPUs one run reserves")


@dataclass(frozen=True)
class StudyRun:
    """One run of a study campaign: ``params`` are the arguments of the study's ``campaign_task``."""

    run_id: str
    index: int
    params: dict[str, Any]
    study: str

    def payload(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "index": self.index, "params": self.params, "study": self.study}


def module_of(study: str) -> ModuleType:
    """The module of a study name: ``lackner`` is ``iolab.studies.lackner``; a dotted name is taken as is."""
    name = study if "." in study else f"{STUDY_PACKAGE}.{study}"
    return importlib.import_module(name)


def study_run_id(study: str, version: int, args: dict[str, Any]) -> str:
    body = {"v": 1, "study": study, "version": version, "args": encode(args)}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_study_document(data: Any) -> bool:
    return isinstance(data, dict) and "study" in data


def parse_study(data: dict[str, Any], source: str) -> StudyCampaign:
    data = dict(data)
    data.setdefault("kind", "campaign")
    if data["kind"] != "campaign":
        raise SpecError(source, [("kind", f"expected a campaign, got kind {data['kind']!r}")])
    return parse_spec(data, source, "campaign", kinds={"campaign": StudyCampaign})


COUNT_PARAMS = ("jobs", "workloads", "repetitions", "count", "runs", "apps")  # and NAME_jobs: counts of work


def size_estimate(params: dict[str, Any]) -> float:
    """An upper estimate of a study's work from its parameters alone, before it is expanded: the
    product of its counts (the integer parameters named like counts: jobs, workloads, repetitions,
    count, runs, apps, ``*_jobs``; not sizes in bytes, seeds or retries) and of the lengths of its list
    parameters (the values swept).  Runs x the size of each run, roughly."""
    est = 1.0
    for k, v in params.items():
        if isinstance(v, bool):
            continue
        if isinstance(v, int) and v > 0 and (k in COUNT_PARAMS or k.endswith("_jobs")):
            est *= v
        elif isinstance(v, (list, tuple)) and v:
            est *= len(v)
    return est


def expand_study(campaign: StudyCampaign, source: str = "<campaign>", max_runs: int | None = None) -> list[StudyRun]:
    """The study's runs with their ids; a bad study name or size raises SpecError naming the field.
    A study whose parameters estimate (:func:`size_estimate`) more than ``max_runs`` x ``MAX_JOBS`` is
    refused before its runs are built; one that expands to more than ``max_runs`` runs after."""
    limit = MAX_RUNS if max_runs is None else max_runs
    est = size_estimate(campaign.params)
    if est > limit * MAX_JOBS:
        raise SpecError(source, [("params", f"the study's parameters multiply to {est:.3g} (runs x jobs per run, "
                                            f"estimated before anything is built), above the limit of "
                                            f"{limit * MAX_JOBS:.3g} (--max-runs {limit} x {MAX_JOBS} jobs); pass "
                                            "--max-runs N to allow it (docs/specs.md, 'Limits')")])
    try:
        mod = module_of(campaign.study)
    except ImportError as exc:
        raise SpecError(source, [("study", f"no study {campaign.study!r} ({exc})")]) from None
    if not callable(getattr(mod, "campaign_runs", None)) or not callable(getattr(mod, "campaign_task", None)):
        raise SpecError(source, [("study", f"{mod.__name__} is not a study (no campaign_runs / campaign_task)")])
    try:
        arglist = mod.campaign_runs(dict(campaign.params))
    except (TypeError, ValueError, KeyError) as exc:
        raise SpecError(source, [("params", f"{campaign.study}: {exc}")]) from None
    if not arglist:
        raise SpecError(source, [("params", "the study expands to no runs")])
    if len(arglist) > limit:
        raise SpecError(source, [("params", f"the study expands to {len(arglist)} runs, above the limit of {limit}; "
                                            "pass --max-runs N to allow it (docs/specs.md, 'Limits')")])
    version = int(getattr(mod, "RUN_VERSION", 1))
    out: list[StudyRun] = []
    seen: set[str] = set()
    for args in arglist:
        rid = study_run_id(campaign.study, version, args)
        if rid in seen:
            continue
        seen.add(rid)
        out.append(StudyRun(rid, len(out), encode(args), campaign.study))
    return out


def load_study(path: str | Path, max_runs: int | None = None) -> tuple[StudyCampaign, list[StudyRun]]:
    campaign = parse_study(read_document(path), str(path))
    return campaign, expand_study(campaign, str(path), max_runs=max_runs)


def _normalise(result: Any) -> tuple[list[dict], dict[str, list[dict]]]:
    if isinstance(result, dict) and "rows" in result:
        return list(result["rows"]), dict(result.get("tables") or {})
    if isinstance(result, dict):
        return [result], {}
    return list(result), {}


def execute_study(payload: dict[str, Any], traces_dir: str | None = None) -> dict[str, Any]:
    """Run one study run (plain Python, where Ray puts it); never raises for a failing run."""
    t0 = time.perf_counter()
    rec: dict[str, Any] = {"run_id": payload["run_id"], "params": payload["params"], "status": "ok", "error": "",
                           "rows": [], "host": platform.node(), "pid": os.getpid()}
    try:
        fn = module_of(payload["study"]).campaign_task
        rows, tables = _normalise(fn(payload["params"]))
        rec["rows"] = encode(rows)
        rec["columns"] = {"runs": list(dict.fromkeys(k for r in rows for k in r))}
        if tables:
            rec["tables"] = encode(tables)
            rec["columns"].update({n: list(dict.fromkeys(k for r in trs for k in r)) for n, trs in tables.items()})
    except Exception as exc:  # a failing run is a result, not a crash of the campaign
        rec.update(status="failed", error=f"{type(exc).__name__}: {exc}".strip()[:2000], rows=[],
                   traceback="".join(traceback.format_exception(exc)[-4:])[-4000:])
    rec["wall_seconds"] = time.perf_counter() - t0
    rec["finished_at"] = time.time()
    return rec


__all__ = ["StudyCampaign", "StudyRun", "execute_study", "expand_study", "is_study_document", "load_study",
           "module_of", "parse_study", "study_run_id"]
