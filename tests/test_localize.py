"""Rule localization (localize/): shapes, invariants and equivalence with the original.

Equivalence is always against the reference evaluator: ``psn.evaluate(localize(p))`` equals
``psn.evaluate(p)`` on every non-auxiliary relation, for the reference programs of the papers
on seeded random graphs and for 240 seeded random (graph, program) pairs drawn from a small
family of link-restricted rules over two and three locations.
"""

from __future__ import annotations

import random

import pytest

import psn
from ndlog import ast as A
from ndlog.analysis import aggsel_candidates
from ndlog.errors import InputError, LocalizationError
from ndlog.printer import format_program, format_rule

import localize
from localize.analysis import body_locations, link_graph, mirror_index, plan_rule
from localize.passes import (PASSES, add_link_mirrors, name_unnamed_rules, ship_remote_atoms,
                             unfold_hidden)

from corpus import CORPUS, load_case
from graphs import random_links

LOCALIZE = CORPUS / "localize"


# -- invariants -----------------------------------------------------------------------------

def assert_localized(original: A.Program, out: A.Program) -> None:
    """Every body lives at one location; aux predicates are hidden and new; the original
    rules whose body was local are kept as they were."""
    for rule in out.rules:
        assert len(body_locations(rule)) <= 1, format_rule(rule)
    new_preds = out.predicates - original.predicates
    assert new_preds == out.hidden - original.hidden
    assert out.visible() >= original.visible()
    kept = {(r.head, r.body, r.named, r.name if r.named else None) for r in out.rules}
    for rule in original.rules:  # unnamed rules may be renumbered (name_unnamed_rules)
        if len(body_locations(rule)) <= 1:
            key = (rule.head, rule.body, rule.named, rule.name if rule.named else None)
            assert key in kept, format_rule(rule)
    assert out.facts == original.facts and out.tables == original.tables


def rules_as_written(program: A.Program) -> set:
    """Rules up to names and body order."""
    return {(r.head, frozenset(r.body)) for r in program.rules}


def assert_unfolds_to_original(program: A.Program) -> None:
    """Inlining the auxiliaries of the localized program gives back the user's rules."""
    back = unfold_hidden(localize.localize(program))
    assert rules_as_written(back) == rules_as_written(program)
    assert back.hidden == program.hidden


def same_results(program: A.Program, facts: dict, aggsel: bool = False) -> None:
    localized = localize.localize(program)
    assert_localized(program, localized)
    facts = {p: rows for p, rows in facts.items() if p in program.predicates}
    want = psn.evaluate(program, facts, aggsel=aggsel)
    got = psn.evaluate(localized, facts, aggsel=aggsel)
    if aggsel:  # a predicate pruned by aggregate selection holds only its best tuples
        for pred in aggsel_candidates(program):
            want.pop(pred, None)
            got.pop(pred, None)
    assert set(got) == set(want)
    for pred in want:
        assert got[pred] == want[pred], pred


# -- Nigam's example and the three-location rule --------------------------------------------

def test_nigam_r2_has_the_shape_of_runtime_md():
    program = psn.load(LOCALIZE / "nigam_r2" / "program.ndl")
    out = localize.localize(program)
    assert format_program(out) == (LOCALIZE / "nigam_r2" / "expected.ndl").read_text()
    r2a, r2b, r2c = out.rules[1:]
    assert format_rule(r2a) == "r2a link_rev(@Z, S) :- link(@S, Z)."
    assert format_rule(r2b) == "r2b r2_aux(@S, Z, D) :- reachable(@Z, D), link_rev(@Z, S)."
    assert format_rule(r2c) == "r2c reachable(@S, D) :- link(@S, Z), r2_aux(@S, Z, D)."
    assert out.hidden == frozenset({"link_rev", "r2_aux"})
    assert out.rules[0] is program.rules[0]


