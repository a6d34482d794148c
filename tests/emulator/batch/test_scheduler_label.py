"""What a real batch run calls its scheduler (its progress notes, its live view, its trace's ``scheduler`` and
``policy`` attributes) is :func:`~iolab.middleware.policies.batch.job_table.scheduler_label`, the simulator's
rule: a built-in's kind, a user's ``file.py:Class``, a replacing scheduler's own name.  The run is built, not
started (no process, no Ray): its trace so far carries the attributes."""

from __future__ import annotations

import pytest

from iolab.emulator.batch.run import BatchEmulation
from iolab.emulator.batch.trace import run_trace
from iolab.emulator.progress import StatusLine
from iolab.middleware.policies.batch.job_table import scheduler_label
from iolab.middleware.policies.guard import GuardedScheduler
from iolab.workloads import load_workload

from policy_files import batch_spec, write

NOTHING = '''
from iolab.policy import BatchScheduler


class Idle(BatchScheduler):
    """Starts nothing."""

    def decide(self, snap):
        return []
'''


class Outside:
    """A scheduler that decides elsewhere (as an external decision process's adapter does)."""

    def decide(self, snap):
        return []


@pytest.mark.parametrize("scheduler, replacing, expected", [
    ("easy", None, "easy"),
    ("idle.py:Idle", None, "idle.py:Idle"),
    ("easy", "outside(tcp://host:28000)", "outside(tcp://host:28000)"),
    ("easy", "", "easy"),  # a replacing scheduler without a name: the spec's
])
def test_a_real_batch_run_names_its_scheduler_as_the_simulator_does(tmp_path, scheduler, replacing, expected):
    write(tmp_path, "idle.py", NOTHING)
    spec = batch_spec(tmp_path, scheduler)
    guard = GuardedScheduler(Outside(), replacing) if replacing is not None else None
    run = BatchEmulation(spec, load_workload(spec), tmp_path / "work", "mpiexec", None, StatusLine(False),
                         scheduler=guard)
    attrs = run_trace(run, complete=False).attrs
    assert run.label == attrs["scheduler"] == attrs["policy"] == scheduler_label(spec, guard) == expected
