"""Aggregate selection inside the PSN fixpoint and inside MinShip (multi AggSel).

Role: Liu et al. (ICDE 2009), Sec. 6 (Algorithm 4). A recursive
predicate that matters only through ``min``/``max`` aggregates per group
(:func:`ndlog.analysis.aggsel_candidates`: ``path`` in shortest path, grouped by ``(S, D)``,
``min`` on the cost and on the hop count) is pruned per group to the tuples that are best for
at least one of its aggregates (*multi* AggSel, ties kept):

* **receiving side** (:class:`AggSelStage`, a :class:`~engine.node.PickStage`): the node
  keeps every present candidate of a group (it is stored in the node's state with its
  provenance, as usual) but fires an insertion only if the tuple is best for some aggregate
  or was forwarded before ("forward only improvements"; a forwarded tuple's later
  derivations are forwarded too, so downstream provenance stays complete). Deletions are
  always fired. When a forwarded tuple disappears, the candidates of its group that are now
  best and were held back are fired with their whole stored annotation ("the next best is
  forwarded when the best goes");
* **sending side** (:class:`Selector` handed to :class:`~engine.minship.MinShip`): the
  same rule per destination, on the facts shipped to other nodes. On a localized program
  the recursive predicate is joined with its neighbours' tuples through a hidden auxiliary
  (``sp2_aux(@S, Z, D, C1, P, C, L)`` in shortest path); the localizer's plan
  (:func:`localize.analysis.aggsel_plans`, kept in :attr:`EngineProgram.aggsel`) names every
  hidden predicate that carries the aggregate's group and value columns into a rule of the
  pruned predicate, and :func:`selectors` prunes it as it leaves the node.

Exactness relies on what :class:`ndlog.analysis.AggSelSpec` states (every recursive step
strictly worsens the aggregated values: positive costs): a best tuple's suffix at the next
hop is then itself best there, and every tie is kept. Every evaluator checks it; the engine
in the localized rule that computes the value (:attr:`localize.analysis.AggSelPlan.guards`)
while this stage is installed, and stops with the reference's error otherwise. The aggregate relations (``minCost``, ``minHops``, ``cheapestPath``,
``fewestHops``, ``shortestCheapestPath``) then equal ``psn.evaluate``'s in every mode,
through insertions and deletions, while ``path`` itself holds a subset of the paths.

Modes (``--aggsel``; Liu Sec. 7.4 compares the first two):

* ``multi``: a pruned predicate keeps, per group, the tuples best for at least one of its
  aggregates (one query, every aggregate at once);
* ``single``: one query per aggregate, each pruned by its own aggregate. The program is
  first split into one copy of the predicate per aggregate
  (:func:`localize.passes.one_query_per_aggregate`: ``path_minCost``, ``path_minHops``;
  :attr:`engine.options.Resolved.program`); here ``single`` prunes exactly the predicates
  that have one aggregate, which the copies do. A predicate that still has several (the
  split does not apply to it, e.g. one rule computes ``min<C>`` and ``min<L>`` together)
  is not pruned: pruning it by one aggregate would lose the others' best tuples;
* ``off``: nothing is pruned.

Schemes: the receiving side needs a scheme whose stored value is also a valid delta to fire
(``set``, ``absorption``); the ``derivation`` multiset would see deletions of occurrences it
never fired, so :func:`install` skips it.

Before/after (what the stage does, not a rewrite of the program)::

    path(@a, c, [a,b,c], 2, 2)   fired          (best cost and best hops so far)
    path(@a, c, [a,d,e,c], 5, 3) held           (worse on both)
    path(@a, c, [a,c], 9, 1)     fired          (best hop count)
    -path(@a, c, [a,b,c], 2, 2)  fired, then path(@a, c, [a,d,e,c], 5, 3) fired

Deliberately not here: the aggregate operators themselves (:mod:`engine.aggregate`),
the detection and the plan (:mod:`ndlog.analysis`, :mod:`localize.analysis`), the split of
``single`` (:func:`localize.passes.one_query_per_aggregate`, applied by
:meth:`engine.options.RunOptions.resolve`), shipping (:mod:`engine.minship`).
"""

from __future__ import annotations

from ndlog.errors import InputError

__all__ = ["Selector", "AggSelStage", "selectors", "install", "AGGSEL_MODES"]

#: Values of the ``--aggsel`` switch.
AGGSEL_MODES = ("multi", "single", "off")

_BETTER = {"min": lambda a, b: a < b, "max": lambda a, b: a > b}


