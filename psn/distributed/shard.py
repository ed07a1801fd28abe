"""One worker's shard of a PSN network: the nodes it hosts and its local engine loop.

Role: the pure, Ray-free half of a distributed worker (RUNTIME.md vocabulary: a *worker* is a
process hosting many nodes). A :class:`Shard` is a :class:`engine.WorkerHost`: it owns
the :class:`engine.Node` objects of the nodes placed on its worker, one annotation
``shared_context()`` for all of them (one BDD manager per process), and runs the PSN
iteration (Nigam et al. 2012, Algorithm 1: pick / fire / commit, all pickable updates per
step) until none of its nodes has work. Updates
between two of its nodes stay in the process (decoded from their wire bytes only for
context-bound schemes, like :class:`engine.transport.InMemoryTransport`); updates for nodes of
other workers are encoded with :class:`engine.wire.Codec` in the sender's context and
**batched per destination worker**: one msgpack payload ``[[dst node, message bytes], ...]``
per destination worker and per call, so one Ray call carries many messages.

Traffic is counted with :class:`engine.transport.TrafficMetrics` exactly as the in-memory
transport counts it (one message = the updates one node step sends to one other node; bytes
= msgpack size; ``worker_*`` = the part that crosses workers), plus the batch counters that
termination detection uses (``batches_sent``, ``batches_received``).

Deliberately not here: Ray (``psn.distributed.actor`` wraps a shard in an actor),
termination detection and fault recovery (``psn.distributed.network``), the PSN iteration
itself (``engine.node``).
"""

from __future__ import annotations

import zlib
from typing import Any, Mapping

import msgpack

from ndlog.builtins import format_value
from engine import CENTRAL, WorkerHost
from engine.node import drop_unmatched_deletions, group_by_destination
from engine.gcpause import relaxed_gc
from engine.transport import Placement, TrafficMetrics

__all__ = ["Shard", "ShardMap", "stable_hash", "pack", "unpack"]


def stable_hash(node: Any) -> int:
    """A process-independent 32-bit hash of a node value: CRC-32 of its ``repr`` (the same
    hash as the simulator's placement, never Python's salted ``hash``)."""
    return zlib.crc32(repr(node).encode("utf-8"))


class ShardMap:
    """``node -> worker index`` for ``workers`` workers: an explicit map first, the rest by
    :func:`stable_hash`. Picklable (it is handed to every actor once, at configuration).

    Examples
    --------
    >>> m = ShardMap(4, {"a": 3})
    >>> m("a"), m(7) == stable_hash(7) % 4
    (3, True)
    """

    def __init__(self, workers: int, mapping: Mapping | None = None):
        self.workers = int(workers)
        self.mapping = dict(mapping or {})
        self._cache: dict = {}

    def __call__(self, node: Any) -> int:
        w = self._cache.get(node)
        if w is None:
            w = self.mapping.get(node)
            if w is None:
                w = stable_hash(node) % self.workers
            self._cache[node] = w
        return w

    def __getstate__(self):
        return {"workers": self.workers, "mapping": self.mapping}

    def __setstate__(self, state):
        self.workers, self.mapping, self._cache = state["workers"], state["mapping"], {}

    def placement(self) -> Placement:
        """As a :class:`engine.transport.Placement`."""
        return Placement(self)


def pack(obj) -> bytes:
    """msgpack, bytes kept as bytes (the one encoding of everything between processes)."""
    return msgpack.packb(obj, use_bin_type=True)


def unpack(data: bytes):
    """Inverse of :func:`pack`; arrays decode as tuples (NDlog values, node ids)."""
    return msgpack.unpackb(data, use_list=False, raw=False, strict_map_key=False)


