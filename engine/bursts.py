"""Burst files: one update per line, ``+fact.`` / ``-fact.`` / ``fact.`` (an insertion).

Role: read the bursts of ``psn run --burst FILE`` (and of the simulator) into
``[(sign, pred, tuple)]``, with errors naming file:line:column and a caret, as every PSN
input error does. The sign is the first non-blank character of a line; the rest of the line
is an NDlog fact statement (comments allowed).

Deliberately not here: applying bursts (``Network.apply``).
"""

from __future__ import annotations

from pathlib import Path

from ndlog.errors import InputError, PSNError
from ndlog.parser import parse_facts

__all__ = ["parse_burst", "read_burst_file"]


def parse_burst(text: str, filename: str | None = None) -> list[tuple[int, str, tuple]]:
    """Parse burst text into ``[(sign, pred, tuple)]`` in file order.

    Raises
    ------
    NDlogSyntaxError, NDlogSemanticError
        With the file, line and column of the bad statement.
    """
    signs: dict[int, int] = {}
    lines = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        stripped = line.lstrip()
        if stripped[:1] in ("+", "-"):
            col = len(line) - len(stripped)
            signs[lineno] = 1 if stripped[0] == "+" else -1
            line = line[:col] + " " + line[col + 1:]
        lines.append(line)
    try:
        facts = parse_facts("\n".join(lines), filename)
    except PSNError as exc:
        exc.source = text
        raise
    out = []
    for f in facts:
        line = f.span.line if f.span is not None else 0
        out.append((signs.get(line, 1), f.pred, f.values))
    return out


def read_burst_file(path: str | Path) -> list[tuple[int, str, tuple]]:
    """Read and parse one burst file (see :func:`parse_burst`)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(f"cannot read burst file '{path}': {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"burst file '{path}' is not UTF-8 text") from None
    return parse_burst(text, str(path))
