"""The ``derivation`` annotation scheme: derivation sets S and infinite-count sets H.

Role: Nigam et al. 2012, Sec. 5 and Fig. 3, the verification scheme for small networks.
Multiset semantics: a node stores every *occurrence* of a fact, each annotated with
``(S, H)``: ``S`` the set of all facts (base and derived) used in its derivation, ``H ⊆ S`` the
facts found to lie on a cycle. A fact is ``(pred, tuple)``; ``S`` and ``H`` are frozensets.

* pick: if the fact is in its own ``S`` it is added to ``H`` (the stored occurrence and the
  fired delta both carry the new ``H``); a deletion waits until the occurrence with exactly
  that annotation is present, then removes it;
* fire: ``S = {b1..bn} ∪ S1 ∪ ... ∪ Sn``, ``H = H1 ∪ ... ∪ Hn``, one derived update per
  choice of occurrences of the body facts; an update whose fact is already in its ``H`` is not sent.

This terminates and is correct under any delivery order, but enumerates every cycle-free
derivation: it grows exponentially on well-connected graphs.

Negation: the absence ``!q(t)`` of a fact at its node is an occurrence ``(∅, ∅)``, inserted
when it begins and deleted when ``q(t)`` appears (:meth:`DerivationScheme.absence`); every
derivation through ``not q(t)`` has ``!q(t)`` in its ``S``, so its deletion matches its
insertion exactly as for a base fact.

Algebra: values are multisets of occurrences (``dict (S, H) -> count``); ``one`` is the
single empty derivation, ``zero`` the empty multiset, ``join`` the pairwise union of
occurrences (counts multiply), ``combine`` the multiset sum. Join/combine are commutative,
associative and distributive; there is no absorption (a multiset counts every derivation).
An update carries one occurrence ``(S, H)``; :meth:`DerivationScheme.singleton` makes it a
multiset.

Budget: the number of derivations is exponential in the cycles of the graph (a 2x4
bidirectional grid stores 400,000 of them, 1.3 GB), so a scheme object is made with a budget
(:meth:`DerivationScheme.with_budget`): distinct ``(S, H)`` entries stored for one fact, and
in total over every fact it annotates (the nodes of one network; on Ray, each worker's
object holds its share of the network's budget, :meth:`DerivationScheme.shared`).
Past it, ``pick`` or ``derive`` raises :class:`~provenance.base.AnnotationBudgetExceeded`
naming the fact; the engine turns it into an error that suggests ``absorption``. The
check sits where an entry is added, so a run within budget pays one comparison per new
entry.

Deliberately not here: any notion of base-tuple variables (that is ``absorption``), and
the user-facing error (the engine raises it, naming the fact as NDlog).
"""

from __future__ import annotations

from itertools import product

from ndlog.errors import InputError

from .base import AnnotationBudgetExceeded, AnnotationScheme
from .multiset import MultisetAlgebra

__all__ = ["DerivationScheme", "DEFAULT_MAX_PER_FACT", "DEFAULT_MAX_TOTAL"]

#: Default budget of distinct derivations ``(S, H)`` stored for one fact.
DEFAULT_MAX_PER_FACT = 10_000
#: Default budget of distinct derivations stored over every fact one scheme object annotates
#: (a few KB each: reachable on a 3x3 bidirectional grid reaches it at about 0.7 GB).
DEFAULT_MAX_TOTAL = 200_000
#: Stands for "no budget" (a plain comparison against it never fails).
_UNLIMITED = 1 << 62
_KEEP = object()

_EMPTY = frozenset()
_ONE_OCC = (_EMPTY, _EMPTY)


