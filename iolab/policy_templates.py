"""What ``iolab policy new KIND NAME`` writes: a commented, working policy of each kind and a pytest file.

Each template is a correct (simple) policy a user starts from: it runs as it is, passes ``iolab policy
check``, and its comments say what the method is given and what it may answer.  ``{cls}`` is the class's
name, ``{module}`` the file's, ``{kind}`` the decision point.
"""

from __future__ import annotations

KINDS = ("batch", "io", "sharing", "placement", "allocation", "controller")

_HEAD = '''"""{cls}: a {what} for iolab (docs/policies.md).

    iolab policy check {module}.py:{cls}          # small scenarios under strict mode
    pytest test_{module}.py                       # its tests
{use}
"""

'''

_USE = {
    "batch": "    spec: scheduler: {module}.py:{cls}   (or {{kind: python, path: {module}.py, class: {cls}, options: {{}}}})",
    "io": "    spec: policy: {module}.py:{cls} (an I/O experiment), or platform.io_node.policy (a batch platform)",
    "sharing": "    spec: policy: {module}.py:{cls} (an I/O experiment), or platform.io_node.policy (a batch platform)",
    "placement": "    spec: placement: {{strategy: {module}.py:{cls}}}   (an HPS with disks)",
    "allocation": "    spec: allocation: {module}.py:{cls}",
    "controller": "    spec: controller: {{policy: {module}.py:{cls}}}",
}

_WHAT = {"batch": "batch scheduler", "io": "I/O order (exclusive access to an I/O node)",
         "sharing": "bandwidth sharing at an I/O node", "placement": "disk placement policy",
         "allocation": "node allocator", "controller": "load controller policy"}

