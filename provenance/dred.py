"""The ``dred`` annotation scheme: delete and re-derive, Liu et al.'s baseline.

Role: DRed (Gupta, Mumick, Subrahmanian 1993) as Liu et al. (ICDE 2009, Sec. 3.2, Fig. 5)
run it against absorption provenance (their Sec. 7.2): no provenance, set semantics for
what rules derive, and a deletion handled in two phases separated by a global barrier:

1. **over-delete**: a deletion of a present fact removes it and fires the delta rules, so
   every head it supports is deleted too, whatever other derivations that head has. A
   deletion of an absent fact is not news. Insertions that arrive in this phase are *held*
   (stored at their node, not fired) until the barrier;
2. **barrier**: the runtime's termination detection (global quiescence of the hosting
   loop, :class:`engine.host.Host`) ends the phase everywhere at once;
3. **re-derive**: every node fires, once, over its current state, each rule whose head
   predicate lost facts in the over-deletion, and ships the heads located at a node that
   lost facts of that predicate (the only heads that can be missing); it also releases its
   held insertions. Insertions are then news only when the fact is absent (set semantics)
   and propagate as usual.

*Why re-firing only those rules and heads is exact.* Over-deletion leaves a subset ``S'``
of the old model ``S`` that contains no fact any of whose derivations used a deleted fact,
so every fact of ``S'`` has a derivation from the remaining base facts (induction on its
derivation). Semi-naive evaluation from ``S'`` reaches the new model once every rule
instance over ``S'`` has been fired once; an instance whose head is located at a node that
lost no fact of the head's predicate derives a fact of ``S`` (``S'`` is a subset of ``S``,
which is closed under the rules) that is still in ``S'``: firing it adds nothing. The
restriction is by predicate and node, not by fact: a body node does not know which facts
its heads' nodes lost, so heads still present are shipped again (not news on arrival),
which is what makes re-derivation cost about as much as computing the view from scratch
(Liu et al. 2009, Sec. 3.2).

*What is counted, not set-valued.* A stored value is ``(count, derived)``: ``derived``
says a rule derived the fact (set semantics, cleared by over-deletion), ``count`` counts
the updates that come in exact +/- pairs: base insertions (a base deletion cancels one
live insertion, :class:`engine.ledger.Ledger`) and aggregate results (the operator
retracts every result it inserted). A fact is present while either holds; when its count
drops to 0 it is over-deleted whole, ``derived`` or not (a rule's derivation of a base
fact may rest on the fact itself, through a cycle), and re-derivation restores it if it
can. Counting them makes a base fact deleted and re-inserted in one burst, or an aggregate
whose result comes back to an earlier value while its retraction is held, exact under any
delivery order; a counted deletion that overtakes its insertion is remembered (a
*tombstone* in the node's context) and cancels the insertion when it arrives.

*Rounds.* Between bursts the network is in the re-derive phase (insertions flow freely)
and deletions are held. At every global quiescence the coordinator asks: if some node
holds deletions, a round starts (over-delete, barrier, re-derive). Aggregates make
re-derivation non-monotone (a ``min`` that improves retracts the old value): those
retractions are held too, and another round runs, until a round produces none; more than
:data:`MAX_ROUNDS` rounds per run stop with an error.

*The barrier's cost.* A coordinator protocol on the first node (in the order of
:func:`engine.host.node_key`): at each quiescence every worker but the coordinator's sends
one *done* message (its phase, whether it holds insertions or deletions, which of its nodes
lost facts of which predicates); when a phase starts the coordinator sends one *go* message
back to every other worker (the phase, and the predicates to re-derive with the nodes that
lost facts of each). The messages are msgpack-encoded like
updates and counted as traffic (messages and bytes, no tuples), per sending node and
worker, and separately (``barrier_messages``, ``barrier_bytes``). In the simulator (a
transport with a ``latency`` function and a clock that can ``advance``) a barrier also takes
virtual time: the slowest done message, then the slowest go message. The last
termination detection of a run (nobody holds anything: the run is over) is charged like
every other scheme's, which all need it: not at all.

Deliberately not here: negation (refused, :func:`engine.node.check_negation`), MinShip (no
provenance to ship), aggregate selection (its receiving side fires insertions while a
forwarded tuple is deleted, which would fire in the over-deletion phase), Ray (the driver's
termination detection does not run these phases: refused), and relative provenance (a
second baseline that can use the same :meth:`quiescence_phases` hook).
"""

from __future__ import annotations

from typing import Any

from ndlog.errors import EvaluationError
from ndlog.packing import packb

from .base import NO_FIRE, AnnotationScheme

__all__ = ["DRedScheme", "DRedPhases", "DERIVED", "COUNTED", "MAX_ROUNDS"]

