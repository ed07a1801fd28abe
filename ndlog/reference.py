"""The centralized reference evaluator: synchronous semi-naive evaluation (Nigam et al.,
Algorithm 2), set semantics, stratum by stratum, with aggregates, stratified negation and
aggregate selection.

Role: the oracle every incremental and distributed path is checked against. It is kept
simple enough to trust: plain Python sets, hash indexes built on demand, one join plan per
(rule, delta position), no incremental maintenance, no location semantics (the ``@`` only
names an argument). One concession to speed: where a plan ends with an atom and the head
is all variables, that last atom yields the head values of its matches in bulk
(``map`` in C) instead of one assignment dict per match, grouped by the head values the
earlier atoms bound, so that a round's repeated derivations are dropped as plain values
before head tuples are made, and only the tuples not yet in the relation are kept; and a
delta plan of a two-atom rule starts with the other atom when its relation is smaller than
the delta.

Negation (``not q(...)``) is stratified: the strata of :func:`ndlog.analysis.strata` put a
negated relation in an earlier stratum than every rule that reads it, so it is complete when
the rule runs and the negated atom is a filter (no tuple of ``q`` equals the atom's bound
arguments). Expression arguments of body atoms are lifted to variables first
(:func:`ndlog.rewrite.lift_atom_expressions`), so a join never meets one over unbound
variables.

Aggregates range over the distinct satisfying assignments of the rule body's variables:
``count<X>`` and ``count<*>`` count them, ``sum``/``avg`` add their values, ``min``/``max`` pick
one; a group with no assignment produces no tuple.

Aggregate selection (Liu et al., ICDE 2009, Sec. 6): where :func:`ndlog.analysis.aggsel_candidates`
finds a recursive predicate consumed only through min/max aggregates (``path`` in shortest
path), each group keeps only the tuples that are best for at least one aggregate, ties kept,
so that shortest path terminates without enumerating every simple path while the
aggregate-facing relations (``minCost``, ``cheapestPath``, ...) equal the declarative result.
The pruned predicate itself then holds only those best tuples. The pruning requires the
recursive rules to strictly worsen the aggregated values (positive costs); a violation is an
:class:`~ndlog.errors.EvaluationError`.

Values nested too deeply for Python's recursion limit (lists within lists, built by a
recursive rule) end in an :class:`~ndlog.errors.EvaluationError` naming the rule that was
running; the parser keeps the program's own terms shallow (``ndlog.parser.MAX_NESTING``).

Deliberately not here: incremental maintenance, provenance, message passing (the engine),
localization, and primary-key replacement of *derived* tuples (keys apply to base facts).
"""

from __future__ import annotations

from itertools import repeat
from operator import itemgetter
from typing import Callable, Iterable, Mapping

from ndlog import ast as A
from ndlog.analysis import (AggSelSpec, aggsel_candidates, aggsel_mode, monotone_error,
                            monotone_ok, strata)
from ndlog.builtins import BuiltinError, aggregate_value, fact_values, format_value
from ndlog.checks import check_table_sizes
from ndlog.errors import EvaluationError, InputError, NDlogSemanticError, PSNError
from ndlog.expr import compile_compare, compile_term
from ndlog.gcpause import relaxed_gc
from ndlog.rewrite import lift_atom_expressions, project_negated_wildcards

__all__ = ["evaluate", "base_facts", "fact_rows", "Relation", "compile_body",
           "CHECK_TUPLES"]

#: A firing of a rule calls the evaluation's guard once per this many new tuples (or
#: distinct values collected) as well as at its end: one firing of a cartesian product
#: derives as many tuples as its relations' sizes multiplied.
CHECK_TUPLES = 1024

Env = dict
Emit = Callable[[Env], None]


