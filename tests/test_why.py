"""``--why``: the complete provenance of a fact under every MinShip mode (engine.why).

* Liu et al. (ICDE 2009) Fig. 2 and the three-link example ``a->b->c``, ``a->c``: the
  formula is the same with lazy, eager and no MinShip, though lazy shipping stores only one
  derivation at the receiver;
* an alternative buffered at a node that itself derived the fact from a partial one (the
  recursion through the derivation structure);
* seeded random graphs with insertions and deletions, several delivery orders, one shared
  annotation context or one per worker: every derived tuple's formula under lazy (and
  eager) MinShip equals the one computed with MinShip off, as minimal sets of base
  variables; a program with assignments, comparisons, constants and repeated variables;
* a ladder with 64 paths, and the limit on the size of what is computed;
* asking does not change the network;
* errors: no provenance, unknown predicate, wrong arity, a fact that is not derived;
  printing the constants.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

import psn
from engine import Network
from engine.minship import stage_of
from engine.why import NotDerived, TooLarge, why, why_sets
from graphs import random_links
from ndlog.errors import InputError
from provenance.bdd import insertion_id

REACH = psn.load(Path(__file__).resolve().parent.parent / "examples" / "reachable.ndl")
MODES = ("lazy", "eager", "off")

#: Hop-bounded reachability: assignments, a comparison, a constant in a body atom and a
#: repeated variable, with alternative derivations for MinShip to buffer.
HOPS = psn.parse("""
h1 hop(@S, D, H) :- link(@S, D), H := 1.
h2 hop(@S, D, H) :- link(@S, Z), hop(@Z, D, H1), H := H1 + 1, H < 4.
h3 two(@S, D) :- hop(@S, D, 2).
h4 loop(@S, H) :- hop(@S, S, H).
""")


def _products(text: str) -> set[frozenset[str]]:
    """The products of a printed sum of products, order-insensitive."""
    return {frozenset(p.split(" ∧ ")) for p in text.split(" ∨ ")}


def _sets(net: Network, pred: str, tup: tuple) -> frozenset:
    """The complete provenance of a fact as its minimal sets of base variables."""
    return why_sets(net, pred, tup)


def _stored_sets(net: Network, pred: str, tup: tuple) -> frozenset:
    nid = net.program.location(pred, tup)
    ctx = net.context_of(nid)
    return frozenset(net.scheme.minimal_sets(ctx, net.node_state(nid)[pred][tup]))


# -- fixed examples ------------------------------------------------------------------------
@pytest.mark.parametrize("ship", MODES)
@pytest.mark.parametrize("delivery,seed", [("fifo", 0), ("random", 1), ("random", 2),
                                           ("adversarial", 0)])
def test_three_links_print_both_derivations(ship, delivery, seed):
    net = Network(REACH, {"link": [("a", "b"), ("b", "c"), ("a", "c")]},
                  annotation="absorption", ship=ship, delivery=delivery, seed=seed).run()
    assert why(net, "reachable", ("a", "c")) == "link(@a,c) ∨ link(@a,b) ∧ link(@b,c)"
    if ship == "lazy":          # the receiver holds one derivation; the other is buffered
        assert len(_stored_sets(net, "reachable", ("a", "c"))) == 1


FIG2 = [("A", "B"), ("B", "C"), ("C", "A"), ("C", "B")]        # p1..p4
P = {i + 1: f'link(@"{a}","{b}")' for i, (a, b) in enumerate(FIG2)}
STEP4 = {                                                       # Fig. 2, derivation step 4
    ("A", "A"): [{1, 2, 3}], ("A", "B"): [{1}], ("A", "C"): [{1, 2}],
    ("B", "A"): [{2, 3}], ("B", "B"): [{2, 4}, {1, 2, 3}], ("B", "C"): [{2}],
    ("C", "A"): [{3}], ("C", "B"): [{4}, {1, 3}], ("C", "C"): [{2, 4}, {1, 2, 3}],
}


@pytest.mark.parametrize("ship", MODES)
@pytest.mark.parametrize("seed", range(3))
def test_liu_fig2_formulas_before_and_after_deleting_link_c_b(ship, seed):
    net = Network(REACH, {"link": FIG2}, annotation="absorption", ship=ship,
                  delivery="random", seed=seed).run()
    for t, sop in STEP4.items():
        assert _products(why(net, "reachable", t)) == \
            {frozenset(P[i] for i in s) for s in sop}, t
    assert why(net, "reachable", ("C", "B")) == \
        'link(@"C","B") ∨ link(@"A","B") ∧ link(@"C","A")'
    net.delete("link", ("C", "B")).run()
    for t, sop in STEP4.items():
        assert _products(why(net, "reachable", t)) == \
            {frozenset(P[i] for i in s) for s in sop if 4 not in s}, t


def test_a_buffered_alternative_may_itself_be_partial():
    """a->b->c and a->d->c, x->a: node a keeps one derivation of reachable(a,c) buffered,
    so node x never derives reachable(x,c) through it, and no node buffers that
    derivation of reachable(x,c): it is found through the derivations of the fact."""
    links = [("a", "b"), ("b", "c"), ("a", "d"), ("d", "c"), ("x", "a")]
    want = {frozenset({"link(@x,a)", "link(@a,b)", "link(@b,c)"}),
            frozenset({"link(@x,a)", "link(@a,d)", "link(@d,c)"})}
    for seed in range(4):
        net = Network(REACH, {"link": links}, annotation="absorption", ship="lazy",
                      delivery="random", seed=seed).run()
        assert len(_stored_sets(net, "reachable", ("x", "c"))) == 1
        assert _products(why(net, "reachable", ("x", "c"))) == want


def test_asking_changes_nothing():
    rng = random.Random(7)
    links = [(a, b) for a, b, _ in random_links(8, 16, rng)]
    net = Network(REACH, {"link": links}, annotation="absorption", ship="lazy",
                  delivery="random", seed=7).run()
    before = ({nid: net.node_state(nid) for nid in net.nodes},
              {nid: _records(stage_of(n)) for nid, n in net.nodes.items()},
              net.metrics["tuples_sent"])
    for t in sorted(net.relations()["reachable"]):
        why(net, "reachable", t)
    after = ({nid: net.node_state(nid) for nid in net.nodes},
             {nid: _records(stage_of(n)) for nid, n in net.nodes.items()},
             net.metrics["tuples_sent"])
    assert any(before[1].values())
    assert after == before


def _records(stage) -> dict:
    """Every MinShip record of ``stage`` as ``(dst, pred, tup) -> (S, H)``."""
    out = {(dst, pred, tup): stage.record(dst, pred, tup)
           for (dst, pred), table in stage.records.items() for tup in table}
    assert all(v is not None for v in out.values())
    return out


# -- against MinShip off on random graphs --------------------------------------------------
def _run(program, ship: str, links: list, bursts: list, delivery: str, seed: int,
         contexts: str) -> Network:
    net = Network(program, {"link": links}, annotation="absorption", ship=ship,
                  delivery=delivery, seed=seed, contexts=contexts).run()
    for burst in bursts:
        net.apply(burst).run()
    return net


def _bursts(rng: random.Random, links: list) -> list:
    """A deletion of a link; then a deletion, a fresh link and a re-insertion in one
    burst."""
    gone = rng.choice(links)
    live = [t for t in links if t != gone]
    names = sorted({x for t in links for x in t})
    fresh = next(((a, b) for a in names for b in names
                  if a != b and (a, b) not in links), None)
    second = [(-1, "link", rng.choice(live)), (1, "link", gone)]
    if fresh is not None:
        second.append((1, "link", fresh))
    return [[(-1, "link", gone)], second]


CASES = [(seed, delivery, contexts) for seed in range(6)
         for delivery, contexts in (("random", "process"), ("fifo", "worker"),
                                    ("adversarial", "process"))]


def _compare(program, preds: tuple, seed: int, delivery: str, contexts: str,
             ships=("lazy", "eager")) -> int:
    """Run ``program`` on a seeded random graph with MinShip off and under ``ships``,
    check every derived fact of ``preds`` (same relations, same complete provenance,
    same printed formula) and return how many facts lazy MinShip stored partially."""
    rng = random.Random(seed)
    n = rng.randint(5, 8)
    links = [(a, b) for a, b, _ in random_links(n, rng.randint(n + 2, 2 * n + 2), rng)]
    bursts = _bursts(rng, links)
    nets = {ship: _run(program, ship, links, bursts, delivery, seed, contexts)
            for ship in ("off", *ships)}
    rels = nets["off"].relations()
    assert rels[preds[0]] and all(net.relations() == rels for net in nets.values())
    partial = 0
    for pred in preds:
        for t in sorted(rels[pred]):
            want = _sets(nets["off"], pred, t)
            assert want == _stored_sets(nets["off"], pred, t)
            for ship in ships:
                assert _sets(nets[ship], pred, t) == want, (ship, pred, t)
                assert why(nets[ship], pred, t) == why(nets["off"], pred, t)
            partial += _stored_sets(nets["lazy"], pred, t) != want
    return partial


@pytest.mark.parametrize("seed,delivery,contexts", CASES)
def test_lazy_and_eager_equal_off_on_random_graphs(seed, delivery, contexts):
    _compare(REACH, ("reachable",), seed, delivery, contexts)


def test_the_random_cases_meet_partial_stored_provenance():
    """The comparisons are not vacuous: lazy MinShip leaves partial provenance at the
    receivers (so the buffered derivations, and derivations through them, count)."""
    assert sum(_compare(REACH, ("reachable",), seed, "random", "process", ("lazy",))
               for seed in range(3)) > 0
    assert sum(_compare(HOPS, ("hop", "two", "loop"), seed, "random", "process",
                        ("lazy",)) for seed in range(3)) > 0


@pytest.mark.parametrize("seed", range(4))
def test_rules_with_assignments_constants_and_repeats(seed):
    _compare(HOPS, ("hop", "two", "loop"), 100 + seed, "random", "process", ("lazy",))


# -- errors --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small():
    return Network(REACH, {"link": [("a", "b"), ("b", "c")]}, annotation="absorption",
                   delivery="fifo").run()


def test_a_fact_that_is_not_derived(small):
    for tup in (("c", "a"), ("zz", "a")):          # at a node, and where there is none
        with pytest.raises(NotDerived) as info:
            why(small, "reachable", tup)
        assert isinstance(info.value, InputError)
        assert info.value.message == f"reachable(@{tup[0]}, {tup[1]}): not derived"
        assert info.value.fact == f"reachable(@{tup[0]}, {tup[1]})"


def test_unknown_predicate_and_wrong_arity(small):
    with pytest.raises(InputError, match=r"reachble\(a, b\): unknown predicate 'reachble' "
                       r"\(known: link/2, reachable/2\)"):
        why(small, "reachble", ("a", "b"))
    with pytest.raises(InputError) as info:
        why(small, "reachable", ("a", "b", "c"))
    assert not isinstance(info.value, NotDerived)
    assert "reachable(@a, b, c)" in info.value.message
    assert "'reachable' has arity 2" in info.value.message


@pytest.mark.parametrize("pred", [["reachable"], {"reachable": 1}, 3])
def test_a_predicate_that_is_not_a_string(small, pred):
    """why(["reachable"], ...) and multiset(["reachable"]) ended in 'unhashable type:
    list' from inside; why(3, ...) said "unknown predicate '3'"."""
    with pytest.raises(InputError, match="--why: a predicate is a string, got "
                                         f"{type(pred).__name__}"):
        small.why(pred, ("a", "b"))
    with pytest.raises(InputError, match="a relation is named by a string, got "
                                         f"{type(pred).__name__}"):
        small.multiset(pred)
    assert small.why("reachable", ("a", "c")) == "link(@a,b) ∧ link(@b,c)"


