"""Compile rules into delta-rule join plans bound to one node's state and indexes.

Role: for every rule ``h :- b1, ..., bn`` and every body position ``i`` build the delta rule
of Nigam et al. 2012, Sec. 2.3::

    <±, h> :- b1ν, ..., b(i-1)ν, Δbi, b(i+1), ..., bn

as a chain of closures: start from the picked update's tuple (Δbi), then join the other atoms
in a greedy order (most bound arguments first), reading atoms *before* ``i`` from the ν view
(committed state plus the batch's picked-but-uncommitted updates) and atoms *after* ``i`` from
the committed state. Every lookup goes through a hash index on the bound argument positions
(created here, maintained by the node at commit), so firing costs time proportional to the
matches, not to the tables. Assignments and comparisons run as soon as their variables are
bound; expressions mean what :mod:`ndlog.expr` says (the one meaning of expressions).

A plan is compiled once per (rule, delta position) and bound to a node's dictionaries, which
are never replaced (only mutated), so the closures read them directly. A delta rule without
negated atoms is, by default, one generated function instead of the chain
(:mod:`engine.codegen`: the same joins as nested loops with the variables as locals); the
chain stays the reference it is tested against, and serves the rest.

Negated atoms (``not q(...)``) take part as atoms of the *absence* relation ``!q`` that the
node maintains (:meth:`engine.node.Node.absent`): positions ``n .. n+m-1`` after the ``n``
positive atoms. So a positive delta reads every negated atom from the committed state, and
the delta of ``!q`` (``q(t)`` appeared: the absence is deleted; disappeared: inserted) is a
delta rule like any other, with the positive atoms read from ν::

    <±, h> :- b1ν, ..., bnν, !q1ν, ..., Δ!qk, !q(k+1), ..., !qm

A negated atom is looked up (every argument is bound, by the checker's safety rule) as soon
as its variables are bound, and contributes the absence's annotation to the body's parts.

Deliberately not here: picking, committing, annotations beyond handing the body's
(fact, value) parts to the scheme's ``derive``, routing beyond computing the head's location
value.
"""

from __future__ import annotations

import weakref
from dataclasses import replace
from operator import itemgetter
from typing import Callable

from ndlog import ast as A
from ndlog.analysis import monotone_error, monotone_ok
from ndlog.expr import compile_compare, compile_term

from .codegen import join_factory
from .program import absence_pred

__all__ = ["compile_delta_rules", "plan_order"]


def _term_vars(term) -> set[str]:
    return {v.name for v in A.term_vars(term)}


def _lit_ready(lit, bound: set[str]) -> bool:
    if isinstance(lit, A.Assign):
        return _term_vars(lit.expr) <= bound
    if lit.op == "=" and isinstance(lit.left, A.Var) and not lit.left.anonymous \
            and lit.left.name not in bound:
        return _term_vars(lit.right) <= bound
    return (_term_vars(lit.left) | _term_vars(lit.right)) <= bound


def _lit_binds(lit, bound: set[str]) -> str | None:
    """The variable ``lit`` binds, or None when it is a test. An assignment to a variable
    that is bound already is a test of equality: the delta rule of a negated atom binds
    the atom's variables first, also one that the rule as written binds by ``V := e``."""
    if isinstance(lit, A.Assign):
        return lit.var.name if lit.var.name not in bound else None
    if lit.op == "=" and isinstance(lit.left, A.Var) and not lit.left.anonymous \
            and lit.left.name not in bound:
        return lit.left.name
    return None


def _bound_args(atom: A.Atom, bound: set[str]) -> int:
    n = 0
    for t in atom.args:
        if isinstance(t, A.Const):
            n += 1
        elif isinstance(t, A.Var):
            n += (not t.anonymous) and t.name in bound
        elif _term_vars(t) <= bound:
            n += 1
    return n


