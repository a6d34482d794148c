"""The storage load controller of dheenadayalan2017, as pure policy objects.

- :mod:`.window`: the response window phi/psi/S(alpha, beta) (Eqs. 5-8) and Psi (Eq. 9);
- :mod:`.handler`: the job state handler (§4.3: run stacks, suspend queues, candidates);
- :mod:`.decision`: :class:`LoadController`, the two together with the §5 parameters;
- :mod:`.response_model` and :mod:`.forecast`: what predicts the response times that feed the
  window and Eq. 9 (a random forest, an AR(q) forecast; scikit-learn and statsmodels load only
  when a model is trained or an AR forecast is asked for), the same objects in both runtimes.

No clock, no signals: the runtimes (``iolab.sim.batch`` and the emulator) feed the
measured samples and carry out the actions.
"""

from iolab.middleware.policies.controller.decision import ControllerParams, Cycle, LoadController
from iolab.middleware.policies.controller.handler import RESUME, SUSPEND, Action, JobStateHandler, JobUsage, OpenFile
from iolab.middleware.policies.controller.window import ResponseWindow, decay, penalty, sleep_interval, window_size

__all__ = ["RESUME", "SUSPEND", "Action", "ControllerParams", "Cycle", "JobStateHandler", "JobUsage",
           "LoadController", "OpenFile", "ResponseWindow", "decay", "penalty", "sleep_interval", "window_size"]
