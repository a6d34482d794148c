"""A Gymnasium environment for learned batch schedulers, built on a batch spec: iolab's simulator (its kernel,
tiers, I/O nodes and load controller) on one side, the agent on the other.

    env = BatchSchedulingEnv("examples/kth-sp2-easy.yaml", k=16)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

An episode is one run of the spec's workload (SWF, Feitelson, lackner2019's I/O model, inline jobs...), or, with
``window=N``, of N consecutive jobs of it starting at a job drawn at each reset.  The seed of ``reset(seed=...)``
seeds the episode's draws (the window, and the workload's own seed: a Feitelson workload or an I/O model draws
from it).  Observation and actions: :mod:`.observation` (the first ``k`` waiting jobs, free nodes and HPS, tier and
I/O-node loads; start the job of a slot, on LPS or with ``tiers`` on HPS, or wait).  A step is one decision: the
agent is asked only when one of the first ``k`` jobs can start now, again after each start at the same instant,
and the simulation goes on to the next such decision after a wait.

Reward: minus the bounded slowdown of the jobs that ended since the last step, ``max(1, (end - submit) /
max(end - start, 10 s))`` each: an episode's return is minus the sum of its jobs' bounded slowdowns (its mean is
``-return / jobs``, the figure ``iolab report`` prints).  ``info`` holds the time, ``action_mask`` (the actions that
do something now; :meth:`action_masks` too) and ``invalid`` (the action could not be done: it waited); the last
step's ``info`` the episode's ``jobs``, ``mean_bsld`` and ``makespan``, and ``last_run`` its simulator's record
(each job's start and end).  Once this module is imported, ``gymnasium.make("iolab/BatchScheduling-v0", spec=...,
k=...)`` builds one too.

How it is driven: the simulator's engine is an event loop that calls the scheduler's ``decide`` at each change.
The environment runs it in a thread of its own with an :class:`~.agent.AgentScheduler` whose agent hands each
observation to ``step``'s caller and waits for the action (two queues, one item each way per step: the threads
take turns, never run together, so a seed gives the same episode).  The kernel, the guard's rules and strict mode
are the simulator's own, not a copy.
"""

from __future__ import annotations

import queue
import threading
from functools import lru_cache

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from iolab.metrics.batch import BSLD_TAU
from iolab.sim.batch.run import run_batch
from iolab.specs.batch import BatchExperiment
from iolab.specs.load import load_spec
from iolab.workloads import load_workload

from iolab.gym.agent import AgentScheduler
from iolab.gym.observation import JOB_FEATURES, View


class _Abandoned(BaseException):
    """The episode was left (a reset or close before its end): the simulation thread unwinds."""


class _StepScheduler(AgentScheduler):
    """The environment's side of the simulation thread: each observation goes out, each action comes back."""

    sees_every_change = True  # asked at every job end too: the reward's ends are exact

    def __init__(self, episode: "_Episode", **kw):
        super().__init__(agent=lambda obs: None, **kw)
        self.episode = episode
        self.name = "gym-agent"
        self.started: dict[str, tuple[float, float]] = {}  # running job -> (submit, start)
        self.reward = 0.0  # minus the bounded slowdowns accrued since the last observation
        self.ended = 0
        self.bsld = 0.0

    def decide(self, snap):
        running = {r.id for r in snap.running}
        now = snap.now
        for job in [j for j in self.started if j not in running]:
            submit, start = self.started.pop(job)
            b = max(1.0, (now - submit) / max(now - start, BSLD_TAU))
            self.reward -= b
            self.bsld += b
            self.ended += 1
            self.io_rates.pop(job, None)
        return super().decide(snap)

    def started_job(self, job, now: float) -> None:
        self.started[job.id] = (job.submit, now)

    def act(self, observation, view: View):
        reward, self.reward = self.reward, 0.0
        mask = self.encoding.mask(view)
        action = self.episode.ask(observation, reward, {"time": view.snap.now, "action_mask": mask})
        if self.encoding.start_of(view, action) is None and action != self.encoding.wait:
            self.episode.invalid = True
        return action


