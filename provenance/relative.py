"""The ``relative`` annotation scheme: derivation edges, and a traversal after deletions.

Role: relative provenance (Green et al. 2007) as Liu et al. (ICDE 2009, Sec. 4 and 7.2) use
it as a baseline for absorption provenance. A node stores, for each fact, the multiset of
its *derivation edges*: for each rule instance that derives it, the set of the instance's
body facts (its immediate antecedents, not the base facts underneath them); a base fact has
one empty edge per live insertion, an aggregate result one per insertion the operator made.
Every edge travels with the update that creates it, from the node where the rule body was
joined to the head's node, so the wire codec measures the per-tuple annotation honestly.

Insertions
    An edge is news only when its fact was absent: the fact appears and its delta rules
    fire. An edge added to a present fact is stored and goes no further: the facts derived
    from it name it, not its edges, so nothing downstream changes. With ``--ship eager``
    (the default) every edge is shipped once, when it is found; with ``--ship lazy`` the
    sender ships one edge per head fact and destination and buffers the others until the
    shipped one is deleted (Liu Sec. 5; :class:`LazyEdges`). MinShip's algebra does not
    apply: the scheme ships by itself (``ship_modes``, ``send_stage``).

Deletions
    A deletion carries the edge its insertion carried and removes it. A fact left with no
    edge disappears and its delta rules fire, removing the edges it was an antecedent of.
    A fact that keeps edges may be supported only through a cycle (``p`` from ``q``, ``q``
    from ``p``; Liu Fig. 2): it is remembered as having *lost* an edge, and derivability
    is decided at global quiescence by a traversal of the edges (Liu Sec. 7.2: "relative
    provenance relies on graph traversal operations to determine derivability from base
    tuples"), run by :class:`RelativeTraversal` through the engine's quiescence hook
    (:meth:`provenance.base.AnnotationScheme.quiescence_phases`):

    1. **suspects**: every present fact that lost an edge, and every fact downstream of a
       suspect along edges (forward closure). A node finds the heads a fact derived by
       firing the fact's delta rules over its committed state into a scratch list (nothing
       is sent or stored: the join recomputes the forward edges), and tells each head's
       node which of its edges the suspect is an antecedent of;
    2. **confirm**: a suspect with an edge none of whose antecedents is an unconfirmed
       suspect is confirmed (a base or aggregate edge at once); a node that confirms a fact
       tells the nodes of the heads it derived, which unblock those edges, until nothing
       changes;
    3. **delete**: every unconfirmed suspect is deleted at its node, through its queue
       like any update (its delta rules fire the deletions of the edges it supported); a
       round ends at the next global quiescence, and another runs while facts lost edges
       (an aggregate whose input was deleted changes its result).

    The messages of steps 1 and 2 are msgpack-encoded and counted as traffic (messages and
    bytes, no tuples), per sending node and worker, and separately (``traversal_messages``,
    ``traversal_bytes``); they go in *waves* (one message per sending and receiving node
    per wave) and, in the simulator, each wave (and each barrier) takes the latency of its
    slowest message.

Phases
    Counting edges is the counting algorithm, which alone need not terminate on a cycle of
    derivations when messages are reordered (Nigam et al. 2012, Sec. 5: a fact's deletion
    and its re-insertion through the cycle chase each other around it forever). So, as
    DRed does (:mod:`provenance.dred`), updates run in phases separated by a global
    barrier: between bursts the network is in the *insert* phase and deletions are held
    at their node; at global quiescence a *delete* phase releases them and holds the
    insertions that would make a fact appear (an edge added to a present fact is stored);
    the next quiescence starts the insert phase again, and the traversal runs
    at a quiescence where nothing is held (its deletions in a delete phase). A barrier is
    counted like DRed's: one *done* message from every worker but the coordinator's, one
    *go* message back (``barrier_messages``, ``barrier_bytes``). Without a coordinator (a
    scheme object used outside a hosting loop, as the law tests do) nothing is held.

*Why it is exact under any delivery order.* Facts fire only when their presence changes,
and the delta rules read the batch's ν view before the delta atom and the committed state
after it (Nigam et al. 2012, Sec. 4), so every rule instance sends one insertion of its
edge when its body becomes present and one deletion when it stops being present (holding
an update only delays it). A deletion that overtakes its insertion finds no such edge and
waits until the insertion arrives, as a derivation set's does. So at a quiescence where
nothing is held a fact's stored edges are exactly the live instances deriving it (plus its
live base insertions and aggregate results), and the present facts are closed under the
rules and contain every derivable fact; a present fact that is not derivable is downstream
of one that lost an edge since the previous round (a fact that lost none still has the
edge it appeared with, whose antecedents appeared before it: induction on the time of
appearance). Steps 1-2 compute exactly the derivable suspects (the least fixpoint of "has
an edge from derivable facts"), so step 3 deletes exactly the others. An aggregate result
counts as derivable (its edge is the operator's); when a deleted input changes it, the
operator's retraction is a deletion like any other and the next round handles what it
leaves behind, stratum by stratum.

*Deletions of the traversal.* A deleted suspect's edges are kept aside (``dead``) until
the deletions of the instances behind them arrive; those deletions are marked as the
traversal's (:class:`Retraction`), cancel a kept-aside edge first, and do not mark a fact
the traversal confirmed as having lost an edge (its confirmed edge remains), so a round
does not re-examine what it has just confirmed.

*Why it terminates.* In an insert phase no deletion is picked, so a fact appears at most
once and fires at most once; in a delete phase no fact appears, so a fact disappears at
most once: every phase reaches quiescence. The traversal is a closure and a monotone
propagation over the finitely many present facts. Phases and traversals repeat only while
deletions are held or facts lost edges (an aggregate whose input was deleted retracts its
result, a deletion that waited for its held insertion); more than :data:`MAX_ROUNDS`
rounds (delete phases and traversals between two quiescences with nothing to do) stop a run
with an error.

Algebra (for the law tests and :meth:`derive`): values are multisets of edges (``dict``
edge -> count), an edge a ``frozenset`` of facts; ``join`` is the pairwise union of edges
(counts multiply), ``combine`` the multiset sum, ``one`` the single empty edge, and
``lift`` forgets a body fact's own edges (it stands for the fact: ``{{fact}}``).

Deliberately not here: negation (refused up front, :func:`engine.node.check_negation`),
MinShip's operator (lazy shipping of edges is :class:`LazyEdges`), aggregate selection
(pruned tuples would have no edges to traverse), Ray (the driver's termination detection
does not run the traversal: refused), and any notion of base-tuple variables (that is
``absorption``).
"""

