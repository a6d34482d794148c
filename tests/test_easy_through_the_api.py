"""EASY re-written through the public policy API (``examples/policies/easy.py``, as a user would write it)
decides what the built-in EASY decides: every start of the whole KTH-SP2 trace, job for job."""

from __future__ import annotations

from importlib.resources import as_file, files

import yaml

from iolab.sim.batch.run import simulate_batch
from iolab.specs.load import parse_spec
from iolab.workloads import load_workload

from shared_data import shared_file


def test_easy_through_the_api_starts_every_kth_sp2_job_when_the_built_in_does():
    swf = shared_file("KTH-SP2-1996-2.1-cln.swf.gz")
    doc = yaml.safe_load(files("iolab.examples").joinpath("kth-sp2-easy.yaml").read_text())
    doc["workload"]["path"] = str(swf)
    with as_file(files("iolab.examples").joinpath("policies", "easy.py")) as easy:
        builtin = parse_spec(doc, "kth")
        ours = parse_spec({**doc, "scheduler": f"{easy}:EASY"}, "kth")
        jobs = load_workload(builtin)
        starts = [{r["id"]: r["start"] for r in simulate_batch(s, jobs, phases="none", strict=False).jobs.rows()}
                  for s in (builtin, ours)]
    assert len(starts[0]) == 27_992
    assert starts[1] == starts[0]
