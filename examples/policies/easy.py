"""EASY backfilling (Lifka 1995) written as a user would, through iolab's public policy API only.

The waiting jobs start in queue order while their nodes are free.  The first one that cannot start (the
head) is promised the earliest time at which enough nodes are free for it (the *shadow time*): running
jobs release their nodes at their expected end (a job past it is taken to end in ``overrun_grace``
seconds), the jobs started now at now + walltime.  A later job starts now if its nodes are free and it
ends by the shadow time, or if it needs no more than the nodes the head leaves over at that time.

iolab's built-in ``easy`` decides the same starts (``tests/test_easy_through_the_api.py``
checks it on the whole of KTH-SP2); it is faster because it keeps the releases sorted between decisions.

    iolab simulate examples/kth-sp2-easy.yaml               # the built-in
    (scheduler: examples/policies/easy.py:EASY in the spec)  # this file
"""

from iolab.policy import BatchScheduler


class EASY(BatchScheduler):
    """EASY backfilling: one reservation, for the first job that cannot start."""

    def decide(self, snap):
        now, free, queue = snap.now, snap.free_nodes, snap.queue
        starts = []
        i, n = 0, len(queue)
        while i < n and queue[i].nodes <= free:  # in queue order while they fit
            job = queue[i]
            starts.append(job)
            free -= job.nodes
            i += 1
        if i < n:
            head = queue[i]
            shadow, extra = self.shadow(snap, starts, free, head.nodes)
            for job in queue[i + 1:]:
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
        return [snap.start(job) for job in starts]

    @staticmethod
    def shadow(snap, started, free, need):
        """The head's shadow time and the nodes left over then: releases in time order, every release at
        the shadow time counted."""
        now = snap.now
        late = now + snap.overrun_grace
        ends = sorted([(late if r.expected_end <= now else r.expected_end, r.nodes)
                       for r in snap.running] + [(now + j.walltime, j.nodes) for j in started])
        avail = free
        shadow = None
        for end, nodes in ends:
            if avail >= need and end != shadow:
                break
            avail += nodes
            shadow = end
        return shadow, avail - need