from __future__ import annotations

from typing import Any

from ndlog.errors import EvaluationError
from ndlog.packing import packb

from .base import NO_FIRE, AnnotationScheme
from .multiset import MultisetAlgebra

__all__ = ["RelativeScheme", "RelativeTraversal", "LazyEdges", "Retraction", "KILL",
           "EMPTY_EDGE", "MAX_ROUNDS"]

#: The edge of a base insertion or an aggregate result: no antecedent.
EMPTY_EDGE: frozenset = frozenset()

#: Rounds (delete phases and traversals) one run may take between two quiescences with
#: nothing left to do before it stops.
MAX_ROUNDS = 50

#: The annotation of the traversal's deletion of an unconfirmed suspect (never shipped: it
#: is queued at the fact's own node), and the delta it fires with.
KILL = type("Kill", (), {"__repr__": lambda self: "KILL", "__slots__": ()})()


class Retraction:
    """The deletion of an edge caused by the traversal deleting one of its antecedents.

    It cancels an edge kept aside for a deleted fact first, and a fact the traversal
    confirmed that loses it is not marked as having lost an edge (see the module doc).
    """

    __slots__ = ("edge",)

    def __init__(self, edge: frozenset):
        self.edge = edge

    def __eq__(self, other) -> bool:
        return isinstance(other, Retraction) and other.edge == self.edge

    def __hash__(self) -> int:
        return hash(("retraction", self.edge))

    def __repr__(self) -> str:
        return f"Retraction({set(self.edge)!r})"


