"""Run a campaign's runs as Ray tasks, stream their records, resume after a stop.

The output folder holds:

- ``campaign.json``: the campaign and its expanded runs (id, index, parameters),
  rewritten atomically at every start;
- ``journal.jsonl``: one line per finished run, appended and fsynced as results
  arrive (the source of truth; see :mod:`.journal`);
- ``results.h5``: the table of :mod:`.results`, regenerated atomically from
  the journal every ``flush_every`` seconds and at the end.

A rerun skips every run with a record (``retry_failed`` reruns the failed
ones); runs that were in flight when the driver stopped have no record and run
again.  At most ``workers`` tasks are in flight at a time.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TextIO

from iolab.atomic import atomic_write_text, check_output
from iolab.errors import RunError, SpecError
from iolab.emulator.output_lock import hold_outputs
from iolab.emulator.ray_session import prepare_local_ray, unreachable, without_dashboard
from iolab.signals import raise_interrupt
from iolab.specs.load import read_document
from iolab.campaign import results as R
from iolab.campaign.expand import Run, load_runs
from iolab.campaign.journal import Journal
from iolab.campaign.progress import Progress
from iolab.campaign.runtimes import resolve
from iolab.campaign.study import StudyCampaign, StudyRun, execute_study, is_study_document, load_study
from iolab.campaign.task import execute, failed_record


@dataclass
class SweepSummary:
    name: str
    out: Path
    total: int
    skipped: int
    executed: int
    ok: int
    failed: int
    wall_seconds: float  # the whole call, Ray start and stop included
    workers: int
    interrupted: bool = False
    startup_seconds: float = 0.0  # starting or joining Ray
    run_seconds: float = 0.0  # first submission to last result

    @property
    def runs_per_second(self) -> float:
        """Throughput of the execution phase (Ray start and stop excluded)."""
        return self.executed / self.run_seconds if self.run_seconds > 0 else float("nan")


def write_manifest(out: Path, campaign, source: str, runs: list[Run]) -> dict[str, Any]:
    manifest = {"name": campaign.name, "source": str(source), "spec": campaign.model_dump(mode="json"),
                "runs": [{"run_id": r.run_id, "index": r.index, "params": r.params} for r in runs]}
    atomic_write_text(out / R.MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


class _Ray:
    """Start a local Ray, join a cluster, or reuse the connection the caller made."""

    def __init__(self, address: str | None, workers: int | None, real_runs: bool = False):
        import ray  # lazy: Ray only for a sweep with --ray

        self.ray = ray
        self.owned = not ray.is_initialized()
        if self.owned:
            if address:
                why = unreachable(address)  # ray.init would retry an address that never answers for minutes
                if why:
                    raise RunError(f"--address {address}: cannot join Ray: {why}")
                try:
                    ray.init(address=address, log_to_driver=False, logging_level="ERROR")
                except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
                    raise RunError(f"--address {address}: cannot join Ray: {type(exc).__name__}: {exc}") from None
            else:
                if real_runs:  # the priorities `iolab emulate` gives the apps and actors (not Ray's nice 15)
                    prepare_local_ray()
                without_dashboard()  # Ray 2.60 starts its API server even with include_dashboard=False
                ray.init(address="local", num_cpus=workers or os.cpu_count() or 1,
                         include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        self.where = address or ("local" if self.owned else "existing connection")

    def cpus(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def close(self) -> None:
        if self.owned:
            self.ray.shutdown()


def run_label(run) -> str:
    """What a run is, as a person names it: ``policy x workload x seed N`` (a mapping other than
    First-Fit and a replicate other than the first added); the run id when the run has no params."""
    p = getattr(run, "params", None) or {}
    what = p.get("policy") or p.get("scheduler")
    if not what and not p.get("workload"):
        return run.run_id
    parts = [str(what or "?"), str(p.get("workload", "?")), f"seed {p.get('seed', '?')}"]
    if p.get("mapping") not in (None, "first-fit"):
        parts.insert(2, str(p["mapping"]))
    if p.get("replicate"):
        parts.append(f"replicate {p['replicate']}")
    return " \u00d7 ".join(parts)


def sweep_snapshot(name: str, summary: "SweepSummary", total: int, pending: dict, since: dict,
                   t_run: float) -> dict:
    """What a live view of a sweep shows now (plain data): runs done / failed / running of
    this invocation, elapsed seconds, and per worker slot the run it executes."""
    now = time.perf_counter()
    running = sorted(({"slot": since[ref][0], "run": run_label(run), "run_id": run.run_id,
                       "seconds": now - since[ref][1]}
                      for ref, run in pending.items() if ref in since), key=lambda r: r["slot"])
    return {"kind": "sweep", "name": name, "total": total, "done": summary.executed, "ok": summary.ok,
            "failed": summary.failed, "skipped": summary.skipped, "elapsed": now - t_run, "running": running}


def run_campaign(campaign_path: str | Path, out: str | Path | None = None, *, workers: int | None = None,
                 address: str | None = None, mode: str | None = None, traces: str | Path | None = None,
                 retry_failed: bool = False, flush_every: float = 10.0, progress: bool | Callable = True,
                 stream: TextIO | None = None, stop_on_sigterm: bool = False,
                 max_runs: int | None = None, use_ray: bool = True) -> SweepSummary:
    """Run every unfinished run of the campaign file; return what happened.

    The campaign is expanded and checked before Ray starts (a bad file raises
    :class:`~iolab.errors.SpecError`).  ``out`` defaults to ``results/<name>``.
    ``stop_on_sigterm`` (main thread only) turns SIGTERM (kill, scancel) into
    KeyboardInterrupt once Ray is up, so both stop the same clean way: journal
    closed, results.h5 written, pending tasks cancelled, Ray shut down.
    A study campaign (a ``study:`` key, :mod:`.study`) runs the study's runs.
    ``use_ray=False`` runs them one after the other in this process (same
    journal, same results; for tests and measurements).
    """
    stream = stream or sys.stderr
    if is_study_document(read_document(campaign_path)):
        campaign, runs = load_study(campaign_path, max_runs=max_runs)
        return run_study_runs(campaign, runs, str(campaign_path), out, workers=workers, address=address,
                              retry_failed=retry_failed, flush_every=flush_every, progress=progress, stream=stream,
                              stop_on_sigterm=stop_on_sigterm, use_ray=use_ray)
    campaign, runs = load_runs(campaign_path, mode=mode, max_runs=max_runs)
    try:
        resolve(campaign.runtime)
    except RunError as exc:
        raise SpecError(str(campaign_path), [("runtime", exc.message)]) from None
    out = check_output(Path(out) if out else Path("results") / campaign.name, [campaign_path], option="--out",
                       folder=True)
    if traces:
        check_output(traces, [campaign_path], option="--traces", folder=True)
    out.mkdir(parents=True, exist_ok=True)
    with hold_outputs([out], "campaign output"):  # one sweep per output folder: no run executed twice
        manifest = write_manifest(out, campaign, str(campaign_path), runs)
        traces_dir = str(Path(traces).resolve()) if traces else None
        if traces_dir:
            Path(traces_dir).mkdir(parents=True, exist_ok=True)
        return drive(campaign.name, out, manifest, runs, execute, lambda recs: R.build(manifest, recs),
                     cpus_per_run=campaign.cpus_per_run, workers=workers, address=address, traces_dir=traces_dir,
                     retry_failed=retry_failed, flush_every=flush_every, progress=progress, stream=stream,
                     stop_on_sigterm=stop_on_sigterm, use_ray=use_ray, real_runs=campaign.runtime == "emulate")


def run_study_runs(campaign: StudyCampaign, runs: list[StudyRun], source: str, out: str | Path | None = None, *,
                   workers: int | None = None, address: str | None = None, retry_failed: bool = False,
                   flush_every: float = 10.0, progress: bool | Callable = True, stream: TextIO | None = None,
                   stop_on_sigterm: bool = False, use_ray: bool = True) -> SweepSummary:
    """Run a study campaign's unfinished runs (expanded by :func:`.study.expand_study`) like a sweep."""
    out = check_output(Path(out) if out else Path("results") / campaign.name, [source] if source != "-" else [],
                       option="--out", folder=True)
    out.mkdir(parents=True, exist_ok=True)
    # one run per output folder: no run executed twice (`iolab study` already holds it for the whole study)
    with hold_outputs([out], "study output", reuse_own=True):
        manifest = write_manifest(out, campaign, source, runs)
        manifest["study"] = campaign.study
        atomic_write_text(out / R.MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))
        return drive(campaign.name, out, manifest, runs, execute_study, lambda recs: R.build_study(manifest, recs),
                     cpus_per_run=campaign.cpus_per_run, workers=workers, address=address,
                     retry_failed=retry_failed, flush_every=flush_every, progress=progress, stream=stream,
                     stop_on_sigterm=stop_on_sigterm, use_ray=use_ray)


