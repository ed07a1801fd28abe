"""The reference a run is checked against: Python's or Spark's semi-naive evaluation.

Role: one switch, :func:`reference_evaluator`, for ``--check python|spark`` and the Python
API (``Simulation(reference=...)``). Both references compute the same synchronous
semi-naive fixpoint (:mod:`ndlog.reference` in Python, :mod:`psn.batch.spark` as Spark batch
jobs). And :func:`memory_ceiling`, the guard that stops the Python reference when it
outgrows its memory (``psn.evaluate``, ``psn eval``, ``psn reference --engine python``): a
program whose fixpoint is infinite (a recursive rule that builds ever longer lists or ever
larger numbers) would otherwise run until the machine runs out of memory.

Deliberately not here: comparing relations (:mod:`ndlog.check`), running either reference.
"""

from __future__ import annotations

import time

from ndlog.errors import InputError

__all__ = ["reference_evaluator", "memory_ceiling", "CHECK_EVERY"]

#: seconds between two readings of the resident memory by :func:`memory_ceiling`'s guard
#: (it is called after every rule firing; a reading is a small file read)
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
        :data:`CHECK_EVERY` seconds; None when there is no ceiling.

    Raises
    ------
    InputError
        For a ceiling that is not a whole number of bytes, or one below
        ``engine.guards.MIN_MEMORY``.
    """
    from engine.guards import (MemoryLimitError, check_memory_limit, current_rss,
                               default_memory_limit)
    from ndlog.text import format_bytes
    if max_memory is None:
        limit = default_memory_limit()
    elif isinstance(max_memory, bool) or not isinstance(max_memory, int) or max_memory < 0:
        raise InputError(f"{option} is a memory ceiling in bytes (0: none), not "
                         f"{max_memory!r}")
    else:
        limit = check_memory_limit(max_memory, option)
    if not limit:
        return None
    last = [0.0]

    def guard(rounds: int, predicates) -> None:
        now = time.monotonic()
        if now - last[0] < CHECK_EVERY:
            return
        last[0] = now
        used = current_rss()
        if used <= limit:
            return
        where = (f"in round {rounds:,} of the semi-naive evaluation of "
                 f"{', '.join(sorted(predicates))}" if rounds else
                 f"evaluating {', '.join(sorted(predicates))}")
        err = MemoryLimitError(
            f"the evaluation used {format_bytes(used)}, over its {option} of "
            f"{format_bytes(limit)}, {where}; it was stopped before the machine ran out "
            f"of memory",
            hint="a program whose recursion builds ever longer lists or ever larger "
                 f"numbers has no finite fixpoint; else raise {option} (or {none} for none)")
        err.used, err.limit = used, limit
        raise err
    return guard