_INSERT = "insert"
_DELETE = "delete"
#: a phase as the barrier's messages carry it
_CODE = {_INSERT: 0, _DELETE: 1, "traverse": 2}


class _Run:
    """The phase every node of the run is in (shared by every node's context): ``None``
    (nothing is held) until a coordinator (:class:`RelativeTraversal`) runs the phases."""

    __slots__ = ("phase",)

    def __init__(self) -> None:
        self.phase: str | None = None


class _NodeState:
    """What one node keeps besides its facts' edges: the updates it holds until the next
    phase, the present facts that lost an edge since the last traversal, and the edges of
    facts the traversal deleted, kept until the deletions of their instances arrive."""

    __slots__ = ("run", "lost", "dead", "confirmed", "held_ins", "held_del")

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.lost: set = set()
        self.dead: dict[tuple, dict] = {}
        #: the facts here the last traversal confirmed
        self.confirmed: set = set()
        self.held_ins: list = []
        self.held_del: list = []

    def take_held(self, phase: str) -> list:
        """The held updates ``phase`` releases (and forget them)."""
        if phase == _DELETE:
            out, self.held_del = self.held_del, []
        else:
            out, self.held_ins = self.held_ins, []
        return out


class RelativeScheme(MultisetAlgebra, AnnotationScheme):
    """Relative provenance: derivation edges, derivability by traversal (see the module doc).

    Attributes
    ----------
    ship_modes:
        The ``--ship`` modes the scheme runs by itself (MinShip's algebra does not apply):
        ``eager`` (the default, the same as ``off``: every edge shipped when found) and
        ``lazy`` (:class:`LazyEdges`).
    """

    name = "relative"
    absorptive = False
    #: two rule instances with the same body facts are two edges: never drop duplicates
    idempotent = False
    uses_parts = True
    exact_deletions = True
    tracks_derivations = True
    ships_annotations = True
    negation = False
    #: aggregate selection would prune tuples whose edges the traversal needs
    prunable = False
    phased = True
    default_ship = "eager"
    ship_modes = ("eager", "lazy")

    def __init__(self) -> None:
        self.run = _Run()

    # -- contexts ------------------------------------------------------------------------
    def shared_context(self) -> _Run:
        return self.run

    def context(self, node: Any, shared: Any) -> _NodeState:
        return _NodeState(shared if isinstance(shared, _Run) else self.run)

    def send_stage(self, mode: str) -> "LazyEdges | None":
        """A node's send stage for ``--ship mode``: :class:`LazyEdges` when lazy, else
        none (every edge is shipped when found)."""
        return LazyEdges() if mode == "lazy" else None

    def quiescence_phases(self) -> "RelativeTraversal":
        """The coordinator of this run's phases and traversals (:class:`RelativeTraversal`)."""
        return RelativeTraversal(self)

    # -- algebra: multisets of edges -----------------------------------------------------
    def one(self, ctx):
        return {EMPTY_EDGE: 1}

    def join_key(self, a, b):
        """The body facts of both edges."""
        return a | b

    def lift(self, ctx, fact, a):
        """A body fact contributes itself, not its own edges (relative provenance)."""
        return {} if self.is_zero(ctx, a) else {frozenset((fact,)): 1}

    def sample(self, ctx, rng):
        facts = [("p", (i,)) for i in range(5)]
        out: dict = {}
        for _ in range(rng.randint(0, 3)):
            e = frozenset(f for f in facts if rng.random() < 0.4)
            out[e] = out.get(e, 0) + rng.randint(1, 2)
        return out

    def sample_update(self, ctx, rng):
        values = [1, -2, 3.5, float("inf"), "a", "node 7", (), ("x", 2), (("n",), 1.0)]
        facts = [(p, (rng.choice(values), rng.choice(values)))
                 for p in ("link", "reachable", "path") for _ in range(2)]
        return frozenset(f for f in facts if rng.random() < 0.5)

    # -- base facts and stored values ----------------------------------------------------
    def base(self, ctx, fact, seq):
        """One empty edge per live insertion (a deletion cancels one)."""
        return EMPTY_EDGE

    def aggregate(self, ctx, fact):
        """An aggregate result's edge is the operator's: empty, counted (the operator
        retracts every result it inserted)."""
        return EMPTY_EDGE

    def occurrences(self, stored):
        """The stored edges, repeats listed (what the state measures)."""
        if len(stored) == 1:
            edge, n = next(iter(stored.items()))
            return (edge,) * n
        return [e for e, n in stored.items() for _ in range(n)]

    def count(self, stored) -> int:
        """Edges stored for a fact; 0 if absent."""
        return 0 if stored is None else sum(stored.values())

    # -- transitions ---------------------------------------------------------------------
    def pick(self, ctx, fact, stored, sign, ann, owned=False):
        """Add or remove one edge (see the module doc).

        Returns ``(new stored value, delta)``; the delta fires only when the fact appears
        (an insertion into an absent fact) or disappears (its last edge removed, or the
        traversal deletes it: delta :data:`KILL`). ``None`` when a deletion's edge is not
        there yet (it waits for its insertion).
        """
        phase = ctx.run.phase
        if sign > 0:
            if stored is None and phase == _DELETE:     # no fact appears in a delete phase
                ctx.held_ins.append((1, fact[0], fact[1], ann))
                return None, NO_FIRE
            if stored is None:
                return {ann: 1}, ann
            new = stored if owned else dict(stored)
            new[ann] = new.get(ann, 0) + 1
            return new, NO_FIRE
        if ann is KILL:
            return _kill(ctx, fact, stored)
        if phase == _INSERT:
            ctx.held_del.append((-1, fact[0], fact[1], ann))
            return _unchanged(stored, owned), NO_FIRE
        if isinstance(ann, Retraction):
            edge = ann.edge
            if _take(ctx.dead, fact, edge):
                return _unchanged(stored, owned), NO_FIRE
            return _remove(ctx, fact, stored, edge, owned, fact not in ctx.confirmed)
        res = _remove(ctx, fact, stored, ann, owned, True)
        if res is None and _take(ctx.dead, fact, ann):
            return _unchanged(stored, owned), NO_FIRE
        return res

    def derive(self, ctx, sign, head, parts, delta_pos):
        """One edge: the body's facts. The deletions fired by the traversal's deletion of
        a fact are :class:`Retraction` s."""
        edge = frozenset((p, t) for p, t, _ in parts)
        if sign < 0 and parts[delta_pos][2] is KILL:
            return (Retraction(edge),)
        return (edge,)

    # -- wire ----------------------------------------------------------------------------
    def serialize(self, ctx, ann):
        """``[[pred, tuple], ...]`` (the edge's facts); a retraction ``[0, facts]``."""
        if isinstance(ann, Retraction):
            return [0, [list(f) for f in ann.edge]]
        return [list(f) for f in ann]

    def deserialize(self, ctx, data):
        if data and isinstance(data[0], int):
            return Retraction(frozenset((p, t) for p, t in data[1]))
        return frozenset((p, t) for p, t in data)


