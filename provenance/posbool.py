"""A centralized reference for PosBool provenance: the oracle for absorption provenance.

Role: compute, for every tuple of a non-aggregate (possibly recursive) program over
annotated base facts, its provenance in the PosBool semiring (Green, Karvounarakis, Tannen,
PODS 2007): a positive Boolean formula kept as its antichain of minimal variable sets. Liu
et al. (ICDE 2009, Sec. 8) state that absorption provenance is a compact encoding of exactly
this semiring, so with eager shipping every tuple's BDD must equal its PosBool provenance
here (compare :meth:`provenance.bdd.BDDContext.minimal_sop` with the antichain).

The evaluator (:func:`evaluate_annotated`) is generic over a commutative semiring given as a
:class:`Semiring` object and runs a *naive* fixpoint: every round re-derives every tuple from
the current annotations (join = times, union/projection = plus, Liu Fig. 6) until nothing
changes. That terminates for absorptive semirings (PosBool, BDDs) and is easy to trust.

Deliberately not here: aggregates (rejected), semi-naive or incremental evaluation, locations
(``@`` only names an argument), speed: it is for small graphs in tests (tens of nodes).
"""

from __future__ import annotations

from typing import Generic, Iterable, Mapping, TypeVar

from ndlog import ast as A
from ndlog.errors import EvaluationError, NDlogSemanticError
from ndlog.expr import compile_compare, compile_term

__all__ = ["Antichain", "Semiring", "PosBool", "POSBOOL", "BDDSemiring", "minimize",
           "evaluate_annotated", "posbool_provenance"]

V = TypeVar("V")
Antichain = frozenset  # frozenset[frozenset[str]]: the minimal satisfying variable sets


def minimize(sets: Iterable[frozenset[str]]) -> Antichain:
    """Keep the inclusion-minimal sets (absorption: ``a | (a & b) = a``)."""
    kept: list[frozenset[str]] = []
    for s in sorted(set(sets), key=len):
        if not any(k <= s for k in kept):
            kept.append(s)
    return frozenset(kept)


class Semiring(Generic[V]):
    """The operations :func:`evaluate_annotated` needs: ``zero``, ``one``, ``plus`` (union,
    projection), ``times`` (join) and ``eq`` (fixpoint test)."""

    zero: V
    one: V

    def plus(self, a: V, b: V) -> V:
        raise NotImplementedError

    def times(self, a: V, b: V) -> V:
        raise NotImplementedError

    def eq(self, a: V, b: V) -> bool:
        return a == b


class PosBool(Semiring[Antichain]):
    """Positive Boolean formulas as antichains of variable sets (``{}`` is false, ``{{}}``
    is true)."""

    zero: Antichain = frozenset()
    one: Antichain = frozenset({frozenset()})

    def plus(self, a: Antichain, b: Antichain) -> Antichain:
        return minimize(a | b)

    def times(self, a: Antichain, b: Antichain) -> Antichain:
        return minimize(x | y for x in a for y in b)

    @staticmethod
    def var(name: str) -> Antichain:
        return frozenset({frozenset({name})})


POSBOOL = PosBool()


class BDDSemiring(Semiring):
    """Absorption provenance as a semiring over a :class:`provenance.bdd.BDDContext`
    (``plus`` is OR, ``times`` is AND): runs the same naive fixpoint centrally in BDDs."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.zero = ctx.false
        self.one = ctx.true

    def plus(self, a, b):
        return a | b

    def times(self, a, b):
        return a & b


# ---------------------------------------------------------------------------------------
# a small naive evaluator over the AST


def _plan(rule: A.Rule) -> list[A.Literal]:
    """Body literals in an order where each comparison/assignment runs once its inputs are
    bound (atoms stay in program order)."""
    order: list[A.Literal] = []
    bound: set[str] = set()
    pending = list(rule.body)
    assigned = _assigned(rule)
    while pending:
        ready = next((lit for lit in pending if not isinstance(lit, A.Atom)
                      and _ready(lit, bound, assigned)), None)
        lit = ready or next((lit for lit in pending if isinstance(lit, A.Atom)), None)
        if lit is None:
            raise NDlogSemanticError(
                f"rule {rule.name}: this literal uses variables that nothing binds",
                pending[0].span)
        pending.remove(lit)
        order.append(lit)
        bound |= {v.name for v in A.literal_vars(lit) if not v.anonymous}
    return order


def _names(term: A.Term) -> set[str]:
    return {v.name for v in A.term_vars(term) if not v.anonymous}


def _assigned(rule: A.Rule) -> frozenset[str]:
    """The variables a ``:=`` of ``rule`` binds: an ``X = e`` never binds them, it tests
    them once the ``:=`` has run (docs/language.md, section 5)."""
    return frozenset(lit.var.name for lit in rule.body if isinstance(lit, A.Assign))


def _ready(lit, bound: set[str], assigned: frozenset[str] = frozenset()) -> bool:
    if isinstance(lit, A.Assign):
        return _names(lit.expr) <= bound
    if lit.op == "=":
        for var, other in ((lit.left, lit.right), (lit.right, lit.left)):
            if isinstance(var, A.Var) and not var.anonymous and var.name not in assigned \
                    and _names(other) <= bound:
                return True
    return _names(lit.left) <= bound and _names(lit.right) <= bound


def _atom_matcher(atom: A.Atom):
    """``match(env, t) -> env' or None`` binding the atom's free variables to ``t``."""
    fns = [None if isinstance(t, A.Var) else compile_term(t) for t in atom.args]

    def match(env: dict, t: tuple):
        if len(t) != atom.arity:
            return None
        e = dict(env)
        for term, fn, value in zip(atom.args, fns, t):
            if fn is not None:
                if fn(e) != value:
                    return None
            elif term.anonymous:
                continue
            elif term.name in e:
                if e[term.name] != value:
                    return None
            else:
                e[term.name] = value
        return e
    return match


def _literal_step(lit, assigned: frozenset[str] = frozenset()):
    """``step(env) -> env' or None`` for a comparison or an assignment."""
    if isinstance(lit, A.Assign):
        fn, name = compile_term(lit.expr), lit.var.name
        return lambda env: {**env, name: fn(env)}
    test = compile_compare(lit)
    if lit.op == "=":
        for var, other in ((lit.left, lit.right), (lit.right, lit.left)):
            if isinstance(var, A.Var) and not var.anonymous and var.name not in assigned:
                fn, name = compile_term(other), var.name

                def bind_or_test(env, fn=fn, name=name):
                    if name not in env:
                        return {**env, name: fn(env)}
                    return env if test(env) else None
                return bind_or_test
    return lambda env: env if test(env) else None


