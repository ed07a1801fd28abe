"""Static checks of an NDlog program (docs/language.md, section 8).

Role: decide, before anything runs, whether a parsed :class:`~ndlog.ast.Program` is one the
runtime gives a meaning to, and otherwise raise :class:`~ndlog.errors.NDlogSemanticError`
pointing at the offending term with a one-sentence message. :func:`check_program` runs the
checks below in a fixed order and stops at the first error; each check is a small function
of the program that either returns or raises:

``arity``           a predicate is used with one number of arguments;
``location``        in a distributed program every atom has exactly one ``@``, at the same
                    argument position for every use of a predicate, on a variable or a
                    constant; a negated atom is at the location of a positive atom of its
                    rule (else the rule cannot be localized);
``builtins``        every ``f_`` call names a builtin of :mod:`ndlog.builtins` with the right
                    number of arguments; no predicate is named ``f_...`` or like a keyword;
``aggregates``      aggregates appear only as whole arguments of rule heads, over a named
                    variable, beside plain group-by arguments;
``materialize``     ``keys`` positions are within the table's arity; lifetime and size are
                    non-negative; a finite size only on a base table (no rule derives it);
``safety``          every variable of a head, an expression, a comparison, an assignment or a
                    negated atom is bound by a positive body atom or an assignment
                    (order-independent);
``stratification``  no predicate depends on itself through a negated atom (the error names
                    the cycle), and an aggregate does not depend recursively on its own
                    result, unless aggregate selection (Liu et al. Sec. 6) applies to it.

Deliberately not here: purely syntactic rules (grammar, ground facts, unique rule names,
positive key positions, at most one ``@`` per atom) are enforced by :mod:`ndlog.parser`;
whether the base facts given to a run fit a table's size is checked where they are read,
by :func:`check_table_sizes` (the reference and the engine's base-fact ledger call it);
whether a distributed rule can be localized is decided by the localizer (``localize/``),
which reports its own :class:`~ndlog.errors.LocalizationError`; the dependency graph and
strata themselves are computed by :mod:`ndlog.analysis`. Checks never modify the program.
"""

from __future__ import annotations

import sys
from typing import Callable, Iterable, Iterator

from . import ast as A
from .builtins import ARITY, format_value
from .text import count_noun
from .errors import InputError, NDlogSemanticError, Span

__all__ = [
    "check_program", "CHECKS",
    "check_arity", "check_location", "check_builtins", "check_aggregates",
    "check_materialize", "check_safety", "check_stratification", "bound_variables",
    "negation_cycle", "check_table_sizes",
]


# -- helpers -----------------------------------------------------------------------------

def _error(program: A.Program, message: str, span: Span | None,
           hint: str | None = None) -> NDlogSemanticError:
    return NDlogSemanticError(message, span, program.source, hint=hint)


def _where(span: Span | None) -> str:
    return f"line {span.line}, column {span.column}" if span else "an earlier statement"


def _in_source_order(nodes: Iterable) -> list:
    """Nodes sorted by their span (nodes without a span keep their order, at the end)."""
    def key(node):
        s = node.span
        return (0, s.line, s.column) if s is not None else (1, 0, 0)
    return sorted(nodes, key=key)


def _rule_label(rule: A.Rule) -> str:
    if rule.named or rule.span is None:
        return f"rule {rule.name}"
    return f"the rule at line {rule.span.line}"


def _literal_terms(lit: A.Literal) -> tuple[A.Term, ...]:
    if isinstance(lit, A.Atom):
        return lit.args
    if isinstance(lit, A.Negated):
        return lit.atom.args
    if isinstance(lit, A.Assign):
        return (lit.var, lit.expr)
    return (lit.left, lit.right)


def _rule_terms(rule: A.Rule) -> Iterator[A.Term]:
    for t in rule.head.args:
        yield from A.subterms(t)
    for lit in rule.body:
        for t in _literal_terms(lit):
            yield from A.subterms(t)


def _span_of(term: A.Term, fallback: Span | None) -> Span | None:
    return getattr(term, "span", None) or fallback


def _agg_text(agg: A.Aggregate) -> str:
    return f"{agg.func}<{agg.var.name if agg.var is not None else '*'}>"


# -- arity -------------------------------------------------------------------------------