_BODY = {
    "batch": '''from iolab.policy import LPS, BatchScheduler, Decision


class {cls}(BatchScheduler):
    """First come, first served, with first fit: the waiting jobs in queue order, each that fits now."""

    def __init__(self, skip_ahead=True):
        # options: the spec's `options: {{skip_ahead: false}}` arrive here as keyword arguments
        self.skip_ahead = skip_ahead

    def decide(self, snap):
        # Called at every submission, every job end, and when asked (Decision.wake_at).  `snap` holds:
        #   snap.now, snap.total_nodes, snap.free_nodes, snap.free_node_ids
        #   snap.queue: waiting jobs in submit order (QueuedJob: id, submit, nodes, walltime, storage,
        #               input, output, data, user); snap.job(id) finds one
        #   snap.running: RunningJob (id, nodes, expected_end, tier, storage)
        #   snap.hps_capacity, snap.hps_free, snap.tier_free, snap.rates (TierRates), snap.duration(job, tier)
        #   snap.io_node_loads, snap.io_node_of(node) on a platform with I/O nodes
        # Answer the jobs to start now: a list of snap.start(job, tier, node_ids), of job ids, of
        # (job id, tier) pairs, or a Decision(now, starts, plan, wake_at).  Never more nodes than are free.
        free = snap.free_nodes
        starts = []
        for job in snap.queue:
            if job.nodes <= free:
                starts.append(snap.start(job, LPS))
                free -= job.nodes
            elif not self.skip_ahead:
                break  # strict FCFS: nobody overtakes the first job that does not fit
        return Decision(snap.now, tuple(starts))
''',
    "io": '''from iolab.policy import IOOrder


class {cls}(IOOrder):
    """The request that has waited longest first (FIFO), ties to the lower system id."""

    # True: key() is asked again for every waiting request at every grant (an order that changes while
    # requests wait, e.g. one that reads `now`); False: once, when the request arrives.
    time_dependent = False

    def key(self, request, now):
        # `request` (IORequest): app, rank (system id), requested_at, volume, io_time (its contention-free
        # seconds), remaining, total (T_i(b)), start, done, io_received, phase.  Smaller keys go first; a
        # number or a tuple of numbers and texts.  (Or define choose(self, waiting, now) instead, returning
        # one of the waiting requests.)
        return request.requested_at
''',
    "sharing": '''from iolab.policy import Sharing


class {cls}(Sharing):
    """Each job gets an equal share of the I/O node, split among its streams."""

    def shares(self, streams, now):
        # `streams` (Stream): id, job, rank, nodes, volume, moved, granted, user.  Answer one fraction of
        # the I/O node's bandwidth per stream, in this order: each > 0, their sum <= 1 (below 1 leaves
        # bandwidth unused).  Asked again whenever a stream starts or ends on this I/O node.
        per_job = {{}}
        for s in streams:
            per_job[s.job] = per_job.get(s.job, 0) + 1
        jobs = len(per_job)
        return [1.0 / jobs / per_job[s.job] for s in streams]
''',
    "placement": '''from iolab.policy import PlacementPolicy


class {cls}(PlacementPolicy):
    """Each part on the first disk where it fits (refuses when one part fits nowhere)."""

    refuses = True  # it may answer None: the request is refused (requeued if the spec says so, else LPS)

    def choose(self, sizes, disks, rng):
        # `sizes`: the request's parts in bytes; `disks` (read it, never change it): disks.disks[i]
        # (DiskInfo: id, node, capacity, read_bw, write_bw, network_bw), disks.free(i), disks.count[i];
        # `rng`: the run's numpy Generator (seeded by the spec).  Answer a disk index per part, or None.
        taken = [0] * len(disks)
        out = []
        for size in sizes:
            for i in range(len(disks)):
                if disks.free(i) - taken[i] >= size:
                    taken[i] += size
                    out.append(i)
                    break
            else:
                return None
        return out
''',
    "allocation": '''from iolab.policy import NodeAllocator


class {cls}(NodeAllocator):
    """The lowest free node ids."""

    def allocate(self, job, free, view):
        # `job` (QueuedJob) starts now; `free`: the free node ids, increasing; `view` (NodeView): now,
        # total_nodes, io_node_of(i), io_node_loads.  Answer exactly job.nodes distinct ids from `free`.
        return free[:job.nodes]

    def ended(self, job):
        """`job` ended: its nodes are free again (for an allocator that keeps books)."""
''',
    "controller": '''from iolab.policy import RESUME, SUSPEND, Action, ControllerPolicy


class {cls}(ControllerPolicy):
    """While a volume is loaded, suspend the newest job that writes on it (never the oldest); resume in
    order once it is not, or once nobody else runs on it."""

    def __init__(self):
        self.stopped = []  # (job, volume), first suspended first

    def cycle(self, now, jobs, loaded):
        # `jobs`: job id -> JobUsage (job, start, files; u.on(volume) lists its open files there: path,
        # volume, size, mtime); `loaded`: volume -> whether its response window says it is loaded.
        # Answer Action(SUSPEND | RESUME, job, volume, reason) items; only jobs that hold their nodes may be
        # suspended, only jobs this policy suspended resumed.
        self.stopped = [(j, v) for j, v in self.stopped if j in jobs]
        out = []
        for vol, busy in sorted(loaded.items()):
            held = [j for j, v in self.stopped if v == vol]
            users = sorted((u for u in jobs.values() if u.on(vol) and u.job not in {{j for j, _ in self.stopped}}),
                           key=lambda u: (u.start, u.job))
            if busy and len(users) > 1:
                newest = users[-1].job
                self.stopped.append((newest, vol))
                out.append(Action(SUSPEND, newest, vol, "volume loaded"))
            elif held and (not busy or not users):
                self.stopped.remove((held[0], vol))
                out.append(Action(RESUME, held[0], vol, "volume calm" if not busy else "alone on the volume"))
        return out
''',
}

_TEST = '''"""Tests of {module}.py's {cls}: `pytest test_{module}.py` (from this folder)."""

from pathlib import Path

from iolab.policy_check import check_policy

HERE = Path(__file__).resolve().parent


def test_{module}_breaks_no_rule_on_the_canned_scenarios():
    report = check_policy(HERE / "{module}.py", "{cls}")
    assert report.kind == "{kind}"
    assert report.ok, report.text()
{extra}'''

_TEST_EXTRA = {
    "batch": '''

def test_{module}_starts_what_fits_in_queue_order():
    from iolab.policy import QueuedJob, Snapshot

    import importlib.util

    spec = importlib.util.spec_from_file_location("{module}", HERE / "{module}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    snap = Snapshot(now=0.0, total_nodes=4, free_nodes=4,
                    queue=(QueuedJob("a", 0.0, 3, 100.0), QueuedJob("b", 0.0, 2, 100.0), QueuedJob("c", 0.0, 1, 50.0)))
    decision = mod.{cls}().decide(snap)
    assert [s.job for s in decision.starts] == ["a", "c"]
''',
}


def template(kind: str, cls: str, module: str) -> tuple[str, str]:
    """The policy file's text and its test file's text."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    fill = {"cls": cls, "module": module, "kind": kind}
    head = _HEAD.format(what=_WHAT[kind], use=_USE[kind].format(**fill), **fill)
    test = _TEST.format(extra=_TEST_EXTRA.get(kind, "").format(**fill), **fill)
    return head + _BODY[kind].format(**fill), test