def _unchanged(stored, owned: bool):
    """``stored`` as a ν value that later picks of the batch may mutate (a copy unless it
    is already the batch's own)."""
    return stored if owned or stored is None else dict(stored)


def _take(table: dict, fact, edge) -> bool:
    """Remove one ``edge`` from ``table[fact]`` (a multiset); False if it is not there."""
    edges = table.get(fact)
    if not edges or edge not in edges:
        return False
    n = edges[edge] - 1
    if n:
        edges[edge] = n
    else:
        del edges[edge]
        if not edges:
            del table[fact]
    return True


def _remove(ctx: _NodeState, fact, stored, edge, owned: bool, mark: bool):
    """Remove a live edge: the fact disappears when none is left; with ``mark``, a fact
    that stays is remembered as having lost an edge. ``None`` if the edge is not there."""
    if stored is None or edge not in stored:
        return None
    n = stored[edge] - 1
    if not n and len(stored) == 1:
        return None, edge
    new = stored if owned else dict(stored)
    if n:
        new[edge] = n
    else:
        del new[edge]
    if mark:
        ctx.lost.add(fact)
    return new, NO_FIRE


def _kill(ctx: _NodeState, fact, stored):
    """The traversal deletes an unconfirmed suspect: its edges are kept aside until the
    deletions of their instances arrive, and its delta rules fire :data:`KILL`."""
    if stored is None:                           # pragma: no cover - queued at quiescence
        return None, NO_FIRE
    dead = ctx.dead.setdefault(fact, {})
    for edge, n in stored.items():
        dead[edge] = dead.get(edge, 0) + n
    return None, KILL