def check_arity(program: A.Program) -> None:
    """Every use of a predicate has the same number of arguments (docs/language.md, section 8).

    The error points at the first use whose arity differs from the predicate's first use
    in the source, and names that first use.
    """
    first: dict[str, A.Atom] = {}
    for atom in _in_source_order(program.atoms()):
        seen = first.setdefault(atom.pred, atom)
        if atom.arity != seen.arity:
            raise _error(
                program,
                f"predicate '{atom.pred}' is used with {count_noun(atom.arity, 'argument')} here "
                f"but with {seen.arity} at {_where(seen.span)}; every use of a predicate must "
                "have the same number of arguments", atom.span)


# -- location specifiers -----------------------------------------------------------------

def check_location(program: A.Program) -> None:
    """Location specifiers of a distributed program (docs/language.md, section 4).

    A program with an ``@`` anywhere (rules or facts) is distributed: then every atom has
    exactly one ``@`` argument (the parser rejects two), every use of a predicate has it at
    the same position, and the located argument is a variable or a constant.
    """
    atoms = _in_source_order(program.atoms())
    located = [a for a in atoms if a.loc is not None]
    if not located:
        return
    first_at = located[0]
    first: dict[str, A.Atom] = {}
    for atom in atoms:
        if atom.loc is None:
            raise _error(
                program,
                f"atom '{atom.pred}' has no location specifier, but the program is distributed "
                f"('{first_at.pred}' at {_where(first_at.span)} has one); every atom must mark "
                "one argument with '@'", atom.span,
                hint="a centralized program has no '@' at all")
        term = atom.args[atom.loc]
        if isinstance(term, A.Aggregate):
            raise _error(
                program,
                f"the location specifier of '{atom.pred}' is the aggregate {_agg_text(term)}; "
                "the location must be a variable or a constant (it is part of the group-by "
                "key)", _span_of(term, atom.span))
        if not isinstance(term, (A.Var, A.Const)):
            raise _error(
                program,
                f"the location specifier of '{atom.pred}' is an expression; it must be a "
                "variable or a constant", _span_of(term, atom.span),
                hint="bind the expression to a variable with ':=' and locate on that variable")
        seen = first.setdefault(atom.pred, atom)
        if seen.loc != atom.loc:
            raise _error(
                program,
                f"predicate '{atom.pred}' has its '@' on argument {atom.loc + 1} here but on "
                f"argument {seen.loc + 1} at {_where(seen.span)}; every use of a predicate "
                "must locate the same argument", _span_of(term, atom.span))
    for rule in program.rules:
        _check_negation_location(program, rule)


def _show_loc(term: A.Term) -> str:
    if isinstance(term, A.Var):
        return "@" + term.name
    return "@" + format_value(term.value)  # type: ignore[union-attr]


def _check_negation_location(program: A.Program, rule: A.Rule) -> None:
    """A negated atom is evaluated where its relation is stored, so that location must be
    one the rule's body is evaluated at: the location of a positive atom of the rule (after
    localization, the node that holds that atom's tuples also holds the negated relation's,
    which is complete there once quiescent)."""
    positive = [a.loc_term for a in rule.body_atoms]
    if not positive:   # no location to compare with: check_safety reports the missing atom
        return
    for neg in rule.negations:
        loc = neg.atom.loc_term
        if any(loc == p and not (isinstance(loc, A.Var) and loc.anonymous)
               for p in positive):
            continue
        where = ", ".join(dict.fromkeys(_show_loc(p) for p in positive))
        raise _error(
            program,
            f"{_rule_label(rule)} cannot be localized: the negated atom '{neg.pred}' is at "
            f"{_show_loc(loc)}, where no positive atom of the rule is (they are at {where}); "
            "a negated atom is evaluated at the node that stores its relation, which must be "
            "a node the rule's body is evaluated at", _span_of(loc, neg.span),
            hint=f"add a positive atom located at {_show_loc(loc)} that binds what the "
                 "negation needs, or locate the negated relation with the rule's body")


# -- builtins ----------------------------------------------------------------------------

#: words of the grammar that the contextual lexer would otherwise accept as predicate names
_KEYWORDS = ("materialize", "keys", "infinity", "nil", "not")


