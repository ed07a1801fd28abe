"""User-facing errors of PSN.

Role: one exception root, :class:`PSNError`, for every mistake a user can make (bad syntax,
failed static checks, rules that cannot be localized, bad facts or bursts, bad options).
Each error knows where it happened (file, line, column) when there is a place to point at,
and renders itself as ``file:line:col: error: message`` followed by the offending source line
and a caret under the column, the way compilers and lark's own errors read. And
:func:`require_flag`, the check of a yes/no parameter of every layer's Python functions.

Deliberately not here: internal invariant violations (those stay ordinary exceptions, because
they are bugs in PSN, not in the user's input) and any printing or exiting (the CLI does that).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "Span",
    "PSNError",
    "NDlogSyntaxError",
    "NDlogSemanticError",
    "LocalizationError",
    "EvaluationError",
    "InputError",
    "NDlogWarning",
    "require_flag",
]


@dataclass(frozen=True)
class Span:
    """A position in a source text: 1-based line and column, with the file name if known."""

    line: int
    column: int
    filename: str | None = None

    def __str__(self) -> str:
        return f"{self.filename or '<input>'}:{self.line}:{self.column}"


class PSNError(Exception):
    """Root of every error caused by user input.

    Parameters
    ----------
    message:
        What is wrong, in one sentence.
    span:
        Where it is, if there is a place to point at.
    source:
        The full source text, used to show the offending line with a caret.
    hint:
        Optional advice printed after the caret.
    """

    kind = "error"

    def __init__(self, message: str, span: Span | None = None, source: str | None = None,
                 hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.source = source
        self.hint = hint

    @property
    def filename(self) -> str | None:
        return self.span.filename if self.span else None

    @property
    def line(self) -> int | None:
        return self.span.line if self.span else None

    @property
    def column(self) -> int | None:
        return self.span.column if self.span else None

    def locate(self, source: str | None, filename: str | None) -> "PSNError":
        """Attach ``source``, the text of the file ``filename``, so that the error shows its
        line with a caret, unless it has a source already or points into another file (an
        error raised while a program runs knows the program's position, not its text).

        Returns
        -------
        PSNError
            This error, to re-raise.
        """
        if (self.source is None and source is not None and self.span is not None
                and self.span.filename == filename):
            self.source = source
        return self

    def source_line(self) -> str | None:
        """The text of the offending line, if the source is known."""
        if self.span is None or self.source is None:
            return None
        # lines end at "\n" only, as the parser counts them (str.splitlines would also
        # split at form feeds and other separators and show the wrong line)
        lines = self.source.split("\n")
        if 1 <= self.span.line <= len(lines):
            return lines[self.span.line - 1].rstrip("\r")
        return None

    def render(self) -> str:
        """Render as ``file:line:col: error: message`` plus the line and a caret.

        A line longer than :data:`_SHOWN` characters is cut to a window around the column.
        """
        head = f"{self.span}: " if self.span else ""
        out = [f"{head}{self.kind}: {self.message}"]
        text = self.source_line()
        if text is not None:
            shown, caret = _window(text.expandtabs(1), max(self.span.column - 1, 0))
            out.append("    " + shown)
            out.append("    " + " " * caret + "^")
        if self.hint:
            out.append(f"hint: {self.hint}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()


#: at most this many characters of a source line are shown under an error
_SHOWN = 100


def _window(line: str, col: int) -> tuple[str, int]:
    """At most about :data:`_SHOWN` characters of ``line`` around the 0-based ``col``, with
    control characters shown as ``?``, and where ``col`` is in the result."""
    start = 0
    if len(line) > _SHOWN:
        start = min(max(col - _SHOWN // 2, 0), max(len(line) - _SHOWN, 0))
    piece = line[start:start + _SHOWN]
    piece = "".join("?" if ord(c) < 32 or c == "\x7f" else c for c in piece)
    prefix = "..." if start > 0 else ""
    suffix = "..." if start + _SHOWN < len(line) else ""
    return prefix + piece + suffix, len(prefix) + col - start


class NDlogSyntaxError(PSNError):
    """The text is not NDlog: an unexpected character or token."""

    kind = "syntax error"


class NDlogSemanticError(PSNError):
    """The text parses but fails a static check (arity, safety, location, stratification)."""


class LocalizationError(PSNError):
    """A distributed rule cannot be rewritten so that its body lives at one node."""


class EvaluationError(PSNError):
    """Evaluation hit a value the program cannot handle (a non-positive cost under pruning,
    a builtin applied to the wrong type, a division by zero)."""


class InputError(PSNError):
    """Bad facts, bursts, options or files given to the API or the CLI."""


class NDlogWarning(PSNError):
    """A likely mistake that does not stop the command (a body predicate whose name is one
    letter off another's): rendered like an error, as ``file:line:col: warning: ...`` with
    a caret, and printed, never raised."""

    kind = "warning"


def require_flag(value, name: str, optional: bool = False) -> None:
    """Refuse ``value`` unless it is True or False (or None when ``optional``): a string
    such as ``"no"`` would be taken as true.

    Raises
    ------
    InputError
        Naming the parameter ``name`` and the value.
    """
    if not isinstance(value, bool) and not (optional and value is None):
        raise InputError(f"{name} must be True or False{' or None' if optional else ''}, "
                         f"not {value!r}")
