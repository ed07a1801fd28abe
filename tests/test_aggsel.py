"""Aggregate selection (Liu et al. ICDE 2009, Sec. 6 and Sec. 7.4) in the PSN engine.

Shortest path (examples/shortest_path.ndl) on seeded random graphs with cycles, through
insertions, deletion bursts and re-insertions, under every delivery order: the aggregate
relations minCost, minHops, cheapestPath, fewestHops and shortestCheapestPath equal
``psn.evaluate``'s with every mode:

* ``multi``: one query, ``path`` pruned to the tuples best for the cost or the hop count,
  on the receiving side (fixpoint) and on the sending side (MinShip), lazy and eager;
* ``single``: one query per aggregate (``one_query_per_aggregate`` splits ``path`` into
  ``path_minCost`` and ``path_minHops``), each pruned by its own aggregate;
* ``off``: nothing pruned.

Also: the split's shape and when it does not apply, detection on the localized program, ties
kept, the next best forwarded when the best goes, every engine running the split program,
and multi shipping less than single, which ships less than off (Liu Sec. 7.4).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import psn
from graphs import random_links, symmetric_links
from engine import Network, RunOptions, prepare
from engine.aggsel import AggSelStage, Selector, selectors
from engine.minship import MinShip
from localize.analysis import query_splits
from localize.passes import one_query_per_aggregate
from ndlog.errors import EvaluationError, InputError
from ndlog.printer import format_rule
from engine.transport import Placement
from provenance.absorption import AbsorptionScheme

ROOT = Path(__file__).resolve().parent.parent
SP = psn.load(ROOT / "examples" / "shortest_path.ndl")
AGG = ("minCost", "minHops", "cheapestPath", "fewestHops", "shortestCheapestPath")
SCHEDULES = {"count": 0}
PER_CASE = 80


def _same(net, live: list, where, program=SP) -> None:
    ref = psn.evaluate(program, {"link": live})
    got = net.relations()
    for pred in AGG:
        assert got[pred] == ref[pred], (where, pred)


# -- the split (single) --------------------------------------------------------------------

def test_split_copies_path_per_aggregate_and_points_each_reader_at_its_copy():
    split = one_query_per_aggregate(SP)
    rules = {r.name: r for r in split.rules}
    assert split.hidden == {"path"}
    assert [r.name for r in split.rules] == [
        "sp1_minCost", "sp1_minHops", "path_minCost_in", "path_minHops_in",
        "sp2_minCost", "sp2_minHops", "sp3", "sp4", "sp5", "sp6", "sp7"]
    assert format_rule(rules["sp2_minHops"]).startswith(
        "sp2_minHops path_minHops(@S, D, P, C, L) :- link(@S, Z, C1), "
        "path_minHops(@Z, D, P2, C2, L2), ")
    assert format_rule(rules["sp3"]) == \
        "sp3 minCost(@S, D, min<C>) :- path_minCost(@S, D, P, C, L)."
    assert format_rule(rules["sp6"]) == \
        "sp6 fewestHops(@S, D, P, L) :- path_minHops(@S, D, P, C, L), minHops(@S, D, L)."
    assert rules["sp7"] == next(r for r in SP.rules if r.name == "sp7")
    assert format_rule(rules["path_minCost_in"]) == \
        "path_minCost_in path_minCost(@A1, A2, A3, A4, A5) :- path(@A1, A2, A3, A4, A5)."
    assert one_query_per_aggregate(split) is split            # idempotent
    # each copy is a prunable predicate with its own aggregate only
    plans = prepare(split).aggsel
    assert {p: plans[p].spec.aggregates for p in plans} == {
        "path_minCost": ((3, "min"),), "path_minHops": ((4, "min"),)}
    assert set(plans["path_minCost"].carriers) == {"sp2_minCost_aux"}


def test_split_analysis_names_the_copies_and_the_readers():
    (split,) = query_splits(SP).values()
    assert split.copies == {(3, "min"): "path_minCost", (4, "min"): "path_minHops"}
    assert split.readers == {"sp3": (3, "min"), "sp5": (3, "min"),
                             "sp4": (4, "min"), "sp6": (4, "min")}
    clash = psn.parse(SP_TEXT + "extra(@S, X) :- path_minCost(@S, X).")
    assert query_splits(clash)["path"].copies[(3, "min")] == "path_minCost_2"


SP_TEXT = (ROOT / "examples" / "shortest_path.ndl").read_text()

# one rule needs both aggregates at once: one query, not split, and single prunes nothing
BOTH = psn.parse("""
b1 path(@S, D, C, L) :- link(@S, D, C), L := 1.
b2 path(@S, D, C, L) :- link(@S, Z, C1), path(@Z, D, C2, L2), C := C1 + C2, L := L2 + 1,
                        L < 6.
