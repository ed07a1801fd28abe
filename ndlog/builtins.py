"""NDlog builtin functions and the value helpers they need.

Role: the single table of builtins (``f_concat``, ``f_member``, ...) shared by every
evaluator (the Python reference, the PSN engine; the Spark reference translates the same
names to Spark SQL). Lists are Python tuples; a scalar passed where a list is expected counts
as a one-element list (the P2 convention for ``f_concat``).

Deliberately not here: parsing of calls, checking that a called name exists (that is
:mod:`ndlog.checks`, which uses :data:`BUILTINS` and :data:`ARITY`), and error positions (the
caller wraps :class:`BuiltinError` with the rule's span).
"""

from __future__ import annotations

import math
import numbers
from typing import Callable

from .errors import InputError

__all__ = ["BUILTINS", "ARITY", "BuiltinError", "as_list", "format_value", "aggregate_value",
           "fact_values", "NOT_A_NUMBER", "BEYOND_FLOATS", "brief_value",
           "MAX_VALUE_NESTING", "nestable"]

#: The deepest a list value built at run time may nest (lists within lists; a list of
#: scalars nests one level). A recursive rule that wraps a list in a list every round
#: (``Y := [Z]``) has no finite fixpoint and grows memory too slowly for a ceiling to stop
#: it, while hashing ever deeper values costs ever more time and, some 100,000 levels
#: down, overflows the C stack (a crash); this bound stops it first, with an error.
MAX_VALUE_NESTING = 2000

#: the end of every error for a computed nan (``infinity - infinity``, ``0 * infinity``)
NOT_A_NUMBER = ("is not a number (nan), which NDlog refuses: a nan equals nothing, itself "
                "included, so a fact holding one could never be matched or deleted")

#: the end of every error for a value a float cannot hold (an integer beyond 1.8e308 met
#: by float arithmetic, a distance whose square overflows)
BEYOND_FLOATS = "is beyond the float range"


class _NotAValue(Exception):
    """A Python value that is not an NDlog value (carries it)."""


def _plain(v):
    """``v`` as an NDlog value: ``int``, ``float``, ``str`` or a tuple of them, with every
    list a tuple and any other number type (a bool, numpy's) converted to ``int`` or
    ``float``; raises :class:`_NotAValue` for anything else."""
    t = type(v)
    if t is int or t is str or t is float:
        return v
    if t is tuple or t is list:
        return tuple(_plain(x) for x in v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (list, tuple)):
        return tuple(_plain(x) for x in v)
    raise _NotAValue(v)


def fact_values(pred: str, row) -> tuple:
    """The values of a fact of ``pred`` given from Python (a tuple or list), as a fact
    holds them: integers, floats, strings, and every list in it a tuple. Other number
    types (a bool, numpy's) become ``int`` or ``float``.

    Raises
    ------
    InputError
        Naming the predicate and the value, for a value NDlog has no kind for (a set, a
        dict, ``None``, an object, ...), or a float nan, which equals nothing and so could
        never be deleted.
    """
    try:
        values = _plain(row)
    except _NotAValue as exc:
        bad = exc.args[0]
        raise InputError(f"a fact of '{pred}' has a value NDlog cannot hold: {bad!r:.80} (of "
                         f"type {type(bad).__name__})",
                         hint="values are numbers, strings and lists of them") from None
    if _has_nan(values):
        raise InputError(f"a fact of '{pred}' has a value NDlog cannot hold: nan",
                         hint="nan equals no value, itself included, so such a fact could "
                              "never be matched or deleted; use a string or a number")
    return values


def _has_nan(values: tuple) -> bool:
    """Whether a float nan is in ``values`` (tuples in tuples)."""
    return any(v != v if type(v) is float else type(v) is tuple and _has_nan(v)
               for v in values)


