"""DS1 of dheenadayalan2017 on real processes: the study's emulated part.

The six DS1 jobs the study draws (:func:`.dheenadayalan.datasets`, 2 CPU-bound and 4 I/O-bound) become
a real batch spec: one ``mpiexec`` Jacobi job each on the study's platform (12 one-slot nodes, LPS
100 MB/s), every time scaled by ``time_scale`` (wall seconds per spec second) and every size by
``bytes_scale`` (real bytes per spec byte), the load controller's benchmark write fsync'd to the real
disk plus the paced tier's share of it (the tier probe) and its suspensions real SIGSTOP/SIGCONT of a
job's process tree (docs/controller.md).  It runs
under FCFS without and with the controller, one run after the other in the study's driver process
(they share the machine's cores), after the simulated campaign; EASY is not run: all six jobs start at
once on 12 nodes, so EASY gives FCFS's schedule (the simulated DS1 rows show the equality).

Each run's trace is ``OUT/emulated/<name>.h5``; a rerun reuses a trace that is complete, whose jobs all
ended ok and whose spec (its ``spec`` attribute, the work directory left out) is the one it would run,
and reruns it otherwise.  Each run gives Table 1's row in spec seconds (``runtime: emulated``), its jobs
and suspensions (the trace's ``jobs`` and ``actions`` tables), and the same spec simulated
(:func:`iolab.sim.batch.run.run_batch`): its row (``runtime: sim, scale: small``) and every job's
completion time in both runtimes (``compare``).

Scales (:data:`FULL`, :data:`QUICK`) and why each controller parameter differs from §5: see
:class:`EmulatedDS1` and docs/studies.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from iolab.calibration import calibrated
from iolab.middleware.policies.controller.forecast import forecast_skill
from iolab.middleware.policies.controller.response_model import train_and_test
from iolab.emulator.batch.prerun_checks import check_batch_runnable
from iolab.emulator.batch.run import run_batch_emulation
from iolab.sim.batch.run import simulated_makespan
from iolab.emulator.ray_session import RaySession
from iolab.errors import TraceError
from iolab.metrics.batch import run_time, total_completion, total_flow
from iolab.sim.batch.run import run_batch
from iolab.sim.batch.volume_fit import fit_volume_model
from iolab.workloads import load_workload
from iolab.specs import parse_spec
from iolab.specs.batch import BatchExperiment
from iolab.trace import read_trace

__all__ = ["FULL", "QUICK", "VOLUME_LAW", "EmulatedDS1", "RUNS", "emulated_spec", "error_note", "model_report", "run_emulated",
           "spec_digest"]

# the volume's interference law (platform.lps.interference) in every run of the study, simulated and real:
# carretero2020 §3's Lustre use case B (16 % of the aggregate lost with 4 writers), a stated preset, not a fit
VOLUME_LAW = "lustre-plafrim-b"
FORECAST_STEPS = (1, 2, 4, 8)  # samples ahead the forecast is scored at (t = steps x d)


@dataclass(frozen=True)
class EmulatedDS1:
    """How DS1 runs for real: the scales, the jobs' shortening and the controller's parameters.

    ``job_factor`` multiplies every job's runtime, walltime and checkpoint bytes (1: the drawn DS1;
    the quick size shortens the jobs).  ``controller`` holds the parameters that differ from §5
    (spec seconds and spec bytes; the run scales them, ``ControllerSpec.scaled``):

    - ``d`` 45 s (§5: 10 s): one sample is a fsync'd write of ``p x bytes_scale`` real bytes (1 MB),
      3-10 ms on this machine's quiet disk and up to a few hundred ms when it is busy; at ``time_scale``
      0.01 a sample every 10 s would be 0.1 s wall, too close to that.  45 s keeps ws = 3 min
      (beta = 4 instead of 18);
    - the benchmark unit is the tier's (``model: {probe: tier}``, docs/controller.md): its response is
      the real fsync'd write of 1 MB (a few ms wall) plus ``p (k + 1) / (rate f(k + 1))``, ``k`` the jobs
      the paced LPS carries at that instant, the simulated twin's model on the real link's state; the
      real disk alone barely moves with the jobs' paced 10 MB/s, so a disk probe made the controller react
      to the disk's noise (with ``r_threshold`` 0.25 s) and not to the volume;
    - ``r_threshold`` 45 s (§5: 60 s, the response of a 1 GB write on a loaded NetApp filer): under the
      study's law the 1 GB unit on 100 MB/s answers 10 (k + 1) / f(k + 1) s, 33.6 s beside 2 writers,
      47.6 s beside 3, 59.5 s beside all 4 of DS1's I/O jobs, so §5's 60 s is never reached; 45 s calls
      the volume loaded when 3 or 4 of them write at once;
    - ``recent`` 300 s (§5: 60 s): four jobs sharing the paced LPS link write a 1 GB checkpoint every
      ~45 spec s, plus the real run's jitter; 60 s (0.6 s wall) would let a job that waits for the link
      drop out of the candidates now and then;
    - ``omega`` 500 MB (§5: 4000 MB): a Jacobi job keeps only its latest checkpoint on the volume (1 GB:
      ``nodes x memory_per_node``), so with 4000 MB no job would ever be a candidate (measured: a run with
      it suspended nothing); 500 MB still leaves out a job that has written nothing yet.

    ``alpha`` 0.75, ``ws`` and ``t`` 3 min and ``p`` 1 GB are §5's.  The LPS tier's interference law
    is the study's ``VOLUME_LAW`` (a preset of carretero2020 §3), in the real run (the tier's pacing
    gives k writers ``rate x f(k)``) and in its simulated twin alike.
    """

    time_scale: float = 0.01
    bytes_scale: float = 1e-3
    job_factor: float = 1.0
    controller: dict = field(default_factory=lambda: {
        "d": 45.0, "ws": 180.0, "alpha": 0.75, "t": 180.0, "short_sleep": 60.0, "r_threshold": 45.0,
        "p": 1e9, "omega": 5e8, "recent": 300.0, "volumes": ["lps"], "model": {"probe": "tier"}})
    max_wall: float = 900.0  # wall seconds: the emulator refuses a spec whose estimate is longer
    lps_rate: float = 100e6  # the volume (LPS) in bytes/s and its interference law: the study's (its own or the
    lps_law: Any = VOLUME_LAW  # protocol's fitted volume, iolab.studies.dheenadayalan_protocol)

    def check(self) -> "EmulatedDS1":
        if not (0 < self.time_scale <= 1 and 0 < self.bytes_scale <= 1 and 0 < self.job_factor <= 1):
            raise ValueError(f"need 0 < time_scale, bytes_scale, job_factor <= 1, got {asdict(self)}")
        return self


FULL = EmulatedDS1()
# CI: the jobs a tenth as long (200-350 s, 15 GB of checkpoints), half the time scale; the same tier probe
# and threshold: the volume is loaded while 3 or 4 of the I/O jobs write, whatever the disk does
QUICK = EmulatedDS1(time_scale=0.005, job_factor=0.1, max_wall=300.0, controller={
    "d": 50.0, "ws": 150.0, "alpha": 0.75, "t": 100.0, "short_sleep": 50.0, "r_threshold": 45.0,
    "p": 1e9, "omega": 5e8, "recent": 300.0, "volumes": ["lps"], "model": {"probe": "tier"}})

# the real runs, in order: name -> (scheduler, controller)
RUNS = {"ds1-fcfs": ("fcfs", False), "ds1-fcfs-controller": ("fcfs", True)}


def _jobs(jobs: list[dict], factor: float) -> list[dict]:
    out = []
    for j in jobs:
        j = dict(j)
        for k in ("runtime", "walltime", "data"):
            if k in j:
                j[k] = round(float(j[k]) * factor, 3)
        out.append(j)
    return out


def emulated_spec(jobs: list[dict], scheduler: str, controller: bool, settings: EmulatedDS1,
                  seed: int) -> BatchExperiment:
    """DS1 as a real batch spec at ``settings``' scale (the simulator reads the same spec)."""
    return parse_spec({
        "kind": "batch", "name": f"dheenadayalan-ds1-{scheduler}{'-controller' if controller else ''}",
        "seed": seed, "scheduler": scheduler,
        "platform": {"nodes": 12, "memory_per_node": "1GB",
                     "lps": {"rate": settings.lps_rate, "interference": settings.lps_law},
                     "hps": {"rate": "1GB/s", "capacity": "1TB"}, "stage_rate": "1GB/s"},
        "workload": {"source": "inline", "jobs": _jobs(jobs, settings.job_factor)},
        "emulator": {"time_scale": settings.time_scale, "bytes_scale": settings.bytes_scale,
                     "max_wall": settings.max_wall, "progress_every": 10.0},
        "controller": {"enabled": controller, **settings.controller},
    })


