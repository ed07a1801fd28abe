"""The NDlog language core: syntax tree, parser, static checks, expressions and built-ins.

Role: everything PSN knows about the language itself, independent of how a program runs.
:mod:`ndlog.parser` reads NDlog text (grammar in ``ndlog.lark``) into the immutable
:class:`ndlog.ast.Program`; :mod:`ndlog.checks` and :mod:`ndlog.analysis` are the static
checks and the program analyses (dependency graph, strata, aggregate selection);
:mod:`ndlog.expr` compiles terms and comparisons; :mod:`ndlog.builtins` holds the built-in
functions and the aggregate values; :mod:`ndlog.errors` is the one exception root
(:class:`ndlog.errors.PSNError`) with source positions.

Deliberately not here: any evaluation strategy (the reference evaluator, the PSN engine,
Spark), localization, annotations, transports. This package imports nothing else of the
project; every other package builds on it.
"""

from __future__ import annotations

from .errors import (EvaluationError, InputError, LocalizationError, NDlogSemanticError,
                     NDlogSyntaxError, PSNError, Span)
from .parser import load, parse

__all__ = ["parse", "load", "PSNError", "NDlogSyntaxError", "NDlogSemanticError",
           "LocalizationError", "EvaluationError", "InputError", "Span"]
