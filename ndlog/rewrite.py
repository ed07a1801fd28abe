"""Rewrite passes of the language core: named functions ``Program -> Program``.

Role: normalizations every evaluator applies before it plans joins, so that each of them
meets the same, simpler rule shapes. :func:`project_negated_wildcards` then
:func:`lift_atom_expressions` are applied by :func:`ndlog.reference.evaluate`
(``psn.evaluate``), by :func:`engine.program.prepare` and by the Spark reference
(``psn.batch``). A pass returns a new program and never mutates its
argument; a program it has nothing to do for is returned as it is (the same object).

Deliberately not here: localization (``localize/``), static checks (:mod:`ndlog.checks`;
a pass expects a checked program and keeps it checked), and anything that changes which
tuples a program derives.
"""

from __future__ import annotations

from typing import Iterator

from . import ast as A

__all__ = ["lift_atom_expressions", "project_negated_wildcards", "is_expression",
           "fresh_name", "LIFTED_PREFIX", "PROJECTION_SUFFIX"]

#: Fresh variables made by :func:`lift_atom_expressions` are ``_E1``, ``_E2``, ... (a name
#: the rule does not use already; ``_`` followed by a letter is a named variable).
LIFTED_PREFIX = "_E"

#: A projection made by :func:`project_negated_wildcards` is named ``<pred>_some`` (then
#: ``<pred>_some_2``, ... for other columns or a name already taken).
PROJECTION_SUFFIX = "_some"


def is_expression(term: A.Term) -> bool:
    """True for an argument that is neither a variable nor a constant (an arithmetic
    expression, a builtin call or a list with variables)."""
    return not isinstance(term, (A.Var, A.Const, A.Aggregate))


def _fresh_names(rule: A.Rule) -> Iterator[str]:
    taken = {v.name for lit in (rule.head, *rule.body) for v in A.literal_vars(lit)}
    k = 0
    while True:
        k += 1
        name = f"{LIFTED_PREFIX}{k}"
        if name not in taken:
            yield name


def _lift_rule(rule: A.Rule) -> A.Rule:
    if not any(is_expression(t) for lit in rule.body
               if isinstance(lit, (A.Atom, A.Negated))
               for t in (lit.args if isinstance(lit, A.Atom) else lit.atom.args)):
        return rule
    names = _fresh_names(rule)
    body: list[A.Literal] = []
    for lit in rule.body:
        atom = lit if isinstance(lit, A.Atom) else lit.atom if isinstance(lit, A.Negated) \
            else None
        if atom is None or not any(is_expression(t) for t in atom.args):
            body.append(lit)
            continue
        args, extra = [], []
        for t in atom.args:
            if not is_expression(t):
                args.append(t)
                continue
            var = A.Var(next(names), getattr(t, "span", None))
            args.append(var)
            if isinstance(lit, A.Atom):        # the atom binds var; test it
                extra.append(A.Compare("==", var, t, getattr(t, "span", None)))
            else:                              # a negation binds nothing: compute var first
                extra.append(A.Assign(var, t, getattr(t, "span", None)))
        new = A.Atom(atom.pred, tuple(args), atom.loc, atom.span)
        if isinstance(lit, A.Atom):
            body.append(new)
            body.extend(extra)
        else:
            body.extend(extra)
            body.append(A.Negated(new, lit.span))
    return A.Rule(rule.name, rule.head, tuple(body), rule.named, rule.span)


def lift_atom_expressions(program: A.Program) -> A.Program:
    """Replace each expression argument of a body atom by a fresh variable plus a literal
    that relates the two.

    In a positive atom the fresh variable is bound by the atom and an equality test follows
    it; in a negated atom it is assigned before the negation (a negation binds nothing).
    Evaluators then see only plain variables and constants as atom arguments, so the order
    in which a join plan visits the atoms never meets an expression over variables that are
    not bound yet: every evaluator's planner (the reference's semi-naive deltas, the
    engine's delta rules, which start from any body atom) handles the rewritten rule.

    The variables of the expression must be bound elsewhere in the rule (by plain arguments
    of positive atoms or by assignments), which :func:`ndlog.checks.check_safety` demands of
    an expression argument as it does of an assignment's right-hand side; the rewritten
    rule passes the same check. Head arguments are left alone (heads are computed after the
    body is bound).

    Examples
    --------
    Before::

        f1 fib(N + 1, X) :- fib(N, X1), fib(N - 1, X2), X := X1 + X2, N < 25.
        m1 missing(@S, K) :- want(@S, K), not have(@S, K * 2).

    After::

        f1 fib(N + 1, X) :- fib(N, X1), fib(_E1, X2), _E1 == N - 1, X := X1 + X2, N < 25.
        m1 missing(@S, K) :- want(@S, K), _E1 := K * 2, not have(@S, _E1).

    Parameters
    ----------
    program:
        A checked program (localized or not).

    Returns
    -------
    Program
        ``program`` itself when no body atom has an expression argument.
    """
    rules = tuple(_lift_rule(r) for r in program.rules)
    if all(a is b for a, b in zip(rules, program.rules)):
        return program
    return program.with_(rules=rules)


