"""A trained random forest as plain arrays: the model file of ``iolab controller train``, and its prediction.

A model file is a NumPy ``.npz`` archive of numeric and text arrays only, read with
``allow_pickle=False``: loading it cannot run code, and predicting needs no scikit-learn.
Its arrays (format version 1):

=============  ================  ==================================================================
name           dtype, shape      what
=============  ================  ==================================================================
``format``     text, ()          ``"iolab-forest"``
``version``    int, ()           ``1``
``features``   text, (F,)        the sample columns the trees split on, in column order
``offsets``    int, (T + 1,)     tree ``t``'s nodes are ``offsets[t]:offsets[t + 1]`` of the arrays below
``left``       int, (N,)         a node's left child (index within its tree), ``-1`` at a leaf
``right``      int, (N,)         its right child, ``-1`` at a leaf
``feature``    int, (N,)         the column an inner node splits on (an index into ``features``)
``threshold``  float, (N,)       go left when ``x[feature] <= threshold``
``value``      float, (N,)       a leaf's prediction
``meta``       text, ()          JSON: ``oob_mae``, ``oob_r2`` and the training's figures
=============  ================  ==================================================================

Each inner node's children come after it in its tree (as scikit-learn numbers them), so a walk
from the root ends at a leaf within the tree's depth; :func:`load` checks this and every other
fact above, and names the first that fails.  The prediction is scikit-learn's: the sample is
compared in single precision (scikit-learn's trees cast ``X`` to ``float32``), each tree gives
its leaf's value and the forest their mean, summed in tree order.
"""

from __future__ import annotations

import io
import json
import math
import pickle
import zipfile
from dataclasses import dataclass, field
from typing import BinaryIO

import numpy as np

__all__ = ["FORMAT", "MAX_BYTES", "VERSION", "Forest", "ModelFileError", "from_sklearn", "load", "load_legacy", "save"]

FORMAT, VERSION = "iolab-forest", 1
MAX_BYTES = 1 << 30  # the arrays of a model file, unpacked: a forest of 200 trees on 10^5 samples is ~100 MB
KEYS = ("format", "version", "features", "offsets", "left", "right", "feature", "threshold", "value", "meta")
_ZIP_MAGIC = b"PK\x03\x04"


class ModelFileError(ValueError):
    """A file that is not a model file of this format: the message says why (and how to get one)."""


@dataclass
class Forest:
    """A regression forest's trees, concatenated (the arrays of the module's table)."""

    features: list[str]
    offsets: np.ndarray
    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    value: np.ndarray
    meta: dict = field(default_factory=dict)

    @property
    def trees(self) -> int:
        return len(self.offsets) - 1

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The forest's prediction for each row of ``X`` (columns in :attr:`features` order)."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(self.features):
            raise ValueError(f"X has shape {X.shape}; the forest reads {len(self.features)} columns")
        x = X.astype(np.float32).astype(np.float64)  # scikit-learn's trees compare float32 samples
        n = len(x)
        start = self.offsets[:-1].astype(np.int64)
        glob_left = np.where(self.left < 0, -1, self.left + np.repeat(start, np.diff(self.offsets)))
        glob_right = np.where(self.right < 0, -1, self.right + np.repeat(start, np.diff(self.offsets)))
        nodes = np.repeat(start[:, None], n, axis=1)  # (trees, samples): each walk's current node
        rows = np.broadcast_to(np.arange(n), nodes.shape)
        while True:
            inner = glob_left[nodes] >= 0
            if not inner.any():
                break
            f = np.where(inner, self.feature[nodes], 0)
            go_left = x[rows, f] <= self.threshold[nodes]
            nodes = np.where(inner, np.where(go_left, glob_left[nodes], glob_right[nodes]), nodes)
        leaves = self.value[nodes]
        total = np.zeros(n)
        for t in range(self.trees):  # in tree order, as scikit-learn adds them
            total += leaves[t]
        return total / self.trees