def plan_order(rule: A.Rule, delta: int) -> list:
    """The evaluation order of the delta rule for body position ``delta``: a list of
    ``("atom", j)``, ``("neg", k)`` and ``("lit", literal)`` items, the delta atom first
    (``("neg", delta - n)`` for a negated atom, ``n`` positive atoms), then greedily the
    positive atom with most bound arguments, each literal and negated atom as soon as its
    variables are bound."""
    atoms = rule.body_atoms
    negs = rule.negated_atoms
    n = len(atoms)
    lits = [lit for lit in rule.body if not isinstance(lit, (A.Atom, A.Negated))]
    if delta < n:
        order: list = [("atom", delta)]
        bound = {v.name for v in A.literal_vars(atoms[delta])}
        left = [j for j in range(n) if j != delta]
        waiting = list(range(len(negs)))
    else:
        order = [("neg", delta - n)]
        bound = {v.name for v in A.literal_vars(negs[delta - n])}
        left = list(range(n))
        waiting = [k for k in range(len(negs)) if k != delta - n]

    def flush_lits():
        progress = True
        while progress:
            progress = False
            for lit in list(lits):
                if _lit_ready(lit, bound):
                    name = _lit_binds(lit, bound)
                    order.append(("lit", lit))
                    lits.remove(lit)
                    if name:
                        bound.add(name)
                    progress = True
            for k in list(waiting):
                if {v.name for v in A.literal_vars(negs[k])} <= bound:
                    order.append(("neg", k))
                    waiting.remove(k)
    flush_lits()
    while left:
        j = max(left, key=lambda k: (_bound_args(atoms[k], bound), -k))
        left.remove(j)
        order.append(("atom", j))
        bound |= {v.name for v in A.literal_vars(atoms[j])}
        flush_lits()
    for lit in lits:  # unsafe leftovers: evaluated last (the checker rejects these)
        order.append(("lit", lit))
    order.extend(("neg", k) for k in waiting)
    return order


def _getter(names: list[str]) -> Callable[[dict], tuple]:
    if not names:
        return lambda env: ()
    if len(names) == 1:
        n = names[0]
        return lambda env: (env[n],)
    return itemgetter(*names)


def _key_fn(parts: list) -> Callable[[dict], tuple]:
    """``parts``: list of ("var", name) / ("fn", compiled term) in key order."""
    if all(kind == "var" for kind, _ in parts):
        return _getter([x for _, x in parts])
    fns = [(lambda env, n=x: env[n]) if kind == "var" else x for kind, x in parts]
    return lambda env: tuple(f(env) for f in fns)


def _analyse_atom(atom: A.Atom, bound: set[str]):
    """Classify the arguments of ``atom`` given the variables already bound.

    Returns (key positions, key parts, binds [(pos, name)], same [(pos, pos0)],
    post [(pos, compiled term)]).
    """
    key_pos, key_parts, binds, same, post = [], [], [], [], []
    first: dict[str, int] = {}
    for p, t in enumerate(atom.args):
        if isinstance(t, A.Var):
            if t.anonymous:
                continue
            if t.name in bound:
                key_pos.append(p)
                key_parts.append(("var", t.name))
            elif t.name in first:
                same.append((p, first[t.name]))
            else:
                first[t.name] = p
                binds.append((p, t.name))
        elif isinstance(t, A.Const):
            key_pos.append(p)
            value = t.value
            key_parts.append(("fn", lambda env, v=value: v))
        elif _term_vars(t) <= bound:
            key_pos.append(p)
            key_parts.append(("fn", compile_term(t)))
        else:
            post.append((p, compile_term(t)))
    return key_pos, key_parts, binds, same, post


def _match_fn(binds, same, post, const_checks):
    """A function ``(t, env) -> bool`` that checks and binds one tuple."""
    if not same and not post and not const_checks:
        if len(binds) == 1:
            (p0, n0), = binds

            def m1(t, env):
                env[n0] = t[p0]
                return True
            return m1

        def mb(t, env):
            for p, n in binds:
                env[n] = t[p]
            return True
        return mb

    def m(t, env):
        for p, f in const_checks:
            if t[p] != f(env):
                return False
        for p, q in same:
            if t[p] != t[q]:
                return False
        for p, n in binds:
            env[n] = t[p]
        for p, f in post:
            if f(env) != t[p]:
                return False
        return True
    return m


