"""The centralized reference evaluator: the golden corpus, and graph queries against
networkx on seeded random graphs (reachability, minCost, minHops, cheapestPath)."""

from __future__ import annotations

import random

import networkx as nx
import pytest

import psn
from corpus import case_ids, load_case, CORPUS
from graphs import random_links

EXAMPLES = CORPUS.parent.parent / "examples"
SP = psn.load(EXAMPLES / "shortest_path.ndl")
REACH = psn.load(EXAMPLES / "reachable.ndl")


@pytest.mark.parametrize("name", case_ids())
def test_corpus(name):
    case = load_case(CORPUS / name)
    result = psn.evaluate(case.program, case.facts)
    assert case.expected, f"{name} has no expected.json"
    for rel, rows in case.expected.items():
        assert result[rel] == rows, rel
    assert set(result) == set(case.expected)


def _digraph(links):
    g = nx.DiGraph()
    g.add_weighted_edges_from(links)
    return g


@pytest.mark.parametrize("seed", range(4))
def test_reachable_matches_networkx(seed):
    rng = random.Random(seed)
    n = rng.randint(50, 200)
    links = random_links(n, rng.randint(n, 3 * n), rng)
    result = psn.evaluate(REACH, {"link": [(a, b) for a, b, _ in links]})
    g = _digraph(links)
    expected = {(s, d) for s in g for d in nx.descendants(g, s)}
    # reachable(s, s) holds when s lies on a cycle
    expected |= {(s, s) for s in g if any(nx.has_path(g, x, s) for x in g.successors(s))}
    assert result["reachable"] == expected


@pytest.mark.parametrize("seed", range(4))
def test_shortest_path_matches_networkx(seed):
    rng = random.Random(100 + seed)
    n = rng.randint(50, 120)
    links = random_links(n, rng.randint(2 * n, 4 * n), rng)
    result = psn.evaluate(SP, {"link": links})
    g = _digraph(links)
    costs = dict(nx.all_pairs_dijkstra_path_length(g))
    hops = dict(nx.all_pairs_shortest_path_length(g))
    exp_cost = {(s, d, c) for s in costs for d, c in costs[s].items() if s != d}
    exp_hops = {(s, d, h) for s in hops for d, h in hops[s].items() if s != d}
    assert result["minCost"] == exp_cost
    assert result["minHops"] == exp_hops
    cheapest: dict = {}
    for s, d, p, c in result["cheapestPath"]:
        assert c == costs[s][d]
        cheapest.setdefault((s, d), set()).add(p)
    for s, d, _ in exp_cost:
        assert cheapest[(s, d)] == {tuple(p) for p in nx.all_shortest_paths(
            g, s, d, weight="weight")}
    fewest: dict = {}
    for s, d, p, h in result["fewestHops"]:
        fewest.setdefault((s, d), set()).add(p)
    for s, d, _ in exp_hops:
        assert fewest[(s, d)] == {tuple(p) for p in nx.all_shortest_paths(g, s, d)}


JOINS = [
    "h(X, Z) :- r(X, Y), s(Y, Z).",
    "h(X, Z) :- r(X, Y), s(Y, Z), X != Z.",
    "h(X) :- r(X, Y), s(Y, Y).",
    "h(X, Y) :- r(X, Y), s(Y, 2).",
    "h(Z, X, W) :- s(Y, Z), r(X, Y), W := X + Z.",
    "h(X, Y) :- r(X, Y), s(X, Y).",
    # head arguments bound before the last atom and by it, in every arrangement
    "h(Z, Y) :- r(X, Y), s(Y, Z).",
    "h(Y, X, Z) :- r(X, Y), s(Y, Z).",
    "h(Z, X, Y, Z) :- r(X, Y), s(Y, Z).",
    "h(Z) :- r(X, Y), s(Y, Z).",
    "h(Z, W) :- r(X, Y), s(Z, W).",
    "h(W, Y, Z, X) :- r(X, Y), s(Z, W).",
]


