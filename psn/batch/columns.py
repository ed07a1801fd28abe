"""NDlog terms and comparisons as Spark SQL column expressions, with their static kinds.

Role: give every arithmetic operator, comparison and builtin of :mod:`ndlog.expr` the same
meaning as a Spark SQL expression over the columns of a binding frame, so the Spark reference
computes what the Python reference computes. Each compiled term is a pair
``(Column, kind)`` (kinds: :mod:`psn.batch.kinds`). One Python UDF, ``f_dist`` of two
lists of integers (exact, as Python); otherwise lists use Spark's array functions
(``concat``, ``array_contains``, ``size``, ``element_at``, ``zip_with``, ``aggregate``,
``forall``, ``exists``), ``f_dist`` of floats is ``sqrt`` of a sum of squares,
``f_min``/``f_max`` are ``least``/``greatest``, integer ``/`` is Spark's ``div`` (truncates
toward zero, like :mod:`ndlog.expr`) and ``%`` is Spark's remainder (the dividend's sign,
like :mod:`ndlog.expr`).

Errors that Python raises while evaluating a row (a builtin on the wrong kind, division by
zero, an ordering comparison between a number and a string) become ``raise_error``
expressions: they fail the Spark job only if a row reaches them, exactly when Python would
raise; :class:`ErrorTable` maps them back to :class:`~ndlog.errors.EvaluationError` with the
term's position.

A term whose kind depends on the row (``f_min(X, 4.5)`` is ``X``, an integer, where ``X <=
4.5``, and the float ``4.5`` elsewhere) has no one column type: compiling it raises
:class:`Split`, and the caller splits its frame by the condition and compiles each part
with the term replaced by the argument it is there, so every value keeps Python's kind.

Deliberately not here: join planning and the fixpoint (:mod:`psn.batch.spark`).
"""

from __future__ import annotations

from typing import Callable

from ndlog import ast as A
from ndlog.builtins import BEYOND_FLOATS, NOT_A_NUMBER
from ndlog.errors import EvaluationError, Span
from . import kinds as K

__all__ = ["ErrorTable", "Split", "var_column", "compile_term", "compile_compare", "cast",
           "equal", "may_equal", "order", "rounds", "sign", "within_64_bits", "MARKER"]

#: prefix of raise_error messages, followed by the error's index in its ErrorTable
MARKER = "PSN-SPARK-ERROR#"


def var_column(name: str) -> str:
    """Frame column holding variable ``name`` (synthetic names start with ``%``)."""
    return ("s_" + name[1:]) if name.startswith("%") else ("v_" + name)


class ErrorTable:
    """Runtime errors registered while compiling, referenced from ``raise_error`` by index."""

    def __init__(self, source: str | None = None):
        self.source = source
        self.entries: list[tuple[str, Span | None]] = []

    def fail(self, message: str, span: Span | None):
        """A Spark expression that raises ``message`` when evaluated on a row."""
        from pyspark.sql import functions as F
        self.entries.append((message, span))
        return F.raise_error(F.lit(f"{MARKER}{len(self.entries) - 1}#"))

    def translate(self, exc: BaseException) -> EvaluationError | None:
        """The EvaluationError behind a Spark exception raised by :meth:`fail`, if any."""
        text = str(exc)
        at = text.find(MARKER)
        if at < 0:
            return None
        digits = text[at + len(MARKER):].split("#", 1)[0]
        if not digits.isdigit() or int(digits) >= len(self.entries):
            return None
        message, span = self.entries[int(digits)]
        return EvaluationError(message, span, self.source)


class Split(Exception):
    """Compiling met a term whose kind depends on the row: ``f_min``/``f_max`` of an integer
    and a float is the integer in some rows and the float in others.

    A column has one type, so the caller splits its frame in two: the rows where
    ``cond`` holds, where ``node`` is ``first`` (its first argument, kind and all), and the
    others, where it is ``second``; it then compiles again with ``node`` replaced by the
    argument it is in each (the ``subst`` of :func:`compile_term`).
    """

    def __init__(self, node: A.Term, cond, first: A.Term, second: A.Term):
        super().__init__(node)
        self.node, self.cond, self.first, self.second = node, cond, first, second


