"""Stratified negation and arithmetic in atom arguments, from the parser to the engine.

The front end (``not p(...)``, ``!p(...)``, parenthesized comparisons, the AST, printing,
strata), the rewrite ``ndlog.rewrite.lift_atom_expressions``, localization of negated
atoms, the reference evaluator, and the PSN engine maintaining negation incrementally:
reorder tests in which a lower-stratum relation changes after the upper stratum has
converged, under random and adversarial delivery, batched and one update at a time, with
absorption provenance (every MinShip mode) and derivation sets; after each quiescence the
relations equal ``psn.evaluate`` on the final base facts (the claim of docs/provenance.md,
"Negation"). The static errors have golden cases in tests/programs/errors/ and
tests/programs/localize/rejected/; the corpus programs tests/programs/negation_* and fib run
on every engine through tests/test_corpus_engines.py and tests/test_engine_corpus.py.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import localize
import psn
from engine import Network
from engine.guards import UnsafeAnnotationError
from ndlog import ast as A
from ndlog.analysis import aggsel_candidates, dependency_graph, strata
from ndlog.checks import check_program, negation_cycle
from ndlog.printer import format_program, format_rule
from ndlog.rewrite import lift_atom_expressions, project_negated_wildcards
from tests.corpus import cases

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

UNREACHABLE = """
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
u1 unreachable(@S, D) :- peer(@S, D), not reachable(@S, D), S != D.
u2 lonely(@S) :- peer(@S, D), not reachesSome(@S).
u3 reachesSome(@S) :- reachable(@S, D).
"""

# a negation evaluated at the other end of a link: localized into a shipping rule
FAR = """
f1 twoHop(@S, D) :- link(@S, Z), link(@Z, D).
f2 noReturn(@S, Z) :- link(@S, Z), peerOf(@Z, S), not link(@Z, S).
f3 strangers(@S, D) :- twoHop(@S, D), peer(@S, D), not link(@S, D), S != D.
"""

FIB = """
f0 fib(0, 0) :- start(1).
f1 fib(1, 1) :- start(1).
f2 fib(N + 1, X) :- fib(N, X1), fib(N - 1, X2), X := X1 + X2, (N <= 12).
"""


# -- front end -----------------------------------------------------------------------------

def test_not_and_bang_parse_to_negated_literals():
    p = psn.parse("r1 p(X) :- q(X), not r(X), !s(X, 3), (X <= 25).")
    rule = p.rules[0]
    assert [type(lit).__name__ for lit in rule.body] == ["Atom", "Negated", "Negated",
                                                        "Compare"]
    assert rule.body_atoms == (rule.body[0],)                 # positive atoms only
    assert [a.pred for a in rule.negated_atoms] == ["r", "s"]
    assert p.negated == {"r", "s"} and {"r", "s"} <= p.predicates
    assert rule.body[3] == A.Compare("<=", A.Var("X"), A.Const(25))


def test_printing_negation_parses_back_equal():
    text = "r1 p(@X, Y) :- q(@X, Y), not r(@X, Y), !s(@X, 3), X < Y.\n"
    p = psn.parse(text)
    printed = format_program(p)
    assert printed == "r1 p(@X, Y) :- q(@X, Y), not r(@X, Y), not s(@X, 3), X < Y.\n"
    assert psn.parse(printed) == p


@pytest.mark.parametrize("name", ["nothing", "notable", "nilPaths", "infinityPlus"])
def test_keywords_end_at_a_word_boundary(name):
    p = psn.parse(f"r1 p(X) :- q(X), {name}(X), not {name}(X, X).", check=False)
    assert name in p.predicates


def test_parenthesized_comparison_next_to_parenthesized_expression():
    p = psn.parse("r1 p(X) :- q(X), (X + 1) * 2 > 3, ((X + 1) < 4).")
    assert [format_rule(r) for r in p.rules] == ["r1 p(X) :- q(X), (X + 1) * 2 > 3, X + 1 < 4."]


def test_strata_put_a_negated_relation_first():
    p = psn.parse(UNREACHABLE)
    order = [c for comp in strata(p) for c in comp]
    assert order.index("reachable") < order.index("unreachable")
    assert order.index("reachesSome") < order.index("lonely")
    negated = {(d.head, d.body) for d in dependency_graph(p) if d.negated}
    assert negated == {("unreachable", "reachable"), ("lonely", "reachesSome")}


def test_negation_cycle_names_every_predicate_on_it():
    p = psn.parse("a1 p(X) :- e(X), not q(X).\nb1 q(X) :- r(X).\nc1 r(X) :- p(X).",
                  check=False)
    rule = p.rules[0]
    assert negation_cycle(p, rule, rule.negations[0]) == ["p", "not q", "r", "p"]
    with pytest.raises(psn.PSNError, match=r"\(p -> not q -> r -> p\)"):
        check_program(p)


def test_negated_predicate_is_no_aggregate_selection_candidate():
    sp = (EXAMPLES / "shortest_path.ndl").read_text()
    assert "path" in aggsel_candidates(psn.parse(sp))
    reads_absence = sp + "\nx1 direct(@S, D) :- link(@S, D, C), not path(@S, D, [S, D], C, 1)."
    assert "path" not in aggsel_candidates(psn.parse(reads_absence))


# -- lift_atom_expressions -----------------------------------------------------------------

def test_lift_rewrites_the_docstring_examples():
    p = psn.parse("f1 fib(N + 1, X) :- fib(N, X1), fib(N - 1, X2), X := X1 + X2, N < 25.\n"
                  "m1 missing(@S, K) :- want(@S, K), not have(@S, K * 2).\n", check=False)
    out = lift_atom_expressions(p)
    assert [format_rule(r) for r in out.rules] == [
        "f1 fib(N + 1, X) :- fib(N, X1), fib(_E1, X2), _E1 == N - 1, X := X1 + X2, N < 25.",
        "m1 missing(@S, K) :- want(@S, K), _E1 := K * 2, not have(@S, _E1).",
    ]


def test_wildcards_under_not_become_a_shared_hidden_projection():
    p = psn.parse("i1 isolated(@S) :- node(@S), not link(@S, _).\n"
                  "i2 quiet(@S) :- peer(@S, D), not link(@S, _), not link(@S, D).\n")
    out = project_negated_wildcards(p)
    check_program(out)
    assert [format_rule(r) for r in out.rules] == [
        "i1 isolated(@S) :- node(@S), not link_some(@S).",
        "i2 quiet(@S) :- peer(@S, D), not link_some(@S), not link(@S, D).",
        "link_some(@V0) :- link(@V0, _).",
    ]
    assert out.hidden == {"link_some"} and project_negated_wildcards(out) is out
    plain = psn.parse(UNREACHABLE)
    assert project_negated_wildcards(plain) is plain
    facts = {"node": [(1,), (2,)], "peer": [(1, 2), (2, 1)], "link": [(1, 2)]}
    got = psn.evaluate(p, facts)
    assert got["isolated"] == {(2,)} and got["quiet"] == {(2,)}
    assert "link_some" not in got and psn.evaluate(p, facts, hidden=True)["link_some"] == {(1,)}


def test_lift_keeps_programs_checked_and_is_idempotent():
    p = psn.parse(FIB + "g1 g(X) :- fib(N, X), fib(_E1 + 0, Y), _E1 := N - 1.")
    out = lift_atom_expressions(p)
    check_program(out)                                # the same safety rules still hold
    assert "_E2" in format_program(out)               # _E1 is taken in g1: fresh name
    assert lift_atom_expressions(out) is out
    plain = psn.parse("r1 p(X) :- q(X, Y), Y > 1.")
    assert lift_atom_expressions(plain) is plain


def test_fib_evaluates_everywhere_from_any_delta():
    p = psn.parse(FIB)
    want = {(0, 0), (1, 1)}
    a, b = 0, 1
    for n in range(2, 14):
        a, b = b, a + b
        want.add((n, b))
    assert psn.evaluate(p, {"start": [(1,)]})["fib"] == want
    for annotation in ("absorption", "derivation"):
        net = Network(p, {"start": [(1,)]}, annotation=annotation, delivery="random",
                      seed=5).run()
        assert net.relations()["fib"] == want


def test_expression_whose_variables_are_bound_only_elsewhere_localizes():
    # the test of the lifted expression is evaluated where its variables are bound
    p = psn.parse("r1 far(@S, D) :- link(@S, Z, C), cost(@Z, D, C + 1).")
    facts = {"link": [(1, 2, 4), (1, 3, 1)], "cost": [(2, 7, 5), (3, 8, 9)]}
    want = psn.evaluate(p, facts)["far"]
    assert want == {(1, 7)}
    assert Network(p, facts).run().relations()["far"] == want


# -- localization --------------------------------------------------------------------------

def test_negated_atom_is_shipped_with_its_location():
    out = psn.localize(psn.parse(FAR))
    text = format_program(out)
    assert "f2a f2_aux(@S, Z) :- peerOf(@Z, S), not link(@Z, S).\n" in text
    assert "f3 strangers(@S, D) :- twoHop(@S, D), peer(@S, D), not link(@S, D), S != D." \
        in text
    assert "not0$" not in text
    explained = localize.explain(psn.parse(FAR)).text()
    assert "not link(@Z, S)" in explained and "not0$" not in explained


def test_localized_negation_equals_the_reference():
    p = psn.parse(FAR)
    facts = {"link": [(1, 2), (2, 3), (3, 1), (2, 1)],
             "peerOf": [(2, 1), (3, 2), (1, 3), (1, 2)],
             "peer": [(1, 3), (2, 1), (3, 2), (1, 1)]}
    want = psn.evaluate(p, facts)
    assert want["noReturn"] == {(2, 3), (3, 1)}
    got = Network(p, facts, delivery="random", seed=2).run().relations()
    for rel in ("noReturn", "strangers", "twoHop"):
        assert got[rel] == want[rel], rel


# -- the engine: refusals, annotations --------------------------------------------------------

def test_set_semantics_refuses_negation():
    with pytest.raises(UnsafeAnnotationError, match="cannot maintain negation") as info:
        Network(psn.parse(UNREACHABLE), {"link": [(1, 2)], "peer": [(1, 2)]},
                annotation="set").run()
    assert "--annotation absorption" in info.value.render()


def _absence_variable(net, pred, tup) -> str:
    node = net.nodes[tup[0]]
    sets = net.scheme.minimal_sets(node.ctx, node.state[pred][tup])
    (name,) = [v for s in sets for v in s if not v.startswith("x")]
    return name


def test_absence_is_a_variable_that_dies_and_is_replaced_by_a_fresh_one():
    p = psn.parse(UNREACHABLE)
    net = Network(p, {"peer": [(1, 2)], "link": [(2, 1)]}, ship="off", delivery="fifo")
    net.run()
    assert net.why("unreachable", (1, 2)) == "peer(@1,2) ∧ not reachable(@1,2)"
    first = _absence_variable(net, "unreachable", (1, 2))
    net.apply([(1, "link", (1, 2))]).run()             # reachable(1, 2) appears
    assert (1, 2) not in net.relations()["unreachable"]
    assert first in net.nodes[1].ctx.zeroed            # the absence's variable died
    net.apply([(-1, "link", (1, 2))]).run()            # ... and disappears again
    assert net.why("unreachable", (1, 2)) == "peer(@1,2) ∧ not reachable(@1,2)"
    second = _absence_variable(net, "unreachable", (1, 2))
    assert second != first and second not in net.nodes[1].ctx.zeroed


# -- reorder: a lower stratum changes after the upper one converged ---------------------------

def _graph(rng: random.Random, n: int):
    links = {(a, b) for a in range(n) for b in range(n) if a != b and rng.random() < 0.25}
    peers = [(a, b) for a in range(n) for b in range(n) if a != b and rng.random() < 0.6]
    return links, peers


def _bursts(rng: random.Random, n: int, links: set):
    """Insertions that make more pairs reachable (retracting unreachable), deletions that
    make fewer (restoring them), a link deleted and inserted again within one burst."""
    live = set(links)
    out = []
    for _ in range(3):
        new = {(rng.randrange(n), rng.randrange(n)) for _ in range(2)}
        new = {t for t in new if t[0] != t[1] and t not in live}
        gone = set(rng.sample(sorted(live), min(2, len(live))))
        burst = [(1, "link", t) for t in sorted(new)] + [(-1, "link", t) for t in sorted(gone)]
        if live - gone:
            back = rng.choice(sorted(live - gone))
            burst += [(-1, "link", back), (1, "link", back)]
        live = (live | new) - gone
        out.append(burst)
    return out, live


def _check(net, program, context) -> None:
    want = psn.evaluate(program.with_(facts=()), net.base_facts())
    got = net.relations()
    for rel in want:
        assert got.get(rel, set()) == want[rel], (rel, context)


SCHEDULES = [("random", True, "lazy"), ("random", False, "lazy"), ("adversarial", True, "lazy"),
             ("adversarial", False, "off"), ("random", True, "eager"), ("fifo", True, "off")]


@pytest.mark.parametrize("annotation", ["absorption", "derivation"])
@pytest.mark.parametrize("scenario", range(4))
def test_reorder_lower_stratum_changes_after_convergence(annotation, scenario):
    program = psn.parse(UNREACHABLE)
    rng = random.Random(f"neg-{scenario}")
    n = 5 + scenario % 2
    links, peers = _graph(rng, n)
    bursts, _ = _bursts(rng, n, links)
    for delivery, batch, ship in SCHEDULES:
        if annotation == "derivation" and ship != "off":
            ship = None                                 # MinShip needs absorption
        seed = rng.randrange(10**6)
        net = Network(program, {"link": sorted(links), "peer": peers},
                      annotation=annotation, delivery=delivery, seed=seed, batch=batch,
                      ship=ship if annotation == "absorption" else None)
        net.run()                                       # the upper stratum has converged
        _check(net, program, (delivery, batch, ship, seed, "initial"))
        for k, burst in enumerate(bursts):              # ... then the lower one changes
            net.apply(burst).run()
            _check(net, program, (delivery, batch, ship, seed, k))


ASSIGNED = """
r1 gap(@X, V) :- m(@X, W), not link(@X, V), V := X + W.
r2 far(@X, V) :- m(@X, W), V = X + W, not link(@X, V).
"""


@pytest.mark.parametrize("annotation", ["absorption", "derivation"])
def test_a_negated_variable_bound_by_an_assignment_is_tested_not_reassigned(annotation):
    """The delta rule of ``not link(@X, V)`` binds ``V`` from the absence that begins, so the
    assignment ``V := X + W`` (or ``V = X + W``) is then a test: deleting a link of another
    ``V`` must derive nothing. It used to overwrite ``V`` and derive ``gap(@2, 4)`` while
    ``link(@2, 4)`` was present."""
    program = psn.parse(ASSIGNED)
    rng = random.Random(f"assigned-{annotation}")
    for delivery, batch, _ in SCHEDULES:
        net = Network(program, {"m": [(2, 2), (3, 1)], "link": [(2, 4), (2, 3), (3, 4)]},
                      annotation=annotation, delivery=delivery, seed=rng.randrange(10**6),
                      batch=batch).run()
        _check(net, program, (delivery, batch, "initial"))
        assert net.relations()["gap"] == set()
        for burst in ([(-1, "link", (2, 3))], [(-1, "link", (3, 4)), (1, "link", (2, 3))],
                      [(-1, "link", (2, 4)), (1, "link", (3, 5))], [(1, "m", (2, 3))]):
            net.apply(burst).run()
            _check(net, program, (delivery, batch, burst))
        assert net.relations()["gap"] == net.relations()["far"] == {(2, 4), (3, 4), (2, 5)}


@pytest.mark.parametrize("annotation", ["absorption", "derivation"])
def test_reorder_overlapping_bursts(annotation):
    """Every burst injected before any runs: insertions into the negated relation race the
    derivations that read its absence."""
    program = psn.parse(UNREACHABLE)
    rng = random.Random("overlap")
    for trial in range(6):
        links, peers = _graph(rng, 5)
        bursts, _ = _bursts(rng, 5, links)
        delivery = ("random", "adversarial")[trial % 2]
        net = Network(program, {"peer": peers}, annotation=annotation, delivery=delivery,
                      seed=trial, batch=bool(trial % 3))
        net.apply([(1, "link", t) for t in sorted(links)])
        for burst in bursts:
            net.apply(burst)
        net.run()
        _check(net, program, (trial, delivery))


#: Corpus programs too large for an exhaustive search in seconds: searched at random.
VERIFY_AT_RANDOM = {"negation_blacklist"}


@pytest.mark.parametrize("annotation", ["absorption", "derivation"])
@pytest.mark.parametrize("name", sorted(c.name for c in cases()
                                        if c.name.startswith("negation_")))
def test_verify_negation_corpus_reorder_tolerant(annotation, name):
    """``psn verify`` on every negation program of the corpus: a seeded base fact is deleted
    and inserted again in two overlapping bursts, so its deletion, its re-insertion and
    what the upper stratum derived from its absence race each other; every delivery order
    (exhaustive, complete) ends in the stratified model."""
    case = next(c for c in cases() if c.name == name)
    facts = sorted((p, t) for p, rows in case.facts.items() for t in rows)
    pred, tup = random.Random(f"verify-{name}").choice(facts)
    at_random = name in VERIFY_AT_RANDOM
    result = psn.verify(case.program, case.facts, [[(-1, pred, tup)], [(1, pred, tup)]],
                        annotation=annotation, scope="overlap", seed=5,
                        mode="random" if at_random else "exhaustive",
                        budget=200 if at_random else None)
    assert result.ok, result.counterexample.render()
    assert result.complete or at_random
    assert result.schedules >= (200 if at_random else 1)


def test_three_strata_on_the_simulator():
    """Negation over a relation itself computed through negation, on the simulator."""
    import sim
    text = UNREACHABLE + "w1 wellConnected(@S) :- peer(@S, D), not lonely(@S), " \
                         "not unreachable(@S, D).\n"
    program = psn.parse(text)
    rng = random.Random(11)
    links, peers = _graph(rng, 6)
    s = sim.Simulation(program, None, delivery="random", seed=3)
    s.step(insert={"link": sorted(links), "peer": peers})
    want = psn.evaluate(program.with_(facts=()), s.base_facts())
    assert s.relations()["wellConnected"] == want["wellConnected"]
    gone = sorted(links)[:3]
    s.step(delete={"link": gone})
    want = psn.evaluate(program.with_(facts=()), s.base_facts())
    for rel in ("unreachable", "lonely", "wellConnected"):
        assert s.relations()[rel] == want[rel], rel


BORDER = (Path(__file__).resolve().parent / "programs" / "negation_border" /
          "program.ndl").read_text()


@pytest.mark.parametrize("annotation", ["absorption", "derivation"])
def test_reorder_region_border_as_sensors_trigger(annotation):
    """The border of a region (negation at the neighbour's node, an aggregate over it) while
    sensors are triggered and cleared: the recursive region grows and shrinks under the
    negation after every quiescence."""
    program = psn.parse(BORDER)
    nbr = [(a, b) for a in range(9) for b in range(9)
           if abs(a // 3 - b // 3) + abs(a % 3 - b % 3) == 1]
    rng = random.Random(annotation)
    for trial in range(4):
        live = {(x,) for x in rng.sample(range(9), 4)} | {(0,), (8,)}
        net = Network(program, {"nbr": nbr, "seed": [(0, 0), (8, 8)],
                                "isTriggered": sorted(live)},
                      annotation=annotation, delivery=("random", "adversarial")[trial % 2],
                      seed=trial, batch=trial != 1)
        net.run()
        _check(net, program, (trial, "initial"))
        for k in range(3):
            on = {(x,) for x in rng.sample(range(9), 2)} - live
            off = set(rng.sample(sorted(live), 2))
            net.apply([(1, "isTriggered", t) for t in sorted(on)] +
                      [(-1, "isTriggered", t) for t in sorted(off)]).run()
            live = (live | on) - off
            _check(net, program, (trial, k))


def test_why_follows_negated_atoms_under_every_minship_mode():
    """--why completes a provenance with what lazy MinShip keeps buffered; a derivation
    through a negated atom contributes the absence's variable (not q(...))."""
    p = psn.parse(UNREACHABLE + "c1 cut(@S) :- peer(@S, D), not reachable(@S, D).\n")
    facts = {"peer": [(1, 2), (1, 3), (1, 4)], "link": [(1, 4), (4, 1), (2, 1)]}
    answers = set()
    for ship in ("lazy", "eager", "off"):
        net = Network(p, facts, ship=ship, delivery="random", seed=4).run()
        answers.add(net.why("cut", (1,)))
    (answer,) = answers
    assert answer == ("peer(@1,2) ∧ not reachable(@1,2) ∨ peer(@1,3) ∧ not reachable(@1,3)")
