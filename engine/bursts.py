"""Burst files: one update per line, ``+fact.`` / ``-fact.`` / ``fact.`` (an insertion).

Role: read the bursts of ``psn run --burst FILE`` (and of the simulator) into
``[(sign, pred, tuple)]``, with errors naming file:line:column and a caret, as every PSN
input error does. The sign is the first non-blank character of a line; the rest of the line
is an NDlog fact statement (comments allowed). Given the program's arities (and locations),
a fact of a predicate the program does not use, or of another arity or ``@`` position, is an
error at that fact; without them the facts of one predicate must agree with each other
(:class:`ndlog.parser.FactShapes`).

Deliberately not here: applying bursts (``Network.apply``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ndlog.errors import NDlogSemanticError, NDlogSyntaxError, PSNError, Span
from ndlog.parser import parse_facts, read_text

__all__ = ["parse_burst", "read_burst_file", "Burst", "locate_error", "BURST_HINT"]

#: added to the syntax errors of a burst
BURST_HINT = "each line is +fact. (insert), -fact. (delete) or fact. (insert)"


class Burst(list):
    """A burst's updates ``(sign, pred, tuple)`` in file order, which also knows where each
    came from (``spans``, and the file's ``source`` text), so that an error found later
    about one of them (a deletion of a fact that is not there) can point at its line."""

    def __init__(self, updates=(), spans=(), source: str | None = None):
        super().__init__(updates)
        self.spans = list(spans)
        #: the text each update comes from (one file's, or several after :meth:`merged`)
        self.sources = [source] * len(self.spans)

    @classmethod
    def merged(cls, bursts) -> "Burst":
        """One burst of every update of ``bursts`` in order (``psn run --overlap``), each
        still knowing its file's line; updates of a plain list have none."""
        out = cls()
        for burst in bursts:
            out.extend(burst)
            if isinstance(burst, Burst):
                out.spans.extend(burst.spans)
                out.sources.extend(burst.sources)
            else:
                out.spans.extend([None] * len(burst))
                out.sources.extend([None] * len(burst))
        return out

    def locate(self, exc: PSNError, update: tuple) -> None:
        """Point ``exc``, if it has no position of its own, at the last ``update`` (a
        deletion of a fact that is not there: the earlier ones deleted what was)."""
        if exc.span is not None:
            return
        for item, span, source in zip(reversed(self), reversed(self.spans),
                                      reversed(self.sources)):
            if item == update and span is not None:
                exc.span, exc.source = span, source
                return


def locate_error(exc: PSNError, bursts) -> None:
    """Point ``exc``, an error about one update (its ``update`` attribute: the ledger's
    deletion of a fact that is not there), at that update's line in the first of
    ``bursts`` that holds it (:meth:`Burst.locate`); nothing for another error, or bursts
    that are not :class:`Burst` (built in Python)."""
    update = getattr(exc, "update", None)
    if update is None:
        return
    for burst in bursts:
        if isinstance(burst, Burst):
            burst.locate(exc, update)


def parse_burst(text: str, filename: str | None = None,
                arities: Mapping[str, int] | None = None,
                locations: Mapping[str, int | None] | None = None) -> Burst:
    """Parse burst text into a :class:`Burst`, ``[(sign, pred, tuple)]`` in file order.

    Parameters
    ----------
    text, filename:
        The burst and the file it comes from (named in errors).
    arities, locations:
        The program's ``predicate -> arity`` and ``predicate -> index of the '@'
        argument``, when known (see :class:`ndlog.parser.FactShapes`).

    Raises
    ------
    NDlogSyntaxError, NDlogSemanticError
        With the file, line and column of the bad statement, and a hint on the burst syntax.
    InputError
        A fact whose predicate, arity or ``@`` position does not fit, at that fact.
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
        facts = parse_facts("\n".join(lines), filename, arities, locations)
    except (NDlogSyntaxError, NDlogSemanticError) as exc:
        exc.source = text
        _second_update_on_a_line(exc, text)
        exc.hint = f"{exc.hint}; {BURST_HINT}" if exc.hint else BURST_HINT
        raise
    except PSNError as exc:
        exc.source = text
        raise
    starts = {f.span.line for f in facts if f.span is not None}
    commented = _lines_in_comments(text)
    for lineno in sorted(signs):
        if lineno not in starts and lineno not in commented:
            line = text.split("\n")[lineno - 1]
            sign = line.lstrip()[0]
            raise NDlogSyntaxError(
                f"'{sign}' with no fact after it on its line: the update would be lost, or "
                f"the fact on a later line taken as an insertion",
                Span(lineno, len(line) - len(line.lstrip()) + 1, filename), text,
                hint=f"write the sign and its fact on one line: {sign}fact.")
    out = []
    for f in facts:
        line = f.span.line if f.span is not None else 0
        out.append((signs.get(line, 1), f.pred, f.values))
    return Burst(out, [f.span for f in facts], text)


def _lines_in_comments(text: str) -> set[int]:
    """The numbers of the lines that start inside a block comment (``/* ... */``), where a
    leading ``+`` or ``-`` is no sign."""
    out, i, line, n = set(), 0, 1, len(text)
    block = False
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            if block:
                out.add(line)
        elif block:
            if text.startswith("*/", i):
                block, i = False, i + 1
        elif text.startswith("/*", i):
            block, i = True, i + 1
        elif text.startswith("//", i):
            i = text.find("\n", i) - 1 if "\n" in text[i:] else n
        elif c == '"':
            end = text.find('"', i + 1)
            while end != -1 and text[end - 1] == "\\":
                end = text.find('"', end + 1)
            i = n if end == -1 else end
        i += 1
    return out


def _second_update_on_a_line(exc: PSNError, text: str) -> None:
    """A sign in the middle of a line is a second update there: say so, instead of the
    program grammar's list of what may follow a statement ('#hidden', 'materialize', ...)."""
    if exc.span is None:
        return
    lines = text.split("\n")
    line = lines[exc.span.line - 1] if 0 < exc.span.line <= len(lines) else ""
    if line[exc.span.column - 1:exc.span.column] in ("+", "-"):
        exc.message = "a second update on this line: one update per line"
        exc.args = (exc.message,)


def read_burst_file(path: str | Path, arities: Mapping[str, int] | None = None,
                    locations: Mapping[str, int | None] | None = None) -> Burst:
    """Read and parse one burst file (see :func:`parse_burst`).

    Raises
    ------
    InputError
        If the file cannot be read or is not UTF-8 text (with the line and column of the
        first bad byte), or as :func:`parse_burst`.
    """
    return parse_burst(read_text(path, "burst file"), str(path), arities, locations)
