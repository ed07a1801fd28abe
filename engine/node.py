"""One PSN node: state K, queue U, and the pick / fire / commit iteration.

Role: Nigam et al. 2012, Algorithm 1 and Fig. 2-3, for the facts stored at one node. A node
receives updates ``(sign, pred, tuple, annotation)`` into its queue and, on :meth:`Node.step`,

1. **picks** updates: all pickable ones (default, Nigam end of Sec. 4) or one. The scheme
   decides pickability (a deletion whose occurrence is not yet present waits, keyed by its
   fact, and is retried as soon as an insertion of that fact is picked), the new ν value and
   the delta to fire with (or nothing, when the update is not news). A *node-wide* deletion
   (:data:`EVERY_FACT`, sent by MinShip) is picked as the deletion of every fact the scheme
   says it concerns;
2. runs the **pick stages** (hook for aggregate selection, :mod:`engine.aggsel`) on the
   picked deltas;
3. **fires** the compiled delta rules of every picked delta (ν reads for atoms before the
   delta position, committed reads after it, :mod:`engine.compile`);
4. **commits** the ν values into the state and maintains the join indexes; presence changes
   of contribution relations go to the aggregate operators, whose result updates are
   addressed to this node;
5. runs the **send stages** (hook for MinShip, :mod:`engine.minship`) on the outgoing
   updates, grouped per destination, and returns ``[(destination node, update)]``.

The node is pure and deterministic: the same sequence of ``receive`` and ``step`` calls gives
the same outputs. It knows nothing about transports, workers, clocks or wire formats.

**Negation.** For every predicate ``q`` some rule reads under ``not``, the node maintains the
*absence relation* ``!q``: ``!q(t)`` holds while ``q(t)`` is absent from the node. Its updates
are made by the node itself, once per step, from the presence changes of ``q`` between the
committed state and ν (:meth:`Node._absence_deltas`): ``q(t)`` appeared, so the absence
ends (a deletion of ``!q(t)`` with the absence's annotation, ``scheme.absence_ends``); ``q(t)``
disappeared, so a new absence begins (an insertion with a fresh annotation,
``scheme.absence``). They are fired like picked updates (the delta rules of negated atoms,
:mod:`engine.compile`), so what was derived from an absence is retracted when the fact
appears and derived again, under a new annotation, when it disappears. An absence's
annotation is made the first time a join reads it (:meth:`Node.absent`) or when it begins,
so a node keeps annotations only for the absences its rules have used. Why the result is
the stratified model whatever the delivery order: ``docs/provenance.md``, "Negation".

A scheme with ``commit_on_arrival`` (the original PSN, :mod:`provenance.failure_modes`) gets
another step, chosen once when the node is made: every update that arrived changes the state
first (pick and commit), and the delta rules then fire against that state (Nigam et al. 2012,
Sec. 6, Fig. 6). The step of every other scheme is untouched.

Deliberately not here: delivery, scheduling, metrics of traffic (``engine.host`` and
``engine.transport``), annotation semantics (``provenance``).
"""

from __future__ import annotations

import weakref
from operator import itemgetter
from typing import Any, Callable, Iterator, Protocol

from provenance.base import NO_FIRE as _NO_FIRE
from provenance.base import AnnotationBudgetExceeded, AnnotationScheme
from ndlog.builtins import format_value
from .aggregate import AggregateOperator
from .compile import compile_delta_rules
from .guards import UnsafeAnnotationError, budget_error
from .ledger import describe_fact
from .program import CENTRAL, EngineProgram, absence_pred

#: the count of a scheme that counts every stored fact once (see :meth:`Node.size`)
_unit_count = AnnotationScheme.count

__all__ = ["Node", "Update", "SendStage", "PickStage", "format_fact", "EVERY_FACT",
           "check_negation"]

#: ``(sign, predicate, tuple, annotation)`` with sign ``1`` (insertion) or ``-1`` (deletion).
Update = tuple

