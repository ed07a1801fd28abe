"""AST to NDlog text: the inverse of :mod:`ndlog.parser`.

Role: print programs, rules, atoms and terms as NDlog that parses back to an equal AST
(``parse(format_program(p), check=False) == p``): expressions get exactly the parentheses
their tree needs, constants are printed by :func:`ndlog.builtins.format_value`, unnamed rules
are printed without a name (the parser names them again), and the hidden predicates of a
rewritten program are kept by a ``#hidden(p, ...).`` statement. Used by
``psn localize`` and wherever a program or rule is shown to a user.

Deliberately not here: layout choices beyond one statement per line (no alignment or
wrapping), comments (the AST has none), and any checking: printing an ill-formed AST gives
text the parser or :mod:`ndlog.checks` will reject.
"""

from __future__ import annotations

from . import ast as A
from .builtins import format_value

__all__ = ["format_program", "format_rule", "format_atom", "format_term", "format_literal",
           "format_fact", "format_materialize", "format_hidden"]

# binding strength: sums < products < unary minus < primaries
_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}
_NEG, _PRIMARY = 3, 4


def _prec(term: A.Term) -> int:
    if isinstance(term, A.BinOp):
        return _PREC[term.op]
    if isinstance(term, A.Neg):
        return _NEG
    if isinstance(term, A.Const) and isinstance(term.value, (int, float)) \
            and not isinstance(term.value, bool) and term.value < 0:
        return _NEG  # printed with a leading '-'
    return _PRIMARY


def _wrap(term: A.Term, need: int) -> str:
    text = format_term(term)
    return f"({text})" if _prec(term) < need else text


def format_term(term: A.Term) -> str:
    """NDlog text of a term (variable, constant, list, expression, builtin call, aggregate).

    Binary operators are left-associative (docs/language.md, section 3), so a right operand
    of equal strength is parenthesized: ``X - (Y - Z)``, while ``X - Y - Z`` needs none.
    """
    if isinstance(term, A.Var):
        return term.name
    if isinstance(term, A.Const):
        return format_value(term.value)
    if isinstance(term, A.ListExpr):
        return "[" + ", ".join(format_term(t) for t in term.items) + "]"
    if isinstance(term, A.BinOp):
        p = _PREC[term.op]
        return f"{_wrap(term.left, p)} {term.op} {_wrap(term.right, p + 1)}"
    if isinstance(term, A.Neg):
        inner = _wrap(term.operand, _NEG)
        # '- -X' rather than '--X'; '-(-3)' rather than '--3'
        return "-" + (" " + inner if inner.startswith("-") else inner)
    if isinstance(term, A.Call):
        return f"{term.name}(" + ", ".join(format_term(a) for a in term.args) + ")"
    if isinstance(term, A.Aggregate):
        return f"{term.func}<{term.var.name if term.var is not None else '*'}>"
    raise TypeError(f"not an NDlog term: {term!r}")


def format_atom(atom: A.Atom) -> str:
    """``pred(@L, t2, ...)``, the ``@`` on the location argument."""
    args = [("@" if i == atom.loc else "") + format_term(a) for i, a in enumerate(atom.args)]
    return f"{atom.pred}(" + ", ".join(args) + ")"


def format_literal(lit: A.Literal) -> str:
    """A body literal: an atom, ``not`` an atom, ``X := e`` or ``l op r``."""
    if isinstance(lit, A.Atom):
        return format_atom(lit)
    if isinstance(lit, A.Negated):
        return "not " + format_atom(lit.atom)
    if isinstance(lit, A.Assign):
        return f"{lit.var.name} := {format_term(lit.expr)}"
    if isinstance(lit, A.Compare):
        return f"{format_term(lit.left)} {lit.op} {format_term(lit.right)}"
    raise TypeError(f"not an NDlog body literal: {lit!r}")


def format_rule(rule: A.Rule) -> str:
    """``name head :- body.``; a rule whose name was generated (``named`` False) is printed
    without it."""
    name = f"{rule.name} " if rule.named else ""
    body = ", ".join(format_literal(lit) for lit in rule.body)
    return f"{name}{format_atom(rule.head)} :- {body}."


def format_fact(fact: A.Fact) -> str:
    """A fact as an NDlog fact statement, e.g. ``link(@a, b, 3).``

    Parameters
    ----------
    fact:
        A parsed fact.

    Returns
    -------
    str
        The statement, which the parser reads back to the same fact.
    """
    return format_atom(fact.atom) + "."


def _limit(x: float) -> str:
    return "infinity" if x == float("inf") else str(int(x))


def format_materialize(table: A.Materialize) -> str:
    """``materialize(name, lifetime, size, keys(i, ...)).``"""
    keys = ", ".join(str(k) for k in table.keys)
    return (f"materialize({table.pred}, {_limit(table.lifetime)}, {_limit(table.size)}, "
            f"keys({keys})).")


def format_hidden(preds) -> str:
    """``#hidden(p, q).``: the statement that marks auxiliary predicates as hidden."""
    return "#hidden(" + ", ".join(sorted(preds)) + ")."


def format_program(program: A.Program) -> str:
    """The whole program as NDlog text, one statement per line.

    Order: ``materialize`` declarations, the ``#hidden`` statement (if any predicate is
    hidden), rules, then facts, each kind in program order, so that parsing the text gives
    back an equal :class:`~ndlog.ast.Program` (spans, file name and source text aside).

    Parameters
    ----------
    program:
        Any program, e.g. the output of :func:`localize.localize` (Nigam et al. 2012,
        Sec. 2.1: the localized program is itself an NDlog program).
    """
    lines = [format_materialize(t) for t in program.tables]
    if program.hidden:
        lines.append(format_hidden(program.hidden))
    lines += [format_rule(r) for r in program.rules]
    lines += [format_fact(f) for f in program.facts]
    return "\n".join(lines) + ("\n" if lines else "")
