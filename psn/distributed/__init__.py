"""PSN on Ray: the same engine, one Ray actor per worker, each hosting a shard of the nodes.

Role: where PSN's users outgrow one process (issue 7; Liu et al. ran a 100-node network on
12-24 machines). :class:`RayNetwork` has the API of :class:`engine.Network`; its workers
are Ray actors running :class:`engine.Node` objects for the nodes placed on them, sending
each other msgpack batches (:mod:`engine.wire`) with no FIFO assumption, with counting-based
termination detection and recovery from a worker's death by rollback and replay of the
burst history. See ``docs/distributed.md``.

- :mod:`~psn.distributed.shard`: one worker's nodes and local loop (no Ray);
- :mod:`~psn.distributed.actor`: the Ray actor around a shard;
- :mod:`~psn.distributed.network`: :class:`RayNetwork`, :class:`WorkerPool`, the driver;
- :mod:`~psn.distributed.runtime`: ``ray.init`` on loopback or on a cluster;
- :mod:`~psn.distributed.cli`: ``psn run --engine ray`` options and runner.

This is the only package of PSN that imports ``ray``. Deliberately not here: the PSN
iteration (``engine``), annotation schemes (``provenance``), the simulator (``sim``).
"""

from __future__ import annotations

from .runtime import start_ray, startup_seconds, stop_ray
from .shard import Shard, ShardMap, stable_hash

_LAZY = {"RayNetwork", "WorkerPool", "CaptureTransport"}


def __getattr__(name: str):
    # ``ray`` is imported only when the driver classes are first used, so that the CLI can
    # add this package's options cheaply
    if name in _LAZY:
        from . import network
        return getattr(network, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["RayNetwork", "WorkerPool", "CaptureTransport", "Shard", "ShardMap",
           "stable_hash", "start_ray", "stop_ray", "startup_seconds", "cli_options",
           "run_from_args"]


def cli_options(parser) -> None:
    """Add ``--workers`` and ``--address`` to an argparse parser (see :mod:`.cli`)."""
    from .cli import cli_options as _opts
    _opts(parser)


def run_from_args(args, program=None) -> int:
    """Run ``psn run --engine ray`` from parsed arguments (see :mod:`.cli`)."""
    from .cli import run_from_args as _run
    return _run(args, program)