def test_three_location_body_is_rewritten_in_two_steps():
    program = psn.load(LOCALIZE / "three_location" / "program.ndl")
    out = localize.localize(program)
    assert format_program(out) == (LOCALIZE / "three_location" / "expected.ndl").read_text()
    assert_localized(program, out)
    ships = [r for r in out.rules if r.head.pred.startswith("t1_aux")]
    assert [r.head.pred for r in ships] == ["t1_aux1", "t1_aux2"]
    # the first step runs at W and ships to Z, the second at Z and ships to S
    assert [body_locations(r) for r in ships] == [(A.Var("W"),), (A.Var("Z"),)]
    assert [r.head.loc_term for r in ships] == [A.Var("Z"), A.Var("S")]
    # the filter on D is evaluated at W, before anything is shipped
    assert any(isinstance(lit, A.Compare) and lit.op == ">" for lit in ships[0].body)
    rng = random.Random(3)
    for seed in range(10):
        n = rng.randint(4, 8)
        links = [(a, b) for a, b, _ in random_links(n, rng.randint(n, 3 * n), rng)]
        owns = [(x, rng.randint(0, 3)) for x in range(n) if rng.random() < 0.7]
        same_results(program, {"link": links, "owns": owns})


def test_three_location_corpus_case():
    case = load_case(CORPUS / "three_location")
    same_results(case.program, case.facts)
    assert psn.evaluate(localize.localize(case.program), case.facts) == case.expected


# -- the reference programs (docs/language.md, section 10) ------------------------------------

REFERENCE = ("reachable", "nigam_fig1", "shortest_path", "region")


@pytest.mark.parametrize("name", REFERENCE + ("three_location", "keys"))
def test_reference_programs_on_their_corpus_facts(name):
    case = load_case(CORPUS / name)
    assert_unfolds_to_original(case.program)
    same_results(case.program, case.facts, aggsel=False)
    same_results(case.program, case.facts, aggsel=True)
    localized = localize.localize(case.program)
    got = psn.evaluate(localized, case.facts)
    pruned = aggsel_candidates(case.program)  # expected.json holds their pruned tuples
    for pred, rows in case.expected.items():
        if pred not in pruned:
            assert got[pred] == rows, pred


def _graph_facts(rng: random.Random, name: str) -> dict:
    n = rng.randint(4, 7)
    links = random_links(n, rng.randint(n, 2 * n + 2), rng, max_cost=5)
    if name == "shortest_path":
        return {"link": links}
    if name != "region":
        return {"link": [(a, b) for a, b, _ in links]}
    nbr = sorted({(a, b) for a, b, _ in links} | {(b, a) for a, b, _ in links})
    return {
        "nbr": nbr,
        "isTriggered": [(x,) for x in range(n) if rng.random() < 0.6],
        "seed": [(x, 100 + x) for x in range(n) if rng.random() < 0.4],
        "sensor": [(x, (x, x % 3)) for x in range(n)],
        "sink": [(100 + x, 0) for x in range(n)],
    }


@pytest.mark.parametrize("name", REFERENCE)
def test_reference_programs_on_random_graphs(name):
    program = load_case(CORPUS / name).program
    rng = random.Random(sum(map(ord, name)))
    for _ in range(12):
        facts = _graph_facts(rng, name)
        same_results(program, facts, aggsel=False)
        same_results(program, facts, aggsel=True)


# -- 240 random (graph, program) pairs ------------------------------------------------------

