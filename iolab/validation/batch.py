"""``iolab validate`` on a batch spec: run it for real, simulate it with and without the measured costs, compare.

1. emulate the spec (:func:`iolab.emulator.batch.run.run_batch_emulation`), or read the
   trace of an earlier run (``traces``: ``DIR/<scheduler>.h5``, checked to be a complete
   real batch run of the same platform, workload and scheduler);
2. the calibration: another run's (``calibration``, a trace file: the honest test, a spec
   other than the one calibrated on) or, by default, this run's own (in-sample: the report
   says so);
3. simulate the spec twice: as written (``platform.overheads`` of the spec) and calibrated
   (:func:`iolab.calibration.calibrated`);
4. compare each with the real run job by job (:func:`.batch_comparison.compare_batch`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

from iolab.calibration import LINKS, calibrated, overheads_of, read_calibration
from iolab.sim.batch.run import simulate_batch, simulated_makespan
from iolab.specs.batch import BatchExperiment
from iolab.trace import Trace

from iolab.names import path_component
from iolab.validation.batch_comparison import compare_batch
from iolab.emulator.batch.run import run_batch_emulation
from iolab.validation.io import TraceMismatch, checked_trace
from iolab.validation.run_folders import run_in, temporary_folder

KEPT_FIELDS = ("platform", "workload", "scheduler", "placement", "estimate", "advance_stage_in", "controller")
SIM_ONLY = {"platform": "overheads", "controller": "model"}  # the simulator's models: may differ from the run's


def load_kept_batch_trace(spec: BatchExperiment, traces_dir: str | Path) -> Trace:
    """``DIR/<scheduler>.h5`` of an earlier run of ``spec`` (TraceMismatch naming the file and field)."""
    path = Path(traces_dir) / f"{path_component(spec.scheduler.label)}.h5"
    if not path.is_file():
        raise TraceMismatch(f"{path}: no such trace (an earlier `iolab validate SPEC --work-dir {traces_dir}` "
                            "keeps one per scheduler)")
    return checked_trace(path, spec, "emulator-batch", KEPT_FIELDS, SIM_ONLY)


def validate_batch(spec: BatchExperiment, *, address: str | None = None, work_dir: str | Path | None = None,
                   traces: str | Path | None = None, calibration: str | Path | None = None,
                   progress=False, note: Callable[[str], None] | None = None,
                   keep_work: bool = False,
                   work_note: Callable[[str], None] | None = None) -> tuple[dict, dict[str, Trace]]:
    """The report and the traces (``real``, ``sim``, ``calibrated``) of one batch validation.  Without
    ``work_dir`` the real run works in a temporary folder, removed when it ended well unless
    ``keep_work`` (:mod:`.run_folders`); ``work_note`` (default: ``note``) is told what happened to it."""
    say = note or (lambda _msg: None)
    cal_source = None
    if calibration is not None:
        cal = read_calibration(calibration, "batch")  # before the real run: a bad file costs nothing
        cal_source = str(calibration)
    if traces is not None:
        real = load_kept_batch_trace(spec, traces)
        say(f"real run: {Path(traces) / (path_component(spec.scheduler.label) + '.h5')}")
    elif work_dir is not None:  # the trace kept for later (--traces), the folder too
        out, wd = Path(work_dir) / f"{path_component(spec.scheduler.label)}.h5", Path(work_dir) / path_component(spec.scheduler.label)
        real = run_batch_emulation(spec, makespan_of=simulated_makespan, out=out, address=address, work_dir=wd,
                                   progress=progress)
    else:  # a temporary folder, removed after a run that ended well
        wd = temporary_folder(spec, path_component(spec.scheduler.label))
        real = run_in(wd, lambda: run_batch_emulation(spec, makespan_of=simulated_makespan, address=address,
                                                      work_dir=wd, progress=progress),
                      keep=keep_work, say=work_note or say)
    if calibration is None:
        cal = real.attrs.get("calibration")
        if not isinstance(cal, dict):
            raise TraceMismatch("the real run's trace has no calibration (made by an older iolab)")
        cal_source = "this run (in-sample)"
    sim = simulate_batch(spec)
    cspec = calibrated(spec, cal)
    csim = simulate_batch(cspec)
    report = {
        "spec": spec.name, "scheduler": spec.scheduler.label, "level": "batch",
        "time_scale": spec.emulator.time_scale, "bytes_scale": spec.emulator.bytes_scale,
        "calibration": {"source": cal_source, "in_sample": calibration is None, "wall": cal["wall"],
                        "samples": cal.get("samples", {}), "spec_seconds": overheads_of(cal, spec.emulator.time_scale),
                        "delivered": {k: (cal.get("delivered") or {}).get(k, math.nan) for k in LINKS}},
        "real": {"wall_seconds": real.attrs.get("wall_seconds"), "complete": real.attrs.get("complete"),
                 "failures": real.attrs.get("failures", {}), "host": real.attrs.get("host"),
                 "versions": real.attrs.get("versions", {})},
        "uncalibrated": compare_batch(real, sim),
        "calibrated": compare_batch(real, csim),
    }
    return report, {"real": real, "sim": sim, "calibrated": csim}


__all__ = ["KEPT_FIELDS", "load_kept_batch_trace", "validate_batch"]
