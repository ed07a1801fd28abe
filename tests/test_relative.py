"""Relative provenance, Liu et al.'s other baseline (ICDE 2009, Sec. 4 and 7.2).

Checks that ``--annotation relative`` gives the reference's relations after every burst
under any delivery order (the golden corpus and the reorder scenarios run it too, from
``tests/test_corpus_engines.py`` and ``tests/test_reorder.py``), that Liu's Fig. 2
deletion keeps the 9 reachable tuples and ships what the traversal accounting says, that a
cycle alone does not keep a fact (the traversal deletes it), that aggregates stay exact,
that lazy shipping (Liu Sec. 5) buffers alternatives at the sender and stays exact, that
the traversal is counted as traffic in memory and in the simulator, and that what the
scheme cannot run (negation, aggregate selection, Ray) is refused with an error naming the
fix.
"""

from __future__ import annotations

import json
import random

import msgpack
import pytest

import psn
import sim
from engine import Network
from ndlog.errors import EvaluationError, InputError, PSNError
from provenance.relative import EMPTY_EDGE, KILL, RelativeScheme, Retraction
from psn.cli import main

REACH = psn.load("examples/reachable.ndl")
SHORTEST = psn.load("examples/shortest_path.ndl")
FIG2 = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "b")]
ORDERS = [(d, b, s) for d in ("fifo", "random", "adversarial") for b in (True, False)
          for s in range(3)]


def _delta(net, before: dict, key: str) -> int:
    return net.metrics[key] - before.get(key, 0)


@pytest.mark.parametrize("delivery,batch,seed", ORDERS)
def test_liu_fig2_the_deletion_keeps_all_nine_tuples(delivery, batch, seed):
    """Liu Fig. 2: reachable on link(A,B), (B,C), (C,A), (C,B), then link(C,B) deleted.

    The insertions ship 16 tuples (4 link + 12 reachable), as set semantics does, each
    with its edges. The deletion ships 4 tuples (the deletion of link_rev(b, c), the
    link's copy at b, and of the 3 auxiliaries r2_aux(c, b, D) b had sent back);
    reachable(c, b) keeps its edge from link(c, a) and r2_aux(c, a, b), so it lost an edge
    and the traversal runs: 18 suspects (every fact downstream of it, auxiliaries
    included), all confirmed, none deleted; 12 traversal messages between the 3
    nodes, and 3 barriers (delete phase, insert phase, traversal) of 4 messages each. The
    same under every delivery order. (Absorption provenance ships 6-8 tuples and no
    traversal; DRed 23 tuples and 8 barrier messages, ``tests/test_dred.py``.)
    """
    net = Network(REACH, {"link": FIG2}, annotation="relative", delivery=delivery,
                  seed=seed, batch=batch).run()
    assert net.metrics["tuples_sent"] == 16
    assert net.metrics["traversal_rounds"] == 0           # insertions need no traversal
    before = dict(net.metrics)
    net.delete("link", ("c", "b")).run()
    assert len(net.relations()["reachable"]) == 9
    assert net.relations() == psn.evaluate(REACH, {"link": FIG2[:3]})
    got = {k: _delta(net, before, k) for k in ("tuples_sent", "traversal_rounds",
                                               "suspects", "confirmed", "retracted",
                                               "traversal_messages", "barrier_messages")}
    assert got == {"tuples_sent": 4, "traversal_rounds": 1, "suspects": 18, "confirmed": 18,
                   "retracted": 0, "traversal_messages": 12, "barrier_messages": 12}
    messages = _delta(net, before, "messages_sent")
    assert messages > 12 + 12
    assert _delta(net, before, "bytes_sent") > (_delta(net, before, "traversal_bytes")
                                                + _delta(net, before, "barrier_bytes"))