def project_negated_wildcards(program: A.Program) -> A.Program:
    """Replace a negated atom with ``_`` arguments by the negation of a projection.

    ``not link(@S, _)`` holds when ``link`` has *no* tuple at ``S`` at all, whatever its
    second column. That is the negation of the projection of ``link`` on its first column,
    which a new hidden rule defines; the negated atom then has only bound arguments, the
    shape every evaluator maintains (stratified: the projection is computed before the
    negation reads it, and the PSN engine maintains it incrementally like any rule). One
    projection per predicate and set of kept columns, shared by every rule that needs it.
    Only top-level ``_`` arguments are projected away, and never the location argument
    (the static checks reject those with their own message).

    Examples
    --------
    Before::

        i1 isolated(@S) :- node(@S), not link(@S, _).

    After::

        #hidden(link_some).
        i1 isolated(@S) :- node(@S), not link_some(@S).
        link_some(@V0) :- link(@V0, _).        // a generated rule (named i1_some)

    Parameters
    ----------
    program:
        A checked program.

    Returns
    -------
    Program
        ``program`` itself when no negated atom has a ``_`` argument.
    """
    taken_preds = set(program.predicates)
    taken_rules = {r.name for r in program.rules}
    made: dict[tuple[str, tuple[int, ...]], str] = {}
    extra: list[A.Rule] = []
    rules = []
    for rule in program.rules:
        body = []
        for lit in rule.body:
            kept = _kept_columns(lit)
            if kept is None:
                body.append(lit)
                continue
            atom = lit.atom
            key = (atom.pred, kept)
            name = made.get(key)
            if name is None:
                name = made[key] = fresh_name(atom.pred + PROJECTION_SUFFIX, taken_preds)
                extra.append(_projection_rule(atom, kept, name,
                                              fresh_name(rule.name + PROJECTION_SUFFIX,
                                                     taken_rules)))
            args = tuple(atom.args[i] for i in kept)
            loc = kept.index(atom.loc) if atom.loc is not None else None
            body.append(A.Negated(A.Atom(name, args, loc, atom.span), lit.span))
        rules.append(rule if len(body) == len(rule.body) and all(
            a is b for a, b in zip(body, rule.body)) else
            A.Rule(rule.name, rule.head, tuple(body), rule.named, rule.span))
    if not extra:
        return program
    return program.with_(rules=tuple(rules) + tuple(extra),
                         hidden=program.hidden | frozenset(made.values()))


def _kept_columns(lit) -> tuple[int, ...] | None:
    """The columns a negated atom keeps when its top-level ``_`` arguments are projected
    away; None if it is not a negation or has none (or one at its location)."""
    if not isinstance(lit, A.Negated):
        return None
    args = lit.atom.args
    anon = [i for i, t in enumerate(args) if isinstance(t, A.Var) and t.anonymous]
    if not anon or lit.atom.loc in anon:
        return None
    return tuple(i for i in range(len(args)) if i not in anon)


def _projection_rule(atom: A.Atom, kept: tuple[int, ...], name: str,
                     rule_name: str) -> A.Rule:
    """``name(@V0, V1, ...) :- pred(...)`` with ``V<i>`` at the kept columns and ``_``
    elsewhere."""
    span = atom.span
    body_args = tuple(A.Var(f"V{i}", span) if i in kept else A.Var("_", span)
                      for i in range(len(atom.args)))
    head_args = tuple(body_args[i] for i in kept)
    loc = kept.index(atom.loc) if atom.loc is not None else None
    head = A.Atom(name, head_args, loc, span)
    return A.Rule(rule_name, head, (A.Atom(atom.pred, body_args, atom.loc, span),), False,
                  span)


def fresh_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_2``, ``base_3``, ... : the first not in ``taken`` (then added to
    it). The names rewrites give the predicates and rules they make."""
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name
