"""NDlog text to AST.

Role: run lark's LALR(1) parser on the grammar in ``ndlog.lark`` and transform the parse tree
into the immutable AST of :mod:`ndlog.ast`, translating lark's exceptions into
:class:`~ndlog.errors.NDlogSyntaxError` with file, line, column, caret and what was expected.
Also checks the purely syntactic shape rules that the grammar cannot express (facts are
ground, ``keys`` positions are positive, rule names are unique, integer literals fit Python's
string-to-int limit, terms nest at most :data:`MAX_NESTING` levels deep), and the shape of the
facts of facts files and bursts (:class:`FactShapes`: one arity and one ``@`` position per
predicate, the program's when it is known).

Every input ends in a returned AST or a :class:`~ndlog.errors.PSNError` with a position,
and no input sends it down an exponential path: the lexer's and the error path's regular
expressions have no ambiguous repetition, and the parse tree's nesting is measured without
recursion before anything recursive (the transformer, the checks, the evaluators) sees it.

Deliberately not here: the static checks on a whole program (arity, safety, location,
stratification) live in :mod:`ndlog.checks`; :func:`parse` runs them by default.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import sys
from functools import lru_cache
from pathlib import Path
from typing import Mapping

import lark
from lark import Lark, Transformer, v_args

from . import ast as A
from .errors import (InputError, NDlogSemanticError, NDlogSyntaxError, PSNError, Span,
                     require_flag)
from .files import file_path

__all__ = ["parse", "load", "as_program", "parse_facts", "parse_atom", "read_text", "FactShapes",
           "MAX_NESTING"]

_GRAMMAR = Path(__file__).with_name("ndlog.lark")

#: How deep terms may nest: each binary operator, unary minus, builtin call and list bracket
#: is one level (parentheses are free). Deeper terms are a syntax error, so that the
#: recursive passes after the parser (AST building, checks, compiling, printing) stay far
#: from Python's recursion limit.
MAX_NESTING = 100

#: parse-tree nodes that add one level of nesting
_NESTED = frozenset({"binop", "neg", "call", "list"})

_TOKEN_NAMES = {
    "NAME": "a name", "VAR": "a variable", "FUNC": "a builtin call", "INT": "an integer",
    "FLOAT": "a number", "STRING": "a string", "LOCATED": "'@'", "IMPLIES": "':-'",
    "ASSIGN": "':='", "COMPARE": "a comparison", "PLUS": "'+'", "MINUS": "'-'", "MUL": "'*'",
    "AGGREGATE": "an aggregate", "INFINITY": "'infinity'", "NIL": "'nil'",
    "MATERIALIZE": "'materialize'", "KEYS": "'keys'", "HIDDEN": "'#hidden'",
    "NOT": "'not'", "BANG": "'!'",
    "LPAR": "'('", "RPAR": "')'",
    "LSQB": "'['", "RSQB": "']'", "COMMA": "','", "DOT": "'.'", "$END": "end of input",
}


@lru_cache(maxsize=None)
def _lark(start: str) -> Lark:
    return Lark(_GRAMMAR.read_text(), parser="lalr", start=start, propagate_positions=True,
                maybe_placeholders=True)


#: tokens that can start a term; when all are expected the message says "a term"
_TERM_START = frozenset({"VAR", "INT", "FLOAT", "STRING", "NAME", "FUNC", "LSQB", "LPAR",
                         "MINUS", "INFINITY", "NIL"})

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}
_ESCAPE_RE = re.compile(r"\\(.)")


#: tokens that start a negated body literal (``not p(...)``, ``!p(...)``)
_NEGATION_START = frozenset({"NOT", "BANG"})


def _describe(names) -> str:
    names = set(names)
    pretty_terms = []
    if _TERM_START <= names:
        names -= _TERM_START
        pretty_terms = ["a term"]
        if _NEGATION_START <= names:  # where a body literal starts
            names -= _NEGATION_START
            pretty_terms = ["a term or a negated atom"]
    pretty = sorted({_TOKEN_NAMES.get(n, n.lower()) for n in names}) + pretty_terms
    if len(pretty) > 8:
        pretty = pretty[:8] + ["..."]
    return ", ".join(pretty)


@v_args(meta=True)
class _ToAST(Transformer):
    """Parse tree to AST. Every node gets a :class:`Span` from lark's positions."""

    def __init__(self, filename: str | None):
        super().__init__()
        self.filename = filename

    def _span(self, meta_or_tok) -> Span | None:
        line = getattr(meta_or_tok, "line", None)
        if line is None:
            return None
        return Span(line, meta_or_tok.column, self.filename)

    # -- terms ---------------------------------------------------------------------------
    def var(self, meta, ch):
        return A.Var(str(ch[0]), self._span(ch[0]))

    def _int(self, tok) -> int:
        try:
            return int(tok)
        except ValueError:  # past sys.get_int_max_str_digits()
            raise NDlogSyntaxError(
                f"integer literal too long: {len(tok)} digits, at most "
                f"{sys.get_int_max_str_digits()}", self._span(tok)) from None

    def number(self, meta, ch):
        tok = ch[0]
        value = self._int(tok) if tok.type == "INT" else float(tok)
        return A.Const(value, self._span(tok))

    def string(self, meta, ch):
        tok = ch[0]
        body = str(tok)[1:-1]

        def unescape(m: re.Match) -> str:
            if m.group(1) not in _ESCAPES:
                raise NDlogSyntaxError(
                    f"unknown escape sequence '\\{m.group(1)}' in a string; the escapes are "
                    "\\n \\t \\r \\\\ \\\" \\'",
                    Span(tok.line, tok.column + 1 + m.start(), self.filename))
            return _ESCAPES[m.group(1)]
        return A.Const(_ESCAPE_RE.sub(unescape, body), self._span(tok))

    def symbol(self, meta, ch):
        return A.Const(str(ch[0]), self._span(ch[0]))

    def infinity(self, meta, ch):
        return A.Const(float("inf"), self._span(ch[0]))

    def nil(self, meta, ch):
        return A.Const((), self._span(ch[0]))

    def neg(self, meta, ch):
        operand = ch[1]
        if isinstance(operand, A.Const) and isinstance(operand.value, (int, float)):
            return A.Const(-operand.value, self._span(ch[0]))
        return A.Neg(operand, self._span(ch[0]))

    def binop(self, meta, ch):
        left, op, right = ch
        return A.BinOp(str(op), left, right, self._span(meta))

    def call(self, meta, ch):
        name, *args = ch
        return A.Call(str(name), tuple(a for a in args if a is not None), self._span(name))

    def list(self, meta, ch):
        items = tuple(a for a in ch if a is not None)
        if all(isinstance(i, A.Const) for i in items):
            return A.Const(tuple(i.value for i in items), self._span(meta))
        return A.ListExpr(items, self._span(meta))

    def aggregate(self, meta, ch):
        tok = ch[0]
        text = str(tok)
        func, rest = text.split("<", 1)
        inner = rest.rstrip(">").strip()
        span = self._span(tok)
        var = None if inner == "*" else A.Var(inner, span)
        return A.Aggregate(func, var, span)

    # -- atoms and literals ---------------------------------------------------------------
    def located(self, meta, ch):
        return ("@", ch[1], self._span(ch[0]))

    def atom(self, meta, ch):
        name, *raw = ch
        args, loc, locs = [], None, []
        for i, a in enumerate(x for x in raw if x is not None):
            if isinstance(a, tuple) and len(a) == 3 and a[0] == "@":
                locs.append(a[2])
                loc = i if loc is None else loc
                args.append(a[1])
            else:
                args.append(a)
        if len(locs) > 1:
            raise NDlogSemanticError(
                f"atom '{name}' has {len(locs)} location specifiers; exactly one '@' is allowed",
                locs[1])
        return A.Atom(str(name), tuple(args), loc, self._span(name))

    def negation(self, meta, ch):
        return A.Negated(ch[1], self._span(ch[0]))

    def assign(self, meta, ch):
        var, _, expr = ch
        return A.Assign(A.Var(str(var), self._span(var)), expr, self._span(var))

    def comparison(self, meta, ch):
        left, op, right = ch
        return A.Compare(str(op), left, right, self._span(op))

    def body(self, meta, ch):
        return tuple(ch)

    # -- statements ----------------------------------------------------------------------
    def rule(self, meta, ch):
        name, head, _, body = ch
        span = self._span(name) if name is not None else head.span
        return A.Rule(str(name) if name is not None else "", head, body, name is not None, span)

    def fact(self, meta, ch):
        return A.Fact(ch[0], ch[0].span)

    def limit(self, meta, ch):
        tok = ch[0]
        return float("inf") if tok.type == "INFINITY" else self._int(tok)

    def keys(self, meta, ch):
        return tuple((self._int(k), self._span(k)) for k in ch[1:] if k is not None)

    def materialize(self, meta, ch):
        _, name, lifetime, size, keys = ch
        for k, kspan in keys:
            if k < 1:
                raise NDlogSemanticError("key positions are 1-based and must be at least 1",
                                         kspan)
        return A.Materialize(str(name), lifetime, size, tuple(k for k, _ in keys),
                             self._span(name))

    def hidden(self, meta, ch):
        return _Hidden(tuple(str(n) for n in ch[1:] if n is not None), self._span(ch[0]))

    def start(self, meta, ch):
        return list(ch)


