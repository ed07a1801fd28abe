"""Starting and stopping Ray for PSN: local by default, or joining a cluster, failing fast.

Role: one place that calls ``ray.init``, and one place that turns Ray's failures into
one-line PSN errors. Locally (no address) Ray runs on this machine only: bound to loopback
(``127.0.0.1``, with Ray's single-machine mode), dashboard off, usage statistics off, worker
logs not forwarded to the driver, ``num_cpus`` sized for a small machine (2 by default) and
a small object store (PSN ships only small msgpack batches). ``address="HOST:6379"`` (or
``"auto"``) joins a running cluster started with ``ray start --head`` /
``ray start --address=HEAD:6379``; ``ray://HOST:10001`` connects through Ray Client.

Joining never hangs: before ``ray.init`` is called, the address is checked in three steps
that together take about ``connect_timeout`` seconds at most (10 s by default), and any
failure is an :class:`~ndlog.errors.InputError` with a one-line message:

1. syntax: ``HOST:PORT`` with a numeric port, ``auto``, ``local`` or ``ray://HOST[:PORT]``;
   ``auto`` is resolved as Ray documents it (``RAY_ADDRESS``, else the cluster that
   ``ray start`` recorded on this machine);
2. reachability: a plain TCP connection to ``HOST:PORT`` (host name lookup included), on
   the address Ray will really use (Ray replaces a loopback host by this machine's address
   unless its single-machine mode is on);
3. handshake (GCS addresses only): a short-lived helper process asks the address for its
   Ray cluster id and checks that this machine runs a node of that cluster (a driver joining
   by ``HOST:PORT`` must). The helper runs with Ray's connect timeouts shortened, its output
   is discarded, and it is killed if it overruns, so neither Ray's retry loops nor its logs
   reach the user. When Ray's internals needed for this check are missing (another Ray
   version), the check is skipped. A ``ray://`` address gets steps 1-2, then Ray Client's
   own connection retries.

:func:`translate_ray_error` maps Ray's runtime failures (a worker lost beyond recovery, out
of memory, a full object store, a timeout, a Ray system error) to one
:class:`~ndlog.errors.EvaluationError` naming a fix; :func:`ray_errors` applies it around a
block of code. The time ``ray.init`` took is kept (:func:`startup_seconds`) so that
benchmarks report Ray start-up separately from evaluation.

Ctrl-C and SIGTERM are held back while ``ray.init`` runs (a few seconds locally) and acted
on when it returns: interrupted in the middle, it left Ray's agents running with no one to
stop them. A second Ctrl-C acts at once (a way out of a start-up that hangs). Ray's own
SIGTERM handlers for the driver are not installed: the handler from before ``ray.init``
stays (under ``psn``, SIGTERM stops the command as Ctrl-C does), and a program that left
SIGTERM at its default action gets one that exits through ``SystemExit`` instead, so that
Ray is shut down on the way out either way.

Deliberately not here: actors (``psn.distributed.actor``), runs and recovery
(``psn.distributed.network``), command-line options (``psn.cli``).
"""

from __future__ import annotations

import ipaddress
import logging
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Iterator

from ndlog.errors import EvaluationError, InputError, PSNError
from ndlog.signals import held, in_main_thread

__all__ = ["start_ray", "stop_ray", "startup_seconds", "resolve_ray_address",
           "parse_ray_address", "RayAddress", "translate_ray_error", "ray_errors",
           "LOCAL_CPUS", "DEFAULT_CONNECT_TIMEOUT"]

#: CPUs a local Ray runtime advertises (this project's machines have 2 cores).
LOCAL_CPUS = 2

#: Seconds allowed for checking a cluster address (see the module docstring).
DEFAULT_CONNECT_TIMEOUT = 10.0

#: Ray Client's default port (``ray://HOST`` without a port).
RAY_CLIENT_PORT = 10001

_STATE = {"started": False, "seconds": 0.0}

_FORMS = ("expected HOST:PORT as printed by `ray start --head` (e.g. 127.0.0.1:6379), "
          "'auto', 'local' or ray://HOST[:PORT]")


# --------------------------------------------------------------------------- addresses