def aggregate_value(func: str, values: list):
    """``min`` / ``max`` / ``count`` / ``sum`` / ``avg`` over a non-empty list of values.

    The value depends only on the multiset of ``values``, never on their order, so every
    evaluator and every delivery order agrees: integers are summed exactly, and a sum that
    involves a float is the correctly rounded sum of the exact values (``math.fsum``), so
    ``0.1 + 0.2 + 0.3`` is ``0.6`` in any order and ``1e16 + 1 - 1e16`` is ``1.0``.
    """
    if func == "count":
        return len(values)
    if func == "min":
        return min(values)
    if func == "max":
        return max(values)
    if any(isinstance(v, float) for v in values):
        total = _float_sum(values)
        if total != total:
            raise BuiltinError(f"the sum of infinity and -infinity {NOT_A_NUMBER}")
    else:
        total = sum(values)
    if func == "sum":
        return total
    try:
        return total / len(values)
    except OverflowError:
        raise BuiltinError(f"the average of {brief_value(total)} over {len(values)} values "
                           f"{BEYOND_FLOATS}") from None


def _float_sum(values: list) -> float:
    """The correctly rounded sum of ``values``, whatever their order: IEEE's answer when a
    value is infinite (nan for both infinities), ``±inf`` when the exact sum is beyond the
    float range."""
    odd = [v for v in values if isinstance(v, float) and not math.isfinite(v)]
    if odd:
        return sum(odd)          # nan, or an infinity: the same in every order
    try:
        return math.fsum(values)
    except OverflowError:        # a partial sum overflowed: add exactly, round once
        from fractions import Fraction
        exact = sum(map(Fraction, values))
        try:
            return float(exact)
        except OverflowError:
            return math.inf if exact > 0 else -math.inf


class BuiltinError(ValueError):
    """A builtin applied to a value it cannot handle; the caller adds the position."""


def as_list(x) -> tuple:
    """A tuple for list values; a scalar becomes a one-element list."""
    return x if isinstance(x, tuple) else (x,)


def _need_list(name: str, x) -> tuple:
    if not isinstance(x, tuple):
        raise BuiltinError(f"{name} expects a list, got {format_value(x, True)}")
    return x


def _need_number(name: str, x):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise BuiltinError(f"{name} expects a number, got {format_value(x, True)}")
    return x


def nestable(x):
    """``x``, checked to fit as an item of a new list: a list that already nests
    :data:`MAX_VALUE_NESTING` levels is a :class:`BuiltinError`. Time in the size of
    ``x`` when it is a list (nothing otherwise), which a list holding ``x`` copies
    anyway at one level."""
    if isinstance(x, tuple):
        stack = [(x, 1)]
        while stack:
            value, depth = stack.pop()
            if depth >= MAX_VALUE_NESTING:
                raise BuiltinError(
                    f"a list nested more than {MAX_VALUE_NESTING:,} levels deep (lists "
                    "within lists): a recursive rule that puts a list inside a new list "
                    "every round has no finite fixpoint")
            stack.extend((item, depth + 1) for item in value if isinstance(item, tuple))
    return x


def f_concat(a, b):
    """The list ``a`` followed by ``b`` (a scalar counts as a one-element list)."""
    return as_list(a) + as_list(b)


def f_append(lst, x):
    """``lst`` with ``x`` added at the end."""
    return _need_list("f_append", lst) + (nestable(x),)


def f_prepend(x, lst):
    """``lst`` with ``x`` added at the front."""
    return (nestable(x),) + _need_list("f_prepend", lst)


def f_member(lst, x):
    """1 if ``x`` is an element of ``lst``, else 0."""
    return 1 if x in _need_list("f_member", lst) else 0


def f_size(lst):
    """The number of elements of ``lst``."""
    return len(_need_list("f_size", lst))


def f_first(lst):
    """The first element of a non-empty list."""
    lst = _need_list("f_first", lst)
    if not lst:
        raise BuiltinError("f_first of an empty list")
    return lst[0]


def f_last(lst):
    """The last element of a non-empty list."""
    lst = _need_list("f_last", lst)
    if not lst:
        raise BuiltinError("f_last of an empty list")
    return lst[-1]