@pytest.mark.parametrize("fact, message", [
    ("reachble(@1,3)", "predicate 'reachble' is not used by the program"),
    ("reachable(@1,3,4)", "reachable has 3 arguments here, but arity 2 in the program"),
    ("reachable(1,@3)", "reachable has its '@' on argument 2 here, but on argument 1 in the "
                        "program"),
    ("reachable(@1,3)..", "syntax error: unexpected '.'")])     # every '.' was stripped
def test_psn_run_refuses_a_why_the_program_cannot_answer_before_the_run(
        tmp_path, capsys, monkeypatch, fact, message):
    """An unknown predicate or a wrong arity was found only after the whole run, whose
    output was then lost; a misplaced '@' was accepted."""
    import psn.cli.run_cmd as run_cmd
    from psn.cli import main

    def no_run(*args, **kwargs):
        raise AssertionError("the run started although --why cannot be answered")
    monkeypatch.setattr(run_cmd, "_run_steps", no_run)
    facts = tmp_path / "f.ndl"
    facts.write_text("link(@1, 2). link(@2, 3).\n")
    program = Path(__file__).resolve().parent.parent / "examples" / "reachable.ndl"
    assert main(["run", str(program), "--facts", str(facts), "--why", fact]) == 2
    err = capsys.readouterr().err
    assert f"error: --why '{fact}' is not a fact of this program" in err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("annotation", ["set", "dred", "derivation", "relative"])