def _canonical(spec_json: dict) -> dict:
    """A spec's JSON without what does not change a run: the work directory."""
    spec_json = json.loads(json.dumps(spec_json))
    spec_json.get("emulator", {}).pop("work_dir", None)
    return spec_json


def spec_digest(spec: BatchExperiment | dict) -> str:
    data = spec if isinstance(spec, dict) else spec.model_dump(mode="json")
    return hashlib.sha256(json.dumps(_canonical(data), sort_keys=True).encode()).hexdigest()


def reusable(path: Path, digest: str) -> tuple[Any, str]:
    """``(trace, "")`` if ``path`` is a complete trace of the spec ``digest`` whose jobs all ended ok,
    else ``(None, why not)``."""
    if not path.is_file():
        return None, "no earlier run to reuse"
    try:
        trace = read_trace(path)
    except TraceError as exc:
        return None, str(exc)
    if not trace.attrs.get("complete", False):
        return None, "the trace is incomplete (the run was cut short)"
    spec = trace.attrs.get("spec")
    if not isinstance(spec, dict) or spec_digest(spec) != digest:
        return None, "the trace was made from another spec"
    bad = [r["id"] for r in trace.jobs.rows() if r["status"] != "ok"]
    if bad:
        return None, f"jobs {bad} did not end ok"
    return trace, ""