def compile_delta_rules(node, rules, program, generate: bool = True
                        ) -> dict[str, list[Callable]]:
    """Compile every delta rule of ``rules`` for ``node``.

    Returns ``predicate -> [fire(sign, tuple, delta_annotation, out)]``: calling ``fire``
    appends ``(destination node, (sign, head_pred, head_tuple, annotation))`` to ``out`` for
    every derivation, as Nigam et al. 2012, Sec. 2.3 / Fig. 2 ``fireRules``. The delta
    rules of a negated atom ``not q(...)`` are filed under ``!q``
    (:func:`engine.program.absence_pred`), the updates of the absence relation.

    With ``generate`` (the default) a delta rule without negated atoms is one generated
    function (:mod:`engine.codegen`); otherwise a chain of closures. The two derive the
    same updates in the same order.
    """
    table: dict[str, list[Callable]] = {}
    for rule in rules:
        atoms = rule.body_atoms
        for i, atom in enumerate(atoms):
            fire = _compile_one(node, rule, i, program, generate)
            table.setdefault(atom.pred, []).append(fire)
        for k, atom in enumerate(rule.negated_atoms):
            fire = _compile_one(node, rule, len(atoms) + k, program, generate)
            table.setdefault(absence_pred(atom.pred), []).append(fire)
    return table


def _raw_plan(rule: A.Rule, delta: int) -> tuple[list, list]:
    """The analysed delta rule, before anything is compiled into closures or source:
    ``(steps, head)``. Steps, in evaluation order (:func:`plan_order`):

    * ``("delta", x, (binds, same, post, consts))``: the delta atom (body position ``x``);
    * ``("atom", x, (pred, mode, positions, key parts, binds, same, post))``, mode
      ``"full"``, ``"index"`` or ``"scan"``, the key parts in position order;
    * ``("neg", x, (pred, key parts))``: a negated atom read as an absence;
    * ``("assign", name, fn)`` and ``("test", fn, None)``: literals.

    ``binds``, ``same``, ``post`` and key parts are :func:`_analyse_atom`'s; ``consts``
    ``[(position, fn)]``. ``head``: per argument ``("var", name)`` or ``("fn", fn)``."""
    atoms = rule.body_atoms
    negs = rule.negated_atoms
    n = len(atoms)
    steps = []
    bound: set[str] = set()
    for k, (kind, x) in enumerate(plan_order(rule, delta)):
        if kind == "neg" and k:
            atom = negs[x]
            _, key_parts, _, _, _ = _analyse_atom(atom, bound)   # every argument bound
            steps.append(("neg", n + x, (atom.pred, key_parts)))
            continue
        if kind == "lit":
            name = _lit_binds(x, bound)
            if name is not None:
                fn = compile_term(x.expr if isinstance(x, A.Assign) else x.right)
                steps.append(("assign", name, fn))
                bound.add(name)
            else:
                test = A.Compare("==", x.var, x.expr, x.span) if isinstance(x, A.Assign) \
                    else x
                steps.append(("test", compile_compare(test), None))
            continue
        atom = negs[x] if kind == "neg" else atoms[x]
        key_pos, key_parts, binds, same, post = _analyse_atom(atom, bound)
        if k == 0:                            # the delta atom (of an absence for a "neg")
            consts = [(p, f) for p, (_, f) in zip(key_pos, key_parts)]
            steps.append(("delta", x if kind == "atom" else n + x,
                          (binds, same, post, consts)))
        else:
            if not key_parts:
                mode = "scan"
            elif tuple(key_pos) == tuple(range(atom.arity)):
                mode = "full"
            else:
                mode = "index"
            steps.append(("atom", x, (atom.pred, mode, tuple(key_pos), key_parts, binds,
                                      same, post)))
        bound |= {v.name for v in A.literal_vars(atom)}
    head = [("var", t.name) if isinstance(t, A.Var) and not t.anonymous
            else ("fn", compile_term(t)) for t in rule.head.args]
    return steps, head


def _plan(rule: A.Rule, delta: int, cache: dict):
    """Node-independent pieces of one delta rule, compiled once per program: the raw plan
    (:func:`_raw_plan`) and, per step, the closures of the chain (key function, match
    function) or compiled literal."""
    key = (id(rule), delta)
    hit = cache.get(key)
    if hit is not None and hit[0] is rule:
        return hit[1]
    raw, head = _raw_plan(rule, delta)
    steps = []
    for kind, x, data in raw:
        if kind == "delta":
            binds, same, post, consts = data
            steps.append((kind, x, _match_fn(binds, same, post, consts)))
        elif kind == "atom":
            pred, mode, positions, key_parts, binds, same, post = data
            key_fn = None if mode == "scan" else _key_fn(key_parts)
            steps.append((kind, x, (pred, mode, positions, key_fn,
                                    _match_fn(binds, same, post, ()))))
        elif kind == "neg":
            steps.append((kind, x, (data[0], _key_fn(data[1]))))
        else:
            steps.append((kind, x, data))
    if all(kind == "var" for kind, _ in head):
        head_fn = _getter([name for _, name in head])
    else:
        head_fn = _key_fn(head)
    plan = (steps, head_fn, raw, head)
    cache[key] = (rule, plan)
    return plan