def test_a_scheme_without_absorption_provenance(annotation):
    """Derivation sets and relative provenance are provenance: the message said they
    'keep none'."""
    net = Network(REACH, {"link": [("a", "b")]}, annotation=annotation).run()
    with pytest.raises(InputError) as info:
        why(net, "reachable", ("a", "b"))
    assert info.value.message == (f"--why needs absorption provenance, which annotation "
                                  f"'{annotation}' does not keep (use --annotation "
                                  f"absorption)")


def test_lists_are_frozen_and_base_facts_explained(small):
    assert why(small, "link", ["a", "b"]) == "link(@a,b)"
    assert why(small, "reachable", ["a", "c"]) == "link(@a,b) ∧ link(@b,c)"


def _ladder(k: int) -> list:
    """Stages s0..sk, two routes from each stage to the next: 2**k paths s0 -> sk."""
    links = []
    for i in range(k):
        for via in (f"a{i}", f"b{i}"):
            links += [(f"s{i}", via), (via, f"s{i + 1}")]
    return links


def test_every_path_of_a_ladder_and_a_limit():
    nets = {ship: Network(REACH, {"link": _ladder(6)}, annotation="absorption", ship=ship,
                          delivery="random", seed=5).run() for ship in ("lazy", "off")}
    sets = why_sets(nets["lazy"], "reachable", ("s0", "s6"))
    assert len(sets) == 64 and all(len(p) == 12 for p in sets)
    assert sets == why_sets(nets["off"], "reachable", ("s0", "s6"))
    assert len(_stored_sets(nets["lazy"], "reachable", ("s0", "s6"))) < 64
    with pytest.raises(TooLarge, match=r"reachable\(@s\d, s6\) alone has more than 20 "
                       r"derivations") as info:
        why(nets["lazy"], "reachable", ("s0", "s6"), max_products=20)
    assert isinstance(info.value, InputError) and info.value.hint