class Relation:
    """A set of tuples with hash indexes on argument positions, built on first use. An
    index on one position is keyed by the value itself, on several by the tuple of values
    (no 1-tuple made per indexed tuple)."""

    __slots__ = ("tuples", "_indexes")

    def __init__(self, tuples: Iterable[tuple] = ()):
        self.tuples: set[tuple] = set(tuples)
        self._indexes: dict[tuple[int, ...], dict] = {}

    def add(self, t: tuple) -> bool:
        if t in self.tuples:
            return False
        self.tuples.add(t)
        for positions, index in self._indexes.items():
            index.setdefault(itemgetter(*positions)(t), set()).add(t)
        return True

    def add_new(self, ts: set[tuple]) -> None:
        """Add the tuples of ``ts``, none of which is in the relation yet."""
        self.tuples |= ts
        for positions, index in self._indexes.items():
            key = itemgetter(*positions)
            for t in ts:
                index.setdefault(key(t), set()).add(t)

    def discard(self, t: tuple) -> None:
        if t not in self.tuples:
            return
        self.tuples.discard(t)
        for positions, index in self._indexes.items():
            bucket = index.get(itemgetter(*positions)(t))
            if bucket is not None:
                bucket.discard(t)

    def lookup(self, positions: tuple[int, ...], key: tuple) -> Iterable[tuple]:
        """The tuples whose values at ``positions`` are ``key`` (a tuple as long)."""
        index = self._indexes.get(positions)
        if index is None:
            index = self._indexes[positions] = _index(self.tuples, positions)
        return index.get(key[0] if len(key) == 1 else key, ())

    def __len__(self) -> int:
        return len(self.tuples)


def _index(tuples: set[tuple], positions: tuple[int, ...]) -> dict:
    """``key -> {tuples}`` with ``key`` the value at ``positions`` (one) or the tuple of
    values (several), read in a second pass over the unchanged set, in the same order."""
    index: dict = {}
    get = index.get
    for k, t in zip(map(itemgetter(*positions), tuples), tuples):
        bucket = get(k)
        if bucket is None:
            index[k] = {t}
        else:
            bucket.add(t)
    return index


# ---------------------------------------------------------------------------------------
# join plans


def _term_ready(term: A.Term, bound: set[str]) -> bool:
    return all(v.name in bound for v in A.term_vars(term))


def _split_args(atom: A.Atom, bound: set[str]):
    """An atom's arguments given the variables bound so far: the positions and terms of the
    lookup key (bound terms), ``name -> position`` of the variables it binds (their first
    occurrence), and the ``(position, first position)`` pairs a repeated new variable must
    match.

    Raises
    ------
    NDlogSemanticError
        For an expression argument over unbound variables.
    """
    key_pos, key_terms, checks = [], [], []
    first_at: dict[str, int] = {}
    for i, t in enumerate(atom.args):
        if isinstance(t, A.Var) and t.anonymous:
            continue
        if isinstance(t, A.Var) and t.name not in bound:
            if t.name in first_at:
                checks.append((i, first_at[t.name]))
            else:
                first_at[t.name] = i
        elif _term_ready(t, bound):
            key_pos.append(i)
            key_terms.append(t)
        else:
            raise NDlogSemanticError(
                f"argument {i + 1} of '{atom.pred}' is an expression over unbound variables",
                atom.span)
    return tuple(key_pos), key_terms, first_at, checks


def _atom_step(atom: A.Atom, bound: set[str], source: Callable[[str], Relation]):
    """Compile matching one atom given the variables bound so far.

    Returns ``step(env, emit)`` and the updated bound set.
    """
    positions, key_terms, first_at, checks = _split_args(atom, bound)
    pred, arity, binds = atom.pred, atom.arity, list(first_at.items())
    key_of = _tuple_fn(key_terms)

    def step(env: Env, emit: Emit) -> None:
        rel = source(pred)
        cands = rel.lookup(positions, key_of(env)) if positions else rel.tuples
        for t in tuple(cands):
            if len(t) != arity:
                continue
            if checks and any(t[a] != t[b] for a, b in checks):
                continue
            e = env.copy()
            for name, i in binds:
                e[name] = t[i]
            emit(e)
    return step, bound | set(first_at)


