"""Compare two sets of result relations and report the differences tuple by tuple.

Role: the one comparison used wherever a run is checked against a reference (the synchronous
semi-naive result, Nigam et al. 2012, Algorithm 2): ``psn run --check`` after each burst,
the Spark-vs-Python tests, the golden corpus. :func:`compare_relations` returns a
:class:`RelationDiff` listing, per relation, the tuples the reference has and the run lacks
(*missing*) and the tuples the run has and the reference lacks (*extra*);
:meth:`RelationDiff.render` prints them in NDlog syntax.

Equality is Python's: ``1 == 1.0``, lists are tuples. Deliberately not here: computing
either side (see :mod:`ndlog.reference`, :mod:`psn.batch.spark`, the engine) and deciding what
to do about a difference (the caller exits non-zero, fails a test, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from ndlog.builtins import format_value
from ndlog.text import count_noun
from .output import sorted_tuples

__all__ = ["RelationDiff", "compare_relations", "format_tuple", "verdict"]


def format_tuple(pred: str, values: tuple) -> str:
    """``pred(v1, v2, ...)`` in NDlog syntax (:func:`ndlog.builtins.format_value`)."""
    return f"{pred}(" + ", ".join(format_value(v) for v in values) + ")"


@dataclass(frozen=True)
class RelationDiff:
    """Differences between an expected and an actual set of relations.

    Attributes
    ----------
    missing:
        relation -> tuples expected but absent from the actual result (sorted).
    extra:
        relation -> tuples in the actual result but not expected (sorted).
    compared:
        The relations that were compared, sorted.
    """

    missing: dict[str, list[tuple]] = field(default_factory=dict)
    extra: dict[str, list[tuple]] = field(default_factory=dict)
    compared: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the two sides agree on every compared relation."""
        return not self.missing and not self.extra

    @property
    def relations(self) -> list[str]:
        """Relations with at least one difference, sorted."""
        return sorted(set(self.missing) | set(self.extra))

    def count(self) -> int:
        """Number of differing tuples."""
        return sum(map(len, self.missing.values())) + sum(map(len, self.extra.values()))

    def signed(self, limit: int | None = None) -> list[tuple[str, str, tuple]]:
        """``(relation, sign, tuple)`` per difference: ``+`` only in the actual result,
        ``-`` only in the expected one; at most ``limit`` entries."""
        out = []
        for name in sorted(set(self.missing) | set(self.extra)):
            out += [(name, "+", t) for t in self.extra.get(name, ())]
            out += [(name, "-", t) for t in self.missing.get(name, ())]
        return out if limit is None else out[:limit]

    def render(self, limit: int | None = None, expected_name: str = "expected",
               actual_name: str = "actual") -> str:
        """The differences, one tuple per line, in NDlog syntax.

        ``- t`` marks a tuple of ``expected_name`` missing from ``actual_name``; ``+ t`` an
        extra one. ``limit`` caps the lines per relation (``None``: all of them).
        """
        if self.ok:
            return (f"{actual_name} agrees with {expected_name} on "
                    f"{count_noun(len(self.compared), 'relation')}")
        out = [f"{actual_name} differs from {expected_name} in "
               f"{count_noun(len(self.relations), 'relation')}, "
               f"{count_noun(self.count(), 'tuple')}  (- missing, + extra)"]
        for name in self.relations:
            miss, extra = self.missing.get(name, []), self.extra.get(name, [])
            out.append(f"{name}: {len(miss)} missing, {len(extra)} extra")
            lines = [f"  - {format_tuple(name, t)}" for t in miss] + \
                    [f"  + {format_tuple(name, t)}" for t in extra]
            if limit is not None and len(lines) > limit:
                hidden = len(lines) - limit
                lines = lines[:limit] + [f"  ... {hidden} more"]
            out.extend(lines)
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()


def compare_relations(expected: Mapping[str, Iterable[tuple]],
                      actual: Mapping[str, Iterable[tuple]],
                      relations: Iterable[str] | None = None) -> RelationDiff:
    """Compare two results relation by relation.

    Parameters
    ----------
    expected:
        The reference result, ``relation -> tuples`` (e.g. from ``psn.evaluate`` or the
        Spark reference).
    actual:
        The result under test (a distributed run's relations).
    relations:
        Relations to compare; ``None`` compares every relation of either side. A relation
        absent from one side counts as empty there.

    Returns
    -------
    RelationDiff
        Missing and extra tuples per relation; ``.ok`` when there are none.

    Notes
    -----
    Correctness of a run (Nigam et al. 2012, Definition 1) is equality of
    its result relations with the synchronous semi-naive result; this is that test.
    """
    names = sorted(set(expected) | set(actual)) if relations is None else sorted(set(relations))
    missing: dict[str, list[tuple]] = {}
    extra: dict[str, list[tuple]] = {}
    for name in names:
        exp = set(expected.get(name, ()))
        got = set(actual.get(name, ()))
        if exp - got:
            missing[name] = sorted_tuples(exp - got)
        if got - exp:
            extra[name] = sorted_tuples(got - exp)
    return RelationDiff(missing, extra, tuple(names))


def verdict(actual: Mapping[str, Iterable[tuple]], expected: Mapping[str, Iterable[tuple]],
            skip: Iterable[str] = (), limit: int = 20) -> tuple[bool, list]:
    """``(equal, differences)`` over the relations of ``expected`` except ``skip``, with at
    most ``limit`` signed differences (:meth:`RelationDiff.signed`). Used by the simulator's
    and Ray's per-step checks."""
    skip = set(skip)
    diff = compare_relations(expected, actual,
                             relations=[r for r in expected if r not in skip])
    return diff.ok, diff.signed(limit)
