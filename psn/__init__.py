"""PSN: pipelined semi-naive evaluation of network Datalog (NDlog).

Role: the public Python API, the top of the layering (language ``ndlog`` -> ``engine`` ->
transports -> ``psn``). ``parse``/``load`` read NDlog (with static checks), ``evaluate`` runs
the centralized reference evaluator, ``localize`` rewrites a distributed program so that
every rule body lives at one node, and one run of PSN is any of :class:`Network` (in
memory), :class:`Simulation` (the simulator) or :class:`RayNetwork` (Ray actors), all taking
the same :class:`RunOptions`. ``verify`` checks that a program is correct under every
delivery order of a scope (:mod:`psn.verify`).

Deliberately not here: any heavy import. The engine, the simulator, Ray and Spark are
imported on first use, so ``import psn`` stays fast.
"""

from __future__ import annotations

from ndlog.errors import (EvaluationError, InputError, LocalizationError, NDlogSemanticError,
                          NDlogSyntaxError, PSNError, Span)
from ndlog.parser import as_program, load, parse

__all__ = [
    "parse", "load", "evaluate", "localize", "Network", "Simulation", "RayNetwork",
    "RunOptions", "verify",
    "PSNError", "NDlogSyntaxError", "NDlogSemanticError", "LocalizationError",
    "EvaluationError", "InputError", "Span",
]

__version__ = "0.1.0"


def evaluate(program, facts=None, *, max_memory=None, aggsel=True, hidden=False):
    """Evaluate ``program`` centrally with synchronous semi-naive evaluation.

    ``program`` is a parsed program or NDlog text (parsed and checked here, as
    :class:`Network` does). ``facts`` are checked against it as :class:`Network` checks
    them: a predicate the program neither uses nor declares (``materialize``), or a tuple
    of another arity, is an :class:`InputError` naming it (so a misspelt predicate is not
    an empty result). ``max_memory`` is a ceiling on the process's resident memory in
    bytes, as a run's (None: three quarters of the machine's memory, or of a lower
    container or ``ulimit -v`` limit; 0: none), checked after every rule firing and every
    1,024 tuples within one: past it the evaluation stops with an :class:`EvaluationError`
    (``engine.guards.MemoryLimitError``) naming the round and the predicates, instead of
    running a program without a finite fixpoint until the machine runs out of memory. See
    :func:`ndlog.reference.evaluate` for the other parameters (``aggsel``: True, False or a
    mode; ``hidden``: True or False); returns ``dict[str, set[tuple]]`` for every
    non-hidden relation.
    """
    from engine.options import require_flag
    from ndlog.analysis import aggsel_mode
    from ndlog.reference import evaluate as _evaluate

    from .oracle import checked_facts, memory_ceiling
    guard = memory_ceiling(max_memory)
    aggsel_mode(aggsel)
    require_flag(hidden, "hidden")
    program = as_program(program)
    if facts is not None:
        facts = checked_facts(program, facts)
    return _evaluate(program, facts, aggsel=aggsel, hidden=hidden, guard=guard)


_LAZY = {"Network": "engine", "RunOptions": "engine", "Simulation": "sim",
         "RayNetwork": "psn.distributed", "verify": "psn.verify"}


def __getattr__(name):
    # imported on first use, so that ``import psn`` stays light
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'psn' has no attribute {name!r}")
    import importlib
    found = importlib.import_module(module)
    if found.__name__ == f"{__name__}.{name}":       # psn.verify: a callable module
        return found
    return getattr(found, name)


def localize(program, **options):
    """Rewrite a distributed program, NDlog text or a parsed program, into a localized one
    (see :func:`localize.localize`)."""
    from localize import localize as _localize
    return _localize(as_program(program), **options)