# Each template is a link-restricted rule over two or three locations; {h} is the head
# predicate, {b} and {c} are body predicates drawn from link and the derived ones, so that
# programs are recursive in many ways. All values are node names: every program terminates.
TEMPLATES = (
    "{h}(@S, D) :- link(@S, Z), {b}(@Z, D).",                        # Nigam Sec. 2.1
    "{h}(@Z, D) :- link(@S, Z), {b}(@S, D).",                        # remote head, direct
    "{h}(@D, S) :- link(@S, Z), {b}(@Z, D).",                        # head at neither
    "{h}(@S, D) :- {b}(@Z, D), link(@Z, S).",                        # child names parent
    "{h}(@X, Y) :- link(@X, Z), link(@Z, W), {b}(@W, Y).",           # three locations
    "{h}(@W, X) :- link(@X, Z), {b}(@Z, W), {c}(@W, Y), X != Y.",    # three, filter
    "{h}(@S, D) :- link(@S, Z), {b}(@Z, D), w(@Z, V), V > 1.",       # filter at Z
    "{h}(@Y, X) :- {b}(@X, Z), link(@Z, Y), {c}(@Y, X).",            # a cycle of locations
    "{h}(@S, D) :- link(@S, Z), link(@Z, S), {b}(@Z, D), D != S.",   # links both ways
    "{h}(@X, Y) :- {b}(@X, Z), {c}(@Z, W), link(@W, Y), w(@W, V), V < 3.",
    "{h}(@S, D) :- link(@S, Z), link(@Z, W), {b}(@W, D), {c}(@W, S).",  # star of three
    "{h}(@Z, S) :- link(@S, Z).",                                    # local body
    "{h}(@S, D) :- {b}(@S, D), w(@S, V).",                           # local body
)
EXTRA = (
    "cnt(@S, count<D>) :- link(@S, Z), {b}(@Z, D).",
    "tot(@X, sum<V>) :- link(@X, Z), link(@Z, Y), w(@Y, V).",
    "all(@S, count<*>) :- {b}(@S, Z), {c}(@Z, D).",
    "km(@S, D, U) :- link(@S, Z), {b}(@Z, D), w(@Z, V), w(@S, V2), U := V * 10 + V2.",
    "mx(@S, max<V>, min<V>) :- {b}(@S, Z), w(@Z, V).",
    "eq(@S, D) :- link(@S, Z), {b}(@Z, D), w(@Z, V), w(@S, V2), V = V2.",   # test at S
    "as(@S, D, U) :- link(@S, Z), {b}(@Z, D), U = D, U != Z.",            # bind at Z
)
DERIVED = ("p", "q", "r")


def random_program(rng: random.Random) -> str:
    lines = [f"{rng.choice(DERIVED)}(@S, D) :- link(@S, D)."]
    for _ in range(rng.randint(1, 3)):
        lines.append(rng.choice(TEMPLATES).format(
            h=rng.choice(DERIVED), b=rng.choice(("link",) + DERIVED),
            c=rng.choice(("link",) + DERIVED)))
    if rng.random() < 0.5:
        lines.append(rng.choice(EXTRA).format(b=rng.choice(("link",) + DERIVED),
                                              c=rng.choice(("link",) + DERIVED)))
    return "\n".join(f"x{i} {line}" for i, line in enumerate(lines)) + "\n"


def random_facts(rng: random.Random) -> dict:
    n = rng.randint(4, 8)
    links = random_links(n, rng.randint(n - 1, 2 * n), rng)
    return {"link": [(a, b) for a, b, _ in links],
            "w": [(x, rng.randint(0, 4)) for x in range(n) if rng.random() < 0.8]}


@pytest.mark.parametrize("chunk", range(4))
def test_random_programs_and_graphs(chunk):
    for seed in range(60 * chunk, 60 * (chunk + 1)):
        rng = random.Random(seed)
        text = random_program(rng)
        program = psn.parse(text, f"random-{seed}.ndl")
        facts = random_facts(rng)
        try:
            same_results(program, facts)
        except AssertionError as exc:  # name the failing program
            out = format_program(localize.localize(program))
            raise AssertionError(f"seed {seed}:\n{text}\n{out}") from exc
        assert psn.parse(format_program(localize.localize(program))) == \
            localize.localize(program)
        assert_unfolds_to_original(program)


def test_random_family_covers_every_shape():
    multi = [plan_rule(r) for seed in range(240)
             for r in psn.parse(random_program(random.Random(seed))).rules]
    assert any(len(p.steps) == 2 for p in multi)        # three locations
    assert any(len(p.steps) == 1 for p in multi)        # two locations
    assert any(p.steps and not p.steps[0].mirrored for p in multi)   # shipped directly
    assert any(p.steps and p.steps[0].mirrored for p in multi)       # through a mirror


# -- structure ------------------------------------------------------------------------------

def test_centralized_program_is_returned_unchanged():
    program = load_case(CORPUS / "closure_centralized").program
    assert localize.localize(program) is program
    assert "centralized" in localize.explain(program).text()


def test_local_rules_are_unchanged_and_program_without_remote_bodies_is_equal():
    program = load_case(CORPUS / "region").program
    out = localize.localize(program)
    assert out.rules[:4] == program.rules[:4]
    keys = load_case(CORPUS / "keys").program
    assert localize.localize(keys) == keys