def _negation_step(lit: A.Negated, bound: set[str], source: Callable[[str], Relation]):
    """``not q(args)`` once its arguments are bound: pass the bindings for which ``q``
    holds no equal tuple (``q`` is complete: it lies in an earlier stratum)."""
    if not all(_term_ready(t, bound) for t in lit.atom.args):
        return None
    fns = [compile_term(t) for t in lit.atom.args]
    pred = lit.atom.pred

    def absent(env: Env, emit: Emit) -> None:
        if tuple(f(env) for f in fns) not in source(pred).tuples:
            emit(env)
    return absent, bound


def _nonatom_step(lit, bound: set[str], source: Callable[[str], Relation] | None = None,
                  assigned: frozenset[str] = frozenset()):
    """A comparison, assignment or negation that can run now, or None if its inputs are
    unbound (``source`` is where a negation reads its relation). ``assigned`` are the
    variables a ``:=`` of the rule binds: an ``X = e`` never binds them, it tests them once
    the ``:=`` has run (docs/language.md, section 5)."""
    if isinstance(lit, A.Negated):
        return _negation_step(lit, bound, source)  # type: ignore[arg-type]
    if isinstance(lit, A.Assign):
        if not _term_ready(lit.expr, bound):
            return None
        if lit.var.name in bound:
            raise NDlogSemanticError(
                f"variable '{lit.var.name}' is assigned with ':=' but is already bound",
                lit.var.span or lit.span,
                hint=f"':=' binds a new variable; to test a value, write "
                     f"{lit.var.name} == ...")
        return _bind_step(lit.var.name, compile_term(lit.expr)), bound | {lit.var.name}
    if lit.op == "=":
        for var, other in ((lit.left, lit.right), (lit.right, lit.left)):
            if (isinstance(var, A.Var) and not var.anonymous and var.name not in bound
                    and var.name not in assigned and _term_ready(other, bound)):
                return _bind_step(var.name, compile_term(other)), bound | {var.name}
    if _term_ready(lit.left, bound) and _term_ready(lit.right, bound):
        test = compile_compare(lit)

        def filt(env: Env, emit: Emit) -> None:
            if test(env):
                emit(env)
        return filt, bound
    return None


def _bind_step(name: str, fn):
    def bind(env: Env, emit: Emit) -> None:
        e = dict(env)
        e[name] = fn(env)
        emit(e)
    return bind


def compile_body(rule: A.Rule, first: int | None, source_for: Callable[[int], Callable],
                 project: bool = False):
    """Order a rule body into steps and chain them.

    Parameters
    ----------
    rule:
        The rule.
    first:
        Index into ``rule.body`` of the atom to start with (in a delta plan, the delta
        atom or the other atom of a two-atom rule, :func:`_lead`), or None.
    source_for:
        ``body index -> (pred -> Relation)``: where each atom reads its tuples.
    project:
        Emit head values instead of assignments where the plan allows it (see Returns).

    Returns
    -------
    callable
        ``run(emit)`` calling ``emit(env)`` once per satisfying assignment (with repeats).
        With ``project``, when the plan ends with an atom and the head's arguments are all
        variables, ``run.projects`` is true and ``emit`` is called instead as
        ``emit(key, values)``, computed without an assignment dict per match
        (:func:`_atom_project`): ``key`` holds the head arguments bound before the last
        atom, ``values`` iterates the others, one item per satisfying assignment, and
        ``run.head_tuples(key, collected)`` makes the head tuples from a key and a set (or
        list) of its values. Otherwise ``run.projects`` is false.
    """
    remaining = list(range(len(rule.body)))
    steps = []
    bound: set[str] = set()
    assigned = frozenset(lit.var.name for lit in rule.body if isinstance(lit, A.Assign))
    if first is not None:
        step, bound = _atom_step(rule.body[first], bound, source_for(first))
        steps.append(step)
        remaining.remove(first)
    while remaining:
        progressed = True
        while progressed:
            progressed = False
            for idx in list(remaining):
                lit = rule.body[idx]
                if isinstance(lit, A.Atom):
                    continue
                made = _nonatom_step(lit, bound, source_for(idx), assigned)
                if made is not None:
                    steps.append(made[0])
                    bound = made[1]
                    remaining.remove(idx)
                    progressed = True
        atoms = [i for i in remaining if isinstance(rule.body[i], A.Atom)]
        if not atoms:
            if remaining:
                lit = rule.body[remaining[0]]
                raise NDlogSemanticError(
                    f"rule {rule.name}: this literal uses variables that nothing binds",
                    lit.span)
            break
        best = max(atoms, key=lambda i: (_bound_count(rule.body[i], bound), -i))
        remaining.remove(best)
        last = _atom_project(rule.body[best], bound, source_for(best), rule.head) \
            if project and not remaining else None
        if last is not None:
            steps.append(last[0])
            run = _chain(steps, projects=True)
            run.head_tuples = last[1]
            return run
        step, bound = _atom_step(rule.body[best], bound, source_for(best))
        steps.append(step)
    return _chain(steps)


