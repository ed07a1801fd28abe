"""Static value kinds for the Spark reference: how dynamically typed NDlog values are held
in statically typed Spark columns.

Role: NDlog values are Python ``int``/``float``/``str``/``tuple`` (lists) and a column may
hold several of them (``pair(1, 2). pair(a, [b, c]).``). Spark columns have one type, so
the Spark evaluator splits every relation into *sub-relations*, one per **signature**: the
tuple of the kinds of its arguments. A kind is

==================  =====================  ==========================================
kind                NDlog values           Spark storage type
==================  =====================  ==========================================
``"long"``          integers               ``LongType``
``"double"``        floats, ``infinity``   ``DoubleType``
``"string"``        strings and symbols    ``StringType``
``("array", k)``    lists of kind ``k``    ``ArrayType(storage(k))``
``"null"``          no value at all        ``NullType`` (never holds a row)
==================  =====================  ==========================================

``nil`` is ``("array", "null")``: a list with no elements, which unifies with every list
(``NullType`` casts to every type, so ``nil`` in a column of lists of lists casts too; a
``StringType`` did not cast to an array type).
Integers and floats unify to ``"double"`` (``1 == 1.0`` in NDlog as in Python), and so do
lists of them where they are only compared. A single value keeps its kind:
:mod:`psn.batch.spark` splits rows by kind where a value's kind depends on the row. A list
whose elements mix integers and floats (``[1, 2.5]``), or numbers, strings or lists of
different kinds (``[1, a]``), has no kind (:func:`unify_held`): a column of floats would
turn its integers into floats. The Spark reference refuses such a list, and lists of
integers and lists of floats that one group or aggregate would hold together (documented
limit).

Deliberately not here: Spark expressions (see :mod:`psn.batch.spark`); this module imports
pyspark only inside :func:`storage`.
"""

from __future__ import annotations

from ndlog.builtins import format_value
from ndlog.errors import InputError

__all__ = ["LONG", "DOUBLE", "STRING", "NULL", "array", "is_array", "is_number", "elem",
           "kind_of", "unify", "unify_held", "storage", "to_storage", "from_storage",
           "from_json", "describe", "signature_of", "LONG_LIMIT"]

LONG, DOUBLE, STRING, NULL = "long", "double", "string", "null"
#: 2^63: the Spark reference holds integers in [-2^63, 2^63) (a column of longs)
LONG_LIMIT = 1 << 63


def array(k) -> tuple:
    """The kind of lists whose elements have kind ``k``."""
    return ("array", k)


def is_array(k) -> bool:
    """True if ``k`` is the kind of a list (``(ARRAY, element kind)``)."""
    return isinstance(k, tuple)


def elem(k):
    """Element kind of a list kind."""
    return k[1]


def is_number(k) -> bool:
    """True if ``k`` is a numeric kind (a long or a double)."""
    return k in (LONG, DOUBLE)


def unify(a, b):
    """The least kind holding both ``a`` and ``b`` values, or ``None`` if there is none."""
    if a == b:
        return a
    if a == NULL:
        return b
    if b == NULL:
        return a
    if is_number(a) and is_number(b):
        return DOUBLE
    if is_array(a) and is_array(b):
        e = unify(elem(a), elem(b))
        return None if e is None else array(e)
    return None


def unify_held(a, b):
    """The kind of one column that holds values of kinds ``a`` and ``b`` each as Python
    gives it, or ``None``: as :func:`unify`, except that no list holds integers and floats
    (as elements, or as lists of lists), since a column of lists of floats turns the
    integers into floats (``[1, 2.5]`` read back as ``[1.0, 2.5]``). Numbers outside lists
    still unify to ``DOUBLE``: where a position holds both, the Spark evaluator keeps each
    row's kind by a flag."""
    if is_array(a) and is_array(b):
        ea, eb = elem(a), elem(b)
        if is_number(ea) and is_number(eb) and ea != eb:
            return None
        e = unify_held(ea, eb)
        return None if e is None else array(e)
    return unify(a, b)


def kind_of(value):
    """The kind of one NDlog value.

    Raises
    ------
    InputError
        For a list mixing incompatible kinds, an integer beyond 64 bits, or a value that is
        not an NDlog value.
    """
    if isinstance(value, bool):
        return LONG
    if isinstance(value, int):
        if not -LONG_LIMIT <= value < LONG_LIMIT:
            raise InputError(f"the Spark reference holds 64-bit integers; {value} is too large")
        return LONG
    if isinstance(value, float):
        return DOUBLE
    if isinstance(value, str):
        return STRING
    if isinstance(value, (tuple, list)):
        k = NULL
        for v in value:
            u = unify_held(array(k), array(kind_of(v)))
            if u is None:
                raise InputError(
                    f"the Spark reference cannot hold the list {format_value(tuple(value))}: "
                    "its elements mix kinds (integers and floats, numbers, strings, lists)",
                    hint="use --engine python for lists with mixed element kinds")
            k = elem(u)
        return array(k)
    raise InputError(f"{value!r} is not an NDlog value")


def signature_of(row: tuple) -> tuple:
    """The kind of each value of ``row`` (:func:`kind_of`), as a tuple."""
    return tuple(kind_of(v) for v in row)


def storage(k):
    """The Spark SQL data type that holds values of kind ``k``."""
    from pyspark.sql import types as T
    if k == LONG:
        return T.LongType()
    if k == DOUBLE:
        return T.DoubleType()
    if is_array(k):
        return T.ArrayType(storage(elem(k)), containsNull=True)
    if k == NULL:
        return T.NullType()
    return T.StringType()


def to_storage(value, k):
    """The Python value Spark stores for ``value`` in a column of kind ``k``."""
    if k == LONG:
        return int(value)
    if k == DOUBLE:
        return float(value)
    if is_array(k):
        e = elem(k)
        return [to_storage(v, e) for v in value]
    if k == NULL:
        return None
    return value


def from_storage(value, k):
    """The NDlog (Python) value of a stored value: lists become tuples."""
    if is_array(k):
        e = elem(k)
        return tuple(from_storage(v, e) for v in value)
    return value


def from_json(value, k):
    """The NDlog value of a stored value read back from Spark's ``to_json`` text, where
    infinite and NaN doubles are the strings ``"Infinity"``, ``"-Infinity"``, ``"NaN"``."""
    if is_array(k):
        e = elem(k)
        return tuple(from_json(v, e) for v in value)
    if k == DOUBLE:
        return float(value)
    return value


def describe(k) -> str:
    """Human-readable kind, for error messages."""
    if is_array(k):
        return "a list" if elem(k) == NULL else f"a list of {_plural(elem(k))}"
    return {LONG: "integer", DOUBLE: "float", STRING: "string", NULL: "nothing"}[k]


def _plural(k) -> str:
    """``k`` described in the plural ("integers", "lists of floats")."""
    if is_array(k):
        return "lists" if elem(k) == NULL else f"lists of {_plural(elem(k))}"
    return describe(k) + "s"
