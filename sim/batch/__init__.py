"""The batch level of the simulator: the batch kernel advanced on simulated time.

The kernel (queue, job states, policy, nodes, HPS bytes and disks) is
:mod:`iolab.middleware.policies.batch.kernel`, shared with the real-clock batch loop;
:mod:`iolab.sim.batch.engine` adds simulated time and the jobs' steps on shared links,
:func:`iolab.sim.batch.run.simulate_batch` the trace.
"""

from iolab.sim.batch.engine import BatchEngine
from iolab.workloads.steps import JobSteps, job_steps
from iolab.sim.batch.run import simulate_batch

__all__ = ["BatchEngine", "JobSteps", "job_steps", "simulate_batch"]