def _bound_count(atom: A.Atom, bound: set[str]) -> int:
    return sum(1 for t in atom.args
               if not (isinstance(t, A.Var) and (t.anonymous or t.name not in bound))
               and _term_ready(t, bound))


def _chain(steps, projects: bool = False):
    def run(emit: Emit) -> None:
        def at(i: int):
            if i == len(steps):
                return emit
            nxt = at(i + 1)
            step = steps[i]
            return lambda env: step(env, nxt)
        at(0)({})
    run.projects = projects
    return run


def _atom_project(atom: A.Atom, bound: set[str], source: Callable[[str], Relation],
                  head: A.Atom):
    """The last atom of a plan, emitting head values directly: ``step(env, emit)`` calls
    ``emit(key, values)`` once per assignment ``env``, with ``key`` the head arguments that
    ``env`` binds and ``values`` an iterator of the other head arguments over the matching
    tuples (one value per match if one argument is left, a tuple of them if several), so
    no assignment dict is built per match.

    Returns ``(step, head_tuples)``, ``head_tuples(key, values)`` making the head tuples
    of a key and a collection of its values; or None where this does not apply: a head
    argument that is not a variable, a variable repeated in ``atom`` (a test between two
    of its arguments), or no head argument bound by ``atom``.
    """
    if not head.args or not all(isinstance(t, A.Var) and not t.anonymous
                                for t in head.args):
        return None
    positions, key_terms, at, checks = _split_args(atom, bound)
    if checks:
        return None
    from_env = [v.name for v in head.args if v.name not in at]
    if not all(n in bound for n in from_env):
        return None
    from_match = [at[v.name] for v in head.args if v.name in at]
    if not from_match:
        return None             # zip needs one column that ends with the matches
    # unlike _atom_step, no test of each match's arity: the static checks give every use
    # of a predicate one arity, and base_facts rejects facts of another
    pred, key_of, pick = atom.pred, _tuple_fn(key_terms), itemgetter(*from_match)
    head_key = itemgetter(*from_env) if from_env else (lambda env: ())

    def step(env: Env, emit) -> None:
        rel = source(pred)
        cands = rel.lookup(positions, key_of(env)) if positions else rel.tuples
        emit(head_key(env), map(pick, cands))
    return step, _head_builder([v.name not in at for v in head.args])


def _head_builder(bound_first: list[bool]):
    """``(key, values) -> head tuples`` for :func:`_atom_project`'s groups: ``bound_first``
    says, per head argument, whether it is in ``key`` (in order; one argument is the key
    itself, several a tuple) or in ``values`` (likewise). ``values`` must iterate the same
    way twice (a set or a list): with several value columns, each is read in a pass. It is
    called once per key and round, not per match."""
    n_key, n_val = sum(bound_first), len(bound_first) - sum(bound_first)
    if n_key == 0 and n_val > 1:
        return lambda key, values: values       # the values are the head tuples
    slots, k, v = [], 0, 0
    for is_key in bound_first:
        slots.append((is_key, k if is_key else v))
        k, v = k + is_key, v + (not is_key)

    def build(key, values):
        keys = (key,) if n_key == 1 else key
        return zip(*[repeat(keys[i]) if is_key else
                     (values if n_val == 1 else map(itemgetter(i), values))
                     for is_key, i in slots])
    return build