class DerivationScheme(MultisetAlgebra, AnnotationScheme):
    """Derivation sets with cycle detection (Nigam et al. 2012, Sec. 5, Fig. 3).

    Parameters
    ----------
    max_per_fact:
        Budget of distinct derivations stored for one fact (and produced by one rule
        firing); ``None`` for none.
    max_total:
        Budget of distinct derivations stored over every fact this object annotates;
        ``None`` for none. Make one object per run (``get_scheme`` does): the count is
        the object's.

    Raises
    ------
    ndlog.errors.InputError
        If a budget is not a positive integer.
    """

    name = "derivation"
    absorptive = False
    idempotent = False
    uses_parts = True
    exact_deletions = True
    negation = True

    def __init__(self, max_per_fact: int | None = DEFAULT_MAX_PER_FACT,
                 max_total: int | None = DEFAULT_MAX_TOTAL):
        self.max_per_fact = _budget(max_per_fact, "per fact")
        self.max_total = _budget(max_total, "in total")
        #: distinct ``(S, H)`` entries stored right now by every node using this object
        self.entries = 0
        #: the processes that share ``max_total`` (each holds this object's share of it)
        self.workers = 1

    def with_budget(self, max_per_fact=_KEEP, max_total=_KEEP) -> "DerivationScheme":
        """A fresh scheme object (no entries counted yet) with other budgets.

        Parameters
        ----------
        max_per_fact:
            Distinct derivations stored for one fact; ``None`` for no budget. Also bounds
            the derivations one rule firing may produce. Omitted: this object's.
        max_total:
            Distinct derivations stored over every fact; ``None`` for no budget. Omitted:
            this object's.

        Raises
        ------
        ndlog.errors.InputError
            If a budget is not a positive integer.
        """
        per = self.budget[0] if max_per_fact is _KEEP else max_per_fact
        total = self.budget[1] if max_total is _KEEP else max_total
        return DerivationScheme(per, total)

    def shared(self, workers: int) -> "DerivationScheme":
        """A fresh scheme object for one of ``workers`` processes that run one network
        together (the workers of a Ray run): its total budget is its share of this one's,
        ``max_total // workers``, so that the network stores at most ``max_total``
        derivations in all, as in one process (each process counts only its own)."""
        per, total = self.budget
        out = DerivationScheme(per, None if total is None else max(1, total // workers))
        out.workers = workers if total is not None else 1
        return out

    @property
    def budget(self) -> tuple[int | None, int | None]:
        """``(max_per_fact, max_total)``, ``None`` where there is no budget."""
        return tuple(None if b >= _UNLIMITED else b  # type: ignore[return-value]
                     for b in (self.max_per_fact, self.max_total))

    # -- algebra on multisets of occurrences ----------------------------------------------
    def one(self, ctx):
        return {_ONE_OCC: 1}

    def join_key(self, a, b):
        """Both derivations' fact sets united, and their cycle sets."""
        return (a[0] | b[0], a[1] | b[1])

    def lift(self, ctx, fact, a):
        return {(s | {fact}, h): n for (s, h), n in a.items()}

    def sample(self, ctx, rng):
        facts = [("p", (i,)) for i in range(5)]
        out: dict = {}
        for _ in range(rng.randint(0, 3)):
            s = frozenset(f for f in facts if rng.random() < 0.4)
            h = frozenset(f for f in s if rng.random() < 0.3)
            out[(s, h)] = out.get((s, h), 0) + rng.randint(1, 2)
        return out

    def sample_update(self, ctx, rng):
        values = [1, -2, 3.5, float("inf"), "a", "node 7", (), ("x", 2), (("n",), 1.0)]
        facts = [(p, (rng.choice(values), rng.choice(values)))
                 for p in ("link", "reachable", "path") for _ in range(2)]
        s = frozenset(f for f in facts if rng.random() < 0.5)
        h = frozenset(f for f in s if rng.random() < 0.3)
        return s, h

    # -- base facts and stored values ----------------------------------------------------
    def base(self, ctx, fact, seq):
        """A base occurrence: empty ``S`` and ``H`` (every insertion of a base fact is one
        more occurrence; a deletion removes one)."""
        return _ONE_OCC

    def aggregate(self, ctx, fact):
        return _ONE_OCC

    def absence(self, ctx, fact):
        """An absence ``!q(t)`` is one occurrence with empty ``S`` and ``H``, like a base
        fact; what is derived through it has ``!q(t)`` in its ``S`` (:meth:`lift`)."""
        return _ONE_OCC

    def absence_ends(self, ctx, fact, stored):
        """The end of an absence deletes its one occurrence: derived deletions then carry
        exactly the ``(S, H)`` their insertions carried, and wait for them if they
        overtake them (Nigam et al. 2012, Fig. 3, ``pick_D``)."""
        return _ONE_OCC

    def occurrences(self, stored):
        if len(stored) == 1:
            occ, n = next(iter(stored.items()))
            return (occ,) * n
        return [occ for occ, n in stored.items() for _ in range(n)]

    def count(self, stored):
        return 0 if stored is None else sum(stored.values())

    # -- transitions ---------------------------------------------------------------------
    def pick(self, ctx, fact, stored, sign, ann, owned=False):
        """Fig. 3 ``pick_I``/``pick_D``: add the fact to ``H`` if it is in its own ``S``;
        a deletion is pickable only when the occurrence with that annotation is present."""
        s, h = ann
        if fact in s and fact not in h:
            ann = (s, h | {fact})
        if sign > 0:
            new = stored if owned and stored is not None else dict(stored or ())
            n = new.get(ann, 0)
            new[ann] = n + 1
            if not n:
                self.entries += 1
                if len(new) > self.max_per_fact or self.entries > self.max_total:
                    self._over_budget(fact, len(new))
            return new, ann
        if stored is None or ann not in stored:
            return None
        new = stored if owned else dict(stored)
        n = new[ann] - 1
        if n:
            new[ann] = n
        else:
            del new[ann]
            self.entries -= 1
        return (new or None), ann

    def _over_budget(self, fact, stored: int) -> None:
        if stored > self.max_per_fact:
            raise AnnotationBudgetExceeded(fact, stored, self.max_per_fact, "fact",
                                           "derivations")
        raise AnnotationBudgetExceeded(fact, self.entries, self.max_total, "total",
                                       "derivations", workers=self.workers)

    def derive(self, ctx, sign, head, parts, delta_pos):
        """Fig. 3 ``fire``: ``S = {body facts} ∪ S_i``, ``H = ∪ H_i``; drop if head ∈ H."""
        facts = frozenset((p, t) for p, t, _ in parts)
        choices = []
        for j, (_, _, value) in enumerate(parts):
            if j == delta_pos:
                choices.append((value,))
            else:
                choices.append(self.occurrences(value))
        out = []
        if all(len(c) == 1 for c in choices):
            combos = (tuple(c[0] for c in choices),)
        else:
            n = 1
            for c in choices:
                n *= len(c)
            if n > self.max_per_fact:
                raise AnnotationBudgetExceeded(head, n, self.max_per_fact, "fact",
                                               "derivations from one rule firing")
            combos = product(*choices)
        for combo in combos:
            s = facts.union(*[cs for cs, _ in combo if cs])
            hs = [ch for _, ch in combo if ch]
            h = hs[0].union(*hs[1:]) if hs else _EMPTY
            if head not in h:
                out.append((s, h))
        return out

    # -- wire ----------------------------------------------------------------------------
    def serialize(self, ctx, ann):
        """``[[pred, tuple]...], [indices into S of the facts in H]``."""
        s, h = ann
        items = list(s)
        if not h:
            return [items, []]
        return [items, [i for i, f in enumerate(items) if f in h]]

    def deserialize(self, ctx, data):
        items, hidx = data
        facts = [(p, t) for p, t in items]
        return frozenset(facts), frozenset(facts[i] for i in hidx)


def _budget(value, what: str) -> int:
    """A budget as an int (:data:`_UNLIMITED` for ``None``), or an InputError."""
    if value is None:
        return _UNLIMITED
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"the derivation budget {what} must be a positive integer, "
                         f"got {value!r}")
    return value