def _compile_one(node, rule: A.Rule, delta: int, program, generate: bool) -> Callable:
    scheme, ctx = node.scheme, node.ctx
    atoms = rule.body_atoms
    uses_parts = scheme.uses_parts
    parts = [[a.pred, None, None] for a in atoms] + \
        [[absence_pred(a.pred), None, None] for a in rule.negated_atoms]
    hpred = rule.head.pred
    steps, head_fn, raw, head = _plan(rule, delta, program.plan_cache)
    derive = scheme.derive
    if program.distributed:
        loc = rule.head.loc if rule.head.loc is not None else 0
    else:
        loc = None
    central = node.central
    fixed = scheme.fixed_annotation
    guards = _monotone_guards(program, rule)
    guard = _guard(node, rule, guards) if guards else None
    if generate and not rule.negated_atoms:
        pair = scheme.derive_pair(ctx)
        factory = _join_factory(rule, delta, raw, head, program, loc, fixed is not None,
                                uses_parts, guard is not None, pair is not None)
        if factory is not None:
            return factory(_join_bindings(node, rule, raw, parts, delta, central, fixed,
                                          derive, ctx, guard, pair))
    cell = [1, None]  # current sign, output list

    def finish(env):
        h = head_fn(env)
        sign, out = cell
        dst = central if loc is None else h[loc]
        for ann in derive(ctx, sign, (hpred, h), parts, delta):
            out.append((dst, (sign, hpred, h, ann)))

    if fixed is not None:
        def finish(env):  # noqa: F811 - fast path: the scheme's derive is constant
            h = head_fn(env)
            cell[1].append((central if loc is None else h[loc], (cell[0], hpred, h, fixed)))

    if guard is not None:
        finish = _guarded(guard, finish)

    # Build the chain backwards: each step calls the next; the delta atom's step is fire.
    nxt = finish
    fire = None
    for k in range(len(steps) - 1, -1, -1):
        kind, x, data = steps[k]
        if kind == "assign":
            nxt = _assign_step(x, data, nxt)
        elif kind == "test":
            nxt = _test_step(x, nxt)
        elif kind == "delta":
            fire = _delta_step(data, nxt, parts[x] if uses_parts else None, cell,
                               parts[delta])
        elif kind == "neg":
            nxt = _absent_step(node, data, nxt, parts[x] if uses_parts else None, x < delta)
        else:
            nxt = _atom_step(node, data, nxt, parts[x] if uses_parts else None, x < delta)
    assert fire is not None
    return fire


def _join_factory(rule: A.Rule, delta: int, raw: list, head: list, program, loc,
                  fixed: bool, uses_parts: bool, guarded: bool, paired: bool):
    """:func:`engine.codegen.join_factory` of the delta rule, made once per program."""
    key = ("join", id(rule), delta, fixed, uses_parts, guarded, paired)
    cache = program.plan_cache
    hit = cache.get(key)
    if hit is not None and hit[0] is rule:
        return hit[1]
    factory = join_factory(rule.name or "?", raw, head, delta, loc, fixed, uses_parts,
                           guarded, paired)
    cache[key] = (rule, factory)
    return factory


def _join_bindings(node, rule: A.Rule, raw: list, parts: list, delta: int, central,
                   fixed, derive, ctx, guard, pair) -> dict:
    """The objects of ``node`` a generated delta rule reads (see
    :func:`engine.codegen.join_factory`)."""
    b = {"HP": rule.head.pred, "CENTRAL": central, "FIXED": fixed, "derive": derive,
         "ctx": ctx, "parts": parts, "dp": parts[delta], "GUARD": guard,
         "PAIR": pair}
    for k, (kind, x, data) in enumerate(raw):
        if kind != "atom":
            continue
        pred, mode, positions = data[:3]
        b[f"st{k}"], b[f"ov{k}"] = node.table(pred), node.nu_table(pred)
        if mode == "index":
            b[f"ix{k}"] = node.index_probe(pred, positions)
        b[f"pt{k}"] = parts[x]
        if x < delta:                        # read from ν
            b[f"nu{k}"] = node.nu_new_lookup(pred, positions if mode == "index" else mode)
    return b