def test_explain_sets_prints_shorter_products_first_and_the_constants(small):
    scheme = small.scheme
    loc = small.program.loc.get
    (path,) = why_sets(small, "reachable", ("a", "c"))
    x1, x2 = sorted(path, key=insertion_id)                  # link(a,b), link(b,c)
    assert scheme.explain_sets([frozenset({x2, x1}), frozenset({x2})], loc) == \
        "link(@b,c) ∨ link(@a,b) ∧ link(@b,c)"
    assert scheme.explain_sets([], loc) == "false"
    assert scheme.explain_sets([frozenset()], loc) == "true"


def test_an_aggregate_result_prints_as_the_aggregate_fact():
    """An aggregate result is a base of its own; it printed as its internal variable
    ('minCost(@a,d,4) = aa.8')."""
    program = psn.load(Path(__file__).resolve().parent.parent / "examples" /
                       "shortest_path.ndl")
    links = [("a", "b", 1), ("b", "c", 1), ("c", "d", 2), ("a", "c", 3)]
    net = Network(program, {"link": links}, annotation="absorption")
    net.run()
    assert why(net, "minCost", ("a", "d", 4)) == "aggregate minCost(@a,d,4)"
    assert why(net, "cheapestPath", ("a", "d", ("a", "b", "c", "d"), 4)) == (
        "link(@a,b,1) ∧ link(@b,c,1) ∧ link(@c,d,2) ∧ aggregate minCost(@a,d,4)")


