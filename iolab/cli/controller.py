"""``iolab controller train|fit|forecast|convert``: fit dheenadayalan2017's response model, or the simulator's
volume model, on kept traces' samples; score the forecast; convert a pickled model the user trusts."""

from __future__ import annotations

import hashlib
import math

import click
import numpy as np

from iolab import forest as forest_file
from iolab.atomic import check_output
from iolab.errors import IolabError
from iolab.middleware.policies.controller.forecast import forecast_skill
from iolab.middleware.policies.controller.response_model import ResponseModel, train_and_test
from iolab.specs.controller import FEATURES
from iolab.trace import read_trace
from iolab.sim.batch.volume_fit import fit_volume_model
from iolab.cli.format import dumps, table
from iolab.cli.options import Finite
from iolab.units import short


@click.group()
def controller() -> None:
    """The storage load controller (dheenadayalan2017; docs/controller.md)."""


@controller.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False), help="the model file to write")
@click.option("--threshold", type=Finite(0, 1), default=0.3, show_default=True,
              help="|Pearson r| with the response a sample column needs to be a feature (§4.2)")
@click.option("--test-share", type=Finite(0, 1, max_open=True), default=0.25, show_default=True,
              help="share of the samples (the last ones of each trace) held out to measure the model")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True,
              help="seed of the random forest")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON (nothing else on stdout)")
def train(traces, out, threshold, test_share, seed, as_json) -> None:
    """Fit a random forest on the `samples` tables of TRACES (written by runs with a
    `controller:` section), report its out-of-bag and held-out error, write it to OUT."""
    check_output(out, traces, option="-o")
    tables = []
    for path in traces:
        s = read_trace(path).samples
        if len(s) == 0:
            raise IolabError(f"{path}: no samples table rows (run a spec with a controller: section)")
        tables.append(s.columns)
    try:
        model, out_stats = train_and_test(tables, threshold=threshold, test_share=test_share, seed=seed)
    except ValueError as exc:
        raise IolabError(str(exc)) from None
    y_train, y_test = out_stats["samples"], out_stats["held_out"]
    model.save(out)
    if as_json:
        click.echo(dumps(out_stats))
    else:
        click.echo(f"{out}: random forest on {', '.join(model.features)}; {y_train} samples, "
                   f"OOB MAE {short(model.oob_mae, 3)} s, OOB R² {model.oob_r2:.3f}; held out {y_test}: "
                   f"MAE {short(out_stats['test_mae'], 3)} s, R² {out_stats['test_r2']:.3f}")


@controller.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--volume", default="lps", show_default=True, help="the volume whose samples are fitted")
@click.option("--quantiles", type=click.IntRange(0, 1001), default=21, show_default=True,
              help="quantiles of the response's spread around the fit (model.spread; 0: none, else >= 2)")
@click.option("--json", "as_json", is_flag=True, help="print the fit as JSON (nothing else on stdout)")
def fit(traces, volume, quantiles, as_json) -> None:
    """Fit the simulator's volume model (controller.model: gamma, knee, r0, probe_rate) to the
    response times that real runs with a `controller:` section measured (their `samples`), so that a
    simulation of the spec sees the volume the real run saw (docs/controller.md)."""
    writers, response, units = [], [], set()
    for path in traces:
        t = read_trace(path)
        c = (t.attrs.get("spec") or {}).get("controller") or {}
        if not c or not len(t.samples):
            raise IolabError(f"{path}: no samples (a real run of a spec with a controller: section has them)")
        if str(t.attrs.get("runtime", "")).startswith("sim"):
            raise IolabError(f"{path}: a simulated trace; fit the model to real runs (iolab emulate)")
        units.add(float(c.get("p", 1e9)))
        s = t.samples.columns
        mine = np.asarray(s["volume"]) == volume
        writers.extend(np.asarray(s["writers"], dtype=float)[mine])
        response.extend(np.asarray(s["response"], dtype=float)[mine])
    if len(units) != 1:
        raise IolabError(f"the traces' benchmark units differ ({sorted(units)}): fit runs of one unit together")
    if not response:
        raise IolabError(f"no samples of volume {volume!r} in the traces")
    try:
        if quantiles == 1:
            raise ValueError("--quantiles: 0 (no spread) or at least 2 (the minimum and the maximum)")
        f = fit_volume_model(writers, response, units.pop(), quantiles)
    except ValueError as exc:
        raise IolabError(str(exc)) from None
    report = {"volume": volume, "samples": len(response), "model": f.spec(), "mae": f.mae,
              "rows": [{"writers": k, "samples": n, "median": m, "model": q} for k, n, m, q in f.rows],
              "warning": f.note}
    if f.note:
        click.echo(f"warning: {f.note}", err=True)
    if as_json:
        click.echo(dumps(report))
        return
    click.echo(f"{volume}: {len(response)} samples; weighted MAE of the medians {short(f.mae, 3)} s")
    click.echo(table(["writers", "samples", "median response s", "model s"],
                     [(k, n, m, q) for k, n, m, q in f.rows]))
    if f.note:
        click.echo(f"# probe_rate not measured: {f.note}")
    click.echo("controller:\n  model: {" + ", ".join(f"{k}: {v:g}" if not isinstance(v, list) else
                                                   f"{k}: [{', '.join(f'{x:g}' for x in v)}]"
                                                   for k, v in f.spec().items()) + "}")