def _row(name: str, spec: BatchExperiment, records: list[dict], size: int, io: int, suspensions: int,
         runtime: str, hms: Callable[[float], str]) -> dict:
    """Table 1's row of one run (spec seconds): total completion sum(end - start), flow sum(end - submit)."""
    comp = total_completion([r["start"] for r in records], [r["end"] for r in records]) if records else math.nan
    flow = total_flow([r["submit"] for r in records], [r["end"] for r in records]) if records else math.nan
    return {"dataset": "DS1", "size": size, "cpu_jobs": size - io, "io_jobs": io,
            "scheduler": spec.scheduler.label, "controller": spec.controller.enabled, "runtime": runtime,
            "scale": "small", "total_completion": comp, "total_flow": flow,
            "completion_hms": hms(comp) if records else "",
            "flow_hms": hms(flow) if records else "", "suspensions": suspensions, "run": name}


def error_note(em: dict, quick: bool) -> str:
    """Why the simulated twin misses the real runs by as much as it does, from what the runs measured:
    the jobs' launch (wall seconds, in spec seconds at the run's time scale) against their real time."""
    ts = em["settings"]["time_scale"]
    launch, run = [], []
    for r in em["runs"]:
        try:
            t = read_trace(r["trace"])
        except Exception:  # a run that left no trace: its row says why
            continue
        launch += [v / ts for v in (t.attrs.get("launch_overhead") or {}).values()]
        rt = run_time(t.jobs["start"], t.jobs["end"])
        run += rt[~np.isnan(rt)].tolist()
    worst = max((r.get("sim_max_abs_error", 0.0) for r in em["runs"]), default=0.0)
    if not launch or not run or worst < 0.2:
        return ""
    mean_launch, mean_run = sum(launch) / len(launch), sum(run) / len(run)
    text = (f"why the twin as written is off by up to {100 * worst:.0f} %: each real job spent {mean_launch:,.0f} spec s "
            f"({mean_launch * ts:.1f} s wall) just starting its processes, {100 * mean_launch / mean_run:.0f} % of "
            f"its {mean_run:,.0f} spec s, and more at its exit and per I/O phase; the spec as written has none of "
            "these costs, the twin fitted to the run models the ones it measured")
    if quick:
        text += (". At the quick size (jobs a tenth as long, time scale 0.005) this fixed cost dominates: the quick "
                 "study checks the pipeline, not the model")
    return text + "."