class Selector:
    """Best-per-group selection on one predicate (Liu Alg. 4, without the provenance table:
    the provenance lives in the node's state or in MinShip's records).

    Parameters
    ----------
    group:
        Argument positions of the group key.
    aggs:
        ``(position, "min" | "max")`` per aggregate.
    """

    __slots__ = ("group", "aggs")

    def __init__(self, group: tuple[int, ...], aggs: tuple[tuple[int, str], ...]):
        self.group = tuple(group)
        self.aggs = tuple(aggs)

    def key(self, tup: tuple) -> tuple:
        return tuple(tup[g] for g in self.group)

    def best(self, members) -> list:
        """The best value of each aggregate among ``members``."""
        out = []
        for pos, func in self.aggs:
            better = _BETTER[func]
            it = iter(members)
            b = next(it)[pos]
            for t in it:
                v = t[pos]
                if better(v, b):
                    b = v
            out.append(b)
        return out

    def qualifies(self, tup: tuple, members) -> bool:
        """True if ``tup`` is best (or tied) for at least one aggregate of its group."""
        for (pos, func), b in zip(self.aggs, self.best(members)):
            if tup[pos] == b:
                return True
        return False

    def qualified(self, members) -> list:
        """Every member best (or tied) for at least one aggregate."""
        if not members:
            return []
        bests = self.best(members)
        return [t for t in members
                if any(t[pos] == b for (pos, _), b in zip(self.aggs, bests))]

    def __repr__(self) -> str:
        return f"Selector(group={self.group}, aggs={self.aggs})"


class AggSelStage:
    """Receiving-side aggregate selection of one node (a PickStage; module docstring).

    Parameters
    ----------
    selectors:
        ``predicate -> Selector``.
    """

    def __init__(self, selectors: dict[str, Selector]):
        self.selectors = selectors
        self.groups: dict[tuple, dict] = {}          # (pred, key) -> {tup: None} present
        self.forwarded: set[tuple] = set()           # (pred, tup) fired at least once
        self.held = 0
        self.released = 0

    def picked(self, node, picked: list) -> list:
        """Fire improvements and deletions; hold the rest; release the next best.

        The whole batch joins its groups before any tuple is judged, so a tuple beaten by
        another of the same batch is held at once instead of being fired as a short-lived
        best (with random delivery a node picks many updates per step)."""
        sels = self.selectors
        dirty: dict[tuple, None] = {}
        judged: list = []
        for entry in picked:
            sign, pred, tup, _ = entry
            sel = sels.get(pred)
            if sel is None:
                judged.append((entry, None, None, False))
                continue
            gk = (pred, sel.key(tup))
            members = self.groups.get(gk)
            if members is None:
                members = self.groups[gk] = {}
            present = node.nu[pred].get(tup) is not None
            if present:
                members[tup] = None
            else:
                members.pop(tup, None)
                if (pred, tup) in self.forwarded:
                    self.forwarded.discard((pred, tup))
                    dirty[gk] = None
            judged.append((entry, sel, members, present))
        out: list = []
        for entry, sel, members, present in judged:
            sign, pred, tup, _ = entry
            if sel is None or sign < 0 or not present:
                out.append(entry)
            elif (pred, tup) in self.forwarded or sel.qualifies(tup, members):
                self.forwarded.add((pred, tup))
                out.append(entry)
            else:
                self.held += 1
        for gk in dirty:
            self._release(node, gk, out)
        return out

    def _release(self, node, gk: tuple, out: list) -> None:
        pred = gk[0]
        members = self.groups.get(gk)
        if not members:
            self.groups.pop(gk, None)
            return
        over, state = node.nu[pred], node.state[pred]
        for t in self.selectors[pred].qualified(members):
            if (pred, t) not in self.forwarded:
                value = over[t] if t in over else state.get(t)
                if value is None:
                    continue
                self.forwarded.add((pred, t))
                out.append((1, pred, t, value))
                self.released += 1


def selectors(program, mode: str = "multi") -> tuple[dict, dict]:
    """Receiving-side and sending-side selectors for an engine program.

    Parameters
    ----------
    program:
        A :class:`~engine.program.EngineProgram`.
    mode:
        ``multi`` (every pruned predicate, on all of its aggregates), ``single`` (only
        the pruned predicates with a single aggregate: the copies that
        :func:`localize.passes.one_query_per_aggregate` makes) or ``off``.

    Returns
    -------
    (receive, send):
        ``predicate -> Selector`` each: ``receive`` for the pruned predicates, ``send`` for
        them and for the hidden auxiliaries carrying them (Liu Sec. 6).
    """
    if mode not in AGGSEL_MODES:
        raise InputError(f"aggsel (--aggsel) must be one of {', '.join(AGGSEL_MODES)}, "
                         f"got {mode!r}")
    if mode == "off":
        return {}, {}
    receive: dict[str, Selector] = {}
    send: dict[str, Selector] = {}
    for pred, plan in program.aggsel.items():
        spec = plan.spec
        aggs = spec.aggregates
        if mode == "single" and len(aggs) != 1:
            continue
        receive[pred] = send[pred] = Selector(spec.group, aggs)
        for aux, cols in plan.carriers.items():
            send[aux] = Selector(tuple(cols[g] for g in spec.group),
                                 tuple((cols[p], f) for p, f in aggs))
    return receive, send


def install(node, receive: dict) -> AggSelStage | None:
    """Append an :class:`AggSelStage` to ``node.pick_stages`` (not for schemes with
    multiplicities: see the module docstring)."""
    if not receive or not node.scheme.idempotent:
        return None
    stage = AggSelStage(receive)
    node.pick_stages.append(stage)
    node.monotone_checks = True
    return stage