def test_variables_the_nodes_make_print_in_one_order_whatever_the_delivery_order():
    """The aggregate results and the absences of a product printed in the order their
    node made their variables, which follows the delivery order and the history: the same
    formula printed 'aggregate minHops(...) ∧ aggregate minCost(...)' under some seeds and
    'aggregate minCost(...) ∧ aggregate minHops(...)' under others, and 'not b(@1) ∧ not
    a(@1)' when b went first."""
    program = psn.load(Path(__file__).resolve().parent.parent / "examples" /
                       "shortest_path.ndl")
    links = [("a", "b", 1), ("b", "c", 2), ("a", "c", 5), ("c", "a", 1)]
    fact = ("a", "c", ("a", "b", "c"), 3, ("a", "c"), 1)
    printed = {Network(program, {"link": links}, delivery=delivery, seed=seed, ship=ship)
               .run().why("shortestCheapestPath", fact)
               for seed in range(6) for delivery in ("random", "adversarial")
               for ship in ("lazy", "off")}
    assert printed == {"link(@a,b,1) ∧ link(@b,c,2) ∧ link(@a,c,5) ∧ aggregate "
                       "minCost(@a,c,3) ∧ aggregate minHops(@a,c,1)"}
    neg = psn.parse("q(@S) :- node(@S), not a(@S), not b(@S).")
    printed = set()
    for first, second in (("a", "b"), ("b", "a")):
        net = Network(neg, {"node": [(1,)], "a": [(1,)], "b": [(1,)]}).run()
        net.delete(first, (1,)).run()
        net.delete(second, (1,)).run()
        printed.add(net.why("q", (1,)))
    assert printed == {"node(@1) ∧ not a(@1) ∧ not b(@1)"}


def test_one_query_per_aggregate_answers_for_the_copies_and_refuses_the_split_predicate(
        tmp_path, capsys):
    """With --aggsel single, 'path' is not computed (its copies path_minCost and
    path_minHops are): why(path(...)) said 'not derived' of a path psn.evaluate derives,
    and psn run refused --why path_minCost(...) as a predicate the program does not use."""
    from psn.cli import main
    program = Path(__file__).resolve().parent.parent / "examples" / "shortest_path.ndl"
    links = [("a", "b", 1), ("b", "c", 2), ("a", "c", 5)]
    net = Network(psn.load(program), {"link": links}, aggsel="single").run()
    path = ("a", "c", ("a", "b", "c"), 3, 2)
    assert net.why("path_minCost", path) == "link(@a,b,1) ∧ link(@b,c,2)"
    with pytest.raises(InputError) as info:
        net.why("path", path)
    assert not isinstance(info.value, NotDerived)
    assert info.value.message == (
        "--why path(@a, c, [a, b, c], 3, 2): 'path' is not computed with aggregate "
        "selection 'single': each aggregate's query derives its own copy of it "
        "(path_minCost, path_minHops)")
    facts = tmp_path / "f.ndl"
    facts.write_text("link(@a, b, 1). link(@b, c, 2). link(@a, c, 5).\n")
    run = ["run", str(program), "--facts", str(facts), "--aggsel", "single", "--why"]
    assert main(run + ["path_minCost(@a,c,[a,b,c],3,2)"]) == 0
    assert "path_minCost(@a,c,[a,b,c],3,2) = link(@a,b,1) ∧ link(@b,c,2)" in \
        capsys.readouterr().out
    assert main(run + ["path(@a,c,[a,b,c],3,2)"]) == 2
    out, err = capsys.readouterr()
    assert "error: --why 'path(@a,c,[a,b,c],3,2)': 'path' is not computed with aggregate " \
        "selection 'single'" in err and "hint: ask about a copy" in err
    assert "Traceback" not in err and "shortestCheapestPath" not in out   # before the run
    assert main(run[:-3] + ["--why", "path(@a,c,[a,b,c],3,2)"]) == 0     # multi: computed


