"""A user's policy goes to a Ray actor as its file's text: the actor builds it from those bytes even where the
file is not (another host), and refuses a file that changed after the spec was read."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from iolab.middleware.policies.controller.decision import ControllerParams
from iolab.middleware.policies.guard import GuardedController
from iolab.middleware.policies.io_guard import io_policy, shippable
from iolab.middleware.policies.loader import PolicyLoadError, PolicySource
from iolab.specs.policy_ref import PolicyRef

from policy_files import write

CONTROLLER = '''
from iolab.policy import ControllerPolicy


class Quiet(ControllerPolicy):
    """Never suspends anything."""

    def cycle(self, now, jobs, loaded):
        return []
'''

ORDER = '''
from iolab.policy import IOOrder


class Newest(IOOrder):
    def key(self, request, now):
        return -request.rank
'''


def ref(folder, name, cls):
    return PolicyRef.model_validate({"kind": "python", "path": name, "class": cls}, context={"base_dir": folder})


def test_the_controller_actor_builds_the_users_policy_from_the_shipped_text(tmp_path):
    from iolab.middleware.controller_actor import _ControllerActor

    path = write(tmp_path, "quiet.py", CONTROLLER)
    src = PolicySource.of(ref(tmp_path, "quiet.py", "Quiet"), "controller")
    path.unlink()  # the actor's host does not have the file
    config = pickle.loads(pickle.dumps({  # what Ray carries to the actor
        "params": dataclasses.asdict(ControllerParams()), "volumes": {"lps": str(tmp_path)}, "time_scale": 1.0,
        "unit_bytes": 1000, "policy": src}))
    actor = _ControllerActor(config)
    try:
        assert isinstance(actor.lc.handler, GuardedController) and actor.lc.handler.name == "quiet.py:Quiet"
    finally:
        actor.stop.set()
        actor.thread.join(timeout=10)


def test_an_io_order_shipped_to_an_actor_is_built_from_its_text(tmp_path):
    path = write(tmp_path, "newest.py", ORDER)
    shipped = pickle.loads(pickle.dumps(shippable(ref(tmp_path, "newest.py", "Newest"))))
    path.unlink()
    order = io_policy(shipped)
    assert order.name == "newest.py:Newest" and order.exclusive


def test_a_file_changed_after_the_spec_was_read_is_refused(tmp_path):
    path = write(tmp_path, "newest.py", ORDER)
    r = ref(tmp_path, "newest.py", "Newest")
    path.write_text(ORDER.replace("-request.rank", "request.rank"))
    with pytest.raises(PolicyLoadError, match="changed since the spec was read"):
        PolicySource.of(r, "io")