# ---------------------------------------------------------------------------------------
# aggregates


def _eval_aggregate_rule(rule: A.Rule, full: Callable[[str], Relation]) -> set[tuple]:
    run = compile_body(rule, None, lambda i: full)
    names = rule.body_var_names
    seen: set[tuple] = set()
    envs: list[Env] = []

    def collect(env: Env) -> None:
        key = tuple(env[n] for n in names)
        if key not in seen:
            seen.add(key)
            envs.append(env)
    run(collect)
    group_fns = [(i, compile_term(t)) for i, t in enumerate(rule.head.args)
                 if not isinstance(t, A.Aggregate)]
    aggs = rule.head.aggregates
    groups: dict[tuple, list[list]] = {}
    for env in envs:
        key = tuple(f(env) for _, f in group_fns)
        cols = groups.setdefault(key, [[] for _ in aggs])
        for col, (_, agg) in zip(cols, aggs):
            col.append(1 if agg.var is None else env[agg.var.name])
    out = set()
    for key, cols in groups.items():
        row: list = [None] * rule.head.arity
        for (i, _), v in zip(group_fns, key):
            row[i] = v
        for col, (i, agg) in zip(cols, aggs):
            try:
                row[i] = aggregate_value(agg.func, col)
            except TypeError:
                raise EvaluationError(
                    f"{agg.func}<...> in rule {rule.name} over values that cannot be "
                    f"combined: {', '.join(format_value(v) for v in col[:3])}",
                    agg.span) from None
            except BuiltinError as exc:
                raise EvaluationError(f"{agg.func}<...> in rule {rule.name}: {exc}",
                                      agg.span) from None
        out.add(tuple(row))
    return out


# ---------------------------------------------------------------------------------------
# aggregate selection


class _Selection:
    """Per-group best values of one aggregate-selection spec (ties kept)."""

    def __init__(self, spec: AggSelSpec):
        self.spec = spec
        self.best: dict[tuple, list] = {}
        self.members: dict[tuple, set[tuple]] = {}

    def _better(self, func: str, a, b) -> bool:
        """Whether ``a`` is better than ``b`` for ``func``; values that cannot be ordered
        (a number and a string) are an evaluation error, as in a ``min``/``max`` rule."""
        try:
            return a < b if func == "min" else a > b
        except TypeError:
            raise EvaluationError(
                f"aggregate selection on '{self.spec.pred}': {func}<...> over values that "
                f"cannot be compared: {format_value(a, True)} and {format_value(b, True)}"
            ) from None

    def offer(self, rel: Relation, candidates: Iterable[tuple]) -> set[tuple]:
        """Add the non-dominated candidates to ``rel``; drop tuples they dominate.
        Returns the candidates that were added and survived."""
        touched: set[tuple] = set()
        fresh: set[tuple] = set()
        group = self.spec.group
        for t in candidates:
            if t in rel.tuples:
                continue
            g = tuple(t[p] for p in group)
            best = self.best.get(g)
            if best is None:
                self.best[g] = [t[p] for p, _ in self.spec.aggregates]
            else:
                keep = False
                for k, (p, func) in enumerate(self.spec.aggregates):
                    if self._better(func, t[p], best[k]):
                        best[k] = t[p]
                        keep = True
                    elif t[p] == best[k]:
                        keep = True
                if not keep:
                    continue
            rel.add(t)
            fresh.add(t)
            self.members.setdefault(g, set()).add(t)
            touched.add(g)
        for g in touched:
            best = self.best[g]
            members = self.members[g]
            for t in list(members):
                if all(t[p] != best[k] for k, (p, _) in enumerate(self.spec.aggregates)):
                    members.discard(t)
                    rel.discard(t)
                    fresh.discard(t)
        return fresh


def _monotone_guard(rule: A.Rule, spec: AggSelSpec):
    checks = [(h, b, f) for (name, h, b, f) in spec.monotone if name == rule.name]
    if not checks:
        return None

    def guard(env: Env) -> None:
        for h, b, func in checks:
            if not monotone_ok(func, env[h], env[b]):
                raise monotone_error(spec, rule, h, b, func, env[h], env[b])
    return guard