def test_mirror_is_made_once_per_predicate_and_direction():
    program = psn.parse(
        "a1 two(@S, D) :- link(@S, Z), link(@Z, D).\n"
        "a2 back(@S, D) :- link(@S, Z), two(@Z, D).\n"
        "a3 other(@Y, X) :- link(@X, Y), link(@Y, X).\n")
    out = localize.localize(program)
    mirrors = [r for r in out.rules if r.head.pred.startswith("link_rev")]
    assert [format_rule(r) for r in mirrors] == ["a1a link_rev(@Z, S) :- link(@S, Z)."]
    assert mirror_index(out) == {("link", 1): "link_rev"}
    # a2 reads the mirror a1 made
    assert any("link_rev(@Z, S)" in format_rule(r) for r in out.rules
               if r.name.startswith("a2"))


def test_mirror_carries_every_column_and_is_shared_across_column_uses():
    program = psn.parse(
        "c1 far(@S, D, C) :- link(@S, Z, C1), cost(@Z, D, C2), C := C1 + C2.\n"
        "c2 near(@S, D) :- link(@S, Z, _), cost(@Z, D, _).\n")
    out = localize.localize(program)
    mirrors = [r for r in out.rules if r.head.pred == "link_rev"]
    assert [format_rule(r) for r in mirrors] == [
        "c1a link_rev(@Z, S, C1) :- link(@S, Z, C1)."]
    ships = {r.name: format_rule(r) for r in out.rules if r.head.pred.endswith("_aux")}
    # c1 uses the cost column at Z (the sum is computed before shipping), c2 does not
    assert ships["c1b"] == ("c1b c1_aux(@S, Z, D, C1, C) :- cost(@Z, D, C2), "
                            "link_rev(@Z, S, C1), C := C1 + C2.")
    assert ships["c2a"] == "c2a c2_aux(@S, Z, D) :- cost(@Z, D, _), link_rev(@Z, S, _)."
    facts = {"link": [(1, 2, 5), (2, 3, 1), (1, 3, 2), (3, 1, 4)],
             "cost": [(2, 9, 1), (3, 9, 7), (1, 8, 2)]}
    same_results(program, facts)


def test_second_argument_mirror_gets_its_own_name():
    program = psn.parse(
        "m1 r(@X, Y) :- e(@X, Y, W), f(@W, Y).\n"
        "m2 s(@X, Y) :- e(@X, W, Y), f(@W, Y).\n")
    out = localize.localize(program)
    names = sorted(r.head.pred for r in out.rules if r.head.pred.startswith("e_rev"))
    assert names == ["e_rev", "e_rev3"]
    same_results(program, {"e": [(1, 2, 3), (3, 2, 1), (2, 3, 3)],
                            "f": [(3, 2), (1, 2), (2, 3)]})


def test_child_that_knows_its_parent_ships_without_a_mirror():
    program = load_case(CORPUS / "region").program
    out = localize.localize(program)
    assert not mirror_index(out)
    assert [format_rule(r) for r in out.rules[4:]] == [
        "g5a g5_aux(@K, R, N) :- regionSize(@R, N), sink(@R, K).",
        "g5b largestRegions(@K, R) :- g5_aux(@K, R, N), largestRegion(@K, N).",
    ]


def test_constant_location_is_known_everywhere():
    program = psn.parse("k1 r(@X, Y) :- a(@X, Y), cfg(@hub, Y).\n")
    out = localize.localize(program)
    assert_localized(program, out)
    plan = plan_rule(program.rules[0])
    assert plan.root == A.Const("hub")
    same_results(program, {"a": [(1, 5), (2, 6), (3, 5)], "cfg": [("hub", 5), (1, 6)]})


def test_aggregate_rules_keep_every_assignment():
    # count<*> counts (Z, D) pairs: the shipping rule must not project D away
    program = psn.parse(
        "n1 reach(@S, D) :- link(@S, D).\n"
        "n2 pairs(@S, count<*>) :- link(@S, Z), reach(@Z, D).\n")
    out = localize.localize(program)
    ship = next(r for r in out.rules if r.head.pred == "n2_aux")
    assert {v.name for v in A.literal_vars(ship.head)} == {"S", "Z", "D"}
    same_results(program, {"link": [(1, 2), (1, 3), (2, 4), (3, 4), (2, 5)]})


