"""Compile NDlog terms and comparisons into Python closures over variable bindings.

Role: the one place where arithmetic, comparisons and builtin calls get their meaning, shared
by the reference evaluator and the PSN engine so that both compute identical values.
A compiled term is a function ``env -> value`` where ``env`` maps variable names to values.

Semantics (documented in ``docs/language.md``): ``+ - *`` as in Python on numbers;
``/`` divides, truncating toward zero when both operands are integers (as P2 and C do), and
``%`` is the matching remainder (its sign is the dividend's, as C's and Spark SQL's); ``==`` and
``!=`` compare any values; ordering comparisons need two numbers or two strings or two lists.
An operation whose result is not a number (``infinity - infinity``, ``0 * infinity``,
``infinity % 2``) or that meets an integer beyond the float range in float arithmetic is an
error: no value is ever a nan, so every value equals itself.

Deliberately not here: deciding *when* a literal can be evaluated (binding order is the
evaluators' business) and error positions beyond the term's own span.
"""

from __future__ import annotations

import math
import operator
from typing import Callable

from . import ast as A
from .builtins import (BEYOND_FLOATS, BUILTINS, NOT_A_NUMBER, BuiltinError, brief_value,
                       format_value, nestable)
from .errors import EvaluationError

__all__ = ["compile_term", "compile_compare", "eval_const_term", "CompiledTerm",
           "MAX_PRODUCT_BITS"]

CompiledTerm = Callable[[dict], object]


def _num(op: str, v, span):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise EvaluationError(f"operator '{op}' expects numbers, got {format_value(v, True)}",
                              span)
    return v


def _div(a, b):
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


def _mod(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a - b * _div(a, b)
    if b == 0:
        raise ZeroDivisionError
    if math.isinf(a):            # IEEE's remainder, a nan (refused by the caller); math.fmod
        return math.nan          # raises here
    return math.fmod(a, b)


_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": _div, "%": _mod}

#: The most bits a product of integers may have (about 315,653 decimal digits). Integer
#: arithmetic is exact, and a recursive rule that multiplies numbers by themselves
#: (``Y := Z * Z``) doubles their digits every round: it has no finite fixpoint, and runs
#: out of time long before memory (a multiplication of numbers of 2**25 bits takes tens
#: of seconds), so no memory ceiling would stop it; this bound stops it first, with an
#: error. Sums and differences grow by a bit a round at most, which the ceiling stops.
MAX_PRODUCT_BITS = 1 << 20


def compile_term(term: A.Term) -> CompiledTerm:
    """Return ``env -> value`` for ``term``.

    Raises :class:`~ndlog.errors.EvaluationError` at call time for type errors, division by
    zero and builtin failures, naming the term's position.
    """
    if isinstance(term, A.Const):
        value = term.value
        return lambda env: value
    if isinstance(term, A.Var):
        name = term.name
        return lambda env: env[name]
    if isinstance(term, A.ListExpr):
        items = [compile_term(t) for t in term.items]
        span = term.span

        def build(env):
            try:
                return tuple(nestable(f(env)) for f in items)
            except BuiltinError as exc:
                raise EvaluationError(str(exc), span) from None
        return build
    if isinstance(term, A.Neg):
        inner = compile_term(term.operand)
        span = term.span
        return lambda env: -_num("-", inner(env), span)
    if isinstance(term, A.BinOp):
        return _compile_binop(term)
    if isinstance(term, A.Call):
        return _compile_call(term)
    raise EvaluationError(f"aggregate {term.func}<...> is only allowed in a rule head",
                          term.span)


def _compile_binop(term: A.BinOp) -> CompiledTerm:
    left, right = compile_term(term.left), compile_term(term.right)
    fn, op, span = _ARITH[term.op], term.op, term.span
    product = op == "*"

    def run(env):
        a, b = _num(op, left(env), span), _num(op, right(env), span)
        try:
            r = fn(a, b)
        except ZeroDivisionError:
            raise EvaluationError(f"division by zero in {format_value(a)} {op} 0",
                                  span) from None
        except OverflowError:       # an integer beyond the float range met by a float
            raise EvaluationError(f"{brief_value(a)} {op} {brief_value(b)} {BEYOND_FLOATS}",
                                  span) from None
        if r != r:
            raise EvaluationError(f"{format_value(a)} {op} {format_value(b)} {NOT_A_NUMBER}",
                                  span)
        if product and type(r) is int and r.bit_length() > MAX_PRODUCT_BITS:
            raise EvaluationError(_too_large(a, b, r), span)
        return r
    return run


def _too_large(a, b, r) -> str:
    """The error of a product beyond :data:`MAX_PRODUCT_BITS`."""
    def brief(v) -> str:           # no decimal conversion of a huge integer (quadratic)
        return f"an integer of {v.bit_length():,} bits" if isinstance(v, int) and \
            v.bit_length() > 64 else brief_value(v)
    return (f"{brief(a)} * {brief(b)} has {r.bit_length():,} bits, more than "
            f"the {MAX_PRODUCT_BITS:,} a product may have: a recursive rule that multiplies "
            f"numbers by themselves doubles their digits every round and has no finite "
            f"fixpoint (bound it in the rule, e.g. Z < 1000000)")


def _compile_call(term: A.Call) -> CompiledTerm:
    fn = BUILTINS.get(term.name)
    if fn is None:
        raise EvaluationError(f"unknown builtin '{term.name}'", term.span)
    args = [compile_term(a) for a in term.args]
    span = term.span

    def run(env):
        try:
            return fn(*[a(env) for a in args])
        except BuiltinError as exc:
            raise EvaluationError(str(exc), span) from None
    return run


def _ordered(op, cmp, span):
    def run(a, b):
        try:
            return cmp(a, b)
        except TypeError:
            raise EvaluationError(f"cannot compare {format_value(a, True)} {op} "
                                  f"{format_value(b, True)}", span) from None
    return run


_CMP = {"==": operator.eq, "=": operator.eq, "!=": operator.ne, "<": operator.lt,
        "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def compile_compare(lit: A.Compare) -> Callable[[dict], bool]:
    """Return ``env -> bool`` for a comparison whose variables are all bound."""
    left, right = compile_term(lit.left), compile_term(lit.right)
    cmp = _CMP[lit.op]
    if lit.op not in ("==", "=", "!="):
        cmp = _ordered(lit.op, cmp, lit.span)
    return lambda env: bool(cmp(left(env), right(env)))


def eval_const_term(term: A.Term):
    """Evaluate a term without variables (used for facts and constant folding)."""
    return compile_term(term)({})