#: The annotation of a rule's derivation (set semantics); ships as nothing.
DERIVED = True
#: The annotation of a counted update (a base fact's insertion or deletion, an aggregate
#: result). Not ``1``, which equals ``True`` in Python; one byte of msgpack.
COUNTED = 2

#: Rounds (over-delete, barrier, re-derive) one run may take before it stops.
MAX_ROUNDS = 50

_DELETE = "over-delete"
_DERIVE = "re-derive"
#: a phase as the barrier's messages carry it
_CODE = {_DELETE: 0, _DERIVE: 1}


class _Run:
    """The phase every node of the run is in (shared by every node's context)."""

    __slots__ = ("phase",)

    def __init__(self) -> None:
        self.phase = _DERIVE


class _NodeState:
    """What one node holds for DRed: updates held until a barrier, tombstones of counted
    deletions that overtook their insertion, and the predicates it lost facts of in the
    current over-deletion phase."""

    __slots__ = ("run", "held_ins", "held_del", "tombs", "lost")

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.held_ins: dict[tuple, list] = {}
        self.held_del: list = []
        self.tombs: dict[tuple, int] = {}
        self.lost: set[str] = set()

    def take_held(self, phase: str) -> list:
        """The held updates a phase releases (and forget them)."""
        if phase == _DELETE:
            out, self.held_del = self.held_del, []
            return out
        out = [u for us in self.held_ins.values() for u in us]
        self.held_ins = {}
        return out


class DRedScheme(AnnotationScheme):
    """Delete and re-derive (Liu et al. 2009, Sec. 3.2 and Fig. 5; see the module doc).

    One scheme object per run (:func:`provenance.get_scheme` makes a new one each time):
    it holds the run's phase, which every node's context reads.
    """

    name = "dred"
    absorptive = True
    idempotent = True
    uses_parts = False
    #: a deletion never waits for its occurrence: absent means "not news" (rule-derived)
    #: or a tombstone (counted); the phases make deletions exact instead
    exact_deletions = False
    #: a fact supported twice survives the deletion of one support (it is re-derived)
    tracks_derivations = True
    fixed_annotation = DERIVED
    ships_annotations = True
    #: aggregate selection's receiving side would fire insertions during over-deletion
    prunable = False
    phased = True

    def __init__(self) -> None:
        self.run = _Run()

    # -- contexts ------------------------------------------------------------------------
    def shared_context(self) -> _Run:
        return self.run

    def context(self, node: Any, shared: Any) -> _NodeState:
        return _NodeState(shared if isinstance(shared, _Run) else self.run)

    def quiescence_phases(self) -> "DRedPhases":
        """The coordinator of this run's phases (:class:`DRedPhases`)."""
        return DRedPhases(self)

    # -- algebra (the Booleans, as set semantics) ----------------------------------------
    def one(self, ctx):
        return True

    def zero(self, ctx):
        return False

    def join(self, ctx, a, b):
        return bool(a) and bool(b)

    def combine(self, ctx, a, b):
        return bool(a) or bool(b)

    def is_zero(self, ctx, a):
        return not a

    def equal(self, ctx, a, b):
        return bool(a) == bool(b)

    def sample(self, ctx, rng):
        return rng.random() < 0.7

    def sample_update(self, ctx, rng):
        return DERIVED if rng.random() < 0.5 else COUNTED

    def occurrences(self, stored):
        return (True,)

    # -- base facts and aggregates: counted ----------------------------------------------
    def base(self, ctx, fact, seq):
        return COUNTED

    def aggregate(self, ctx, fact):
        return COUNTED

    # -- transitions ---------------------------------------------------------------------
    def pick(self, ctx, fact, stored, sign, ann, owned=False):
        """Apply ``<sign, fact, ann>`` in the current phase (see the module doc).

        Returns ``(new stored value, delta)``: the delta fires only when the fact's
        presence changes (appears in the re-derive phase, disappears in the over-delete
        phase); held and cancelled updates leave the value as it is and fire nothing.
        """
        counted = ann is not DERIVED and ann == COUNTED
        if sign > 0:
            if counted and ctx.tombs.get(fact):
                _drop_tomb(ctx.tombs, fact)
                return stored, NO_FIRE
            if ctx.run.phase == _DELETE:
                ctx.held_ins.setdefault(fact, []).append((1, fact[0], fact[1], ann))
                return stored, NO_FIRE
            if stored is None:
                return ((1, False) if counted else (0, True)), DERIVED
            count, derived = stored
            return ((count + 1, derived) if counted else (count, True)), NO_FIRE
        if ctx.run.phase == _DERIVE:
            ctx.held_del.append((-1, fact[0], fact[1], ann))
            return stored, NO_FIRE
        if counted:
            if stored is not None and stored[0] > 0:
                # the last live insertion goes: over-delete the fact whole, even if a rule
                # derived it too (that derivation may rest on the fact itself, through a
                # cycle); re-derivation restores it if another derivation remains
                count = stored[0] - 1
                return _lose(ctx, fact, count, stored[1] and count > 0)
            held = ctx.held_ins.get(fact)
            if held and _cancel_counted(held):
                if not held:
                    del ctx.held_ins[fact]
            else:
                ctx.tombs[fact] = ctx.tombs.get(fact, 0) + 1
            return stored, NO_FIRE
        if stored is None or not stored[1]:
            return stored, NO_FIRE                   # absent, or not derived: not news
        return _lose(ctx, fact, stored[0], False)

    def count(self, stored) -> int:
        return 0 if stored is None else 1

    def derive(self, ctx, sign, head, parts, delta_pos):
        return (DERIVED,)

    # -- wire ----------------------------------------------------------------------------
    def serialize(self, ctx, ann):
        return None if ann is DERIVED else COUNTED

    def deserialize(self, ctx, data):
        return DERIVED if data is None else COUNTED