def test_unnamed_rules_are_named_for_a_faithful_round_trip():
    program = psn.parse(
        "reach(@S, D) :- link(@S, D).\n"
        "reach(@S, D) :- link(@S, Z), reach(@Z, D).\n"
        "far(@S, D) :- reach(@S, D), D != S.\n")
    out = localize.localize(program)
    assert [(r.name, r.named) for r in out.rules] == [
        ("rule1", False), ("rule2a", True), ("rule2b", True), ("rule2c", True),
        ("rule2", False)]
    assert psn.parse(format_program(out)) == out
    same_results(program, {"link": [(1, 2), (2, 3), (3, 1)]})


def test_generated_names_avoid_names_in_use():
    program = psn.parse(
        "r2a link_rev(@S, D) :- link(@S, D).\n"
        "r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D), r2_aux(@S, D).\n"
        "r9 r2_aux(@S, D) :- link(@S, D).\n")
    out = localize.localize(program)
    assert len({r.name for r in out.rules}) == len(out.rules)
    assert "link_rev_2" in out.hidden and "r2_aux_2" in out.hidden
    assert "link_rev" not in out.hidden and "r2_aux" not in out.hidden
    same_results(program, {"link": [(1, 2), (2, 3), (3, 1), (3, 4)]})


def test_localize_is_idempotent_and_reuses_its_mirrors():
    program = load_case(CORPUS / "shortest_path").program
    once = localize.localize(program)
    assert localize.localize(once) == once
    assert add_link_mirrors(once) == once


def test_passes_have_one_signature_and_document_an_example():
    for p in PASSES:
        assert "Before" in p.__doc__ and "After" in p.__doc__, p.__name__
    program = psn.load(LOCALIZE / "nigam_r2" / "program.ndl")
    step = add_link_mirrors(program)
    assert step.hidden == {"link_rev"} and len(step.rules) == 3
    assert ship_remote_atoms(step) == localize.localize(program)
    assert name_unnamed_rules(program) is program
    with pytest.raises(ValueError, match="add_link_mirrors"):
        ship_remote_atoms(program)


def test_analyses_read_the_link_graph():
    rule = psn.load(LOCALIZE / "three_location" / "program.ndl").rules[0]
    assert body_locations(rule) == (A.Var("S"), A.Var("Z"), A.Var("W"))
    edges = {(e.src.name, e.dst.name, e.atom.pred, e.position) for e in link_graph(rule)}
    assert edges == {("S", "Z", "link", 1), ("Z", "W", "link", 1)}
    plan = plan_rule(rule)
    assert plan.root == A.Var("S")
    assert [(s.child.name, s.parent.name, s.mirrored) for s in plan.steps] == [
        ("W", "Z", True), ("Z", "S", True)]


def test_explain_says_which_rule_became_which():
    program = load_case(CORPUS / "shortest_path").program
    ex = localize.explain(program)
    assert ex.program == localize.localize(program)
    assert ex.made_from("sp2") == ["sp2a", "sp2b", "sp2c"]
    assert ex.made_from("sp1") == []
    text = ex.text()
    assert "sp1 (line 2): unchanged" in text
    assert "sp2 (line 3): its body spans @S and @Z" in text
    assert "It became sp2b, sp2c (and the mirror sp2a)" in text


def test_explain_names_renumbered_unnamed_rules():
    program = psn.parse("reach(@S, D) :- link(@S, Z), reach(@Z, D).\n"
                        "reach(@S, D) :- link(@S, D).\n")
    ex = localize.explain(program)
    assert ex.made_from("rule1") == ["rule1a", "rule1b", "rule1c"]
    assert "unnamed rule rule2 (line 2): unchanged" in ex.text()
    assert "it is now called rule1" in ex.text()
    assert ex.program.rules[-1].name == "rule1" and not ex.program.rules[-1].named


