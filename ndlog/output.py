"""Rendering relations and reading fact files, shared by every CLI subcommand.

Role: turn ``dict[str, set[tuple]]`` into a table, JSON or CSV, and read facts given on the
command line (NDlog fact statements, or CSV rows of the predicate named by the file). Every
bad facts file ends in an :class:`~ndlog.errors.InputError` (or a syntax error) naming the
file, line and column: unreadable or non-UTF-8 files, CSV rows of unequal width, over-long
fields or integers, and facts whose arity or ``@`` position disagrees with the program's or
with earlier facts (:class:`ndlog.parser.FactShapes`).

Deliberately not here: evaluation, argument parsing.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path
from typing import Iterable, Mapping

from ndlog.builtins import format_value
from ndlog.errors import EvaluationError, InputError, Span
from ndlog.text import count_noun

__all__ = ["select_relations", "sort_key", "sorted_tuples", "relations_to_json", "render_relations",
           "read_facts_file", "read_facts_files", "jsonable", "program_locations",
           "program_shapes"]


def sort_key(value):
    """A total order over NDlog values of mixed types (numbers < strings < lists)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, value, "")
    if isinstance(value, str):
        return (1, 0, value)
    if isinstance(value, tuple):
        return (2, 0, tuple(sort_key(v) for v in value))
    return (3, 0, repr(value))


def sorted_tuples(rows: Iterable[tuple]) -> list[tuple]:
    """``rows`` sorted in the one order every printed relation uses
    (:func:`sort_key` per value: numbers before strings, lists by their elements).

    Parameters
    ----------
    rows:
        Tuples of one relation.

    Returns
    -------
    list
        The tuples, sorted.
    """
    return sorted(rows, key=lambda t: tuple(sort_key(v) for v in t))


