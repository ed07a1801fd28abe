"""Aggregate selection (Liu et al. ICDE 2009, Sec. 6) in the PSN engine.

Shortest path (examples/shortest_path.ndl) on seeded random graphs with cycles, through
insertions, deletion bursts and re-insertions, under every delivery order: the aggregate
relations minCost, minHops, cheapestPath and fewestHops equal ``psn.evaluate``'s, with
multi AggSel on the receiving side (fixpoint) and on the sending side (MinShip), with lazy and
eager shipping. Also: detection on the localized program, ties kept, the next best forwarded
when the best goes, and the pruning actually saving traffic.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import psn
from graphs import random_links
from engine import Network, prepare
from engine.aggsel import AggSelStage, Selector, selectors
from engine.minship import MinShip
from ndlog.errors import InputError
from engine.transport import Placement
from provenance.absorption import AbsorptionScheme

SP = psn.load(Path(__file__).resolve().parent.parent / "examples" / "shortest_path.ndl")
AGG = ("minCost", "minHops", "cheapestPath", "fewestHops")
SCHEDULES = {"count": 0}
PER_CASE = 80


def _same(net: Network, live: list, where) -> None:
    ref = psn.evaluate(SP, {"link": live})
    got = net.relations()
    for pred in AGG:
        assert got[pred] == ref[pred], (where, pred)


def test_detection_maps_path_and_its_localized_auxiliary():
    receive, send = selectors(prepare(SP), "multi")
    assert set(receive) == {"path"}
    assert (receive["path"].group, receive["path"].aggs) == ((0, 1), ((3, "min"), (4, "min")))
    aux = send["sp2_aux"]            # sp2_aux(@S, Z, D, C1, P, C, L)
    assert (aux.group, aux.aggs) == ((0, 2), ((5, "min"), (6, "min")))
    single, _ = selectors(prepare(SP), "single")
    assert single["path"].aggs == ((3, "min"),)
    assert selectors(prepare(SP), "off") == ({}, {})
    with pytest.raises(InputError, match="aggsel"):
        selectors(prepare(SP), "both")
    reach = psn.load(Path(__file__).resolve().parent.parent / "examples" / "reachable.ndl")
    assert selectors(prepare(reach), "multi") == ({}, {})


def test_selector_keeps_ties_and_the_best_of_each_aggregate():
    sel = Selector((0,), ((1, "min"), (2, "max")))
    members = {("g", 1, 1): None, ("g", 1, 0): None, ("g", 3, 9): None, ("g", 4, 2): None}
    assert sorted(sel.qualified(members)) == [("g", 1, 0), ("g", 1, 1), ("g", 3, 9)]
    assert sel.qualifies(("g", 1, 0), members) and not sel.qualifies(("g", 4, 2), members)


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
                      aggsel="multi", delivery=delivery, seed=seed,
                      placement=Placement.single() if seed % 3 else None,
                      roundtrip=seed % 4 == 0,
                      contexts="worker" if seed % 6 == 0 else "process")
        live = _schedule(rng, net, links)
        SCHEDULES["count"] += 1
        _same(net, live, (seed, ship, delivery))


def test_terminates_on_a_dense_cyclic_graph_with_set_semantics():
    rng = random.Random(5)
    links = random_links(9, 40, rng, max_cost=6)
    for aggsel in ("multi", "off"):      # set semantics keeps aggregates exact on FIFO only
        net = Network(SP, {"link": links}, annotation="set", aggsel=aggsel, seed=1,
                      delivery="fifo").run()
        _same(net, links, aggsel)


def test_pruning_saves_traffic_and_single_prunes_on_one_aggregate():
    rng = random.Random(11)
    links = random_links(8, 30, rng, max_cost=9)
    sent = {}
    for mode in ("off", "single", "multi"):
        net = Network(SP, {"link": links}, annotation="absorption", aggsel=mode,
                      delivery="random", seed=2).run()
        sent[mode] = net.metrics["tuples_sent"]
        got, ref = net.relations(), psn.evaluate(SP, {"link": links})
        exact = ("minCost", "cheapestPath") if mode == "single" else AGG
        for pred in exact:
            assert got[pred] == ref[pred], (mode, pred)
    assert sent["single"] <= sent["multi"] < sent["off"]


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


def test_zz_schedule_count():
    if SCHEDULES["count"] == 0:
        pytest.skip("property tests deselected")
    assert SCHEDULES["count"] >= 6 * PER_CASE