def check_builtins(program: A.Program) -> None:
    """Every ``f_`` call names a known builtin with the right arity (:data:`ndlog.builtins.ARITY`);
    no predicate takes a name starting with ``f_`` (reserved for builtins)."""
    for atom in _in_source_order(program.atoms()):
        if atom.pred.startswith("f_"):
            raise _error(
                program,
                f"predicate '{atom.pred}' is named like a builtin; names starting with 'f_' "
                "are reserved for builtin functions", atom.span)
        if atom.pred in _KEYWORDS:
            raise _error(
                program,
                f"predicate '{atom.pred}' has the name of a keyword; "
                f"{', '.join(repr(k) for k in _KEYWORDS)} cannot name predicates", atom.span)
    for rule in program.rules:
        for term in _rule_terms(rule):
            if not isinstance(term, A.Call):
                continue
            if term.name not in ARITY:
                raise _error(
                    program,
                    f"unknown builtin '{term.name}'; the builtins are "
                    f"{', '.join(sorted(ARITY))}", _span_of(term, rule.span))
            want = ARITY[term.name]
            if len(term.args) != want:
                raise _error(
                    program,
                    f"builtin '{term.name}' takes {count_noun(want, 'argument')} but is given "
                    f"{len(term.args)}", _span_of(term, rule.span))


# -- aggregates --------------------------------------------------------------------------

def check_aggregates(program: A.Program) -> None:
    """Aggregates only as whole head arguments (docs/language.md, section 6).

    Not in bodies or facts; over a named variable (``count<*>`` counts rows); when a head
    has an aggregate, its other arguments (the group-by key) are variables or constants.
    That the aggregated variable is bound is part of :func:`check_safety`.
    """
    for fact in program.facts:
        for arg in fact.atom.args:
            if isinstance(arg, A.Aggregate):
                raise _error(
                    program,
                    f"aggregate {_agg_text(arg)} appears in the fact '{fact.pred}'; aggregates "
                    "may appear only in rule heads", _span_of(arg, fact.span))
    for rule in program.rules:
        _check_rule_aggregates(program, rule)


def _check_rule_aggregates(program: A.Program, rule: A.Rule) -> None:
    for lit in rule.body:
        for top in _literal_terms(lit):
            for term in A.subterms(top):
                if isinstance(term, A.Aggregate):
                    where = (f"the body atom '{lit.pred}'" if isinstance(lit, A.Atom)
                             else f"the negated atom '{lit.pred}'"
                             if isinstance(lit, A.Negated) else "a body literal")
                    raise _error(
                        program,
                        f"aggregate {_agg_text(term)} appears in {where} of "
                        f"{_rule_label(rule)}; aggregates may appear only in rule heads",
                        _span_of(term, rule.span))
    head = rule.head
    for top in head.args:
        for term in list(A.subterms(top))[1:]:
            if isinstance(term, A.Aggregate):
                raise _error(
                    program,
                    f"aggregate {_agg_text(term)} is nested in an expression in the head of "
                    f"{_rule_label(rule)}; an aggregate must be a whole head argument",
                    _span_of(term, rule.span))
    if not head.aggregates:
        return
    for i, arg in enumerate(head.args):
        if isinstance(arg, A.Aggregate):
            if arg.var is not None and arg.var.anonymous:
                raise _error(
                    program,
                    f"aggregate {arg.func}<_> in the head of {_rule_label(rule)} aggregates the "
                    "anonymous variable; aggregate a named variable, or use count<*> to count "
                    "rows", _span_of(arg, rule.span))
        elif not isinstance(arg, (A.Var, A.Const)):
            raise _error(
                program,
                f"argument {i + 1} of the head of {_rule_label(rule)} is an expression; "
                "beside an aggregate, the group-by arguments must be variables or "
                "constants", _span_of(arg, head.span),
                hint="compute the expression in the body with ':=' and group by its variable")


# -- materialize -------------------------------------------------------------------------

