"""Walltime estimates the scheduler plans with (soysal2019 §3.2 and §3.4.2).

- ``request``: the user's requested time T_req;
- ``refined``: Eq. 1, ``T~req = Trun + lambda (Treq - Trun)``, lambda in [0, 1]
  (:func:`refine`; lambda = 0 is a perfect estimate);
- ``predictor``: Eqs. 2-3, :class:`UserPredictor`.

Jobs always run for their real runtime; only the plan changes.
"""

from __future__ import annotations

from collections import deque

__all__ = ["UserPredictor", "refine"]


def refine(request: float, runtime: float, lam: float) -> float:
    """Eq. 1.  A job that ran longer than it asked (some trace records do) keeps its request
    for lambda = 1 and gets its runtime for lambda = 0, like every other job."""
    est = runtime + lam * (request - runtime)
    return est if est > 0 else request  # a job of runtime 0 with lambda = 0: plan with its request


class UserPredictor:
    """The per-user run-time predictor of soysal2019 §3.4.2.

    ``sigma = Trun / Treq`` of each completed job of a user (capped at 1: a job
    that overran its request used all of it); a new job's prediction is its
    request times the largest sigma of the user's last ``history`` completed
    jobs, or the request itself without history (Eq. 3).  A job still running
    at its predicted end gets its prediction doubled there, capped at the
    request (§3.4.2, footnote): :meth:`extend`.
    """

    def __init__(self, history: int = 5) -> None:
        self.history = history
        self.sigmas: dict[str, deque] = {}

    def predict(self, user: str, request: float) -> float:
        h = self.sigmas.get(user)
        if not h:
            return request
        return request * max(h)

    def completed(self, user: str, runtime: float, request: float) -> None:
        sigma = min(1.0, max(0.0, runtime / request)) if request > 0 else 1.0
        self.sigmas.setdefault(user, deque(maxlen=self.history)).append(sigma)

    @staticmethod
    def extend(prediction: float, request: float) -> float:
        """The prediction of a job still running at its predicted end."""
        return min(2.0 * prediction, request)