# ---------------------------------------------------------------------------------------
# facts and the main loop


def fact_rows(pred, rows) -> Iterable:
    """``rows``, the facts given for predicate ``pred`` in a ``predicate -> tuples``
    mapping, once both have the right shape: a string name, and an iterable that is not a
    string (each row is checked where it is read).

    Raises
    ------
    InputError
        Naming the predicate, or the value given for it.
    """
    if not isinstance(pred, str):
        raise InputError(f"a predicate name must be a string, got {pred!r}")
    if rows is None or isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
        raise InputError(f"facts for '{pred}' must be an iterable of tuples, got "
                         f"{type(rows).__name__}")
    return rows


def base_facts(program: A.Program, facts: Mapping[str, Iterable] | None = None
               ) -> dict[str, list[tuple]]:
    """The program's own facts plus ``facts``, with arities checked and primary keys of
    ``materialize`` applied (a later tuple replaces an earlier one with the same key); a
    table given more tuples than its size is an input error
    (:func:`ndlog.checks.check_table_sizes`)."""
    arities = program.arities()
    ordered: dict[str, dict] = {}

    def put(pred: str, t: tuple) -> None:
        want = arities.setdefault(pred, len(t))
        if len(t) != want:
            raise InputError(f"fact {pred}({', '.join(format_value(v) for v in t)}) has "
                             f"{len(t)} arguments, but '{pred}' has arity {want}")
        table = program.table(pred)
        key = tuple(t[k - 1] for k in table.keys if k - 1 < len(t)) if table and table.keys \
            else t
        rows = ordered.setdefault(pred, {})
        rows.pop(key, None)
        rows[key] = t
    for f in program.facts:
        put(f.pred, f.values)
    for pred, rows in (facts or {}).items():
        for row in fact_rows(pred, rows):
            if not isinstance(row, (tuple, list)):
                raise InputError(f"a fact of '{pred}' must be a tuple, got {row!r}")
            put(pred, fact_values(pred, row))
    out = {p: list(rows.values()) for p, rows in ordered.items()}
    check_table_sizes(program, out)
    return out


def evaluate(program: A.Program, facts: Mapping[str, Iterable] | None = None, *,
             aggsel: bool | str = True, hidden: bool = False,
             guard: Callable[[int, frozenset], object] | None = None
             ) -> dict[str, set[tuple]]:
    """Evaluate a program centrally to its least fixpoint.

    Parameters
    ----------
    program:
        A parsed program, distributed or centralized (``@`` is ignored), localized or not.
    facts:
        ``predicate -> iterable of tuples``, added to the facts stated in the program.
    aggsel:
        Apply aggregate selection where the analysis finds it applicable (default: True,
        or any mode but ``"off"``, as the engines take it). Off (False or ``"off"``), a
        shortest-path program enumerates every simple path.
    hidden:
        Also return auxiliary predicates introduced by rewrites.
    guard:
        Called as ``guard(round, predicates)`` after every firing of a rule, with the
        number of the semi-naive round (0 for the rules that read no predicate of their
        stratum, and for aggregates) and the predicates of the stratum being evaluated,
        and within a firing once per :data:`CHECK_TUPLES` new tuples it derived (a
        cartesian product can derive millions in one firing); it raises to stop the
        evaluation (``psn.evaluate`` passes a memory ceiling, which stops a program that
        does not terminate or outgrows the machine).

    Returns
    -------
    dict[str, set[tuple]]
        Every relation of the program (base and derived) and of ``facts``.

    Notes
    -----
    Synchronous semi-naive evaluation (Nigam et al. 2012, Algorithm 2) per stratum, the strata
    in dependency order (negated relations and aggregate inputs first: stratified
    semantics); aggregate selection after Liu et al. (ICDE 2009), Sec. 6. The cyclic
    garbage collector is paused meanwhile (:func:`ndlog.gcpause.relaxed_gc`).
    """
    with relaxed_gc():
        return _evaluate(program, facts, aggsel, hidden, guard or _unguarded)


