"""The base-fact ledger: which base insertions are live, and what a burst injects.

Role: the bookkeeping every driver of the engine needs (the in-memory
:class:`~engine.network.Network`, the simulator, Ray): number every base insertion (an
annotation scheme may make the number a fresh provenance variable, so a re-inserted tuple is
new), let a deletion cancel one live insertion of the same fact, apply ``materialize`` keys
(a new tuple with a stored tuple's key replaces it: a deletion, then an insertion), and keep
deletions that come before their insertion (overlapping bursts) as *debts* until an insertion
matches them. A debt left when a run starts is the user's error: :meth:`Ledger.check` raises
an :class:`~ndlog.errors.InputError` naming the fact.

Deliberately not here: annotations, routing, delivery (the driver turns ``(sign, tuple,
seq)`` into updates for the fact's node).
"""

from __future__ import annotations

from typing import Callable

from ndlog import ast as A
from ndlog.errors import InputError

__all__ = ["Ledger"]


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

    def _key(self, pred: str, tup: tuple):
        table = self.program.table(pred)
        if table is None or not table.keys:
            return None
        return (pred, tuple(tup[k - 1] for k in table.keys if k - 1 < len(tup)))

    def update(self, sign: int, pred: str, tup: tuple) -> list[tuple[int, tuple, int]]:
        """Record one base update; return what to inject as ``(sign, tuple, seq)``: an
        insertion gets a new ``seq`` (preceded by the deletion of a keyed tuple it replaces,
        followed by its own deletion if a debt was waiting for it); a deletion carries the
        ``seq`` of the oldest live insertion it cancels, or nothing (a new debt)."""
        fact = (pred, tup)
        self.preds.add(pred)
        out: list[tuple[int, tuple, int]] = []
        if sign > 0:
            key = self._key(pred, tup)
            if key is not None:
                old = self.keyed.get(key)
                if old is not None:
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
            key = self._key(pred, tup)
            if key is not None and self.keyed.get(key) == tup:
                del self.keyed[key]
        return [(-1, tup, seq)]

    def check(self) -> None:
        """Raise :class:`InputError` for a deletion no insertion has matched."""
        if self.debts:
            (pred, tup), _ = next(iter(self.debts.items()))
            raise InputError(f"cannot delete {self.describe(pred, tup)}: it is not a base "
                             f"fact (no insertion of it is left to delete)")

    def facts(self) -> dict[str, set[tuple]]:
        """The current base facts (every fact with a live insertion)."""
        out: dict[str, set[tuple]] = {}
        for (pred, tup), seqs in self.live.items():
            if seqs:
                out.setdefault(pred, set()).add(tup)
        return out
