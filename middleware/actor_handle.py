"""What the orchestrator-side handles on iolab's Ray actors share.

:class:`~iolab.middleware.arbiter_actor.Arbiter` and :class:`~iolab.middleware.storage_actor.StorageManager`
are picklable handles (they hold only the actor handle, its name and namespace); both
spawn their actor the same way (no CPU reserved, never restarted: a dead actor means a
lost run, said loudly), wait until it answers, and kill it at the end.  :func:`call` is
``ray.get`` with the actor's own exception re-raised.
"""

from __future__ import annotations

from typing import Any


def call(ref: Any, timeout: float | None = None) -> Any:
    """``ray.get`` that re-raises the actor's own exception instead of a Ray wrapper."""
    import ray  # lazy: Ray only in a process that talks to an actor
    from ray.exceptions import RayTaskError  # lazy: Ray only in a process that talks to an actor

    try:
        return ray.get(ref, timeout=timeout)
    except RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, Exception):
            raise cause from None
        raise


class ActorHandle:
    """A named actor, its handle, and how it is spawned and killed."""

    def __init__(self, handle: Any, name: str, namespace: str):
        self._h = handle
        self.name = name
        self.namespace = namespace

    @classmethod
    def _spawn(cls, actor_class: type, config: dict, name: str, namespace: str):
        """Start ``actor_class(config)`` as a named actor and wait until it answers ``ping``."""
        import ray  # lazy: Ray only in a process that talks to an actor

        if not ray.is_initialized():
            raise RuntimeError("Ray is not initialised: ray.init() (or iolab.emulator.ray_session) first")
        actor = ray.remote(num_cpus=0, max_restarts=0)(actor_class)
        handle = actor.options(name=name, namespace=namespace, max_concurrency=1000).remote(config)
        call(handle.ping.remote(), timeout=60)
        return cls(handle, name, namespace)

    def kill(self) -> None:
        import ray  # lazy: Ray only in a process that talks to an actor

        try:
            ray.kill(self._h, no_restart=True)
        except Exception:
            pass

    @property
    def handle(self) -> Any:
        return self._h