def _unguarded(rounds: int, predicates: frozenset) -> None:
    """The guard of an evaluation that nothing stops."""


def _evaluate(program: A.Program, facts, aggsel, hidden: bool, guard
              ) -> dict[str, set[tuple]]:
    program = lift_atom_expressions(project_negated_wildcards(program))
    rels: dict[str, Relation] = {}

    def rel(pred: str) -> Relation:
        r = rels.get(pred)
        if r is None:
            r = rels[pred] = Relation()
        return r
    for pred, rows in base_facts(program, facts).items():
        for t in rows:
            rel(pred).add(t)
    specs = aggsel_candidates(program) if aggsel_mode(aggsel) != "off" else {}
    by_head: dict[str, list[A.Rule]] = {}
    for r in program.rules:
        by_head.setdefault(r.head.pred, []).append(r)
    try:
        for comp in strata(program):
            rules = [r for p in comp for r in by_head.get(p, [])]
            if rules:
                _eval_stratum(set(comp), rules, rel, specs, guard)
    except PSNError as exc:   # a runtime error at a rule: show the rule's line
        raise exc.locate(program.source, program.filename)
    out = {p: set(r.tuples) for p, r in rels.items()}
    for p in program.predicates:
        out.setdefault(p, set())
    if not hidden:
        for p in program.hidden:
            out.pop(p, None)
    return out


def _tuple_fn(terms) -> Callable[[Env], tuple]:
    """``env -> tuple of the terms' values``; a plain ``itemgetter`` when every term is a
    variable (the common head and join key: a third of the time of reachable at 300
    nodes went to building them one term at a time)."""
    if terms and all(isinstance(t, A.Var) and not t.anonymous for t in terms):
        names = [t.name for t in terms]
        if len(names) == 1:
            name = names[0]
            return lambda env: (env[name],)
        return itemgetter(*names)
    fns = [compile_term(t) for t in terms]
    return lambda env: tuple(f(env) for f in fns)


def _head_fn(rule: A.Rule):
    return _tuple_fn(rule.head.args)


def _eval_stratum(comp: set[str], rules: list[A.Rule], rel, specs, guard) -> None:
    preds = frozenset(comp)
    for r in rules:
        if r.is_aggregate:
            target = rel(r.head.pred)
            try:
                derived = _eval_aggregate_rule(r, rel)
            except RecursionError:
                raise _too_deep(r) from None
            for t in derived:
                target.add(t)
            guard(0, preds)
    plain = [r for r in rules if not r.is_aggregate]
    selections = {p: _Selection(specs[p]) for p in comp if p in specs}
    delta: dict[str, set[tuple]] = {p: set(rel(p).tuples) for p in comp}
    pending: dict[str, set[tuple]] = {}

    def derive(r: A.Rule, run) -> None:
        head = _head_fn(r)
        monotone = (_monotone_guard(r, specs[r.head.pred]) if r.head.pred in selections
                    else None)
        target, bucket = rel(r.head.pred), pending.setdefault(r.head.pred, set())
        left = CHECK_TUPLES

        def emit(env: Env) -> None:
            nonlocal left
            if monotone:
                monotone(env)
            t = head(env)
            if t not in target.tuples:
                bucket.add(t)
                left -= 1
                if not left:
                    left = CHECK_TUPLES
                    guard(rounds, preds)

        try:
            if run.projects:
                _derive_grouped(run, target, bucket, lambda: guard(rounds, preds))
            else:
                run(emit)
        except RecursionError:
            raise _too_deep(r) from None
        guard(rounds, preds)

    rounds = 0
    for r in plain:
        if not any(a.pred in comp for a in r.body_atoms):
            derive(r, compile_body(r, None, lambda i: rel,
                                   project=r.head.pred not in selections))
    for sel_pred, sel in selections.items():
        existing = set(rel(sel_pred).tuples)
        for t in existing:
            rel(sel_pred).discard(t)
        delta[sel_pred] = sel.offer(rel(sel_pred), existing)
    delta = _merge(pending, rel, selections, delta)
    plans = _delta_plans(plain, comp, rel, delta, selections)
    while any(delta.values()):
        rounds += 1
        pending = {}
        for r, run, pred in plans:
            if delta.get(pred):
                derive(r, run)
        delta = _merge(pending, rel, selections, None)
        plans = _delta_plans(plain, comp, rel, delta, selections)