def _peak(trace) -> dict:
    """The benchmark unit's highest response (spec seconds) and the most writers a sample saw, from the
    trace's ``samples`` (-1 for both when the controller took none: it was off, or started too late)."""
    s = trace.samples
    if not len(s):
        return {"max_response": -1.0, "max_writers": -1}
    return {"max_response": float(max(s["response"])), "max_writers": int(max(s["writers"]))}


def _trace_tables(trace, data: dict[str, float]) -> tuple[list[dict], list[dict]]:
    acts = list(trace.actions.rows())
    jobs = [{"job": r["id"], "io": r["id"] in data, "data": data.get(r["id"], 0.0), "submit": float(r["release"]),
             "start": float(r["start"]), "end": float(r["end"]), "status": r["status"],
             "suspensions": sum(1 for a in acts if a["job"] == r["id"])} for r in trace.jobs.rows()]
    susp = [{"job": a["job"], "start": float(a["suspend"]), "end": float(a["resume"])} for a in acts]
    return jobs, susp


def _fitted_twin(spec: BatchExperiment, trace) -> BatchExperiment | None:
    """The spec with the real run's own costs (launch, exit, I/O phase: ``platform.overheads``) and, when the
    controller sampled the volume, its volume model fitted to those samples (line and spread,
    ``iolab controller fit``): in-sample, what is left of the difference once the machine is known."""
    cal = trace.attrs.get("calibration")
    if not (isinstance(cal, dict) and isinstance(cal.get("wall"), dict)):
        return None
    twin = calibrated(spec, cal)
    samples = [r for r in trace.samples.rows() if r["volume"] == "lps"]
    if spec.controller.enabled and len(samples) >= 2:
        try:
            fit = fit_volume_model([r["writers"] for r in samples], [r["response"] for r in samples],
                                   spec.controller.p)
        except ValueError:  # no usable sample: the twin keeps the spec's volume
            return twin
        data = twin.model_dump(mode="json")
        data["controller"]["model"] = fit.spec()
        twin = type(spec).model_validate(data)
    return twin


def _err(sim: float, real: float) -> float:
    return (sim - real) / real if real > 0 and sim == sim else math.nan


def _error_stats(rows: list[dict], column: str, prefix: str) -> dict:
    errs = [abs(r[column]) for r in rows if r[column] == r[column]]
    return {f"{prefix}_max_abs_error": max(errs) if errs else math.nan,
            f"{prefix}_mean_abs_error": sum(errs) / len(errs) if errs else math.nan}


def _sim_tables(rec, data: dict[str, float]) -> list[dict]:
    return [{"job": s.id, "io": s.id in data, "submit": float(s.queued.submit), "start": float(s.start),
             "end": float(s.end), "suspensions": len(s.suspensions)} for s in rec.jobs]


