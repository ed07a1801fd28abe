"""PSN on Ray: the same engine, one Ray actor per worker, each hosting a shard of the nodes.

Role: where PSN's users outgrow one process (Liu et al. ran a 100-node network on 12-24
machines). :class:`RayNetwork` has the API of :class:`engine.Network`; its workers
are Ray actors running the engine's one hosting loop (:class:`engine.Host`) for the nodes
placed on them, sending
each other msgpack batches (:mod:`engine.wire`) with no FIFO assumption, with counting-based
termination detection and recovery from a worker's death by rollback and replay of the
burst history. See ``docs/distributed.md``.

- :mod:`~psn.distributed.shard`: one worker's nodes and local loop (no Ray);
- :mod:`~psn.distributed.actor`: the Ray actor around a shard;
- :mod:`~psn.distributed.network`: :class:`RayNetwork`, :class:`WorkerPool`, the driver;
- :mod:`~psn.distributed.runtime`: ``ray.init`` on loopback or on a cluster (a bad or
  unreachable address fails fast, in one line), and Ray's failures as PSN errors.

This is the only package of PSN that imports ``ray``. Deliberately not here: the PSN
iteration (``engine``), annotation schemes (``provenance``), the simulator (``sim``).
"""

from __future__ import annotations

from .runtime import (ray_errors, resolve_ray_address, start_ray, startup_seconds, stop_ray,
                      translate_ray_error)
from .shard import Shard

_LAZY = {"RayNetwork", "WorkerPool"}


def __getattr__(name: str):
    # ``ray`` is imported only when the driver classes are first used, so that the CLI can
    # add this package's options cheaply
    if name in _LAZY:
        from . import network
        return getattr(network, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["RayNetwork", "WorkerPool", "Shard", "start_ray", "stop_ray", "startup_seconds",
           "resolve_ray_address", "translate_ray_error", "ray_errors"]