class _Hidden:
    """A ``#hidden(p, ...).`` pragma: predicates to mark in ``Program.hidden``."""

    def __init__(self, preds: tuple[str, ...], span: Span | None):
        self.preds, self.span = preds, span


def _end_span(text: str, filename: str | None) -> Span:
    """Just after the last character of the last non-blank line (where input ended)."""
    lines = text.split("\n")  # count lines as lark does
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].strip():
            return Span(i + 1, len(lines[i].rstrip()) + 1, filename)
    return Span(1, 1, filename)


#: strings, line comments, closed block comments, an unclosed ``/*`` (group 1), other text.
#: No alternative repeats a group that can match the same text two ways, so a scan is linear
#: (``(.|\n)*?`` under re.S would backtrack exponentially over the newlines of an unclosed
#: comment).
_SCAN_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/|(/\*)|[^"/]+|.', re.S)


def _unterminated_comment(text: str, filename: str | None,
                          before: int) -> NDlogSyntaxError | None:
    """The error for a ``/*`` (outside strings and comments) that is never closed and
    starts at or before offset ``before`` (where the parser stopped)."""
    for m in _SCAN_RE.finditer(text):
        if m.start() > before:
            return None
        if m.group(1):
            line = text.count("\n", 0, m.start()) + 1
            column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            return NDlogSyntaxError("unterminated comment: '/*' has no closing '*/'",
                                    Span(line, column, filename))
    return None


#: tokens that start a statement only a program holds (not a facts or burst file)
_PROGRAM_ONLY = frozenset({"MATERIALIZE", "HIDDEN"})


def _syntax_error(exc: lark.exceptions.LarkError, filename: str | None,
                  text: str, leave_out: frozenset = frozenset()) -> NDlogSyntaxError:
    """The error to show for lark's ``exc``; ``leave_out``: tokens not to list as
    expected (what the grammar allows but the file being read may not hold)."""
    stop = len(text)
    if isinstance(exc, lark.exceptions.UnexpectedCharacters):
        stop = exc.pos_in_stream
    elif isinstance(exc, lark.exceptions.UnexpectedToken) and exc.token.type != "$END":
        stop = exc.token.start_pos if exc.token.start_pos is not None else stop
    unterminated = _unterminated_comment(text, filename, stop)
    if unterminated is not None:
        return unterminated
    if isinstance(exc, lark.exceptions.UnexpectedCharacters):
        span = Span(exc.line, exc.column, filename)
        char = exc.char
        if char == '"':
            return NDlogSyntaxError("unterminated string: no closing '\"' on this line", span)
        msg = f"unexpected character {char!r}"
        allowed = set(getattr(exc, "allowed", None) or ()) - leave_out
        if allowed:
            msg += f"; expected {_describe(allowed)}"
        return NDlogSyntaxError(msg, span)
    if isinstance(exc, lark.exceptions.UnexpectedEOF):
        return NDlogSyntaxError(f"unexpected end of input; expected "
                                f"{_describe(set(exc.expected) - leave_out)}",
                                _end_span(text, filename))
    if isinstance(exc, lark.exceptions.UnexpectedToken):
        tok = exc.token
        # ``accepts`` is exact; ``expected`` may hold LALR look-aheads that cannot follow
        expected = set(getattr(exc, "accepts", None) or exc.expected) - leave_out
        if tok.type == "$END":
            what = "end of input"
            span = _end_span(text, filename)
        else:
            what = repr(str(tok))
            span = Span(tok.line, tok.column, filename) if getattr(tok, "line", None) else None
        hint = None
        if "DOT" in expected and (tok.type == "$END" or tok.type in ("NAME", "VAR")):
            hint = "every statement ends with a period"
            prev = (getattr(exc, "token_history", None) or [None])[-1]
            if (tok.type != "$END" and prev is not None and prev.end_line is not None
                    and prev.end_line < tok.line):
                # a statement ended without '.' and the next one starts on a later line
                alt = ", or ',' before the next literal" if "COMMA" in expected else ""
                return NDlogSyntaxError(
                    f"missing '.' at the end of the statement{alt} (the next token, {what}, "
                    f"is on line {tok.line})", Span(prev.end_line, prev.end_column, filename),
                    hint=hint)
        return NDlogSyntaxError(f"unexpected {what}; expected {_describe(expected)}", span,
                                hint=hint)
    return NDlogSyntaxError(str(exc), None)


def _parse_tree(text: str, filename: str | None, start: str = "start",
                facts_only: bool = False):
    try:
        tree = _lark(start).parse(text)
    except lark.exceptions.VisitError as exc:  # pragma: no cover - defensive
        raise exc.orig_exc from None
    except lark.exceptions.UnexpectedInput as exc:
        err = _syntax_error(exc, filename, text, _PROGRAM_ONLY if facts_only else frozenset())
        if err.span is None:
            err.span = _end_span(text, filename)
        err.source = text
        raise err from None
    except RecursionError:  # pragma: no cover - lark's LALR parser does not recurse
        raise _too_deep(text, filename) from None
    _check_nesting(tree, filename, text)
    try:
        return _ToAST(filename).transform(tree)
    except lark.exceptions.VisitError as exc:
        orig = exc.orig_exc
        if isinstance(orig, PSNError):
            orig.source = text
            raise orig from None
        if isinstance(orig, RecursionError):
            raise _too_deep(text, filename) from None
        raise
    except RecursionError:
        raise _too_deep(text, filename) from None


def _too_deep(text: str, filename: str | None) -> NDlogSyntaxError:
    return NDlogSyntaxError("expression nesting is too deep for the parser; split the "
                            "expression with assignments", Span(1, 1, filename), text)


def _check_nesting(tree: lark.Tree, filename: str | None, text: str) -> None:
    """Reject terms nested deeper than :data:`MAX_NESTING`, walking the tree iteratively.

    The error points at the start of the outermost term of the too-deep nest.
    """
    stack: list[tuple[lark.Tree, int, lark.Tree | None]] = [(tree, 0, None)]
    while stack:
        node, depth, outer = stack.pop()
        if node.data in _NESTED:
            depth += 1
            outer = outer or node
            if depth > MAX_NESTING:
                line = getattr(outer.meta, "line", None)
                span = Span(line, outer.meta.column, filename) if line else Span(1, 1, filename)
                raise NDlogSyntaxError(
                    f"term nested too deep: more than {MAX_NESTING} levels (each operator, "
                    "unary '-', builtin call and list bracket is a level)", span, text,
                    hint="bind parts of the expression to variables with ':='")
        stack.extend((c, depth, outer) for c in node.children if isinstance(c, lark.Tree))


def _check_fact(fact: A.Fact, filename: str | None, text: str) -> None:
    for arg in fact.atom.args:
        if isinstance(arg, A.Aggregate):
            raise NDlogSemanticError(
                f"aggregate {arg.func}<{arg.var.name if arg.var else '*'}> appears in the fact "
                f"'{fact.pred}'; aggregates may appear only in rule heads",
                arg.span or fact.span, text)
        if not isinstance(arg, A.Const):
            raise NDlogSemanticError(
                f"fact '{fact.pred}' must be ground: only constants may appear in a fact",
                getattr(arg, "span", None) or fact.span, text,
                hint="a statement with variables needs a body: head :- body.")


def _assemble(items: list, filename: str | None, text: str) -> A.Program:
    rules, facts, tables = [], [], []
    hidden: set[str] = set()
    names: dict[str, A.Rule] = {}
    for item in items:
        if isinstance(item, A.Rule):
            rules.append(item)
        elif isinstance(item, _Hidden):
            hidden.update(item.preds)
        elif isinstance(item, A.Fact):
            _check_fact(item, filename, text)
            facts.append(item)
        else:
            tables.append(item)
    taken = {r.name for r in rules if r.named}
    out_rules = []
    counter = 0
    for r in rules:
        if r.named:
            if r.name in names:
                raise NDlogSemanticError(
                    f"rule name '{r.name}' is used twice (first at line {names[r.name].span.line})",
                    r.span, text)
            names[r.name] = r
        else:
            counter += 1
            gen = f"rule{counter}"
            while gen in taken:
                counter += 1
                gen = f"rule{counter}"
            taken.add(gen)
            r = A.Rule(gen, r.head, r.body, False, r.span)
        out_rules.append(r)
    seen_tables: dict[str, A.Materialize] = {}
    for t in tables:
        if t.pred in seen_tables:
            raise NDlogSemanticError(f"table '{t.pred}' is materialized twice", t.span, text)
        seen_tables[t.pred] = t
    program = A.Program(tuple(out_rules), tuple(facts), tuple(tables), frozenset(hidden),
                        filename, text)
    _check_hidden(items, program, text)
    return program


def _check_hidden(items: list, program: A.Program, text: str) -> None:
    """A ``#hidden`` pragma may name only predicates of the program (a misspelt name hid
    nothing, silently)."""
    known = program.predicates
    for item in items:
        if isinstance(item, _Hidden):
            for pred in item.preds:
                if pred not in known:
                    raise NDlogSemanticError(f"#hidden names '{pred}', which no rule, fact "
                                             f"or table of the program has", item.span, text)


def parse(text: str, filename: str | None = None, check: bool = True) -> A.Program:
    """Parse NDlog source text into a :class:`~ndlog.ast.Program`.

    Parameters
    ----------
    text:
        The program (rules, facts, ``materialize`` declarations).
    filename:
        Named in error messages (a str, a path, or None).
    check:
        Run the static checks of :mod:`ndlog.checks` (default). Rewrite passes that build
        intermediate programs may turn this off.

    Returns
    -------
    Program
        The immutable AST.

    Raises
    ------
    NDlogSyntaxError, NDlogSemanticError
        With file, line, column and a caret under the offending position.

    Notes
    -----
    The dialect is that of the declarative-networking systems (Loo et al., P2/RapidNet) used
    by Nigam et al. (2012) and Liu et al. (ICDE 2009); see ``docs/language.md``.
    """
    if not isinstance(text, str):
        raise InputError(f"a program is NDlog text (a str), got {type(text).__name__}",
                         hint="for a file, use psn.load(path)")
    require_flag(check, "check")
    if isinstance(filename, os.PathLike):
        filename = os.fspath(filename)
    if filename is not None and not isinstance(filename, str):
        raise InputError(f"filename is the name errors give the text (a str) or None, got "
                         f"{type(filename).__name__} {filename!r:.80}")
    items = _parse_tree(text, filename)
    program = _assemble(items, filename, text)
    if check:
        from .checks import check_program
        try:
            check_program(program)
        except RecursionError:
            raise _too_deep(text, filename) from None
    return program


def read_text(path: str | Path, what: str) -> str:
    """The text of an input file, decoded as UTF-8 (a leading byte-order mark is dropped,
    line ends become ``\\n`` as in universal-newlines mode).

    Parameters
    ----------
    path:
        The file.
    what:
        What the file is, for messages (``"program file"``, ``"facts file"``, ...).

    Raises
    ------
    InputError
        If the file cannot be read, or is not UTF-8 (then with the line and column of the
        first byte that is not, and the line shown with that byte replaced), or holds a NUL
        byte (with its line and column).
    """
    try:
        data = _read_bytes(file_path(path, what), what)
    except OSError as exc:
        raise InputError(f"cannot read {what} '{path}': {exc.strerror or exc}") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(data, exc.start, path, what) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\0" in text:
        raise _nul_byte(text, path, what)
    return text


#: the most a device or pipe given as an input file may send (a regular file is read whole)
MOST_STREAMED = 1 << 30


def _read_bytes(path: Path, what: str) -> bytes:
    """The bytes of ``path``; a device or a pipe (``/dev/zero``, a shell's ``<(...)``) is
    read a chunk at a time, up to its first NUL byte (which :func:`read_text` reports) and
    at most :data:`MOST_STREAMED` bytes, since it may never end.

    Raises
    ------
    OSError
        If it cannot be read.
    InputError
        If a device or pipe sends more than :data:`MOST_STREAMED` bytes.
    """
    with open(path, "rb") as fh:
        if stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return fh.read()
        data = bytearray()
        while chunk := fh.read(1 << 20):
            nul = chunk.find(b"\0")
            if nul >= 0:
                return bytes(data + chunk[:nul + 1])
            data += chunk
            if len(data) > MOST_STREAMED:
                raise InputError(f"{what} '{path}' is a device or pipe that sent more than "
                                 f"{MOST_STREAMED >> 20:,} MiB without ending",
                                 hint="give a file, or a command that ends")
        return bytes(data)


def _nul_byte(text: str, path, what: str) -> InputError:
    at = text.index("\0")
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    return InputError(f"{what} '{path}' holds a NUL byte, which no text file does",
                      Span(line, column, str(path)), text.replace("\0", "\N{SYMBOL FOR NULL}"),
                      hint="is it a binary file? Give the text file instead")


def _not_utf8(data: bytes, bad: int, path, what: str) -> InputError:
    line_start = data.rfind(b"\n", 0, bad) + 1
    line = data.count(b"\n", 0, bad) + 1
    column = len(data[line_start:bad].decode("utf-8", "replace")) + 1
    return InputError(f"{what} '{path}' is not UTF-8 text: byte 0x{data[bad]:02x} cannot be "
                      "decoded", Span(line, column, str(path)),
                      data.decode("utf-8", "replace"), hint="save the file as UTF-8")


def as_program(program) -> A.Program:
    """``program`` as a parsed program: NDlog text is parsed (and checked), a
    :class:`~ndlog.ast.Program` is returned as it is. The one place the Python entry
    points (``psn.evaluate``, ``Network``, ``Simulation``, ``psn.verify``, Ray) turn what
    they were given into a program.

    Raises
    ------
    InputError
        For anything else, naming its type.
    NDlogSyntaxError, NDlogSemanticError
        As :func:`parse`, for text.
    """
    if isinstance(program, str):
        return parse(program)
    if not isinstance(program, A.Program):
        raise InputError(f"a program is NDlog text or a parsed program, got "
                         f"{type(program).__name__}")
    return program


def load(path: str | Path, check: bool = True) -> A.Program:
    """Read and parse an NDlog file; errors name the file.

    Raises
    ------
    InputError
        If the file cannot be read or is not UTF-8 text.
    NDlogSyntaxError, NDlogSemanticError
        As :func:`parse`.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"psn.load takes the path of a program file, got "
                         f"{type(path).__name__}", hint="for NDlog text, use psn.parse(text)")
    require_flag(check, "check")
    return parse(read_text(path, "program file"), str(path), check=check)


class FactShapes:
    """The arity and ``@`` position of each predicate, checked fact by fact.

    With the program's ``arities``, every fact must use a predicate of the program, with its
    arity; with its ``locations``, a fact that marks an argument with ``@`` must mark the one
    the program locates (a fact without ``@`` is fine: the program says where it lives; so is
    any ``@`` on a predicate the program does not locate, as in a centralized program, where
    ``@`` only names an argument). Where the program's arity or location of a predicate is
    not known, every fact of it must agree with the first one checked by this object (one
    file, or every file given to one object).

    Parameters
    ----------
    arities:
        ``predicate -> number of arguments`` in the program (``Program.arities()``; None for
        a table the program declares but no rule or fact uses: its facts must agree with
        the first one), or None.
    locations:
        ``predicate -> 0-based index of its '@' argument`` in the program, None for a
        predicate without one; or None when not known.
    """

    def __init__(self, arities: Mapping[str, int] | None = None,
                 locations: Mapping[str, int | None] | None = None):
        self.arities = arities
        self.locations = locations
        self._arity: dict[str, tuple[int, Span | None]] = {}
        self._loc: dict[str, tuple[int, Span | None]] = {}

    def check_fact(self, fact: A.Fact, source: str | None) -> None:
        """Check one parsed fact (see :meth:`check`)."""
        atom = fact.atom
        loc_span = None if atom.loc is None else (atom.args[atom.loc].span or fact.span)
        self.check(fact.pred, atom.arity, fact.span, source, atom.loc, loc_span)

    def check(self, pred: str, arity: int, span: Span | None, source: str | None,
              loc: int | None = None, loc_span: Span | None = None,
              noun: str = "argument") -> None:
        """Check a fact of ``pred`` with ``arity`` arguments and ``@`` on argument ``loc``.

        Raises
        ------
        InputError
            At ``span`` (``loc_span`` for the ``@``), naming the expected arity or position
            and where it comes from.
        """
        if self.arities is not None:
            if pred not in self.arities:
                raise InputError(f"predicate '{pred}' is not used by the program", span, source,
                                 hint=_known_predicates(pred, self.arities))
            want, where = self.arities[pred], "in the program"
        else:
            want = None
        if want is None:      # no program, or a table it declares that no rule or fact uses
            want, first = self._arity.setdefault(pred, (arity, span))
            where = f"at {_where(first, span)}"
        if arity != want:
            raise InputError(f"{pred} has {arity} {noun}{'s' if arity != 1 else ''} here, "
                             f"but {'arity ' if self.arities is not None else ''}{want} "
                             f"{where}", span, source)
        if loc is not None:
            self._check_loc(pred, loc, loc_span or span, source)

    def _check_loc(self, pred: str, loc: int, span: Span | None, source: str | None) -> None:
        if self.locations is not None and pred in self.locations:
            want, where = self.locations[pred], "in the program"
            if want is None:
                return
        else:
            want, first = self._loc.setdefault(pred, (loc, span))
            where = f"at {_where(first, span)}"
        if loc != want:
            raise InputError(f"{pred} has its '@' on argument {loc + 1} here, but on argument "
                             f"{want + 1} {where}", span, source)


def _where(first: Span | None, here: Span | None) -> str:
    if first is None:
        return "an earlier fact"
    if here is not None and first.filename == here.filename:
        return f"line {first.line}"
    return str(first)


def _known_predicates(pred: str, known) -> str:
    """A hint listing the program's predicates, the closest to ``pred`` first."""
    names = sorted(known)
    if not names:
        return "the program uses no predicates"
    close = difflib.get_close_matches(pred, names, n=len(names), cutoff=0.6)
    ordered = close + [n for n in names if n not in close]
    shown = ", ".join(ordered[:12]) + (", ..." if len(ordered) > 12 else "")
    guess = f"did you mean '{close[0]}'? " if close else ""
    return f"{guess}the program's predicates are {shown}"


def parse_facts(text: str, filename: str | None = None,
                arities: Mapping[str, int] | None = None,
                locations: Mapping[str, int | None] | None = None, *,
                shapes: FactShapes | None = None) -> list[A.Fact]:
    """Parse a text holding only NDlog fact statements (``link(@1, 2, 10).``).

    Parameters
    ----------
    text, filename:
        The facts and the file they come from (named in errors).
    arities, locations:
        The program's, when known; see :class:`FactShapes`. Without them, the facts of one
        predicate must agree with each other in arity and ``@`` position.
    shapes:
        A :class:`FactShapes` to check with instead (to carry what earlier texts
        established); ``arities`` and ``locations`` are then ignored.

    Raises
    ------
    NDlogSyntaxError, NDlogSemanticError
        If a statement is not a ground fact.
    InputError
        If a fact does not fit the program's or the earlier facts' arity or location.
    """
    shapes = shapes if shapes is not None else FactShapes(arities, locations)
    items = _parse_tree(text, filename, facts_only=True)
    out = []
    for item in items:
        if not isinstance(item, A.Fact):
            what = ("a rule" if isinstance(item, A.Rule) else "a #hidden pragma"
                    if isinstance(item, _Hidden) else "a materialize declaration")
            raise NDlogSemanticError(f"a facts file holds only facts, but this is {what}",
                                     item.span, text)
        _check_fact(item, filename, text)
        shapes.check_fact(item, text)
        out.append(item)
    return out


def parse_atom(text: str, filename: str | None = None, shapes: FactShapes | None = None
               ) -> A.Fact:
    """Parse one ground fact, with or without the final period (``reachable(@a,c)``);
    ``shapes`` checks it against a program (see :func:`parse_facts`)."""
    src = text.strip()
    added = not src.endswith(".")
    try:
        facts = parse_facts(src + "." if added else src, filename, shapes=shapes)
    except NDlogSyntaxError as exc:
        if added and exc.span is not None and (exc.line, exc.column) == (1, len(src) + 1):
            exc.message = exc.message.replace("unexpected '.'", "unexpected end of input", 1)
            exc.args = (exc.message,)
        exc.source = src                # as given, without the period added here
        raise
    if len(facts) != 1:
        raise InputError(f"expected exactly one fact, got {len(facts)}: {text!r}")
    return facts[0]
