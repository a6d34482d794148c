"""``iolab controller train|fit``: fit dheenadayalan2017's response model, or the simulator's volume model,
on kept traces' samples."""

from __future__ import annotations

import math

import click
import numpy as np

from ..errors import IolabError
from ..middleware.response_model import FEATURES, ResponseModel
from ..trace import read_trace
from ..sim.batch.volume_fit import fit_volume_model
from .format import dumps, table


@click.group()
def controller() -> None:
    """The storage load controller (dheenadayalan2017; docs/controller.md)."""


@controller.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False), help="the model file to write")
@click.option("--threshold", type=float, default=0.3, show_default=True,
              help="|Pearson r| with the response a sample column needs to be a feature (§4.2)")
@click.option("--test-share", type=float, default=0.25, show_default=True,
              help="share of the samples (the last ones of each trace) held out to measure the model")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True,
              help="seed of the random forest")
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON (nothing else on stdout)")
def train(traces, out, threshold, test_share, seed, as_json) -> None:
    """Fit a random forest on the `samples` tables of TRACES (written by runs with a
    `controller:` section), report its out-of-bag and held-out error, write it to OUT."""
    if not 0 <= test_share < 1:
        raise IolabError(f"--test-share must be in [0, 1), got {test_share}")
    train_cols = {f: [] for f in FEATURES}
    test_cols = {f: [] for f in FEATURES}
    y_train, y_test = [], []
    for path in traces:
        s = read_trace(path).samples
        n = len(s)
        if n == 0:
            raise IolabError(f"{path}: no samples table rows (run a spec with a controller: section)")
        cut = n - int(round(n * test_share))
        for f in FEATURES:
            col = np.asarray(s.columns[f], dtype=float)
            train_cols[f].extend(col[:cut])
            test_cols[f].extend(col[cut:])
        y = np.asarray(s.columns["response"], dtype=float)
        y_train.extend(y[:cut])
        y_test.extend(y[cut:])
    try:
        model = ResponseModel.fit({f: np.asarray(v) for f, v in train_cols.items()}, np.asarray(y_train),
                                  threshold=threshold, seed=seed)
    except ValueError as exc:
        raise IolabError(str(exc)) from None
    out_stats = {"samples": len(y_train), "held_out": len(y_test), "features": model.features,
                 "oob_mae": model.oob_mae, "oob_r2": model.oob_r2, "test_mae": math.nan, "test_r2": math.nan}
    if y_test:
        pred = model.predict({f: np.asarray(v) for f, v in test_cols.items()})
        yt = np.asarray(y_test)
        out_stats["test_mae"] = float(np.mean(np.abs(pred - yt)))
        var = float(np.sum((yt - yt.mean()) ** 2))
        out_stats["test_r2"] = 1 - float(np.sum((pred - yt) ** 2)) / var if var > 0 else math.nan
    model.meta.update(out_stats)
    model.save(out)
    if as_json:
        click.echo(dumps(out_stats))
    else:
        click.echo(f"{out}: random forest on {', '.join(model.features)}; {len(y_train)} samples, "
                   f"OOB MAE {model.oob_mae:.3g} s, OOB R² {model.oob_r2:.3f}; held out {len(y_test)}: "
                   f"MAE {out_stats['test_mae']:.3g} s, R² {out_stats['test_r2']:.3f}")


@controller.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--volume", default="lps", show_default=True, help="the volume whose samples are fitted")
@click.option("--json", "as_json", is_flag=True, help="print the fit as JSON (nothing else on stdout)")
def fit(traces, volume, as_json) -> None:
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
        f = fit_volume_model(writers, response, units.pop())
    except ValueError as exc:
        raise IolabError(str(exc)) from None
    report = {"volume": volume, "samples": len(response), "model": f.spec(), "mae": f.mae,
              "rows": [{"writers": k, "samples": n, "median": m, "model": q} for k, n, m, q in f.rows]}
    if as_json:
        click.echo(dumps(report))
        return
    click.echo(f"{volume}: {len(response)} samples; weighted MAE of the medians {f.mae:.3g} s")
    click.echo(table(["writers", "samples", "median response s", "model s"],
                     [(k, n, m, q) for k, n, m, q in f.rows]))
    click.echo("controller:\n  model: {" + ", ".join(f"{k}: {v:g}" for k, v in f.spec().items()) + "}")