@pytest.mark.parametrize("rule", JOINS)
@pytest.mark.parametrize("seed", range(3))
def test_a_delta_plan_matches_the_same_whichever_atom_leads(rule, seed):
    """A delta plan of a two-atom rule may start with the other atom when its relation is
    the smaller one (each of its tuples then looks its matches up in the delta): on random
    relations, both starts give the same matches, and so does ``psn.evaluate``. A plan
    that emits head values grouped by the arguments bound before its last atom gives the
    head tuples that one assignment per match gives."""
    from ndlog.reference import Relation, _head_fn, compile_body
    rng = random.Random(seed)
    r = Relation((rng.randrange(6), rng.randrange(6)) for _ in range(rng.randint(10, 30)))
    s = Relation((rng.randrange(6), rng.randrange(6)) for _ in range(rng.randint(10, 30)))
    rel = {"r": r, "s": s}
    (ru,) = psn.parse(rule, check=False).rules
    delta = next(i for i, lit in enumerate(ru.body) if getattr(lit, "pred", None) == "r")
    other = next(i for i, lit in enumerate(ru.body) if getattr(lit, "pred", None) == "s")

    def matches(lead: int, project: bool = True) -> set:
        out: set = set()
        run = compile_body(ru, lead, lambda j: rel.__getitem__, project=project)
        head = _head_fn(ru)
        if run.projects:
            run(lambda key, values: out.update(run.head_tuples(key, list(values))))
        else:
            run(lambda env: out.add(head(env)))
        return out
    assert matches(delta) == matches(other)
    assert matches(delta) == matches(delta, project=False)
    assert matches(other) == matches(other, project=False)
    assert matches(delta) == psn.evaluate(psn.parse(rule), {"r": r.tuples, "s": s.tuples})[
        "h"]


@pytest.mark.parametrize("seed", range(6))
def test_aggregate_selection_equals_full_enumeration(seed):
    """With pruning off, shortest path enumerates every simple path: small graphs only."""
    rng = random.Random(seed)
    links = random_links(6, rng.randint(8, 16), rng, max_cost=4)
    pruned = psn.evaluate(SP, {"link": links})
    full = psn.evaluate(SP, {"link": links}, aggsel=False)
    for rel in ("minCost", "minHops", "cheapestPath", "fewestHops", "shortestCheapestPath"):
        assert pruned[rel] == full[rel], rel
    assert pruned["path"] <= full["path"]


@pytest.mark.parametrize("cost", [0, -2])
def test_non_positive_cost_is_a_clear_error_under_pruning(cost):
    links = [(1, 2, 1), (2, 3, cost), (3, 1, 1)]
    with pytest.raises(psn.EvaluationError) as info:
        psn.evaluate(SP, {"link": links})
    text = info.value.render()
    assert "strictly increase" in text and "sp2" in text and "shortest_path.ndl:5:52" in text
    # without pruning the same input evaluates (every simple path is enumerated)
    full = psn.evaluate(SP, {"link": links}, aggsel=False)
    assert (2, 3, cost) in full["minCost"]


def test_eq_after_assignment_is_a_test_in_any_order():
    # docs/language.md, section 5: X = e tests X when a ':=' binds it
    for body in ("M := D + 1, M = 3", "M = 3, M := D + 1"):
        prog = psn.parse(f"r4 mn(@S, M) :- link(@S, D), {body}.")
        assert psn.evaluate(prog, {"link": [(1, 2), (1, 3)]})["mn"] == {(1, 3)}


def test_unchecked_rebinding_points_at_the_variable_with_a_hint():
    prog = psn.parse("r1 p(X) :- q(Y), X := Y, X := 2.", filename="u.ndl", check=False)
    with pytest.raises(psn.NDlogSemanticError) as info:
        psn.evaluate(prog, {"q": [(1,)]})
    err = info.value
    assert (err.line, err.column) == (1, 18)
    assert "already bound" in err.message and "X == ..." in err.hint