def test_unfolding_the_localized_program_lets_analyses_see_the_original_shape():
    program = load_case(CORPUS / "shortest_path").program
    localized = localize.localize(program)
    # path now recurses through sp2_aux, so aggregate selection does not see it directly
    assert "path" in aggsel_candidates(program)
    assert "path" not in aggsel_candidates(localized)
    seen = aggsel_candidates(unfold_hidden(localized))["path"]
    want = aggsel_candidates(program)["path"]
    assert (seen.group, seen.aggregates) == (want.group, want.aggregates) == \
        ((0, 1), ((3, "min"), (4, "min")))
    assert [m[0] for m in seen.monotone] == ["sp2c", "sp2c"]  # the residual rule
    assert unfold_hidden(program) is program


def test_options_are_rejected():
    with pytest.raises(InputError):
        psn.localize(psn.parse("p(@X) :- q(@X)."), fast=True)


# -- rejections: golden messages --------------------------------------------------------------

REJECTED = sorted((LOCALIZE / "rejected").glob("*.ndl"))
ROOT = CORPUS.parent.parent


@pytest.mark.parametrize("path", REJECTED, ids=lambda p: p.stem)
def test_rejection_golden_message(path):
    rel = path.relative_to(ROOT).as_posix()
    program = psn.parse(path.read_text(), rel, check=False)
    with pytest.raises(LocalizationError) as info:
        localize.localize(program)
    assert info.value.render() + "\n" == path.with_suffix(".expected").read_text()


def test_every_rejection_class_has_a_golden_case():
    stems = {p.stem for p in REJECTED}
    assert stems == {p.stem for p in (LOCALIZE / "rejected").glob("*.expected")}
    assert {"unlinked_two", "unlinked_three", "head_unbound"} <= stems


def test_nothing_is_rewritten_when_a_later_rule_is_rejected():
    program = psn.parse("r1 reach(@S, D) :- link(@S, Z), reach(@Z, D).\n"
                        "r2 bad(@S, D) :- reach(@S, D), link(@Z, D).\n")
    with pytest.raises(LocalizationError, match="rule 'r2'"):
        localize.localize(program)


def test_comparisons_and_assignments_go_where_their_variables_are_bound():
    program = load_case(CORPUS / "shortest_path").program
    out = localize.localize(program)
    ship = next(r for r in out.rules if r.name == "sp2b")
    residual = next(r for r in out.rules if r.name == "sp2c")
    # every filter and assignment of sp2 reads only what Z has (with the mirrored link)
    assert [type(lit).__name__ for lit in ship.body] == [
        "Atom", "Atom", "Compare", "Assign", "Assign", "Assign"]
    assert all(isinstance(lit, A.Atom) for lit in residual.body)
    # a test that needs both ends stays in the residual rule; '=' binds where it can
    program = psn.parse(
        "e1 q(@S, D) :- link(@S, D).\n"
        "e2 r(@S, D, X) :- link(@S, Z), q(@Z, D), w(@S, V), X = D, X := 2, V < D.\n")
    out = localize.localize(program)
    ship = next(r for r in out.rules if r.head.pred == "e2_aux")
    residual = out.rules[-1]
    assert [format_rule(r) for r in (ship, residual)] == [
        "e2b e2_aux(@S, Z, D, X) :- q(@Z, D), link_rev(@Z, S), X = D, X := 2.",
        "e2c r(@S, D, X) :- link(@S, Z), e2_aux(@S, Z, D, X), w(@S, V), V < D.",
    ]
    same_results(program, {"link": [(1, 2), (2, 2), (2, 3), (3, 1)],
                           "w": [(1, 2), (2, 2), (3, 1)]})


# -- found by a fuzz campaign of generated distributed programs ------------------------------

def _net_agrees(program: A.Program, facts: dict) -> None:
    from engine import Network
    want = psn.evaluate(program, facts)
    for delivery in ("random", "adversarial", "fifo"):
        got = Network(program, facts, delivery=delivery, seed=5).run().relations()
        assert got == {p: want[p] for p in got}


