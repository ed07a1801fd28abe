"""Batch evaluation on Spark: the reference results distributed runs are checked against.

Role: :func:`evaluate_spark` (synchronous semi-naive evaluation of an NDlog program as
Spark DataFrame jobs) and :func:`get_session` (one local Spark session per
process, or any cluster by master URL). Importing this package does not import pyspark;
the functions do, when called.

Deliberately not here: the Python reference (:mod:`ndlog.reference`), comparison of results
(:mod:`ndlog.check`), and anything the engine imports (the engine never depends on Spark).
"""

from __future__ import annotations

__all__ = ["evaluate_spark", "get_session", "stop_session", "SparkStats"]


def evaluate_spark(program, facts=None, **options):
    """See :func:`psn.batch.spark.evaluate_spark`. ``program`` may be NDlog text too, and
    ``facts`` are checked as :func:`psn.evaluate` checks them: a predicate the program
    does not use is an :class:`~ndlog.errors.InputError`, not an empty result."""
    from engine.options import require_flag
    from ndlog.parser import as_program
    from ..oracle import checked_facts
    from .spark import evaluate_spark as _evaluate_spark
    require_flag(options.get("hidden", False), "hidden")
    program = as_program(program)
    if facts is not None:
        facts = checked_facts(program, facts)
    return _evaluate_spark(program, facts, **options)


def get_session(master=None):
    """See :func:`psn.batch.session.get_session`."""
    from .session import get_session as _get_session
    return _get_session(master)


def stop_session():
    """See :func:`psn.batch.session.stop_session`."""
    from .session import stop_session as _stop_session
    return _stop_session()


def __getattr__(name):
    if name == "SparkStats":
        from .spark import SparkStats
        return SparkStats
    raise AttributeError(name)