def test_a_burst_applied_and_not_run_is_refused():
    """After net.delete(link(a,c)) and before run(), why(reachable(a,c)) printed
    'link(@a,c) ∨ link(@a,b) ∧ link(@b,c)', a base fact base_facts() no longer listed;
    before the first run it said 'not derived' of a fact the facts derive."""
    links = [("a", "b"), ("b", "c"), ("a", "c")]
    net = Network(REACH, {"link": links})
    with pytest.raises(InputError, match=r"reachable\(@a, c\): the network is not at "
                       r"quiescence") as info:
        net.why("reachable", ("a", "c"))
    assert not isinstance(info.value, NotDerived) and "run()" in info.value.hint
    net.run().delete("link", ("a", "c"))
    with pytest.raises(InputError, match="not at quiescence"):
        net.why("reachable", ("a", "c"))
    assert net.run().why("reachable", ("a", "c")) == "link(@a,b) ∧ link(@b,c)"


def test_aggregate_selection_explains_the_best_tuples_in_full():
    """As docs/provenance.md says: with aggregate selection the formula of a pruned tuple
    that is not best for its group may lack derivations through held-back tuples (cost
    2 -> 0 of 7 has two paths, one through tuples node 3 never fired), while the best
    tuples and what reads the aggregate have every derivation."""
    program = psn.parse("""
        c1 cost(@S, D, C) :- link(@S, D, C).
        c2 cost(@S, D, C) :- link(@S, Z, C1), cost(@Z, D, C2), C := C1 + C2, C < 9.
        c3 mc(@S, D, min<C>) :- cost(@S, D, C).
        c4 best(@S, D, C) :- cost(@S, D, C), mc(@S, D, C).
    """)
    links = [(1, 0, 2), (2, 0, 6), (2, 1, 5), (2, 3, 3), (3, 0, 1), (3, 1, 2), (3, 2, 5)]
    nets = {mode: Network(program, {"link": links}, aggsel=mode, seed=16).run()
            for mode in ("auto", "off")}
    assert nets["auto"].resolved.prunes and not nets["off"].resolved.prunes
    full = _products(why(nets["off"], "cost", (2, 0, 7)))
    assert len(full) == 2 and _products(why(nets["auto"], "cost", (2, 0, 7))) < full
    rels = nets["auto"].relations()
    best = {(s, d): c for s, d, c in rels["best"]}
    assert best[(2, 0)] == 4 and len(rels["best"]) == len(rels["mc"])
    for pred in ("best", "mc"):
        for t in rels[pred]:
            assert why(nets["auto"], pred, t) == why(nets["off"], pred, t), (pred, t)
    for t in rels["cost"]:
        if best[t[:2]] == t[2]:
            assert why(nets["auto"], "cost", t) == why(nets["off"], "cost", t), t


