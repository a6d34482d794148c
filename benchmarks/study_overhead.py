"""Per-run overhead of the campaign engine on a study, against a bare loop of the same runs.

    python benchmarks/study_overhead.py [--jobs-per-workload 1000] [--workloads 2] [--workers 1]

The runs are lackner2019 batch simulations (SAS and random p in {0.25, 0.5, 0.75}
at 2048 GB, k = 5); with 700 jobs each takes a second or more here.  Three ways:

- bare loop: ``run_one`` over the tasks in this process (no journal, no results file);
- engine, in process (``--no-ray``): the same driver loop as ``iolab sweep`` (journal
  line fsynced per run, results.h5 rewritten at the end), without Ray;
- engine, Ray (``--workers N`` local workers): what ``iolab study`` does by default;
  its execution phase (first submission to last result) and its whole wall time
  (Ray start and stop included).

The machine is shared, so the load changes between the three: besides the
seconds per run of each, the overhead is measured inside each execution as
(its time - the simulations' own time, the rows' ``wall_seconds``) / the
simulations' time.  Also checks that the three give the same rows.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from iolab.campaign import load_results
from iolab.studies import lackner as L
from iolab.studies.as_campaign import Engine, rows_of, run_as_campaign


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs-per-workload", type=int, default=700)
    ap.add_argument("--workloads", type=int, default=2)
    ap.add_argument("--workers", type=int, default=1)
    a = ap.parse_args(argv)
    size = L.LacknerSize(jobs=a.jobs_per_workload, workloads=a.workloads, ps=(0.25, 0.5, 0.75),
                         capacities_gb=(2048,), ks=(5,))
    tasks = L.tasks(size)
    n = len(tasks)

    t0 = time.perf_counter()
    bare = [L.run_one(*t) for t in tasks]
    t_bare = time.perf_counter() - t0

    out = {}
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        res, s_local = run_as_campaign("lackner", L.params_of(size), Path(d) / "local",
                                       Engine(use_ray=False, progress=False))
        t_local = time.perf_counter() - t0
        out["local"] = rows_of(res)
        t0 = time.perf_counter()
        res, s_ray = run_as_campaign("lackner", L.params_of(size), Path(d) / "ray",
                                     Engine(workers=a.workers, progress=False))
        t_ray = time.perf_counter() - t0
        out["ray"] = rows_of(load_results(Path(d) / "ray"))

    def strip(rows):  # NaN (SAS has no p) as a string, so that equal rows compare equal
        return [{k: ("nan" if v != v else v) for k, v in r.items() if k != "wall_seconds"} for r in rows]

    same = strip(bare) == strip(out["local"]) == strip(out["ray"])
    sim = {k: sum(r["wall_seconds"] for r in rows) for k, rows in (("bare", bare), *out.items())}
    print(f"{n} lackner runs of {a.jobs_per_workload} jobs, {sim['bare'] / n:.2f} s of simulation each in the bare "
          f"loop (load average now {open('/proc/loadavg').read().split()[0]})")
    print(f"{'way':52s} {'s/run':>7s} {'sim s/run':>9s} {'overhead':>9s}")
    rows = [("bare loop (run_one, one process)", t_bare, "bare"),
            ("engine, in process (journal + results.h5)", t_local, "local"),
            (f"engine, Ray {s_ray.workers} worker(s): execution phase", s_ray.run_seconds * s_ray.workers, "ray"),
            (f"engine, Ray {s_ray.workers} worker(s): whole call (start/stop)", t_ray * s_ray.workers, "ray")]
    for label, t, k in rows:
        print(f"{label:52s} {t / n:7.3f} {sim[k] / n:9.3f} {100 * (t / sim[k] - 1):8.1f}%")
    print("(Ray rows: worker-seconds, i.e. time x workers; overhead = time / simulation time - 1)")
    print(f"Ray start {s_ray.startup_seconds:.1f} s; same rows in the three ways: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