class LazyEdges:
    """Lazy propagation of edges (Liu et al. 2009, Sec. 5, as MinShip's lazy mode): the
    send stage of one node ships, per head fact and destination, one edge, and buffers the
    others until the shipped one is deleted; it then ships a buffered one before the
    deletion. When the traversal deleted the shipped edge's antecedent (a
    :class:`Retraction`), the buffered edges may be dying too: one is shipped only at the
    end of the stream (the host's flush at quiescence), once every retraction of the
    round has removed the dying ones from the buffer.

    The head's node stores a subset of the fact's live instances (one per sending node),
    so the traversal may not confirm a fact derivable only through a buffered edge: it is
    deleted, and comes back when its sender ships the buffered edge.
    """

    def __init__(self) -> None:
        #: (destination, pred, tuple) -> [shipped edge or None, {buffered edge: count}]
        self.records: dict[tuple, list] = {}

    def send(self, node, out: list) -> list:
        """Filter one step's ``[(destination, update)]``."""
        res: list = []
        records = self.records
        for dst, upd in out:
            sign, pred, tup, ann = upd
            key = (dst, pred, tup)
            rec = records.get(key)
            if sign > 0:
                if rec is None:
                    records[key] = [ann, {}]
                    res.append((dst, upd))
                elif rec[0] is None:
                    rec[0] = ann
                    res.append((dst, upd))
                else:
                    rec[1][ann] = rec[1].get(ann, 0) + 1
                continue
            edge = ann.edge if isinstance(ann, Retraction) else ann
            if rec is None:                          # pragma: no cover - never recorded
                res.append((dst, upd))
            elif _take_one(rec[1], edge):            # a buffered edge: never shipped
                if rec[0] is None and not rec[1]:
                    del records[key]
            elif not rec[1]:
                del records[key]
                res.append((dst, upd))
            elif isinstance(ann, Retraction):        # ship another one at the flush
                rec[0] = None
                res.append((dst, upd))
            else:                                    # ship another one first
                rec[0] = other = next(iter(rec[1]))
                _take_one(rec[1], other)
                res.append((dst, (1, pred, tup, other)))
                res.append((dst, upd))
        return res

    def flush(self, node) -> list:
        """End of stream: ship a buffered edge for every fact whose shipped edge the
        traversal retracted."""
        out: list = []
        for (dst, pred, tup), rec in self.records.items():
            if rec[0] is None:
                rec[0] = other = next(iter(rec[1]))
                _take_one(rec[1], other)
                out.append((dst, (1, pred, tup, other)))
        return out

    def size(self) -> int:
        """Buffered edges (operator state)."""
        return sum(sum(rec[1].values()) for rec in self.records.values())