def from_sklearn(forest, features: list[str], meta: dict | None = None) -> Forest:
    """The arrays of a fitted ``sklearn.ensemble.RandomForestRegressor`` (one output)."""
    offsets, left, right, feat, thr, val = [0], [], [], [], [], []
    for est in forest.estimators_:
        t = est.tree_
        if t.value.shape[1] != 1:
            raise ValueError("only a forest with one output can be stored")
        left.append(np.asarray(t.children_left, dtype=np.int64))
        right.append(np.asarray(t.children_right, dtype=np.int64))
        feat.append(np.where(t.children_left < 0, -1, t.feature).astype(np.int64))
        thr.append(np.where(t.children_left < 0, 0.0, t.threshold).astype(np.float64))
        val.append(np.asarray(t.value[:, 0, 0], dtype=np.float64))
        offsets.append(offsets[-1] + t.node_count)
    return Forest(list(features), np.asarray(offsets, dtype=np.int64), np.concatenate(left), np.concatenate(right),
                  np.concatenate(feat), np.concatenate(thr), np.concatenate(val), dict(meta or {}))


def save(forest: Forest, f: BinaryIO) -> None:
    """Write ``forest`` to the open binary file ``f`` (the caller makes it atomic)."""
    np.savez_compressed(
        f, format=np.array(FORMAT), version=np.array(VERSION, dtype=np.int64),
        features=np.array(forest.features, dtype=str), offsets=forest.offsets, left=forest.left, right=forest.right,
        feature=forest.feature, threshold=forest.threshold, value=forest.value,
        meta=np.array(json.dumps(forest.meta, allow_nan=True)))


# The globals an older iolab's pickled model names (its dict of features, numbers and text holds a
# scikit-learn random forest of regression trees, NumPy arrays and scalars): the only ones its unpickler builds
LEGACY_GLOBALS = frozenset({
    ("numpy", "dtype"), ("numpy", "ndarray"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "scalar"),
    ("sklearn.ensemble._forest", "RandomForestRegressor"), ("sklearn.tree._classes", "DecisionTreeRegressor"),
    ("sklearn.tree._tree", "Tree"),
})


class _LegacyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) not in LEGACY_GLOBALS:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which no model of an older iolab holds; "
                                         "refused before any of it ran")
        return super().find_class(module, name)


def load_legacy(data: bytes) -> dict:
    """The dict of an older iolab's pickled model (``iolab controller convert``).  Its unpickler builds only
    :data:`LEGACY_GLOBALS`: a pickle that names any other function or class (``os.system``, a class of its
    own) raises ``pickle.UnpicklingError`` before anything it names runs."""
    d = _LegacyUnpickler(io.BytesIO(data)).load()
    if not isinstance(d, dict):
        raise ValueError(f"a {type(d).__name__}, not a dict")
    return d


def _pickle_message(path) -> str:
    return (f"{path}: a pickle (older iolab's model format), not loaded: loading a pickle runs the code it holds. "
            "Re-train (iolab controller train ... -o MODEL.npz) or convert one you made "
            "(iolab controller convert FILE -o MODEL.npz --trust-pickle)")


def load(path, columns: tuple[str, ...] | None = None) -> Forest:
    """Read a model file, checking every fact of the format (and, given ``columns``, that each feature is one of
    them); :class:`ModelFileError` names the first that fails."""
    what = f"{path}: not a model file of `iolab controller train`"
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if head[:1] == b"\x80" or head[:1] in (b"(", b"}", b"]"):  # a pickle's opening opcodes (protocol 2+, or 0/1)
        raise ModelFileError(_pickle_message(path))
    if head != _ZIP_MAGIC:
        raise ModelFileError(f"{what} (a NumPy .npz archive; this file is not one)")
    try:
        with zipfile.ZipFile(path) as z:
            size = sum(i.file_size for i in z.infolist())
        if size > MAX_BYTES:
            raise ModelFileError(f"{what}: its arrays unpack to {size:,} bytes, above the {MAX_BYTES:,} a model "
                                 "file may hold")
        with np.load(path, allow_pickle=False) as z:
            names = set(z.files)
            missing = [k for k in KEYS if k not in names]
            if missing:
                raise ModelFileError(f"{what}: no array {missing[0]!r}")
            a = {k: z[k] for k in KEYS}
    except ModelFileError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as exc:
        # allow_pickle=False: an array of Python objects raises ValueError here instead of being unpickled
        raise ModelFileError(f"{what} ({type(exc).__name__}: {exc})") from None
    return _check(a, what, columns)


