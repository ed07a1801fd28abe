"""Multisets of occurrences: the algebra two annotation schemes share.

Role: a mixin for schemes whose annotation is a ``dict`` from an occurrence to its
multiplicity: derivation sets (Nigam et al. 2012, Sec. 5; an occurrence is a pair of fact
sets) and relative provenance (Liu et al. 2009, Sec. 4; an occurrence is a derivation
edge, the set of a rule instance's body facts). ``combine`` adds multiplicities, ``join``
multiplies them and merges occurrences with :meth:`MultisetAlgebra.join_key`, ``zero`` is the
empty multiset. The laws (commutative, associative, distributive, ``zero`` annihilating)
are checked for both schemes by ``tests/test_provenance_laws.py``.

Deliberately not here: ``one``, ``lift``, sampling and the state transitions, which differ
per scheme.
"""

from __future__ import annotations

__all__ = ["MultisetAlgebra"]


class MultisetAlgebra:
    """``zero``, ``singleton``, ``join``, ``combine``, ``is_zero`` and ``equal`` on
    ``{occurrence: multiplicity}``; a subclass gives :meth:`join_key`. Put it before
    :class:`provenance.base.AnnotationScheme` among the bases."""

    def join_key(self, a, b):
        """The occurrence of a join of occurrences ``a`` and ``b``."""
        raise NotImplementedError

    def zero(self, ctx):
        return {}

    def singleton(self, elem):
        return {elem: 1}

    def join(self, ctx, a, b):
        key = self.join_key
        out: dict = {}
        for k1, n1 in a.items():
            for k2, n2 in b.items():
                k = key(k1, k2)
                out[k] = out.get(k, 0) + n1 * n2
        return out

    def combine(self, ctx, a, b):
        out = dict(a)
        for k, n in b.items():
            out[k] = out.get(k, 0) + n
        return out

    def is_zero(self, ctx, a):
        return not any(a.values())

    def equal(self, ctx, a, b):
        return {k: n for k, n in a.items() if n} == {k: n for k, n in b.items() if n}
