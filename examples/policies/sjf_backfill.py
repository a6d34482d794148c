"""Shortest-job-first backfilling: EASY's one reservation, with the backfill candidates tried shortest first.

The worked example of docs/policies.md.  The waiting jobs start in queue order while their nodes are
free; the first that cannot (the head) is promised the earliest time enough nodes are free for it (its
*shadow time*); then the other waiting jobs are tried in order of requested walltime, shortest first
(ties: queue order), and each starts now if its nodes are free and it ends by the shadow time or needs no
more than the nodes the head leaves over then.  It never delays the head, as EASY does not; it prefers
short jobs where EASY prefers old ones.

    iolab policy check examples/policies/sjf_backfill.py
    (spec) scheduler: policies/sjf_backfill.py:SJFBackfill
"""

from iolab.policy import BatchScheduler, Decision


class SJFBackfill(BatchScheduler):
    """EASY with the backfill candidates shortest first."""

    def __init__(self, max_backfill=None):
        # options: {max_backfill: N} tries at most N jobs behind the head (Slurm's bf_max_job_test)
        self.max_backfill = max_backfill

    def decide(self, snap):
        now, free, queue = snap.now, snap.free_nodes, snap.queue
        starts = []
        i = 0
        while i < len(queue) and queue[i].nodes <= free:  # in queue order while they fit
            starts.append(queue[i])
            free -= queue[i].nodes
            i += 1
        if i < len(queue):
            head = queue[i]
            shadow, extra = shadow_time(snap, starts, free, head.nodes)
            rest = sorted(queue[i + 1:], key=lambda j: j.walltime)  # stable: ties keep queue order
            if self.max_backfill is not None:
                rest = rest[:self.max_backfill]
            for job in rest:
                if free == 0:
                    break
                if job.nodes > free:
                    continue
                if now + job.walltime > shadow:  # still running at the shadow time: only on the extra nodes
                    if job.nodes > extra:
                        continue
                    extra -= job.nodes
                starts.append(job)
                free -= job.nodes
        return Decision(now, tuple(snap.start(job) for job in starts))


def shadow_time(snap, started, free, need):
    """When ``need`` nodes are free, counting the running jobs' expected ends (a job past its end is taken
    to end ``overrun_grace`` seconds from now) and those of the jobs started now; and the nodes left over
    then (every release at that time counted)."""
    now = snap.now
    late = now + snap.overrun_grace
    ends = sorted([(late if r.expected_end <= now else r.expected_end, r.nodes) for r in snap.running]
                  + [(now + j.walltime, j.nodes) for j in started])
    avail, shadow = free, None
    for end, nodes in ends:
        if avail >= need and end != shadow:
            break
        avail += nodes
        shadow = end
    return shadow, avail - need
