"""Small specs and policy files for the tests of the public policy API: each test writes the policies it
needs to a folder of its own (outside the repository, as a user's file would be) and names them in a spec."""

from __future__ import annotations

import textwrap
from pathlib import Path

from iolab.specs.batch import BatchExperiment


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


def jobs(*rows) -> list[dict]:
    """Inline jobs from ``(id, submit, nodes, walltime, runtime)`` rows (and an optional dict of extras)."""
    out = []
    for r in rows:
        extra = r[5] if len(r) > 5 else {}
        out.append({"id": r[0], "submit": r[1], "nodes": r[2], "walltime": r[3], "runtime": r[4], **extra})
    return out


FOUR = jobs(("a", 0, 4, 100, 50), ("b", 1, 2, 100, 80), ("c", 2, 2, 10, 5), ("d", 3, 4, 20, 5))


def batch_doc(scheduler: object = "fcfs", workload=None, nodes: int = 4, **extra) -> dict:
    return {"kind": "batch", "name": "api",
            "platform": {"nodes": nodes, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                         "hps": {"rate": "10 GB/s", "capacity": "100 GB"}, "stage_rate": "5 GB/s"},
            "scheduler": scheduler, "workload": workload if workload is not None else FOUR, **extra}


def batch_spec(folder: Path, scheduler: object = "fcfs", workload=None, **extra) -> BatchExperiment:
    return BatchExperiment.model_validate(batch_doc(scheduler, workload, **extra), context={"base_dir": folder})