#: The predicate of a *node-wide* deletion ``(-1, EVERY_FACT, (node,), ann)``: the deletion
#: annotation ``ann`` applies to every fact the node stores, as far as the scheme's
#: ``zero_everywhere(ctx, ann, facts)`` says it may (absorption: the facts whose
#: provenance has a zeroed variable; ``facts()`` gives ``(pred, tuples, values)`` per
#: relation). MinShip sends one per destination and step instead of
#: one deletion per fact. Not an NDlog name (names start with a lower-case letter), so it
#: never meets a program predicate; its tuple is the destination, which is where
#: :meth:`EngineProgram.location` routes it.
EVERY_FACT = "$every"

#: Updates a step picks, or fires, between two calls of its guard (:meth:`Node.step`): a
#: step over a huge batch (one node of a centralized program, derivation sets that grow
#: exponentially) is then stopped by a memory ceiling while it grows, not after it.
STEP_CHUNK = 64


def format_fact(pred: str, tup: tuple, loc: int | None = None) -> str:
    """``link(@a, b)`` (with ``@`` before argument ``loc`` if given)."""
    args = [("@" if i == loc else "") + format_value(v) for i, v in enumerate(tup)]
    return f"{pred}(" + ", ".join(args) + ")"


def _key_getter(positions: tuple[int, ...]) -> Callable[[tuple], tuple]:
    """``t -> tuple(t[p] for p in positions)``, fast."""
    if len(positions) == 1:
        p = positions[0]
        return lambda t: (t[p],)
    return itemgetter(*positions)


def group_by_destination(out: list) -> dict[Any, list]:
    """``[(destination, update)]`` -> ``{destination: [update, ...]}``, order kept: one
    message per destination (the unit the transports count and send)."""
    by_dst: dict[Any, list] = {}
    for dst, upd in out:
        lst = by_dst.get(dst)
        if lst is None:
            by_dst[dst] = [upd]
        else:
            lst.append(upd)
    return by_dst


def drop_unmatched_deletions(nodes, scheme, fmt: Callable = format_fact
                             ) -> tuple[int, str | None]:
    """After global quiescence: deletions still waiting for their occurrence.

    For schemes without exact deletions (set semantics) they are dropped and counted;
    otherwise they violate an engine invariant, described in the returned message.

    Returns
    -------
    (dropped, problem)
        How many were dropped, and the message of the first violation or None.
    """
    dropped = 0
    for node in nodes:
        left = node.waiting_updates()
        if not left:
            continue
        if not scheme.exact_deletions:
            dropped += len(left)
            node.waiting.clear()
            continue
        _, pred, tup, _ = left[0]
        return dropped, (f"engine invariant violated: {len(left)} deletion(s) at node "
                         f"{format_value(node.id)} never found their occurrence, e.g. "
                         f"{fmt(pred, tup)}")
    return dropped, None


class PickStage(Protocol):
    """Between pick and fire (receiving side of aggregate selection, Liu et al. Sec. 6)."""

    def picked(self, node: "Node", picked: list) -> list:
        """Filter/transform ``[(sign, pred, tuple, delta)]`` before firing."""


class SendStage(Protocol):
    """Between fire and send, per destination (MinShip and sending-side AggSel, Liu Sec. 5-6)."""

    def send(self, node: "Node", out: list) -> list:
        """Transform ``[(destination, update)]`` produced by one step."""

    def flush(self, node: "Node") -> list:
        """End of stream: return buffered ``[(destination, update)]``."""


def check_negation(scheme, program: EngineProgram) -> None:
    """Refuse a scheme that cannot maintain negated atoms exactly on ``program``.

    Set semantics cannot: an insertion into a negated relation deletes what was derived from
    the fact's absence, and a later absence derives it again, so one fact sees insertions
    and deletions that set semantics cannot count (nor can the failure modes of earlier
    algorithms). A scheme maintains negation when its ``negation`` attribute is true.

    Raises
    ------
    engine.guards.UnsafeAnnotationError
        Pointing at the first negated atom, naming the annotations that work.
    """
    if getattr(scheme, "negation", False):
        return
    rule = next(r for r in program.source.rules if r.negations) \
        if any(r.negations for r in program.source.rules) else None
    neg = rule.negations[0] if rule is not None else None
    raise UnsafeAnnotationError(
        f"annotation '{scheme.name}' cannot maintain negation: "
        + (f"rule {rule.name} reads 'not {neg.pred}', and " if rule is not None else "")
        + "a fact that appears in a negated relation deletes what was derived from its "
        "absence, which this annotation cannot do exactly",
        neg.span if neg is not None else None, program.source.source,
        hint="use --annotation absorption (the default) or --annotation derivation")