def cast(col, k):
    """``col`` as stored for kind ``k``."""
    return col.cast(K.storage(k))


def may_equal(ka, kb) -> bool:
    """Whether a value of kind ``ka`` can equal one of kind ``kb``: where the kinds unify,
    and between lists of any kinds, which are equal where they are empty (a column of
    lists of integers can hold ``[]``, and so can one of lists of strings)."""
    return K.unify(ka, kb) is not None or (K.is_array(ka) and K.is_array(kb))


def equal(a, ka, b, kb):
    """A boolean Column: ``a`` (of kind ``ka``) equals ``b`` (of kind ``kb``) as in Python,
    where they may be equal (:func:`may_equal`; a caller tests that). An integer equals a
    float only where the float is a whole number within 64 bits equal to it as an
    integer: a cast of the integer to a float would round integers beyond 2^53, and make
    ``2**53 + 1`` equal ``2.0**53``. That cast's equality is kept as a first conjunct,
    which Spark can join on by hashing. Lists of integers and lists of floats are compared
    element by element the same way (``[2**53 + 1]`` is not ``[2.0**53]``), and so are
    lists whose kinds do not unify (``[[], [1]]`` and ``[[], ["a"]]`` differ, their first
    elements are equal)."""
    from pyspark.sql import functions as F
    u = K.unify(ka, kb)
    if u is None:
        if not (K.is_array(ka) and K.is_array(kb)):
            return F.lit(False)
        return (F.size(a) == F.size(b)) & _each_equal(a, ka, b, kb)
    if {ka, kb} != {K.LONG, K.DOUBLE}:
        same = cast(a, u) == cast(b, u)
        return same & _each_equal(a, ka, b, kb) if rounds(ka, kb) else same
    i, d = (a, b) if ka == K.LONG else (b, a)
    return (i.cast("double") == d) & F.when(within_64_bits(d), d.cast("long") == i) \
        .otherwise(F.lit(False))


def _each_equal(a, ka, b, kb):
    """A boolean Column: the lists ``a`` and ``b`` (of kinds ``ka``, ``kb``) are equal
    element by element (:func:`equal`), where they are of one length."""
    from pyspark.sql import functions as F
    ea, eb = K.elem(ka), K.elem(kb)
    return F.forall(F.zip_with(a, b, lambda x, y: equal(x, ea, y, eb)), lambda t: t)


def rounds(ka, kb) -> bool:
    """Whether values of kinds ``ka`` and ``kb`` meet as floats when cast to their unified
    kind: an integer and a float, or lists (of lists ...) of them."""
    if {ka, kb} == {K.LONG, K.DOUBLE}:
        return True
    return K.is_array(ka) and K.is_array(kb) and rounds(K.elem(ka), K.elem(kb))


#: what :func:`sign` gives for two values Python cannot order (it raises a TypeError)
INCOMPARABLE = 2