@dataclass(frozen=True)
class RayAddress:
    """A syntactically valid address of a Ray cluster.

    Attributes
    ----------
    host, port:
        Where the cluster listens (the GCS, or the Ray Client server when ``client``).
    client:
        ``True`` for a ``ray://`` address (Ray Client).
    origin:
        How the user wrote it, for messages (``'auto'`` keeps a note of where it was found).
    """

    host: str
    port: int
    client: bool = False
    origin: str = ""

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'ray://' if self.client else ''}{host}:{self.port}"

    def described(self) -> str:
        """The address for messages, with how the user wrote it if that differs."""
        text = str(self)
        return text if self.origin in ("", text) else f"{self.origin} (that is, {text})"


def parse_ray_address(text: str, origin: str | None = None) -> RayAddress:
    """Check the syntax of a concrete Ray address (``HOST:PORT`` or ``ray://HOST[:PORT]``).

    Parameters
    ----------
    text:
        The address. ``auto`` and ``local`` are not concrete: see
        :func:`resolve_ray_address`.
    origin:
        How the user wrote it, kept for messages (default ``text``).

    Returns
    -------
    RayAddress

    Raises
    ------
    InputError
        If ``text`` is not of one of the accepted forms, or its port is not a number
        between 1 and 65535.
    """
    raw = str(text).strip()
    origin = origin if origin is not None else raw
    rest, client = raw, False
    if "://" in raw:
        scheme, rest = raw.split("://", 1)
        if scheme != "ray":
            raise InputError(f"Ray address {origin!r}: unknown scheme {scheme + '://'!r}; "
                             f"{_FORMS}")
        client = True
    host, port = _split_host_port(rest, origin, RAY_CLIENT_PORT if client else None)
    return RayAddress(host, port, client, origin)


