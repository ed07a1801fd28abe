"""The one node-hosting loop: PSN nodes driven over a transport until nothing is left to do.

Role: a :class:`Host` owns the :class:`~engine.node.Node` objects of one process (all nodes
of an in-memory or simulated network, or the nodes of one Ray worker), their annotation
contexts, and the loop every transport shares: poll the transport for delivered messages,
queue them at their nodes, step every node that has work (pick a batch, fire, commit;
Nigam et al. 2012, Algorithm 1), hand each step's output to the transport per destination
(the transport encodes and counts it, :class:`engine.transport.Meter`), and at quiescence
flush the nodes' send stages (MinShip's end of stream, Liu et al. 2009, Sec. 5) and let a
phased scheme's coordinator start its next phase (DRed's barrier, Liu Sec. 3.2). Transports
differ only in how a message travels and what time it is: the in-memory transport reorders
in logical time, the simulator delays in virtual time, a Ray worker's transport keeps
messages for its own nodes and batches the rest for other workers.

:meth:`Host.report` is the one assembly of engine and traffic counters (per node and in
total) that every engine reports from.

Deliberately not here: the base-fact ledger and bursts (:mod:`engine.ledger`), delivery
order, latencies and wire bytes (the transports), annotation semantics (``provenance``),
termination detection across processes (the Ray driver).
"""

from __future__ import annotations

from typing import Any, Callable

from ndlog.builtins import format_value
from ndlog.gcpause import relaxed_gc

from .node import Node, drop_unmatched_deletions, format_fact, group_by_destination
from .program import EngineProgram
from .wire import Codec

__all__ = ["Host", "Contexts", "ENGINE_COUNTERS"]

#: Engine counters of a node, summed by :meth:`Host.report`.
ENGINE_COUNTERS = ("updates_processed", "updates_received", "updates_fired", "derivations",
                   "steps", "state_tuples", "state_occurrences", "operator_state")


class Contexts:
    """``node -> annotation context``: one context per node, built on a shared context
    per process (``worker_of=None``) or per worker (one CUDD manager each for absorption
    provenance). Callable."""

    def __init__(self, scheme, worker_of: Callable[[Any], Any] | None = None):
        self.scheme = scheme
        self.worker_of = worker_of
        self._shared: dict[Any, Any] = {}
        self._contexts: dict[Any, Any] = {}

    def __call__(self, node_id: Any) -> Any:
        ctx = self._contexts.get(node_id, _MISSING)
        if ctx is _MISSING:
            key = None if self.worker_of is None else self.worker_of(node_id)
            shared = self._shared.get(key, _MISSING)
            if shared is _MISSING:
                shared = self._shared[key] = self.scheme.shared_context()
            ctx = self._contexts[node_id] = self.scheme.context(node_id, shared)
        return ctx


