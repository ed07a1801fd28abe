"""PSN: pipelined semi-naive evaluation of network Datalog (NDlog).

Role: the public Python API. ``parse``/``load`` read NDlog (with static checks),
``evaluate`` runs the centralized reference evaluator, ``localize`` rewrites a distributed
program so that every rule body lives at one node. The engine, transports and experiment
tooling are reached through their own modules (``engine``, ``sim``, ``topologies``).

Deliberately not here: any heavy import. Ray and Spark are imported only by the modules that
use them, so ``import psn`` stays fast.
"""

from __future__ import annotations

from ndlog.errors import (EvaluationError, InputError, LocalizationError, NDlogSemanticError,
                     NDlogSyntaxError, PSNError, Span)
from ndlog.parser import load, parse

__all__ = [
    "parse", "load", "evaluate", "localize", "Network",
    "PSNError", "NDlogSyntaxError", "NDlogSemanticError", "LocalizationError",
    "EvaluationError", "InputError", "Span",
]

__version__ = "0.1.0"


def evaluate(program, facts=None, **options):
    """Evaluate ``program`` centrally with synchronous semi-naive evaluation.

    See :func:`ndlog.reference.evaluate` for parameters; returns ``dict[str, set[tuple]]``
    for every non-hidden relation.
    """
    from ndlog.reference import evaluate as _evaluate
    return _evaluate(program, facts, **options)


def __getattr__(name):
    # the engine is imported on first use, so that ``import psn`` stays light
    if name == "Network":
        from engine import Network
        return Network
    raise AttributeError(f"module 'psn' has no attribute {name!r}")


def localize(program, **options):
    """Rewrite a distributed program into a localized one (see :func:`localize.localize`)."""
    from localize import localize as _localize
    return _localize(program, **options)