@pytest.mark.parametrize("delivery,batch,seed", ORDERS)
def test_a_cycle_alone_does_not_keep_a_fact(delivery, batch, seed):
    """a <-> b, b -> t: deleting link(b, t) leaves reachable(b, t) and reachable(a, t)
    supported only by each other (and reachable(b, t) by itself through a); the traversal
    confirms neither and deletes both."""
    links = [("a", "b"), ("b", "a"), ("b", "t")]
    net = Network(REACH, {"link": links}, annotation="relative", delivery=delivery,
                  seed=seed, batch=batch).run()
    before = dict(net.metrics)
    net.delete("link", ("b", "t")).run()
    assert net.relations() == psn.evaluate(REACH, {"link": links[:2]})
    assert _delta(net, before, "retracted") >= 2
    net.insert("link", ("b", "t")).run()                  # and it comes back
    assert net.relations() == psn.evaluate(REACH, {"link": links})


@pytest.mark.parametrize("ship", ["eager", "lazy"])
@pytest.mark.parametrize("seed", range(10))
def test_links_deleted_and_reinserted_under_any_order(seed, ship):
    """Random graphs with cycles, bursts of deletions, insertions, a link deleted and
    re-inserted in one burst and across bursts, checked after every burst."""
    rng = random.Random(seed)
    nodes = range(7)
    links = sorted({(a, b) for a in nodes for b in nodes if a != b and rng.random() < 0.3})
    live = set(links[: len(links) * 2 // 3])
    spare = [lk for lk in links if lk not in live]
    net = Network(REACH, {"link": sorted(live)}, annotation="relative", ship=ship,
                  delivery=rng.choice(["random", "adversarial"]), seed=seed,
                  batch=rng.random() < 0.7, roundtrip=True).run()
    for _ in range(4):
        burst = [(-1, "link", lk) for lk in rng.sample(sorted(live), min(2, len(live)))]
        live -= {t for _, _, t in burst}
        if spare:
            lk = spare.pop()
            burst.append((1, "link", lk))
            live.add(lk)
        if live:
            lk = rng.choice(sorted(live))
            burst += [(-1, "link", lk), (1, "link", lk)]
        if burst[0][0] < 0 and rng.random() < 0.5:
            burst.append((1, "link", burst[0][2]))
            live.add(burst[0][2])
        net.apply(burst).run()
        assert net.relations() == psn.evaluate(REACH, {"link": sorted(live)})


COUNT = """
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
c1 fanout(@S, count<D>) :- reachable(@S, D).
f1 wide(@S) :- fanout(@S, N), N >= 3.
"""


@pytest.mark.parametrize("delivery,ship", [(d, s) for d in ("fifo", "random", "adversarial")
                                           for s in ("eager", "lazy")])
def test_aggregates_over_recursion_stay_exact(delivery, ship):
    """A count over reachable: the traversal deletes reachable facts, the count changes
    and what reads it follows; shortest paths (min) under deletions."""
    program = psn.parse(COUNT)
    links = [("a", "b"), ("b", "a"), ("b", "t"), ("t", "u")]
    net = Network(program, {"link": links}, annotation="relative", delivery=delivery,
                  ship=ship).run()
    net.delete("link", ("b", "t")).run()
    assert net.relations() == psn.evaluate(program, {"link": links[:2] + links[3:]})
    costs = [(1, 2, 1), (2, 3, 1), (3, 1, 1), (1, 3, 5), (3, 4, 2), (4, 3, 2)]
    net = Network(SHORTEST, {"link": costs}, annotation="relative", delivery=delivery,
                  ship=ship).run()
    for gone in [(2, 3, 1), (3, 4, 2)]:
        costs.remove(gone)
        net.delete("link", gone).run()
        want = psn.evaluate(SHORTEST, {"link": costs})
        assert {r: net.relations()[r] for r in want} == want


@pytest.mark.parametrize("delivery,batch,seed", ORDERS)
def test_lazy_shipping_buffers_alternatives_at_the_sender(delivery, batch, seed):
    """Liu Sec. 5, lazy: one edge per head fact and destination is shipped, the others wait
    at the sender (operator state) and one ships when the shipped one is deleted; Fig. 2's
    deletion keeps the 9 tuples, and a fact derivable only through a buffered edge comes
    back (the cycle test's links, plus a second path to t)."""
    net = Network(REACH, {"link": FIG2}, annotation="relative", ship="lazy",
                  delivery=delivery, seed=seed, batch=batch).run()
    assert net.metrics["operator_state"] > 0
    assert net.resolved.describe()["ship"] == "lazy"
    net.delete("link", ("c", "b")).run()
    assert net.relations() == psn.evaluate(REACH, {"link": FIG2[:3]})
    links = [("a", "b"), ("b", "a"), ("b", "t"), ("a", "t")]
    net = Network(REACH, {"link": links}, annotation="relative", ship="lazy",
                  delivery=delivery, seed=seed, batch=batch).run()
    for gone in [("b", "t"), ("a", "t")]:
        links.remove(gone)
        net.delete("link", gone).run()
        assert net.relations() == psn.evaluate(REACH, {"link": links})


def test_the_bound_on_rounds_stops_a_run():
    net = Network(REACH, {"link": [("a", "b"), ("b", "a"), ("b", "t")]},
                  annotation="relative").run()
    net.host.phases.max_rounds = 0
    with pytest.raises(EvaluationError, match="did not settle after 0 rounds"):
        net.delete("link", ("b", "t")).run()


def test_the_bound_on_rounds_counts_each_run_afresh():
    """A run that ends with a traversal confirming every suspect starts the next run's
    count from zero: each deletion of one of a link's insertions takes a delete phase and
    a traversal (two rounds), and the 26th of them used to stop the run at 50 rounds."""
    net = Network(REACH, {"link": [("a", "b")] * 40}, annotation="relative").run()
    for left in range(39, 0, -1):
        net.delete("link", ("a", "b")).run()
        assert net.multiset("link") == {("a", "b"): left}
    assert net.relations()["reachable"] == {("a", "b")}


def test_the_simulator_counts_the_traversal_and_charges_its_time():
    """On ts100 one deletion's traversal is counted per sending node and worker (the rows
    add up to the totals), in the simulator's step tallies, and takes simulated time."""
    simulation = sim.Simulation(REACH, "ts100", annotation="relative", seed=1)
    simulation.run_workload("all; delete-links:1", check=True, progress=False)
    load, delete = simulation.steps
    assert load.check and delete.check
    m = simulation.net.metrics
    assert m["traversal_rounds"] == 1 and m["traversal_messages"] > 0
    assert m["barrier_messages"] == 3 * 2 * 99         # 3 barriers, done + go, 99 others
    for rows in (m["workers"], m["nodes"]):
        assert sum(r["messages_sent"] for r in rows.values()) == m["messages_sent"]
        assert sum(r["bytes_sent"] for r in rows.values()) == m["bytes_sent"]
    assert sum(s.traffic["msgs_sent"] for s in simulation.steps) == m["messages_sent"]
    assert delete.sim_time > 0


def test_the_simulator_counts_traversal_notes_inside_a_worker_as_local():
    """A traversal note between two nodes of one worker is local in the simulator's step
    tallies, as in the network's traffic: the steps' bytes between workers add up to the
    network's (the simulator counted such notes as traffic between workers; found by a
    fuzz campaign of the engine's modes)."""
    program = psn.parse("t1 treach(@S, D, T) :- link(@S, D), tag(@D, T).\n"
                        "t2 treach(@S, D, T) :- link(@S, Z), treach(@Z, D, T).\n")
    links = [(0, 3), (0, 4), (1, 0), (1, 2), (1, 3), (1, 4), (2, 1), (2, 3), (2, 4),
             (3, 4), (4, 0), (4, 1)]
    simulation = sim.Simulation(program, "ring", annotation="relative", workers=3)
    simulation.step(updates=[(1, "link", t) for t in links]
                    + [(1, "tag", (3, "b")), (1, "tag", (4, "b"))])
    simulation.step(updates=[(-1, "link", (0, 4))], check=True)
    load, delete = simulation.steps
    m = simulation.net.metrics
    assert delete.check and m["traversal_messages"] > 0
    assert len({simulation.placement.worker(n) for n in range(5)}) in (2, 3)
    for key, total in (("bytes_sent", "worker_bytes_sent"),
                       ("msgs_sent", "worker_messages_sent")):
        assert sum(s.traffic[key] for s in simulation.steps) == m[total]
    assert (sum(s.traffic["bytes_sent"] + s.traffic["local_bytes"]
                for s in simulation.steps) == m["bytes_sent"])


def test_edges_are_stored_and_shipped_honestly():
    """A fact stores one edge per derivation (state counts them); an edge crosses the
    wire as its body facts, and a traversal's retraction keeps its mark."""
    net = Network(REACH, {"link": FIG2}, annotation="relative", roundtrip=True).run()
    node = net.host.nodes["c"]
    edges = node.state["reachable"][("c", "b")]
    # r1 from link(c, b); the localized r2 from link(c, Z) and the auxiliary that
    # carries reachable(Z, b) to c, for Z = b and Z = a
    assert set(edges) == {frozenset({("link", ("c", "b"))}),
                          frozenset({("link", ("c", "b")), ("r2_aux", ("c", "b", "b"))}),
                          frozenset({("link", ("c", "a")), ("r2_aux", ("c", "a", "b"))})}
    scheme = RelativeScheme()
    for ann in (next(iter(edges)), Retraction(next(iter(edges))), EMPTY_EDGE):
        wire = msgpack.unpackb(msgpack.packb(scheme.serialize(None, ann)), use_list=False)
        assert scheme.deserialize(None, wire) == ann
    assert net.metrics["annotation_bytes"] > 0
    assert net.metrics["state_occurrences"] > net.metrics["state_tuples"]
    assert repr(KILL) == "KILL"


def test_refusals_name_the_fix():
    negated = psn.parse("u1 lonely(@X) :- node(@X), not link(@X, X).\n"
                        "r1 link(@X, Y) :- edge(@X, Y).")
    with pytest.raises(PSNError, match="cannot maintain negation") as exc:
        Network(negated, annotation="relative")
    assert "--annotation absorption" in exc.value.hint
    with pytest.raises(InputError, match=r"ship \(--ship\) must be"):
        Network(REACH, annotation="relative", ship="sometimes")
    assert Network(REACH, annotation="relative").resolved.describe()["ship"].startswith(
        "eager")
    with pytest.raises(InputError, match="does not support") as exc:
        Network(SHORTEST, annotation="relative", aggsel="multi")
    assert "--aggsel off" in exc.value.hint
    assert Network(SHORTEST, annotation="relative").resolved.aggsel == "off"
    from psn.distributed import RayNetwork
    with pytest.raises(InputError, match="--engine ray does not run") as exc:
        RayNetwork(REACH, annotation="relative")    # refused before any worker starts
    assert "--engine sim" in exc.value.hint


def test_cli_runs_relative_eager_and_lazy_and_refuses_it_on_ray(fig5_files, capsys):
    argv = ["run", "examples/reachable.ndl", "--facts", str(fig5_files / "f.ndl"),
            "--burst", str(fig5_files / "b.ndl"), "--annotation", "relative",
            "--delivery", "adversarial", "--check", "--format", "json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["run"]["annotation"] == "relative"
    assert out["metrics"]["traversal_messages"] == 12
    assert len(out["relations"]["reachable"]) == 9
    base = ["run", "examples/reachable.ndl", "--facts", str(fig5_files / "f.ndl"),
            "--annotation", "relative"]
    assert main(base + ["--engine", "ray", "--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert "--engine ray does not run" in err and "Traceback" not in err
    assert main(base + ["--burst", str(fig5_files / "b.ndl"), "--ship", "lazy", "--check"]) == 0
    assert "reachable (9 tuples)" in capsys.readouterr().out
