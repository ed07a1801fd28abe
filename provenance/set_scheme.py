"""The ``set`` annotation scheme: plain set semantics, no provenance.

Role: the baseline that provenance is measured against. A fact is present or absent; an
insertion of a present fact is not news and fires nothing, so recursive programs terminate
on insertions. Annotations are the Booleans (``one = True``, ``zero = False``,
``join = and``, ``combine = or``) and nothing is shipped on the wire.

Deliberately not here: correct deletions in general. Without counts or provenance a deletion
cannot know whether another derivation still supports a fact, so ``set`` is exact for
insertion-only runs, and for deletions only in programs where no fact ever has two
derivations (no recursion, no aggregate, one rule per derived predicate, every body variable
kept in the head: :func:`engine.guards.set_deletion_problem` decides it, and the drivers
refuse the rest). A deletion removes the fact and propagates; deletions left waiting at
quiescence are dropped. Aggregates retract their old result when it changes, so rules that
read an aggregate's result see deletions even in an insertion-only run: the aggregate
relations themselves stay exact when a node's messages to itself arrive in order, what is
derived from them may not. Use ``absorption`` (or ``derivation`` on small graphs) when
facts are deleted.
"""

from __future__ import annotations

from .base import NO_FIRE, AnnotationScheme

__all__ = ["SetScheme"]

_ONE = (True,)


class SetScheme(AnnotationScheme):
    """Set semantics (Nigam et al. 2012, Sec. 2.2 without multiplicities)."""

    name = "set"
    absorptive = True
    idempotent = True
    uses_parts = False
    exact_deletions = False
    tracks_derivations = False
    fixed_annotation = True
    ships_annotations = False

    @property
    def presence_only(self) -> bool:
        """True unless a subclass picks otherwise (overrides :meth:`pick`): the engine
        then asks :meth:`pick` for every insertion, as for any other scheme."""
        return type(self).pick is SetScheme.pick

    def one(self, ctx):
        return True

    def zero(self, ctx):
        return False

    def join(self, ctx, a, b):
        return a and b

    def combine(self, ctx, a, b):
        return a or b

    def is_zero(self, ctx, a):
        return not a

    def sample(self, ctx, rng):
        return rng.random() < 0.7

    def sample_update(self, ctx, rng):
        return True  # an update of a present fact; absence is never shipped

    def pick(self, ctx, fact, stored, sign, ann, owned=False):
        """Insertion: news iff absent. Deletion: waits until present, then removes."""
        if sign > 0:
            return (True, True) if stored is None else (True, NO_FIRE)
        if stored is None:
            return None
        return None, True

    def derive(self, ctx, sign, head, parts, delta_pos):
        return _ONE

    def serialize(self, ctx, ann):
        return None

    def deserialize(self, ctx, data):
        return True