def _take_one(edges: dict, edge) -> bool:
    """Remove one ``edge`` from a multiset; False if it is not there."""
    n = edges.get(edge)
    if not n:
        return False
    if n > 1:
        edges[edge] = n - 1
    else:
        del edges[edge]
    return True


class RelativeTraversal:
    """The phases and traversals of relative provenance, run by the hosting loop at global
    quiescence.

    The protocol (:meth:`provenance.base.AnnotationScheme.quiescence_phases`): the host
    calls :meth:`at_quiescence` each time nothing is in flight and no node has work; a True
    answer means updates were released or queued and the loop goes on. :meth:`report`
    gives the counters the host adds to its totals.

    Counters
    --------
    ``traversal_rounds``: traversals run; ``traversal_waves``: waves of messages (steps 1
    and 2 of the module doc); ``traversal_messages``/``traversal_bytes``: their messages
    between nodes; ``suspects``, ``confirmed``, ``retracted``: facts found suspect,
    confirmed, deleted by the traversal; ``phase_switches``: phases started;
    ``barrier_messages``/``barrier_bytes``: the done and go messages of the barriers before
    each phase and traversal; ``held_updates``: updates held until a phase. Messages of
    the traversal and the barriers are included in ``messages_sent``/``bytes_sent``.
    """

    FIELDS = ("traversal_rounds", "traversal_waves", "traversal_messages", "traversal_bytes",
              "suspects", "confirmed", "retracted", "phase_switches", "barrier_messages",
              "barrier_bytes", "held_updates")

    def __init__(self, scheme: RelativeScheme, max_rounds: int = MAX_ROUNDS):
        self.run = scheme.run
        self.run.phase = _INSERT
        self.max_rounds = max_rounds
        self.counters = dict.fromkeys(self.FIELDS, 0)
        self._rounds = 0

    def report(self) -> dict[str, int]:
        return dict(self.counters)

    def at_quiescence(self, host) -> bool:
        """Global quiescence: start the other phase if updates are held for it, else
        traverse from the facts that lost an edge and queue the deletion of every suspect
        the traversal does not confirm.

        Raises
        ------
        ndlog.errors.EvaluationError
            If a run took more than ``max_rounds`` rounds (traversals or phase pairs), or
            (an engine invariant) a deleted fact's edge was never retracted.
        """
        nodes = list(host.nodes.items())
        if self.run.phase == _DELETE:
            self._switch(host, nodes, _INSERT)
            return True
        if any(n.ctx.held_del for _, n in nodes):
            self._count_round()
            self._switch(host, nodes, _DELETE)
            return True
        seeds = self._seeds(nodes)
        if not seeds:
            self._rounds = 0
            return False
        self._count_round()
        self.counters["traversal_rounds"] += 1
        _barrier(host, nodes, "traverse", self.counters)
        walk = _Walk(host, self.counters)
        walk.suspect(seeds)
        doomed = walk.confirm()
        for _, node in nodes:
            node.ctx.confirmed.clear()
        for nid, fact in walk.confirmed:
            host.nodes[nid].ctx.confirmed.add(fact)
        if not doomed:                  # nothing left to do: the next run counts afresh
            self._rounds = 0
            return False
        self.run.phase = _DELETE
        self.counters["phase_switches"] += 1
        for nid, facts in doomed.items():
            host.wake(nid, [(-1, pred, tup, KILL) for pred, tup in facts])
        return True

    def _count_round(self) -> None:
        self._rounds += 1
        if self._rounds > self.max_rounds:
            raise EvaluationError(
                f"relative provenance did not settle after {self.max_rounds} rounds of "
                f"deletion phases and traversals (aggregates kept changing their results)",
                hint="use --annotation absorption")

    def _switch(self, host, nodes: list, phase: str) -> None:
        """Start ``phase`` everywhere (after a barrier) and release what it was held for."""
        _barrier(host, nodes, phase, self.counters)
        self.run.phase = phase
        self.counters["phase_switches"] += 1
        for nid, node in nodes:
            held = node.ctx.take_held(phase)
            if held:
                self.counters["held_updates"] += len(held)
                host.wake(nid, held)

    @staticmethod
    def _seeds(nodes: list) -> dict:
        """``node -> present facts that lost an edge`` (and forget the losses)."""
        seeds: dict[Any, list] = {}
        for nid, node in nodes:
            ctx = node.ctx
            if ctx.dead:                             # pragma: no cover - engine invariant
                fact = next(iter(ctx.dead))
                raise EvaluationError(f"engine invariant violated: relative provenance "
                                      f"kept an edge of deleted fact {fact!r} at quiescence")
            if ctx.lost:
                state = node.state
                present = [f for f in ctx.lost if f[1] in state.get(f[0], ())]
                ctx.lost.clear()
                if present:
                    seeds[nid] = sorted(present, key=repr)
        return seeds