def test_an_absence_of_a_projection_prints_as_the_atom_the_program_wrote(tmp_path, capsys):
    """`not link(@S, _)` is evaluated as the negation of a hidden projection: --why
    printed 'not link_some(@6)', a predicate the program does not have."""
    from psn.cli import main
    program = psn.parse("""
        i0 linkIn(@D, S) :- link(@S, D).
        i1 isolated(@S) :- node(@S), not link(@S, _).
        i2 lonely(@S) :- node(@S), not link(@S, _), not linkIn(@S, _).
        i3 quiet(@S) :- node(@S), not tri(@S, _, 1).
    """)
    facts = {"node": [(5,), (6,)], "link": [(4, 5)], "tri": [(5, 2, 2)]}
    net = Network(program, facts).run()
    assert net.why("isolated", (6,)) == "node(@6) ∧ not link(@6,_)"
    assert net.why("lonely", (6,)) == "node(@6) ∧ not link(@6,_) ∧ not linkIn(@6,_)"
    assert net.why("quiet", (5,)) == "node(@5) ∧ not tri(@5,_,1)"
    path = tmp_path / "f.ndl"
    path.write_text("node(@6). link(@4, 5).\n")
    source = tmp_path / "p.ndl"
    source.write_text("i1 isolated(@S) :- node(@S), not link(@S, _).\n")
    assert main(["run", str(source), "--facts", str(path), "--why", "isolated(@6)"]) == 0
    assert "isolated(@6) = node(@6) ∧ not link(@6,_)" in capsys.readouterr().out


def test_a_declared_table_without_facts_is_not_an_unknown_predicate(tmp_path, capsys):
    """psn run accepts --why 'foo(@a)' for a table the program declares with materialize
    and nothing uses; after the whole run, why() then called it an unknown predicate and
    the run's output was lost."""
    from psn.cli import main
    text = "materialize(foo, infinity, infinity, keys(1)).\nr1 r(@S, D) :- link(@S, D).\n"
    net = Network(psn.parse(text), {"link": [("a", "b")]}).run()
    with pytest.raises(NotDerived, match=r"foo\(a\): not derived"):
        net.why("foo", ("a",))
    with pytest.raises(InputError, match="unknown predicate 'bar'"):
        net.why("bar", ("a",))
    program, facts = tmp_path / "p.ndl", tmp_path / "f.ndl"
    program.write_text(text)
    facts.write_text("link(@a, b).\n")
    assert main(["run", str(program), "--facts", str(facts), "--why", "foo(@a)"]) == 0
    out = capsys.readouterr().out
    assert "foo(@a): not derived" in out and "r(a, b)" in out


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_psn_run_keeps_its_output_when_a_why_is_too_large(tmp_path, capsys, fmt):
    """A --why past the limit of derivations ended psn run with only the error: the step
    table, the relations and the other --why answers were lost."""
    import json

    from psn.cli import main
    facts = tmp_path / "f.ndl"
    facts.write_text(" ".join(f"link(@{a},{b})." for a, b in _ladder(12)) + "\n")
    program = Path(__file__).resolve().parent.parent / "examples" / "reachable.ndl"
    argv = ["run", str(program), "--facts", str(facts), "--relation", "link", "--format",
            fmt, "--why", "reachable(@s0,s12)", "--why", "reachable(@s0,s1)"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    small = "link(@s0,a0) ∧ link(@a0,s1) ∨ link(@s0,b0) ∧ link(@b0,s1)"
    assert re.search(r"error: --why reachable\(@s0, s12\): the complete provenance is too "
                     r"large: reachable\(@\w+, s12\) alone has more than 2,000 "
                     r"derivations\n", err)
    assert "hint: ask about a fact closer" in err and "Traceback" not in err
    if fmt == "json":
        doc = json.loads(out)
        assert doc["why"] == {"reachable(@s0,s1)": small} and len(doc["relations"]["link"])
        assert doc["why_errors"]["reachable(@s0,s12)"].startswith("--why reachable(@s0, ")
    else:
        assert f"reachable(@s0,s1) = {small}" in out and "link(s0, a0)" in out
        assert "reachable(@s0,s12): too large to print (see the error)" in out