def sign(a, ka, b, kb):
    """An integer Column: -1, 0 or 1 as ``a`` (of kind ``ka``) is below, equal to or above
    ``b`` (of kind ``kb``) in Python's order (numbers, strings, lists of them): exact
    between integers and floats (:func:`order`), and lexicographic for lists, element by
    element the same way; :data:`INCOMPARABLE` where Python cannot order them. Lists whose
    kinds do not unify (``[[], [1]]`` and ``[["a"]]``) are ordered until a pair of their
    elements is incomparable, as in Python (``[] < ["a"]`` decides that one)."""
    from pyspark.sql import functions as F
    if {ka, kb} == {K.LONG, K.DOUBLE}:
        return order(a, b) if ka == K.LONG else -order(b, a)
    u = K.unify(ka, kb)
    if u is None and not (K.is_array(ka) and K.is_array(kb)):
        return F.lit(INCOMPARABLE)
    if u is None or rounds(ka, kb):
        ea, eb = K.elem(ka), K.elem(kb)
        # zip_with pads the shorter list with nulls: past it, the lengths decide
        signs = F.zip_with(a, b, lambda x, y: F.when(x.isNull() | y.isNull(), F.lit(0))
                           .otherwise(sign(x, ea, y, eb)))
        first = F.aggregate(signs, F.lit(0), lambda acc, s: F.when(acc != 0, acc)
                            .otherwise(s))
        longer = F.signum(F.size(a) - F.size(b)).cast("int")
        return F.when(first != 0, first).otherwise(longer)
    x, y = cast(a, u), cast(b, u)
    return F.when(x < y, F.lit(-1)).when(x > y, F.lit(1)).otherwise(F.lit(0))


def within_64_bits(d):
    """A boolean Column: the float ``d`` lies where a 64-bit integer can hold its whole
    part (so that casting it to an integer neither overflows nor saturates)."""
    return (d >= -float(K.LONG_LIMIT)) & (d < float(K.LONG_LIMIT))


def order(i, d):
    """An integer Column: the sign of ``i - d`` for an integer ``i`` and a float ``d`` (never
    a nan: no value is one), exactly as Python compares them. A cast of the integer to a float would
    round integers beyond 2^53, so that ``2**53 + 1 > 2.0**53`` was false: the integer is
    compared with the float's floor instead (a float beyond 64 bits, or infinite, is
    beyond every integer)."""
    from pyspark.sql import functions as F
    inside = within_64_bits(d)
    floor = F.floor(F.when(inside, d).otherwise(F.lit(0.0))).cast("long")
    return (F.when(~inside, F.when(d > 0, F.lit(-1)).otherwise(F.lit(1)))
            .when(i < floor, F.lit(-1)).when(i > floor, F.lit(1))
            .when(floor.cast("double") == d, F.lit(0)).otherwise(F.lit(-1)))