def run_emulated(out: Path, jobs: list[dict], seed: int, settings: EmulatedDS1 = FULL, *,
                 hms: Callable[[float], str] = str, say: Callable[[str], None] | None = None,
                 progress: bool = True, keep_work: bool = False) -> dict:
    """Run (or reuse) DS1's real runs into ``out/emulated/``, one after the other; simulate the same specs.

    Returns ``{"rows", "jobs", "suspensions", "compare", "runs"}``: Table 1's rows (emulated and the
    same spec simulated), the real runs' jobs and suspensions, every job's completion time in both
    runtimes, and per run its trace, wall time, whether it was reused, its status and error.  A failed
    run gives a row with ``status: failed`` and its ``error``; the other runs go on."""
    settings.check()
    say = say or (lambda msg: print(msg, file=sys.stderr, flush=True))
    folder = out / "emulated"
    folder.mkdir(parents=True, exist_ok=True)
    data = {j["id"]: float(j["data"]) * settings.job_factor for j in jobs if "data" in j}
    res: dict[str, Any] = {"rows": [], "jobs": [], "suspensions": [], "compare": [], "runs": []}
    sampled = []  # the traces with controller samples: the regression and forecast are measured on them
    session = None
    try:
        for i, (name, (scheduler, on)) in enumerate(RUNS.items(), 1):
            spec = emulated_spec(jobs, scheduler, on, settings, seed)
            digest = spec_digest(spec)
            path = folder / f"{name}.h5"
            what = f"DS1 {scheduler.upper()} {'with' if on else 'without'} the controller"
            trace, why = reusable(path, digest)
            t0 = time.perf_counter()
            run = {"run": name, "trace": str(path), "spec_sha256": digest, "reused": trace is not None,
                   "status": "ok", "error": ""}
            if trace is not None:
                say(f"emulated run {i}/{len(RUNS)} ({name}: {what}): reusing {path}")
            else:
                say(f"emulated run {i}/{len(RUNS)} ({name}: {what}), real processes, time scale "
                    f"{settings.time_scale:g}, bytes scale {settings.bytes_scale:g} ({why})")
                try:
                    # what the emulator checks first (sizes, wall estimate, mpiexec), before Ray starts
                    check_batch_runnable(spec, load_workload(spec), path.with_suffix(".work"), str(path),
                                         simulated_makespan)
                    if session is None:
                        session = RaySession.open()  # one local Ray for the runs (they start none of their own)
                    trace = _run_one(spec, path, progress, keep_work)
                except KeyboardInterrupt:
                    raise
                except Exception as exc:  # a failed run loses neither the simulated results nor the other run
                    run.update(status="failed", error=f"{type(exc).__name__}: {exc}")
                    say(f"emulated run {name} failed: {run['error']}")
            run["wall_seconds"] = (time.perf_counter() - t0 if not run["reused"]
                                   else float(trace.attrs.get("wall_seconds", math.nan)))
            sim = run_batch(spec, strict=False)  # the same spec on the simulator: the real run's twin
            sim_jobs = _sim_tables(sim, data)
            n, io = len(jobs), len(data)
            sim_row = _row(name, spec, sim_jobs, n, io, sum(j["suspensions"] for j in sim_jobs), "sim", hms)
            res["rows"].append({**sim_row, "status": "ok", "error": ""})
            if trace is None:
                res["rows"].append({**_row(name, spec, [], n, io, 0, "emulated", hms), "status": "failed",
                                    "error": run["error"]})
                res["runs"].append(run)
                continue
            if len(trace.samples):
                sampled.append((name, trace))
            real_jobs, susp = _trace_tables(trace, data)
            bad = [j["job"] for j in real_jobs if j["status"] != "ok"]
            if bad:
                run.update(status="failed",
                           error=f"jobs {bad} did not end ok (logs in {path.with_suffix('.work') / 'logs'})")
            res["rows"].append({**_row(name, spec, real_jobs, n, io, len(susp), "emulated", hms),
                                **_peak(trace), "status": run["status"], "error": run["error"]})
            label = {"dataset": "DS1", "scheduler": scheduler, "controller": on, "runtime": "emulated",
                     "scale": "small"}
            res["jobs"] += [{**label, **j} for j in real_jobs]
            res["suspensions"] += [{**label, **x} for x in susp]
            by_sim = {j["job"]: j for j in sim_jobs}
            twin = _fitted_twin(spec, trace)
            by_fit = {j["job"]: j for j in _sim_tables(run_batch(twin, strict=False), data)} if twin else {}
            for j in real_jobs:
                s, c = by_sim[j["job"]], by_fit.get(j["job"])
                # each job's completion time (its run time, end - start) in the three runs
                real_c, sim_c = float(run_time(j["start"], j["end"])), float(run_time(s["start"], s["end"]))
                fit_c = float(run_time(c["start"], c["end"])) if c else math.nan
                res["compare"].append({
                    "run": name, "controller": on, "job": j["job"], "io": j["io"], "real_start": j["start"],
                    "real_end": j["end"], "real_completion": real_c, "sim_start": s["start"], "sim_end": s["end"],
                    "sim_completion": sim_c, "error": _err(sim_c, real_c), "fitted_completion": fit_c,
                    "fitted_error": _err(fit_c, real_c), "real_suspensions": j["suspensions"],
                    "sim_suspensions": s["suspensions"],
                    "fitted_suspensions": c["suspensions"] if c else -1})
            mine = [c for c in res["compare"] if c["run"] == name]
            run.update(jobs=len(real_jobs), suspensions=len(susp),
                       sim_suspensions=sum(s["suspensions"] for s in sim_jobs),
                       fitted_suspensions=sum(c["suspensions"] for c in by_fit.values()) if by_fit else -1,
                       **_error_stats(mine, "error", "sim"), **_error_stats(mine, "fitted_error", "fitted"),
                       monitoring=trace.attrs.get("monitoring", {}))
            res["runs"].append(run)
    finally:
        if session is not None:
            session.close()
    res["model"] = model_report(sampled, seed)
    return res


