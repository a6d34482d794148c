"""Start a local Ray for one run, or join one, and always leave it as found.

A local Ray is started with ``num_cpus`` (default 2), no dashboard (:func:`without_dashboard`)
and ``_node_ip_address=127.0.0.1``.  Ray replaces that address by the host's routable one
(``services.resolve_ip_for_localhost``), and its gRPC servers then bind every interface, unless
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` was in the environment when Ray was imported
(:data:`LOOPBACK_RAY_ENV`: the command line sets it for a local run, see
:mod:`iolab.cli.network`): then every server binds 127.0.0.1 (docs/emulator.md, "Network
exposure").  The apps join it with the GCS address this session reports, so they must run as
the same user with the same ``HOME`` and ``RAY_AUTH_MODE`` (Ray's auth token lives under ``~/.ray``).

    with RaySession.open() as session:       # starts Ray (or reuses the one already up)
        session.gcs_address                  # "host:port", for the apps' config
    # Ray is shut down here if this session started it
"""

from __future__ import annotations

import itertools
import os
import socket
from dataclasses import dataclass

from iolab.errors import RunError

_counter = itertools.count()

# The control plane above the apps (docs/emulator.md).  Ray starts its workers, and so every actor, at nice
# 15: below the apps' nice 10, an actor got a few % of a core under their load (a controller cycle timed
# out after 30 s; an actor's import of scikit-learn took 77 s instead of 2).  At nice 0, Ray's idle workers
# started ahead (num_cpus of them, at init and for the first driver) competed with the first run's apps (a
# 0.5 s phase took 2.4 s in CI), so none is: an actor starts its own worker, before the run's clock starts.
PRIORITY_ENV = {"RAY_worker_niceness": "0", "RAY_enable_worker_prestart": "0", "RAY_prestart_worker_first_driver": "0"}


def prepare_local_ray() -> None:
    """Set, unless already set, the environment a local Ray that runs real apps starts with (before
    ``ray.init``): workers at nice 0, none started ahead (:data:`PRIORITY_ENV`), and no memory monitor.
    Ray's memory monitor kills workers when the host runs low, and the arbiter actor is a worker: a
    neighbour's memory spike must not end the run.  Used by :meth:`RaySession.open` and by a sweep of
    real runs (``runtime: emulate``), so that a spec's apps and actors run at the same priorities
    either way."""
    os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")
    for key, value in PRIORITY_ENV.items():
        os.environ.setdefault(key, value)


# Keeps a Ray started or joined by a process that had it in its environment when it imported Ray on
# 127.0.0.1: its node address stays the loopback one, and Ray's servers (GCS, raylet, core workers,
# agents) bind that address instead of every interface.  Set for a local run by the command line
# (before Ray is imported), so that every process of the run inherits it (Ray's, the ranks, whose
# core workers join Ray); never for a run that spans hosts (the other hosts could not reach it).
LOOPBACK_RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def without_dashboard() -> None:
    """Start no dashboard process with a local Ray unless ``include_dashboard=True`` is asked for.
    Ray 2.60 starts its API server (``dashboard/dashboard.py --minimal``) on every head node even
    with ``include_dashboard=False``, and has no setting against it: this replaces
    ``Node.start_api_server`` so that it starts nothing then (iolab uses neither the job API nor
    the state API it serves).  Ray's ``DashboardAgent`` (metrics, started by the raylet) still runs:
    the raylet refuses an empty agent command.  Idempotent; a Ray without that method is left as it is.
    With ``slurm_ray.enable_driver_auth``, one of the two places iolab reaches into ``ray._private``."""
    from ray._private import node  # lazy: called just before ray.init

    original = getattr(node.Node, "start_api_server", None)
    if original is None or getattr(original, "_iolab_without_dashboard", False):
        return

    def start_api_server(self, *, include_dashboard, raise_on_failure):
        if include_dashboard:
            return original(self, include_dashboard=include_dashboard, raise_on_failure=raise_on_failure)
        return None

    start_api_server._iolab_without_dashboard = True
    node.Node.start_api_server = start_api_server


def token_path() -> str:
    """Where Ray keeps its authentication token (``RAY_AUTH_TOKEN_PATH``, else ``~/.ray/auth_token``)."""
    return os.environ.get("RAY_AUTH_TOKEN_PATH") or os.path.expanduser("~/.ray/auth_token")


def protect_token() -> None:
    """Make Ray's token file readable by its owner only (Ray writes it 0644: safe only as long as the
    home folder is closed).  A file of another user, or none, is left as it is."""
    path = token_path()
    try:
        st = os.stat(path)
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(path, 0o600)
    except OSError:
        pass


_HTTP2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # preface, empty SETTINGS


def unreachable(address: str, timeout: float = 3.0) -> str:
    """Why the Ray head at ``address`` (``host:port``, or ``ray://host:port``) cannot be joined ("" if it
    can; "" too for ``auto``, which Ray resolves itself): one TCP connection that opens an HTTP/2 session, as
    a gRPC client does, and must get the server's SETTINGS frame within ``timeout`` seconds.  ``ray.init``
    retries an address that never answers, or answers as something else, for minutes, inside C++ where no
    Python signal handler runs: deaf to SIGTERM meanwhile."""
    if address in ("auto", "local"):
        return ""
    hostport = address.split("://", 1)[1] if "://" in address else address
    host, _, port = hostport.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return "not host:port (or auto)"
    try:
        conn = socket.create_connection((host, int(port)), timeout=timeout)
    except socket.gaierror as exc:
        return f"host {host!r} not found ({exc.strerror or exc})"
    except OSError as exc:
        return f"nothing answers at {host}:{port} ({exc.strerror or exc})"
    try:
        with conn:
            conn.sendall(_HTTP2_HELLO)
            frame = b""
            while len(frame) < 9:
                got = conn.recv(9 - len(frame))
                if not got:
                    break
                frame += got
    except OSError:  # a timeout, a reset
        frame = b""
    if len(frame) < 9 or frame[3] != 4:  # a frame header: 3 bytes of length, then the type (4: SETTINGS)
        return f"{host}:{port} answers, but not as a Ray head (no gRPC reply within {timeout:g} s)"
    return ""


@dataclass
class RaySession:
    gcs_address: str
    namespace: str
    owned: bool  # this session called ray.init (and so shuts it down)

    @classmethod
    def open(cls, address: str | None = None, namespace: str | None = None, num_cpus: int = 2) -> "RaySession":
        import ray  # lazy: Ray only when a session opens (a run's checks come first)

        namespace = namespace or f"iolab-{os.getpid()}-{next(_counter)}"
        owned = False
        if not ray.is_initialized():
            try:
                why = unreachable(address) if address else ""
                if why:
                    raise ConnectionError(why)
                if address:
                    ray.init(address=address, namespace=namespace, log_to_driver=False, logging_level="ERROR")
                else:
                    prepare_local_ray()
                    without_dashboard()
                    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
                             namespace=namespace, log_to_driver=False, logging_level="ERROR")
            except Exception as exc:
                where = f"join Ray at {address}" if address else "start a local Ray"
                raise RunError(f"cannot {where}: {type(exc).__name__}: {exc}") from None
            owned = True
        protect_token()
        return cls(ray.get_runtime_context().gcs_address, namespace, owned)

    def close(self) -> None:
        import ray  # lazy: Ray only when a session is open

        if self.owned and ray.is_initialized():
            ray.shutdown()
            self.owned = False

    def __enter__(self) -> "RaySession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