def _chunks(items: list, guard: Callable[[], None]) -> Iterator[list]:
    """Consecutive chunks of :data:`STEP_CHUNK` items, ``guard`` called before each (for
    a step over more items than that; its callers test, so that a step of a few updates,
    the common one, pays no call)."""
    for start in range(0, len(items), STEP_CHUNK):
        guard()
        yield items[start:start + STEP_CHUNK]


class NodeMetrics:
    """Counters of one node (engine side; traffic is counted by the transport)."""

    __slots__ = ("updates_received", "updates_processed", "updates_fired", "derivations",
                 "steps")

    def __init__(self):
        self.updates_received = 0
        self.updates_processed = 0
        self.updates_fired = 0
        self.derivations = 0
        self.steps = 0

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__slots__}


class Node:
    """The state and queue of one node, with the PSN iteration.

    Parameters
    ----------
    node_id:
        The location value this node stands for.
    program:
        From :func:`engine.program.prepare`.
    scheme:
        An :class:`~provenance.base.AnnotationScheme`.
    ctx:
        The scheme's context for this node (``scheme.context(node_id, shared)``).
    batch:
        Pick all pickable updates per step (default) or one.

    Notes
    -----
    If ``scheme.commit_on_arrival`` is true, :meth:`step` and :meth:`has_work` are
    :meth:`_step_on_arrival` and its ``has_work`` (bound once here, so the other schemes pay
    nothing for it).
    """

    central = CENTRAL

    def __init__(self, node_id: Any, program: EngineProgram, scheme, ctx=None, *,
                 batch: bool = True):
        self.id = node_id
        self.program = program
        self.scheme = scheme
        self.ctx = ctx
        self.batch = batch
        self.state: dict[str, dict[tuple, Any]] = {}
        self.nu: dict[str, dict[tuple, Any]] = {}
        self._index_specs: dict[str, list[tuple[Callable, dict]]] = {}
        self._probes: dict[tuple[str, tuple[int, ...]], list] = {}
        self._nu_cache: dict = {}
        self._touched: list[str] = []
        self.queue: list[Update] = []
        self.waiting: dict[tuple, list[Update]] = {}
        self.metrics = NodeMetrics()
        self.pick_stages: list[PickStage] = []
        self.send_stages: list[SendStage] = []
        #: True while aggregate selection prunes here: the compiled rules then check that
        #: every recursive step worsens the aggregated values (:func:`engine.aggsel.install`)
        self.monotone_checks = False
        for pred in sorted(program.predicates):     # one order in every process
            self.table(pred)
        self.aggregates = {pred: AggregateOperator(spec)
                           for pred, spec in program.aggregates.items()}
        #: predicates read under ``not``; their absences (committed, and begun this step)
        self.negated = program.negated
        if self.negated:
            check_negation(scheme, program)
        self._absence: dict[str, dict[tuple, Any]] = {p: {} for p in self.negated}
        self._absence_nu: dict[str, dict[tuple, Any]] = {p: {} for p in self.negated}
        self._flips: list[tuple[str, tuple, bool]] = []
        self.fire_table = compile_delta_rules(self, program.rules, program)
        self._rederive_plans: dict[int, Callable] = {}
        if getattr(scheme, "commit_on_arrival", False):
            #: deltas of updates that arrived (and changed the state) but have not fired
            self.arrived: list = []
            self.step = self._step_on_arrival
            self.has_work = self._has_work_on_arrival

    # -- structures the compiled plans bind to -------------------------------------------
    def table(self, pred: str) -> dict:
        """The committed tuples of ``pred`` (``tuple -> stored value``), created on demand."""
        t = self.state.get(pred)
        if t is None:
            t = self.state[pred] = {}
            self.nu[pred] = {}
        return t

    def nu_table(self, pred: str) -> dict:
        """The batch's ν overlay of ``pred`` (``tuple -> stored value or None``)."""
        self.table(pred)
        return self.nu[pred]

    def index_probe(self, pred: str, positions: tuple[int, ...]) -> list:
        """The lookup of ``pred``'s committed tuples by their arguments at ``positions``,
        in a one-element list: ``cell[0](key)`` gives a dict whose keys are the committed
        tuples with those arguments equal to ``key``, or None if there are none.

        Three forms, all giving the same tuples:

        * ``positions`` is only the location argument of a distributed program: every tuple
          stored here has this node as its location, so the lookup gives the table itself
          for this node's key and no index is kept;
        * the table is empty now: the index is *dormant*, made (from the table) and kept up
          to date only from the first lookup that finds the table non-empty, and a lookup
          before that gives None without making it. A rule whose other atom changes rarely
          (``link`` joined with the localizer's ``r2_aux``) then keeps no index through an
          insertion: on the 1,000-node dense topology that is about 8 million entries;
        * otherwise a hash index (``key -> {tuple: None}``) made now and kept up to date by
          :meth:`_commit`.

        When the index is made, ``cell[0]`` becomes its ``get``.
        """
        key = (pred, positions)
        cell = self._probes.get(key)
        if cell is None:
            cell = self._probes[key] = [self._probe_fn(pred, positions)]
        return cell

    def _probe_fn(self, pred: str, positions: tuple[int, ...]) -> Callable:
        """The first content of :meth:`index_probe`'s cell (its three forms)."""
        table = self.table(pred)
        program = self.program
        if program.distributed and self.id != CENTRAL and \
                positions == (program.location_position(pred),):
            return {(self.id,): table}.get
        if table:
            return self._make_index(pred, positions)
        node = weakref.ref(self)        # not the node itself: a cycle through its probes
        #                                 would keep a dropped network's state alive until
        #                                 a full collection, which the runs hold off

        def dormant(key):
            if not table:
                return None
            return node()._make_index(pred, positions)(key)
        return dormant

    def _make_index(self, pred: str, positions: tuple[int, ...]) -> Callable:
        """Make the committed hash index of ``pred`` on ``positions`` from its table, have
        :meth:`_commit` keep it up to date, and return its ``get`` (also put in the
        probe's cell)."""
        idx: dict = {}
        key_of = _key_getter(positions)
        self._index_specs.setdefault(pred, []).append((key_of, idx))
        for t in self.table(pred):
            idx.setdefault(key_of(t), {})[t] = None
        cell = self._probes.get((pred, positions))
        if cell is not None:
            cell[0] = idx.get
        return idx.get

    def nu_new_lookup(self, pred: str, spec) -> Callable:
        """``key -> tuples`` present in ν but not committed (inserted in this batch) whose
        arguments at the positions ``spec`` equal ``key`` (``spec`` ``"full"``: the tuple
        ``key`` itself; ``"scan"``: every such tuple, ``key`` ignored)."""
        state_p, over = self.table(pred), self.nu_table(pred)
        cache = self._nu_cache
        if spec == "scan":
            def scan(key):
                return [t for t, s in over.items() if s is not None and t not in state_p]
            return scan
        if spec == "full":
            def full(key):
                return (key,) if over.get(key) is not None and key not in state_p else ()
            return full
        positions = spec
        ck = (pred, positions)

        def lookup(key):
            idx = cache.get(ck)
            if idx is None:
                idx = cache[ck] = {}
                for t, s in over.items():
                    if s is not None and t not in state_p:
                        idx.setdefault(tuple(t[p] for p in positions), []).append(t)
            return idx.get(key, ())
        return lookup

    def absent(self, pred: str, t: tuple, view_nu: bool) -> Any:
        """The stored annotation of the absence ``!pred(t)``, or None if ``pred(t)`` is
        present (in ν if ``view_nu``, else committed). An absence read for the first time
        gets its annotation now (``scheme.absence``), except that of a fact that appears in
        this step, which no committed fact has been joined with: it reads as present, and
        its end fires nothing (:meth:`_absence_deltas`), which changes no result."""
        state_p = self.state[pred]
        over = self.nu[pred]
        if view_nu and over and t in over:
            if over[t] is not None:
                return None
            if t in state_p:                       # it disappeared in this step
                return self._absence_nu[pred][t]
        if t in state_p:
            return None
        have = self._absence[pred]
        v = have.get(t)
        if v is None:
            if over and over.get(t) is not None:   # appears in this step, never read
                return None
            scheme = self.scheme
            v = have[t] = scheme.singleton(scheme.absence(self.ctx, (absence_pred(pred), t)))
        return v

    def absence_of(self, pred: str, t: tuple) -> Any:
        """The committed annotation of the absence ``!pred(t)`` if ``pred(t)`` is absent
        and a rule has read its absence, else None (read-only: makes no annotation)."""
        if t in self.state[pred]:
            return None
        have = self._absence.get(pred)
        return None if have is None else have.get(t)

    def _absence_deltas(self, picked: list) -> None:
        """Append to ``picked`` the updates of the absence relations: for each fact of a
        negated predicate whose presence ν changes, the end of its absence (a deletion) or
        the beginning of a new one (an insertion with a fresh annotation)."""
        scheme, ctx = self.scheme, self.ctx
        flips = self._flips
        for pred in self._touched:
            if pred not in self.negated:
                continue
            state_p, over = self.state[pred], self.nu[pred]
            apred = absence_pred(pred)
            for t, s in over.items():
                was, now = t in state_p, s is not None
                if was == now:
                    continue
                flips.append((pred, t, now))
                if now:                               # appeared: the absence ends
                    v = self._absence[pred].get(t)
                    if v is not None:
                        picked.append((-1, apred, t, scheme.absence_ends(ctx, (apred, t), v)))
                else:                                 # disappeared: a new absence begins
                    ann = scheme.absence(ctx, (apred, t))
                    self._absence_nu[pred][t] = scheme.singleton(ann)
                    picked.append((1, apred, t, ann))

    def _commit_absences(self) -> None:
        """The absences as of the committed state: ended ones are dropped, begun ones
        become committed."""
        for pred, t, appeared in self._flips:
            if appeared:
                self._absence[pred].pop(t, None)
            else:
                self._absence[pred][t] = self._absence_nu[pred].pop(t)
        self._flips.clear()

    # -- queue ---------------------------------------------------------------------------
    def receive(self, update: Update) -> None:
        """Put an update into the queue U."""
        self.queue.append(update)
        self.metrics.updates_received += 1

    def has_work(self) -> bool:
        """True if the queue holds updates not yet examined (waiting deletions do not
        count: they become pickable only when an insertion of their fact is picked)."""
        return bool(self.queue)

    # -- one iteration -------------------------------------------------------------------
    def step(self, guard: Callable[[], None] | None = None) -> list[tuple[Any, Update]]:
        """One PSN iteration: pick, fire, commit (Nigam et al. 2012, Algorithm 1, Fig. 2-3).

        Parameters
        ----------
        guard:
            Called between chunks of :data:`STEP_CHUNK` updates picked or fired, in a step
            over more than that many (a memory ceiling that raises,
            :class:`engine.guards.MemoryGuard`); the step is then left mid-way and the run
            must stop.

        Returns
        -------
        list
            ``[(destination node, update)]`` after the send stages.

        Notes
        -----
        With ``batch`` every pickable update is picked first (a *complete iteration*, Nigam
        Definition 4; correct by the discussion closing Sec. 4), so every delta rule of the
        batch reads the same ν view; otherwise one update (a *PSN-iteration*, Definition 5).

        Raises
        ------
        engine.guards.AnnotationBudgetError
            If an annotation grew past its scheme's budget (derivation sets), naming the
            fact; the node's state is then left mid-step and the run must stop.
        """
        self.metrics.steps += 1
        picked: list = []
        out: list = []
        try:
            if self.batch:
                queue, self.queue = self.queue, []
                if guard is None or len(queue) <= STEP_CHUNK:
                    self._pick_all(queue, picked)
                else:
                    for part in _chunks(queue, guard):
                        self._pick_all(part, picked)
            else:
                while self.queue and not self._touched:
                    self._pick(self.queue.pop(0), picked, False)
            self._fire(picked, out, guard)
        except AnnotationBudgetExceeded as exc:
            raise self._over_budget(exc) from None
        return self._send(self._commit(), out)

    def _fire(self, picked: list, out: list, guard=None) -> None:
        """Run the pick stages on ``picked``, add the updates of the absence relations
        (:meth:`_absence_deltas`), then fire the delta rules of each update into ``out``,
        calling ``guard`` between chunks of :data:`STEP_CHUNK` updates when there are
        more."""
        for stage in self.pick_stages:
            picked = stage.picked(self, picked)
        if self.negated:
            self._absence_deltas(picked)
        fire_table = self.fire_table
        parts = (picked,) if guard is None or len(picked) <= STEP_CHUNK \
            else _chunks(picked, guard)
        for part in parts:
            for sign, pred, tup, delta in part:
                fns = fire_table.get(pred)
                if fns:
                    self.metrics.updates_fired += 1
                    for fire in fns:
                        fire(sign, tup, delta, out)

    def _send(self, changes: list, out: list) -> list:
        """Feed committed presence ``changes`` to the aggregate operators, run the send
        stages on ``out`` and drop duplicates (idempotent schemes)."""
        self.metrics.derivations += len(out)
        if changes:
            self._aggregate(changes, out)
        for stage in self.send_stages:
            out = stage.send(self, out)
        if self.scheme.idempotent and len(out) > 1:
            out = list(dict.fromkeys(out))
        return out

    def _step_on_arrival(self, guard: Callable[[], None] | None = None
                         ) -> list[tuple[Any, Update]]:
        """:meth:`step` of a scheme whose updates change the state when they arrive
        (``commit_on_arrival``: the original PSN, Nigam et al. 2012, Sec. 6, Fig. 6).

        Every update queued since the last step has arrived: it is picked and committed at
        once (so it is already in the state any delta rule reads); then the delta rules of
        every arrived update fire (with ``batch``) or of the oldest one, against the
        committed state. Compared with :meth:`step`, commit comes before fire.
        """
        self.metrics.steps += 1
        out: list = []
        changes: list = []
        try:
            if self.queue:
                queue, self.queue = self.queue, []
                if guard is None or len(queue) <= STEP_CHUNK:
                    self._pick_all(queue, self.arrived)
                else:
                    for part in _chunks(queue, guard):
                        self._pick_all(part, self.arrived)
                changes = self._commit()
            if self.batch:
                picked, self.arrived = self.arrived, []
            else:
                picked = [self.arrived.pop(0)] if self.arrived else []
            self._fire(picked, out, guard)
        except AnnotationBudgetExceeded as exc:
            raise self._over_budget(exc) from None
        return self._send(changes, out)

    def _has_work_on_arrival(self) -> bool:
        """:meth:`has_work` with ``commit_on_arrival``: arrived updates not yet fired too."""
        return bool(self.queue or self.arrived)

    def _over_budget(self, exc: AnnotationBudgetExceeded):
        """The user-facing error for a scheme's budget exception, the fact shown as NDlog."""
        pred, tup = exc.fact
        return budget_error(exc, describe_fact(self.program, pred, tup),
                            self.program.made_for(pred))

    def rederive(self, heads) -> list[tuple[Any, Update]]:
        """Fire, once, every rule whose head predicate is in ``heads`` over the committed
        state: each instance of its body found here derives its head as an insertion
        (DRed's re-derivation, Liu et al. 2009, Sec. 3.2, Fig. 5 steps 5-8). Called at
        global quiescence (ν is empty), so every instance is found exactly once: from its
        first body atom, the others read from the committed state.

        Parameters
        ----------
        heads:
            ``head predicate -> the nodes whose heads to keep`` (a container of node ids,
            or ``None`` for every node): a derived head located elsewhere is dropped.

        Returns
        -------
        list
            ``[(destination node, update)]`` after the send stages, duplicates dropped for
            idempotent schemes.
        """
        plans = self._rederive_plans
        out: list = []
        for rule in self.program.rules:
            if rule.head.pred not in heads or not rule.body_atoms:
                continue
            key = id(rule)
            fire = plans.get(key)
            if fire is None:
                first = rule.body_atoms[0].pred
                fire = plans[key] = compile_delta_rules(self, [rule], self.program)[first][0]
            pred = rule.body_atoms[0].pred
            derived: list = []
            for tup, stored in list(self.state.get(pred, {}).items()):
                for occ in self.scheme.occurrences(stored):
                    fire(1, tup, occ, derived)
            keep = heads[rule.head.pred]
            out.extend(derived if keep is None else
                       [(dst, upd) for dst, upd in derived if dst in keep])
        return self._send([], out)

    def flush(self) -> list[tuple[Any, Update]]:
        """End of stream: ask every send stage for what it buffered."""
        out: list = []
        for stage in self.send_stages:
            out.extend(stage.flush(self))
        return out

    def _pick_all(self, queue: list, picked: list) -> None:
        """Batched pick (the hot loop of :meth:`_pick`, with its lookups hoisted). A
        scheme whose annotation is presence alone (``presence_only``, set semantics) has
        its insertions picked here without a call: news iff the fact is absent. So has an
        insertion of an absent fact whose annotation is of the scheme's ``fresh_type``
        (absorption's single derivation while nothing is zeroed): stored and fired as it
        came. That type is asked again after anything that may zero variables (a
        deletion, a waiting update retried)."""
        nu, state, waiting, touched = self.nu, self.state, self.waiting, self._touched
        scheme, ctx = self.scheme, self.ctx
        pick = scheme.pick
        present = scheme.fixed_annotation if scheme.presence_only else None
        as_came = scheme.fresh_type(ctx) if present is None else None
        processed = 0
        for upd in queue:
            sign, pred, tup, ann = upd
            over = nu.get(pred)
            if over is None:
                self._pick(upd, picked, True)
                if sign < 0:                    # it may have zeroed variables
                    as_came = scheme.fresh_type(ctx)
                continue
            if present is not None and sign > 0:
                fresh = over[tup] is None if tup in over else tup not in state[pred]
                if not over:
                    touched.append(pred)
                over[tup] = present
                processed += 1
                if fresh:
                    picked.append(upd if ann is present else (sign, pred, tup, present))
                if waiting and (pred, tup) in waiting:
                    for w in waiting.pop((pred, tup)):
                        self._pick(w, picked, True)
                continue
            if type(ann) is as_came and sign > 0 and tup not in over and \
                    tup not in state[pred]:     # absent: stored and fired as it came
                if not over:
                    touched.append(pred)
                over[tup] = ann
                processed += 1
                picked.append(upd)
                if waiting and (pred, tup) in waiting:
                    for w in waiting.pop((pred, tup)):
                        self._pick(w, picked, True)
                    as_came = scheme.fresh_type(ctx)
                continue
            if tup in over:
                res = pick(ctx, (pred, tup), over[tup], sign, ann, True)
            else:
                res = pick(ctx, (pred, tup), state[pred].get(tup), sign, ann, False)
            if res is None:
                waiting.setdefault((pred, tup), []).append(upd)
                continue
            new, delta = res
            if not over:
                touched.append(pred)
            over[tup] = new
            processed += 1
            if delta is not _NO_FIRE:       # the update itself when it fires as it came
                picked.append(upd if delta is ann else (sign, pred, tup, delta))
            if sign < 0:
                as_came = scheme.fresh_type(ctx)
            elif waiting and (pred, tup) in waiting:
                for w in waiting.pop((pred, tup)):
                    self._pick(w, picked, True)
                as_came = scheme.fresh_type(ctx)
        self.metrics.updates_processed += processed

    def _pick(self, upd: Update, picked: list, batch: bool) -> None:
        sign, pred, tup, ann = upd
        if pred == EVERY_FACT:
            self._pick_everywhere(ann, picked, batch)
            return
        over = self.nu.get(pred)
        if over is None:
            self.table(pred)
            over = self.nu[pred]
        if tup in over:
            stored, owned = over[tup], True
        else:
            stored, owned = self.state[pred].get(tup), False
        fact = (pred, tup)
        res = self.scheme.pick(self.ctx, fact, stored, sign, ann, owned)
        if res is None:
            self.waiting.setdefault(fact, []).append(upd)
            return
        new, delta = res
        if not over:
            self._touched.append(pred)
        over[tup] = new
        self.metrics.updates_processed += 1
        if delta is not _NO_FIRE:
            picked.append((sign, pred, tup, delta))
        if sign > 0 and fact in self.waiting:
            retry = self.waiting.pop(fact)
            if batch:
                for w in retry:
                    self._pick(w, picked, True)
            else:
                self.queue[:0] = retry

    def _pick_everywhere(self, ann, picked: list, batch: bool) -> None:
        """A node-wide deletion (:data:`EVERY_FACT`): pick ``ann`` as the deletion of every
        present fact the scheme names."""
        nu, state = self.nu, self.state
        self.metrics.updates_processed += 1
        for pred, tup in self.scheme.zero_everywhere(self.ctx, ann, self._present):
            over = nu.get(pred)
            present = over.get(tup) is not None if over and tup in over \
                else tup in state.get(pred, ())
            if present:
                self._pick((-1, pred, tup, ann), picked, batch)

    def _present(self):
        """``(pred, tuples, ν values)`` of the present facts of each relation (two
        parallel sequences): the committed state with this batch's ν overlay on top. A
        relation ν does not touch is given as its table's own views (no copy)."""
        for pred, rows in self.state.items():
            over = self.nu.get(pred)
            if not over:
                if rows:
                    yield pred, rows.keys(), rows.values()
                continue
            kept = [(t, s) for t, s in rows.items() if t not in over]
            kept.extend((t, s) for t, s in over.items() if s is not None)
            if kept:
                tuples, values = zip(*kept)
                yield pred, tuples, values

    def _commit(self) -> list[tuple[str, tuple, bool]]:
        """Write ν into the state, keep the join indexes up to date, and return the
        presence changes of the relations aggregates read (``(pred, tuple, present)``)."""
        changes = []
        aggs = self.aggregates
        for pred in self._touched:
            over = self.nu[pred]
            state_p = self.state[pred]
            specs = self._index_specs.get(pred, ())
            if not specs and pred not in aggs:      # no index, no aggregate: values only
                for t, s in over.items():
                    if s is None:
                        state_p.pop(t, None)
                    else:
                        state_p[t] = s
                over.clear()
                continue
            for t, s in over.items():
                was = t in state_p
                if s is None:
                    if was:
                        del state_p[t]
                        for key_of, idx in specs:
                            k = key_of(t)
                            bucket = idx[k]
                            del bucket[t]
                            if not bucket:
                                del idx[k]
                        if pred in aggs:
                            changes.append((pred, t, False))
                else:
                    state_p[t] = s
                    if not was:
                        for key_of, idx in specs:
                            k = key_of(t)
                            b = idx.get(k)
                            if b is None:
                                idx[k] = {t: None}
                            else:
                                b[t] = None
                        if pred in aggs:
                            changes.append((pred, t, True))
            over.clear()
        self._touched.clear()
        self._nu_cache.clear()
        if self._flips:
            self._commit_absences()
        return changes

    def _aggregate(self, changes, out: list) -> None:
        by_pred: dict[str, list] = {}
        for pred, t, present in changes:
            by_pred.setdefault(pred, []).append((t, present))
        for pred, ch in by_pred.items():
            op = self.aggregates[pred]
            hpred = op.spec.head_pred
            for sign, row in op.apply(ch):
                fact = (hpred, row)
                ann = self.scheme.aggregate(self.ctx, fact)
                out.append((self.program.location(hpred, row), (sign, hpred, row, ann)))

    # -- reading -------------------------------------------------------------------------
    def relation(self, pred: str) -> dict[tuple, Any]:
        """Committed tuples of ``pred`` with their stored annotations."""
        return dict(self.state.get(pred, {}))

    def waiting_updates(self) -> list[Update]:
        return [u for us in self.waiting.values() for u in us]

    def operator_size(self) -> int:
        """Entries held by operators: aggregate contributions, plus what pick/send stages
        report through an optional ``size()`` method (MinShip buffers, AggSel candidates)."""
        n = sum(len(g) for op in self.aggregates.values() for g in op.groups.values())
        for stage in (*self.pick_stages, *self.send_stages):
            size = getattr(stage, "size", None)
            if size is not None:
                n += size()
        return n

    def size(self) -> tuple[int, int]:
        """(stored tuples, stored occurrences) over all relations. A scheme that counts
        every stored fact once (sets, absorption) is answered without visiting the facts:
        ``psn run`` asks after every step, for every node, and on a long workload the
        visit was half of the run (1,000 link flaps on ``ts100``)."""
        tuples = sum(len(t) for t in self.state.values())
        if getattr(type(self.scheme), "count", None) is _unit_count:
            return tuples, tuples
        count = self.scheme.count
        occ = sum(count(s) for t in self.state.values() for s in t.values())
        return tuples, occ

