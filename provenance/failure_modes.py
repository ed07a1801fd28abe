"""The failure modes of earlier incremental algorithms, as annotation schemes to ablate.

Role: Nigam et al. 2012 show why derivation sets are needed by the ways earlier algorithms
go wrong (Sec. 5 and Sec. 6). Each way is a scheme here, so that a researcher can run it on
any program and delivery order and watch it fail (or not) next to ``derivation`` and
``absorption``:

``counting`` (:class:`CountingScheme`)
    A fact's annotation is its number of derivations (the counting algorithm of Gupta et
    al. 1993; Nigam's Algorithm 1 under multiset semantics). Exact on non-recursive
    programs under any delivery order (Nigam Corollary 19). On a cycle of derivations a
    fact has infinitely many: every derivation that goes round the cycle derives the next
    one, and the run never reaches quiescence (Nigam Sec. 5: the a/p/q program; Sec. 6: "the
    use of the count algorithm leads to non-termination"). Deletions do not help: they
    chase the insertions round the cycle.
``original`` (:class:`OriginalScheme`)
    The original PSN (Loo et al. 2006) as Nigam Sec. 6 describes it: counts, but an update
    changes its node's state when it *arrives*, not when it is picked
    (``commit_on_arrival``; the node fires the delta rules against a state that already
    holds every update that arrived with it). In Fig. 6, the deletions of ``s`` and ``t``
    both reach node 2 before it processes either: neither delta rule then finds the other
    fact, no deletion of ``p`` is derived, and ``p`` ends derived and unsupported. The two
    deletions come from different nodes, so FIFO channels alone do not rule this schedule
    out (the in-memory ``fifo`` order reaches it for some seeds). The other way round, an
    insertion and a deletion that arrive together can derive a deletion whose insertion is
    never derived; it waits, as in ``counting``, and is dropped at quiescence
    (``exact_deletions = False``). The only difference from ``counting`` is the moment of
    the commit, so the two isolate it.
``fifo-base`` (:class:`FifoBaseScheme`)
    Base-fact annotations as Nigam Sec. 6 describes Liu et al.'s 2009 scheme: a derivation
    is annotated with the *base facts* it uses (not the derived ones, not an insertion
    number); an insertion of a derivation already stored is not news, and a deletion of a
    derivation not stored is discarded as the echo of a cyclic derivation. Right when every
    burst only inserts or only deletes and runs to quiescence before the next, as in the
    paper's FIFO example (under any delivery order, then: a deletion can only meet a
    derivation that is stored or already deleted). Wrong when a deletion overtakes its
    insertion, which FIFO channels prevent and reordering does not: on the a/p/q program,
    the burst ``<+,a>, <-,a>`` with the deletion arriving first ends with ``a``, ``p`` and
    ``q`` present instead of nothing. Not in Nigam's account, and found by running it: a
    burst that inserts and deletes one fact may also never end on FIFO channels, the pair
    of updates chasing each other round a cycle (each node inserts, then deletes, and
    fires both: the a/p/q program with ``<+,a>, <-,a>`` in one burst, delivered in send
    order), so the scheme declares ``may_not_terminate``.

Every scheme here sets ``unsafe_reason``: a run refuses it unless it is unsafe
(:meth:`engine.options.RunOptions.resolve`, ``psn run --unsafe``), and its output is then
unchecked. All three declare ``may_not_terminate``: a run stops once its nodes have sent a
bounded number of updates (``RunOptions.max_updates``) with
:class:`engine.network.NotConvergedError`.

Algebra (checked by ``tests/test_provenance_laws.py`` like every scheme): counts are the
natural numbers (``one = 1``, ``zero = 0``, ``join = *``, ``combine = +``): a commutative
semiring, neither absorptive nor idempotent. Base-fact annotations are sets of base-fact
sets (``one = {{}}``, ``zero = {}``, ``join`` the pairwise union, ``combine`` the union): a
commutative semiring with idempotent ``combine``, not absorptive (a derivation's set is
kept even when a smaller one of the same fact exists). Neither ``original`` nor
``fifo-base`` has exact deletions (``exact_deletions = False``): the first drops a deletion
still waiting at quiescence, the second drops a deletion of an absent derivation at once.

Deliberately not here: anything that makes these schemes correct (that is ``derivation``
and ``absorption``), the delivery bound (:mod:`engine.options`, :mod:`engine.network`), the
arrival-time commit itself (:class:`engine.node.Node`), and DRed (delete and re-derive,
Nigam Sec. 6), which is a different evaluation strategy rather than an annotation.
"""

from __future__ import annotations

from itertools import product

from .base import NO_FIRE, AnnotationScheme

__all__ = ["CountingScheme", "OriginalScheme", "FifoBaseScheme"]

_EMPTY = frozenset()


