"""A paper's study as a campaign: what every study module needs to run on the campaign engine.

A study module (``iolab/studies/<name>.py``) provides

- ``campaign_runs(params: dict) -> list[dict]``: the arguments of every run it
  needs (JSON data: numbers, strings, bools, lists), in a fixed order; a run's
  id is a hash of its arguments, so they must hold everything the run depends
  on (a seed, a file's content hash...);
- ``campaign_task(args: dict)``: one run, executed where Ray puts it; returns a
  row (dict of plain values), a list of rows, or ``{"rows": [...], "tables":
  {name: [rows]}}``;
- a driver (``run_study``) that calls :func:`run_as_campaign` and computes its
  tables and figures from :func:`rows_of` the results.

``iolab study NAME`` then runs through :func:`iolab.campaign.sweep.drive`, the
loop of ``iolab sweep``: local Ray by default, ``address`` for a cluster,
``workers`` in flight, a journal that a rerun resumes from, and ``results.h5``
in the output folder next to the study's ``summary.json`` and figures.
:func:`write_campaign` writes the same runs as a campaign file that
``iolab sweep`` accepts (``iolab study NAME --campaign FILE``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from iolab.atomic import atomic_write_text, check_output
from iolab.campaign.results import Results
from iolab.campaign.results import load as load_results
from iolab.campaign.study import StudyCampaign, expand_study
from iolab.campaign.sweep import SweepSummary, run_study_runs
from iolab.errors import RunError

ENGINE_COLUMNS = ("index", "run_id", "status", "error", "task_seconds", "host")


@dataclass
class Engine:
    """How to run a study's runs: local Ray (default), a Ray cluster, or in this process."""

    workers: int | None = None  # runs in flight (local Ray: its num_cpus); default: the CPUs
    address: str | None = None  # join this Ray cluster
    use_ray: bool = True  # False: one after the other in this process (same journal and results)
    progress: bool = True
    stream: TextIO | None = None
    stop_on_sigterm: bool = False  # the command line sets it (main thread)
    retry_failed: bool = False


def campaign_of(study: str, params: dict[str, Any], name: str | None = None) -> StudyCampaign:
    return StudyCampaign(name=name or study, study=study, params=params,
                         description=f"iolab study {study} as a campaign")


def write_campaign(path: str | Path, study: str, params: dict[str, Any], name: str | None = None) -> Path:
    """The study's campaign file (JSON, which is YAML too), checked by expanding it first."""
    check_output(path, option="--campaign")
    campaign = campaign_of(study, params, name)
    runs = expand_study(campaign, str(path))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(campaign.model_dump(mode="json"), indent=2) + "\n")
    print(f"{path}: campaign {campaign.name}, study {study}, {len(runs)} runs; "
          f"run it with `iolab sweep {path} --out DIR`", file=sys.stderr)
    return path


def run_as_campaign(study: str, params: dict[str, Any], out: str | Path, engine: Engine | None = None,
                    name: str | None = None) -> tuple[Results, SweepSummary]:
    """Run (or resume) the study's runs into ``out``; the results of every run, or RunError if some are missing."""
    engine = engine or Engine()
    campaign = campaign_of(study, params, name)
    runs = expand_study(campaign, f"<iolab study {study}>")
    summary = run_study_runs(campaign, runs, f"iolab study {study}", out, workers=engine.workers,
                             address=engine.address, retry_failed=engine.retry_failed, progress=engine.progress,
                             stream=engine.stream, stop_on_sigterm=engine.stop_on_sigterm, use_ray=engine.use_ray)
    res = load_results(out)
    if res.attrs.get("pending"):
        raise RunError(f"{out}: {res.attrs['pending']} of {res.attrs['total_runs']} runs have no result")
    bad = failures(res)
    if bad:
        raise RunError(f"{out}: {len(bad)} run(s) failed (rerun with retry to run them again): " + "; ".join(bad[:3]))
    return res, summary


def rows_of(res: Results, table: str = "runs", *, ok_only: bool = True) -> list[dict[str, Any]]:
    """The study's own rows of a results table (the engine's columns dropped), in campaign order;
    none if no run wrote that table (e.g. a campaign of only some of a study's kinds of run)."""
    if table != "runs" and table not in res.tables:
        return []
    cols = res.table(table)
    keep = [c for c in cols if c not in ENGINE_COLUMNS]
    status = res.columns["status"]
    ok_index = {int(i) for i, s in zip(res.columns["index"], status) if s == "ok"}
    out = []
    for i in range(len(cols["run_id"])):
        if ok_only and int(cols["index"][i]) not in ok_index:
            continue
        row = {c: cols[c][i] for c in (["index"] if table != "runs" else []) + keep}
        out.append({c: (v.item() if hasattr(v, "item") else v) for c, v in row.items()})
    return out


def failures(res: Results) -> list[str]:
    """``run_id: error`` of every failed run."""
    return [f"{r}: {e}" for r, s, e in zip(res.columns["run_id"], res.columns["status"], res.columns["error"])
            if s != "ok"]


__all__ = ["Engine", "campaign_of", "failures", "rows_of", "run_as_campaign", "write_campaign"]