class _Episode:
    """One run of the simulator in its own thread, handing each observation out and taking each action in."""

    def __init__(self, spec: BatchExperiment, jobs: list, encoding_kw: dict, strict: bool | None):
        self.out: queue.SimpleQueue = queue.SimpleQueue()
        self.back: queue.SimpleQueue = queue.SimpleQueue()
        self.invalid = False
        self.record = None  # the simulator's record once the episode ended (its jobs' starts and ends)
        self.scheduler = _StepScheduler(self, **encoding_kw)
        self.experiment, self.jobs, self.strict = spec, jobs, strict
        self.thread = threading.Thread(target=self._run, name="iolab-gym-episode", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            rec = run_batch(self.experiment, self.jobs, scheduler=self.scheduler, rows=False, phases="none",
                            strict=self.strict, node_ids=False)
            self.record = rec
            ends = [s.end for s in rec.jobs]
            self.out.put(("done", {"makespan": max(ends) - min(s.queued.submit for s in rec.jobs)}))
        except _Abandoned:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the caller of step
            self.out.put(("error", exc))

    def ask(self, observation, reward: float, info: dict):
        self.out.put(("obs", (observation, reward, info)))
        action = self.back.get()
        if action is _Abandoned:
            raise _Abandoned()
        return action

    def next(self):
        kind, payload = self.out.get()
        if kind == "error":
            raise payload
        return kind, payload

    def act(self, action):
        self.invalid = False
        self.back.put(action)
        return self.next()

    def abandon(self) -> None:
        if self.thread.is_alive():
            self.back.put(_Abandoned)
            self.thread.join(30)


@lru_cache(maxsize=4)
def _jobs_of(spec_json: str) -> tuple:
    return tuple(load_workload(BatchExperiment.model_validate_json(spec_json)))


class BatchSchedulingEnv(gym.Env):
    """The batch scheduling environment of ``spec`` (a path or a :class:`BatchExperiment`): ``k`` job slots,
    ``tiers`` (the agent chooses LPS or HPS), ``window`` (jobs per episode; None: all), ``idle_wait`` (seconds the
    simulation waits when the agent leaves jobs waiting on an idle machine), ``strict`` (the simulator's checks;
    default ``IOLAB_STRICT``)."""

    metadata = {"render_modes": []}

    def __init__(self, spec: str | BatchExperiment, k: int = 16, tiers: bool = False, window: int | None = None,
                 idle_wait: float = 60.0, strict: bool | None = None):
        self.experiment = load_spec(str(spec)) if not isinstance(spec, BatchExperiment) else spec
        if getattr(self.experiment, "kind", None) != "batch":
            raise ValueError(f"{spec}: a batch spec (kind: batch) is needed")
        if window is not None and not (isinstance(window, int) and window >= 1):
            raise ValueError(f"window: jobs per episode, an integer >= 1, got {window!r}")
        p = self.experiment.platform
        self.encoding_kw = {"k": k, "tiers": tiers, "io_nodes": p.io_nodes or 1, "idle_wait": idle_wait}
        self.window, self.strict = window, strict
        probe = AgentScheduler(lambda obs: 0, **self.encoding_kw)
        self.encoding = probe.encoding
        inf = np.finfo(np.float32).max  # (unbounded: waits and walltimes have no upper limit)
        self.observation_space = spaces.Dict({
            "jobs": spaces.Box(0.0, inf, (k, len(JOB_FEATURES)), np.float32),
            "machine": spaces.Box(0.0, inf, (3,), np.float32),
            "tiers": spaces.Box(0.0, inf, (2,), np.float32),
            "io_nodes": spaces.Box(0.0, inf, (max(p.io_nodes or 1, 1),), np.float32)})
        self.action_space = spaces.Discrete(self.encoding.actions)
        self._episode: _Episode | None = None
        self.last_run = None  # the last finished episode's record (iolab.sim.batch.engine.BatchRecord: .jobs)
        self._last: dict | None = None
        self._mask = np.ones(self.encoding.actions, dtype=np.int8)

    # -- the episode's jobs ----------------------------------------------------------------------
    def _episode_jobs(self) -> tuple[BatchExperiment, list]:
        seed = int(self.np_random.integers(0, 2**31 - 1))
        spec = self.experiment.model_copy(update={"seed": seed})
        jobs = list(_jobs_of(spec.model_copy(update={"seed": self._workload_seed(seed)}).model_dump_json()))
        if self.window is not None and self.window < len(jobs):
            jobs.sort(key=lambda j: j.submit)
            first = int(self.np_random.integers(0, len(jobs) - self.window + 1))
            jobs = jobs[first:first + self.window]
        return spec, jobs

    def _workload_seed(self, seed: int) -> int:
        """The seed the workload is drawn with: the episode's, where the workload draws from it."""
        w = self.experiment.workload
        draws = w.source == "feitelson" or getattr(w, "io", None) is not None
        return seed if draws else self.experiment.seed

    # -- Gymnasium's API ----------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.close()
        spec, jobs = self._episode_jobs()
        self._episode = _Episode(spec, jobs, self.encoding_kw, self.strict)
        kind, payload = self._episode.next()
        if kind == "done":  # no decision at all (every job started alone?): an episode of no step
            return self._terminal(), {"episode": payload}
        obs, _, info = payload
        self._last, self._mask = obs, info["action_mask"]
        return obs, info

    def step(self, action):
        if self._episode is None:
            raise RuntimeError("step() before reset()")
        ep = self._episode
        kind, payload = ep.act(action)
        invalid = ep.invalid
        if kind == "done":
            s = ep.scheduler
            self._episode = None
            self.last_run = ep.record
            info = {"invalid": invalid, "jobs": s.ended, "mean_bsld": s.bsld / max(s.ended, 1), **payload}
            return self._terminal(), float(s.reward), True, False, info
        obs, reward, info = payload
        self._last, self._mask = obs, info["action_mask"]
        info["invalid"] = invalid
        return obs, float(reward), False, False, info

    def action_masks(self) -> np.ndarray:
        """The actions that do something at the current decision (for masked policies)."""
        return self._mask.astype(bool)

    def _terminal(self) -> dict:
        obs = {k: np.zeros(s.shape, dtype=np.float32) for k, s in self.observation_space.spaces.items()}
        obs["machine"][:2] = 1.0  # every node and byte free
        return obs

    def close(self) -> None:
        if self._episode is not None:
            self._episode.abandon()
            self._episode = None


ENV_ID = "iolab/BatchScheduling-v0"
if ENV_ID not in gym.registry:  # gymnasium.make(ENV_ID, spec="my.yaml", k=16) builds one too
    gym.register(id=ENV_ID, entry_point="iolab.gym.env:BatchSchedulingEnv")

__all__ = ["ENV_ID", "BatchSchedulingEnv"]
