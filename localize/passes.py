"""The rewrite passes of rule localization (Nigam et al. Sec. 2.1; Loo et al., SIGMOD 2006).

Role: each pass is a function ``pass(program) -> Program`` that returns a new program and
never mutates its argument; :func:`localize.localize` runs :data:`PASSES` in order. Each
pass's docstring shows the NDlog it rewrites, before and after. The decisions (where a rule
runs, which link each step travels along) come from :func:`localize.analysis.plan_rule`, so
every pass sees the same plan.

The passes take one optional keyword, ``log``: a list that receives an :class:`Event` per
rule made, for ``psn localize --explain``. It never changes what the pass returns.

Naming (deterministic, and never clashing with a name already in the program):

* a mirror of predicate ``p`` that moves argument ``k`` (1-based) to the location is
  ``p_rev`` when ``k`` is the first argument after ``p``'s location, else ``p_revK``; it
  carries *all* of ``p``'s columns (``link_rev(@Z, S, C) :- link(@S, Z, C).``), so one mirror
  serves every rule, whatever columns it uses;
* the auxiliary predicate of rule ``r`` is ``r_aux`` (``r_aux1``, ``r_aux2``, ... when ``r``
  needs several steps);
* rules made from rule ``r`` are named ``ra``, ``rb``, ... in the order they are made:
  the mirrors it is the first to need, its shipping rules, then its residual rule, which
  replaces ``r`` (so Nigam's ``r2`` becomes ``r2a``, ``r2b``, ``r2c``).

Mirrors and auxiliary predicates are added to ``Program.hidden``. No ``materialize`` is made
for them: they are derived, and lifetimes and keys apply to base tuples only.

One more pass is not part of localization: :func:`one_query_per_aggregate`, the rewrite
behind single-aggregate selection (Liu et al. 2009, Sec. 7.4), which the engine applies
before localizing when a run's aggregate selection is ``single``
(:meth:`engine.options.RunOptions.resolve`).

Deliberately not here: deciding whether and how a rule can be localized (that is
:mod:`localize.analysis`) and printing (:mod:`ndlog.printer`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ndlog import ast as A
from ndlog.rewrite import fresh_name as _fresh

from .analysis import (Plan, Step, mirror_index, plan_rule, query_splits, same_location,
                       show_location)

__all__ = ["Event", "add_link_mirrors", "ship_remote_atoms", "name_unnamed_rules", "PASSES",
           "unfold_hidden", "one_query_per_aggregate",
           "mirror_name", "suffix_names"]


@dataclass(frozen=True)
class Event:
    """One rule made by a pass: ``origin`` is the name of the input rule it comes from,
    ``kind`` is ``"mirror"``, ``"ship"``, ``"residual"`` or ``"renamed"`` (an unnamed rule
    given the name the parser will give it), or for :func:`one_query_per_aggregate`
    ``"copy"``, ``"reader"`` or ``"input"``; ``why`` says why in words."""

    origin: str
    kind: str
    rule: A.Rule
    why: str


# -- names -------------------------------------------------------------------------------

def suffix_names(base: str) -> Iterable[str]:
    """``base + 'a'``, ``base + 'b'``, ..., ``base + 'z'``, ``base + 'aa'``, ..."""
    n = 0
    while True:
        n += 1
        k, letters = n, ""
        while k:
            k, r = divmod(k - 1, 26)
            letters = chr(ord("a") + r) + letters
        yield base + letters


def _next_rule_name(base: str, taken: set[str]) -> str:
    for name in suffix_names(base):
        if name not in taken:
            taken.add(name)
            return name
    raise AssertionError("unreachable")  # pragma: no cover


def mirror_name(atom: A.Atom, position: int) -> str:
    """The preferred name of the mirror of ``atom``'s predicate moving ``position`` (0-based)
    to the location: ``p_rev`` for the first argument after the location, else ``p_revK``."""
    first = 1 if atom.loc == 0 else 0
    return f"{atom.pred}_rev" if position == first else f"{atom.pred}_rev{position + 1}"


def _all_rule_names(program: A.Program) -> set[str]:
    return {r.name for r in program.rules}


# -- add_link_mirrors --------------------------------------------------------------------

def _mirror_vars(atom: A.Atom) -> list[A.Var]:
    """Variables for a mirror rule: the atom's own names where they are distinct plain
    variables, fresh ``A1``, ``A2``, ... elsewhere."""
    names: list[str | None] = []
    for arg in atom.args:
        ok = isinstance(arg, A.Var) and not arg.anonymous and arg.name not in names
        names.append(arg.name if ok else None)
    used = {n for n in names if n}
    out = []
    for i, n in enumerate(names):
        if n is None:
            k, n = i + 1, f"A{i + 1}"
            while n in used:
                k += len(names)
                n = f"A{k}"
            used.add(n)
        out.append(A.Var(n))
    return out


def _mirror_rule(name: str, pred: str, atom: A.Atom, position: int, span) -> A.Rule:
    vs = _mirror_vars(atom)
    body = A.Atom(atom.pred, tuple(vs), atom.loc, atom.span)
    rest = [v for i, v in enumerate(vs) if i not in (position, atom.loc)]
    head = A.Atom(pred, (vs[position], vs[atom.loc], *rest), 0, atom.span)
    return A.Rule(name, head, (body,), True, span)


def add_link_mirrors(program: A.Program, *, log: list | None = None) -> A.Program:
    """Add a mirror of every link atom that a localization step ships against.

    A step that ships the atoms at ``Z`` to ``S`` along a link ``link(@S, Z)`` stored at ``S``
    needs ``Z`` to know ``S``: the mirror ``link_rev(@Z, S)`` stores each link at its other
    end (Nigam Sec. 2.1, ``co-link``). One mirror is made per link predicate and direction,
    placed just before the first rule that needs it and shared by every later one; a mirror
    already in the program is reused.

    Examples
    --------
    Before::

        r1 reachable(@S, D) :- link(@S, D).
        r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).

    After (``link_rev`` hidden)::

        r1 reachable(@S, D) :- link(@S, D).
        r2a link_rev(@Z, S) :- link(@S, Z).
        r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
    """
    if not program.distributed:
        return program
    have = mirror_index(program)
    taken_preds = set(program.predicates)
    taken_rules = _all_rule_names(program)
    rules: list[A.Rule] = []
    hidden = set(program.hidden)
    for rule in program.rules:
        plan = plan_rule(rule, program.source)
        for step in plan.steps:
            if not step.mirrored:
                continue
            atom, pos = step.via.atom, step.via.position
            key = (atom.pred, pos)
            if key in have:
                continue
            pred = _fresh(mirror_name(atom, pos), taken_preds)
            made = _mirror_rule(_next_rule_name(rule.name, taken_rules), pred, atom, pos,
                                rule.span)
            have[key] = pred
            hidden.add(pred)
            rules.append(made)
            if log is not None:
                log.append(Event(rule.name, "mirror", made,
                                 f"stores each {atom.pred} tuple also at the node its argument "
                                 f"{pos + 1} names, so that {show_location(step.child)} "
                                 f"knows {show_location(step.parent)}"))
        rules.append(rule)
    return program.with_(rules=tuple(rules), hidden=frozenset(hidden))


# -- ship_remote_atoms -------------------------------------------------------------------

def _plain_var_names(term: A.Term) -> list[str]:
    return [v.name for v in A.term_vars(term)]


def _lit_var_names(lit: A.Literal) -> list[str]:
    return [v.name for v in A.literal_vars(lit)]


def _push_down(others: list[tuple[int, A.Literal]], bound: set[str],
               held: set[str] = frozenset()) -> list[int]:
    """Indices of the non-atom literals that can be evaluated where ``bound`` is known:
    comparisons whose variables are all bound, and assignments whose right-hand side is
    (their variable then becomes bound too), to a fixpoint.

    ``X = e`` with ``X`` unbound here binds ``X`` (shipped, then joined with the rest of the
    rule, which is the equality test it may have been there), unless a ``X := e2`` of the
    rule binds ``X``: the residual rule would then bind ``X`` twice. An assignment to a
    variable of ``held`` stays: an atom at another location reads it inside an argument (a
    negation's placeholder, :mod:`localize.negation`), and must find the assignment in the
    rule when its own location is shipped or joined."""
    assigned = {lit.var.name for _, lit in others if isinstance(lit, A.Assign)}
    pushed: list[int] = []
    changed = True
    while changed:
        changed = False
        for i, lit in others:
            if i in pushed:
                continue
            names = set(_lit_var_names(lit))
            if isinstance(lit, A.Assign):
                target, expr = lit.var.name, lit.expr
            elif (isinstance(lit, A.Compare) and lit.op == "=" and isinstance(lit.left, A.Var)
                  and not lit.left.anonymous and lit.left.name not in bound
                  and lit.left.name not in assigned):
                target, expr = lit.left.name, lit.right
            else:
                if names <= bound:
                    pushed.append(i)
                    changed = True
                continue
            if target not in bound and target not in held \
                    and set(_plain_var_names(expr)) <= bound:
                bound.add(target)
                pushed.append(i)
                changed = True
    return sorted(pushed)


def _mirror_atom(step: Step, mirrors: dict) -> A.Atom:
    atom, pos = step.via.atom, step.via.position
    pred = mirrors.get((atom.pred, pos))
    if pred is None:
        raise ValueError(f"no mirror of {atom.pred} argument {pos + 1}: run add_link_mirrors "
                         "before ship_remote_atoms")
    rest = [a for i, a in enumerate(atom.args) if i not in (pos, atom.loc)]
    return A.Atom(pred, (atom.args[pos], atom.args[atom.loc], *rest), 0, atom.span)


def _anonymize_unused(atom: A.Atom, others: list[A.Literal]) -> A.Atom:
    """Replace by ``_`` the mirror's variables used nowhere else in the shipping rule
    (the location and the parent's location stay): they need not travel, because the
    link atom itself stays in the residual rule and binds them there."""
    count: dict[str, int] = {}
    for lit in [atom, *others]:
        for n in _lit_var_names(lit):
            count[n] = count.get(n, 0) + 1
    args = list(atom.args)
    for i in range(2, len(args)):
        a = args[i]
        if isinstance(a, A.Var) and not a.anonymous and count.get(a.name) == 1:
            args[i] = A.Var("_", a.span)
    return A.Atom(atom.pred, tuple(args), atom.loc, atom.span)


def _ordered_vars(lits: Iterable[A.Literal]) -> list[A.Var]:
    seen, out = set(), []
    for lit in lits:
        for v in A.literal_vars(lit):
            if v.name not in seen:
                seen.add(v.name)
                out.append(A.Var(v.name))
    return out


def _ship_step(cur: A.Rule, step: Step, aux_pred: str, aux_name: str, mirrors: dict,
               aggregate: bool) -> tuple[A.Rule, A.Rule]:
    """One step: move the atoms at ``step.child`` (and the literals they alone bind) into a
    shipping rule whose head is at ``step.parent``; return (shipping rule, residual rule)."""
    body = list(cur.body)
    moved = [i for i, lit in enumerate(body)
             if isinstance(lit, A.Atom) and same_location(lit.loc_term, step.child)]
    sub_atoms = [body[i] for i in moved]
    mirror = _mirror_atom(step, mirrors) if step.mirrored else None
    bound = set()  # only plain arguments bind: not an expression, nor a negation placeholder
    for lit in sub_atoms + ([mirror] if mirror else []):
        bound.update(a.name for a in lit.args if isinstance(a, A.Var) and not a.anonymous)
    others = [(i, lit) for i, lit in enumerate(body) if not isinstance(lit, A.Atom)]
    held = {v.name for i, lit in enumerate(body) if isinstance(lit, A.Atom) and i not in moved
            for arg in lit.args if not isinstance(arg, A.Var) for v in A.term_vars(arg)}
    pushed = _push_down(others, bound, held)
    pushed_lits = [body[i] for i in pushed]
    gone = set(moved) | set(pushed)
    rest = [lit for i, lit in enumerate(body) if i not in gone]
    if mirror is not None:
        mirror = _anonymize_unused(mirror, sub_atoms + pushed_lits)
    aux_body = tuple(sub_atoms + ([mirror] if mirror else []) + pushed_lits)
    needed = set(_lit_var_names(cur.head))
    for lit in rest:
        needed.update(_lit_var_names(lit))
    parent = step.parent
    exported = [v for v in _ordered_vars(aux_body)
                if (aggregate or v.name in needed)
                and not (isinstance(parent, A.Var) and v.name == parent.name)]
    head_loc = A.Var(parent.name) if isinstance(parent, A.Var) else parent
    aux_head = A.Atom(aux_pred, (head_loc, *exported), 0, cur.head.span)
    ship = A.Rule(aux_name, aux_head, aux_body, True, cur.span)
    at = min(gone)
    new_body = [lit for i, lit in enumerate(body) if i not in gone and i < at]
    new_body.append(A.Atom(aux_pred, aux_head.args, 0, body[moved[0]].span))
    new_body += [lit for i, lit in enumerate(body) if i not in gone and i > at]
    return ship, A.Rule(cur.name, cur.head, tuple(new_body), cur.named, cur.span)


def _ship_why(step: Step, aux_pred: str, mirrors: dict) -> str:
    child, parent = show_location(step.child), show_location(step.parent)
    if step.mirrored:
        atom, pos = step.via.atom, step.via.position
        how = (f"along {atom.pred} at {parent} (read at {child} through its mirror "
               f"{mirrors[(atom.pred, pos)]})")
    elif step.via.atom is None:
        how = f"{parent} is a constant every node knows"
    else:
        how = f"along {step.via.atom.pred} at {child}, which names {parent}"
    return f"evaluates the body atoms at {child} there and ships the bindings to {parent} " \
           f"as {aux_pred}, {how}"


def _localize_rule(rule: A.Rule, plan: Plan, mirrors: dict, taken_preds: set[str],
                   taken_rules: set[str], log: list | None) -> list[A.Rule]:
    out: list[A.Rule] = []
    many = len(plan.steps) > 1
    cur = rule
    for k, step in enumerate(plan.steps, 1):
        aux_pred = _fresh(f"{rule.name}_aux{k}" if many else f"{rule.name}_aux", taken_preds)
        ship, cur = _ship_step(cur, step, aux_pred, _next_rule_name(rule.name, taken_rules),
                               mirrors, rule.is_aggregate)
        out.append(ship)
        if log is not None:
            log.append(Event(rule.name, "ship", ship, _ship_why(step, aux_pred, mirrors)))
    final = A.Rule(_next_rule_name(rule.name, taken_rules), cur.head, cur.body, True, rule.span)
    out.append(final)
    if log is not None:
        log.append(Event(rule.name, "residual", final,
                         f"joins at {show_location(plan.root)} what was shipped there "
                         f"({plan.reason})"))
    return out


def ship_remote_atoms(program: A.Program, *, log: list | None = None) -> A.Program:
    """Rewrite every rule whose body spans several locations into rules with local bodies.

    Per :func:`localize.analysis.plan_rule`, the body locations other than the one the rule
    runs at are shipped to their parent location one step at a time, leaves first. A step
    moves the atoms at the child location, with the comparisons and assignments they alone
    bind (filters run before shipping), into a shipping rule whose head is an auxiliary
    predicate at the parent; the variables the rest of the rule needs travel in it. When the
    child does not know the parent, the shipping rule reads the link's mirror (made by
    :func:`add_link_mirrors`, which must run first). For a rule with an aggregate head every
    body variable is shipped, so the aggregate ranges over the same assignments. Rules whose
    body already lives at one location are kept as they are.

    Examples
    --------
    Before (``link_rev`` hidden)::

        r2a link_rev(@Z, S) :- link(@S, Z).
        r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).

    After (``link_rev`` and ``r2_aux`` hidden; Nigam et al. 2012, Sec. 2.1)::

        r2a link_rev(@Z, S) :- link(@S, Z).
        r2b r2_aux(@S, Z, D) :- reachable(@Z, D), link_rev(@Z, S).
        r2c reachable(@S, D) :- link(@S, Z), r2_aux(@S, Z, D).

    A body over three locations takes two steps::

        t1 tri(@S, D, W) :- link(@S, Z), link(@Z, W), owns(@W, D).
        =>
        t1b t1_aux1(@Z, W, D) :- owns(@W, D), link_rev(@W, Z).
        t1c t1_aux2(@S, Z, W, D) :- link(@Z, W), t1_aux1(@Z, W, D), link_rev(@Z, S).
        t1d tri(@S, D, W) :- link(@S, Z), t1_aux2(@S, Z, W, D).
    """
    if not program.distributed:
        return program
    mirrors = mirror_index(program)
    taken_preds = set(program.predicates)
    taken_rules = _all_rule_names(program)
    hidden = set(program.hidden)
    rules: list[A.Rule] = []
    for rule in program.rules:
        plan = plan_rule(rule, program.source)
        if plan.local:
            rules.append(rule)
            continue
        made = _localize_rule(rule, plan, mirrors, taken_preds, taken_rules, log)
        hidden.update(r.head.pred for r in made[:-1])
        rules.extend(made)
    return program.with_(rules=tuple(rules), hidden=frozenset(hidden))


# -- name_unnamed_rules ------------------------------------------------------------------

def name_unnamed_rules(program: A.Program, *, log: list | None = None) -> A.Program:
    """Give the unnamed rules the names the parser would give them in this order.

    The parser names the unnamed rules ``rule1``, ``rule2``, ... in order, skipping names
    that named rules use. After rules are added or removed those names may no longer be
    the ones a printed program gets back when parsed again; this pass makes them so, and
    changes nothing else (named rules keep their names, unnamed rules stay unnamed).

    Examples
    --------
    Before (the first rule was unnamed, ``rule1``, and was rewritten into named rules)::

        rule1a link_rev(@Z, S) :- link(@S, Z).     // named
        ...
        reach(@S, D) :- link(@S, D).               // unnamed, called rule2

    After: the unnamed rule is called ``rule1``, as parsing the printed program calls it.
    """
    taken = {r.name for r in program.rules if r.named}
    counter, rules, changed = 0, [], False
    for r in program.rules:
        if not r.named:
            counter += 1
            name = f"rule{counter}"
            while name in taken:
                counter += 1
                name = f"rule{counter}"
            taken.add(name)
            if name != r.name:
                if log is not None:
                    log.append(Event(r.name, "renamed", A.Rule(name, r.head, r.body, False,
                                                               r.span),
                                     f"parsing the printed program calls it {name}"))
                r = A.Rule(name, r.head, r.body, False, r.span)
                changed = True
        rules.append(r)
    return program.with_(rules=tuple(rules)) if changed else program


#: The passes of :func:`localize.localize`, in order.
PASSES = (add_link_mirrors, ship_remote_atoms, name_unnamed_rules)


# -- unfold_hidden (the inverse, for analyses) -------------------------------------------

def _subst(term: A.Term, env: dict[str, A.Term]) -> A.Term:
    if isinstance(term, A.Var):
        return env.get(term.name, term) if not term.anonymous else term
    if isinstance(term, A.ListExpr):
        return A.ListExpr(tuple(_subst(t, env) for t in term.items), term.span)
    if isinstance(term, A.BinOp):
        return A.BinOp(term.op, _subst(term.left, env), _subst(term.right, env), term.span)
    if isinstance(term, A.Neg):
        return A.Neg(_subst(term.operand, env), term.span)
    if isinstance(term, A.Call):
        return A.Call(term.name, tuple(_subst(a, env) for a in term.args), term.span)
    return term


def _subst_lit(lit: A.Literal, env: dict[str, A.Term]) -> A.Literal:
    if isinstance(lit, A.Atom):
        return A.Atom(lit.pred, tuple(_subst(a, env) for a in lit.args), lit.loc, lit.span)
    if isinstance(lit, A.Assign):
        target = _subst(lit.var, env)
        if isinstance(target, A.Var):
            return A.Assign(target, _subst(lit.expr, env), lit.span)
        return A.Compare("==", target, _subst(lit.expr, env), lit.span)
    if isinstance(lit, A.Negated):
        return A.Negated(_subst_lit(lit.atom, env), lit.span)
    return A.Compare(lit.op, _subst(lit.left, env), _subst(lit.right, env), lit.span)


def _inline(use: A.Atom, definition: A.Rule, taken: set[str]) -> list[A.Literal]:
    """The body of ``definition`` with its head unified with ``use``; the definition's
    other variables keep their names unless ``taken``, then get fresh ones."""
    counts: dict[str, int] = {}
    for lit in definition.body:
        for n in _lit_var_names(lit):
            counts[n] = counts.get(n, 0) + 1
    env: dict[str, A.Term] = {}
    extra: list[A.Literal] = []
    for h, a in zip(definition.head.args, use.args):
        if isinstance(h, A.Var) and not h.anonymous and h.name not in env:
            if isinstance(a, A.Var) and a.anonymous and counts.get(h.name, 0) > 1:
                a = A.Var(_fresh(h.name, taken))
            env[h.name] = a
        else:
            extra.append(A.Compare("==", _subst(h, env), a))
    for n in counts:
        if n not in env:
            env[n] = A.Var(_fresh(n, taken) if n in taken else n)
            taken.add(n)
    return [_subst_lit(lit, env) for lit in definition.body] + extra


def unfold_hidden(program: A.Program) -> A.Program:
    """Inline every hidden predicate defined by one non-recursive rule into its uses, and
    drop its definition: the inverse of localization, for analyses that look for a shape in
    the rules a user wrote (e.g. aggregate selection, :func:`ndlog.analysis.aggsel_candidates`,
    needs ``path`` to be directly recursive). Identical literals of a body are merged.

    Not part of :data:`PASSES`: the result is for reading, not for running distributed
    (its bodies span several locations again).

    Examples
    --------
    Before (``link_rev`` and ``r2_aux`` hidden)::

        r2a link_rev(@Z, S) :- link(@S, Z).
        r2b r2_aux(@S, Z, D) :- reachable(@Z, D), link_rev(@Z, S).
        r2c reachable(@S, D) :- link(@S, Z), r2_aux(@S, Z, D).

    After::

        r2c reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
    """
    defs: dict[str, A.Rule] = {}
    by_head: dict[str, list[A.Rule]] = {}
    for r in program.rules:
        by_head.setdefault(r.head.pred, []).append(r)
    for pred in program.hidden:
        rules = by_head.get(pred, [])
        if len(rules) == 1 and not rules[0].is_aggregate and pred not in program.negated \
                and all(a.pred != pred for a in rules[0].body_atoms):
            defs[pred] = rules[0]
    if not defs:
        return program
    rules: list[A.Rule] = []
    for rule in program.rules:
        if rule.head.pred in defs:
            continue
        body = list(rule.body)
        for _ in range(len(defs) + 1):  # definitions do not nest deeper than that
            if not any(isinstance(lit, A.Atom) and lit.pred in defs for lit in body):
                break
            taken = {n for lit in [rule.head, *body] for n in _lit_var_names(lit)}
            new: list[A.Literal] = []
            for lit in body:
                if isinstance(lit, A.Atom) and lit.pred in defs:
                    new += _inline(lit, defs[lit.pred], taken)
                else:
                    new.append(lit)
            body = new
        merged: list[A.Literal] = []
        for lit in body:
            if lit not in merged:
                merged.append(lit)
        rules.append(A.Rule(rule.name, rule.head, tuple(merged), rule.named, rule.span))
    return program.with_(rules=tuple(rules), hidden=program.hidden - frozenset(defs))


# -- one_query_per_aggregate (single-aggregate selection) -------------------------------

def _rename_atoms(lits: Iterable[A.Literal], names: dict[str, str]) -> tuple:
    return tuple(_renamed(lit, names) for lit in lits)


def _renamed(lit: A.Literal, names: dict[str, str]) -> A.Literal:
    """``lit`` with its predicate renamed by ``names`` (atoms, negated atoms too)."""
    if isinstance(lit, A.Atom) and lit.pred in names:
        return A.Atom(names[lit.pred], lit.args, lit.loc, lit.span)
    if isinstance(lit, A.Negated) and lit.atom.pred in names:
        return A.Negated(_renamed(lit.atom, names), lit.span)
    return lit


def _input_rule(name: str, pred: str, copy: str, head: A.Atom, span) -> A.Rule:
    """``copy(@A1, ..., An) :- pred(@A1, ..., An).``: base facts of ``pred`` feed ``copy``."""
    vs = tuple(A.Var(f"A{i + 1}") for i in range(head.arity))
    return A.Rule(name, A.Atom(copy, vs, head.loc, head.span),
                  (A.Atom(pred, vs, head.loc, head.span),), True, span)


def one_query_per_aggregate(program: A.Program, *, log: list | None = None) -> A.Program:
    """Split every prunable predicate with several aggregates into one copy per aggregate,
    so that each copy is pruned by its own aggregate only: single-aggregate selection.

    Liu et al. (2009, Sec. 7.4) compare multi-aggregate selection, which prunes ``path`` to
    the tuples best for the cost *or* the hop count in one query, with what a system without
    it does: one query per aggregate, each pruned by its aggregate. This pass writes those
    queries into one program. For each predicate ``P`` of
    :func:`localize.analysis.query_splits` (aggregates ``a_1 .. a_k``, ``k >= 2``):

    * every rule deriving ``P`` is copied once per aggregate into ``P_<head>``, named
      ``<rule>_<head>``, with ``P`` renamed in its (recursive) body;
    * every rule reading ``P`` reads the copy of the aggregate it aggregates
      (``minCost :- path``) or joins with (``cheapestPath :- path, minCost``);
    * ``P`` itself is no longer derived: it is hidden, and a rule ``<copy>_in`` feeds any
      base facts given for it into each copy (none in shortest path).

    Each copy has one aggregate, so aggregate selection prunes it by that aggregate only
    (:func:`engine.aggsel.selectors`); the aggregate relations are those of the program as
    written, while the copies are what each query keeps of ``P``. Returns ``program``
    itself when there is nothing to split, so the pass is idempotent.

    Examples
    --------
    Before (shortest path, Liu Query 2)::

        sp1 path(@S, D, P, C, L) :- link(@S, D, C), P := f_concat(S, D), L := 1.
        sp2 path(@S, D, P, C, L) :- link(@S, Z, C1), path(@Z, D, P2, C2, L2), ...
        sp3 minCost(@S, D, min<C>) :- path(@S, D, P, C, L).
        sp4 minHops(@S, D, min<L>) :- path(@S, D, P, C, L).
        sp5 cheapestPath(@S, D, P, C) :- path(@S, D, P, C, L), minCost(@S, D, C).
        sp6 fewestHops(@S, D, P, L) :- path(@S, D, P, C, L), minHops(@S, D, L).

    After (``path`` hidden)::

        sp1_minCost path_minCost(@S, D, P, C, L) :- link(@S, D, C), P := ..., L := 1.
        sp1_minHops path_minHops(@S, D, P, C, L) :- link(@S, D, C), P := ..., L := 1.
        path_minCost_in path_minCost(@A1, A2, A3, A4, A5) :- path(@A1, A2, A3, A4, A5).
        path_minHops_in path_minHops(@A1, A2, A3, A4, A5) :- path(@A1, A2, A3, A4, A5).
        sp2_minCost path_minCost(@S, D, P, C, L) :- link(@S, Z, C1),
                                                    path_minCost(@Z, D, P2, C2, L2), ...
        sp2_minHops path_minHops(@S, D, P, C, L) :- link(@S, Z, C1),
                                                    path_minHops(@Z, D, P2, C2, L2), ...
        sp3 minCost(@S, D, min<C>) :- path_minCost(@S, D, P, C, L).
        sp4 minHops(@S, D, min<L>) :- path_minHops(@S, D, P, C, L).
        sp5 cheapestPath(@S, D, P, C) :- path_minCost(@S, D, P, C, L), minCost(@S, D, C).
        sp6 fewestHops(@S, D, P, L) :- path_minHops(@S, D, P, C, L), minHops(@S, D, L).
    """
    splits = query_splits(program)
    if not splits:
        return program
    taken_rules = _all_rule_names(program)
    heads = {p: next(r.head for r in program.rules if r.head.pred == p) for p in splits}
    inputs_made: set[str] = set()
    rules: list[A.Rule] = []
    for rule in program.rules:
        split = splits.get(rule.head.pred)
        if split is not None:
            rules += _copies(rule, split, taken_rules, log)
            if split.pred not in inputs_made:
                inputs_made.add(split.pred)
                rules += _inputs(split, heads[split.pred], taken_rules, rule.span, log)
            continue
        names = {s.pred: s.copies[s.readers[rule.name]] for s in splits.values()
                 if rule.name in s.readers}
        if not names:
            rules.append(rule)
            continue
        made = A.Rule(rule.name, rule.head, _rename_atoms(rule.body, names), rule.named,
                      rule.span)
        rules.append(made)
        if log is not None:
            for pred, copy in names.items():
                log.append(Event(rule.name, "reader", made,
                                 f"reads {copy}, the copy of {pred} pruned by the aggregate "
                                 f"it uses"))
    return program.with_(rules=tuple(rules), hidden=program.hidden | frozenset(splits))


def _copies(rule: A.Rule, split, taken_rules: set[str], log: list | None) -> list[A.Rule]:
    out = []
    for copy in split.copies.values():
        suffix = copy[len(split.pred) + 1:]
        name = _fresh(f"{rule.name}_{suffix}", taken_rules)
        head = A.Atom(copy, rule.head.args, rule.head.loc, rule.head.span)
        made = A.Rule(name, head, _rename_atoms(rule.body, {split.pred: copy}), True,
                      rule.span)
        out.append(made)
        if log is not None:
            log.append(Event(rule.name, "copy", made,
                             f"derives {copy}, the query of {split.pred} pruned by "
                             f"{suffix} only"))
    return out


def _inputs(split, head: A.Atom, taken_rules: set[str], span,
            log: list | None) -> list[A.Rule]:
    out = []
    for copy in split.copies.values():
        made = _input_rule(_fresh(f"{copy}_in", taken_rules), split.pred, copy, head, span)
        out.append(made)
        if log is not None:
            log.append(Event(split.pred, "input", made,
                             f"base facts given for {split.pred} feed {copy}"))
    return out
