"""One worker's shard of a PSN network: the nodes it hosts, behind a worker transport.

Role: the pure, Ray-free half of a distributed worker (a worker is a process hosting many
nodes). A :class:`Shard` runs the engine's one hosting loop (:class:`engine.Host`: pick,
fire, commit, route, encode, count) over a :class:`ShardTransport`, the transport of a Ray
worker: an update for a node of this worker stays in the process (decoded from its wire
bytes only when its annotations are bound to another context, like the in-memory
transport), an update for a node of another worker is encoded in the sender's context,
counted by the same :class:`engine.transport.Meter` as every transport, and **batched per
destination worker**: one msgpack payload ``[[dst node, message bytes], ...]`` per
destination worker and per call, so one Ray call carries many messages.

Besides the engine's counters, a shard counts the batches it sent and received; the
driver's termination detection compares them.

Deliberately not here: Ray (``psn.distributed.actor`` wraps a shard in an actor),
termination detection and recovery (``psn.distributed.network``), the PSN iteration
(``engine``).
"""

from __future__ import annotations

from typing import Any

from engine import Host
from engine.placement import Placement
from engine.transport import LogicalClock, Meter, Metered
from ndlog.packing import packb, unpackb

__all__ = ["Shard", "ShardTransport", "pack", "unpack"]


def pack(obj) -> bytes:
    """msgpack, bytes kept as bytes (the one encoding of everything between processes;
    NDlog values as :mod:`ndlog.packing` writes them)."""
    return packb(obj)


def unpack(data: bytes):
    """Inverse of :func:`pack`; arrays decode as tuples (NDlog values, node ids)."""
    return unpackb(data)


class ShardTransport(Metered):
    """The transport of one Ray worker (see the module docstring).

    Parameters
    ----------
    index:
        This worker's index.
    placement:
        Node to worker index (the driver's :class:`~engine.placement.Placement`).
    roundtrip:
        Rebuild every message between two nodes of this worker from its bytes, too.
    """

    def __init__(self, index: int, placement: Placement, roundtrip: bool = False):
        self.index = index
        self.clock = LogicalClock()
        self.meter = Meter(placement, roundtrip)
        self.meter.bytes_across = True          # another worker is another process
        self.outbox: dict[int, list] = {}
        self._local: list[tuple[Any, list]] = []
        self._count = 0


    def send(self, src: Any, dst: Any, updates: list) -> None:
        """Keep updates for this worker's nodes; encode and batch the others."""
        meter = self.meter
        if src is None or src == dst:
            if src is not None:
                meter.local(src, len(updates))
            self._keep(dst, updates)
            return
        data, _, crosses = meter.encode(src, dst, updates)
        if crosses:
            self.outbox.setdefault(self.placement.worker(dst), []).append((dst, data))
        elif data is not None:                  # the receiver decodes it (must_rebuild)
            self._keep(dst, meter.rebuild(dst, data))
        else:
            self._keep(dst, updates)

    def _keep(self, dst: Any, updates: list) -> None:
        self._local.append((dst, updates))
        self._count += len(updates)

    def receive(self, dst: Any, data: bytes) -> None:
        """A message from another worker, decoded in ``dst``'s context."""
        self._keep(dst, self.meter.rebuild(dst, data))

    def poll_batches(self) -> list[tuple[Any, list]]:
        """Every message kept for this worker's nodes, in send order."""
        out, self._local, self._count = self._local, [], 0
        if out:
            self.clock.tick()
        return out

    def in_flight(self) -> int:
        return self._count

    def take_outbox(self) -> list[tuple[int, bytes]]:
        """The batches to send, one ``(destination worker, payload)`` per destination."""
        if not self.outbox:
            return []
        out = [(w, pack(msgs)) for w, msgs in self.outbox.items()]
        self.outbox = {}
        return out


