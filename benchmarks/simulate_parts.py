"""Where the CPU of ``iolab simulate SPEC`` goes, part by part, for a batch spec.

usage: python benchmarks/simulate_parts.py SPEC [--repeat N] [--phases jobs|all|none]

Each repetition is a fresh interpreter (imports are only paid once per process) that does what the
command does, in its order, and reads ``time.process_time`` between the parts: the outside packages
the command needs (click, numpy, pydantic, yaml), the spec models, the simulator's and the command's
modules, reading the spec, reading or generating the workload (with the command's check of
``--max-jobs``), the kernel's set-up, the engine's run, the trace's columns, the metrics.  As in the
command, the collector is off until the run, then on with the start-up's objects frozen.  Prints the least CPU seconds of each part over ``--repeat`` processes (default 5)
and their sum; the interpreter's own start (``python -c pass``) is printed beside it.  As the command
without ``--out``, the run keeps each job's I/O time but no phase row, gives the jobs no node ids and its trace
only the jobs columns the metrics read (``--phases all``: as with ``--out``, every row, the node sets and every column), the collector's youngest
generation is passed over every 10 000 new objects during the run, and numpy's OpenBLAS runs one thread.  iolab's bytecode is cached first (``cache_bytecode.py``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cache_bytecode import compile_iolab  # noqa: E402  (a sibling script: iolab's .pyc cached before timing)

CHILD = r"""
import gc, json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the command line sets it
gc.disable()  # as main() pauses the collector through the start-up
c = time.process_time
out, t = [], c()
def mark(name):
    global t
    now = c(); out.append((name, now - t)); t = now
import click, numpy, pydantic, yaml
mark("imports: click, numpy, pydantic, yaml")
import iolab.specs.load, iolab.specs.batch
mark("imports: the spec models")
import iolab.cli.simulate, iolab.sim.batch.run, iolab.metrics.batch_trace
mark("imports: the simulator and the command")
from iolab.specs.load import load_spec
spec = load_spec(sys.argv[1])
PHASES = sys.argv[2]
mark("read the spec")
from iolab.cli.simulate import MAX_JOBS
from iolab.workloads import load_jobs_within
jobs = load_jobs_within(spec, MAX_JOBS, sys.argv[1])  # the command's: the job cap checked, the workload read
mark("read or generate the workload")
gc.freeze()  # then the run, with the collector on, its youngest generation passed over every 10 000 objects
gc.enable()
gc.set_threshold(10_000, *gc.get_threshold()[1:])
IDS = PHASES == "all"  # as with --out: node ids kept and written; without it (jobs, none) neither
from iolab.middleware.policies.batch.kernel import BatchKernel
from iolab.sim.batch.engine import BatchEngine
kernel = BatchKernel.from_spec(spec, jobs, node_ids=IDS or spec.platform.io_nodes is not None)
engine = BatchEngine.around(kernel, memory_per_node=spec.platform.memory_per_node, overheads=spec.platform.overheads,
                            phases=PHASES)
mark("kernel set-up")
rec = engine.run()
mark("engine run")
import iolab.sim.batch.run as run
run.run_batch = lambda *a, **k: rec  # the trace of this run, as simulate_batch builds it
trace = run.simulate_batch(spec, jobs, phases=PHASES, node_ids=IDS, metrics_only=not IDS)  # without --out: the metrics' columns
mark("trace columns")
from iolab.metrics.batch_trace import trace_batch_metrics
trace_batch_metrics(trace)
mark("metrics")
print(json.dumps(out))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", help="a batch spec (YAML or JSON)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--phases", choices=("all", "jobs", "none"), default="jobs",
                    help="what the run keeps of the phases (default jobs: what `iolab simulate SPEC --json` keeps "
                         "without --out; all: with --out)")
    a = ap.parse_args(argv)
    compile_iolab()  # as installed: no module compiled again in every process
    best: dict[str, float] = {}
    order: list[str] = []
    for _ in range(a.repeat):
        res = subprocess.run([sys.executable, "-c", CHILD, a.spec, a.phases], capture_output=True, text=True)
        if res.returncode:
            print(res.stderr, file=sys.stderr)
            return 1
        for name, sec in json.loads(res.stdout.splitlines()[-1]):
            if name not in best:
                order.append(name)
            best[name] = min(best.get(name, float("inf")), sec)
    bare = min(_cpu([sys.executable, "-c", "pass"]) for _ in range(a.repeat))
    print(f"{a.spec}: least CPU seconds of {a.repeat} processes per part")
    for name in order:
        print(f"  {name:42s} {best[name]:6.3f}")
    print(f"  {'sum':42s} {sum(best.values()):6.3f}   (the interpreter's own start: {bare:.3f})")
    return 0


def _cpu(cmd: list[str]) -> float:
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


if __name__ == "__main__":
    sys.exit(main())
