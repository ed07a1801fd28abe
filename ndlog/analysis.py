"""Analyses of NDlog programs: dependency graph, strata, aggregate-selection detection.

The dependency graph has an edge from a rule's head to every predicate of its body, positive
or negated (``not q``); :func:`strata` orders its strongly connected components so that every
component comes after the ones it reads, which is the order of stratified evaluation: a
negated relation lies in an earlier component than the rule reading it (the checker rejects
recursion through negation) and is therefore complete when that rule runs.

Role: read-only facts about a :class:`~ndlog.ast.Program` that the checker, the evaluators,
the localizer and the engine share. Nothing here modifies a program (rewrites live in
``localize/``), and nothing here raises for a bad program: the checker
(:mod:`ndlog.checks`) turns findings into errors.

Aggregate selection (Liu et al., ICDE 2009, Sec. 6; Sudarshan and Ramakrishnan, VLDB 1991):
a recursive predicate ``p`` that the rest of the program consumes only through ``min``/``max``
aggregates over one group key may be pruned, per group, to the tuples that are best for at
least one of those aggregates (ties kept). :func:`aggsel_candidates` finds such predicates;
the pruning is exact when every recursive rule strictly worsens the aggregated values
(positive costs), which evaluators check at run time with :attr:`AggSelSpec.monotone`.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from . import ast as A

__all__ = [
    "Dependency", "dependency_graph", "sccs", "strata", "recursive_predicates",
    "recursive_aggregate_rules", "AggSelSpec", "aggsel_candidates", "rules_by_head",
    "monotone_error", "monotone_ok", "monotone_span", "AGGSEL_CHOICES", "aggsel_mode",
    "lookalike_inputs",
]

#: Values of ``aggsel``: where the engines apply aggregate selection (``auto``, ``multi``,
#: ``single``) or not (``off``).
AGGSEL_CHOICES = ("auto", "multi", "single", "off")


def aggsel_mode(value) -> str:
    """An aggregate selection mode of :data:`AGGSEL_CHOICES`.

    Parameters
    ----------
    value:
        A mode, or ``True`` / ``False`` (``auto`` / ``off``), so that every Python entry
        point takes what ``psn.evaluate`` always took.

    Returns
    -------
    str
        The mode; the references (``psn.evaluate``, Spark) prune unless it is ``off``.

    Raises
    ------
    ndlog.errors.InputError
        For anything else.
    """
    if value is True or value is False:
        return "auto" if value else "off"
    if value not in AGGSEL_CHOICES:
        from .errors import InputError
        raise InputError(f"aggregate selection must be one of "
                         f"{', '.join(AGGSEL_CHOICES)} (or True, False), not {value!r}")
    return value


@dataclass(frozen=True)
class Dependency:
    """``head`` depends on ``body`` through ``rule``; ``aggregate`` if the rule aggregates,
    ``negated`` if the rule reads ``body`` under ``not``."""

    head: str
    body: str
    rule: str
    aggregate: bool
    negated: bool = False


def lookalike_inputs(program: A.Program) -> list[tuple[A.Atom, str]]:
    """Base predicates that may be misspelt: the program neither derives nor declares
    them nor gives facts of them, and another such predicate with a close name is used
    more often, or as often but earlier. A misspelt base predicate reads as an empty
    relation, silently (``lnk`` for ``link``). Names close to a derived predicate's are
    not reported: pairs such as ``orbit`` and ``orbits`` are common on purpose.

    Parameters
    ----------
    program:
        The program (not changed).

    Returns
    -------
    list of (Atom, str)
        The first body atom of each such predicate, in rule order, and the close name.
    """
    supplied = program.idb | {t.pred for t in program.tables} | {f.pred for f in program.facts}
    uses = Counter(a.pred for a in program.atoms())
    first: dict[str, int] = {}
    for i, atom in enumerate(program.atoms()):
        first.setdefault(atom.pred, i)

    def likelier(q: str, p: str) -> bool:       # q rather than p is the intended name
        return q not in supplied and (uses[q], -first[q]) > (uses[p], -first[p])
    out: list[tuple[A.Atom, str]] = []
    seen: set[str] = set()
    for rule in program.rules:
        for atom in list(rule.body_atoms) + list(rule.negated_atoms):
            pred = atom.pred
            if pred in supplied or pred in seen:
                continue
            seen.add(pred)
            others = sorted(q for q in program.predicates if q != pred and likelier(q, pred))
            close = difflib.get_close_matches(pred, others, n=1, cutoff=0.75)
            if close:
                out.append((atom, close[0]))
    return out


def dependency_graph(program: A.Program) -> list[Dependency]:
    """Every (head, body predicate) edge of the program's rules, negated ones included."""
    out = []
    for r in program.rules:
        for atom in r.body_atoms:
            out.append(Dependency(r.head.pred, atom.pred, r.name, r.is_aggregate))
        for atom in r.negated_atoms:
            out.append(Dependency(r.head.pred, atom.pred, r.name, r.is_aggregate, True))
    return out