def _lose(ctx: _NodeState, fact, count: int, derived: bool):
    """The new value after an over-deletion step; fires when the fact disappears."""
    if count or derived:
        return (count, derived), NO_FIRE
    ctx.lost.add(fact[0])
    return None, DERIVED


def _drop_tomb(tombs: dict, fact) -> None:
    n = tombs[fact] - 1
    if n:
        tombs[fact] = n
    else:
        del tombs[fact]


def _cancel_counted(held: list) -> bool:
    """Remove one held counted insertion from ``held``; False if there is none."""
    for i, upd in enumerate(held):
        if upd[3] is not DERIVED:
            del held[i]
            return True
    return False


class DRedPhases:
    """The coordinator of DRed's phases, called by the hosting loop at global quiescence.

    The protocol (:meth:`provenance.base.AnnotationScheme.quiescence_phases`): the host
    calls :meth:`at_quiescence` each time nothing is in flight and no node has work; a
    True answer means a phase started (updates were queued or sent) and the loop goes on.
    :meth:`report` gives the counters the host adds to its totals.

    Counters
    --------
    ``phase_rounds``: rounds run (over-delete + re-derive); ``barriers``: phases started
    by the coordinator; ``barrier_messages``/``barrier_bytes``: done and go messages;
    ``overdelete_tuples``/``overdelete_bytes`` and ``rederive_tuples``/``rederive_bytes``:
    updates shipped between nodes in each phase (the re-derive phase includes the burst's
    insertions, which flow in it); ``held_updates``: updates held until a barrier.
    """

    FIELDS = ("phase_rounds", "barriers", "barrier_messages", "barrier_bytes",
              "overdelete_tuples", "overdelete_bytes", "rederive_tuples", "rederive_bytes",
              "held_updates")

    def __init__(self, scheme: DRedScheme, max_rounds: int = MAX_ROUNDS):
        self.scheme = scheme
        self.run = scheme.run
        self.max_rounds = max_rounds
        self.counters = dict.fromkeys(self.FIELDS, 0)
        self._seen = (0, 0)           # traffic already attributed to a phase
        self._rounds = 0              # rounds of the current run to quiescence

    def report(self) -> dict[str, int]:
        return dict(self.counters)

    def at_quiescence(self, host) -> bool:
        """Global quiescence: end the current phase and maybe start the next one.

        Raises
        ------
        ndlog.errors.EvaluationError
            If a run took more than ``max_rounds`` rounds.
        """
        self._attribute(host.transport.metrics.totals)
        nodes = list(host.nodes.items())
        states = [n.ctx for _, n in nodes]
        lost: dict[str, set] = {}
        for nid, node in nodes:
            for pred in node.ctx.lost:
                lost.setdefault(pred, set()).add(nid)
        holds_del = any(s.held_del for s in states)
        holds_ins = any(s.held_ins for s in states)
        phase = self.run.phase
        if phase == _DERIVE and not holds_del:
            if holds_ins or any(s.tombs for s in states):  # pragma: no cover
                raise EvaluationError("engine invariant violated: DRed holds insertions "
                                      "or unmatched deletions at the end of a run")
            self._rounds = 0
            return False
        coordinator = _Coordinator(host, nodes)
        coordinator.done(phase)
        if phase == _DERIVE:
            self._rounds += 1
            self.counters["phase_rounds"] += 1
            if self._rounds > self.max_rounds:
                raise EvaluationError(
                    f"DRed did not settle after {self.max_rounds} rounds of over-deletion "
                    f"and re-derivation (aggregates kept retracting results)",
                    hint="use --annotation absorption")
            self._start(host, coordinator, nodes, _DELETE, {})
        else:
            self._start(host, coordinator, nodes, _DERIVE, lost)
        self._count_barrier(coordinator)
        return True

    def _start(self, host, coordinator, nodes, phase: str, lost: dict) -> None:
        """Tell every node the new phase, release what it held, and re-derive: the rules
        whose head predicate lost facts, keeping the heads located at nodes that lost
        facts of that predicate."""
        coordinator.go(phase, lost)
        self.run.phase = phase
        self.counters["barriers"] += 1
        heads = lost
        for nid, node in nodes:
            state = node.ctx
            held = state.take_held(phase)
            if held:
                self.counters["held_updates"] += len(held)
                host.wake(nid, held)
            if phase == _DERIVE:
                state.lost.clear()
                if heads:
                    out = node.rederive(heads)
                    if out:
                        host.send(nid, out)

    def _attribute(self, totals: dict) -> None:
        """Charge the traffic since the last barrier to the phase that just ended."""
        tuples, size = totals["tuples_sent"], totals["bytes_sent"]
        d_tuples, d_bytes = tuples - self._seen[0], size - self._seen[1]
        key = "overdelete" if self.run.phase == _DELETE else "rederive"
        self.counters[f"{key}_tuples"] += d_tuples
        self.counters[f"{key}_bytes"] += d_bytes
        self._seen = (tuples, size)

    def _count_barrier(self, coordinator: "_Coordinator") -> None:
        self.counters["barrier_messages"] += coordinator.messages
        self.counters["barrier_bytes"] += coordinator.bytes
        s = self._seen
        self._seen = (s[0], s[1] + coordinator.bytes)