def _derivations(rule: A.Rule, plan, ann: Mapping[str, Mapping[tuple, V]]):
    """Yield ``(head tuple, [annotations of the matched body tuples])`` per derivation."""
    assigned = _assigned(rule)
    steps = [(lit.pred, _atom_matcher(lit)) if isinstance(lit, A.Atom)
             else (None, _literal_step(lit, assigned)) for lit in plan]
    head = [compile_term(t) for t in rule.head.args]

    def go(i: int, env: dict, used: list):
        if i == len(steps):
            yield tuple(f(env) for f in head), used
            return
        pred, step = steps[i]
        if pred is None:
            e = step(env)
            if e is not None:
                yield from go(i + 1, e, used)
            return
        for t, a in list(ann.get(pred, {}).items()):
            e = step(env, t)
            if e is not None:
                yield from go(i + 1, e, used + [a])
    yield from go(0, {}, [])


def evaluate_annotated(program: A.Program, base: Mapping[str, Mapping[tuple, V]],
                       semiring: Semiring[V], *, max_rounds: int = 10_000
                       ) -> dict[str, dict[tuple, V]]:
    """Annotate every tuple of ``program`` by a naive fixpoint in ``semiring``.

    Parameters
    ----------
    program:
        A program without aggregates or negation (recursion allowed).
    base:
        ``pred -> {tuple: annotation}`` for the base facts. Facts written in the program
        text are annotated ``semiring.one`` unless ``base`` annotates them.
    semiring:
        The annotation algebra; ``plus`` must be idempotent and absorptive (PosBool, BDDs)
        for the fixpoint to terminate.

    Returns
    -------
    dict[str, dict[tuple, V]]
        ``pred -> {tuple: annotation}`` for base and derived predicates; tuples whose
        annotation is ``zero`` are left out.

    Notes
    -----
    Liu et al., ICDE 2009, Fig. 6 (join ANDs, union and projection OR) and Sec. 4.2 (the
    fixpoint is reached when no derivation changes any tuple's provenance).
    """
    for r in program.rules:
        if r.is_aggregate:
            raise EvaluationError(
                f"rule {r.name}: the provenance reference does not support aggregates",
                r.span)
        if r.negations:
            raise EvaluationError(
                f"rule {r.name}: the provenance reference does not support negation (the "
                "absence of a fact has no provenance polynomial over base tuples)",
                r.negations[0].span)
    start: dict[str, dict[tuple, V]] = {}
    for f in program.facts:
        start.setdefault(f.pred, {})[f.values] = semiring.one
    for pred, rows in base.items():
        for t, a in rows.items():
            if not semiring.eq(a, semiring.zero):
                start.setdefault(pred, {})[tuple(t)] = a
    plans = [(r, _plan(r)) for r in program.rules]
    ann = start
    for _ in range(max_rounds):
        nxt = {p: dict(rows) for p, rows in start.items()}
        for rule, plan in plans:
            out = nxt.setdefault(rule.head.pred, {})
            for t, used in _derivations(rule, plan, ann):
                v = semiring.one
                for a in used:
                    v = semiring.times(v, a)
                if not semiring.eq(v, semiring.zero):
                    out[t] = semiring.plus(out[t], v) if t in out else v
        if _same(ann, nxt, semiring):
            return {p: rows for p, rows in nxt.items() if rows}
        ann = nxt
    raise EvaluationError(f"no provenance fixpoint after {max_rounds} rounds")


def _same(a, b, semiring: Semiring) -> bool:
    keys = {p for p, rows in a.items() if rows} | {p for p, rows in b.items() if rows}
    for p in keys:
        ra, rb = a.get(p, {}), b.get(p, {})
        if ra.keys() != rb.keys() or any(not semiring.eq(ra[t], rb[t]) for t in ra):
            return False
    return True


def posbool_provenance(program: A.Program, variables: Mapping[str, Mapping[tuple, str]]
                       ) -> dict[str, dict[tuple, Antichain]]:
    """PosBool provenance of every tuple, each base tuple being one variable.

    Parameters
    ----------
    program:
        A non-aggregate program (e.g. ``reachable``).
    variables:
        ``pred -> {tuple: variable name}``, e.g. names from
        :class:`provenance.bdd.InsertionRegistry`.

    Returns
    -------
    dict[str, dict[tuple, Antichain]]
        The minimal variable sets of every derivable tuple (Liu Sec. 4 and 8: absorption
        provenance encodes PosBool).
    """
    base = {p: {tuple(t): PosBool.var(v) for t, v in rows.items()}
            for p, rows in variables.items()}
    return evaluate_annotated(program, base, POSBOOL)

