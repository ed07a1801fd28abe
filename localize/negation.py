"""Negated atoms through rule localization: two passes around :data:`localize.PASSES`.

Role: a negated atom ``not q(@L, ...)`` is evaluated at the node that stores ``q``'s tuples
at ``L`` (there the relation is complete once quiescent, Nigam et al. 2012, Sec. 2.1: every
rule body is evaluated at one node). The localizer's passes know positive atoms, which they
move with their location, and comparisons, which they push to wherever their variables are
bound; a negated atom must move with its location like an atom, but must bind nothing and
link nothing. :func:`hide_negations` therefore turns each negated atom into a *placeholder*
atom at the same location whose only other argument is the list of the atom's arguments
(a list expression names no location, so it is no link, and binds no variable), and
:func:`restore_negations` turns the placeholders back, after the passes, into negated atoms
of the rules they were moved into. A placeholder predicate is ``not<k>$q`` (``k`` the
position of ``q``'s ``@``), which is no NDlog name, so it never meets a program predicate and
never reaches the engine.

After the round trip every negated atom sits in the rule evaluated at its location: the
shipping rule of that location, or the residual rule at the root. It can be evaluated there
only if its variables are bound there, by the atoms of that location, the link mirror and
what was shipped in from further away; :func:`restore_negations` checks it and otherwise
rejects the rule with a :class:`~ndlog.errors.LocalizationError` ("cannot be localized").
That a negated atom's location is the location of some positive atom of its rule is a
static check of the language (:mod:`ndlog.checks`), made before localization.

Deliberately not here: deciding how a rule is localized (:mod:`localize.analysis`), and
the passes themselves (:mod:`localize.passes`), which see only positive atoms.
"""

from __future__ import annotations

import re

from ndlog import ast as A
from ndlog.errors import LocalizationError

from .analysis import bound_in_body, same_location, show_location

__all__ = ["hide_negations", "restore_negations", "placeholder_pred", "check_locations"]

_PLACEHOLDER = re.compile(r"not(\d+)\$(.+)\Z")


def placeholder_pred(atom: A.Atom) -> str:
    """The placeholder predicate of a negated atom: ``not<k>$q``, ``k`` its ``@`` position."""
    return f"not{atom.loc}${atom.pred}"


def _hide(neg: A.Negated) -> A.Atom:
    atom = neg.atom
    return A.Atom(placeholder_pred(atom), (atom.loc_term, A.ListExpr(atom.args, neg.span)), 0,
                  neg.span)


def _restore(lit: A.Literal) -> A.Literal:
    if not isinstance(lit, A.Atom):
        return lit
    m = _PLACEHOLDER.match(lit.pred)
    if m is None:
        return lit
    items = lit.args[1].items  # type: ignore[union-attr]
    return A.Negated(A.Atom(m.group(2), items, int(m.group(1)), lit.span), lit.span)


def hide_negations(program: A.Program, *, log: list | None = None) -> A.Program:
    """Replace every negated atom by its placeholder atom (see the module docstring).

    Examples
    --------
    Before::

        u1 lonely(@S, D) :- link(@S, Z), node(@Z, D), not link(@Z, D).

    After::

        u1 lonely(@S, D) :- link(@S, Z), node(@Z, D), not0$link(@Z, [Z, D]).

    Raises
    ------
    LocalizationError
        If a negated atom is at a location where no positive atom of its rule is.
    """
    if not program.negated:
        return program
    rules = []
    for r in program.rules:
        _check_location(r, program.source)
        if r.negations:
            body = tuple(_hide(lit) if isinstance(lit, A.Negated) else lit for lit in r.body)
            r = A.Rule(r.name, r.head, body, r.named, r.span)
        rules.append(r)
    return program.with_(rules=tuple(rules))


def check_locations(program: A.Program) -> None:
    """Every negated atom of a distributed ``program`` is at a location of a positive atom
    of its rule (:class:`~ndlog.errors.LocalizationError` otherwise): what the engine needs
    even of a rule that is not rewritten."""
    if program.distributed:
        for r in program.rules:
            _check_location(r, program.source)