def test_a_negation_reads_what_an_assignment_at_its_location_binds():
    """``X := D`` binds ``X`` at ``@S``, where ``link(@S, D)`` binds ``D``, so
    ``not blocked(@S, X)`` can be evaluated there. The localizer rejected the rule ("does not
    know X"): it took the variables of the negation's placeholder for bound at ``@S`` and
    left the assignment in the residual rule."""
    program = psn.parse("r0 p(@D, S) :- link(@S, D), val(@D, V), X := D, "
                        "not blocked(@S, X).\n")
    out = localize.localize(program)
    assert [format_rule(r) for r in out.rules] == [
        "r0a r0_aux(@D, S) :- link(@S, D), not blocked(@S, X), X := D.",
        "r0b p(@D, S) :- r0_aux(@D, S), val(@D, V).",
    ]
    facts = {"link": [(1, 2), (2, 3), (3, 1)], "val": [(2, 0), (3, 4), (1, 1)],
             "blocked": [(2, 3)]}
    same_results(program, facts)
    _net_agrees(program, facts)


def test_an_argument_expression_is_tested_where_its_variables_are_known():
    """An argument expression binds nothing: ``q(@Z, X + 1)`` with ``X`` bound at ``@S``
    was shipped from ``@Z`` with ``X`` unbound there, so :func:`psn.localize` returned a
    program that fails the safety check (the engine lifts such arguments before localizing
    and was right). Lifted in the rules it rewrites, the test runs where ``X`` is known;
    a negation that needs ``X`` at ``@Z`` is rejected naming ``X``, not the lifted
    variable."""
    program = psn.parse(
        "h1 h(@S, D) :- link(@S, Z), p(@Z, D), q(@Z, X + 1), val(@S, X).\n"
        "h2 k(@S, D) :- link(@S, Z), p(@Z, D), not q(@Z, D * 2).\n"
        "h3 m(@S, D) :- p(@S, D), q(@S, D + 1).\n")
    out = localize.localize(program)
    assert psn.parse(format_program(out)) == out          # checked again: every rule safe
    assert out.rules[-1] == program.rules[-1]             # a local rule is kept as written
    facts = {"link": [(1, 2), (2, 3), (3, 1), (2, 1)], "val": [(1, 3), (2, 0), (3, 7)],
             "p": [(2, 5), (3, 0), (1, 1), (1, 6)], "q": [(2, 4), (2, 10), (3, 1), (1, 7)]}
    same_results(program, facts)
    _net_agrees(program, facts)
    bad = psn.parse("m(@S, D) :- link(@S, Z), p(@Z, D), not q(@Z, X * 2), val(@S, X).\n")
    for run in (lambda: localize.localize(bad), lambda: psn.Network(bad, {})):
        with pytest.raises(LocalizationError, match="which does not know X ") as info:
            run()
        assert info.value.span.column == 46 and "bind X with an atom at @Z" in info.value.hint


def test_an_assignment_a_negation_reads_stays_for_the_negations_location():
    """``V1`` is known at ``@N1`` (``link(@N1, N2, V1)``) and at ``@N3`` (the mirror of
    ``link(@N2, N3, V1)``). The assignment to ``X`` was pushed into the first location
    shipped, ``@N1``, so the negation at ``@N3`` no longer found it and the rule was
    rejected; so was ``not val(@N3, V1 + 1)`` on every engine, which lift the argument
    into such an assignment."""
    program = psn.parse(
        "r6 q(@N2, N3) :- link(@N1, N2, V1), link(@N2, N3, V1), p0(@N3, N3), X := V1 + 1, "
        "not val(@N3, X).\n"
        "r7 w(@N2, N3) :- link(@N1, N2, V1), link(@N2, N3, V1), p0(@N3, N3), "
        "not val(@N3, V1 + 1).\n")
    out = localize.localize(program)
    ship = next(r for r in out.rules if r.name == "r6c")
    assert format_rule(ship) == ("r6c r6_aux2(@N2, N3, V1) :- p0(@N3, N3), not val(@N3, X), "
                                 "link_rev(@N3, N2, V1), X := V1 + 1.")
    facts = {"link": [(1, 2, 1), (2, 3, 1), (4, 2, 2), (2, 5, 2), (5, 2, 1), (2, 1, 1)],
             "p0": [(3, 3), (5, 5), (1, 1)], "val": [(3, 2), (1, 3)]}
    same_results(program, facts)
    assert psn.evaluate(program, facts)["q"] == {(2, 1), (2, 5)}   # not (2, 3): val(@3, 2)
    _net_agrees(program, facts)
