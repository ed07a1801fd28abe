"""The reference a run is checked against: Python's or Spark's semi-naive evaluation.

Role: one switch, :func:`reference_evaluator`, for ``--check python|spark`` and the Python
API (``Simulation(reference=...)``). Both references compute the same synchronous
semi-naive fixpoint (:mod:`ndlog.reference` in Python, :mod:`psn.batch.spark` as Spark batch
jobs).

Deliberately not here: comparing relations (:mod:`ndlog.check`), running either reference.
"""

from __future__ import annotations

from ndlog.errors import InputError

__all__ = ["reference_evaluator"]


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