class _Compiler:
    """Compile terms over a frame whose variables have the kinds in ``kinds``."""

    def __init__(self, kinds: dict[str, object], errors: ErrorTable, subst=None):
        from pyspark.sql import functions as F
        self.F = F
        self.kinds = kinds
        self.errors = errors
        self.subst = subst or {}

    # -- terms ---------------------------------------------------------------------------
    def term(self, t: A.Term):
        F = self.F
        if id(t) in self.subst:
            return self.term(self.subst[id(t)])
        if isinstance(t, A.Var):
            return F.col(var_column(t.name)), self.kinds[t.name]
        if isinstance(t, A.Const):
            return self.const(t.value, t.span)
        if isinstance(t, A.ListExpr):
            return self.list_expr(t)
        if isinstance(t, A.Neg):
            c, k = self.term(t.operand)
            if not K.is_number(k):
                return self._bad(f"operator '-' expects numbers, got {K.describe(k)}", t.span)
            if k == K.LONG:
                return self._no_overflow(t, "-", self.F.try_subtract(self.F.lit(0), c)), k
            return -c, k
        if isinstance(t, A.BinOp):
            return self.binop(t)
        if isinstance(t, A.Call):
            return self.call(t)
        raise EvaluationError(f"aggregate {t.func}<...> is only allowed in a rule head",
                              t.span)

    def _bad(self, message: str, span):
        return self.errors.fail(message, span), K.NULL

    def _no_overflow(self, t, op: str, exact):
        """``exact`` (an integer result that is null where it leaves 64 bits), failing where
        it is null: Python's integers have no bound, so the result differs there; Spark's
        own overflow error is raw Java text suggesting to turn ANSI mode off."""
        too_large = self.errors.fail(
            f"integer overflow in '{op}': the result exceeds 64 bits; the Spark reference "
            "holds 64-bit integers (use --engine python)", t.span)
        return self.F.when(exact.isNull(), too_large.cast("long")).otherwise(exact)

    def const(self, value, span):
        F = self.F
        k = K.kind_of(value)
        if K.is_array(k):
            items = [cast(self.const(v, span)[0], K.elem(k)) for v in value]
            return cast(F.array(*items), k), k
        return cast(F.lit(value), k), k

    def list_expr(self, t: A.ListExpr):
        parts = [self.term(i) for i in t.items]
        k = K.NULL
        for _, pk in parts:
            u = K.unify_held(K.array(k), K.array(pk))
            if u is None:
                raise EvaluationError(
                    "the Spark reference cannot build a list mixing "
                    f"{K.describe(k)} and {K.describe(pk)} elements (use --engine python)",
                    t.span)
            k = K.elem(u)
        return self.F.array(*[cast(c, k) for c, _ in parts]), K.array(k)

    def binop(self, t: A.BinOp):
        F = self.F
        (a, ka), (b, kb) = self.term(t.left), self.term(t.right)
        for k in (ka, kb):
            if not K.is_number(k):
                return self._bad(f"operator '{t.op}' expects numbers, got {K.describe(k)}",
                                 t.span)
        k = K.unify(ka, kb)
        a, b = cast(a, k), cast(b, k)
        if t.op in ("+", "-", "*"):
            if k == K.LONG:
                exact = {"+": F.try_add, "-": F.try_subtract, "*": F.try_multiply}[t.op]
                return self._no_overflow(t, t.op, exact(a, b)), k
            return self._a_number(t, {"+": a + b, "-": a - b, "*": a * b}[t.op]), k
        zero = self.errors.fail(f"division by zero in {t.op}", t.span)
        if t.op == "/":
            if k == K.LONG:  # the one quotient beyond 64 bits: -2^63 / -1
                q = self._no_overflow(t, "/", F.when((a == -K.LONG_LIMIT) & (b == -1), None)
                                      .otherwise(F.call_function("div", a, b)))
            else:
                q = self._a_number(t, a / b)
            return F.when(b == 0, zero).otherwise(q), k
        # the remainder has the dividend's sign in Spark SQL and in ndlog.expr (math.fmod)
        r = a % b if k == K.LONG else self._a_number(t, a % b)
        return F.when(b == 0, zero).otherwise(r), k

    def _a_number(self, t: A.BinOp, r):
        """The float ``r``, failing where it is a nan (``infinity - infinity``), which
        :mod:`ndlog.expr` refuses."""
        nan = self.errors.fail(f"the result of '{t.op}' {NOT_A_NUMBER}", t.span)
        return self.F.when(self.F.isnan(r), nan.cast("double")).otherwise(r)

    # -- builtins ------------------------------------------------------------------------
    def call(self, t: A.Call):
        handler: Callable | None = getattr(self, "_" + t.name, None)
        if handler is None:
            raise EvaluationError(f"unknown builtin '{t.name}'", t.span)
        args = [self.term(a) for a in t.args]
        return handler(t, *args)

    def _as_list(self, c, k):
        return (c, k) if K.is_array(k) else (self.F.array(c), K.array(k))

    def _join_lists(self, t, parts):
        k = K.array(K.NULL)
        for _, pk in parts:
            u = K.unify_held(k, pk)
            if u is None:
                raise EvaluationError(
                    f"{t.name}: the Spark reference cannot build a list mixing "
                    f"{K.describe(K.elem(k))} and {K.describe(K.elem(pk))} elements "
                    "(use --engine python)", t.span)
            k = u
        return self.F.concat(*[cast(c, k) for c, _ in parts]), k

    def _f_concat(self, t, a, b):
        return self._join_lists(t, [self._as_list(*a), self._as_list(*b)])

    def _need_list(self, t, k):
        if K.is_array(k):
            return None
        return self._bad(f"{t.name} expects a list, got {K.describe(k)}", t.span)

    def _item(self, c, k):
        """The one-element list of ``c``: a list is one element too, unlike in f_concat."""
        return self.F.array(c), K.array(k)

    def _f_append(self, t, lst, x):
        return self._need_list(t, lst[1]) or self._join_lists(t, [lst, self._item(*x)])

    def _f_prepend(self, t, x, lst):
        return self._need_list(t, lst[1]) or self._join_lists(t, [self._item(*x), lst])

    def _f_member(self, t, lst, x):
        F = self.F
        bad = self._need_list(t, lst[1])
        if bad:
            return bad
        e = K.elem(lst[1])
        u = K.unify(e, x[1])
        if not may_equal(e, x[1]):  # no element can equal x
            return F.lit(0).cast("long"), K.LONG
        if u is None or rounds(e, x[1]):  # an integer and a float: exactly
            hit = F.exists(lst[0], lambda v: equal(v, e, x[0], x[1]))
        else:
            hit = F.array_contains(cast(lst[0], K.array(u)), cast(x[0], u))
        return hit.cast("long"), K.LONG

    def _f_size(self, t, lst):
        return self._need_list(t, lst[1]) or (self.F.size(lst[0]).cast("long"), K.LONG)

    def _end(self, t, lst, index):
        F = self.F
        bad = self._need_list(t, lst[1])
        if bad:
            return bad
        empty = self.errors.fail(f"{t.name} of an empty list", t.span)
        if K.elem(lst[1]) == K.NULL:
            return empty, K.NULL
        k = K.elem(lst[1])
        value = F.when(F.size(lst[0]) == 0, cast(empty, k)).otherwise(
            F.element_at(lst[0], index))
        return value, k

    def _f_first(self, t, lst):
        return self._end(t, lst, 1)

    def _f_last(self, t, lst):
        return self._end(t, lst, -1)

    def _f_dist(self, t, p, q):
        F = self.F
        for c, k in (p, q):
            if not (K.is_array(k) and (K.is_number(K.elem(k)) or K.elem(k) == K.NULL)):
                return self._bad(f"f_dist expects a list of numbers, got {K.describe(k)}",
                                 t.span)
        a, b = cast(p[0], K.array(K.DOUBLE)), cast(q[0], K.array(K.DOUBLE))
        if K.DOUBLE not in (K.elem(p[1]), K.elem(q[1])):
            # integers: Python squares their exact differences and rounds the sum once,
            # a cast to floats first would round beyond 2^53 ([2**53 + 1] and [2**53])
            d = _integer_distance()(cast(p[0], K.array(K.LONG)), cast(q[0], K.array(K.LONG)))
        else:
            squares = F.zip_with(a, b, lambda x, y: (x - y) * (x - y))
            d = F.sqrt(F.aggregate(squares, F.lit(0.0), lambda acc, x: acc + x))
        bad = self.errors.fail("f_dist of positions of different dimension", t.span)
        nan = self.errors.fail(f"f_dist {NOT_A_NUMBER}", t.span)
        beyond = self.errors.fail(f"f_dist {BEYOND_FLOATS}", t.span)
        finite = F.forall(F.concat(a, b), lambda x: F.abs(x) < float("inf"))
        return (F.when(F.size(a) != F.size(b), bad).when(F.isnan(d), nan)
                .when((d == float("inf")) & finite, beyond).otherwise(d)), K.DOUBLE

    def _f_abs(self, t, x):
        if not K.is_number(x[1]):
            return self._bad(f"f_abs expects a number, got {K.describe(x[1])}", t.span)
        if x[1] == K.LONG:
            F = self.F
            return self._no_overflow(t, "f_abs", F.when(x[0] == -K.LONG_LIMIT, None)
                                     .otherwise(F.abs(x[0]))), x[1]
        return self.F.abs(x[0]), x[1]

    def _extreme(self, t, a, b, fn, first_wins):
        k = K.unify(a[1], b[1])
        kinds = (a[1], b[1])
        lists = all(map(K.is_array, kinds))
        message = f"{t.name} cannot compare {K.describe(a[1])} and {K.describe(b[1])}"
        if (k is None and not lists) or k == K.NULL:
            return self._bad(message, t.span)
        if k is None or rounds(*kinds):  # an integer and a float, or lists of them, or
            # lists of kinds that do not unify: which the result is, and so its kind,
            # depends on the row; they are compared exactly
            s = sign(a[0], kinds[0], b[0], kinds[1])
            wins = first_wins(s, self.F.lit(0))
            if k is None:   # Python raises where the lists are not ordered
                fail = self.errors.fail(message, t.span)
                wins = self.F.when(s == INCOMPARABLE, fail.cast("boolean")).otherwise(wins)
            raise Split(t, wins, *t.args)
        return fn(cast(a[0], k), cast(b[0], k)), k

    def _f_min(self, t, a, b):
        return self._extreme(t, a, b, self.F.least, lambda x, y: x <= y)

    def _f_max(self, t, a, b):
        return self._extreme(t, a, b, self.F.greatest, lambda x, y: x >= y)

    # -- comparisons ---------------------------------------------------------------------
    def compare(self, lit: A.Compare):
        F = self.F
        (a, ka), (b, kb) = self.term(lit.left), self.term(lit.right)
        k = K.unify(ka, kb)
        if lit.op in ("==", "=", "!="):
            if not may_equal(ka, kb):  # values of different kinds are never equal
                return F.lit(lit.op == "!=")
            same = equal(a, ka, b, kb)
            return ~same if lit.op == "!=" else same
        fail = self.errors.fail(f"cannot compare {K.describe(ka)} {lit.op} "
                                f"{K.describe(kb)}", lit.span)
        if k is None and not (K.is_array(ka) and K.is_array(kb)):
            return fail.isNull()
        if k is None or rounds(ka, kb):   # exactly, as Python compares them
            s = sign(a, ka, b, kb)
            x, y = F.when(s == INCOMPARABLE, fail.cast("int")).otherwise(s), F.lit(0)
        else:
            x, y = cast(a, k), cast(b, k)
        return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[lit.op]