def _derive_grouped(run, target: Relation, bucket: set, check: Callable[[], object]
                    ) -> None:
    """Run a projecting plan (:func:`compile_body`), collecting each key's head values in
    a set, and add to ``bucket`` the head tuples not in ``target``. Reachable at 1,000
    nodes derives 8.1 million tuples in 2.4 million distinct (key, value) pairs: the
    repeats are dropped as values in small sets, not as tuples in a large one.
    ``check()`` is called once per :data:`CHECK_TUPLES` distinct values collected, and as
    many tuples made."""
    groups: dict = {}
    get = groups.get
    left = CHECK_TUPLES

    def collect(key, values) -> None:
        nonlocal left
        group = get(key)
        if group is None:
            group = groups[key] = set(values)
            left -= len(group)
        else:
            size = len(group)
            group.update(values)
            left -= len(group) - size
        if left <= 0:
            left = CHECK_TUPLES
            check()
    run(collect)
    head_tuples, present = run.head_tuples, target.tuples
    for key, values in groups.items():
        new = set(head_tuples(key, values))
        new -= present
        bucket |= new
        left -= len(new)
        if left <= 0:
            left = CHECK_TUPLES
            check()


def _too_deep(rule: A.Rule) -> EvaluationError:
    return EvaluationError(
        f"rule {rule.name} met a value nested too deeply for Python's recursion limit "
        "(lists within lists, hundreds of levels deep)", rule.span,
        hint="bound the recursion that builds the nested lists")


def _delta_plans(rules, comp, rel, delta, selections):
    """One join plan per (rule, body atom of this stratum), reading ``delta`` there; plans
    emit head tuples where they can, except under aggregate selection (whose monotonicity
    guard reads the assignment)."""
    plans = []
    for r in rules:
        project = r.head.pred not in selections
        for i, lit in enumerate(r.body):
            if isinstance(lit, A.Atom) and lit.pred in comp:
                d = Relation(delta.get(lit.pred, ()))

                def source_for(j: int, i=i, d=d):
                    return (lambda p: d) if j == i else rel
                lead = _lead(r, i, len(d), rel)
                plans.append((r, compile_body(r, lead, source_for, project=project),
                              lit.pred))
    return plans


def _lead(rule: A.Rule, i: int, delta_size: int, rel) -> int:
    """The atom a delta plan starts with: the delta atom ``i``, unless the rule joins it
    with exactly one other atom, on a shared variable, whose relation is smaller than the
    delta: then that atom leads and each of its tuples looks its matches up in the delta
    (an index on the delta is built once), so the Python loop runs over the smaller side.
    The matches, and so the derivations, are the same either way."""
    atoms = [j for j, lit in enumerate(rule.body) if isinstance(lit, A.Atom)]
    if len(atoms) != 2:
        return i
    j = atoms[0] if atoms[1] == i else atoms[1]
    other = rule.body[j]
    if len(rel(other.pred)) >= delta_size:
        return i
    if {v.name for v in A.literal_vars(other)}.isdisjoint(
            v.name for v in A.literal_vars(rule.body[i])):
        return i
    return j


def _merge(pending, rel, selections, delta):
    """Add pending derivations to their relations; return the next delta."""
    nxt: dict[str, set[tuple]] = dict(delta or {})
    for pred, tuples in pending.items():
        target = rel(pred)
        if pred in selections:
            survivors = selections[pred].offer(target, tuples)
            nxt[pred] = (nxt.get(pred, set()) | survivors) & target.tuples
        else:
            new = tuples - target.tuples
            target.add_new(new)
            nxt[pred] = nxt.get(pred, set()) | new
    return nxt
