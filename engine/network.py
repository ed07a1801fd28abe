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

The loop itself is the :class:`~engine.host.Host`'s, the same one the simulator and every
Ray worker run; the settings are one :class:`~engine.options.RunOptions`, resolved once. A
run whose nodes send more updates than the options' ``max_updates`` allows (finite by
default for a scheme that may not terminate) stops with :class:`NotConvergedError`.

Deliberately not here: the PSN iteration itself (``node``), the hosting loop (``host``),
join compilation (``compile``), delivery order and traffic accounting
(``engine.transport``), virtual time (``sim``), Ray. This module imports the in-memory
transport only as the default.
"""

from __future__ import annotations

import numbers
import time
from typing import Any, Callable, Hashable, Iterable, Mapping

from ndlog import ast as A
from ndlog.builtins import fact_values
from ndlog.errors import EvaluationError, InputError, PSNError
from ndlog.parser import FactShapes, as_program, parse_atom
from ndlog.reference import fact_rows
from ndlog.text import count_noun

from .host import Host
from .ledger import Injector
from .node import Node
from .options import CONTEXTS, RunOptions, require_callable, require_flag, require_whole
from .program import EngineProgram, prepare

__all__ = ["Network", "NotConvergedError", "parse_update", "parse_burst_items",
           "CONTEXT_POLICIES"]

#: Values of ``Network(contexts=)``.
CONTEXT_POLICIES = CONTEXTS


class NotConvergedError(EvaluationError):
    """A run's nodes sent more updates than its bound (``RunOptions.max_updates``) without
    reaching quiescence.

    For a scheme that may not terminate (``may_not_terminate``: derivation counts on a
    cycle of derivations, Nigam et al. 2012, Sec. 5) the message says why, from the scheme's
    ``unsafe_reason``. The network is left mid-run: its relations are not a result.

    Attributes
    ----------
    updates:
        The bound that was passed.
    """

    def __init__(self, updates: int, scheme):
        self.updates = updates
        done = f"did not converge after {count_noun(updates, 'update')}"
        reason = getattr(scheme, "unsafe_reason", None)
        if getattr(scheme, "may_not_terminate", False) and reason:
            super().__init__(f"{done}: annotation '{scheme.name}' {reason}",
                             hint="derivation sets and absorption provenance terminate on "
                             "cyclic derivations: use --annotation absorption")
        else:
            super().__init__(done)

    def __reduce__(self):
        # rebuilt from its fields (a Ray worker sends it to the driver): the constructor
        # takes the scheme, which does not travel
        return _not_converged, (self.updates, self.message, self.hint)


def _not_converged(updates: int, message: str, hint: str | None) -> NotConvergedError:
    err = NotConvergedError.__new__(NotConvergedError)
    EvaluationError.__init__(err, message, hint=hint)
    err.updates = updates
    return err


#: the signs a burst item given as a tuple may carry (True is 1 to Python)
_SIGNS = {"+": 1, 1: 1, "-": -1, -1: -1}


def parse_update(item, shapes=None) -> tuple[int, str, tuple]:
    """Normalize one burst item to ``(sign, pred, tuple)``.

    Accepts ``(sign, pred, tuple)`` with sign ``1``/``-1``/``"+"``/``"-"``, or a string
    ``"+link(@a, b)"`` / ``"-link(@a, b)."`` / ``"link(@a, b)"`` (insertion). A
    :class:`ndlog.parser.FactShapes` ``shapes`` checks a string against the program as a
    facts file is checked (predicate, arity, and the place of its ``@``).
    """
    if isinstance(item, str):
        text = item.strip()
        sign = 1
        if text[:1] in ("+", "-"):
            sign = 1 if text[0] == "+" else -1
            text = text[1:]
        fact = parse_atom(text, shapes=shapes)
        return sign, fact.pred, fact.values
    try:
        sign, pred, tup = item
    except (TypeError, ValueError):
        raise InputError(f"a burst item must be (sign, predicate, tuple) or a fact string, "
                         f"got {item!r}") from None
    # 1.0 == 1 in Python: a float sign is refused rather than taken for its integer
    given, sign = sign, _SIGNS.get(sign) if isinstance(sign, (str, numbers.Integral)) else None
    if sign is None:
        raise InputError(f"sign of a burst item must be '+' or '-' (1 or -1), got {given!r}")
    if not isinstance(pred, str):
        raise InputError(f"predicate must be a string, got {pred!r}")
    if not isinstance(tup, (tuple, list)):
        raise InputError(f"fact of '{pred}' must be a tuple, got {tup!r}")
    return sign, pred, fact_values(pred, tup)


def check_relation(pred, names) -> None:
    """Raise :class:`InputError` unless ``pred`` is one of the relation ``names`` (a
    misspelt name would read as an empty relation), or is not a string."""
    if not isinstance(pred, str):
        raise InputError(f"a relation is named by a string, got {type(pred).__name__} "
                         f"{pred!r:.80}")
    if pred not in names:
        import difflib
        close = difflib.get_close_matches(str(pred), sorted(names), n=3)
        raise InputError(f"the program has no relation {pred!r}",
                         hint=("did you mean " + " or ".join(repr(c) for c in close) + "?")
                         if close else "its relations are " + ", ".join(sorted(names)))


def parse_burst_items(burst, program: A.Program | None = None
                      ) -> list[tuple[int, str, tuple]]:
    """Every item of ``burst``, a list of updates, normalized by :func:`parse_update`;
    with the ``program``, an update written as a string is checked against it as a
    facts file is (``"+link(1, @2)"`` puts the ``@`` on the wrong argument).

    Raises
    ------
    InputError
        For a burst that is one string, a mapping or not iterable, naming what it got.
    """
    if isinstance(burst, (str, Mapping)) or not isinstance(burst, Iterable):
        raise InputError(f"a burst is a list of updates, got {type(burst).__name__} "
                         f"{burst!r:.80}",
                         hint='e.g. ["+link(@1, 2)"] or [(-1, "link", (1, 2))]')
    shapes = None
    if program is not None:
        from ndlog.output import program_shapes
        shapes = FactShapes(**program_shapes(program))
    return [parse_update(item, shapes) for item in burst]


def _node_id(node_id):
    """``node_id``, refused unless hashable: no location value is unhashable (a list in a
    fact is a tuple), and the nodes are a dict."""
    if not isinstance(node_id, Hashable):
        raise InputError(f"a node is named by its location value, got "
                         f"{type(node_id).__name__} {node_id!r:.80}")
    return node_id


class Network:
    """A PSN network running ``program`` (Nigam et al. 2012, Algorithm 1 per node).

    Parameters
    ----------
    program:
        A :class:`~ndlog.ast.Program` or NDlog text. Distributed programs are localized
        (``localize``) unless already local; centralized ones run on one node.
    facts:
        ``predicate -> iterable of tuples``, inserted (with the program's own facts) as the
        first burst; call :meth:`run` to evaluate.
    options:
        A :class:`~engine.options.RunOptions` (default: its defaults: absorption provenance
        with lazy MinShip, aggregate selection where it applies, random delivery, seed 0).
        The keyword arguments below override single fields.
    annotation, delivery, seed, batch, roundtrip, ship, aggsel, contexts, unsafe, max_memory,
    max_updates:
        Fields of :class:`~engine.options.RunOptions`.
    placement:
        Node to worker: an :class:`engine.placement.Placement` or a ``node -> worker``
        mapping.
    transport:
        A :class:`engine.transport.Transport`; default
        :class:`~engine.transport.InMemoryTransport` with ``delivery`` and ``seed``.
    on_node:
        Called with every new :class:`~engine.node.Node` after its stages are installed.
    """

    def __init__(self, program, facts: Mapping[str, Iterable] | None = None, *,
                 options: RunOptions | None = None, annotation=None,
                 delivery: str | None = None, seed: int | None = None,
                 batch: bool | None = None, placement=None, transport=None,
                 roundtrip: bool | None = None, on_node: Callable[[Node], None] | None = None,
                 ship=None, aggsel: str | bool | None = None, contexts: str | None = None,
                 unsafe: bool | None = None, max_memory: int | None = None,
                 max_updates: int | None = None):
        opts = RunOptions.of(options, annotation=annotation, delivery=delivery, seed=seed,
                             batch=batch, roundtrip=roundtrip, ship=ship, aggsel=aggsel,
                             contexts=contexts, placement=placement, unsafe=unsafe,
                             max_memory=max_memory, max_updates=max_updates)
        program = as_program(program)
        require_callable(on_node, "on_node", "a function of the new Node", 1)
        from .transport import Transport
        if transport is not None and not isinstance(transport, Transport):
            raise InputError(f"transport is an engine.transport.Transport, got "
                             f"{type(transport).__name__}")
        self.options = opts
        self.source: A.Program = program
        self.resolved = opts.resolve(prepare(program))
        #: what the nodes run: split into one query per aggregate with aggsel "single"
        self.program: EngineProgram = self.resolved.program
        self.scheme = self.resolved.scheme
        if transport is None:
            from .transport import InMemoryTransport
            transport = InMemoryTransport(opts.delivery, opts.seed,
                                          placement=opts.placement_map(),
                                          roundtrip=opts.roundtrip)
        self.transport = transport
        stages = self.resolved.stages(self.program, transport.placement)
        self.host = Host(self.program, self.scheme, transport, batch=opts.batch,
                         stages=stages, on_node=on_node,
                         contexts=opts.contexts, flush_period=self.resolved.flush_period)
        self.injector = Injector(program, self.program, self.scheme, self.host.context_of,
                                 self.resolved)
        self.guard = opts.memory_guard()
        self.wall_seconds = 0.0
        self.dropped_deletions = 0
        initial = [(1, f.pred, f.values) for f in program.facts]
        if facts is not None and not isinstance(facts, Mapping):
            raise InputError(f"facts must be a mapping of predicate -> tuples, got "
                             f"{type(facts).__name__}")
        for pred, rows in (facts or {}).items():
            initial.extend((1, pred, r) for r in fact_rows(pred, rows))
        if initial:
            self.apply(initial)

    def __repr__(self) -> str:
        return (f"<Network: {count_noun(len(self.nodes), 'node')}, annotation "
                f"{self.scheme.name}, {count_noun(len(self.ledger.live), 'base fact')}>")

    # -- nodes and contexts --------------------------------------------------------------
    @property
    def nodes(self) -> dict[Any, Node]:
        """``node id -> Node`` of every node created so far."""
        return self.host.nodes

    @property
    def codec(self):
        return self.host.codec

    @property
    def ledger(self):
        return self.injector.ledger

    @property
    def polls(self) -> int:
        return self.host.polls

    def worker_of(self, node_id: Any) -> Any:
        return self.transport.placement.worker(node_id)

    def context_of(self, node_id: Any) -> Any:
        """The annotation context of a node (see ``contexts``)."""
        return self.host.context_of(node_id)

    def node(self, node_id: Any) -> Node:
        """The node for a location value (created on first use).

        Raises
        ------
        InputError
            For a ``node_id`` that is not hashable (no location value is).
        """
        return self.host.node(_node_id(node_id))

    # -- bursts --------------------------------------------------------------------------
    def insert(self, pred: str, tup: tuple) -> "Network":
        """Inject an insertion of a base fact (delivered on the next :meth:`run`)."""
        return self.apply([(1, pred, tup)])

    def delete(self, pred: str, tup: tuple) -> "Network":
        """Inject a deletion of a base fact."""
        return self.apply([(-1, pred, tup)])

    def apply(self, burst: Iterable) -> "Network":
        """Inject a burst of updates (see :func:`parse_update` for the item forms).

        Raises
        ------
        InputError
            For a predicate the program does not have or a wrong arity, or a deletion the
            annotation scheme cannot make exact on this program
            (:class:`engine.guards.UnsafeAnnotationError`); nothing of the burst is
            injected then.
        """
        items = parse_burst_items(burst, self.source)
        for _, pred, tup in items:
            self.injector.check(pred, tup)
        for dst, ups in self.injector.updates(items).items():
            self.transport.send(None, dst, ups)
        return self

    def _bounded(self, bound: int | None, heartbeat: Callable | None) -> Callable | None:
        """``heartbeat`` that first stops the run once its nodes have sent more than
        ``bound`` updates (the host calls it after every delivery; the transport's traffic
        counters say how many updates were sent, to other nodes or locally)."""
        if bound is None:
            return heartbeat
        scheme = self.scheme
        totals = self.transport.metrics.totals
        limit = totals["tuples_sent"] + totals["local_tuples"] + bound

        def beat(deliveries: int, in_flight: int) -> None:
            if totals["tuples_sent"] + totals["local_tuples"] > limit:
                raise NotConvergedError(bound, scheme)
            if heartbeat is not None:
                heartbeat(deliveries, in_flight)
        return beat

    def _fmt(self, pred: str, tup: tuple) -> str:
        return self.injector.describe(pred, tup)

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
            Independently, the options' ``max_updates`` as resolved bounds the updates the
            nodes send (unbounded for an exact scheme).
        heartbeat:
            Called as ``heartbeat(deliveries, in_flight)`` after every delivery (progress
            of a long run; the callback decides how often to show it).

        Raises
        ------
        InputError
            If a deletion of a base fact matches no insertion (names the fact).
        EvaluationError
            If ``max_polls`` deliveries did not reach quiescence.
        NotConvergedError
            If the nodes sent more than ``max_updates`` updates without reaching quiescence.
        """
        require_whole(max_polls, "max_polls", optional=True)
        require_callable(heartbeat, "heartbeat", "a function (deliveries, in_flight)",
                         2)
        self.ledger.check()
        t0 = time.perf_counter()
        try:
            self.host.run(max_polls, self._bounded(self.resolved.max_updates, heartbeat),
                          guard=self.guard.check, step_guard=self.guard.check_soon)
        except PSNError as exc:   # a runtime error at a rule: show the rule's line
            raise exc.locate(self.source.source, self.source.filename)
        self.injector.quiescent()
        dropped, problem = self.host.check_waiting(self._fmt)
        self.dropped_deletions += dropped
        self.wall_seconds += time.perf_counter() - t0
        if problem:
            raise EvaluationError(problem)
        return self

    # -- reading -------------------------------------------------------------------------
    def relation_names(self, hidden: bool = False) -> set[str]:
        """The relations :meth:`relations` returns: every visible predicate of the program
        (with ``hidden``, the localizer's auxiliaries and aggregate inputs too)."""
        require_flag(hidden, "hidden")
        preds = set(self.program.visible) | self.ledger.preds
        if hidden:
            return preds | set(self.program.predicates)
        return preds - (set(self.program.hidden) | set(self.source.hidden))

    def relations(self, hidden: bool = False) -> dict[str, set[tuple]]:
        """Result relations: the union over nodes of every present tuple, per predicate.

        Hidden predicates (localizer auxiliaries, aggregate contributions) are left out
        unless ``hidden``; every visible predicate of the program appears, possibly empty.
        """
        return self.host.relations(self.relation_names(hidden))

    def multiset(self, pred: str) -> dict[tuple, int]:
        """``tuple -> number of stored occurrences`` of ``pred`` over all nodes."""
        check_relation(pred, self.relation_names(hidden=True))
        return self.host.multiset(pred)

    def node_state(self, node_id: Any, hidden: bool = True) -> dict[str, dict[tuple, Any]]:
        """The committed state of one node: ``pred -> {tuple: stored annotation}`` (empty
        for a node that does not exist); the localizer's auxiliaries too with ``hidden``.

        Raises
        ------
        InputError
            For ``hidden`` not True or False, or a ``node_id`` that is not hashable (no
            location value is).
        """
        require_flag(hidden, "hidden")
        node = self.nodes.get(_node_id(node_id))
        if node is None:
            return {}
        skip = set() if hidden else set(self.program.hidden)
        return {p: dict(t) for p, t in node.state.items() if t and p not in skip}

    def why(self, pred: str, tup: tuple) -> str:
        """The complete provenance of ``pred(tup)`` as a minimal sum of products of base
        facts (Liu et al. 2009, Sec. 4; ``psn run --why``), under every MinShip mode: the
        alternatives lazy MinShip keeps buffered at the senders are included
        (:func:`engine.why.why`).

        Raises
        ------
        InputError
            If the annotation scheme keeps no provenance, the predicate is unknown or the
            arity wrong, or a burst was applied and not run yet;
            :class:`engine.why.NotDerived` if the fact is not derived.
        """
        from .why import why
        return why(self, pred, tup)

    @property
    def metrics(self) -> dict:
        """Totals plus ``nodes`` and ``workers`` breakdowns.

        Engine counters (per node, summed): ``updates_received``, ``updates_processed``
        (picked), ``updates_fired``, ``derivations`` (updates produced by firing),
        ``steps``, ``state_tuples``, ``state_occurrences`` (multiset size),
        ``operator_state``. Traffic (:class:`engine.transport.TrafficMetrics`):
        ``messages_sent``, ``tuples_sent``, ``bytes_sent`` (msgpack), ``annotation_bytes``,
        ``worker_messages_sent``, ``worker_bytes_sent``, ``local_tuples``. Run:
        ``polls``, ``wall_seconds``, ``dropped_deletions``, ``nodes_count``. A phased
        scheme adds its coordinator's counters (DRed: ``phase_rounds``, ``barriers``,
        ``barrier_messages``, ``barrier_bytes``, ``overdelete_tuples``,
        ``overdelete_bytes``, ``rederive_tuples``, ``rederive_bytes``, ``held_updates``;
        :class:`provenance.dred.DRedPhases`).
        """
        report = self.host.report()
        totals = report["totals"]
        totals.update(polls=self.polls, wall_seconds=round(self.wall_seconds, 6),
                      dropped_deletions=self.dropped_deletions, nodes_count=len(self.nodes))
        totals["nodes"] = report["nodes"]
        totals["workers"] = report["workers"]
        return totals