class Shard:
    """The nodes of one worker and their loop (see the module docstring).

    Parameters
    ----------
    index:
        This worker's index (``0 .. workers-1``).
    program:
        An :class:`engine.EngineProgram` (from :func:`engine.prepare`).
    resolved:
        The run's :class:`engine.options.Resolved` options (scheme, MinShip, aggregate
        selection, batch, roundtrip).
    placement:
        Node to worker index.
    on_node:
        Called with every new node, as :class:`engine.Network`'s ``on_node``.
    """

    def __init__(self, index: int, program, resolved, placement: Placement, *,
                 on_node=None):
        opts = resolved.options
        self.index = index
        self.guard = opts.memory_guard(share=placement.workers or 1)
        self.transport = ShardTransport(index, placement, opts.roundtrip)
        scheme = resolved.scheme
        shared = getattr(scheme, "shared", None)
        if shared is not None and (placement.workers or 1) > 1:
            # a total budget is the network's, as in one process: each worker counts its
            # own, so each holds its share (as with the memory ceiling)
            scheme = shared(placement.workers)
        self.host = Host(program, scheme, self.transport, batch=opts.batch,
                         stages=resolved.stages(program, placement), on_node=on_node,
                         flush_period=resolved.flush_period)
        self.batches_sent = 0
        self.batches_received = 0
        self.dropped_deletions = 0
        self.scheme = scheme
        self.max_updates = resolved.max_updates
        self._limit: int | None = None

    def place(self, data: bytes) -> None:
        """Tell the scheme where base insertions live: ``data`` is :func:`pack` of
        ``(seq, node)`` pairs from the driver
        (:meth:`~provenance.base.AnnotationScheme.place`)."""
        if data:
            place = self.scheme.place
            for seq, node in unpack(data):
                place(seq, node)

    def begin_run(self) -> None:
        """A burst arrives from the driver: the run's bound on the updates this worker's
        nodes send (``max_updates``, finite by default for a scheme that may not terminate)
        counts from here, as :meth:`engine.Network.run` counts per run."""
        if self.max_updates is not None:
            self._limit = self._sent() + self.max_updates

    def _sent(self) -> int:
        totals = self.transport.metrics.totals
        return totals["tuples_sent"] + totals["local_tuples"]

    def _beat(self, deliveries: int, in_flight: int) -> None:
        """Stop past the run's bound (called by the host after every delivery: a scheme
        that does not terminate loops within one call, among this worker's nodes)."""
        if self._limit is not None and self._sent() > self._limit:
            from engine.network import NotConvergedError
            raise NotConvergedError(self.max_updates, self.scheme)

    @property
    def nodes(self) -> dict:
        return self.host.nodes

    def receive_payload(self, payload: bytes, counted: bool = True) -> None:
        """Queue the messages of one batch ``[[dst node, message bytes], ...]`` and run the
        local loop. ``counted``: a batch from another worker (not an injection)."""
        if counted:
            self.batches_received += 1
        for dst, data in unpack(payload):
            self.transport.receive(dst, data)
        self.host.run(heartbeat=self._beat, flush=False, guard=self.guard.check,
                      step_guard=self.guard.check_soon)

    def flush(self) -> int:
        """End of stream at this worker's nodes (the driver decides when); runs the local
        loop and returns how many updates the flush sent."""
        n = self.host.flush()
        if n:
            self.host.run(heartbeat=self._beat, flush=False, guard=self.guard.check,
                          step_guard=self.guard.check_soon)
        return n

    def take_outbox(self) -> list[tuple[int, bytes]]:
        """The batches to send; counts them as sent."""
        out = self.transport.take_outbox()
        self.batches_sent += len(out)
        return out

    def check_waiting(self) -> str | None:
        """After global quiescence: deletions that never found their occurrence (dropped
        and counted for schemes without exact deletions, else an error message)."""
        dropped, problem = self.host.check_waiting()
        self.dropped_deletions += dropped
        return problem

    def relations_of(self, preds) -> dict[str, list[tuple]]:
        """``pred -> tuples`` present at this worker's nodes, for ``preds``."""
        return {p: list(ts) for p, ts in self.host.relations(preds).items() if ts}

    def multiset(self, pred: str) -> list[tuple[tuple, int]]:
        return list(self.host.multiset(pred).items())

    def report(self) -> dict:
        """The host's report (:meth:`engine.Host.report`) with this worker's batch
        counters and dropped deletions."""
        rep = self.host.report()
        for row in rep["nodes"].values():
            row["worker"] = self.index
        rep.update(batches_sent=self.batches_sent, batches_received=self.batches_received,
                   dropped_deletions=self.dropped_deletions)
        return rep