def model_report(traces: list[tuple[str, Any]], seed: int = 0) -> dict:
    """§4.2 measured on real runs' samples: the random forest's held-out accuracy (the first 75 % of
    each ``(name, trace)``'s samples train it, the rest test it: :func:`iolab.middleware.policies.controller.response_model.train_and_test`)
    and the AR(3) forecast's error t ahead against persistence on each trace's measured response
    (:func:`iolab.middleware.policies.controller.forecast.forecast_skill`; t = steps x the spec's d, the state against its
    r_threshold).  What cannot be measured (too few samples, no counter correlating) says why."""
    out: dict[str, Any] = {"traces": len(traces), "regression": {}, "forecast": []}
    if not traces:
        out["regression"] = {"error": "no real run with controller samples"}
        return out
    try:
        _, out["regression"] = train_and_test([t.samples.columns for _, t in traces], seed=seed)
    except ValueError as exc:
        out["regression"] = {"error": str(exc)}
    for name, t in traces:
        c = t.attrs["spec"]["controller"]
        d, thr = float(c["d"]), float(c["r_threshold"])
        try:
            rows = forecast_skill(t.samples.columns["response"], FORECAST_STEPS, threshold=thr)
        except ValueError as exc:
            out["forecast"].append({"run": name, "error": str(exc)})
            continue
        out["forecast"] += [{"run": name, "t": r["steps"] * d, **r} for r in rows]
    return out


def _run_one(spec: BatchExperiment, path: Path, progress: bool, keep_work: bool):
    """One real run into ``path``; its work directory (the checkpoints: ~150 MB per I/O job at the full
    scale) is removed when every job ended ok, kept otherwise (the jobs' logs are there)."""
    work = path.with_suffix(".work")
    shutil.rmtree(work, ignore_errors=True)  # a run cut short left its files: start clean
    trace = run_batch_emulation(spec, makespan_of=simulated_makespan, out=path, work_dir=work, progress=progress, source=str(path))
    if not keep_work and all(r["status"] == "ok" for r in trace.jobs.rows()):
        shutil.rmtree(work, ignore_errors=True)
    return trace