def _barrier(host, nodes: list, what: str, counters: dict) -> None:
    """A global barrier before a phase or a traversal, counted as traffic: one *done*
    message from every worker to the coordinator's (the first node's, in a stable order),
    one *go* message back; in the simulator it takes the slowest of each."""
    transport = host.transport
    placement = transport.placement
    speaker: dict = {}
    for nid, _ in sorted(nodes, key=lambda item: (type(item[0]).__name__, repr(item[0]))):
        speaker.setdefault(placement.worker(nid), nid)
    if len(speaker) < 2:
        return
    (home_w, home), *others = speaker.items()
    code = _CODE[what]
    delays = [0.0, 0.0]
    for w, nid in others:
        for i, (src, wsrc, dst, wdst) in enumerate(((nid, w, home, home_w),
                                                    (home, home_w, nid, w))):
            size = _count(transport, src, wsrc, dst, wdst, [code, i])
            counters["barrier_messages"] += 1
            counters["barrier_bytes"] += size
            delays[i] = max(delays[i], _latency(transport, src, dst))
    for d in delays:
        _advance(transport, d)


def _count(transport, src, wsrc, dst, wdst, payload) -> int:
    """Count one message of the protocol on the transport's traffic (and the simulator's
    tallies, where a message between two nodes of one worker is local, as the
    transport's own are); returns its size in bytes."""
    size = len(packb(payload))
    transport.metrics.message(src, wsrc, 0, size, 0, wsrc != wdst)
    tallies = getattr(transport, "counters", None)           # the simulator's
    if tallies is not None and hasattr(tallies, "record_send"):
        tallies.record_send(src, dst, wsrc, wdst, 0, size, wsrc == wdst)
    return size


def _latency(transport, src, dst) -> float:
    latency = getattr(transport, "latency", None)
    return float(latency(src, dst)) if callable(latency) else 0.0


def _advance(transport, delay: float) -> None:
    advance = getattr(transport.clock, "advance", None)
    if delay > 0 and callable(advance):
        advance(delay)