b3 best(@S, D, min<C>, min<L>) :- path(@S, D, C, L).
""")


def test_a_rule_with_two_aggregates_is_not_split_and_single_prunes_nothing_of_it():
    assert query_splits(BOTH) == {}
    assert one_query_per_aggregate(BOTH) is BOTH
    assert selectors(prepare(BOTH), "single") == ({}, {})
    assert set(selectors(prepare(BOTH), "multi")[0]) == {"path"}
    links = random_links(7, 16, random.Random(3), max_cost=4)
    want = psn.evaluate(BOTH, {"link": links})["best"]
    for mode in ("single", "multi"):
        net = Network(BOTH, {"link": links}, aggsel=mode, seed=4).run()
        assert net.relations()["best"] == want, mode


def test_base_facts_given_for_path_feed_every_copy():
    links = [(1, 2, 5), (2, 3, 5)]
    shortcut = [(1, 3, (1, 3), 1, 7)]            # a path fact given as input: cost 1, 7 hops
    facts = {"link": links, "path": shortcut}
    ref = psn.evaluate(SP, facts)
    net = Network(SP, facts, aggsel="single", seed=2).run()
    got = net.relations()
    assert (1, 3, 1) in got["minCost"] and (1, 3, 1) in ref["minCost"]
    for pred in AGG:
        assert got[pred] == ref[pred], pred


def test_single_on_the_unsplit_program_prunes_nothing():
    """``single`` never prunes a predicate by some of its aggregates only (that lost
    minHops's best paths on a dense topology)."""
    assert selectors(prepare(SP), "single") == ({}, {})


def test_every_engine_runs_the_split_program_when_single():
    resolved = RunOptions(aggsel="single").resolve(prepare(SP))
    assert "path_minCost" in resolved.program.predicates
    assert "path" not in resolved.program.visible
    again = RunOptions(aggsel="single").resolve(prepare(resolved.program.source))
    assert again.program is prepare(resolved.program.source)   # the workers' resolve
    for mode in ("multi", "off"):
        assert RunOptions(aggsel=mode).resolve(prepare(SP)).program is prepare(SP)
    links = symmetric_links(8, 12, random.Random(8), max_cost=4)
    net = Network(SP, {"link": links}, aggsel="single", seed=3).run()
    assert set(net.relations()) >= {"path_minCost", "path_minHops"}
    assert "path" not in net.relations()
    _same(net, links, "memory")


def test_simulator_runs_single_and_checks_the_aggregates():
    import topologies
    from sim import Simulation
    sim = Simulation(SP, topologies.make("ring", n=8), aggsel="single", seed=1,
                     state_metrics=False)
    steps = sim.run_workload("all; delete-links:2", check=True)
    assert all(s.check for s in steps)
    assert sim.aggsel == "single" and "path_minHops" in sim.relations()


#: A cycle with a negative cost: pruning by the cheapest path is not exact on it.
NEGATIVE = [("a", "b", 1), ("b", "a", 1), ("b", "c", -3), ("c", "b", 2), ("a", "c", 5),
            ("c", "a", 1)]


@pytest.mark.parametrize("mode", ["multi", "single"])
def test_a_nonpositive_cost_stops_the_engine_as_it_stops_the_reference(mode):
    with pytest.raises(EvaluationError) as ref:
        psn.evaluate(SP, {"link": NEGATIVE})
    with pytest.raises(EvaluationError) as got:
        Network(SP, {"link": NEGATIVE}, aggsel=mode, seed=2).run()
    text = got.value.render()
    assert "needs C to strictly increase along rule sp2" in text
    assert "--aggsel off" in text and text.startswith(str(ROOT / "examples" / "shortest_path.ndl"))
    assert ref.value.span.line == got.value.span.line      # the user's rule sp2
    off = Network(SP, {"link": NEGATIVE}, aggsel="off", seed=2).run()
    want = psn.evaluate(SP, {"link": NEGATIVE}, aggsel=False)
    assert {r: off.relations()[r] for r in AGG} == {r: want[r] for r in AGG}


def test_a_nonpositive_cost_stops_the_simulator():
    from sim import Simulation
    sim = Simulation(SP, None, seed=1, state_metrics=False)
    with pytest.raises(EvaluationError, match="strictly increase along rule sp2"):
        sim.step(insert={"link": NEGATIVE})


def test_the_errors_advice_aggsel_off_runs_and_is_checked_on_every_relation(tmp_path, capsys):
    """Off, nothing is pruned, so the reference that checks the run prunes nothing either
    (it pruned, and stopped with the very error whose hint is ``--aggsel off``): the
    simulator, ``psn run --check`` and ``psn verify`` compare every relation, path too."""
    from psn.cli import main
    from sim import Simulation
    sim = Simulation(SP, None, aggsel="off", seed=1, state_metrics=False)
    step = sim.step(insert={"link": NEGATIVE}, check=True)
    want = psn.evaluate(SP, {"link": NEGATIVE}, aggsel=False)
    assert step.check and sim.relations()["path"] == want["path"]
    wrong = sim.relations()
    wrong["path"] = wrong["path"] - {next(iter(wrong["path"]))}
    sim.relations = lambda: wrong          # the check compares path now: it must notice
    assert sim.check()[0] is False
    facts = tmp_path / "negative.ndl"
    facts.write_text("".join(f"link(@{s}, {d}, {c}).\n" for s, d, c in NEGATIVE))
    args = [str(ROOT / "examples" / "shortest_path.ndl"), "--facts", str(facts),
            "--aggsel", "off"]
    assert main(["run", *args, "--check", "--relation", "minCost"]) == 0
    assert "check against python: ok" in capsys.readouterr().err
    zero = [(1, 2, 0), (2, 1, 0), (2, 3, 1)]          # a zero cost: not strictly increasing
    stopped = psn.verify(SP, {"link": zero}, [["-link(@2, 3, 1)"]])
    assert not stopped.ok and "--aggsel off" in stopped.counterexample.message
    result = psn.verify(SP, {"link": zero}, [["-link(@2, 3, 1)"]], aggsel="off")
    assert result.ok and result.complete


def test_the_python_fix_in_the_hint_works_on_every_api():
    """The hint's ``aggsel=False`` (what psn.evaluate takes) is ``off`` on the engines too;
    it was refused there as not one of auto, multi, single, off."""
    from sim import Simulation
    zero = {"link": [(1, 2, 0), (2, 1, 0), (2, 3, 1)]}
    with pytest.raises(EvaluationError) as err:
        Network(SP, zero).run()
    assert "aggsel=False" in err.value.hint
    want = psn.evaluate(SP, zero, aggsel=False)
    net = Network(SP, zero, aggsel=False).run()
    assert net.resolved.describe()["aggsel"] == "off"
    assert net.relations()["path"] == want["path"]
    sim = Simulation(SP, None, aggsel=False, seed=1, state_metrics=False)
    assert sim.step(insert=zero, check=True).check
    assert psn.verify(SP, zero, [["-link(@2, 3, 1)"]], aggsel=False).ok
    assert psn.evaluate(SP, zero, aggsel="off") == want       # the hint's other form
    with pytest.raises(InputError, match="aggregate selection must be one of"):
        psn.evaluate(SP, zero, aggsel="no")
    assert RunOptions(aggsel=True).aggsel == "auto"
    with pytest.raises(InputError, match="or True, False"):
        RunOptions(aggsel="no")


def test_single_prunes_nothing_on_a_predicate_it_cannot_split_and_is_checked_so(tmp_path,
                                                                                  capsys):
    """One rule computes both aggregates of path, so ``single`` cannot split it and prunes
    nothing: the run resolves to ``single`` but is checked like ``off`` (the reference
    pruned, and stopped on zero costs with the error that says to turn pruning off)."""
    from psn.cli import main
    from sim import Simulation
    program = """
sp1 path(@S, D, P, C, L) :- link(@S, D, C), P := f_concat(S, D), L := 1.
sp2 path(@S, D, P, C, L) :- link(@S, Z, C1), path(@Z, D, P2, C2, L2), f_member(P2, S) == 0,
                            P := f_prepend(S, P2), C := C1 + C2, L := L2 + 1.
b1 best(@S, D, min<C>, min<L>) :- path(@S, D, P, C, L).
"""
    zero = [(1, 2, 0), (2, 1, 0), (2, 3, 1)]
    resolved = RunOptions(aggsel="single").resolve(prepare(psn.parse(program)))
    assert resolved.aggsel == "single" and not resolved.prunes
    sim = Simulation(psn.parse(program), None, aggsel="single", seed=1, state_metrics=False)
    assert sim.step(insert={"link": zero}, check=True).check
    path = tmp_path / "best.ndl"
    path.write_text(program)
    facts = tmp_path / "zero.ndl"
    facts.write_text("".join(f"link(@{s}, {d}, {c}).\n" for s, d, c in zero))
    assert main(["run", str(path), "--facts", str(facts), "--aggsel", "single",
                 "--check"]) == 0
    assert "check against python: ok" in capsys.readouterr().err
    result = psn.verify(program, {"link": zero}, [["-link(@2, 3, 1)"]], aggsel="single")
    assert result.ok and result.complete


def test_a_rule_whose_aggregated_value_is_not_computed_from_the_recursive_one_is_no_candidate():
    """In ``r1`` the head's ``S`` is a node name bound by ``link``, not a value computed
    from the recursive atom's ``D``: no step is known to worsen it, and the run-time check
    stopped every evaluator with default settings on a three-node cycle (found by a fuzz
    campaign of generated distributed programs). Shortest path's ``C := C1 + C2`` and
    ``L := L2 + 1`` stay candidates."""
    from ndlog.analysis import aggsel_candidates
    program = psn.parse("""
r0 p(@S, D) :- link(@S, D).
r1 p(@Z, S) :- link(@S, Z), p(@Z, D).
r2 m(@S, max<D>) :- p(@S, D).
""")
    facts = {"link": [(1, 2), (2, 3), (3, 1)]}
    assert "p" not in aggsel_candidates(program)
    assert aggsel_candidates(SP)["path"].aggregates == ((3, "min"), (4, "min"))
    want = psn.evaluate(program, facts, aggsel=False)
    assert psn.evaluate(program, facts) == want and want["m"] == {(1, 3), (2, 3), (3, 2)}
    for delivery in ("random", "adversarial", "fifo"):
        assert Network(program, facts, delivery=delivery, seed=1).run().relations() == want


# -- detection, selectors ------------------------------------------------------------------

def test_a_rule_passing_the_aggregated_value_on_unchanged_is_no_candidate():
    """``r1`` derives ``p(@S, D)`` from ``p(@S, D)`` itself: the minimized ``D`` never
    strictly increases along it, so aggregate selection cannot apply. It was detected, and
    the run-time check then stopped every evaluator, with default settings, as soon as
    ``r1`` fired (found by a fuzz campaign of generated programs)."""
    from ndlog.analysis import aggsel_candidates
    program = psn.parse("""
r0 p(@S, D) :- link(@S, D).
r1 p(@S, D) :- p(@S, D), tag(@D, b).
r2 m(@S, min<D>) :- p(@S, D).
""")
    facts = {"link": [(1, 0), (1, 2), (2, 1)], "tag": [(0, "b"), (1, "b")]}
    assert "p" not in aggsel_candidates(program)
    want = psn.evaluate(program, facts, aggsel=False)
    assert psn.evaluate(program, facts) == want
    assert want["m"] == {(1, 0), (2, 1)}
    for delivery in ("random", "adversarial", "fifo"):
        net = Network(program, facts, delivery=delivery, seed=3).run()
        assert not net.resolved.prunes
        assert net.relations() == {k: v for k, v in want.items()}
        net.apply([(-1, "link", (1, 0)), (1, "link", (2, 0))]).run()
        after = psn.evaluate(program, {"link": [(1, 2), (2, 1), (2, 0)], "tag": facts["tag"]})
        assert net.relations() == after


def test_detection_maps_path_and_its_localized_auxiliary():
    receive, send = selectors(prepare(SP), "multi")
    assert set(receive) == {"path"}
    assert (receive["path"].group, receive["path"].aggs) == ((0, 1), ((3, "min"), (4, "min")))
    aux = send["sp2_aux"]            # sp2_aux(@S, Z, D, C1, P, C, L)
    assert (aux.group, aux.aggs) == ((0, 2), ((5, "min"), (6, "min")))
    single, send1 = selectors(prepare(one_query_per_aggregate(SP)), "single")
    assert {p: s.aggs for p, s in single.items()} == {
        "path_minCost": ((3, "min"),), "path_minHops": ((4, "min"),)}
    assert send1["sp2_minHops_aux"].aggs == ((6, "min"),)
    assert "path" not in send1                  # the hidden input carries nothing
    assert selectors(prepare(SP), "off") == ({}, {})
    with pytest.raises(InputError, match="aggsel"):
        selectors(prepare(SP), "both")
    reach = psn.load(ROOT / "examples" / "reachable.ndl")
    assert selectors(prepare(reach), "multi") == ({}, {})


def test_selector_keeps_ties_and_the_best_of_each_aggregate():
    sel = Selector((0,), ((1, "min"), (2, "max")))
    members = {("g", 1, 1): None, ("g", 1, 0): None, ("g", 3, 9): None, ("g", 4, 2): None}
    assert sorted(sel.qualified(members)) == [("g", 1, 0), ("g", 1, 1), ("g", 3, 9)]
    assert sel.qualifies(("g", 1, 0), members) and not sel.qualifies(("g", 4, 2), members)


# -- exactness through insertions and deletions ----------------------------------------------

def _schedule(rng: random.Random, net: Network, links: list) -> list:
    live = list(links)
    net.apply([(1, "link", t) for t in links])
    if rng.random() < 0.5:
        net.run()
    for _ in range(rng.randint(1, 3)):
        burst = []
        for t in rng.sample(live, min(len(live), rng.randint(1, 3))):
            burst.append((-1, "link", t))
            live.remove(t)
            if rng.random() < 0.4:                     # deleted and re-inserted
                burst.append((1, "link", t))
                live.append(t)
        net.apply(burst)
        if rng.random() < 0.5:
            net.run()
    net.run()
    return live


@pytest.mark.parametrize("delivery", ["random", "adversarial", "fifo"])
@pytest.mark.parametrize("ship", ["lazy", "eager"])
def test_shortest_path_through_insertions_and_deletions(ship, delivery):
    for seed in range(PER_CASE):
        rng = random.Random(f"sp/{seed}/{ship}/{delivery}")
        n = rng.randint(5, 7)
        links = random_links(n, rng.randint(n + 2, 2 * n), rng, max_cost=5)
        net = Network(SP, annotation=AbsorptionScheme(reorder=False), ship=ship,
                      aggsel="single" if seed % 5 == 0 else "multi", delivery=delivery,
                      seed=seed, placement=Placement.single() if seed % 3 else None,
                      roundtrip=seed % 4 == 0,
                      contexts="worker" if seed % 6 == 0 else "process")
        live = _schedule(rng, net, links)
        SCHEDULES["count"] += 1
        _same(net, live, (seed, ship, delivery))


@pytest.mark.parametrize("mode", ["multi", "single"])
def test_every_mode_exact_on_random_graphs_of_10_to_20_nodes(mode):
    """Denser graphs than above, symmetric links as topologies give them, random delivery."""
    for seed in range(6):
        rng = random.Random(f"big/{seed}/{mode}")
        n = rng.randint(10, 20)
        links = symmetric_links(n, rng.randint(n + 2, n + n // 2), rng, max_cost=6)
        net = Network(SP, aggsel=mode, delivery="random", seed=seed)
        live = _schedule(rng, net, links)
        _same(net, live, (seed, mode))


def test_off_is_exact_on_a_sparse_random_graph():
    rng = random.Random("off")
    links = symmetric_links(10, 12, rng, max_cost=6)
    net = Network(SP, aggsel="off", delivery="random", seed=5)
    _same(net, _schedule(rng, net, links), "off")


def test_terminates_on_a_dense_cyclic_graph_with_set_semantics():
    rng = random.Random(5)
    links = random_links(9, 40, rng, max_cost=6)
    for aggsel in ("multi", "single", "off"):   # set semantics: aggregates exact on FIFO only
        net = Network(SP, {"link": links}, annotation="set", aggsel=aggsel, seed=1,
                      delivery="fifo").run()
        _same(net, links, aggsel)


def test_multi_ships_less_than_single_which_ships_less_than_off():
    """Liu Sec. 7.4: multi-aggregate selection costs about half of single."""
    links = symmetric_links(12, 20, random.Random(12), max_cost=5)
    sent = {}
    for mode in ("off", "single", "multi"):
        net = Network(SP, {"link": links}, annotation="absorption", aggsel=mode,
                      delivery="random", seed=1).run()
        sent[mode] = net.metrics["tuples_sent"]
        _same(net, links, mode)
    assert sent["multi"] < sent["single"] < sent["off"]
    assert sent["multi"] < 0.75 * sent["single"]


def test_next_best_is_forwarded_when_the_best_goes():
    """a->b->c (cost 2, 2 hops) is best on both; a->d->e->c (cost 3, 3 hops) is held at a
    (and on its way there) until link a->b goes."""
    links = [("a", "b", 1), ("b", "c", 1), ("a", "d", 1), ("d", "e", 1), ("e", "c", 1)]
    net = Network(SP, {"link": links}, annotation="absorption", aggsel="multi",
                  delivery="fifo").run()
    assert net.relations()["minCost"] >= {("a", "c", 2)}
    stages = [s for n in net.nodes.values() for s in n.pick_stages + n.send_stages
              if isinstance(s, (AggSelStage, MinShip))]
    assert sum(s.held for s in stages) > 0
    net.delete("link", ("a", "b", 1)).run()
    got = net.relations()
    assert ("a", "c", 3) in got["minCost"] and ("a", "c", 3) in got["minHops"]
    assert ("a", "c", ("a", "d", "e", "c"), 3) in got["cheapestPath"]
    _same(net, links[1:], "next best")


@pytest.mark.ray
def test_ray_workers_run_the_split_program_when_single():
    from psn.distributed import RayNetwork, WorkerPool, start_ray
    start_ray()
    pool = WorkerPool(2)
    try:
        links = symmetric_links(9, 13, random.Random(9), max_cost=4)
        with RayNetwork(SP, {"link": links}, pool=pool, aggsel="single") as net:
            net.run()
            assert {"path_minCost", "path_minHops"} <= set(net.relations())
            _same(net, links, "ray")
        with RayNetwork(SP, {"link": NEGATIVE}, pool=pool) as net:
            with pytest.raises(EvaluationError, match="strictly increase along rule sp2"):
                net.run()
    finally:
        pool.close()


def test_zz_schedule_count():
    if SCHEDULES["count"] == 0:
        pytest.skip("property tests deselected")
    assert SCHEDULES["count"] >= 6 * PER_CASE


def test_two_files_with_the_same_program_each_name_their_own_file(tmp_path):
    """Programs compare equal without their positions; the engine's memo of prepared
    programs must still give each file's errors that file's name."""
    text = (ROOT / "examples" / "shortest_path.ndl").read_text()
    for name in ("one.ndl", "two.ndl"):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(EvaluationError) as got:
            Network(psn.load(path), {"link": NEGATIVE}, aggsel="multi", seed=2).run()
        assert got.value.render().startswith(str(path) + ":")
