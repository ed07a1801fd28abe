"""A network of PSN nodes driven to quiescence over a transport: the Python API.

Role: wire :class:`~engine.node.Node` objects to a :class:`~engine.transport.Transport`
(in-memory by default), inject bursts of base-fact insertions and deletions (the bursty
model, Nigam et al. 2012, Sec. 3.1), run until nothing is in flight and no node has work,
and read relations, per-node state and metrics. Nodes are created on demand, one per
location value (a single node for a centralized program).

Base facts are kept in a ledger: every insertion gets a sequence number (the annotation
scheme may turn it into a fresh provenance variable), a deletion cancels one live insertion
of the same fact (keyed ``materialize`` tables replace the tuple with the same key). A
deletion may come before its insertion within overlapping bursts; a deletion that no
insertion ever matches is an :class:`~ndlog.errors.InputError` naming the fact when
:meth:`Network.run` starts, never a hang.

Deliberately not here: the PSN iteration itself (``node``), join compilation (``compile``),
delivery order and traffic accounting (``engine.transport``), virtual time (``sim/``), Ray.
This module imports the in-memory transport only as the default.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Mapping

from ndlog import ast as A
from ndlog.builtins import format_value
from ndlog.errors import EvaluationError, InputError
from .gcpause import relaxed_gc
from ndlog.parser import parse, parse_atom
from .wire import Codec
from .ledger import Ledger
from .node import Node, drop_unmatched_deletions, format_fact, group_by_destination
from .program import CENTRAL, EngineProgram, prepare

__all__ = ["Network", "parse_update", "CONTEXT_POLICIES"]

#: Values of ``Network(contexts=)``.
CONTEXT_POLICIES = ("process", "worker")


def parse_update(item) -> tuple[int, str, tuple]:
    """Normalize one burst item to ``(sign, pred, tuple)``.

    Accepts ``(sign, pred, tuple)`` with sign ``1``/``-1``/``"+"``/``"-"``, or a string
    ``"+link(@a, b)"`` / ``"-link(@a, b)."`` / ``"link(@a, b)"`` (insertion).
    """
    if isinstance(item, str):
        text = item.strip()
        sign = 1
        if text[:1] in "+-":
            sign = 1 if text[0] == "+" else -1
            text = text[1:]
        fact = parse_atom(text)
        return sign, fact.pred, fact.values
    try:
        sign, pred, tup = item
    except (TypeError, ValueError):
        raise InputError(f"a burst item must be (sign, predicate, tuple) or a fact string, "
                         f"got {item!r}") from None
    if sign in ("+", 1, True):
        sign = 1
    elif sign in ("-", -1):
        sign = -1
    else:
        raise InputError(f"sign of a burst item must be '+' or '-', got {sign!r}")
    if not isinstance(pred, str):
        raise InputError(f"predicate must be a string, got {pred!r}")
    if not isinstance(tup, tuple):
        if isinstance(tup, list):
            tup = tuple(tup)
        else:
            raise InputError(f"fact of '{pred}' must be a tuple, got {tup!r}")
    return sign, pred, _freeze(tup)


def _freeze(v):
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    return v


class Network:
    """A PSN network running ``program`` (Nigam et al. 2012, Algorithm 1 per node).

    Parameters
    ----------
    program:
        A :class:`~ndlog.ast.Program` or NDlog text. Distributed programs are localized
        (``psn.localize``) unless already local; centralized ones run on one node.
    facts:
        ``predicate -> iterable of tuples``, inserted (with the program's own facts) as the
        first burst; call :meth:`run` to evaluate.
    annotation:
        Annotation scheme name (``set``, ``derivation``, ...) or object.
    delivery, seed:
        Delivery order and seed of the default in-memory transport.
    batch:
        Nodes pick all pickable updates per iteration (default) or one.
    placement:
        Node to worker (:class:`engine.transport.Placement` or a mapping).
    transport:
        A :class:`engine.transport.Transport`; default :class:`~engine.transport.InMemoryTransport`.
    roundtrip:
        Decode every message from its wire bytes (proves the wire format in tests).
    on_node:
        Called with every new :class:`~engine.node.Node` (e.g. to install the pick and
        send stages of aggregate selection and MinShip, issue 5).
    ship:
        MinShip mode (:mod:`engine.minship`): ``eager[:W]``, ``lazy``, ``off``; None is
        the scheme's default (``lazy`` for the registered ``absorption``, else none).
    aggsel:
        Aggregate selection (:mod:`engine.aggsel`): ``multi``, ``single``, ``off``/None.
    contexts:
        ``"process"`` (default): the workers of this process share one scheme context (one
        CUDD manager for absorption provenance, as a Ray worker process shares one among
        the nodes it hosts); a message between workers is still encoded, so its bytes are
        counted exactly, but it is rebuilt from the bytes only with ``roundtrip``.
        ``"worker"``: one context per worker, as if each were its own process; every
        message between workers is then rebuilt in the receiver's context.
    """

    def __init__(self, program, facts: Mapping[str, Iterable] | None = None, *,
                 annotation="derivation", delivery: str = "random", seed: int = 0,
                 batch: bool = True, placement=None, transport=None, roundtrip: bool = False,
                 on_node: Callable[[Node], None] | None = None, ship=None,
                 aggsel: str | None = None, contexts: str = "process"):
        from provenance import get_scheme
        if contexts not in CONTEXT_POLICIES:
            raise InputError(f"unknown contexts policy {contexts!r}; choose one of "
                             f"{', '.join(CONTEXT_POLICIES)}")
        self.contexts = contexts
        if isinstance(program, str):
            program = parse(program)
        self.source: A.Program = program
        self.program: EngineProgram = prepare(program)
        self.scheme = get_scheme(annotation)
        if transport is None:
            from .transport import InMemoryTransport, Placement
            if placement is not None and not isinstance(placement, Placement):
                placement = Placement(placement)
            transport = InMemoryTransport(delivery, seed, placement=placement,
                                          roundtrip=roundtrip)
        self.transport = transport
        self.codec = Codec(self.scheme)
        transport.connect(self.codec, self.context_of)
        self.batch = batch
        self.on_node = on_node
        from .minship import node_stages  # issue 5: MinShip and aggregate selection
        self.stages = node_stages(self.program, self.scheme, ship, aggsel)
        self.nodes: dict[Any, Node] = {}
        self._shared: dict[Any, Any] = {}
        self._contexts: dict[Any, Any] = {}
        self.ledger = Ledger(program, self._fmt)
        self._arities = dict(program.arities())
        self._ready: dict[Any, None] = {}
        self.polls = 0
        self.wall_seconds = 0.0
        self.dropped_deletions = 0
        initial = [(1, f.pred, f.values) for f in program.facts]
        for pred, rows in (facts or {}).items():
            if isinstance(rows, (str, bytes)):
                raise InputError(f"facts for '{pred}' must be an iterable of tuples")
            initial.extend((1, pred, r) for r in rows)
        if initial:
            self.apply(initial)

    # -- nodes and contexts --------------------------------------------------------------
    def worker_of(self, node_id: Any) -> Any:
        return self.transport.placement.worker(node_id)

    def context_of(self, node_id: Any) -> Any:
        """The annotation context of a node (the shared context of its worker, or of the
        process: see ``contexts``)."""
        ctx = self._contexts.get(node_id, _MISSING)
        if ctx is _MISSING:
            w = self.worker_of(node_id) if self.contexts == "worker" else None
            if w not in self._shared:
                self._shared[w] = self.scheme.shared_context()
            ctx = self._contexts[node_id] = self.scheme.context(node_id, self._shared[w])
        return ctx

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

    # -- bursts --------------------------------------------------------------------------
    def insert(self, pred: str, tup: tuple) -> "Network":
        """Inject an insertion of a base fact (delivered on the next :meth:`run`)."""
        return self.apply([(1, pred, tup)])

    def delete(self, pred: str, tup: tuple) -> "Network":
        """Inject a deletion of a base fact."""
        return self.apply([(-1, pred, tup)])

    def apply(self, burst: Iterable) -> "Network":
        """Inject a burst of updates (see :func:`parse_update` for the item forms)."""
        pending: dict[Any, list] = {}
        for item in burst:
            sign, pred, tup = parse_update(item)
            self._check_arity(pred, tup)
            for s, t, seq in self.ledger.update(sign, pred, tup):
                dst = self.program.location(pred, t)
                ann = self.scheme.base(self.context_of(dst), (pred, t), seq)
                pending.setdefault(dst, []).append((s, pred, t, ann))
        for dst, ups in pending.items():
            self.node(dst)
            self.transport.send(None, dst, ups)
        return self

    def _fmt(self, pred: str, tup: tuple) -> str:
        loc = self.program.loc.get(pred) if self.program.distributed else None
        return format_fact(pred, tup, loc if loc is None or loc < len(tup) else None)

    def _check_arity(self, pred: str, tup: tuple) -> None:
        want = self._arities.setdefault(pred, len(tup))
        if len(tup) != want:
            raise InputError(f"fact {self._fmt(pred, tup)} has {len(tup)} arguments, but "
                             f"'{pred}' has arity {want}")
        if self.program.distributed and not tup:
            raise InputError(f"fact {pred}() has no location in a distributed program")

    def base_facts(self) -> dict[str, set[tuple]]:
        """The current base facts (every fact with a live insertion), as sets."""
        return self.ledger.facts()

    # -- running -------------------------------------------------------------------------
    def run(self, max_polls: int | None = None,
            heartbeat: Callable[[int, int], None] | None = None) -> "Network":
        """Deliver and process updates until quiescence (nothing in flight, no work).

        At quiescence the send stages are flushed (end of stream, Liu et al. Sec. 5) and
        the run continues while they produce updates. The bursty model (Nigam Sec. 3.1):
        results are meaningful once this returns.

        Parameters
        ----------
        max_polls:
            Give up (``EvaluationError``) after this many deliveries; default unbounded.
        heartbeat:
            Called as ``heartbeat(deliveries, in_flight)`` after every delivery (progress
            of a long run; the callback decides how often to show it: the simulator
            updates its bar at most twice a second).

        Raises
        ------
        InputError
            If a deletion of a base fact matches no insertion (names the fact).
        EvaluationError
            If ``max_polls`` deliveries did not reach quiescence.
        """
        self.ledger.check()
        t0 = time.perf_counter()
        with relaxed_gc():
            polls = self._loop(max_polls, heartbeat)
        self.polls += polls
        self._check_waiting()
        self.wall_seconds += time.perf_counter() - t0
        return self

    def _loop(self, max_polls: int | None, heartbeat) -> int:
        """The delivery loop of :meth:`run`; returns the number of deliveries."""
        tr, nodes, ready = self.transport, self.nodes, self._ready
        poll = getattr(tr, "poll_batches", None)
        if poll is None:
            def poll():
                return [(dst, [u]) for dst, u in tr.poll()]
        polls = 0
        while True:
            deliveries = poll()
            if deliveries:
                polls += 1
                if heartbeat is not None:
                    heartbeat(polls, tr.in_flight())
                for dst, ups in deliveries:
                    n = nodes.get(dst) or self.node(dst)
                    n.queue.extend(ups)
                    n.metrics.updates_received += len(ups)
                    ready[dst] = None
            if ready:
                for nid in list(ready):
                    node = nodes[nid]
                    out = node.step()
                    if out:
                        self._send(nid, out)
                    if not node.has_work():
                        del ready[nid]
                if max_polls is not None and polls > max_polls:
                    raise EvaluationError(f"no quiescence after {max_polls} deliveries")
                continue
            if deliveries or tr.in_flight():
                continue
            flushed = False
            for nid, node in list(nodes.items()):
                out = node.flush()
                if out:
                    flushed = True
                    self._send(nid, out)
            if not flushed:
                break
        return polls

    def _send(self, src, out: list) -> None:
        by_dst = group_by_destination(out)
        for dst, ups in by_dst.items():
            self.transport.send(src, dst, ups)

    def _check_waiting(self) -> None:
        dropped, problem = drop_unmatched_deletions(self.nodes.values(), self.scheme,
                                                    self._fmt)
        self.dropped_deletions += dropped
        if problem:
            raise EvaluationError(problem)

    # -- reading -------------------------------------------------------------------------
    def relations(self, hidden: bool = False) -> dict[str, set[tuple]]:
        """Result relations: the union over nodes of every present tuple, per predicate.

        Hidden predicates (localizer auxiliaries, aggregate contributions) are left out
        unless ``hidden``; every visible predicate of the program appears, possibly empty.
        """
        preds = set(self.program.visible) | self.ledger.preds
        if hidden:
            preds |= set(self.program.predicates)
        else:
            preds -= set(self.program.hidden) | set(self.source.hidden)
        out: dict[str, set[tuple]] = {p: set() for p in preds}
        for node in self.nodes.values():
            for p, table in node.state.items():
                if p in out and table:
                    out[p].update(table)
        return out

    def multiset(self, pred: str) -> dict[tuple, int]:
        """``tuple -> number of stored occurrences`` of ``pred`` over all nodes."""
        out: dict[tuple, int] = {}
        count = self.scheme.count
        for node in self.nodes.values():
            for t, s in node.state.get(pred, {}).items():
                out[t] = out.get(t, 0) + count(s)
        return out

    def node_state(self, node_id: Any, hidden: bool = True) -> dict[str, dict[tuple, Any]]:
        """The committed state of one node: ``pred -> {tuple: stored annotation}``."""
        node = self.nodes.get(node_id)
        if node is None:
            return {}
        skip = set() if hidden else set(self.program.hidden)
        return {p: dict(t) for p, t in node.state.items() if t and p not in skip}

    def why(self, pred: str, tup: tuple) -> str:
        """The provenance of ``pred(tup)`` as a formula over base tuples, in minimal
        sum-of-products form (Liu et al. 2009, Sec. 4; ``psn run --why``); ``false`` if the
        tuple is absent. Needs a scheme with ``explain`` (``absorption``). With eager
        MinShip (or none) at quiescence this is the tuple's full PosBool provenance; with
        lazy MinShip it holds the derivations shipped to the node (at least one per live
        tuple; alternatives stay buffered at the senders until needed).

        Raises
        ------
        InputError
            If the annotation scheme keeps no provenance.
        """
        explain = getattr(self.scheme, "explain", None)
        if explain is None:
            raise InputError(f"--why needs provenance: annotation '{self.scheme.name}' keeps "
                             f"none (use --annotation absorption)")
        tup = _freeze(tuple(tup))
        nid = self.program.location(pred, tup)
        node = self.nodes.get(nid)
        stored = None if node is None else node.state.get(pred, {}).get(tup)
        return explain(self.context_of(nid), stored, self.program.loc.get)

    @property
    def metrics(self) -> dict:
        """Totals plus ``nodes`` and ``workers`` breakdowns (RUNTIME.md Sec. 5).

        Engine counters (per node, summed): ``updates_received``, ``updates_processed``
        (picked), ``updates_fired``, ``derivations`` (updates produced by firing),
        ``steps``, ``state_tuples``, ``state_occurrences`` (multiset size),
        ``operator_state``. Traffic (:class:`engine.transport.TrafficMetrics`):
        ``messages_sent``, ``tuples_sent``, ``bytes_sent`` (msgpack), ``annotation_bytes``,
        ``worker_messages_sent``, ``worker_bytes_sent``, ``local_tuples``. Run:
        ``polls``, ``wall_seconds``, ``dropped_deletions``, ``nodes_count``.
        """
        traffic = self.transport.metrics
        per_node: dict[str, dict] = {}
        totals = dict.fromkeys(("updates_processed", "updates_received", "updates_fired",
                                "derivations", "steps", "state_tuples",
                                "state_occurrences", "operator_state"), 0)
        for nid, node in self.nodes.items():
            row = node.metrics.as_dict()
            row["state_tuples"], row["state_occurrences"] = node.size()
            row["operator_state"] = node.operator_size()
            for k in totals:
                totals[k] += row[k]
            row.update(traffic.per_node.get(nid, dict.fromkeys(traffic.FIELDS, 0)))
            per_node[format_value(nid) if nid != CENTRAL else nid] = row
        totals.update(traffic.totals)
        totals.update(polls=self.polls, wall_seconds=round(self.wall_seconds, 6),
                      dropped_deletions=self.dropped_deletions, nodes_count=len(self.nodes))
        totals["nodes"] = per_node
        totals["workers"] = {format_value(w) if not isinstance(w, str) else w: dict(v)
                             for w, v in traffic.per_worker.items()}
        return totals


_MISSING = object()
