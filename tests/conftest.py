"""Shared test helpers: where the real input data lives, and small spec builders."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from shared_data import REPO, SHARED_DATA, shared_file  # noqa: F401  (re-exported for tests)
from small_batch_trace import small_trace, small_trace_file  # noqa: F401  (fixtures of tests/metrics and test_export.py)

# Strict mode (iolab.invariants) is on for every run the suite makes, in this process and in
# the processes it starts: a broken invariant fails the test that broke it.
os.environ.setdefault("IOLAB_STRICT", "1")


@pytest.fixture
def repo() -> Path:
    return REPO


# The real input files (skipped with a reason when absent): tests/workloads, tests/studies and the batch
# kernel's soysal2019 tests read them.
@pytest.fixture
def kth() -> Path:
    return shared_file("KTH-SP2-1996-2.1-cln.swf.gz")


@pytest.fixture
def sdsc_blue() -> Path:
    return shared_file("SDSC-BLUE-2000-4.2-cln.swf.gz")


@pytest.fixture
def theta_file() -> Path:
    return shared_file("theta-2022-week4-io-jobs.yaml")


@pytest.fixture(autouse=True, scope="module")
def _no_ray_leaks_between_modules():
    """A module that leaves Ray initialised in this process would break the next one that
    starts its own: shut it down after every module, and say so."""
    yield
    import sys

    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
        import warnings

        warnings.warn("a test module left Ray initialised; shut it down", stacklevel=1)


_RAY_TIMED_OUT: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A Ray test that ran into pytest-timeout leaves this process's Ray in an unknown state: a
    thread stuck inside Ray may hold its lock, and then later ``ray.get`` calls of the session can
    hang until their own timeouts (a CI run once lost 20 minutes to four such tests, and did not
    finish in its 90). Note it."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and item.get_closest_marker("ray") and "Timeout" in str(report.longrepr):
        _RAY_TIMED_OUT.append(item.nodeid)


def pytest_runtest_setup(item):
    """After a Ray test timed out, stop the session at the next Ray test, naming the first one: a
    clear failure now rather than a run that times out with nothing said."""
    if _RAY_TIMED_OUT and item.get_closest_marker("ray"):
        pytest.exit(f"{_RAY_TIMED_OUT[0]} timed out inside Ray; later Ray tests in this process may hang "
                    "on what it left, so the session stops here", returncode=1)



# ------------------------------------------------------------------ make test: two pytest-xdist workers
# Under ``make test`` (``-n 2 --dist loadgroup``) the real runs (tests marked mpi, ray or slurm) are one
# group, run one after the other on one worker in file order: they share the machine's two cores and the
# one local Slurm cluster, and many of them measure wall time against the simulator.  Every other test file
# is a group of its own (its module fixtures built once), run on the other worker meanwhile, and so are the
# real runs of REAL_RUNS_BESIDE (below).  pytest-xdist 3.8's own loadgroup marks a group by renaming the
# item's nodeid, which pytest 9 no longer reads, so the groups are told to the scheduler here: each worker writes nodeid -> group to a
# file in a folder the controller made (IOLAB_XDIST_GROUPS, inherited by the workers), and the scheduler
# reads it once every worker has collected.
REAL_RUN_MARKS = ("mpi", "ray", "slurm")
_GROUPS_ENV = "IOLAB_XDIST_GROUPS"


# Real runs that read no wall time against a model (outcomes, exit codes, files and processes left, what a
# campaign recorded) and start no Slurm step: a second serial group, run on the other worker after or
# between its in-process files, beside the first group's runs.  Each starts its own local Ray (its own
# ports and session folder) and looks only at its own processes and folders.
REAL_RUNS_BESIDE = ("tests/campaign/", "tests/batsim/", "tests/test_packaging.py", "tests/test_policy_broken_real.py",
                    "tests/workloads/test_darshan.py", "tests/emulator/batch/test_emulated_batch.py",
                    "tests/validation/test_validate_campaign.py", "tests/validation/test_validate_work_folder.py",
                    "tests/emulator/test_work_folder.py", "tests/emulator/batch/test_quota_run.py",
                    "tests/emulator/test_run_outcome.py", "tests/emulator/test_killed_driver.py")


# Real runs that hold a measured rate or duration to the model's within a few per cent (tier laws, shares,
# I/O-node streams, the controller's load, a phase's length): while one runs, the other worker runs nothing
# (it waits on a file lock before its next test), since two cores are what such a run measures with.  A
# test beside it, in-process or real, once starved its pacing ranks (transfers 7 % longer than the model's)
# and once idled a stream whose share the other then took (a transfer 7 % shorter).
TIMED_AGAINST_THE_MODEL = (
    "tests/emulator/batch/test_batch_controller.py", "tests/emulator/batch/test_batch_emulation.py",
    "tests/emulator/batch/test_batch_io_nodes_both_runtimes.py", "tests/emulator/batch/test_batch_io_nodes_real.py",
    "tests/emulator/batch/test_interference_run.py", "tests/emulator/io/test_sharing_real.py",
    "tests/emulator/io/test_single_multi_real.py", "tests/emulator/io/test_shared_replay_real.py",
    "tests/apps/test_jacobi_mpi.py")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under make test's two workers, a readers-writer lock over whole tests (setup with its module
    fixtures, call, teardown): a test of TIMED_AGAINST_THE_MODEL holds it alone, every other test shares
    it.  A waiting timed test holds the turnstile, so the other worker's next test waits behind it instead
    of overtaking it.  A worker holds the lock only while it runs a test, never while it waits for work."""
    folder = os.environ.get(_GROUPS_ENV)
    if not folder:
        yield
        return
    path = item.nodeid.split("::", 1)[0].removeprefix("../")
    timed = path.startswith(TIMED_AGAINST_THE_MODEL) and xdist_group_of(item) == "real-runs"
    with open(Path(folder) / "turnstile.lock", "a") as turnstile, open(Path(folder) / "tests.lock", "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if timed:
            fcntl.flock(lock, fcntl.LOCK_EX)
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        else:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
            fcntl.flock(lock, fcntl.LOCK_SH)
        yield


def xdist_group_of(item) -> str:
    path = item.nodeid.split("::", 1)[0]
    if any(item.get_closest_marker(m) for m in REAL_RUN_MARKS):
        if not item.get_closest_marker("slurm") and path.removeprefix("../").startswith(REAL_RUNS_BESIDE):
            return "real-runs-beside"
        return "real-runs"
    return path


def pytest_configure(config):
    if getattr(config.option, "dist", "no") == "loadgroup" and not hasattr(config, "workerinput"):
        import tempfile

        os.environ[_GROUPS_ENV] = tempfile.mkdtemp(prefix="iolab-xdist-groups-")


def pytest_collection_modifyitems(config, items):
    folder = os.environ.get(_GROUPS_ENV)
    if folder and hasattr(config, "workerinput"):
        import json

        groups = {item.nodeid: xdist_group_of(item) for item in items}
        path = Path(folder) / f"{config.workerinput['workerid']}.json"
        path.with_suffix(".tmp").write_text(json.dumps(groups))
        path.with_suffix(".tmp").replace(path)


def pytest_xdist_make_scheduler(config, log):
    if getattr(config.option, "dist", "no") != "loadgroup" or not os.environ.get(_GROUPS_ENV):
        return None
    import json

    from xdist.scheduler import LoadScopeScheduling

    folder = Path(os.environ[_GROUPS_ENV])

    class GroupScheduling(LoadScopeScheduling):
        """LoadScopeScheduling with scope = the group of the nodeid (xdist_group_of), read from the workers' files."""

        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                self._groups = {}
                for f in sorted(folder.glob("*.json")):
                    self._groups.update(json.loads(f.read_text()))
            return self._groups.get(nodeid) or nodeid.split("::", 1)[0]

    return GroupScheduling(config, log)


def pytest_unconfigure(config):
    folder = os.environ.get(_GROUPS_ENV)
    if folder and not hasattr(config, "workerinput"):
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(_GROUPS_ENV, None)
