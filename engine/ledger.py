"""The base-fact ledger: which base insertions are live, and what a burst injects.

Role: the bookkeeping every driver of the engine needs (the in-memory
:class:`~engine.network.Network`, the simulator, Ray): number every base insertion (an
annotation scheme may make the number a fresh provenance variable, so a re-inserted tuple is
new), let a deletion cancel one live insertion of the same fact, apply ``materialize`` keys
(a new tuple with a stored tuple's key replaces it: a deletion, then an insertion), take a
re-insertion of a live soft-state fact (a finite ``materialize`` lifetime) as a refresh that
injects nothing, and keep deletions that come before their insertion (overlapping bursts) as
*debts* until an insertion matches them. A debt left when a run starts is the user's error:
:meth:`Ledger.check` raises an :class:`~ndlog.errors.InputError` naming the fact.

:class:`Injector` is the front of every engine's bursts: it checks each update against the
program (known predicate, arity, a location), records it in the ledger and turns what the
ledger says into annotated updates addressed to the fact's node. A burst that would give a
node more tuples of a table than its ``materialize`` size is refused whole: the ledger goes
back to its state before the burst. The in-memory network, the simulator (through it) and
the Ray driver all inject through one.

Deliberately not here: routing and delivery (the transports), evaluation.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from ndlog import ast as A
from ndlog.checks import check_table_sizes
from ndlog.errors import InputError

__all__ = ["Ledger", "Injector", "describe_fact"]


class Ledger:
    """Live base insertions per fact, keyed-table replacement and pending deletions.

    Parameters
    ----------
    program:
        The source program (for ``materialize`` keys).
    describe:
        ``(pred, tuple) -> str`` for error messages (e.g. ``link(@a, b)``).
    """

    def __init__(self, program: A.Program, describe: Callable[[str, tuple], str]):
        self.program = program
        self.describe = describe
        self.live: dict[tuple, list[int]] = {}
        self.debts: dict[tuple, int] = {}
        self.keyed: dict[tuple, tuple] = {}
        self.preds: set[str] = set()
        self.seq = 0
        #: soft-state tables (a finite ``materialize`` lifetime)
        self.soft = frozenset(t.pred for t in program.tables if t.lifetime != float("inf"))

    def key(self, pred: str, tup: tuple):
        """``(pred, key values)`` of a tuple of a keyed table, or None (not keyed)."""
        table = self.program.table(pred)
        if table is None or not table.keys:
            return None
        return (pred, tuple(tup[k - 1] for k in table.keys if k - 1 < len(tup)))

    def update(self, sign: int, pred: str, tup: tuple) -> list[tuple[int, tuple, int]]:
        """Record one base update; return what to inject as ``(sign, tuple, seq)``: an
        insertion gets a new ``seq`` (preceded by the deletion of a keyed tuple it replaces,
        followed by its own deletion if a debt was waiting for it); a deletion carries the
        ``seq`` of the oldest live insertion it cancels, or nothing (a new debt). An
        insertion of a soft-state fact that is live is a refresh, nothing to inject: soft
        state is present or not, one deletion removes it (the simulator restarts its
        lifetime)."""
        fact = (pred, tup)
        self.preds.add(pred)
        out: list[tuple[int, tuple, int]] = []
        if sign > 0 and pred in self.soft and self.live.get(fact):
            return out
        if sign > 0:
            key = self.key(pred, tup)
            if key is not None:
                old = self.keyed.get(key)
                if old is not None and old != tup:     # the same tuple again replaces nothing
                    out.extend((-1, old, seq) for seq in self.live.pop((pred, old), []))
                self.keyed[key] = tup
            self.seq += 1
            out.append((1, tup, self.seq))
            if self.debts.get(fact):
                self.debts[fact] -= 1
                if not self.debts[fact]:
                    del self.debts[fact]
                out.append((-1, tup, self.seq))
            else:
                self.live.setdefault(fact, []).append(self.seq)
            return out
        seqs = self.live.get(fact)
        if not seqs:
            self.debts[fact] = self.debts.get(fact, 0) + 1
            return out
        seq = seqs.pop(0)
        if not seqs:
            del self.live[fact]
            key = self.key(pred, tup)
            if key is not None and self.keyed.get(key) == tup:
                del self.keyed[key]
        return [(-1, tup, seq)]

    def check(self) -> None:
        """Raise :class:`InputError` for a deletion no insertion has matched; the
        unmatched deletions are dropped (they deleted nothing), so the ledger can go on."""
        if self.debts:
            (pred, tup), _ = next(iter(self.debts.items()))
            self.debts.clear()
            raise self.unmatched(pred, tup)

    def unmatched(self, pred: str, tup: tuple) -> InputError:
        """The error of a deletion of ``pred(tup)`` that no live insertion matches; its
        ``update`` attribute is that deletion, for a reader that knows where it was written
        (:meth:`engine.bursts.Burst.locate`)."""
        exc = InputError(f"cannot delete {self.describe(pred, tup)}: it is not a base fact "
                         f"(no insertion of it is left to delete)")
        exc.update = (-1, pred, tup)
        return exc

    def replacement(self, burst) -> tuple[str, tuple, tuple] | None:
        """The first ``(pred, old, new)`` where an insertion of ``burst`` would replace a
        stored tuple ``old`` with the same key by another, ``new`` (a deletion no burst item
        spells out), or None. Read-only."""
        keyed: dict = {}
        for sign, pred, tup in burst:
            key = self.key(pred, tup) if sign > 0 else None
            if key is None:
                continue
            old = keyed.get(key, self.keyed.get(key))
            if old is not None and old != tup:
                return pred, old, tup
            keyed[key] = tup
        return None

    def facts(self, preds=None) -> dict[str, set[tuple]]:
        """The current base facts (every fact with a live insertion), of ``preds`` only if
        given."""
        out: dict[str, set[tuple]] = {}
        for (pred, tup), seqs in self.live.items():
            if seqs and (preds is None or pred in preds):
                out.setdefault(pred, set()).add(tup)
        return out

    def saved(self) -> tuple:
        """A copy of the ledger's state, for :meth:`restore`."""
        return ({f: list(s) for f, s in self.live.items()}, dict(self.debts),
                dict(self.keyed), set(self.preds), self.seq)

    def restore(self, state: tuple) -> None:
        """Go back to a state from :meth:`saved`, except that insertion numbers handed out
        since stay used (a number is never given to two insertions)."""
        self.live, self.debts, self.keyed, self.preds, _ = state