def _split_host_port(text: str, origin: str, default_port: int | None) -> tuple[str, int]:
    text = text.rstrip("/")
    if text.startswith("["):                       # [IPv6]:PORT
        host, _, tail = text[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else None
        if tail and port is None:
            raise InputError(f"Ray address {origin!r} is not valid; {_FORMS}")
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:
        host, port = text, None
    if not _valid_host(host) or (port is None and default_port is None):
        raise InputError(f"Ray address {origin!r} is not valid; {_FORMS}")
    if port is None:
        return host, default_port
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise InputError(f"Ray address {origin!r}: the port {port!r} is not a number "
                         f"between 1 and 65535")
    return host, int(port)


def _valid_host(host: str) -> bool:
    if not host:
        return False
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    labels = host.rstrip(".").split(".")
    return all(label and len(label) <= 63 and label[0] != "-" and label[-1] != "-"
               and all(c.isalnum() or c in "-_" for c in label) for label in labels)


def _auto_address() -> tuple[str, str]:
    """``(address, where it was found)`` for ``auto``, as Ray resolves it: ``RAY_ADDRESS``,
    else the address ``ray start`` recorded in Ray's temporary directory."""
    env = os.environ.get("RAY_ADDRESS", "").strip()
    if env and env not in ("auto", "local"):
        return env, "from RAY_ADDRESS"
    path = _recorded_address_file()
    try:
        with open(path, encoding="utf-8") as fh:
            recorded = fh.read().strip()
    except OSError:
        recorded = ""
    if not recorded:
        raise InputError("Ray address 'auto': no running Ray cluster found (RAY_ADDRESS is "
                         "not set and `ray start --head` has not recorded one on this "
                         "machine); start one with `ray start --head`, or give HOST:PORT")
    return recorded, f"as recorded in {path}"


def _recorded_address_file() -> str:
    """Where ``ray start`` records the address of the cluster it started or joined."""
    try:
        from ray._private.utils import get_ray_address_file
        return get_ray_address_file(None)
    except (ImportError, AttributeError):   # another Ray: its documented default place
        base = os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp"
        return os.path.join(base, "ray", "ray_current_cluster")


def resolve_ray_address(address: str | None,
                        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> str | None:
    """Check that a Ray cluster can be joined at ``address``, without calling ``ray.init``.

    Parameters
    ----------
    address:
        ``None`` or ``"local"`` for a private local runtime (``None`` honours
        ``RAY_ADDRESS`` when it is set, as Ray does); ``"auto"``, ``"HOST:PORT"`` or
        ``"ray://HOST[:PORT]"`` for a cluster.
    connect_timeout:
        Seconds allowed for the network checks together (a positive number).

    Returns
    -------
    str or None
        The address to give ``ray.init``, or ``None`` for a local runtime.

    Raises
    ------
    InputError
        With a one-line message if the address is malformed, names no cluster, cannot be
        reached within ``connect_timeout``, or is not a Ray cluster this machine can join.
    """
    timeout = _timeout_seconds(connect_timeout)
    text, origin = _requested(address)
    if text is None:
        return None
    target = parse_ray_address(text, origin)
    if target.client:
        _require_ray_client(target)
    else:
        target = _as_ray_connects(target)
    deadline = time.monotonic() + timeout
    _probe_tcp(target, timeout)
    if not target.client:
        _handshake(target, max(deadline - time.monotonic(), 1.0), timeout)
    return str(target)


def _requested(address: str | None) -> tuple[str | None, str | None]:
    """``(concrete address or None for a local runtime, how it was given)``."""
    origin = None
    if address is None:
        address = os.environ.get("RAY_ADDRESS", "").strip() or None
        if address is None:
            return None, None
        origin = f"RAY_ADDRESS={address}"
    text = str(address).strip()
    if text == "local":
        return None, None
    if text == "auto":
        text, found = _auto_address()
        origin = f"'auto' {found}"
    return text, origin


def _as_ray_connects(target: RayAddress) -> RayAddress:
    """The address ``ray.init`` will really connect to: Ray replaces a loopback host by this
    machine's address (unless its single-machine mode is on), and a cluster's GCS listens
    on that address only."""
    try:
        from ray._private.services import resolve_ip_for_localhost
    except ImportError:   # another Ray: check the address as given
        return target
    host = resolve_ip_for_localhost(target.host)
    return target if host == target.host else replace(target, host=host)


def _timeout_seconds(value) -> float:
    """``value`` as seconds: a finite number above 0 (the command line has made its text
    a float; a string or a bool from Python is refused, not converted)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    seconds = float(value) if number else float("nan")
    if not math.isfinite(seconds) or seconds <= 0:
        raise InputError(f"the Ray connect timeout must be a positive number of seconds, "
                         f"got {value!r}")
    return seconds


def _require_ray_client(target: RayAddress) -> None:
    import importlib.util
    if importlib.util.find_spec("grpc") is None:
        raise InputError(f"Ray address {target.described()} uses Ray Client, which is not "
                         f"installed: pip install 'ray[client]'")


# --------------------------------------------------------------------------- network checks

def _probe_tcp(target: RayAddress, timeout: float) -> None:
    """Open (and close) a TCP connection to the address, within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    infos = _lookup(target, timeout)
    last: OSError | None = None
    for family, kind, proto, _, sockaddr in infos:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        with socket.socket(family, kind, proto) as sock:
            sock.settimeout(left)
            try:
                sock.connect(sockaddr)
                return
            except OSError as exc:
                last = exc
    raise InputError(f"cannot reach the Ray cluster at {target.described()}: "
                     f"{_why_unreachable(last, target, timeout)}")


def _why_unreachable(exc: OSError | None, target: RayAddress, timeout: float) -> str:
    if isinstance(exc, ConnectionRefusedError):
        start = "a Ray Client server" if target.client else "`ray start --head`"
        return (f"connection refused: nothing listens on port {target.port} there (start "
                f"the cluster with {start}, or check the address)")
    if exc is None or isinstance(exc, (socket.timeout, TimeoutError)):
        return f"no answer within {timeout:g} s (host down, wrong address or a firewall)"
    return exc.strerror or str(exc)


def _lookup(target: RayAddress, timeout: float) -> list:
    """``getaddrinfo`` for the address, given up after ``timeout`` seconds (a name lookup
    cannot be interrupted, so it runs in a daemon thread that is left behind if late)."""
    result: dict = {}

    def work() -> None:
        try:
            result["infos"] = socket.getaddrinfo(target.host, target.port,
                                                 type=socket.SOCK_STREAM)
        except OSError as exc:
            result["error"] = exc

    worker = threading.Thread(target=work, name="psn-ray-lookup", daemon=True)
    worker.start()
    worker.join(timeout)
    if "infos" in result and result["infos"]:
        return result["infos"]
    if worker.is_alive():
        why = f"no answer from the name service within {timeout:g} s"
    else:
        error = result.get("error")
        why = f"cannot resolve the host name {target.host!r}" + (
            f" ({error.strerror})" if error is not None and error.strerror else "")
    raise InputError(f"cannot reach the Ray cluster at {target.described()}: {why}")


# The handshake helper: exit 0 if the address is the GCS of a Ray cluster with a live node
# on this machine; 10 if nothing answers as a GCS; 11 if the GCS refused (message on stdout);
# 13 if no node of that cluster runs here; 12 if this Ray lacks what the check needs.
_HANDSHAKE = """\
import sys
try:
    from ray._raylet import GcsClient
    from ray._private.services import find_node_ids
    from ray.core.generated.gcs_pb2 import GcsNodeInfo
    from ray.exceptions import RpcError
except ImportError:
    sys.exit(12)
address, timeout = sys.argv[1], float(sys.argv[2])
try:
    client = GcsClient(address=address)
    nodes = client.get_all_node_info(timeout=timeout,
                                     state_filter=GcsNodeInfo.GcsNodeState.ALIVE)
except RpcError as exc:
    print(str(exc).splitlines()[0] if str(exc) else "")
    sys.exit(10 if exc.rpc_code in (4, 14) else 11)
except (AttributeError, TypeError):
    sys.exit(12)
alive = {info.node_id.hex() for info in nodes.values()}
sys.exit(0 if alive & set(find_node_ids()) else 13)
"""


def _handshake(target: RayAddress, budget: float, timeout: float) -> None:
    """Ask ``target`` for its cluster id from a helper process (see the module docstring)."""
    phase = str(max(1, int(budget // 3)))         # connect, pubsub connect, cluster id
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0",
               RAY_gcs_rpc_server_connect_timeout_s=phase,
               RAY_py_gcs_connect_timeout_s=phase, RAY_gcs_server_port_wait_time_s="1")
    try:
        done = subprocess.run([sys.executable, "-c", _HANDSHAKE, str(target), phase],
                              env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=budget + 10)   # + start-up of the helper
    except subprocess.TimeoutExpired:
        code, said = 10, ""
    else:
        code, said = done.returncode, done.stdout.strip()
    where = target.described()
    if code == 10:
        raise InputError(f"no Ray cluster answers at {where} within {timeout:g} s: something "
                         f"listens there, but not a Ray head node's GCS port (the one "
                         f"`ray start --head` prints, 6379 by default)")
    if code == 11:
        raise InputError(f"the Ray cluster at {where} refused the connection: {said}")
    if code == 13:
        raise InputError(f"this machine is not a node of the Ray cluster at {where}: run "
                         f"`ray start --address={target}` here first, or connect with "
                         f"Ray Client (ray://HOST:{RAY_CLIENT_PORT})")


# --------------------------------------------------------------------------- start and stop

def start_ray(address: str | None = None, *, num_cpus: int | None = None,
              object_store_mb: int = 256,
              connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> float:
    """Make sure Ray is initialized; returns the seconds ``ray.init`` took (0 if Ray was
    already up in this process).

    Parameters
    ----------
    address:
        ``None`` (or ``"local"``) for a private local runtime on loopback; ``"HOST:PORT"``,
        ``"auto"`` or ``"ray://HOST[:PORT]"`` to join an existing cluster (``ray start
        --head`` prints the address). ``None`` follows ``RAY_ADDRESS`` when it is set.
    num_cpus:
        CPUs of the local runtime (default :data:`LOCAL_CPUS`; ignored with ``address``).
    object_store_mb:
        Object store size of the local runtime. Its workers run at normal priority
        (``worker_niceness`` 0): at Ray's default, niceness 15, they got almost no CPU
        beside any other busy process.
    connect_timeout:
        Seconds allowed for checking a cluster address (see the module docstring).
        An address is checked even when Ray is already up, so a bad one always fails.

    Raises
    ------
    InputError
        With a one-line message, within about ``connect_timeout`` seconds, if the address
        is malformed or no Ray cluster this machine can join answers there.
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    target = resolve_ray_address(address, connect_timeout)
    import ray
    if ray.is_initialized():
        return 0.0
    t0 = time.perf_counter()
    _sigterm_exits()
    with held(note="psn: stopping once Ray has started, so that none of its processes "
                   "are left running (Ctrl-C again stops at once)", again_now=True), \
            _without_ray_sigterm_handlers():
        if target:
            _join(ray, target)
        else:
            _loopback_only()
            _quiet_token_notice()
            ray.init(address="local", num_cpus=num_cpus or LOCAL_CPUS,
                     include_dashboard=False, _node_ip_address="127.0.0.1",
                     log_to_driver=False, configure_logging=False,
                     object_store_memory=object_store_mb * 2**20,
                     _system_config={"worker_niceness": 0})
        _STATE["started"] = True
    _STATE["seconds"] = time.perf_counter() - t0
    return _STATE["seconds"]


def _sigterm_exits() -> None:
    """In a program that leaves SIGTERM at its default action (a script, a notebook; not
    the ``psn`` command, which has its own handler), SIGTERM raises ``SystemExit(143)``
    from now on, as Ray's own driver handler did (with status 15): ``finally`` blocks and
    Ray's shutdown at exit run, where the default action ended the process and left Ray's
    processes running. Main thread only."""
    if in_main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _exit_on_sigterm)


def _exit_on_sigterm(signum, frame):
    sys.exit(128 + signum)


@contextmanager
def _without_ray_sigterm_handlers() -> Iterator[None]:
    """Ray's ``ray.init`` installs two SIGTERM handlers of its own in the driver: one
    exits at once, leaving the half-started node's agents running, and the handler from
    before ``ray.init`` (the command's, or :func:`_sigterm_exits`'s) is kept instead, so
    they are not installed. Ray without this function (another version): nothing
    changes."""
    try:
        from ray._private import utils
    except ImportError:
        utils = None
    install = getattr(utils, "set_sigterm_handler", None)
    if install is None:
        yield
        return
    utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        utils.set_sigterm_handler = install


def _join(ray, target: str) -> None:
    """``ray.init`` on a checked address; Ray's failures become one-line InputErrors. Ray's
    connect loop is limited to one attempt (it would retry 20 times otherwise)."""
    saved = os.environ.get("RAY_gcs_server_port_wait_time_s")
    os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "1")
    try:
        ray.init(address=target, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
        raise InputError(f"cannot join the Ray cluster at {target}: "
                         f"{_first_line(exc)}") from None
    finally:
        if saved is None:
            os.environ.pop("RAY_gcs_server_port_wait_time_s", None)


#: Ray's logger that announces, at every new local cluster, the token authentication it
#: turns on by default
_TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"


class _TokenNotice(logging.Filter):
    """Drops Ray's notice that a new local cluster has token authentication on (it stays
    on): a line on stderr at every ``psn run --engine ray`` that asks nothing of the user."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(
            "Token authentication is enabled for this Ray cluster.")


def _quiet_token_notice() -> None:
    """Install :class:`_TokenNotice` on Ray's authentication logger, once."""
    logger = logging.getLogger(_TOKEN_LOGGER)
    if not any(isinstance(f, _TokenNotice) for f in logger.filters):
        logger.addFilter(_TokenNotice())


def _loopback_only() -> None:
    """Make a local runtime bind to 127.0.0.1. Ray replaces a loopback
    ``_node_ip_address`` by the machine's reachable address unless its single-machine mode
    is on (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read into ``ray_constants`` at import
    and inherited by the processes Ray starts)."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    try:
        from ray._private import ray_constants
        ray_constants.ENABLE_RAY_CLUSTER = False
    except (ImportError, AttributeError):  # a Ray without the switch: nothing to do
        pass


def startup_seconds() -> float:
    """Seconds the last :func:`start_ray` spent in ``ray.init`` (0 if it did not start Ray)."""
    return _STATE["seconds"]


def stop_ray() -> None:
    """Shut Ray down if :func:`start_ray` started it in this process."""
    import ray
    if _STATE["started"] and ray.is_initialized():
        ray.shutdown()
    _STATE["started"] = False


# --------------------------------------------------------------------------- Ray's failures

_MEMORY_FIX = ("run fewer --workers, a smaller topology or smaller bursts, or give Ray more "
               "memory")

# (names of ray.exceptions classes, message) checked in order; the first match wins
_RAY_FAILURES = (
    (("OutOfMemoryError",), f"Ray ran out of memory and killed a worker; {_MEMORY_FIX}"),
    (("ObjectStoreFullError",), f"Ray's object store is full; {_MEMORY_FIX}"),
    (("OutOfDiskError",), "the disk is full, so Ray cannot spill its object store; free "
                          "disk space or run fewer --workers"),
    (("ActorUnschedulableError", "TaskUnschedulableError"),
     "Ray cannot place a worker: the cluster has no node with the resources it needs; run "
     "fewer --workers or add nodes"),
    (("GetTimeoutError",), "a Ray worker did not answer in time (the machine may be "
                           "overloaded or swapping); run fewer --workers or a smaller "
                           "topology"),
    (("RayActorError", "WorkerCrashedError", "NodeDiedError", "LocalRayletDiedError",
      "ObjectLostError"),
     "a Ray worker was lost beyond recovery{why}; run fewer --workers or a smaller "
     "topology, and check the machine's memory"),
    (("RaySystemError",), "Ray itself failed ({detail}); rerun, and see Ray's logs (in "
                          "/tmp/ray/session_latest/logs by default)"),
)


def translate_ray_error(exc: BaseException) -> PSNError | None:
    """The PSN error to show for an exception raised by Ray, or ``None``.

    Parameters
    ----------
    exc:
        An exception caught around Ray calls.

    Returns
    -------
    PSNError or None
        For a PSN error raised inside a worker: that error itself (unwrapped from Ray's
        task error, so it renders with its caret). For Ray's own failures (out of memory,
        full object store, a worker or node lost, a timeout, an unschedulable worker, a
        Ray system error, any other Ray error): an
        :class:`~ndlog.errors.EvaluationError` with a one-line message that names a fix,
        chained to ``exc``. ``None`` for anything else, including a bug in PSN's own code
        inside a worker (a task error with an ordinary cause), which should stay a
        traceback.
    """
    exceptions = sys.modules.get("ray.exceptions")
    if exceptions is None or not isinstance(exc, exceptions.RayError):
        return None
    if isinstance(exc, exceptions.RayTaskError):
        return _task_error(exc, exceptions)
    err = EvaluationError(_failure_message(exc, exceptions))
    err.__cause__ = exc
    return err


def _task_error(exc, exceptions) -> PSNError | None:
    cause = getattr(exc, "cause", None)
    if isinstance(cause, PSNError):
        return cause
    if isinstance(cause, MemoryError):
        err = EvaluationError(f"a Ray worker ran out of memory; {_MEMORY_FIX}")
        err.__cause__ = exc
        return err
    if isinstance(cause, exceptions.RayError) and not isinstance(cause,
                                                                 exceptions.RayTaskError):
        return translate_ray_error(cause)
    return None


def _failure_message(exc, exceptions) -> str:
    detail = _first_line(exc)
    for names, message in _RAY_FAILURES:
        kinds = tuple(getattr(exceptions, n) for n in names if hasattr(exceptions, n))
        if kinds and isinstance(exc, kinds):
            oom = "memory" in str(exc).lower()
            if oom and "{why}" in message:
                return f"a Ray worker was killed for lack of memory; {_MEMORY_FIX}"
            return message.format(why=f" ({detail})" if detail else "", detail=detail)
    return f"Ray failed: {detail or type(exc).__name__}"


def _first_line(exc: BaseException, limit: int = 160) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    return text if len(text) <= limit else text[:limit - 3] + "..."


@contextmanager
def ray_errors() -> Iterator[None]:
    """Turn Ray's failures inside the ``with`` block into PSN errors.

    A Ray exception for which :func:`translate_ray_error` has a PSN error is raised as that
    error (chained to Ray's); anything else propagates unchanged.
    """
    import ray.exceptions
    try:
        yield
    except ray.exceptions.RayError as exc:
        err = translate_ray_error(exc)
        if err is None:
            raise
        raise err from exc