def _check_location(rule: A.Rule, source: str | None) -> None:
    """The negated atoms of ``rule`` are at locations of its positive atoms (the static
    check of :mod:`ndlog.checks` says so first; a program parsed without checks meets it
    here)."""
    positive = [a.loc_term for a in rule.body_atoms]
    for neg in rule.negations:
        loc = neg.atom.loc_term
        if loc is not None and not any(same_location(loc, p) for p in positive):
            raise LocalizationError(
                f"rule '{rule.name}' cannot be localized: its negated atom '{neg.pred}' is "
                f"at {show_location(loc)}, where no positive atom of the rule is",
                neg.span or rule.span, source,
                hint=f"add a positive atom located at {show_location(loc)}")


def restore_negations(program: A.Program, original: A.Program | None = None, *,
                      log: list | None = None) -> A.Program:
    """Turn placeholders back into negated atoms, and check that each can be evaluated.

    Parameters
    ----------
    program:
        The localized program, with placeholders.
    original:
        The program before localization (for the position and name of a rejected rule).
    log:
        The localizer's :class:`~localize.passes.Event` list, whose rules are restored too
        (what ``psn localize --explain`` prints).

    Examples
    --------
    Before (``u1`` localized)::

        u1b u1_aux(@S, Z, D) :- node(@Z, D), not0$link(@Z, [Z, D]), link_rev(@Z, S).
        u1c lonely(@S, D) :- link(@S, Z), u1_aux(@S, Z, D).

    After::

        u1b u1_aux(@S, Z, D) :- node(@Z, D), not link(@Z, D), link_rev(@Z, S).
        u1c lonely(@S, D) :- link(@S, Z), u1_aux(@S, Z, D).

    Raises
    ------
    LocalizationError
        If a negated atom landed in a rule that does not bind all of its variables: the
        atom's location does not know a value the negation needs.
    """
    if not any(_PLACEHOLDER.match(a.pred) for r in program.rules for a in r.body_atoms):
        return program
    rules = []
    for r in program.rules:
        body = tuple(_restore(lit) for lit in r.body)
        rules.append(A.Rule(r.name, r.head, body, r.named, r.span))
    for r in rules:
        _check_bound(r, original or program, rules)
    if log is not None:
        for i, e in enumerate(log):
            made = e.rule
            body = tuple(_restore(lit) for lit in made.body)
            log[i] = type(e)(e.origin, e.kind, A.Rule(made.name, made.head, body, made.named,
                                                      made.span), e.why)
    return program.with_(rules=tuple(rules))


def _check_bound(rule: A.Rule, original: A.Program, rules) -> None:
    if not rule.negations:
        return
    bound = bound_in_body(rule)
    for neg in rule.negations:
        for v in A.literal_vars(neg.atom):
            if v.name in bound:
                continue
            written = next((r for r in original.rules if r.span is not None
                            and r.span == rule.span), None)
            name = written.name if written is not None else rule.name
            v = _unknown_var(v, rule, rules)
            raise LocalizationError(
                f"rule '{name}' cannot be localized: its negated atom '{neg.pred}' is "
                f"evaluated at {show_location(neg.atom.loc_term)}, which does not know "
                f"{v.name} (only atoms at other locations bind it)",
                v.span or neg.span or rule.span, original.source,
                hint=f"bind {v.name} with an atom at {show_location(neg.atom.loc_term)}, or "
                     "move the negation to the location that binds it")


def _unknown_var(v: A.Var, rule: A.Rule, rules) -> A.Var:
    """The variable a message names for ``v``, unknown where ``rule`` evaluates a negation:
    ``v`` itself, or, for a variable assigned elsewhere (``Y := X * 2``, and the fresh
    variable of a lifted argument expression: ``not q(@Z, X * 2)`` is evaluated as
    ``_E1 := X * 2, not q(@Z, _E1)``, :func:`ndlog.rewrite.lift_atom_expressions`), the
    first variable of the expression that ``rule`` does not bind: the one a user can move.
    ``rules`` are the localized rules, among them those made from the same written rule
    (the same span), one of which holds the assignment."""
    bound = bound_in_body(rule)
    for r in rules:
        if r.span != rule.span:
            continue
        for lit in r.body:
            if isinstance(lit, A.Assign) and lit.var.name == v.name:
                return next((w for w in A.term_vars(lit.expr) if w.name not in bound), v)
    return v