def check_materialize(program: A.Program) -> None:
    """``materialize`` declarations fit their tables (docs/language.md, section 2).

    Lifetime and size are non-negative (or infinity); a finite size only on a table no rule
    derives (the bound is checked on base facts, :func:`check_table_sizes`); at least one
    key position; key positions are distinct and within the arity of the predicate as it
    is used.
    """
    arities = {}
    for atom in _in_source_order(program.atoms()):
        arities.setdefault(atom.pred, atom.arity)
    derived = {}
    for rule in program.rules:
        derived.setdefault(rule.head.pred, rule.name)
    for table in program.tables:
        for what, value in (("lifetime", table.lifetime), ("size", table.size)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
                    or value != value:
                raise _error(
                    program,
                    f"the {what} of table '{table.pred}' is {value!r}; it must be a "
                    "non-negative integer or infinity", table.span)
            if isinstance(value, int) and value > sys.float_info.max:   # no float holds it
                raise _error(
                    program,
                    f"the {what} of table '{table.pred}' has {len(str(value))} digits, "
                    "more than any bound can use", table.span, hint="write infinity")
        if table.size != float("inf") and table.pred in derived:
            raise _error(
                program,
                f"table '{table.pred}' is derived by rule {derived[table.pred]}, but a size "
                f"bound ({format_value(table.size)}) applies only to base tables", table.span,
                hint="declare its size infinity")
        if not table.keys:
            raise _error(
                program,
                f"table '{table.pred}' declares no key positions; list the 1-based positions "
                "of its primary key, e.g. keys(1)", table.span,
                hint="leave a table undeclared to key it on the whole tuple")
        seen = set()
        arity = arities.get(table.pred)
        for k in table.keys:
            if k in seen:
                raise _error(program,
                             f"key position {k} of table '{table.pred}' is listed twice; "
                             "list each position once", table.span)
            seen.add(k)
            if k < 1 or (arity is not None and k > arity):
                bound = f"1..{arity}" if arity is not None else "1 or more"
                raise _error(
                    program,
                    f"key position {k} of table '{table.pred}' is out of range; '{table.pred}' "
                    f"has {count_noun(arity or 0, 'argument')}, so positions must be in {bound}",
                    table.span)


def check_table_sizes(program: A.Program, facts: dict, new: dict | None = None) -> None:
    """Refuse base facts that do not fit their table's ``materialize`` size.

    A table's size bounds the tuples it holds at one node (the value at its ``@``
    argument, or its first argument if no atom of the program uses it; the whole table in
    a centralized program). PSN does not evict tuples to keep
    a table within its size: base facts that would exceed it are an input error instead.

    Parameters
    ----------
    program:
        The parsed program (its ``materialize`` declarations and ``@`` positions).
    facts:
        ``pred -> iterable of tuples``: every base fact of a predicate, as they would be
        after the update being checked.
    new:
        ``pred -> set of tuples`` the update inserts: the error names one of them at the
        node over its size, if there is one.

    Raises
    ------
    ndlog.errors.InputError
        Naming the table, its size, the node and one of its facts.
    """
    for table in program.tables:
        if table.size == float("inf") or not facts.get(table.pred):
            continue
        loc = next((a.loc for a in program.atoms() if a.pred == table.pred),
                   0 if program.distributed else None)   # unread: its first argument
        per_node: dict = {}
        for t in facts[table.pred]:
            per_node.setdefault(None if loc is None else t[loc], []).append(t)
        for node, rows in per_node.items():
            if len(rows) > table.size:
                fresh = (new or {}).get(table.pred, ())
                example = next((t for t in rows if t in fresh), rows[-1])
                raise _size_error(table, node, len(rows), example, loc)


def _size_error(table: A.Materialize, node, count: int, example: tuple,
                loc: int | None) -> InputError:
    fact = table.pred + "(" + ", ".join(("@" if i == loc else "") + format_value(v)
                                        for i, v in enumerate(example)) + ")"
    bound = count_noun(table.size, "tuple")
    if node is None:
        where = f"holds at most {bound} (its materialize size), but the base facts give it " \
                f"{count}"
    else:
        where = f"holds at most {bound} per node (its materialize size), but the base " \
                f"facts give it {count} at node {format_value(node)}"
    return InputError(f"table '{table.pred}' {where}, e.g. {fact}",
                      hint="raise its size or declare it infinity: PSN does not evict tuples")


# -- safety ------------------------------------------------------------------------------

def _is_plain_var(term: A.Term) -> bool:
    return isinstance(term, A.Var) and not term.anonymous


def _names(term: A.Term) -> list[A.Var]:
    return list(A.term_vars(term))


def _atom_bound(rule: A.Rule) -> dict[str, A.Atom]:
    """Variables bound by positive body atoms (plain-variable arguments), with the atom."""
    out: dict[str, A.Atom] = {}
    for atom in rule.body_atoms:
        for arg in atom.args:
            if _is_plain_var(arg):
                out.setdefault(arg.name, atom)
    return out


def bound_variables(rule: A.Rule) -> tuple[set[str], set[int]]:
    """The variables a rule body can bind, and which body literals bind by ``=``.

    Parameters
    ----------
    rule:
        A rule (its body order does not matter).

    Returns
    -------
    (bound, binders)
        ``bound`` are the names bound at the fixpoint: plain-variable arguments of body
        atoms, then repeatedly ``X := e`` and ``X = e`` (X not yet bound) once every
        variable of ``e`` is bound. ``binders`` holds the body indices of the ``X = e``
        literals that act as assignments (the others are equality tests). Where several
        ``X = e`` could bind X, the first in body order that is ready wins.

    Notes
    -----
    The binding discipline of docs/language.md (section 5): order in the body does not matter;
    a literal is evaluated once its variables are bound.
    """
    bound = set(_atom_bound(rule))
    assigned = {lit.var.name for lit in rule.body if isinstance(lit, A.Assign)}
    binders: set[int] = set()
    done: set[int] = set()
    changed = True
    while changed:
        changed = False
        for i, lit in enumerate(rule.body):
            if i in done:
                continue
            if isinstance(lit, A.Assign):
                if lit.var.name not in bound and all(v.name in bound for v in _names(lit.expr)):
                    bound.add(lit.var.name)
                    done.add(i)
                    changed = True
            elif (isinstance(lit, A.Compare) and lit.op == "=" and _is_plain_var(lit.left)
                  and lit.left.name not in bound and lit.left.name not in assigned
                  and all(v.name in bound for v in _names(lit.right))):
                bound.add(lit.left.name)
                binders.add(i)
                done.add(i)
                changed = True
    return bound, binders


def check_safety(program: A.Program) -> None:
    """Every variable that needs a value gets one (docs/language.md, section 8: safety).

    Per rule: the body has a positive atom; ``_`` appears only as a plain argument of a body
    atom; ``X := e`` does not rebind a variable bound by an atom or another ``:=``; and every
    variable of the head (aggregated ones included), of an expression argument of a body
    atom, of an assignment's right-hand side and of a comparison is in
    :func:`bound_variables`.
    """
    for rule in program.rules:
        _check_anonymous(program, rule)
        _check_rebinding(program, rule)
        _check_bound(program, rule)


def _check_anonymous(program: A.Program, rule: A.Rule) -> None:
    def anon(term: A.Term):
        for t in A.subterms(term):
            if isinstance(t, A.Var) and t.anonymous:
                return t
            if isinstance(t, A.Aggregate) and t.var is not None and t.var.anonymous:
                return t
        return None

    for arg in rule.head.args:
        bad = anon(arg)
        if bad is not None and not isinstance(bad, A.Aggregate):
            raise _error(program,
                         f"the anonymous variable '_' appears in the head of {_rule_label(rule)}; "
                         "a head argument needs a value, so use a named variable",
                         _span_of(bad, rule.head.span))
    for lit in rule.body:
        if isinstance(lit, A.Negated):
            _check_negated_anonymous(program, rule, lit)
            continue
        if isinstance(lit, A.Atom):
            terms = [a for a in lit.args if not isinstance(a, A.Var)]
            where = f"an expression argument of the body atom '{lit.pred}'"
        elif isinstance(lit, A.Assign):
            terms = [lit.var, lit.expr]
            where = "an assignment"
        else:
            terms = [lit.left, lit.right]
            where = "a comparison"
        for term in terms:
            bad = anon(term)
            if bad is not None:
                raise _error(program,
                             f"the anonymous variable '_' appears in {where} in "
                             f"{_rule_label(rule)}; '_' may only stand alone as an argument of "
                             "a body atom", _span_of(bad, lit.span))


def _check_negated_anonymous(program: A.Program, rule: A.Rule, neg: A.Negated) -> None:
    """``_`` as a whole argument of a negated atom means "for no value at all": the
    negation of a projection, which every evaluator makes
    (:func:`ndlog.rewrite.project_negated_wildcards`). Not at the atom's location (the
    projection must be stored somewhere) and not inside an expression."""
    for i, arg in enumerate(neg.atom.args):
        whole = isinstance(arg, A.Var) and arg.anonymous
        if whole and i != neg.atom.loc:
            continue
        for t in A.subterms(arg):
            if isinstance(t, A.Var) and t.anonymous:
                where = "at the location of" if whole else "inside an expression of"
                raise _error(
                    program,
                    f"the anonymous variable '_' appears {where} the negated atom "
                    f"'{neg.pred}' in {_rule_label(rule)}; '_' under 'not' may only stand "
                    "alone as an argument other than the location",
                    _span_of(t, neg.span),
                    hint=f"name the value: bind it with a positive atom or an assignment, "
                         f"or negate a projection of {neg.pred} without that column")


def _check_rebinding(program: A.Program, rule: A.Rule) -> None:
    by_atom = _atom_bound(rule)
    by_assign: dict[str, A.Assign] = {}
    for lit in rule.body:
        if not isinstance(lit, A.Assign):
            continue
        name = lit.var.name
        if name in by_atom:
            raise _error(
                program,
                f"variable '{name}' is assigned with ':=' in {_rule_label(rule)} but is already "
                f"bound by the body atom '{by_atom[name].pred}'; ':=' binds a new variable",
                _span_of(lit.var, lit.span), hint=f"to test a value, write {name} == ...")
        if name in by_assign:
            raise _error(
                program,
                f"variable '{name}' is assigned twice with ':=' in {_rule_label(rule)} (first at "
                f"{_where(by_assign[name].span)}); a variable is assigned at most once",
                _span_of(lit.var, lit.span))
        by_assign[name] = lit


def _check_bound(program: A.Program, rule: A.Rule) -> None:
    if not rule.body_atoms:
        if rule.negations:
            raise _error(
                program,
                f"{_rule_label(rule)} has no positive atom in its body; a negated atom binds "
                "nothing, so a rule body needs at least one positive atom", rule.span,
                hint="add a positive atom that binds the negated atom's variables")
        raise _error(
            program,
            f"{_rule_label(rule)} has no atom in its body; a rule body needs at least one "
            "positive atom", rule.span, hint="state a constant tuple as a fact instead")
    bound, binders = bound_variables(rule)
    label = _rule_label(rule)

    def first_unbound(term: A.Term) -> A.Var | None:
        for v in A.term_vars(term):
            if v.name not in bound:
                return v
        return None

    def fail(var: A.Var, where: str, fallback: Span | None, hint: str | None = None):
        raise _error(program,
                     f"variable '{var.name}' {where} is not bound by any body atom or "
                     "assignment", _span_of(var, fallback), hint=hint)

    for i, lit in enumerate(rule.body):
        if isinstance(lit, A.Negated):
            for arg in lit.atom.args:
                v = first_unbound(arg)
                if v is not None:
                    fail(v, f"in the negated atom '{lit.pred}' in {label}", lit.span,
                         hint="a negated atom binds nothing: bind its variables with a "
                              "positive atom or an assignment of the rule")
            continue
        if isinstance(lit, A.Atom):
            for arg in lit.args:
                if isinstance(arg, A.Var):
                    continue
                v = first_unbound(arg)
                if v is not None:
                    fail(v, f"in an argument expression of the body atom '{lit.pred}' in "
                            f"{label}", lit.span,
                         hint="only plain variable arguments of body atoms bind variables")
        elif isinstance(lit, A.Assign):
            v = first_unbound(lit.expr)
            if v is not None:
                fail(v, f"in the assignment to '{lit.var.name}' in {label}", lit.span)
        elif i not in binders:
            if lit.op == "=" and _is_plain_var(lit.left):  # X = e: e's variables first
                v = first_unbound(lit.right) or first_unbound(lit.left)
            else:
                v = first_unbound(lit.left) or first_unbound(lit.right)
            if v is not None:
                hint = None
                if lit.op == "=" and isinstance(lit.right, A.Var) and v is lit.right:
                    hint = f"to assign, put the variable on the left: {v.name} = ..."
                fail(v, f"in a comparison in {label}", lit.span, hint=hint)
    for arg in rule.head.args:
        v = first_unbound(arg)
        if v is None:
            continue
        if isinstance(arg, A.Aggregate):
            fail(v, f"of the aggregate {_agg_text(arg)} in the head of {label}", arg.span)
        fail(v, f"in the head of {label}", rule.head.span)


# -- stratification ----------------------------------------------------------------------

def negation_cycle(program: A.Program, rule: A.Rule, neg: A.Negated) -> list[str] | None:
    """The cycle of predicates through ``neg`` if ``rule`` recurses through it, else None.

    Returns
    -------
    list of str or None
        ``[head, "not q", ..., head]``: the rule's head reads ``not q``, and ``q`` depends
        (through the dependency graph, positively or not) on the head again; each later
        element is a predicate the previous one reads, prefixed ``not `` when it is read
        under negation.
    """
    from . import analysis

    head = rule.head.pred
    edges: dict[str, list[tuple[str, bool]]] = {}
    for d in analysis.dependency_graph(program):
        edges.setdefault(d.head, []).append((d.body, d.negated))
    start = neg.pred
    parent: dict[str, tuple[str, bool] | None] = {start: None}
    queue = [start]
    while queue:
        cur = queue.pop(0)
        if cur == head:
            break
        for nxt, negated in sorted(edges.get(cur, ())):
            if nxt not in parent:
                parent[nxt] = (cur, negated)
                queue.append(nxt)
    if head not in parent:
        return None
    path: list[str] = []
    cur = head
    while parent[cur] is not None:
        prev, negated = parent[cur]  # type: ignore[misc]
        path.append(("not " if negated else "") + cur)
        cur = prev
    return [head, "not " + start] + path[::-1]


def _check_negation_strata(program: A.Program) -> None:
    for rule in _in_source_order(program.rules):
        for neg in rule.negations:
            cycle = negation_cycle(program, rule, neg)
            if cycle is None:
                continue
            why = ("which is its own head" if neg.pred == rule.head.pred else
                   f"but '{neg.pred}' depends on '{rule.head.pred}'")
            raise _error(
                program,
                f"recursion through negation: {_rule_label(rule)} derives '{rule.head.pred}' "
                f"from 'not {neg.pred}', {why} ({' -> '.join(cycle)}); a negated relation "
                "must not depend on the rule's head", neg.span,
                hint="negation is stratified: compute the negated relation without the "
                     "relation that reads its absence")


def check_stratification(program: A.Program) -> None:
    """No recursion through negation, and no aggregate over a recursive dependency on its own
    result (docs/language.md, section 8).

    A negated atom must read a relation in a lower stratum than the rule's head (stratified
    negation): the error names the cycle of predicates, e.g. ``p -> not q -> p``.

    An aggregate rule whose body reaches its own head predicate in the dependency graph
    (:func:`ndlog.analysis.recursive_aggregate_rules`) cannot be evaluated stratum by stratum;
    it is an error unless aggregate selection (Liu et al. Sec. 6) accepts the head predicate
    (:func:`ndlog.analysis.aggsel_candidates`).
    """
    from . import analysis

    _check_negation_strata(program)
    bad = analysis.recursive_aggregate_rules(program)
    if not bad:
        return
    accepted = analysis.aggsel_candidates(program)
    comp_of = {p: frozenset(c) for c in analysis.strata(program) for p in c}
    for rule in _in_source_order(bad):
        head = rule.head.pred
        if head in accepted:
            continue
        atom = next(a for a in rule.body_atoms if a.pred in comp_of[head])
        _, agg = rule.head.aggregates[0]
        source = (f"'{head}' itself" if atom.pred == head
                  else f"'{atom.pred}', which depends on '{head}'")
        raise _error(
            program,
            f"aggregate over a recursive dependency: {_agg_text(agg)} in {_rule_label(rule)} "
            f"computes '{head}' from {source}; an aggregate must read "
            "only relations that do not depend on its own result", _span_of(agg, rule.span),
            hint="aggregate in a separate rule over the recursive relation, as minCost does "
                 "over path in shortest path")


# -- driver ------------------------------------------------------------------------------

#: the checks, in the order :func:`check_program` runs them
CHECKS: tuple[Callable[[A.Program], None], ...] = (
    check_arity, check_location, check_builtins, check_aggregates, check_materialize,
    check_safety, check_stratification,
)


def check_program(program: A.Program) -> None:
    """Run every static check of docs/language.md (section 8) on ``program``; return if it passes.

    Parameters
    ----------
    program:
        A parsed program; ``program.source`` (if set) is used to show the offending line.

    Raises
    ------
    NDlogSemanticError
        At the first failed check, with the offending term's span and a one-sentence
        message saying what is wrong and what is expected.

    Notes
    -----
    The dialect is that of the
    declarative-networking systems (Loo et al.) used by Nigam et al. (2012, Sec. 2) and
    Liu et al. (ICDE 2009, Sec. 2). See ``docs/language.md`` for every message.
    """
    for check in CHECKS:
        check(program)
