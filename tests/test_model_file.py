"""The controller's model file: arrays that cannot run code, a prediction equal to scikit-learn's, and crafted
files (pickles, object arrays, broken trees) refused with the file named and nothing run."""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner

from iolab import forest as forest_file
from iolab.cli import cli
from iolab.errors import SpecError
from iolab.specs import parse_spec

sklearn_ensemble = pytest.importorskip("sklearn.ensemble", reason="scikit-learn is the controller extra")


class RunsCode:
    """Unpickling this runs a shell command that creates ``marker``: what a hostile model file does."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def fitted(seed=0, trees=20, n=300):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 10, (n, 3))
    y = 4 * X[:, 0] + np.sin(X[:, 1]) + rng.normal(0, 0.2, n)
    return sklearn_ensemble.RandomForestRegressor(n_estimators=trees, random_state=seed).fit(X, y)


def saved(forest, path, features=("writers", "bytes_rate", "in_flight")):
    f = forest_file.from_sklearn(forest, list(features), {"oob_mae": 1.0, "oob_r2": 0.5})
    with open(path, "wb") as fh:
        forest_file.save(f, fh)
    return path


def batch_spec(model_file):
    return {"kind": "batch", "scheduler": "fcfs",
            "workload": {"source": "inline", "jobs": [{"id": "j1", "submit": 0, "nodes": 1, "walltime": 100,
                                                       "runtime": 50}]},
            "platform": {"nodes": 4, "lps": {"rate": "1GB/s"}, "hps": {"rate": "4GB/s", "capacity": "1TB"},
                         "stage_rate": "1GB/s"},
            "controller": {"prediction": "forest", "model_file": str(model_file)}}


def test_the_arrays_predict_what_scikit_learn_predicts_on_the_same_forest(tmp_path):
    rf = fitted()
    path = saved(rf, tmp_path / "m.npz")
    back = forest_file.load(path, ("writers", "bytes_rate", "in_flight"))
    X = np.random.default_rng(9).uniform(-2, 12, (400, 3))  # beyond the training range too
    X[:7] = rf.estimators_[0].tree_.threshold[:7, None]  # samples exactly on thresholds: the <= side
    assert np.array_equal(back.predict(X), rf.predict(X))  # bit for bit: same comparisons, same sum order
    assert back.trees == 20 and back.meta == {"oob_mae": 1.0, "oob_r2": 0.5}


def test_loading_and_predicting_need_no_scikit_learn(tmp_path):
    path = saved(fitted(trees=5), tmp_path / "m.npz")
    code = ("import sys, numpy as np; from iolab import forest; f = forest.load(sys.argv[1]); "
            "print(f.predict(np.ones((2, 3))).shape); print('sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["(2,)", "False"]


@pytest.mark.parametrize("how", ["simulate", "sweep-dry-run", "parse"])
def test_a_crafted_pickle_model_file_never_runs_its_code(tmp_path, how):
    marker = tmp_path / "ran"
    model = tmp_path / "model.pkl"
    model.write_bytes(pickle.dumps(RunsCode(marker)))
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(batch_spec(model.name)))
    if how == "parse":
        with pytest.raises(SpecError) as err:
            parse_spec(batch_spec(model))
        ((where, reason),) = err.value.problems
        assert where == "controller.model_file" and "pickle" in reason and str(model) in reason
    else:
        if how == "simulate":
            args = ["simulate", str(spec)]
        else:
            campaign = tmp_path / "c.json"
            campaign.write_text(json.dumps({"kind": "campaign", "name": "c", "base": spec.name,
                                            "axes": {"schedulers": ["fcfs", "easy"]}}))
            args = ["sweep", str(campaign), "--dry-run"]
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 2, r.output
        assert "Traceback" not in r.output and "model.pkl" in r.output and "pickle" in r.output, r.output
    assert not marker.exists(), "loading the model file ran its code"


def test_an_npz_holding_a_pickled_object_array_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"
    arrays = {k: np.array(0) for k in forest_file.KEYS}
    arrays["features"] = np.array([RunsCode(marker)], dtype=object)  # np.save pickles object arrays
    bad = tmp_path / "m.npz"
    np.savez(bad, **arrays)
    with pytest.raises(forest_file.ModelFileError, match="m.npz: not a model file"):
        forest_file.load(bad)
    r = CliRunner().invoke(cli, ["simulate", "-"], input=json.dumps(batch_spec(bad)))
    assert r.exit_code == 2 and "controller.model_file" in r.output and "m.npz" in r.output, r.output
    assert not marker.exists()


def loop_back(a):
    left = a["left"].copy()
    left[0] = 0  # the root's left child is the root: a walk that never ends
    return {"left": left}


def feature_out(a):
    feature = a["feature"].copy()
    feature[0] = 7
    return {"feature": feature}


def nan_threshold(a):
    t = a["threshold"].copy()
    t[0] = np.nan
    return {"threshold": t}


@pytest.mark.parametrize("change,reason", [
    (loop_back, "tree 0, node 0: a child is not a later node of the same tree"),
    (feature_out, "tree 0, node 0: an inner node splits on no listed feature"),
    (nan_threshold, "tree 0, node 0: an inner node's threshold is not finite"),
    ({"version": np.array(2)}, "format version 2"),
    ({"format": np.array("sklearn")}, "format 'sklearn'"),
    ({"features": np.array(["load_average", "writers", "queued"])}, "feature 'load_average' is not a sample column"),
    ({"offsets": np.array([0, 5])}, "'offsets' must rise from 0"),
    ({"value": np.array([1.0])}, "differ in length"),
    ({"meta": np.array("{")}, "'meta' is not JSON"),
])
def test_a_damaged_model_file_is_refused_naming_what(tmp_path, change, reason):
    bad = edited_with(tmp_path, change)
    with pytest.raises(forest_file.ModelFileError) as err:
        forest_file.load(bad, ("writers", "bytes_rate", "in_flight", "ops_rate", "queued"))
    assert str(err.value).startswith(f"{bad}: not a model file") and reason in str(err.value), err.value


def edited_with(tmp_path, change):
    src = saved(fitted(trees=3), tmp_path / "good.npz")
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    arrays.update(change(arrays) if callable(change) else change)
    out = tmp_path / "bad.npz"
    np.savez(out, **arrays)
    return out


def test_files_that_are_no_archive_are_refused(tmp_path):
    text = tmp_path / "t.npz"
    text.write_text("features: [writers]\n")
    with pytest.raises(forest_file.ModelFileError, match="not one"):
        forest_file.load(text)
    proto0 = tmp_path / "old.pkl"
    proto0.write_bytes(pickle.dumps({"features": ["writers"]}, protocol=0))
    with pytest.raises(forest_file.ModelFileError, match="a pickle"):
        forest_file.load(proto0)
    bomb = tmp_path / "bomb.npz"  # a few kB that unpack past the bound: refused before anything is unpacked
    buf = io.BytesIO()
    np.save(buf, np.zeros(1))
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("value.npy", b"\0" * (forest_file.MAX_BYTES + 1))
    with pytest.raises(forest_file.ModelFileError, match="unpack to"):
        forest_file.load(bomb)


def test_convert_needs_trust_then_writes_a_model_that_predicts_the_same(tmp_path):
    rf = fitted(trees=8)
    old = tmp_path / "old.pkl"
    old.write_bytes(pickle.dumps({"features": ["writers", "bytes_rate", "in_flight"], "forest": rf,
                                  "oob_mae": 0.3, "oob_r2": 0.9, "meta": {"seed": 0}}))
    new = tmp_path / "new.npz"
    r = CliRunner().invoke(cli, ["controller", "convert", str(old), "-o", str(new)])
    assert r.exit_code == 2 and "--trust-pickle" in r.output and not new.exists(), r.output
    r = CliRunner().invoke(cli, ["controller", "convert", str(old), "-o", str(new), "--trust-pickle", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["sha256"] == hashlib.sha256(old.read_bytes()).hexdigest()
    m = forest_file.load(new)
    X = np.random.default_rng(1).uniform(0, 10, (50, 3))
    assert np.array_equal(m.predict(X), rf.predict(X)) and m.meta["oob_r2"] == 0.9


class _RunsCode:
    """A pickle that, loaded by a plain unpickler, runs a command (here: creates a file)."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def test_convert_with_trust_still_runs_nothing_but_a_forest(tmp_path):
    ran = tmp_path / "ran"
    for payload in ({"features": ["writers"], "forest": _RunsCode(ran)}, _RunsCode(ran)):
        bad = tmp_path / "bad.pkl"
        bad.write_bytes(pickle.dumps(payload))
        assert pickle.loads(pickle.dumps(_RunsCode(tmp_path / "proof"))) == 0 and (tmp_path / "proof").exists()
        new = tmp_path / "new.npz"
        r = CliRunner().invoke(cli, ["controller", "convert", str(bad), "-o", str(new), "--trust-pickle"])
        assert r.exit_code == 2 and "posix.system" in r.output and "refused before any of it ran" in r.output, r.output
        assert not ran.exists() and not new.exists()  # nothing ran, nothing written
    with pytest.raises(pickle.UnpicklingError, match="builtins.eval"):
        forest_file.load_legacy(pickle.dumps(eval))