def rules_by_head(program: A.Program) -> dict[str, list[A.Rule]]:
    """The rules of ``program`` grouped by the predicate of their head, in program order.

    Parameters
    ----------
    program:
        A parsed program (not modified).

    Returns
    -------
    dict
        ``predicate -> [rule, ...]``; predicates no rule derives are absent.
    """
    out: dict[str, list[A.Rule]] = {}
    for r in program.rules:
        out.setdefault(r.head.pred, []).append(r)
    return out


def sccs(nodes: Iterable[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components in reverse topological order of ``edges``
    (a component comes after every component it has an edge to), by Tarjan's algorithm,
    iteratively so deep programs do not hit the recursion limit."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def _edges(program: A.Program) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for d in dependency_graph(program):
        edges.setdefault(d.head, set()).add(d.body)
    return edges


def strata(program: A.Program) -> list[list[str]]:
    """Predicates grouped into strongly connected components, in evaluation order
    (every component after the components it depends on)."""
    return sccs(program.predicates, _edges(program))


def recursive_predicates(program: A.Program) -> frozenset[str]:
    """Predicates that depend on themselves, directly or through others."""
    edges = _edges(program)
    out = set()
    for comp in strata(program):
        if len(comp) > 1 or comp[0] in edges.get(comp[0], ()):
            out.update(comp)
    return frozenset(out)


def recursive_aggregate_rules(program: A.Program) -> list[A.Rule]:
    """Aggregate rules whose body depends on the rule's own head (not stratifiable)."""
    comp_of = {p: i for i, comp in enumerate(strata(program)) for p in comp}
    return [r for r in program.rules if r.is_aggregate
            and any(comp_of[a.pred] == comp_of[r.head.pred] for a in r.body_atoms)]


@dataclass(frozen=True)
class AggSelSpec:
    """Aggregate selection on one recursive predicate.

    Attributes
    ----------
    pred:
        The pruned predicate (``path`` in shortest path).
    group:
        0-based argument positions of the group key (``S, D``).
    aggregates:
        ``(position, 'min'|'max')`` pairs, one per aggregated argument (``C`` and ``L``).
    monotone:
        For each recursive rule, ``(rule name, head var, body var, func)`` per aggregate: the
        head's value must be strictly worse than the body's (``>`` for min, ``<`` for max)
        for the pruning to be exact; evaluators check it and report a non-positive cost.
    """

    pred: str
    group: tuple[int, ...]
    aggregates: tuple[tuple[int, str], ...]
    monotone: tuple[tuple[str, str, str, str], ...]


def monotone_error(spec: AggSelSpec, rule: A.Rule, head_var: str, body_var: str,
                   func: str, new, old):
    """The error of a derivation that breaks what aggregate selection relies on.

    Aggregate selection (Liu et al. 2009, Sec. 6) prunes a tuple that is not best in its
    group; that is exact only if every recursive step strictly worsens the aggregated value
    (:attr:`AggSelSpec.monotone`: positive costs for ``min``). Every evaluator that prunes
    (the reference, Spark, the PSN engine) reports a violation with this message.

    Parameters
    ----------
    spec:
        The pruned predicate's aggregate selection.
    rule:
        The rule whose derivation broke it (its span is the user's rule).
    head_var, body_var, func:
        One entry of ``spec.monotone``: the head's value, the body's value, ``min``/``max``.
    new, old:
        The values of ``head_var`` and ``body_var`` in the derivation.

    Returns
    -------
    ndlog.errors.EvaluationError
        To raise; its hint names the fix (aggregate selection off).
    """
    from .builtins import format_value
    from .errors import EvaluationError
    direction = "increase" if func == "min" else "decrease"
    return EvaluationError(
        f"aggregate selection on '{spec.pred}' needs {head_var} to strictly {direction} "
        f"along rule {rule.name}, but {head_var} = {format_value(new)} was derived from "
        f"{body_var} = {format_value(old)}",
        monotone_span(rule, head_var),
        hint="costs must be positive; evaluate with aggregate selection off "
        "(psn run and psn verify: --aggsel off; psn eval and psn reference: --no-aggsel; "
        "Python: aggsel=False or aggsel=\"off\") to enumerate every path instead")


def monotone_span(rule: A.Rule, head_var: str):
    """Where a violation of aggregate selection's monotonicity is shown: the variable of the
    assignment that computes the head's value (``C := C1 + C2``), else the rule."""
    for lit in rule.body:
        if isinstance(lit, A.Assign) and lit.var.name == head_var:
            return lit.var.span or lit.span
        if (isinstance(lit, A.Compare) and lit.op == "=" and isinstance(lit.left, A.Var)
                and lit.left.name == head_var):
            return lit.left.span or lit.span
    return rule.span


def monotone_ok(func: str, new, old) -> bool:
    """True if ``new`` is strictly worse than ``old`` for the aggregate ``func``."""
    return new > old if func == "min" else new < old


def _var_positions(atom: A.Atom) -> dict[str, int] | None:
    """name -> position for an atom whose args are distinct variables; None otherwise."""
    out: dict[str, int] = {}
    for i, t in enumerate(atom.args):
        if not isinstance(t, A.Var) or t.anonymous:
            continue
        if t.name in out:
            return None
        out[t.name] = i
    return out


def _aggregate_use(rule: A.Rule, pred: str):
    """If ``rule`` is ``q(G.., min<X>..) :- pred(...)``, return (group positions, aggs)."""
    atoms = rule.body_atoms
    if len(atoms) != 1 or len(rule.body) != 1 or atoms[0].pred != pred:
        return None
    pos = _var_positions(atoms[0])
    if pos is None:
        return None
    group, aggs = [], []
    for t in rule.head.args:
        if isinstance(t, A.Aggregate):
            if t.func not in ("min", "max") or t.var is None or t.var.name not in pos:
                return None
            aggs.append((pos[t.var.name], t.func))
        elif isinstance(t, A.Var) and t.name in pos:
            group.append(pos[t.name])
        else:
            return None
    return tuple(sorted(group)), tuple(aggs)


def _selection_use(rule: A.Rule, pred: str, agg_rels: dict[str, tuple]):
    """If ``rule`` joins ``pred(...)`` with an aggregate relation of ``pred`` on its group
    key and aggregated value (``cheapestPath :- path(...), minCost(S, D, C)``), return the
    aggregate relation's (group, aggs)."""
    atoms = rule.body_atoms
    if len(atoms) != 2 or len(rule.body) != 2:
        return None
    p_atoms = [a for a in atoms if a.pred == pred]
    q_atoms = [a for a in atoms if a.pred != pred]
    if len(p_atoms) != 1 or len(q_atoms) != 1 or q_atoms[0].pred not in agg_rels:
        return None
    p_pos = _var_positions(p_atoms[0])
    group, aggs, q_layout = agg_rels[q_atoms[0].pred]
    if p_pos is None:
        return None
    for q_arg, p_index in zip(q_atoms[0].args, q_layout):
        if not isinstance(q_arg, A.Var) or p_pos.get(q_arg.name) != p_index:
            return None
    return group, aggs


def _monotone_checks(rules: list[A.Rule], pred: str, aggs) -> tuple | None:
    """The run-time checks of :attr:`AggSelSpec.monotone` for the recursive rules of
    ``pred``, or ``None`` when aggregate selection cannot apply: a rule is nonlinear, has
    no variable at an aggregated position, or passes the aggregated value on unchanged
    (the same variable in the head and in the recursive atom, as in
    ``p(@S, D) :- p(@S, D), q(@D)``), which never strictly worsens it, so the check would
    stop every evaluation in which the rule fires, or gives the head a value that is not
    computed from the recursive atom's (``p(@Z, N) :- link(@N, Z), p(@Z, Z)``: a node
    name, not a cost), so that no step is known to worsen it."""
    checks = []
    for r in rules:
        rec = [a for a in r.body_atoms if a.pred == pred]
        if not rec:
            continue
        if len(rec) != 1:
            return None
        for position, func in aggs:
            head_t, body_t = r.head.args[position], rec[0].args[position]
            if not (isinstance(head_t, A.Var) and isinstance(body_t, A.Var)):
                return None
            if head_t.name == body_t.name or body_t.name not in _computed_from(r, head_t):
                return None
            checks.append((r.name, head_t.name, body_t.name, func))
    return tuple(checks)


def _computed_from(rule: A.Rule, var: A.Var) -> set[str]:
    """The variables ``var`` is computed from in ``rule``'s body, through assignments
    (``:=``, and ``=`` on a variable no body atom binds), transitively."""
    in_atoms = {a.name for atom in rule.body_atoms for a in atom.args if isinstance(a, A.Var)}
    defs: dict[str, list[str]] = {}
    for lit in rule.body:
        if isinstance(lit, A.Assign):
            defs.setdefault(lit.var.name, []).extend(v.name for v in A.term_vars(lit.expr))
        elif isinstance(lit, A.Compare) and lit.op == "=" and isinstance(lit.left, A.Var) \
                and lit.left.name not in in_atoms:
            defs.setdefault(lit.left.name, []).extend(v.name for v in A.term_vars(lit.right))
    out: set[str] = set()
    todo = list(defs.get(var.name, ()))
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo.extend(defs.get(name, ()))
    return out


def aggsel_candidates(program: A.Program) -> dict[str, AggSelSpec]:
    """Recursive predicates that matter only through min/max aggregates on one group key.

    A predicate ``p`` qualifies when it is directly recursive on its own (its strongly
    connected component is ``{p}``), no rule reads it under ``not`` (pruning a tuple would
    make its absence true), every recursive rule of ``p`` is linear with variables at
    the aggregated positions (in the head, one computed from the recursive atom's by
    assignments, as ``C := C1 + C2``: a value passed on unchanged never strictly worsens,
    and one not computed from it is not known to), and every rule outside the component
    that reads ``p`` is either an aggregate ``q(G, min<X>, ...) :- p(...)`` or a join of
    ``p`` with such a ``q`` on the group key and the aggregated value. All uses must share
    one group key.

    Returns
    -------
    dict
        predicate -> :class:`AggSelSpec`. Shortest path (Liu et al. 2009, Query 2) yields
        ``path`` grouped by ``(S, D)`` with ``min`` on ``C`` and on ``L``.
    """
    edges = _edges(program)
    heads = rules_by_head(program)
    negated = program.negated
    out: dict[str, AggSelSpec] = {}
    for comp in strata(program):
        if len(comp) != 1:
            continue
        p = comp[0]
        if p not in edges.get(p, ()) or p in negated:
            continue
        spec = _spec_for(program, p, heads)
        if spec is not None:
            out[p] = spec
    return out


def _spec_for(program: A.Program, p: str, heads) -> AggSelSpec | None:
    consumers = [r for r in program.rules
                 if r.head.pred != p and any(a.pred == p for a in r.body_atoms)]
    if not consumers:
        return None
    agg_rels: dict[str, tuple] = {}
    for r in consumers:
        use = _aggregate_use(r, p)
        if use is None:
            continue
        if len(heads.get(r.head.pred, ())) != 1:
            return None
        layout = _head_layout(r, p)
        agg_rels[r.head.pred] = (use[0], use[1], layout)
    group: tuple[int, ...] | None = None
    aggs: set[tuple[int, str]] = set()
    for r in consumers:
        use = _aggregate_use(r, p) or _selection_use(r, p, agg_rels)
        if use is None:
            return None
        if group is not None and use[0] != group:
            return None
        group = use[0]
        aggs.update(use[1])
    if not aggs:
        return None
    ordered = tuple(sorted(aggs))
    if len({pos for pos, _ in ordered}) != len(ordered):
        return None  # min and max on the same position: no single direction to prune
    mono = _monotone_checks(heads.get(p, []), p, ordered)
    if mono is None:
        return None
    return AggSelSpec(p, group, ordered, mono)


def _head_layout(rule: A.Rule, p: str) -> tuple[int, ...]:
    """For an aggregate rule over ``p``, the position in ``p`` that each head arg reads."""
    pos = _var_positions(rule.body_atoms[0]) or {}
    out = []
    for t in rule.head.args:
        var = t.var if isinstance(t, A.Aggregate) else t
        out.append(pos[var.name])  # type: ignore[union-attr]
    return tuple(out)