class _Coordinator:
    """One barrier's messages: done from every worker, go back to every worker, counted
    on the transport's traffic (and its simulated time, where it has one)."""

    def __init__(self, host, nodes: list):
        self.host = host
        self.transport = host.transport
        placement = self.transport.placement
        by_worker: dict = {}
        for nid, _ in sorted(nodes, key=lambda item: _order(item[0])):
            by_worker.setdefault(placement.worker(nid), nid)
        self.workers = by_worker                   # worker -> the node that speaks for it
        first = next(iter(by_worker.items()), (None, None))
        self.home_worker, self.home = first
        self.messages = 0
        self.bytes = 0

    def done(self, phase: str) -> None:
        """Every worker but the coordinator's reports its phase, what it holds and the
        predicates its nodes lost."""
        per_worker: dict = {}
        placement = self.transport.placement
        for nid, node in self.host.nodes.items():
            w = placement.worker(nid)
            agg = per_worker.setdefault(w, [False, False, []])
            st = node.ctx
            agg[0] |= bool(st.held_ins)
            agg[1] |= bool(st.held_del)
            if st.lost:
                agg[2].append([nid, sorted(st.lost)])
        delay = 0.0
        for w, nid in self.workers.items():
            if w == self.home_worker:
                continue
            held_ins, held_del, lost = per_worker[w]
            payload = [_CODE[phase], held_ins, held_del, lost]
            self._count(nid, w, payload, self.home)
            delay = max(delay, self._latency(nid, self.home))
        self._advance(delay)

    def go(self, phase: str, lost: dict) -> None:
        """The coordinator starts ``phase`` at every other worker, telling it which nodes
        lost facts of which predicates."""
        delay = 0.0
        table = [[p, sorted(ns, key=_order)] for p, ns in sorted(lost.items())]
        for w, nid in self.workers.items():
            if w == self.home_worker:
                continue
            self._count(self.home, self.home_worker, [_CODE[phase], table], nid)
            delay = max(delay, self._latency(self.home, nid))
        self._advance(delay)

    def _count(self, src, worker, payload, dst) -> None:
        size = len(packb(payload))
        self.transport.metrics.message(src, worker, 0, size, 0, True)
        counters = getattr(self.transport, "counters", None)     # the simulator's tallies
        if counters is not None and hasattr(counters, "record_send"):
            counters.record_send(src, dst, worker, self.transport.placement.worker(dst), 0,
                                 size, False)
        self.messages += 1
        self.bytes += size

    def _latency(self, src, dst) -> float:
        latency = getattr(self.transport, "latency", None)
        return float(latency(src, dst)) if callable(latency) else 0.0

    def _advance(self, delay: float) -> None:
        advance = getattr(self.transport.clock, "advance", None)
        if delay > 0 and callable(advance):
            advance(delay)


def _order(node_id: Any) -> tuple:
    """A total order on node ids of mixed types (the coordinator is the first node)."""
    return (type(node_id).__name__, repr(node_id))
