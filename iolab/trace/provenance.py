"""Where a trace comes from: the attributes every runtime writes beside its rows.

One builder for the four runners (the simulator and the real run, at the I/O and the batch
level), so that every trace names its runtime, its seed, the spec it ran (as JSON data), the
iolab and Python versions and the host the same way.  A real run also records the versions of
the packages its processes ran with (:func:`versions`): its results depend on them.
"""

from __future__ import annotations

import importlib
import platform
from importlib.metadata import version
from typing import Any

from iolab import __version__
from iolab.specs.policy_ref import user_policies

# the packages a real run's processes depend on (mpich: the MPI library's wheel)
REAL_RUN_PACKAGES = ("ray", "mpi4py", "h5py", "numpy", "pydantic")


def versions() -> dict[str, str]:
    """iolab's, Python's and the real run's packages' versions (a package not installed is left out).

    It reads the version of packages the real run has loaded already; called from the simulator
    it would load Ray and MPI, so only a real run calls it."""
    out = {"iolab": __version__, "python": platform.python_version()}
    for name in REAL_RUN_PACKAGES:
        try:
            out[name] = importlib.import_module(name).__version__
        except Exception:  # noqa: BLE001 - a missing or odd package is left out, never fatal
            pass
    try:
        out["mpich"] = version("mpich")
    except Exception:  # noqa: BLE001
        pass
    return out


def provenance(spec: Any, runtime: str, *, real: bool = False) -> dict[str, Any]:
    """The attributes naming a run of ``spec`` by ``runtime`` (``sim-event``, ``sim-batch``,
    ``emulator``, ``emulator-batch``...): its seed, the spec as JSON data, iolab's and Python's
    versions and the host, and (``policies``) where each policy of the user's came from (its file's
    SHA-256, its options); ``real``: also the packages' :func:`versions`."""
    out: dict[str, Any] = {
        "runtime": runtime, "seed": spec.seed, "spec": spec.model_dump(mode="json"),
        "iolab_version": __version__, "python": platform.python_version(), "host": platform.node(),
    }
    own = user_policies(spec)
    if own:  # the user's policies: where each came from, its file's hash, its options
        out["policies"] = {where: ref.provenance() for where, ref in own}
    if real:
        out["versions"] = versions()
    return out


__all__ = ["REAL_RUN_PACKAGES", "provenance", "versions"]