def f_dist(p, q):
    """The Euclidean distance of two positions of the same dimension (sensor regions)."""
    p, q = _need_list("f_dist", p), _need_list("f_dist", q)
    if len(p) != len(q):
        raise BuiltinError(f"f_dist of positions of different dimension: {p} and {q}")
    for v in p + q:
        _need_number("f_dist", v)
    try:
        d = math.sqrt(sum((a - b) ** 2 for a, b in zip(p, q)))
    except OverflowError:       # a square past the float range, or an integer beyond it
        d = math.inf
    if d != d:                  # infinity - infinity
        raise BuiltinError(f"f_dist of {format_value(p)} and {format_value(q)} {NOT_A_NUMBER}")
    if d == math.inf and all(type(v) is int or math.isfinite(v) for v in p + q):
        raise BuiltinError(f"f_dist of {brief_value(p)} and {brief_value(q)} {BEYOND_FLOATS}")
    return d


def f_abs(x):
    """The absolute value of a number."""
    return abs(_need_number("f_abs", x))


def _ordered(name: str, a, b):
    try:
        a < b  # noqa: B015 - probe comparability
    except TypeError:
        raise BuiltinError(f"{name} cannot compare {format_value(a, True)} and "
                           f"{format_value(b, True)}")


def f_min(a, b):
    """The smaller of two comparable values."""
    _ordered("f_min", a, b)
    return a if a <= b else b


def f_max(a, b):
    """The larger of two comparable values."""
    _ordered("f_max", a, b)
    return a if a >= b else b


#: name -> implementation
BUILTINS: dict[str, Callable] = {
    "f_concat": f_concat, "f_append": f_append, "f_prepend": f_prepend,
    "f_member": f_member, "f_size": f_size, "f_first": f_first, "f_last": f_last,
    "f_dist": f_dist, "f_abs": f_abs, "f_min": f_min, "f_max": f_max,
}

#: name -> number of arguments
ARITY: dict[str, int] = {
    "f_concat": 2, "f_append": 2, "f_prepend": 2, "f_member": 2, "f_size": 1, "f_first": 1,
    "f_last": 1, "f_dist": 2, "f_abs": 1, "f_min": 2, "f_max": 2,
}


def brief_value(v) -> str:
    """:func:`format_value` for an error message, shortened past 60 characters: an
    integer is named by its number of digits, a list item by item."""
    text = format_value(v)
    if len(text) <= 60:
        return text
    if isinstance(v, int):
        return f"an integer of {len(text.lstrip('-'))} digits"
    if isinstance(v, tuple):
        return "[" + ", ".join(brief_value(x) for x in v) + "]"
    return text


def format_value(v, quoted: bool = False) -> str:
    """NDlog text for a value: symbols bare, other strings quoted, lists in brackets.

    With ``quoted``, every string is in double quotes, symbols too (error messages: "got
    a" would read as prose, "got \"a\"" cannot)."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        if v == float("inf"):
            return "infinity"
        if v == float("-inf"):
            return "-infinity"
        return repr(v)
    if isinstance(v, int):
        try:
            return str(v)
        except ValueError:  # past sys.get_int_max_str_digits(): 1000 digits at a time
            rest, chunks = abs(v), []
            while rest >= 10 ** 1000:
                rest, low = divmod(rest, 10 ** 1000)
                chunks.append(str(low).zfill(1000))
            return ("-" if v < 0 else "") + str(rest) + "".join(reversed(chunks))
    if isinstance(v, str):
        if _is_symbol(v) and not quoted:
            return v
        return '"' + (v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
                      .replace("\t", "\\t").replace("\r", "\\r")) + '"'
    if isinstance(v, tuple):
        if not v:
            return "nil"
        return "[" + ", ".join(format_value(x, quoted) for x in v) + "]"
    return repr(v)


_RESERVED = {"materialize", "keys", "infinity", "nil"}


def _is_symbol(s: str) -> bool:
    return (bool(s) and s[0].islower() and s.isascii()
            and all(c.isalnum() or c == "_" for c in s)
            and not s.startswith("f_") and s not in _RESERVED)