def jsonable(value):
    """JSON form of a value: lists for tuples, ``"infinity"`` for infinite floats, and a
    string of its digits for an integer longer than ``sys.get_int_max_str_digits()`` (which
    neither ``json.dumps`` nor ``json.loads`` handle as a number)."""
    if isinstance(value, tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "infinity" if value > 0 else "-infinity"
    limit = sys.get_int_max_str_digits()
    # at most 3 * limit bits means at most 0.91 * limit digits: no decimal conversion needed
    if isinstance(value, int) and limit and value.bit_length() > 3 * limit:
        text = format_value(value)
        return text if len(text.lstrip("-")) > limit else value
    return value


def _too_deep() -> EvaluationError:
    return EvaluationError(
        "a result value is nested too deeply to print (lists within lists, hundreds of "
        "levels deep)", hint="bound the recursion that builds the nested lists")


def select_relations(relations: dict[str, set], names) -> dict[str, set]:
    """The named relations (all of them when ``names`` is empty).

    Raises
    ------
    InputError
        Naming the unknown relations and listing the program's.
    """
    if not names:
        return relations
    unknown = [r for r in names if r not in relations]
    if unknown:
        raise InputError(f"no relation named {', '.join(map(repr, unknown))}; "
                         f"the program has {', '.join(sorted(relations))}")
    return {r: relations[r] for r in names}


def relations_to_json(relations: dict[str, set]) -> dict[str, list]:
    """``relation -> sorted list of jsonable tuples``.

    Raises
    ------
    EvaluationError
        If a value is nested too deeply for Python's recursion limit.
    """
    try:
        return {name: [jsonable(t) for t in sorted_tuples(rows)]
                for name, rows in sorted(relations.items())}
    except RecursionError:
        raise _too_deep() from None


def render_relations(relations: dict[str, set], fmt: str = "table") -> str:
    """Render relations as ``table`` (each relation's name and size, then its tuples),
    ``json`` or ``csv`` (a header ``relation,arg1,...,argK`` for the widest relation, then
    one row per tuple: its relation and its values, so a narrower relation's rows are
    shorter; a string is written as its text where the CSV facts reader reads that text
    back as the same string, else as its NDlog literal, e.g. ``"12"``).

    Raises
    ------
    EvaluationError
        If a value is nested too deeply for Python's recursion limit.
    """
    try:
        return _render(relations, fmt)
    except RecursionError:
        raise _too_deep() from None


def _render(relations: dict[str, set], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(relations_to_json(relations), indent=None, sort_keys=True)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        width = max((len(t) for rows in relations.values() for t in rows), default=0)
        w.writerow(["relation"] + [f"arg{i}" for i in range(1, width + 1)])
        for name, rows in sorted(relations.items()):
            for t in sorted_tuples(rows):
                w.writerow([name] + [_csv_cell(v) for v in t])
        return buf.getvalue().rstrip("\n")
    out = []
    for name, rows in sorted(relations.items()):
        out.append(f"{name} ({count_noun(len(rows), 'tuple')})")
        for t in sorted_tuples(rows):
            out.append(f"  {name}(" + ", ".join(format_value(v) for v in t) + ")")
    return "\n".join(out)


def _csv_cell(v) -> str:
    """A value as a CSV field: a string as its own text when :func:`_csv_value` reads that
    text back as the same string (a literal's quotes came back as part of the string),
    anything else as NDlog writes it."""
    if isinstance(v, str) and v and v == v.strip() and not _CSV_INT.fullmatch(v) \
            and _csv_value(v, None, "") == v:
        return v
    return format_value(v)


def program_locations(program) -> dict[str, int | None]:
    """``predicate -> 0-based index of its '@' argument`` (None where it has none) in a
    parsed program: the ``locations`` that :func:`read_facts_file` and the burst readers
    check facts against, next to ``program.arities()``."""
    out: dict[str, int | None] = {}
    for atom in program.atoms():
        out.setdefault(atom.pred, atom.loc)
    return out


def program_shapes(program) -> dict:
    """``{"arities": ..., "locations": ...}`` of a parsed program: the keyword arguments
    with which :func:`read_facts_files` and the burst readers check facts against it (an
    unknown predicate, a wrong arity or a misplaced ``@`` is an error at the fact). A table
    the program declares (``materialize``) but no rule or fact uses has arity None: its
    facts must agree with the first one."""
    arities: dict[str, int | None] = dict.fromkeys(program.predicates)
    arities.update(program.arities())
    return {"arities": arities, "locations": program_locations(program)}


#: numbers in a CSV field: NDlog's integer and decimal forms, with an optional sign
_CSV_INT = re.compile(r"[+-]?[0-9]+")
_CSV_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: a CSV header field: a name as NDlog variables are written
_CSV_HEADER = re.compile(r"[A-Z_][A-Za-z0-9_]*")


def _csv_value(text: str, where, source: str):
    """The value of one CSV field; ``where()`` is the Span of the field and ``source`` the
    file's text, for errors."""
    s = text.strip()
    if _CSV_INT.fullmatch(s):
        try:
            return int(s)
        except ValueError:  # past sys.get_int_max_str_digits()
            raise InputError(f"integer too long: {len(s.lstrip('+-'))} digits, at most "
                             f"{sys.get_int_max_str_digits()}", where(), source) from None
    if _CSV_FLOAT.fullmatch(s):
        return float(s)
    if s in ("infinity", "-infinity"):
        return float(s.replace("infinity", "inf"))
    if len(s) >= 2 and s[0] == s[-1] == '"' and not any(c in s[1:-1] for c in '"\\'):
        return s[1:-1]              # a plain string literal: "12" is the string 12
    return s


def _is_csv_header(row: list[str]) -> bool:
    return all(_CSV_HEADER.fullmatch(field.strip()) for field in row)


def _field_column(line: str, field: str) -> int:
    found = line.find(field.strip()) if field.strip() else -1
    return found + 1 if found >= 0 else 1


def _csv_rows(text: str, path: str):
    """``(line, row)`` for each record of a CSV text, ``line`` where the record starts."""
    reader = csv.reader(io.StringIO(text))
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            msg = f"bad CSV: {exc}"
            if "field limit" in msg:
                msg = (f"a CSV field is longer than {csv.field_size_limit()} characters "
                       "(the CSV reader's limit)")
            raise InputError(msg, Span(start, 1, path), text) from None
        yield start, row
        start = reader.line_num + 1


def _read_csv(text: str, path: str, pred: str, shapes) -> list[tuple]:
    """The rows of a CSV facts file (see :func:`read_facts_file` for the header rule)."""
    lines = text.split("\n")
    rows: list[tuple] = []
    width = None
    for lineno, row in _csv_rows(text, path):
        if not row or all(not c.strip() for c in row):
            continue
        if width is None:
            width = len(row)
            shapes.check(pred, width, Span(lineno, 1, path), text, noun="column")
            if _is_csv_header(row):
                continue
        elif len(row) != width:
            raise InputError(f"row has {len(row)} column{'s' if len(row) != 1 else ''}, "
                             f"earlier rows have {width}",
                             Span(lineno, 1, path), text)
        line = lines[lineno - 1] if lineno <= len(lines) else ""
        rows.append(tuple(
            _csv_value(c, lambda c=c: Span(lineno, _field_column(line, c), path), text)
            for c in row))
    return rows


def _read_facts(path: str | Path, shapes) -> dict[str, list[tuple]]:
    from ndlog.parser import parse_facts, read_text

    p = Path(path)
    text = read_text(p, "facts file")
    out: dict[str, list[tuple]] = {}
    if p.suffix.lower() == ".csv":
        rows = _read_csv(text, str(path), p.stem, shapes)
        if rows:
            out[p.stem] = rows
        return out
    for fact in parse_facts(text, str(path), shapes=shapes):
        out.setdefault(fact.pred, []).append(fact.values)
    return out


def read_facts_file(path: str | Path, arities: Mapping[str, int | None] | None = None,
                    locations: Mapping[str, int | None] | None = None
                    ) -> dict[str, list[tuple]]:
    """Read a facts file: NDlog fact statements, or (``.csv``) rows of the predicate named
    by the file's stem.

    Parameters
    ----------
    path:
        The file, UTF-8 text.
    arities, locations:
        The program's ``predicate -> arity`` (``Program.arities()``) and ``predicate ->
        index of the '@' argument`` (:func:`program_locations`), when known: a fact of a
        predicate the program does not use, with another number of arguments, or with its
        ``@`` on another argument is then an error. Without them, the facts of a predicate
        must agree with each other (see :class:`ndlog.parser.FactShapes`).

    Returns
    -------
    dict[str, list[tuple]]
        ``predicate -> rows`` in file order.

    Raises
    ------
    InputError, NDlogSyntaxError, NDlogSemanticError
        Naming the file, line and column.

    Notes
    -----
    In a CSV file every row has the same number of fields. A field is an integer
    (``-12``), a decimal number (``2.5``, ``1e3``), ``infinity`` or ``-infinity``, a string
    literal in double quotes without ``"`` or a backslash inside (the string without its
    quotes; CSV's own quoting is removed first), or else a string (surrounding blanks
    removed; ``nan`` and ``inf`` are strings). The first row is a header, and skipped, when
    every one of its fields is a name starting with an upper-case letter or ``_``, as NDlog
    variables are (``Src,Dst,Cost``); any other first row is data. A file whose first data
    row is all such names therefore needs a header row.
    """
    return _read_facts(path, _shapes(arities, locations))


def read_facts_files(paths: Iterable[str], arities: Mapping[str, int | None] | None = None,
                     locations: Mapping[str, int | None] | None = None
                     ) -> dict[str, list[tuple]]:
    """Read several facts files (see :func:`read_facts_file`) and merge their rows.

    The facts of a predicate must agree in arity and ``@`` position across the files too.
    """
    shapes = _shapes(arities, locations)
    merged: dict[str, list[tuple]] = {}
    for path in paths or ():
        for pred, rows in _read_facts(path, shapes).items():
            merged.setdefault(pred, []).extend(rows)
    return merged


def _shapes(arities, locations):
    from ndlog.parser import FactShapes

    return FactShapes(arities, locations)
