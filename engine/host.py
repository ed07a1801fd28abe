"""A worker hosting many nodes: what a Ray actor (issue 7) or a query processor wraps.

Role: RUNTIME.md distinguishes nodes from workers: a worker process hosts many nodes, and a
message between two nodes of one worker costs no network traffic. :class:`WorkerHost` owns
the nodes a :class:`~engine.transport.Placement` assigns to one worker, shares one annotation
context per worker (one BDD manager per process for absorption), runs its nodes until none
has local work, delivers updates between its own nodes directly, and returns what must leave
the worker *batched per destination worker*, as msgpack bytes (:mod:`engine.wire`). The
receiving host decodes a batch in its own context and routes each update to its node by the
fact's location (the head's location value, so no address is shipped).

Termination detection is the driver's business; :attr:`WorkerHost.sent` and
:attr:`WorkerHost.received` count updates crossing the worker boundary (RUNTIME.md Sec. 7:
stop after two consecutive polls with equal, matching totals).

Deliberately not here: Ray itself, the base-fact ledger (:mod:`engine.ledger`, kept by
the driver), delivery order across workers (the driver's or the network's).
"""

from __future__ import annotations

from typing import Any, Callable

from .node import Node
from .program import EngineProgram, prepare

__all__ = ["WorkerHost"]


class WorkerHost:
    """The nodes of one worker.

    Parameters
    ----------
    program:
        A :class:`~ndlog.ast.Program` or a prepared :class:`EngineProgram`.
    annotation:
        Scheme name or object (each host makes its own instance if given a name).
    worker:
        This worker's id.
    worker_of:
        ``node -> worker`` (e.g. ``Placement.worker``).
    batch:
        Batched picks (default) or one update per iteration.
    on_node:
        Called with every new node (install pick/send stages).
    ship, aggsel:
        MinShip mode and aggregate selection (see :class:`~engine.network.Network`).
    """

    def __init__(self, program, annotation, worker: Any, worker_of: Callable[[Any], Any], *,
                 batch: bool = True, on_node: Callable[[Node], None] | None = None,
                 ship=None, aggsel: str | None = None):
        from provenance import get_scheme
        from .wire import Codec
        self.program: EngineProgram = program if isinstance(program, EngineProgram) \
            else prepare(program)
        self.scheme = get_scheme(annotation)
        self.codec = Codec(self.scheme)
        self.worker = worker
        self.worker_of = worker_of
        self.batch = batch
        self.on_node = on_node
        from .minship import node_stages  # issue 5: MinShip and aggregate selection
        self.stages = node_stages(self.program, self.scheme, ship, aggsel)
        self.shared = self.scheme.shared_context()
        self.nodes: dict[Any, Node] = {}
        self.sent = 0
        self.received = 0
        self.local_tuples = 0
        self.bytes_sent = 0
        self.messages_sent = 0

    def node(self, node_id: Any) -> Node:
        """The node (created on first use); it must live on this worker."""
        n = self.nodes.get(node_id)
        if n is None:
            if self.worker_of(node_id) != self.worker:
                raise ValueError(f"node {node_id!r} lives on worker "
                                 f"{self.worker_of(node_id)!r}, not {self.worker!r}")
            ctx = self.scheme.context(node_id, self.shared)
            n = self.nodes[node_id] = Node(node_id, self.program, self.scheme, ctx,
                                           batch=self.batch)
            if self.stages is not None:
                self.stages(n)
            if self.on_node is not None:
                self.on_node(n)
        return n

    def context(self, node_id: Any) -> Any:
        return self.node(node_id).ctx

    # -- input ---------------------------------------------------------------------------
    def deliver(self, updates: list) -> None:
        """Queue updates (already in this worker's context) at their nodes."""
        loc = self.program.location
        for upd in updates:
            self.node(loc(upd[1], upd[2])).queue.append(upd)

    def receive_bytes(self, data: bytes) -> int:
        """Decode a batch from another worker and queue each update at its node, building
        its annotation in that node's context."""
        from .wire import decode_updates
        loc, de = self.program.location, self.scheme.deserialize
        rows = decode_updates(data)
        for sign, pred, tup, raw in rows:
            node = self.node(loc(pred, tup))
            node.queue.append((sign, pred, tup, de(node.ctx, raw)))
        self.received += len(rows)
        return len(rows)

    def _any_context(self):
        # every node of a worker shares ``shared``; per-node state is applied on pick
        for n in self.nodes.values():
            return n.ctx
        return self.scheme.context(None, self.shared)

    # -- running -------------------------------------------------------------------------
    def has_work(self) -> bool:
        return any(n.has_work() for n in self.nodes.values())

    def run(self, max_rounds: int | None = None) -> dict[Any, list]:
        """Step this worker's nodes until none has work; return the updates for other
        workers, ``worker -> [update]`` (updates between own nodes never leave)."""
        remote: dict[Any, list] = {}
        loc = self.program.location
        rounds = 0
        while True:
            busy = [n for n in self.nodes.values() if n.has_work()]
            if not busy:
                flushed = [(n, n.flush()) for n in self.nodes.values()]
                busy_out = [(n, out) for n, out in flushed if out]
                if not busy_out:
                    break
                for n, out in busy_out:
                    self._route(out, remote, loc)
                continue
            for n in busy:
                out = n.step()
                if out:
                    self._route(out, remote, loc)
            rounds += 1
            if max_rounds is not None and rounds >= max_rounds:
                break
        return remote

    def _route(self, out: list, remote: dict, loc) -> None:
        worker_of, me = self.worker_of, self.worker
        for dst, upd in out:
            w = worker_of(dst)
            if w == me:
                self.node(dst).queue.append(upd)
                self.local_tuples += 1
            else:
                remote.setdefault(w, []).append(upd)

    def encode(self, remote: dict[Any, list]) -> dict[Any, bytes]:
        """Encode each destination worker's batch (counts ``sent`` and ``bytes_sent``)."""
        ctx = self._any_context()  # serializing needs the worker's manager, not a node's
        out = {}
        for w, ups in remote.items():
            data = self.codec.encode(ups, ctx)
            out[w] = data
            self.sent += len(ups)
            self.bytes_sent += len(data)
            self.messages_sent += 1
        return out

    def relations(self, hidden: bool = False) -> dict[str, set[tuple]]:
        """This worker's share of the result relations."""
        skip = set() if hidden else set(self.program.hidden)
        out: dict[str, set[tuple]] = {}
        for n in self.nodes.values():
            for p, table in n.state.items():
                if p not in skip and table:
                    out.setdefault(p, set()).update(table)
        return out