def test_fact_arity_mismatch_is_an_input_error():
    with pytest.raises(psn.InputError, match=r"link\(1, 2, 3\) has 3 arguments"):
        psn.evaluate(REACH, {"link": [(1, 2), (1, 2, 3)]})


def test_facts_accept_lists_as_list_values():
    prog = psn.parse("s(X, f_size(L)) :- l(X, L).")
    assert psn.evaluate(prog, {"l": [[1, [4, 5, 6]]]})["s"] == {(1, 3)}


def test_hidden_relations_are_left_out():
    prog = psn.parse("a(X) :- b(X). c(X) :- a(X).").with_(hidden=frozenset({"a"}))
    result = psn.evaluate(prog, {"b": [(1,)]})
    assert "a" not in result and result["c"] == {(1,)}
    assert psn.evaluate(prog, {"b": [(1,)]}, hidden=True)["a"] == {(1,)}


def test_evaluation_type_error_names_the_position():
    prog = psn.parse("r1 s(X + 1) :- t(X).", filename="t.ndl")
    with pytest.raises(psn.EvaluationError) as info:
        psn.evaluate(prog, {"t": [("word",)]})
    assert info.value.render().startswith("t.ndl:1:")


def test_evaluate_takes_text_and_checks_facts_against_the_program():
    """``psn.evaluate`` parses NDlog text as ``Network`` does, and refuses facts of a
    predicate the program does not use or of another arity (as ``Network`` does), instead
    of returning them beside empty derived relations."""
    text = "r1 reachable(@S, D) :- link(@S, D)."
    assert psn.evaluate(text, {"link": iter([(1, 2)])}) == \
        {"link": {(1, 2)}, "reachable": {(1, 2)}}
    with pytest.raises(psn.InputError, match="'lnk' is not used by the program") as bad:
        psn.evaluate(text, {"lnk": [(1, 2)]})
    assert "did you mean 'link'?" in bad.value.hint
    with pytest.raises(psn.InputError, match=r"link\(1, 2, 3\) has 3 arguments, but 'link' "
                                             r"has arity 2"):
        psn.evaluate(text, {"link": [(1, 2), (1, 2, 3)]})
    with pytest.raises(psn.InputError, match="a fact of 'link' must be a tuple, got 1"):
        psn.evaluate(text, {"link": [1, 2]})
    for run in (psn.evaluate, psn.Network):
        with pytest.raises(psn.InputError, match="facts must be a mapping"):
            run(text, [("link", (1, 2))])
    with pytest.raises(psn.InputError):
        psn.Network(text, {"lnk": [(1, 2)]})
    declared = psn.parse("materialize(extra, infinity, infinity, keys(1)).\n" + text)
    assert psn.evaluate(declared, {"extra": [(1,), (2,)]})["extra"] == {(1,), (2,)}
    with pytest.raises(psn.InputError, match=r"extra\(2, 3\) has 2 arguments, but 'extra' "
                                             r"has arity 1"):
        psn.evaluate(declared, {"extra": [(1,), (2, 3)]})


def test_the_reference_pauses_the_collector_while_it_evaluates():
    """The fixpoint runs with the cyclic collector paused (its full collections traverse
    every tuple made so far), and leaves it as it was, also after an error."""
    import gc
    from ndlog.errors import PSNError
    from ndlog.reference import evaluate
    seen = []

    def links():
        seen.append(gc.isenabled())             # read inside the fixpoint's pause
        yield from [(1, 2), (2, 3)]
    was = gc.isenabled()
    out = evaluate(REACH, {"link": links()})
    assert seen == [False] and gc.isenabled() == was
    assert out["reachable"] == {(1, 2), (2, 3), (1, 3)}
    with pytest.raises(PSNError):
        evaluate(REACH, {"link": [(1, 2, 3)]})
    assert gc.isenabled() == was
