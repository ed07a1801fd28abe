"""Starting and stopping Ray for PSN: local by default, or joining a cluster.

Role: one place that calls ``ray.init``. Locally (no address) Ray runs on this machine only:
bound to loopback (``127.0.0.1``, with Ray's single-machine mode), dashboard off, usage
statistics off, worker logs not forwarded to the driver, ``num_cpus`` sized for a small
machine (2 by default) and a small object store (PSN ships only small msgpack batches).
``address="HOST:6379"`` (or ``"auto"``) joins a running cluster started with
``ray start --head`` / ``ray start --address=HEAD:6379`` (RUNTIME.md Sec. 7). The time
``ray.init`` took is kept (:func:`startup_seconds`) so that benchmarks report Ray start-up
separately from evaluation.

Deliberately not here: actors (``psn.distributed.actor``), runs (``psn.distributed.network``).
"""

from __future__ import annotations

import os
import time

__all__ = ["start_ray", "stop_ray", "startup_seconds", "LOCAL_CPUS"]

#: CPUs a local Ray runtime advertises (this project's machines have 2 cores).
LOCAL_CPUS = 2

_STATE = {"started": False, "seconds": 0.0}


def start_ray(address: str | None = None, *, num_cpus: int | None = None,
              object_store_mb: int = 256) -> float:
    """Make sure Ray is initialized; returns the seconds ``ray.init`` took (0 if Ray was
    already up in this process).

    Parameters
    ----------
    address:
        ``None`` for a private local runtime on loopback; ``"HOST:PORT"`` or ``"auto"`` to
        join an existing cluster (``ray start --head`` prints the address).
    num_cpus:
        CPUs of the local runtime (default :data:`LOCAL_CPUS`; ignored with ``address``).
    object_store_mb:
        Object store size of the local runtime.
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray
    if ray.is_initialized():
        return 0.0
    t0 = time.perf_counter()
    if address:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    else:
        _loopback_only()
        ray.init(num_cpus=num_cpus or LOCAL_CPUS, include_dashboard=False,
                 _node_ip_address="127.0.0.1", log_to_driver=False,
                 configure_logging=False, object_store_memory=object_store_mb * 2**20)
    _STATE["started"] = True
    _STATE["seconds"] = time.perf_counter() - t0
    return _STATE["seconds"]


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