def _monotone_guards(program, rule: A.Rule) -> list:
    """``(spec, user's rule name, head var, body var, func)`` that aggregate selection needs
    checked in this localized rule (:attr:`localize.analysis.AggSelPlan.guards`)."""
    return [(plan.spec, src, h, b, func) for plan in program.aggsel.values()
            for name, src, h, b, func in plan.guards if name == rule.name]


def _guard(node, rule: A.Rule, guards: list) -> Callable:
    """``check(env)``: that the derivation strictly worsens the aggregated values, while
    the node prunes (``node.monotone_checks``, set by :func:`engine.aggsel.install`):
    pruning is exact only then (Liu et al. 2009, Sec. 6), so a violation stops the run with
    the error every evaluator gives (:func:`ndlog.analysis.monotone_error`). It holds the
    node weakly: the node holds its rules, and a cycle would keep a dropped network's state
    alive until a full collection, which the runs hold off."""
    node = weakref.ref(node)

    def check(env):
        if node().monotone_checks:
            for spec, src, h, b, func in guards:
                if not monotone_ok(func, env[h], env[b]):
                    raise monotone_error(spec, replace(rule, name=src), h, b, func,
                                         env[h], env[b])
    return check


def _guarded(check: Callable, nxt):
    """``nxt`` after ``check`` (:func:`_guard`)."""
    def guarded(env):
        check(env)
        nxt(env)
    return guarded


def _assign_step(name: str, fn, nxt):
    def assign(env):
        env[name] = fn(env)
        nxt(env)
    return assign


def _test_step(test, nxt):
    def check(env):
        if test(env):
            nxt(env)
    return check


def _delta_step(match, nxt, part, cell, delta_part):
    """``fire(sign, tuple, annotation, out)``: match the picked update's tuple against the
    delta atom and run the rest of the chain (``cell`` holds the sign and output list the
    chain's ``finish`` reads; ``delta_part`` the delta atom's (fact, value) part). The
    cell lets go of ``out`` when the chain is done: kept, it would hold every node's last
    derivations until the rule fires again (200 of the 1,866 MiB peak of reachable on
    1,000 nodes with set semantics)."""
    def fire(sign, tup, ann, out):
        cell[0] = sign
        cell[1] = out
        delta_part[2] = ann
        env = {}
        if match(tup, env):
            if part is not None:
                part[1] = tup
            nxt(env)
        cell[1] = None
    return fire


def _absent_step(node, data, nxt, part, view_nu: bool):
    """A negated atom: continue if its relation holds no tuple equal to the bound arguments
    (in ν if ``view_nu``, else in the committed state), with the absence's annotation
    (:meth:`engine.node.Node.absent`) as the body part. It holds the node weakly, as
    :func:`_guard` does."""
    pred, key_fn = data
    absent = weakref.WeakMethod(node.absent)

    def step(env):
        t = key_fn(env)
        a = absent()(pred, t, view_nu)
        if a is not None:
            if part is not None:
                part[1] = t
                part[2] = a
            nxt(env)
    return step


def _atom_step(node, data, nxt, part, view_nu: bool):
    pred, mode, positions, key_fn, match = data
    state_p = node.table(pred)
    over = node.nu_table(pred)

    if mode == "full":
        def lookup(env):
            key = key_fn(env)
            return (key,) if key in state_p else ()
    elif mode == "scan":
        def lookup(env):
            return state_p
    else:
        probe = node.index_probe(pred, positions)

        def lookup(env):
            return probe[0](key_fn(env)) or ()

    if not view_nu:
        if part is None:
            def step(env):
                for t in lookup(env):
                    if match(t, env):
                        nxt(env)
        else:
            def step(env):
                for t in lookup(env):
                    if match(t, env):
                        part[1] = t
                        part[2] = state_p[t]
                        nxt(env)
        return step

    nu_new = node.nu_new_lookup(pred, positions if mode == "index" else mode)

    def step_nu(env):
        for t in lookup(env):
            if over and t in over:
                s = over[t]
                if s is None:
                    continue
            else:
                s = state_p[t]
            if match(t, env):
                if part is not None:
                    part[1] = t
                    part[2] = s
                nxt(env)
        if over:
            for t in nu_new(key_fn(env) if key_fn is not None else None):
                if match(t, env):
                    if part is not None:
                        part[1] = t
                        part[2] = over[t]
                    nxt(env)
    return step_nu
