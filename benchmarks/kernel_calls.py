"""What the batch kernel alone costs in a run: its set-up and its calls, without the engine around them.

usage: python benchmarks/kernel_calls.py SPEC [--repeat N]

Runs the batch spec once through the simulator (``BatchKernel.from_spec`` and ``BatchEngine``, as
``iolab simulate`` does, strict mode off), recording every call the engine makes to the kernel that
changes its books (``submit``, ``decide``, ``finish``) with its time.  Then, ``--repeat`` times (default 5),
builds a fresh kernel from the spec and replays those calls on it alone (``decide`` at the same instants,
the jobs' ends at the same times; no event heap, no job steps, no links).  Prints the least CPU seconds of
the kernel's set-up and of the replayed calls, the number of calls and decisions, and checks that the
replay started every job where the run did (exit 1 if not).  Compare two versions by alternating them.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", help="a batch spec (YAML or JSON)")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)

    from iolab.middleware.policies.batch.kernel import BatchKernel
    from iolab.sim.batch.engine import BatchEngine
    from iolab.specs.load import load_spec
    from iolab.workloads import load_workload

    spec = load_spec(a.spec)
    jobs = load_workload(spec)
    gc.freeze()  # the spec and the workload: not the kernel's cost
    calls: list[tuple[int, int, float]] = []  # (0 submit | 1 decide | 2 finish, job index, t)
    k = BatchKernel.from_spec(spec, jobs)
    submit, decide, finish = k.submit, k.decide, k.finish

    def logged_submit(s, t):
        calls.append((0, s.index, t))
        submit(s, t)

    def logged_decide(t):
        calls.append((1, -1, t))
        return decide(t)

    def logged_finish(s, t, *rest):
        calls.append((2, s.index, t))
        finish(s, t, *rest)

    k.submit, k.decide, k.finish = logged_submit, logged_decide, logged_finish
    BatchEngine.around(k, memory_per_node=spec.platform.memory_per_node, rows=False,
                       overheads=spec.platform.overheads).run()
    ran = [(s.start, s.node_ids) for s in k.jobs]
    decisions = k.decisions

    clock = time.process_time
    set_up = replay = float("inf")
    for _ in range(a.repeat):
        k = state = None
        gc.collect()  # the last repetition's kernel: not this one's cost
        t0 = clock()
        k = BatchKernel.from_spec(spec, jobs)
        t1 = clock()
        state, submit, decide, finish = k.jobs, k.submit, k.decide, k.finish
        for kind, i, t in calls:
            if kind == 0:
                submit(state[i], t)
            elif kind == 1:
                k.changed = True  # the engine decides only when something changed: it did
                decide(t)
            else:
                finish(state[i], t)
        t2 = clock()
        set_up, replay = min(set_up, t1 - t0), min(replay, t2 - t1)
        if [(s.start, s.node_ids) for s in k.jobs] != ran or k.decisions != decisions:
            print("the replay did not start the jobs where the run did", file=sys.stderr)
            return 1
    print(f"{a.spec}: {len(k.jobs)} jobs, {len(calls)} kernel calls, {decisions} decisions; "
          f"least CPU seconds of {a.repeat}")
    print(f"  kernel set-up        {set_up:6.3f}")
    print(f"  kernel calls (replay) {replay:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