class _Walk:
    """One traversal: the suspects and what blocks their edges, the heads each suspect
    derived (found by firing its delta rules into a scratch list), and the messages."""

    def __init__(self, host, counters: dict):
        self.host = host
        self.counters = counters
        #: (node, fact) -> {edge: antecedents of it that are unconfirmed suspects}
        self.blocked: dict[tuple, dict] = {}
        #: (node, fact) -> [(head's node, head)] derived from it
        self.heads: dict[tuple, list] = {}
        self.confirmed: set = set()

    # -- step 1: the forward closure ---------------------------------------------------------
    def suspect(self, seeds: dict) -> None:
        """Mark the seeds and everything downstream of them as suspects."""
        frontier = []
        for nid, facts in seeds.items():
            for f in facts:
                self._mark(nid, f)
                frontier.append((nid, f))
        while frontier:
            out = self._notes(frontier)
            frontier = []
            for (src, dst), notes in self._deliver(out):
                for head, ante in notes:
                    key = (dst, head)
                    new = key not in self.blocked
                    if new:
                        self._mark(dst, head)
                        frontier.append(key)
                    for edge, ants in self.blocked[key].items():
                        if ante in edge:
                            ants.add(ante)

    def _notes(self, frontier) -> dict[tuple, list]:
        """One wave: ``(sender, head's node) -> [(head, antecedent)]`` for every head a
        fact of ``frontier`` derives (steps 1 and 2 send the same notes)."""
        out: dict[tuple, list] = {}
        for nid, f in frontier:
            for dst, head in self._derived(nid, f):
                out.setdefault((nid, dst), []).append((head, f))
        return out

    def _mark(self, nid, fact) -> None:
        stored = self.host.nodes[nid].state.get(fact[0], {}).get(fact[1])
        if stored is None:                           # pragma: no cover - engine invariant
            raise EvaluationError(f"engine invariant violated: relative provenance found "
                                  f"an edge from absent fact {fact!r}")
        self.blocked[(nid, fact)] = {edge: set() for edge in stored}
        self.counters["suspects"] += 1

    def _derived(self, nid, fact) -> list:
        """``[(node, head)]`` of every rule instance at ``nid`` with ``fact`` in its body:
        its delta rules fired over the committed state into a scratch list."""
        key = (nid, fact)
        got = self.heads.get(key)
        if got is None:
            node = self.host.nodes[nid]
            pred, tup = fact
            scratch: list = []
            stored = node.state[pred][tup]
            for fire in node.fire_table.get(pred, ()):
                fire(1, tup, stored, scratch)
            got = self.heads[key] = list(dict.fromkeys(
                (dst, (upd[1], upd[2])) for dst, upd in scratch))
        return got

    # -- step 2: confirmation --------------------------------------------------------------
    def confirm(self) -> dict[Any, list]:
        """Propagate confirmations; returns ``node -> [facts]`` left unconfirmed."""
        frontier = [key for key, edges in self.blocked.items()
                    if any(not ants for ants in edges.values())]
        self.confirmed.update(frontier)
        while frontier:
            # every head derived from a suspect is a suspect; the sender cannot know
            # whether it is confirmed already, so it always tells
            out = self._notes(frontier)
            frontier = []
            for (src, dst), notes in self._deliver(out):
                for head, ante in notes:
                    key = (dst, head)
                    if key in self.confirmed:
                        continue
                    for ants in self.blocked[key].values():
                        ants.discard(ante)
                        if not ants:
                            self.confirmed.add(key)
                            frontier.append(key)
                            break
        self.counters["confirmed"] += len(self.confirmed)
        doomed: dict[Any, list] = {}
        for key in self.blocked:
            if key not in self.confirmed:
                doomed.setdefault(key[0], []).append(key[1])
        self.counters["retracted"] += sum(len(v) for v in doomed.values())
        return doomed

    # -- messages --------------------------------------------------------------------------
    def _deliver(self, out: dict) -> list:
        """One wave: count a message per (sending node, receiving node) pair of different
        nodes, advance simulated time by the slowest, and hand the notes over."""
        if not out:
            return []
        self.counters["traversal_waves"] += 1
        transport = self.host.transport
        placement = transport.placement
        delay = 0.0
        for (src, dst), notes in out.items():
            if src == dst:
                continue
            payload = [[[h[0], h[1]], [a[0], a[1]]] for h, a in notes]
            size = _count(transport, src, placement.worker(src), dst,
                          placement.worker(dst), payload)
            self.counters["traversal_messages"] += 1
            self.counters["traversal_bytes"] += size
            delay = max(delay, _latency(transport, src, dst))
        _advance(transport, delay)
        return list(out.items())
