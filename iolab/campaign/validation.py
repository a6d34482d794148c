"""``iolab validate --repeats`` as a campaign: the real runs anywhere ``iolab sweep`` runs.

:func:`repeats_campaign` writes the campaign of the real runs a validation needs (the spec as
its base, runtime ``emulate``, every policy ``repeats`` times with seeds ``spec.seed`` ..
``spec.seed + repeats - 1``); ``iolab sweep FILE --traces DIR/traces --out DIR`` runs it (on
a Ray cluster under Slurm with ``slurm/templates/sweep.sbatch``), and
``iolab validate SPEC --repeats N --traces DIR`` finds the runs' traces through the
campaign's journal (:func:`campaign_traces`).
"""

from __future__ import annotations

from pathlib import Path

from iolab.campaign.journal import Journal


def repeats_campaign(spec, policies: list[str], repeats: int) -> dict:
    """The campaign document (a mapping ready for YAML) of ``repeats`` real runs of every policy."""
    base = spec.model_dump(mode="json")
    base.pop("policy", None)
    return {"kind": "campaign", "name": f"{spec.name}-validate"[:64], "runtime": "emulate",
            "description": f"the real runs of `iolab validate --repeats {repeats}` on {spec.name}",
            "base": base, "mode": "event",
            "axes": {"policies": list(policies), "seeds": [spec.seed + k for k in range(repeats)]}}


def is_campaign_results(directory: str | Path) -> bool:
    return (Path(directory) / "journal.jsonl").is_file()


def campaign_traces(directory: str | Path, policies: list[str]) -> dict[str, list[Path]]:
    """policy -> the kept traces of its ok runs in the campaign results folder ``directory``, in seed order."""
    recs = [r for r in Journal(Path(directory) / "journal.jsonl").load().values()
            if r.get("status") == "ok" and r.get("trace")]
    out: dict[str, list[Path]] = {}
    for p in policies:
        mine = sorted((r for r in recs if r.get("params", {}).get("policy") == p),
                      key=lambda r: r["params"].get("seed", 0))
        out[p] = [Path(r["trace"]) for r in mine]
    return out


__all__ = ["campaign_traces", "is_campaign_results", "repeats_campaign"]