def drive(name: str, out: Path, manifest: dict[str, Any], runs: list, task: Callable[..., dict[str, Any]],
          build: Callable[[dict[str, dict[str, Any]]], R.Results], *, cpus_per_run: float = 1.0,
          workers: int | None = None, address: str | None = None, traces_dir: str | None = None,
          retry_failed: bool = False, flush_every: float = 10.0, progress: bool | Callable = True,
          stream: TextIO | None = None, stop_on_sigterm: bool = False, use_ray: bool = True,
          real_runs: bool = False) -> SweepSummary:
    """The loop every campaign goes through: skip journaled runs, run the rest as Ray tasks
    (``task(run.payload(), traces_dir) -> record``), journal each record, keep results.h5 fresh.
    ``real_runs``: the tasks start real apps; a local Ray is started as ``iolab emulate`` starts it."""
    stream = stream or sys.stderr
    journal = Journal(out / R.JOURNAL, nested_params="study" in manifest)
    records = journal.load()
    if journal.ignored:
        print(f"journal: ignored {journal.ignored} unreadable line(s) of {journal.path} (a run stopped while "
              "being recorded, or an edit); those runs will run again", file=stream)
    todo = [r for r in runs if r.run_id not in records
            or (retry_failed and records[r.run_id]["status"] != "ok")]
    skipped = len(runs) - len(todo)

    def flush() -> None:
        R.write_h5(build(records), out / R.RESULTS)

    summary = SweepSummary(name, out, len(runs), skipped, 0, 0, 0, 0.0, workers or 0)
    if not todo:
        flush()
        print(f"{name}: all {len(runs)} runs already done; results in {out / R.RESULTS}", file=stream)
        return summary

    t0 = time.perf_counter()
    # SIGTERM stops the run from here on, joining Ray included; ray.init installs its own handler: ours again after
    previous = signal.signal(signal.SIGTERM, raise_interrupt) if stop_on_sigterm else None
    try:
        ray_ = _Ray(address, workers, real_runs) if use_ray else None
    except BaseException:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        raise
    if stop_on_sigterm:
        signal.signal(signal.SIGTERM, raise_interrupt)
    summary.startup_seconds = time.perf_counter() - t0
    in_flight = (workers or ray_.cpus()) if ray_ else 1
    summary.workers = in_flight
    where = f"on Ray ({ray_.where}, {in_flight} in flight)" if ray_ else "in this process, one at a time"
    print(f"{name}: {len(runs)} runs, {skipped} done earlier, {len(todo)} to run {where}",
          file=stream, flush=True)
    if callable(progress):  # a sink factory (total, stream), e.g. iolab.cli.live.SweepView
        prog = progress(len(todo), stream)
    else:
        prog = Progress(len(todo), "runs", stream=stream) if progress else None
    live = getattr(prog, "live", False)  # the sink draws snapshots: sweep_snapshot() at each change
    since: dict[Any, tuple[int, float]] = {}  # in-flight ref (or the run in this process) -> (worker slot, start)
    pending: dict[Any, Any] = {}

    def show() -> None:
        if live:
            prog.show(sweep_snapshot(name, summary, len(todo), pending, since, t_run))
    queue = iter(todo)
    last_flush = time.monotonic()
    journal.open()
    t_run = time.perf_counter()

    def record(run, rec: dict[str, Any]) -> None:
        journal.append(rec)
        records[run.run_id] = rec
        summary.executed += 1
        if rec["status"] == "ok":
            summary.ok += 1
        else:
            summary.failed += 1
        if prog:
            prog.step(f"({summary.failed} failed)" if summary.failed else "")

    try:
        if ray_ is None:
            for run in queue:
                if live:
                    pending[run.run_id], since[run.run_id] = run, (0, time.perf_counter())
                    show()
                rec = task(run.payload(), traces_dir)
                pending.pop(run.run_id, None)
                since.pop(run.run_id, None)
                record(run, rec)
                if time.monotonic() - last_flush >= flush_every:
                    flush()
                    last_flush = time.monotonic()
        else:
            remote = ray_.ray.remote(task).options(num_cpus=cpus_per_run, max_retries=1)
            exhausted = False
            while pending or not exhausted:
                while not exhausted and len(pending) < in_flight:
                    run = next(queue, None)
                    if run is None:
                        exhausted = True
                        break
                    ref = remote.remote(run.payload(), traces_dir)
                    pending[ref] = run
                    if live:
                        used = {slot for slot, _ in since.values()}
                        since[ref] = (min(set(range(len(used) + 1)) - used), time.perf_counter())
                if not pending:
                    break
                show()
                ready, _ = ray_.ray.wait(list(pending), num_returns=1, timeout=1.0 if live else None)
                for ref in ready:
                    run = pending.pop(ref)
                    since.pop(ref, None)
                    try:
                        rec = ray_.ray.get(ref)
                    except Exception as exc:  # the task itself died (worker crash, lost node)
                        rec = failed_record(run.payload(), f"{type(exc).__name__}: {exc}")
                    record(run, rec)
                if time.monotonic() - last_flush >= flush_every:
                    flush()
                    last_flush = time.monotonic()
    except KeyboardInterrupt:
        summary.interrupted = True
        # a Ray this sweep started (or joined) is shut down below, which ends its job's tasks; a
        # force-cancel racing the tasks' completion once crashed Ray's core worker in the driver
        # (a CHECK in TaskManager::CompletePendingTask: exit 1, not 130), so only a Ray the caller
        # keeps running has its tasks cancelled
        for ref in pending if ray_ is not None and not ray_.owned else ():
            try:
                ray_.ray.cancel(ref, force=True)
            except Exception:
                pass
        raise
    finally:
        summary.run_seconds = time.perf_counter() - t_run
        if live:
            show()
            prog.close()
        journal.close()
        records.update(journal.load())  # the journal is the truth (a signal may fall between append and here)
        flush()
        if ray_ is not None:
            ray_.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        summary.wall_seconds = time.perf_counter() - t0
    return summary