@controller.command("forecast")
@click.argument("traces", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--volume", default="lps", show_default=True, help="the volume whose series is forecast")
@click.option("--column", type=click.Choice(["predicted", "response"]), default="predicted", show_default=True,
              help="the series: what fed the window (the controller's forecast input) or the measured response")
@click.option("--q", "q", type=click.IntRange(1, 64), default=3, show_default=True, help="AR order")
@click.option("--steps", default="1,3,6,12,18", show_default=True,
              help="samples ahead to score (comma-separated); t = steps x the spec's d")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON (nothing else on stdout)")
def forecast_cmd(traces, volume, column, q, steps, as_json) -> None:
    """Score the AR(q) forecast of Eq. 9 on kept runs: from rolling origins, the error t ahead and how often
    its state (>= r_threshold) was right, next to persistence (the last value) (docs/controller.md)."""
    try:
        ahead = [int(x) for x in steps.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"comma-separated integers, got {steps!r}", param_hint="--steps") from None
    if not ahead or min(ahead) < 1:
        raise click.BadParameter(f"samples ahead must be >= 1, got {steps!r}", param_hint="--steps")
    report = []
    for path in traces:
        t = read_trace(path)
        c = (t.attrs.get("spec") or {}).get("controller") or {}
        s = t.samples.columns
        if not c or not len(t.samples):
            raise IolabError(f"{path}: no samples (a run of a spec with a controller: section has them)")
        mine = np.asarray(s["volume"]) == volume
        y = np.asarray(s[column], dtype=float)[mine]
        if column == "predicted" and np.isnan(y).all():
            raise IolabError(f"{path}: no predicted column (a trace older than it): use --column response")
        d, thr = float(c.get("d", 10.0)), float(c.get("r_threshold", 60.0))
        try:
            rows = forecast_skill(y, ahead, q=q, threshold=thr)
        except ValueError as exc:
            raise IolabError(f"{path}: {exc}") from None
        report.append({"trace": str(path), "volume": volume, "column": column, "d": d, "r_threshold": thr,
                       "rows": [{"t": r["steps"] * d, **r} for r in rows]})
    if as_json:
        click.echo(dumps(report))
        return
    for r in report:
        click.echo(f"{r['trace']}: {r['volume']} {r['column']}, d = {r['d']:g} s, r_threshold = {r['r_threshold']:g} s")
        click.echo(table(["t s", "n", "AR MAE s", "AR state right", "persistence MAE s", "persistence right"],
                         [(x["t"], x["n"], x["mae"], x["state_accuracy"], x["persistence_mae"],
                           x["persistence_accuracy"]) for x in r["rows"]]))


@controller.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False), help="the model file to write (.npz)")
@click.option("--trust-pickle", is_flag=True,
              help="unpickle MODEL, a file you made yourself: only NumPy arrays and scikit-learn's random forest are "
                   "built, a pickle that names anything else is refused before any of it runs")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON (nothing else on stdout)")
def convert(model, out, trust_pickle, as_json) -> None:
    """Rewrite MODEL, a pickled model of an older `iolab controller train`, as a model file of arrays
    (docs/controller.md): a spec's model_file refuses pickles. Prints the pickle's SHA-256, the file trusted."""
    check_output(out, [model], option="-o")
    if not trust_pickle:
        raise IolabError(f"{model}: loading a pickle runs any code it holds; give --trust-pickle if you made this "
                         "file yourself, or train the model again (iolab controller train)")
    data = open(model, "rb").read()
    digest = hashlib.sha256(data).hexdigest()
    try:
        d = forest_file.load_legacy(data)  # numpy arrays and scikit-learn's forest only, nothing else runs
        features = [str(f) for f in d["features"]]
        unknown = [f for f in features if f not in FEATURES]
        if unknown or not features:
            raise ValueError(f"features {features!r}")
        m = ResponseModel.from_sklearn(features, d["forest"], dict(d.get("meta") or {}))
        m.oob_mae, m.oob_r2 = float(d.get("oob_mae", math.nan)), float(d.get("oob_r2", math.nan))
    except Exception as exc:  # noqa: BLE001 - any content: name the file and why
        raise IolabError(f"{model}: not a pickled model of `iolab controller train` ({type(exc).__name__}: "
                         f"{exc})") from None
    m.save(out)
    report = {"model": str(model), "sha256": digest, "out": str(out), "features": m.features,
              "trees": m.forest.trees}
    if as_json:
        click.echo(dumps(report))
    else:
        click.echo(f"{out}: {m.forest.trees} trees on {', '.join(m.features)}, from {model} (sha256 {digest})")