class CountingScheme(AnnotationScheme):
    """Derivation counts (Gupta et al. 1993; Nigam et al. 2012, Algorithm 1 and Sec. 5).

    A stored value is the number of derivations of a present fact; an update carries the
    number of derivations it adds or removes (a join multiplies the counts of the body
    facts). Every insertion is news (a count always grows), so a cyclic derivation is
    propagated again and again; a deletion waits until its fact has that many derivations.
    """

    name = "counting"
    absorptive = False
    idempotent = False
    uses_parts = True
    exact_deletions = True
    tracks_derivations = True
    may_not_terminate = True
    unsafe_reason = ("counts derivations, and a fact on a cycle of derivations has "
                     "infinitely many: a recursive program may never converge (Nigam et al. "
                     "2012, Sec. 5)")

    # -- algebra: the natural numbers -------------------------------------------------------
    def one(self, ctx):
        return 1

    def zero(self, ctx):
        return 0

    def join(self, ctx, a, b):
        return a * b

    def combine(self, ctx, a, b):
        return a + b

    def is_zero(self, ctx, a):
        return a == 0

    def sample(self, ctx, rng):
        return rng.randint(0, 3)

    def sample_update(self, ctx, rng):
        return rng.randint(1, 3)

    # -- base facts and stored values -------------------------------------------------------
    def base(self, ctx, fact, seq):
        """One derivation per base insertion."""
        return 1

    def aggregate(self, ctx, fact):
        return 1

    def count(self, stored):
        return 0 if stored is None else stored

    # -- transitions ------------------------------------------------------------------------
    def pick(self, ctx, fact, stored, sign, ann, owned=False):
        """Insertion: add ``ann`` derivations and fire with them (always news). Deletion:
        waits until the fact has ``ann`` derivations, then removes them."""
        if sign > 0:
            return (ann if stored is None else stored + ann), ann
        if stored is None or stored < ann:
            return None
        return (stored - ann or None), ann

    def derive(self, ctx, sign, head, parts, delta_pos):
        """The product of the body's counts: one update carrying every derivation."""
        n = 1
        for _, _, value in parts:
            n *= value
        return (n,) if n else ()

    # -- wire -------------------------------------------------------------------------------
    def serialize(self, ctx, ann):
        return ann

    def deserialize(self, ctx, data):
        return data


class OriginalScheme(CountingScheme):
    """The original PSN (Loo et al. 2006) as Nigam et al. 2012, Sec. 6 and Fig. 6 describe
    it: derivation counts, committed when an update arrives at its node
    (``commit_on_arrival``), not when it is picked."""

    name = "original"
    commit_on_arrival = True
    exact_deletions = False
    unsafe_reason = ("changes a node's state when an update arrives, not when it is picked, "
                     "which leaves facts derived and unsupported when updates are reordered "
                     "(Nigam et al. 2012, Sec. 6, Fig. 6), and counts derivations, which "
                     "never converges on a cycle of derivations (Sec. 5)")


class FifoBaseScheme(AnnotationScheme):
    """Base-fact annotations that discard a deletion of an absent derivation as cyclic
    (Liu et al. 2009 as Nigam et al. 2012, Sec. 6 describes it; right on FIFO channels).

    An update carries one derivation's set of base facts (``frozenset`` of
    ``(pred, tuple)``, the facts themselves, so a re-insertion of a base fact carries the
    same set as its deletion); a stored value is the ``frozenset`` of those sets.
    """

    name = "fifo-base"
    absorptive = False
    idempotent = True
    uses_parts = True
    exact_deletions = False
    tracks_derivations = True
    may_not_terminate = True
    unsafe_reason = ("discards a deletion of a derivation it does not store as the echo of "
                     "a cyclic derivation, which is right only when a deletion cannot "
                     "overtake the insertion it deletes (FIFO channels; Nigam et al. 2012, "
                     "Sec. 6)")

    # -- algebra: sets of base-fact sets ----------------------------------------------------
    def one(self, ctx):
        return frozenset((_EMPTY,))

    def zero(self, ctx):
        return _EMPTY

    def join(self, ctx, a, b):
        return frozenset(x | y for x in a for y in b)

    def combine(self, ctx, a, b):
        return a | b

    def is_zero(self, ctx, a):
        return not a

    def singleton(self, elem):
        return frozenset((elem,))

    def sample(self, ctx, rng):
        return frozenset(self.sample_update(ctx, rng) for _ in range(rng.randint(0, 3)))

    def sample_update(self, ctx, rng):
        facts = [("link", (i, i + 1)) for i in range(5)]
        return frozenset(f for f in facts if rng.random() < 0.4)

    # -- base facts and stored values -------------------------------------------------------
    def base(self, ctx, fact, seq):
        """The base fact itself (deliberately not the insertion number ``seq``)."""
        return frozenset((fact,))

    def aggregate(self, ctx, fact):
        return _EMPTY

    def occurrences(self, stored):
        return tuple(stored)

    def count(self, stored):
        return 0 if stored is None else len(stored)

    # -- transitions ------------------------------------------------------------------------
    def pick(self, ctx, fact, stored, sign, ann, owned=False):
        """Insertion: news iff the derivation is not stored. Deletion: removes a stored
        derivation; one not stored is discarded (never waits)."""
        if sign > 0:
            if stored is None:
                return frozenset((ann,)), ann
            if ann in stored:
                return stored, NO_FIRE
            return stored | {ann}, ann
        if stored is None or ann not in stored:
            return stored, NO_FIRE
        return (stored - {ann} or None), ann

    def derive(self, ctx, sign, head, parts, delta_pos):
        """One update per choice of a stored derivation of each body fact: the union of
        their base-fact sets (derived facts are not recorded, so nothing detects a cycle
        here)."""
        choices = [(value,) if j == delta_pos else tuple(value)
                   for j, (_, _, value) in enumerate(parts)]
        return [_EMPTY.union(*combo) for combo in product(*choices)]

    # -- wire -------------------------------------------------------------------------------
    def serialize(self, ctx, ann):
        """``[[pred, tuple], ...]``: the base facts of one derivation."""
        return [[p, t] for p, t in ann]

    def deserialize(self, ctx, data):
        return frozenset((p, t) for p, t in data)
