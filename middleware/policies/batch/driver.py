"""The batch level's driver, written once for both clocks: what happens to a run's jobs at an instant, and the
loop that finds the instants (SimPy's ``Environment`` and ``RealtimeEnvironment`` are the model).

:class:`BatchDriver` handles an instant ``t``: it tells the kernel (:class:`~.kernel.BatchKernel`: books,
policy, checker) and the runtime's effectors (:class:`JobEffects`) what happened, in the same order in
both runtimes:

- ``decide``: the policy decides, again while something changed at ``t`` (a start that ended at once),
  and every job it started begins (its effect: its first step on a link, or its processes);
- ``retry``: a job ``allocating`` since its disk placement was requeued asks the disks again and begins;
- ``end``: a job ends (``done`` after its last step, ``failed``, ``killed`` by the policy or at a
  limit): its effects stop where they are, then the kernel gives back its nodes and HPS bytes;
- ``suspend`` / ``resume`` / ``act`` / ``release``: the load controller's actions (dheenadayalan2017):
  the job's effect stops (a link's stream, a process tree's signal) and the kernel keeps its nodes and
  space; each carried out is a row ``(t, job, suspend|resume, volume, reason)``.

:class:`BatchLoop` finds the instants, the one loop both runtimes run: the simulator
(:class:`iolab.sim.batch.engine.BatchEngine`) on simulated time, the real run
(:class:`iolab.emulator.batch.run.BatchEmulation`) on the wall clock.  They differ only in ``clock`` and in
their effectors:

- ``clock`` None: simulated time, the loop jumps to its next event; a callable ``clock(t)`` (the real
  run's) waits until spec time ``t`` and returns the time it is then (``>= t``), the instant's time.

At each instant ``t`` (the earliest event due) the loop takes, in this order:

1. the calls the policy asked for (``Decision.wake_at``) that are due;
2. the jobs whose submit time has come, in submit order;
3. the events in its heap due at ``t``, in the order they were scheduled: a timed step's end and a
   link's completion (the simulator's effectors: :meth:`_go_on`), a placement retry, a revision of the
   predictor's estimate, an advance stage-in check, the load controller's own events, and the real run's
   poll of its processes and copies (``_POLL``, :meth:`_poll`);
4. the decision (:meth:`BatchDriver.decide`: again while a start ended at once), every job it started beginning (``begin``: the runtime's effector);
5. the next advance stage-in check, and each link touched at ``t`` its next completion.

What happens at each of these is the driver's.  The loop writes two of the driver's instants inline, its
hot path (what a call there costs: docs/results.md): ``decide``, and the end of a job whose one compute
step ended (nothing to halt: the kernel's ``finish``).  Pure: no Ray, MPI, h5py or clock; a runtime
brings its clock.

A runtime sets, before :meth:`loop`: ``kernel``, ``driver``, ``state`` (the kernel's jobs, in submit
order), ``links`` (name -> a link: ``version``, ``pop_finished``, ``next_completion``; none in a real
run), ``controller`` (or None), ``clock``, ``on_progress`` (``(t, submitted, total)`` every
:data:`PROGRESS_EVERY` events, or None); it defines ``begin`` and, as it needs them, ``_go_on`` (a step
of a job ended), ``_start`` (the loop begins: its first own events) and ``_poll`` (a ``_POLL`` event).  The
loop keeps its own state (its heap, the timed steps' ends, the links touched: :meth:`_loop_state`, when it
starts) and what it watches of a job that began (its placement retry, its predicted end: :meth:`_began`,
after the runtime's ``begin``).
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Callable, Iterable, Protocol

from iolab.middleware.policies.batch.kernel import ALLOCATING, DONE, KILLED, SUSPENDABLE, SUSPENDED, BatchKernel, JobState

# the controller's resume action (``iolab.middleware.policies.controller.handler``), here by value: a batch run
# without a load controller (every SWF trace) does not import the controller's package
RESUME = "resume"

__all__ = ["BatchDriver", "BatchLoop", "JobEffects", "PROGRESS_EVERY"]


class JobEffects(Protocol):
    """What a runtime does to a job when the driver says so (``t``: spec seconds)."""

    def begin(self, s: JobState, t: float) -> None: ...  # started (or placed after a retry): its first effect
    def halt(self, s: JobState, t: float, state: str, message: str) -> None: ...  # ends: stop what it still does
    def pause(self, s: JobState, t: float) -> bool: ...  # stop its progress (False: it cannot be stopped now)
    def unpause(self, s: JobState, t: float) -> bool: ...  # go on (False: it was not stopped)


class BatchDriver:
    """The batch kernel's instants, for a runtime's effectors (module doc).  It answers the kernel's
    kills (``kernel.on_kill``: a policy's ``Decision.kills``)."""

    __slots__ = ("kernel", "effects")

    def __init__(self, kernel: BatchKernel, effects: JobEffects):
        self.kernel = kernel
        self.effects = effects
        kernel.on_kill = self.kill

    def decide(self, t: float) -> bool:
        """Decide at ``t`` while something changed (a job of runtime 0 ends inside its decision); every
        job started begins.  Whether the policy was asked."""
        k = self.kernel
        if not k.changed:
            return False
        begin = self.effects.begin
        while k.changed:
            for s in k.decide(t):
                begin(s, t)
        return True

    def retry(self, s: JobState, t: float) -> bool:
        """``s``'s disks are asked again at its ``retry_at`` (False: it ended while it waited)."""
        if s.state != ALLOCATING:
            return False
        self.kernel.retry(s, t)
        self.effects.begin(s, t)
        return True

    def end(self, s: JobState, t: float, state: str = DONE, message: str = "") -> None:
        """``s`` ends ``state``: what it still does stops, then its nodes and HPS bytes return (a job
        ended while suspended ends its suspension with it: the kernel's ``finish``)."""
        self.effects.halt(s, t, state, message)
        self.kernel.finish(s, t, state, message)

    def kill(self, s: JobState, t: float, message: str) -> None:
        """The policy killed ``s`` (``Decision.kills``)."""
        self.end(s, t, KILLED, message)

    # -- the load controller's actions ----------------------------------------------------------------
    def suspend(self, s: JobState, t: float) -> bool:
        """``s`` stops where it is and keeps its nodes and space (False: it is not running, or its effect
        could not stop)."""
        if s.state not in SUSPENDABLE or not self.effects.pause(s, t):
            return False
        self.kernel.suspend(s, t)
        return True

    def resume(self, s: JobState, t: float) -> bool:
        """``s`` goes on from where it stopped (False: it was not stopped)."""
        if not self.effects.unpause(s, t):
            return False
        if s.state == SUSPENDED:
            self.kernel.resume(s, t)
        return True

    def act(self, actions: Iterable[tuple], t: float) -> list[tuple]:
        """A controller cycle's actions, ``(kind, job, volume, reason)`` each, in order; returns the rows of
        those carried out."""
        rows = []
        by_id = self.kernel.by_id
        for kind, job, volume, reason in actions:
            s = by_id[job]
            if self.resume(s, t) if kind == RESUME else self.suspend(s, t):
                rows.append((t, job, kind, volume, reason))
        return rows

    def release(self, t: float, reason: str, jobs: Iterable[str]) -> list[tuple]:
        """The suspended ``jobs`` go on, in this order (the controller stops, fails, or the run ends); the
        rows of those resumed."""
        by_id = self.kernel.by_id
        return [(t, job, RESUME, "", reason) for job in list(jobs) if self.resume(by_id[job], t)]


# the heap's events (submissions and links' completions are kept outside it: BatchLoop.loop)
_STEP_END, _RETRY, _ESTIMATE, _ADVANCE, _CONTROL, _POLL = 1, 3, 4, 5, 6, 7

PROGRESS_EVERY = 16384  # events between two progress calls


class BatchLoop:
    """The batch level's loop under two clocks (module doc); the runtimes' classes derive from it."""

    clock: Callable[[float], float] | None = None
    on_progress: Callable[[float, int, int], None] | None = None
    _all_rows = True  # every phase leaves a row: the loop's inline end of a lone compute step is off
    events = 0  # events taken (set when the loop ends)

    def _loop_state(self) -> None:
        """The loop's own state, new when it starts."""
        self._heap: list[tuple] = []
        self._seq = itertools.count()
        self._touched_links: set[str] = set()
        self._step_end: dict[int, float] = {}  # job index -> end of its current timed step
        self.events = 0  # events taken (set when the loop ends)

    # -- scheduling ------------------------------------------------------------------------------------
    def _push(self, t: float, ev: int, arg) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), ev, arg))

    def push_control(self, t: float, arg) -> None:
        """A load-controller event at ``t`` (the controller's ``event`` gets ``arg`` back)."""
        self._push(t, _CONTROL, arg)

    def push_poll(self, t: float) -> None:
        """A poll of the runtime's processes and copies at ``t`` (:meth:`_poll`)."""
        self._push(t, _POLL, None)

    def _watch_estimate(self, s) -> None:
        """The predictor's estimate of a running job is revised at its predicted end."""
        due = self.kernel.estimate_due(s)
        if due < math.inf:
            self._push(due, _ESTIMATE, s.index)

    def _began(self, s) -> None:
        """What the loop watches of a job the runtime began (called after the runtime's ``begin``): its
        placement retry (it waits for disks), and its predicted end (with a predictor: after its first
        step's end, so a job ending at its predicted end is not extended)."""
        if s.state == ALLOCATING:
            self._push(s.retry_at, _RETRY, s.index)
        elif self.kernel.predictor is not None:  # without a predictor no estimate is ever revised
            self._watch_estimate(s)

    def _start(self) -> None:
        """The loop begins: the runtime's first own events (the load controller's)."""
        if self.controller is not None:
            self.controller.start(self)

    def _poll(self, t: float) -> None:  # pragma: no cover - a runtime that pushes polls defines it
        raise NotImplementedError

    def _go_on(self, s, t: float, done=None) -> None:  # pragma: no cover - a runtime with steps defines it
        raise NotImplementedError

    # -- the loop --------------------------------------------------------------------------------------
    def loop(self) -> float:
        """Run until no event is left; returns the last instant's time."""
        k = self.kernel
        # The submissions are not in the heap: the jobs are in submit order (the kernel sorts them), so
        # the next one is read from this list.  At an instant they are handled before the heap's events,
        # as when each was pushed first (the lowest sequence numbers): the same order, n pushes fewer.
        submits = [s.queued.submit for s in self.state]
        n_jobs = len(submits)
        self._loop_state()
        self._start()
        heap = self._heap
        heappop, seq = heapq.heappop, self._seq
        state, links, step_end, touched = self.state, self.links, self._step_end, self._touched_links
        go_on, submit, finish, decide, lean = self._go_on, k.submit, k.finish, k.decide, not self._all_rows
        begin, began, retry = self.begin, self._began, self.driver.retry
        clock = self.clock
        # The links' completions are not in the heap either: a link has one completion event at a time,
        # (time, sequence number, name, the link's version then), the one scheduled last; it goes stale
        # when the link changes (its version moves) and is replaced when the link is scheduled again.
        # ``due`` holds them by link, ``first`` the earliest by (time, sequence number), and the loop
        # takes it between the heap's events in sequence order: the order a heap holding them gave.
        # Every event scheduled is counted once, when it is taken, dropped stale or replaced.
        due: dict[str, tuple] = {}
        first = None
        events = 0
        submitted = 0
        report = PROGRESS_EVERY if self.on_progress is not None else math.inf
        advance_at: set[float] = set()  # times of the early-copy checks in the heap
        inf = math.inf
        t = 0.0
        wakes = k.wakes  # the times the policy asked to be called at (Decision.wake_at): not in the heap
        while heap or submitted < n_jobs or first is not None or (wakes and k.queue):
            t = heap[0][0] if heap else inf
            if first is not None and first[0] < t:
                t = first[0]
            if submitted < n_jobs and submits[submitted] <= t:
                t = submits[submitted]
            if wakes and wakes[0] <= t:
                if t == inf and not k.running:  # only the policy's calls are left
                    k.stalled(wakes[0])
                t = wakes[0]
            if clock is not None:  # the wall clock: wait until t; the instant is when it is then
                t = clock(t)
            if wakes and wakes[0] <= t:
                k.wake_due(t)
                events += 1
            if events >= report:
                self.on_progress(t, submitted, n_jobs)
                report = events + PROGRESS_EVERY
            while submitted < n_jobs and submits[submitted] <= t:
                submit(state[submitted], t)
                submitted += 1
                events += 1
            while True:
                if heap and heap[0][0] <= t and (first is None or first[0] > t or heap[0][1] < first[1]):
                    et, _, ev, arg = heappop(heap)
                    events += 1
                    if ev == _STEP_END:  # the most frequent events first
                        if step_end.get(arg) != et:
                            continue  # the step was suspended (its end moved)
                        del step_end[arg]
                        s = state[arg]
                        if lean and len(s.steps) == 1:  # its one compute step ended: _go_on's last turn, inline
                            s.step = 1
                            finish(s, t)
                            s.steps = ()
                        else:
                            go_on(s, t, s.steps[s.step])
                    elif ev == _POLL:
                        self._poll(t)
                    elif ev == _CONTROL:
                        self.controller.event(self, arg, t)
                    elif ev == _ADVANCE:  # an early stage-in may be due under the current plan
                        advance_at.discard(et)
                        k.advance_check(t)
                    elif ev == _ESTIMATE:  # still running at its predicted end: the prediction doubles
                        s = state[arg]
                        if k.extend_estimate(s, t):
                            self._watch_estimate(s)
                    else:  # _RETRY: ask the disks again for a requeued HPS placement (unless it was killed)
                        s = state[arg]
                        if retry(s, t):
                            began(s)
                elif first is not None and first[0] <= t:  # a link's completion
                    _, _, name, version = first
                    del due[name]
                    first = min(due.values()) if due else None
                    events += 1
                    link = links[name]
                    if version != link.version:
                        continue
                    for idx in link.pop_finished(t):
                        s = state[idx]
                        st = s.steps[s.step]
                        if k.observer is not None and st.link == "stage":
                            early = k.early_staged.get(s.queued.id, 0.0) if st.kind == "stage-in" else 0.0
                            k.staged(s, st.kind, st.amount + early, t)
                        go_on(s, t, st)
                    touched.add(name)
                else:
                    break
            # the driver's decide (BatchDriver.decide: again while a decision's starts end at once, runtime 0),
            # inline: once per instant at which something changed (a call there costs: docs/results.md)
            decided = False
            while k.changed:
                decided = True
                for s in decide(t):
                    begin(s, t)
                    began(s)
            if k.advance is not None and (decided or heap or due):  # (the heap's next event is later than t)
                d = k.advance_due()
                if t < d < math.inf and d not in advance_at:  # one check per due time
                    advance_at.add(d)
                    self._push(d, _ADVANCE, None)
            if touched:
                for name in sorted(touched) if len(touched) > 1 else touched:
                    link = links[name]
                    nxt = link.next_completion()
                    if name in due:  # replaced (stale: the link changed since it was scheduled)
                        events += 1
                        del due[name]
                    if nxt < inf:
                        due[name] = (nxt if nxt > t else t, next(seq), name, link.version)
                touched.clear()
                first = min(due.values()) if due else None
        self.events = events
        return t
