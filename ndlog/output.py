"""Rendering relations and reading fact files, shared by every CLI subcommand.

Role: turn ``dict[str, set[tuple]]`` into a table, JSON or CSV, and read facts given on the
command line (NDlog fact statements, or CSV rows of the predicate named by the file).

Deliberately not here: evaluation, argument parsing.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Iterable

from ndlog.builtins import format_value
from ndlog.errors import InputError, Span

__all__ = ["select_relations", "sort_key", "sorted_tuples", "relations_to_json", "render_relations",
           "read_facts_file", "read_facts_files", "jsonable"]


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
    return sorted(rows, key=lambda t: tuple(sort_key(v) for v in t))


def jsonable(value):
    """JSON form of a value: lists for tuples, ``"infinity"`` for infinite floats."""
    if isinstance(value, tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "infinity" if value > 0 else "-infinity"
    return value


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
    return {name: [jsonable(t) for t in sorted_tuples(rows)]
            for name, rows in sorted(relations.items())}


def render_relations(relations: dict[str, set], fmt: str = "table") -> str:
    """Render relations as ``table`` (NDlog facts grouped by relation), ``json`` or ``csv``."""
    if fmt == "json":
        return json.dumps(relations_to_json(relations), indent=None, sort_keys=True)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["relation", "tuple"])
        for name, rows in sorted(relations.items()):
            for t in sorted_tuples(rows):
                w.writerow([name] + [format_value(v) for v in t])
        return buf.getvalue().rstrip("\n")
    out = []
    for name, rows in sorted(relations.items()):
        out.append(f"{name} ({len(rows)} tuples)")
        for t in sorted_tuples(rows):
            out.append(f"  {name}(" + ", ".join(format_value(v) for v in t) + ")")
    return "\n".join(out)


def _csv_value(text: str):
    s = text.strip()
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    if s == "infinity":
        return float("inf")
    return s


def read_facts_file(path: str | Path) -> dict[str, list[tuple]]:
    """Read a facts file: NDlog fact statements, or (``.csv``) rows of the predicate named
    by the file's stem. Errors name the file, line and column.
    """
    from ndlog.parser import parse_facts

    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise InputError(f"cannot read facts file '{path}': {exc.strerror or exc}") from None
    out: dict[str, list[tuple]] = {}
    if p.suffix.lower() == ".csv":
        pred = p.stem
        width = None
        for lineno, row in enumerate(csv.reader(io.StringIO(text)), start=1):
            if not row or all(not c.strip() for c in row):
                continue
            if width is None:
                width = len(row)
            elif len(row) != width:
                raise InputError(f"row has {len(row)} columns, earlier rows have {width}",
                                 Span(lineno, 1, str(path)), text)
            out.setdefault(pred, []).append(tuple(_csv_value(c) for c in row))
        return out
    for fact in parse_facts(text, str(path)):
        out.setdefault(fact.pred, []).append(fact.values)
    return out


def read_facts_files(paths: Iterable[str]) -> dict[str, list[tuple]]:
    merged: dict[str, list[tuple]] = {}
    for path in paths or ():
        for pred, rows in read_facts_file(path).items():
            merged.setdefault(pred, []).extend(rows)
    return merged
