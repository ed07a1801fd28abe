"""The PosBool reference: semiring laws, agreement with psn.evaluate on every sub-instance,
and agreement with a centralized BDD fixpoint on seeded random graphs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import psn
from graphs import random_links
from provenance.bdd import BDDContext, InsertionRegistry
from provenance.posbool import (POSBOOL, BDDSemiring, PosBool, evaluate_annotated,
                                minimize, posbool_provenance)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REACH = psn.load(EXAMPLES / "reachable.ndl")
POOL = [f"v{i}" for i in range(6)]


def _rand_antichain(rng):
    return minimize(frozenset(rng.sample(POOL, rng.randint(0, 3)))
                    for _ in range(rng.randint(0, 3)))


def test_minimize_keeps_inclusion_minimal_sets():
    a, b, c = frozenset("a"), frozenset("ab"), frozenset("bc")
    assert minimize([b, a, c, b]) == frozenset({a, c})
    assert minimize([frozenset(), a]) == POSBOOL.one
    assert minimize([]) == POSBOOL.zero


@pytest.mark.parametrize("seed", range(3))
def test_posbool_semiring_laws(seed):
    rng = random.Random(seed)
    P = POSBOOL
    for _ in range(100):
        a, b, c = (_rand_antichain(rng) for _ in range(3))
        assert P.plus(a, b) == P.plus(b, a) and P.times(a, b) == P.times(b, a)
        assert P.plus(a, P.plus(b, c)) == P.plus(P.plus(a, b), c)
        assert P.times(a, P.times(b, c)) == P.times(P.times(a, b), c)
        assert P.times(a, P.plus(b, c)) == P.plus(P.times(a, b), P.times(a, c))
        assert P.plus(a, P.times(a, b)) == a
        assert P.times(a, P.one) == a and P.plus(a, P.zero) == a
        assert P.times(a, P.zero) == P.zero


def _instance(seed: int):
    rng = random.Random(seed)
    n = rng.randint(4, 7)
    links = [(a, b) for a, b, _ in random_links(n, rng.randint(n, 2 * n), rng)]
    reg = InsertionRegistry()
    names = {t: reg.insert("link", t, loc=0) for t in links}
    return rng, links, names


@pytest.mark.parametrize("seed", range(6))
def test_posbool_matches_evaluate_on_every_sampled_subinstance(seed):
    """A tuple is derivable from a set L of live links iff one of its minimal sets is in L:
    checked against the set-semantics reference on random subsets of the links."""
    rng, links, names = _instance(seed)
    prov = posbool_provenance(REACH, {"link": names})
    full = psn.evaluate(REACH, {"link": links})
    assert set(prov["reachable"]) == full["reachable"]
    for _ in range(12):
        live = rng.sample(links, rng.randint(0, len(links)))
        live_vars = {names[t] for t in live}
        expected = psn.evaluate(REACH, {"link": live})["reachable"]
        got = {t for t, sets in prov["reachable"].items()
               if any(s <= live_vars for s in sets)}
        assert got == expected


@pytest.mark.parametrize("seed", range(6))
def test_bdd_fixpoint_equals_posbool_on_random_graphs(seed):
    """Absorption provenance computed centrally in BDDs (same naive fixpoint, Liu Fig. 6)
    has the PosBool antichain as its minimal sum of products."""
    _, links, names = _instance(100 + seed)
    ctx = BDDContext()
    base = {"link": {t: ctx.var(v) for t, v in names.items()}}
    bdd = evaluate_annotated(REACH, base, BDDSemiring(ctx))
    ref = posbool_provenance(REACH, {"link": names})
    assert set(bdd["reachable"]) == set(ref["reachable"])
    for t, f in bdd["reachable"].items():
        assert frozenset(ctx.minimal_sop(f)) == ref["reachable"][t]
        assert ctx.from_sets(ref["reachable"][t]) == f


def test_program_facts_count_as_true_and_aggregates_are_rejected():
    prog = psn.parse("link(1, 2).\nr1 reachable(S, D) :- link(S, D).\n"
                     "r2 reachable(S, D) :- link(S, Z), reachable(Z, D).")
    prov = posbool_provenance(prog, {"link": {(2, 3): "p"}})
    assert prov["reachable"][(1, 2)] == POSBOOL.one
    assert prov["reachable"][(1, 3)] == PosBool.var("p")
    agg = psn.parse("r1 m(S, min<C>) :- link(S, D, C).")
    with pytest.raises(psn.EvaluationError):
        posbool_provenance(agg, {"link": {(1, 2, 3): "p"}})


def test_comparisons_and_assignments_in_bodies():
    prog = psn.parse("r1 big(S, D, C2) :- link(S, D, C), C > 1, C2 := C * 2.")
    prov = posbool_provenance(prog, {"link": {(1, 2, 1): "p", (1, 3, 5): "q"}})
    assert prov["big"] == {(1, 3, 10): PosBool.var("q")}


@pytest.mark.parametrize("body", ["C2 := C * 2, C2 = 10", "C2 = 10, C2 := C * 2"])
def test_eq_on_a_variable_bound_by_assignment_is_a_test(body):
    # docs/language.md, section 5: X = e tests X when a ':=' binds it, in any order
    prog = psn.parse(f"r1 big(S, D, C2) :- link(S, D, C), {body}.")
    prov = posbool_provenance(prog, {"link": {(1, 2, 1): "p", (1, 3, 5): "q"}})
    assert prov["big"] == {(1, 3, 10): PosBool.var("q")}