def describe_fact(program, pred: str, tup: tuple) -> str:
    """``link(@a, b)``: a fact of ``program`` (an engine program) as NDlog, with its
    location specifier."""
    from .node import format_fact
    loc = program.loc.get(pred) if program.distributed else None
    return format_fact(pred, tup, loc if loc is None or loc < len(tup) else None)


class Injector:
    """Bursts of base-fact updates -> annotated updates per node (see the module doc).

    Parameters
    ----------
    source:
        The program as written (predicates, arities, ``materialize`` keys).
    program:
        The prepared :class:`~engine.program.EngineProgram` (locations).
    scheme:
        The annotation scheme (``scheme.base`` makes a base fact's annotation).
    context_of:
        ``node -> annotation context`` in which to build the base annotations.
    resolved:
        The run's :class:`engine.options.Resolved` options: a burst with a deletion is
        refused when the scheme cannot delete exactly on this program.
    keep_places:
        Keep the ``(seq, node)`` of every base insertion told to the scheme
        (:meth:`~provenance.base.AnnotationScheme.place`) until :meth:`take_places`, for
        a driver whose workers hold schemes of their own (Ray).
    """

    def __init__(self, source: A.Program, program, scheme, context_of: Callable,
                 resolved=None, keep_places: bool = False):
        self.program = program
        self.scheme = scheme
        self.resolved = resolved
        self.context_of = context_of
        self.source = source
        # the program's describe, not the bound method: Ledger -> Injector -> Ledger would
        # be a cycle, kept (with the network it belongs to) until a full collection
        self.ledger = Ledger(source, partial(describe_fact, program))
        #: tables with a finite ``materialize`` size, checked after a burst inserts into one
        self.sized = {t.pred for t in source.tables if t.size != float("inf")}
        self.arities = dict(source.arities())
        #: predicates the program uses, and the tables it declares (``materialize``): a
        #: declared table that no rule or fact uses takes its arity from its first fact
        self.known = set(source.predicates)
        self._in_flight: dict = {}      # fact -> sign injected since the last quiescence
        self._place = scheme.place if scheme.uses_places else None
        self._places: list | None = [] if keep_places and self._place is not None else None

    def describe(self, pred: str, tup: tuple) -> str:
        """``link(@a, b)``: a fact as NDlog, with its location specifier."""
        return describe_fact(self.program, pred, tup)

    def take_places(self) -> list:
        """The ``(seq, node)`` kept since the last call (``keep_places``), oldest first."""
        places = self._places
        if not places:
            return []
        self._places = []
        return places

    def check(self, pred: str, tup: tuple) -> None:
        """Raise :class:`InputError` unless ``pred(tup)`` can be a base fact here."""
        if pred not in self.known:
            import difflib
            close = difflib.get_close_matches(pred, sorted(self.known), n=3)
            raise InputError(f"{self.describe(pred, tup)}: the program has no predicate "
                             f"'{pred}'",
                             hint=("did you mean " + " or ".join(repr(c) for c in close) + "?")
                             if close else "known predicates: " + ", ".join(sorted(self.known)))
        want = self.arities.setdefault(pred, len(tup))
        if len(tup) != want:
            raise InputError(f"fact {self.describe(pred, tup)} has {len(tup)} arguments, but "
                             f"'{pred}' has arity {want}")
        if self.program.distributed and not tup:
            raise InputError(f"fact {pred}() has no location in a distributed program")

    def quiescent(self) -> None:
        """The network has quiesced: updates injected from now on cannot meet earlier ones
        in flight."""
        self._in_flight.clear()

    def _check_unordered(self, burst) -> None:
        """Refuse what a scheme without derivations cannot order: an insertion and a
        deletion of one fact in flight together (either may arrive first; Nigam et al.
        2012, Sec. 6), or a deletion of a fact inserted more than once (the ledger keeps
        the other insertion, the scheme only knows the fact is present, and would delete
        it). Nothing is recorded on a refusal."""
        if self.resolved is None or self.scheme.tracks_derivations or \
                self.resolved.options.unsafe:
            return
        seen = dict(self._in_flight)
        for sign, pred, tup in burst:
            fact = (pred, tup)
            if seen.get(fact, sign) != sign:
                self._refuse(fact, "is inserted and deleted while neither has arrived, and "
                             "set semantics cannot tell which came last")
            if sign < 0 and len(self.ledger.live.get(fact, ())) > 1:
                self._refuse(fact, "is deleted once but was inserted more than once, and "
                             "set semantics cannot count insertions")
            seen[fact] = sign
        self._in_flight.update(seen)

    def _refuse(self, fact, why: str) -> None:
        from .guards import UnsafeAnnotationError
        raise UnsafeAnnotationError(
            f"{self.describe(*fact)} {why}",
            hint="use --annotation absorption, run the updates in separate bursts, or "
            "--unsafe to run it unchecked")

    def _check_deletions(self, burst) -> None:
        """Refuse a burst that deletes a fact, or replaces a keyed tuple (a deletion too),
        when the scheme cannot make deletions exact on this program."""
        if self.resolved is None or self.resolved.deletion_problem is None:
            return
        if any(sign < 0 for sign, _, _ in burst):
            self.resolved.check_deletions(self.program, "a burst deletes a fact")
        replaced = self.ledger.replacement(burst)
        if replaced is not None:
            pred, old, new = replaced
            self.resolved.check_deletions(
                self.program, f"{self.describe(pred, new)} replaces {self.describe(pred, old)}"
                ", which has the same key")

    def updates(self, burst) -> dict:
        """``{node: [(sign, pred, tuple, annotation), ...]}`` for a burst of
        ``(sign, pred, tuple)`` items, in burst order per node."""
        pending: dict = {}
        location, base, ctx_of = self.program.location, self.scheme.base, self.context_of
        place, places = self._place, self._places
        self._check_deletions(burst)
        sized = {pred for sign, pred, _ in burst if sign > 0 and pred in self.sized}
        saved = (self.ledger.saved(), dict(self._in_flight)) if sized else None
        self._check_unordered(burst)
        for sign, pred, tup in burst:
            self.check(pred, tup)
            for s, t, seq in self.ledger.update(sign, pred, tup):
                dst = location(pred, t)
                if place is not None and s > 0:
                    place(seq, dst)
                    if places is not None:
                        places.append((seq, dst))
                pending.setdefault(dst, []).append((s, pred, t, base(ctx_of(dst), (pred, t),
                                                                      seq)))
        if sized:
            try:
                check_table_sizes(self.source, self.ledger.facts(sized), {
                    p: {t for sign, q, t in burst if sign > 0 and q == p} for p in sized})
            except InputError:
                self.ledger.restore(saved[0])       # the burst is refused as a whole
                self._in_flight = saved[1]
                raise
        return pending
