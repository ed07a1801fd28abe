"""The immutable abstract syntax of NDlog programs.

Role: the data structures every later stage reads: the parser builds them, analyses inspect
them, rewrite passes (``localize/``) build new ones, evaluators and the engine compile them.
All nodes are frozen dataclasses; source positions (:class:`~ndlog.errors.Span`) are carried
for error messages but excluded from equality, so a program printed and parsed again compares
equal to the original.

Values inside constants and facts are plain Python values:

========================  ===========================================
NDlog                     Python
========================  ===========================================
integer, float            ``int``, ``float``
string ``"x"``, symbol    ``str`` (symbols and strings are one type)
list ``[a, b]``, ``nil``  ``tuple`` (``()`` for nil)
``infinity``              ``float('inf')``
========================  ===========================================

Deliberately not here: parsing, checking, printing (see :mod:`ndlog.parser`,
:mod:`ndlog.checks`, :mod:`ndlog.printer`), and any evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterator, Union

from .errors import Span

__all__ = [
    "Var", "Const", "ListExpr", "BinOp", "Neg", "Call", "Aggregate", "Term",
    "Atom", "Negated", "Assign", "Compare", "Literal", "Rule", "Fact", "Materialize", "Program",
    "AGGREGATE_FUNCS", "COMPARISON_OPS", "ARITH_OPS", "subterms", "term_vars", "literal_vars",
]

AGGREGATE_FUNCS = ("min", "max", "count", "sum", "avg")
COMPARISON_OPS = ("==", "!=", "<", "<=", ">", ">=", "=")
ARITH_OPS = ("+", "-", "*", "/", "%")


def _span() -> Span | None:
    return field(default=None, compare=False, repr=False)  # type: ignore[return-value]


@dataclass(frozen=True)
class Var:
    """A variable; ``_`` alone is anonymous (each occurrence distinct, never bound)."""

    name: str
    span: Span | None = _span()

    @property
    def anonymous(self) -> bool:
        return self.name == "_"


@dataclass(frozen=True)
class Const:
    """A constant value (see the module docstring for the Python representation)."""

    value: object
    span: Span | None = _span()


@dataclass(frozen=True)
class ListExpr:
    """A list literal whose items may contain variables, e.g. ``[S, D]``."""

    items: tuple["Term", ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class BinOp:
    """An arithmetic expression ``left op right`` with op in ``+ - * / %``."""

    op: str
    left: "Term"
    right: "Term"
    span: Span | None = _span()


@dataclass(frozen=True)
class Neg:
    """Unary minus of a non-constant expression."""

    operand: "Term"
    span: Span | None = _span()


@dataclass(frozen=True)
class Call:
    """A builtin call ``f_name(args)``."""

    name: str
    args: tuple["Term", ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class Aggregate:
    """A head aggregate ``func<Var>``; ``var`` is ``None`` for ``count<*>``."""

    func: str
    var: Var | None
    span: Span | None = _span()


Term = Union[Var, Const, ListExpr, BinOp, Neg, Call, Aggregate]


@dataclass(frozen=True)
class Atom:
    """``pred(args)``; ``loc`` is the index of the ``@`` argument, or ``None``."""

    pred: str
    args: tuple[Term, ...]
    loc: int | None = None
    span: Span | None = _span()

    @property
    def arity(self) -> int:
        return len(self.args)

    @property
    def loc_term(self) -> Term | None:
        return None if self.loc is None else self.args[self.loc]

    @property
    def aggregates(self) -> tuple[tuple[int, Aggregate], ...]:
        return tuple((i, a) for i, a in enumerate(self.args) if isinstance(a, Aggregate))


@dataclass(frozen=True)
class Negated:
    """``not pred(args)`` (also written ``!pred(args)``): negation as failure.

    True for a binding of the rule's variables when ``pred`` holds no tuple equal to the
    atom's arguments. Every variable of the atom must be bound by the rule's positive atoms
    or assignments (safety), and ``pred`` must not depend on the rule's head (stratified
    negation: it lies in a lower stratum). Deliberately not an :class:`Atom`: code that
    walks a body and dispatches on ``isinstance(lit, Atom)`` never mistakes it for a
    positive atom, and :attr:`Rule.body_atoms` keeps meaning the positive atoms.
    """

    atom: Atom
    span: Span | None = _span()

    @property
    def pred(self) -> str:
        return self.atom.pred


@dataclass(frozen=True)
class Assign:
    """``Var := expr``: binds a variable that must not be bound yet."""

    var: Var
    expr: Term
    span: Span | None = _span()


@dataclass(frozen=True)
class Compare:
    """``left op right``. ``op == '='`` assigns when ``left`` is an unbound variable and
    tests equality otherwise."""

    op: str
    left: Term
    right: Term
    span: Span | None = _span()


Literal = Union[Atom, Negated, Assign, Compare]


@dataclass(frozen=True)
class Rule:
    """``name head :- body.``; ``named`` is False when the name was generated."""

    name: str
    head: Atom
    body: tuple[Literal, ...]
    named: bool = True
    span: Span | None = _span()

    @property
    def body_atoms(self) -> tuple[Atom, ...]:
        """The positive atoms of the body, in body order (never a negated one)."""
        return tuple(lit for lit in self.body if isinstance(lit, Atom))

    @property
    def negations(self) -> tuple[Negated, ...]:
        """The negated literals of the body (``not p(...)``), in body order."""
        return tuple(lit for lit in self.body if isinstance(lit, Negated))

    @property
    def negated_atoms(self) -> tuple[Atom, ...]:
        """The atoms under ``not`` in the body, in body order."""
        return tuple(lit.atom for lit in self.body if isinstance(lit, Negated))

    @property
    def is_aggregate(self) -> bool:
        return bool(self.head.aggregates)

    @property
    def body_var_names(self) -> tuple[str, ...]:
        """Named variables of the body, in order of first occurrence."""
        names: dict[str, None] = {}
        for lit in self.body:
            for v in literal_vars(lit):
                names.setdefault(v.name)
        return tuple(names)


@dataclass(frozen=True)
class Fact:
    """A ground atom stated in the program text."""

    atom: Atom
    span: Span | None = _span()

    @property
    def pred(self) -> str:
        return self.atom.pred

    @property
    def values(self) -> tuple:
        return tuple(a.value for a in self.atom.args)  # type: ignore[union-attr]


@dataclass(frozen=True)
class Materialize:
    """``materialize(name, lifetime, size, keys(...))``; keys are 1-based positions."""

    pred: str
    lifetime: float
    size: float
    keys: tuple[int, ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class Program:
    """A whole NDlog program.

    ``hidden`` names auxiliary predicates introduced by rewrites (never shown as results
    unless asked for). ``source`` and ``filename`` are kept for error messages only.
    """

    rules: tuple[Rule, ...] = ()
    facts: tuple[Fact, ...] = ()
    tables: tuple[Materialize, ...] = ()
    hidden: frozenset[str] = frozenset()
    filename: str | None = field(default=None, compare=False)
    source: str | None = field(default=None, compare=False, repr=False)

    # -- derived views (never stored, always computed from the fields above) --
    def table(self, pred: str) -> Materialize | None:
        for t in self.tables:
            if t.pred == pred:
                return t
        return None

    @property
    def predicates(self) -> frozenset[str]:
        preds = {f.pred for f in self.facts} | {t.pred for t in self.tables}
        for r in self.rules:
            preds.add(r.head.pred)
            preds.update(a.pred for a in r.body_atoms)
            preds.update(a.pred for a in r.negated_atoms)
        return frozenset(preds)

    @property
    def negated(self) -> frozenset[str]:
        """Predicates that some rule reads under ``not``."""
        return frozenset(a.pred for r in self.rules for a in r.negated_atoms)

    @property
    def idb(self) -> frozenset[str]:
        """Predicates defined by rules."""
        return frozenset(r.head.pred for r in self.rules)

    @property
    def edb(self) -> frozenset[str]:
        """Predicates that only occur as base facts or in rule bodies."""
        return self.predicates - self.idb

    @property
    def distributed(self) -> bool:
        """True if any atom carries a location specifier."""
        return any(a.loc is not None for a in self.atoms())

    def atoms(self) -> Iterator[Atom]:
        """Every atom of the program: heads, positive and negated body atoms, facts."""
        for r in self.rules:
            yield r.head
            for lit in r.body:
                if isinstance(lit, Atom):
                    yield lit
                elif isinstance(lit, Negated):
                    yield lit.atom
        for f in self.facts:
            yield f.atom

    def arities(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for a in self.atoms():
            out.setdefault(a.pred, a.arity)
        return out

    def visible(self) -> frozenset[str]:
        """Result predicates: everything except hidden auxiliaries."""
        return self.predicates - self.hidden

    def with_(self, **changes) -> "Program":
        return replace(self, **changes)


def subterms(term: Term) -> Iterator[Term]:
    """``term`` and every term nested in it, outermost first (an aggregate is a leaf)."""
    yield term
    if isinstance(term, BinOp):
        yield from subterms(term.left)
        yield from subterms(term.right)
    elif isinstance(term, Neg):
        yield from subterms(term.operand)
    elif isinstance(term, Call):
        for a in term.args:
            yield from subterms(a)
    elif isinstance(term, ListExpr):
        for a in term.items:
            yield from subterms(a)


def term_vars(term: Term) -> Iterator[Var]:
    """Every named (non-anonymous) variable occurring in ``term``."""
    for t in subterms(term):
        if isinstance(t, Aggregate):
            t = t.var
        if isinstance(t, Var) and not t.anonymous:
            yield t


def literal_vars(lit: Literal) -> Iterator[Var]:
    """Every named variable occurring in a body literal or head atom."""
    if isinstance(lit, Atom):
        for a in lit.args:
            yield from term_vars(a)
    elif isinstance(lit, Negated):
        yield from literal_vars(lit.atom)
    elif isinstance(lit, Assign):
        yield lit.var
        yield from term_vars(lit.expr)
    else:
        yield from term_vars(lit.left)
        yield from term_vars(lit.right)