class Shard(WorkerHost):
    """The nodes of one worker and their local PSN loop: a :class:`engine.WorkerHost`
    (nodes, one shared annotation context, ``on_node`` stages) with per-node traffic
    accounting, batches of ``[dst node, message bytes]`` and end-of-stream flushes left to
    the driver (so lazy MinShip flushes only at global quiescence, as in
    :class:`engine.Network`).

    Parameters
    ----------
    index:
        This worker's index (``0 .. workers-1``).
    program:
        An :class:`engine.EngineProgram` (from :func:`engine.prepare`).
    scheme:
        An annotation scheme object (``provenance.get_scheme``).
    shards:
        ``node -> worker index`` (:class:`ShardMap`).
    batch:
        Nodes pick all pickable updates per step (default) or one.
    roundtrip:
        Decode every message between two nodes of this worker from its bytes, too.
    on_node:
        Called with every new node, as :class:`engine.Network`'s ``on_node``.
    ship, aggsel:
        MinShip and aggregate-selection modes (the host installs their stages on every
        node; see :class:`engine.Network`).
    """

    def __init__(self, index: int, program, scheme, shards, *, batch: bool = True,
                 roundtrip: bool = False, on_node=None, ship=None, aggsel=None):
        super().__init__(program, scheme, index, shards, batch=batch, on_node=on_node,
                         ship=ship, aggsel=aggsel)
        self.index = index
        self.shards = shards
        self.roundtrip = roundtrip
        self.ready: dict[Any, None] = {}
        self.metrics = TrafficMetrics()
        self.outbox: dict[int, list] = {}
        self.batches_sent = 0
        self.batches_received = 0
        self.dropped_deletions = 0
        self.steps = 0

    def context_of(self, nid: Any) -> Any:
        """The annotation context of a node of this worker."""
        return self.node(nid).ctx

    # -- receiving -----------------------------------------------------------------------
    def receive_payload(self, payload: bytes, counted: bool = True) -> None:
        """Queue the messages of one batch ``[[dst node, message bytes], ...]`` and run the
        local loop. ``counted``: a batch from another worker (not an injection)."""
        if counted:
            self.batches_received += 1
        decode = self.codec.decode
        for dst, data in unpack(payload):
            node = self.node(dst)
            for upd in decode(data, self.context_of(dst)):
                node.receive(upd)
            self.ready[dst] = None
        self.run_local()

    # -- the local loop ------------------------------------------------------------------
    def run_local(self) -> None:
        """Step nodes until none of this worker's nodes has work (remote output is kept in
        the outbox, per destination worker)."""
        nodes, ready = self.nodes, self.ready
        with relaxed_gc():
            while ready:
                for nid in list(ready):
                    node = nodes[nid]
                    out = node.step()
                    self.steps += 1
                    if out:
                        self._route_from(nid, out)
                    if not node.has_work():
                        del ready[nid]

    def flush(self) -> int:
        """End of stream: flush every node's send stages; returns the updates flushed."""
        n = 0
        for nid, node in list(self.nodes.items()):
            out = node.flush()
            if out:
                n += len(out)
                self._route_from(nid, out)
        self.run_local()
        return n

    def _route_from(self, src: Any, out: list) -> None:
        by_dst = group_by_destination(out)
        codec, me, m = self.codec, self.index, self.metrics
        for dst, ups in by_dst.items():
            if dst == src:
                m.count(src, me, "local_tuples", len(ups))
                self._enqueue(dst, ups)
                continue
            ctx = self.context_of(src)
            data, ann_bytes = codec.encode_measured(ups, ctx)
            wdst = self.shards(dst)
            m.message(src, me, len(ups), len(data), ann_bytes, wdst != me)
            if wdst != me:
                box = self.outbox.get(wdst)
                if box is None:
                    box = self.outbox[wdst] = []
                box.append((dst, data))
            elif self.roundtrip or codec.must_rebuild(self.context_of, src, dst):
                self._enqueue(dst, codec.decode(data, self.context_of(dst)))
            else:
                self._enqueue(dst, ups)

    def _enqueue(self, dst: Any, ups: list) -> None:
        node = self.nodes.get(dst) or self.node(dst)
        for u in ups:
            node.receive(u)
        self.ready[dst] = None

    def take_outbox(self) -> list[tuple[int, bytes]]:
        """The batches to send, one ``(destination worker, payload)`` per destination;
        counts them as sent."""
        if not self.outbox:
            return []
        out = [(w, pack(msgs)) for w, msgs in self.outbox.items()]
        self.outbox = {}
        self.batches_sent += len(out)
        return out

    # -- quiescence and reading ----------------------------------------------------------
    def check_waiting(self) -> str | None:
        """After global quiescence: deletions that never found their occurrence. Dropped
        for schemes without exact deletions (counted), else an error message."""
        dropped, problem = drop_unmatched_deletions(self.nodes.values(), self.scheme)
        self.dropped_deletions += dropped
        return problem

    def relations_of(self, preds) -> dict[str, list[tuple]]:
        """``pred -> tuples`` present at this worker's nodes, for ``preds``."""
        want = set(preds)
        out: dict[str, set] = {}
        for node in self.nodes.values():
            for p, table in node.state.items():
                if p in want and table:
                    out.setdefault(p, set()).update(table)
        return {p: list(ts) for p, ts in out.items()}

    def multiset(self, pred: str) -> list[tuple[tuple, int]]:
        out: dict[tuple, int] = {}
        count = self.scheme.count
        for node in self.nodes.values():
            for t, s in node.state.get(pred, {}).items():
                out[t] = out.get(t, 0) + count(s)
        return list(out.items())

    def report(self) -> dict:
        """Engine and traffic counters of this worker: ``totals``, ``nodes`` (per node,
        keyed by the node's printed value) and ``traffic`` (this worker's row)."""
        totals = dict.fromkeys(("updates_processed", "updates_received", "updates_fired",
                                "derivations", "steps", "state_tuples",
                                "state_occurrences"), 0)
        traffic = self.metrics
        nodes = {}
        for nid, node in self.nodes.items():
            row = node.metrics.as_dict()
            row["state_tuples"], row["state_occurrences"] = node.size()
            for k in totals:
                totals[k] += row[k]
            row.update(traffic.per_node.get(nid, dict.fromkeys(traffic.FIELDS, 0)))
            row["worker"] = self.index
            nodes[format_value(nid) if nid != CENTRAL else nid] = row
        worker = dict(traffic.per_worker.get(self.index, dict.fromkeys(traffic.FIELDS, 0)))
        worker.update(batches_sent=self.batches_sent, batches_received=self.batches_received,
                      nodes_count=len(self.nodes), **{k: totals[k] for k in
                                                       ("updates_processed",
                                                        "state_tuples")})
        return {"totals": totals, "traffic": dict(traffic.totals), "nodes": nodes,
                "worker": worker, "dropped_deletions": self.dropped_deletions}


_MISSING = object()
