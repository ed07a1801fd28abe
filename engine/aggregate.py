"""Incremental aggregates in rule heads (docs/language.md, section 6).

Role: the operator that turns a node's *contribution* relation (see
:func:`engine.program.split_aggregates`) into aggregate result tuples, under insertions
and deletions. Per group it keeps the set of present contributions (distinct body
assignments, as :mod:`ndlog.reference` defines aggregates); when a batch commits, every group
whose contributions changed is recomputed once, and if the result changed the operator emits
the deletion of the old result tuple and the insertion of the new one.

Deliberately not here: aggregate *selection* (pruning a recursive predicate to its best
tuples, Liu et al. Sec. 6): that is a pick/send stage of the node (:mod:`engine.aggsel`),
not this operator.
"""

from __future__ import annotations

from ndlog.errors import EvaluationError
from ndlog.builtins import BuiltinError, aggregate_value, format_value
from .program import AggregateSpec

__all__ = ["AggregateOperator"]


class AggregateOperator:
    """Maintains one aggregate rule's groups at one node.

    Parameters
    ----------
    spec:
        From :func:`engine.program.split_aggregates`.
    """

    def __init__(self, spec: AggregateSpec):
        self.spec = spec
        self.groups: dict[tuple, dict[tuple, None]] = {}
        self.current: dict[tuple, tuple] = {}

    def apply(self, changes: list[tuple[tuple, bool]]) -> list[tuple[int, tuple]]:
        """Apply presence changes ``(contribution tuple, now present)`` of one commit.

        Returns ``[(sign, result tuple)]``: deletions of old results before insertions of
        new ones, per changed group.
        """
        g = self.spec.group_len
        dirty: dict[tuple, None] = {}
        for tup, present in changes:
            key = tup[:g]
            members = self.groups.get(key)
            if present:
                if members is None:
                    members = self.groups[key] = {}
                members[tup] = None
            elif members is not None:
                members.pop(tup, None)
                if not members:
                    del self.groups[key]
            dirty[key] = None
        out: list[tuple[int, tuple]] = []
        for key in dirty:
            old = self.current.get(key)
            new = self._result(key)
            if old == new:
                continue
            if old is not None:
                out.append((-1, old))
                del self.current[key]
            if new is not None:
                out.append((1, new))
                self.current[key] = new
        return out

    def _result(self, key: tuple) -> tuple | None:
        members = self.groups.get(key)
        if not members:
            return None
        spec = self.spec
        row: list = [None] * spec.head_arity
        for p, v in zip(spec.group_pos, key):
            row[p] = v
        for pos, func, idx in spec.aggs:
            col = [1 if idx is None else t[idx] for t in members]
            try:
                row[pos] = aggregate_value(func, col)
            except TypeError:
                raise EvaluationError(
                    f"{func}<...> in rule {spec.rule} over values that cannot be combined: "
                    f"{', '.join(format_value(v) for v in col[:3])}", spec.span) from None
            except BuiltinError as exc:
                raise EvaluationError(f"{func}<...> in rule {spec.rule}: {exc}",
                                      spec.span) from None
        return tuple(row)
