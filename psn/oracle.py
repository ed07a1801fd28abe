"""The reference a run is checked against: Python's or Spark's semi-naive evaluation.

Role: one switch, :func:`reference_evaluator`, for ``--check python|spark`` and the Python
API (``Simulation(reference=...)``). Both references compute the same synchronous
semi-naive fixpoint (:mod:`ndlog.reference` in Python, :mod:`psn.batch.spark` as Spark batch
jobs). And :func:`memory_ceiling`, the guard that stops the Python reference when it
outgrows its memory (``psn.evaluate``, ``psn eval``, ``psn reference --engine python``): a
program whose fixpoint is infinite (a recursive rule that builds ever longer lists or ever
larger numbers) would otherwise run until the machine runs out of memory. And
:func:`checked_facts`, the check of facts given to either reference from Python.

Deliberately not here: comparing relations (:mod:`ndlog.check`), running either reference.
"""

from __future__ import annotations

from collections.abc import Mapping

from ndlog.errors import InputError

__all__ = ["reference_evaluator", "memory_ceiling", "checked_facts", "CHECK_EVERY"]

#: seconds between two readings of the resident memory by :func:`memory_ceiling`'s guard
#: (it is called after every rule firing and every 1,024 tuples within one; a reading is
#: a small file read)
CHECK_EVERY = 0.01


def reference_evaluator(kind: str = "python", master: str | None = None):
    """The reference a run is checked against: ``psn.evaluate`` (``"python"``) or Spark's
    batch evaluation (``"spark"``, :mod:`psn.batch.spark`), as ``evaluate(program, facts,
    aggsel=True)`` (``aggsel=False``: no aggregate selection, for a run with ``--aggsel
    off``).

    Raises
    ------
    InputError
        For any other ``kind``.
    """
    if kind in ("python", True):
        from ndlog.reference import evaluate
        return evaluate
    if kind == "spark":
        from .batch.session import check_master, check_reachable
        from .batch.spark import evaluate_spark
        if master is not None:               # before the run, not at its first check
            check_master(master)
            check_reachable(master)

        def spark(program, facts, aggsel=True):
            return evaluate_spark(program, facts, master=master, aggsel=aggsel)
        return spark
    raise InputError(f"check (--check) takes 'python' or 'spark', got {kind!r}")


def memory_ceiling(max_memory: int | None = None, option: str = "max_memory",
                   none: str = "0"):
    """The guard (``ndlog.reference.evaluate(guard=...)``) that stops an evaluation past a
    resident memory of ``max_memory`` bytes.

    Parameters
    ----------
    max_memory:
        The ceiling in bytes; None for the default of every run (three quarters of the
        machine's or the container's memory), 0 for none.
    option:
        The parameter or option that set it, for messages.
    none:
        How ``option`` says "no ceiling" (``0``, or the command line's ``off``), for the
        hint of the error.

    Returns
    -------
    callable or None
        ``guard(round, predicates)``, which reads the resident memory at most every
        :data:`CHECK_EVERY` seconds (:meth:`engine.guards.MemoryGuard.check_soon`); None
        when there is no ceiling.

    Raises
    ------
    InputError
        For a ceiling that is not a whole number of bytes, or one below
        ``engine.guards.MIN_MEMORY``.
    """
    from engine.guards import (MemoryGuard, MemoryLimitError, check_memory_limit,
                               default_memory_limit)
    if max_memory is None:
        limit = default_memory_limit()
    elif isinstance(max_memory, bool) or not isinstance(max_memory, int) or max_memory < 0:
        raise InputError(f"{option} is a memory ceiling in bytes (0: none), not "
                         f"{max_memory!r}")
    else:
        limit = check_memory_limit(max_memory, option)
    if not limit:
        return None
    ceiling = MemoryGuard(limit, interval=CHECK_EVERY)

    def guard(rounds: int, predicates) -> None:
        try:
            ceiling.check_soon()
        except MemoryLimitError as exc:     # in the evaluation's words, with its round
            raise _stopped(exc.used, limit, rounds, predicates, option, none) from None
    return guard


def _stopped(used: int, limit: int, rounds: int, predicates, option: str, none: str):
    """The :class:`~engine.guards.MemoryLimitError` of an evaluation stopped at ``used``
    bytes in ``rounds`` of the stratum of ``predicates``."""
    from engine.guards import MemoryLimitError
    from ndlog.text import format_bytes
    preds = ", ".join(sorted(predicates))
    where = (f"in round {rounds:,} of the semi-naive evaluation of {preds}" if rounds
             else f"evaluating {preds}")
    err = MemoryLimitError(
        f"the evaluation used {format_bytes(used)}, over its {option} of "
        f"{format_bytes(limit)}, {where}; it was stopped before the machine ran out of memory",
        hint="a program whose recursion builds ever longer lists or ever larger numbers has "
             f"no finite fixpoint; else raise {option} (or {none} for none)")
    err.used, err.limit = used, limit
    return err


def checked_facts(program, facts) -> Mapping:
    """``facts``, each of its predicates checked against ``program`` for either reference
    (``psn.evaluate``, ``psn.batch.evaluate_spark``), as a run checks them: one the program
    uses or declares (``materialize``). Arities and tuples are checked where each reference
    reads them (:func:`ndlog.reference.base_facts`).

    Raises
    ------
    InputError
        For facts that are not a mapping, or a predicate the program does not use, naming
        it (with the nearest known one), so that a misspelt predicate is not an empty
        result.
    """
    from ndlog.parser import FactShapes
    if not isinstance(facts, Mapping):
        raise InputError(f"facts must be a mapping of predicate -> tuples, got "
                         f"{type(facts).__name__}")
    from ndlog.reference import fact_rows
    known = dict.fromkeys(program.predicates)
    for pred, rows in facts.items():
        fact_rows(pred, rows)
        if pred not in known:
            FactShapes(known).check(pred, 0, None, None)    # raises, with "did you mean"
    return facts