_INTEGER_DISTANCE = []   # the UDF of _integer_distance, made on first use


def _integer_distance():
    """A Spark UDF: ``f_dist`` of two lists of integers as :func:`ndlog.builtins.f_dist`
    computes it, the squares of the exact differences summed exactly and the sum rounded
    once (Spark's own arithmetic would work in floats or overflow 64 bits). Defined in
    here so that Spark ships it by value: executors need only the standard library."""
    if not _INTEGER_DISTANCE:
        from pyspark.sql import functions as F, types as T

        def distance(p, q):
            import math
            return math.sqrt(sum((a - b) ** 2 for a, b in zip(p, q)))

        _INTEGER_DISTANCE.append(F.udf(distance, T.DoubleType(), useArrow=False))
    return _INTEGER_DISTANCE[0]


def compile_term(term: A.Term, kinds: dict, errors: ErrorTable, subst=None):
    """``(Column, kind)`` computing ``term`` over a frame with variable kinds ``kinds``.

    ``subst`` maps ``id(node)`` of subterms to the term they are in the frame's rows (an
    argument chosen by a :class:`Split`).

    Raises
    ------
    Split
        Where a subterm not in ``subst`` has a kind that depends on the row.

    Notes
    -----
    Same semantics as :func:`ndlog.expr.compile_term` (docs/language.md, "Builtins");
    values whose kinds Python would reject at run time compile to ``raise_error``.
    """
    return _Compiler(kinds, errors, subst).term(term)


def compile_compare(lit: A.Compare, kinds: dict, errors: ErrorTable, subst=None):
    """A boolean Column testing ``lit`` (same semantics as
    :func:`ndlog.expr.compile_compare`; ``subst`` and :class:`Split` as in
    :func:`compile_term`)."""
    return _Compiler(kinds, errors, subst).compare(lit)