class Host:
    """The nodes of one process and their PSN loop over ``transport``.

    Parameters
    ----------
    program:
        The prepared :class:`~engine.program.EngineProgram`.
    scheme:
        The annotation scheme object.
    transport:
        A :class:`engine.transport.Transport`; the host connects its codec to it.
    batch:
        Nodes pick every pickable update per step (default) or one.
    stages:
        Called with every new node to install its pick and send stages (aggregate
        selection, MinShip; :meth:`engine.options.Resolved.stages`), or ``None``.
    on_node:
        Called with every new node after ``stages`` (a user's hook).
    contexts:
        ``"process"``: one annotation context shared by every node here (one CUDD manager
        per process); ``"worker"``: one per worker of the transport's placement.
    flush_period:
        Flush every node's send stages each time this much of the transport's clock has
        passed (eager MinShip on a timer, :class:`engine.minship.ShipMode`); ``None``:
        only at the end of the stream.
    """

    def __init__(self, program: EngineProgram, scheme, transport, *, batch: bool = True,
                 stages: Callable[[Node], None] | None = None,
                 on_node: Callable[[Node], None] | None = None, contexts: str = "process",
                 flush_period: float | None = None):
        self.program = program
        self.scheme = scheme
        self.transport = transport
        self.batch = batch
        self.stages = stages
        self.on_node = on_node
        self.context_of = Contexts(scheme, transport.placement.worker
                                   if contexts == "worker" else None)
        self.codec = Codec(scheme)
        self.nodes: dict[Any, Node] = {}
        self.polls = 0
        self.flush_period = flush_period
        self._next_flush: float | None = None
        self._ready: dict[Any, None] = {}
        #: the scheme's phase coordinator, called at quiescence (DRed), or None
        self.phases = scheme.quiescence_phases() if getattr(scheme, "phased", False) \
            else None
        transport.connect(self.codec, self.context_of)

    # -- nodes -----------------------------------------------------------------------------
    def node(self, node_id: Any) -> Node:
        """The node for a location value (created on first use)."""
        n = self.nodes.get(node_id)
        if n is None:
            n = self.nodes[node_id] = Node(node_id, self.program, self.scheme,
                                           self.context_of(node_id), batch=self.batch)
            if self.stages is not None:
                self.stages(n)
            if self.on_node is not None:
                self.on_node(n)
        return n

    def deliver(self, dst: Any, updates: list) -> None:
        """Queue delivered updates at node ``dst``."""
        n = self.nodes.get(dst) or self.node(dst)
        n.queue.extend(updates)
        n.metrics.updates_received += len(updates)
        self._ready[dst] = None

    def wake(self, node_id: Any, updates: list) -> None:
        """Queue updates a node held back (a phase coordinator releases them); unlike
        :meth:`deliver`, they are not counted as received again."""
        self.nodes[node_id].queue.extend(updates)
        self._ready[node_id] = None

    def has_work(self) -> bool:
        return bool(self._ready) or any(n.has_work() for n in self.nodes.values())

    # -- the loop --------------------------------------------------------------------------
    def run(self, max_polls: int | None = None,
            heartbeat: Callable[[int, int], None] | None = None, flush: bool = True,
            guard: Callable[[], None] | None = None,
            step_guard: Callable[[], None] | None = None) -> int:
        """Deliver and step until the transport has nothing in flight for this host and no
        node has work; then, with ``flush``, flush the send stages and go on while they
        produce updates. Returns the number of polls that delivered something.

        Parameters
        ----------
        max_polls:
            Give up (``EvaluationError``) after this many deliveries.
        heartbeat:
            Called as ``heartbeat(deliveries, in_flight)`` after every delivery.
        flush:
            End of stream at quiescence (``False`` when a driver decides it, as on Ray).
        guard:
            Called after every delivery and before every node step (e.g. a memory
            ceiling that raises, :meth:`engine.guards.MemoryGuard.check`).
        step_guard:
            Called within a node's step over a large batch, between chunks of its updates
            (:meth:`engine.node.Node.step`), and after every node step (e.g.
            :meth:`engine.guards.MemoryGuard.check_soon`, which reads the ceiling once its
            interval has passed).
        """
        with relaxed_gc():
            polls = self._loop(max_polls, heartbeat, flush, guard, step_guard)
        self.polls += polls
        return polls

    def _loop(self, max_polls, heartbeat, flush: bool, guard, step_guard) -> int:
        from ndlog.errors import EvaluationError
        tr, ready, deliver = self.transport, self._ready, self.deliver
        poll = tr.poll_batches
        polls = 0
        while True:
            deliveries = poll()
            if deliveries:
                polls += 1
                if heartbeat is not None:
                    heartbeat(polls, tr.in_flight())
                if guard is not None:
                    guard()
                for dst, ups in deliveries:
                    deliver(dst, ups)
                if self.flush_period is not None:
                    self._timer_flush()
            if ready:
                self._step_ready(guard, step_guard)
                if max_polls is not None and polls > max_polls:
                    raise EvaluationError(f"no quiescence after {max_polls:,} deliveries")
                continue
            if deliveries or tr.in_flight():
                continue
            if not flush:
                return polls
            if self.flush():
                continue
            if self.phases is not None and self.phases.at_quiescence(self):
                continue
            if tr.in_flight():      # a barrier let virtual time pass, and a soft-state
                continue            # expiry sent a deletion meanwhile
            return polls

    def _timer_flush(self) -> None:
        """Flush the send stages when the period has passed on the transport's clock."""
        now = self.transport.clock.now()
        if self._next_flush is None:
            self._next_flush = now + self.flush_period
        elif now >= self._next_flush:
            self.flush()
            self._next_flush = now + self.flush_period

    def _step_ready(self, guard, step_guard) -> None:
        nodes, ready = self.nodes, self._ready
        for nid in list(ready):
            if guard is not None:
                guard()
            node = nodes[nid]
            out = node.step(step_guard)
            if step_guard is not None:
                # a step of a few slow updates (each an OR of large BDDs) is not split
                # into chunks, and ``guard`` reads the ceiling only every so many calls
                step_guard()
            if out:
                self.send(nid, out)
            if not node.has_work():
                del ready[nid]

    def flush(self) -> int:
        """End of stream: flush every node's send stages; returns how many updates that
        sent (0: nothing was left to send)."""
        flushed = 0
        for nid, node in list(self.nodes.items()):
            out = node.flush()
            if out:
                flushed += len(out)
                self.send(nid, out)
        return flushed

    def send(self, src: Any, out: list) -> None:
        """Hand a node's output ``[(destination, update)]`` to the transport, one message
        per destination."""
        send = self.transport.send
        for dst, ups in group_by_destination(out).items():
            send(src, dst, ups)

    # -- after quiescence ------------------------------------------------------------------
    def check_waiting(self, fmt: Callable = format_fact) -> tuple[int, str | None]:
        """Deletions still waiting for their occurrence (see
        :func:`engine.node.drop_unmatched_deletions`)."""
        return drop_unmatched_deletions(self.nodes.values(), self.scheme, fmt)

    # -- reading ---------------------------------------------------------------------------
    def relations(self, preds) -> dict[str, set[tuple]]:
        """``pred -> tuples`` present at this host's nodes, for every pred in ``preds``."""
        out: dict[str, set[tuple]] = {p: set() for p in preds}
        for node in self.nodes.values():
            for p, table in node.state.items():
                if table and p in out:
                    out[p].update(table)
        return out

    def multiset(self, pred: str) -> dict[tuple, int]:
        """``tuple -> number of stored occurrences`` of ``pred`` over this host's nodes."""
        out: dict[tuple, int] = {}
        count = self.scheme.count
        for node in self.nodes.values():
            for t, s in node.state.get(pred, {}).items():
                out[t] = out.get(t, 0) + count(s)
        return out

    def report(self) -> dict:
        """Engine and traffic counters: ``totals`` (engine counters summed over nodes, and
        the transport's traffic totals), ``nodes`` (one row per node, keyed by its printed
        value) and ``workers`` (traffic per sending worker)."""
        traffic = self.transport.metrics
        totals = dict.fromkeys(ENGINE_COUNTERS, 0)
        nodes: dict[str, dict] = {}
        empty = dict.fromkeys(traffic.FIELDS, 0)
        for nid, node in self.nodes.items():
            row = node.metrics.as_dict()
            row["state_tuples"], row["state_occurrences"] = node.size()
            row["operator_state"] = node.operator_size()
            for k in ENGINE_COUNTERS:
                totals[k] += row[k]
            row.update(traffic.per_node.get(nid, empty))
            nodes[node_key(nid)] = row
        totals.update(traffic.totals)
        if self.phases is not None:
            totals.update(self.phases.report())
        workers = {node_key(w): dict(v) for w, v in traffic.per_worker.items()}
        return {"totals": totals, "nodes": nodes, "workers": workers}


def node_key(value: Any) -> str:
    """A node or worker id as a report key: its NDlog spelling (strings as they are)."""
    if isinstance(value, str):
        return value
    return format_value(value)


_MISSING = object()
