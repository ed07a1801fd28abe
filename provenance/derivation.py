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

Algebra: values are multisets of occurrences (``dict (S, H) -> count``); ``one`` is the
single empty derivation, ``zero`` the empty multiset, ``join`` the pairwise union of
occurrences (counts multiply), ``combine`` the multiset sum. Join/combine are commutative,
associative and distributive; there is no absorption (a multiset counts every derivation).
An update carries one occurrence ``(S, H)``; :meth:`DerivationScheme.singleton` makes it a
multiset.

Deliberately not here: any notion of base-tuple variables (that is ``absorption``, issue 5).
"""

from __future__ import annotations

from itertools import product

from .base import AnnotationScheme

__all__ = ["DerivationScheme"]

_EMPTY = frozenset()
_ONE_OCC = (_EMPTY, _EMPTY)


class DerivationScheme(AnnotationScheme):
    """Derivation sets with cycle detection (Nigam et al. 2012, Sec. 5, Fig. 3)."""

    name = "derivation"
    absorptive = False
    idempotent = False
    uses_parts = True
    exact_deletions = True

    # -- algebra on multisets of occurrences ----------------------------------------------
    def one(self, ctx):
        return {_ONE_OCC: 1}

    def zero(self, ctx):
        return {}

    def singleton(self, occ):
        return {occ: 1}

    def join(self, ctx, a, b):
        out: dict = {}
        for (s1, h1), n1 in a.items():
            for (s2, h2), n2 in b.items():
                k = (s1 | s2, h1 | h2)
                out[k] = out.get(k, 0) + n1 * n2
        return out

    def combine(self, ctx, a, b):
        out = dict(a)
        for k, n in b.items():
            out[k] = out.get(k, 0) + n
        return out

    def is_zero(self, ctx, a):
        return not any(a.values())

    def lift(self, ctx, fact, a):
        return {(s | {fact}, h): n for (s, h), n in a.items()}

    def equal(self, ctx, a, b):
        return {k: n for k, n in a.items() if n} == {k: n for k, n in b.items() if n}

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
            new[ann] = new.get(ann, 0) + 1
            return new, ann
        if stored is None or ann not in stored:
            return None
        new = stored if owned else dict(stored)
        n = new[ann] - 1
        if n:
            new[ann] = n
        else:
            del new[ann]
        return (new or None), ann

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