def _check(a: dict, what: str, columns: tuple[str, ...] | None) -> Forest:
    def fail(reason: str):
        raise ModelFileError(f"{what}: {reason}")

    for k in ("format", "meta"):
        if a[k].dtype.kind != "U" or a[k].shape != ():
            fail(f"{k!r} is not one text value")
    if str(a["format"]) != FORMAT:
        fail(f"format {str(a['format'])!r}, not {FORMAT!r}")
    if a["version"].dtype.kind not in "iu" or a["version"].shape != ():
        fail("'version' is not one integer")
    if int(a["version"]) != VERSION:
        fail(f"format version {int(a['version'])}; this iolab reads version {VERSION} (train the model again)")
    if a["features"].dtype.kind != "U" or a["features"].ndim != 1 or not len(a["features"]):
        fail("'features' is not a non-empty list of names")
    features = [str(s) for s in a["features"]]
    unknown = [f for f in features if columns is not None and f not in columns]
    if unknown:
        fail(f"feature {unknown[0]!r} is not a sample column ({', '.join(columns)})")
    if len(set(features)) != len(features):
        fail("a feature is listed twice")
    for k in ("offsets", "left", "right", "feature"):
        if a[k].dtype.kind not in "iu" or a[k].ndim != 1:
            fail(f"{k!r} is not a list of integers")
    for k in ("threshold", "value"):
        if a[k].dtype.kind != "f" or a[k].ndim != 1:
            fail(f"{k!r} is not a list of numbers")
    off = a["offsets"].astype(np.int64)
    n = len(a["left"])
    if any(len(a[k]) != n for k in ("right", "feature", "threshold", "value")):
        fail("'left', 'right', 'feature', 'threshold' and 'value' differ in length")
    if len(off) < 2 or off[0] != 0 or off[-1] != n or np.any(np.diff(off) < 1):
        fail(f"'offsets' must rise from 0 to the node count {n} with at least one node a tree")
    left, right = a["left"].astype(np.int64), a["right"].astype(np.int64)
    feat, thr, val = a["feature"].astype(np.int64), a["threshold"].astype(np.float64), a["value"].astype(np.float64)
    local = np.arange(n) - np.repeat(off[:-1], np.diff(off))  # each node's index within its tree
    size = np.repeat(np.diff(off), np.diff(off))
    leaf = left == -1
    checks = [
        (leaf != (right == -1), "one child is -1 and the other is not"),
        (~leaf & ((left <= local) | (left >= size) | (right <= local) | (right >= size)),
         "a child is not a later node of the same tree"),
        (~leaf & ((feat < 0) | (feat >= len(features))), "an inner node splits on no listed feature"),
        (~leaf & ~np.isfinite(thr), "an inner node's threshold is not finite"),
        (leaf & ~np.isfinite(val), "a leaf's value is not finite"),
    ]
    for bad, reason in checks:
        if bad.any():
            i = int(np.argmax(bad))
            t = int(np.searchsorted(off, i, side="right") - 1)
            fail(f"tree {t}, node {int(local[i])}: {reason}")
    try:
        meta = json.loads(str(a["meta"]))
    except ValueError as exc:
        fail(f"'meta' is not JSON ({exc})")
    if not isinstance(meta, dict):
        fail("'meta' is not a JSON object")
    for k in ("oob_mae", "oob_r2"):
        if not isinstance(meta.get(k, math.nan), (int, float)):
            fail(f"meta {k!r} is not a number")
    return Forest(features, off, left, right, feat, thr, val, meta)
