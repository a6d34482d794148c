"""The batch level of the simulator: jobs, a batch scheduler, tiers and shared links.

See :mod:`iolab.sim.batch.engine` for the model and :func:`iolab.sim.batch.run.simulate_batch`.
"""

from .engine import BatchEngine
from .steps import JobSteps, job_steps
from .run import simulate_batch

__all__ = ["BatchEngine", "JobSteps", "job_steps", "simulate_batch"]
