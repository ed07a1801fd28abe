"""DRed (delete and re-derive), Liu et al.'s baseline (ICDE 2009, Sec. 3.2, Fig. 5).

Checks that ``--annotation dred`` gives the reference's relations after every burst under
any delivery order (the golden corpus and the reorder scenarios run it too, from
``tests/test_corpus_engines.py`` and ``tests/test_reorder.py``), that the Fig. 5 example
ships what the phase accounting says, that the barrier is counted as traffic, that
non-monotone aggregates take extra rounds and stay exact, and that what DRed cannot run
(negation, MinShip, aggregate selection, Ray) is refused with an error naming the fix.
"""

from __future__ import annotations

import random

import pytest

import psn
import sim
from engine import Network
from ndlog.errors import EvaluationError, InputError, PSNError
from psn.cli import main

REACH = psn.load("examples/reachable.ndl")
SHORTEST = psn.load("examples/shortest_path.ndl")
FIG3 = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "b")]
ORDERS = [(d, b, s) for d in ("fifo", "random", "adversarial") for b in (True, False)
          for s in range(3)]


def _phase(net, before: dict, key: str) -> int:
    return net.metrics[key] - before.get(key, 0)


class _Shipped:
    """A send stage counting the updates a node ships to other nodes, per (sign, pred)."""

    def __init__(self):
        self.counts: dict = {}

    def install(self, node) -> None:
        node.send_stages.append(self)

    def send(self, node, out: list) -> list:
        for dst, upd in out:
            if dst != node.id:
                key = (upd[0], upd[1])
                self.counts[key] = self.counts.get(key, 0) + 1
        return out

    def flush(self, node) -> list:
        return []

    def take(self) -> dict:
        out, self.counts = self.counts, {}
        return out


@pytest.mark.parametrize("delivery,batch,seed", ORDERS)
def test_liu_fig5_over_delete_then_re_derive(delivery, batch, seed):
    """Liu Fig. 5: reachable on link(A,B), (B,C), (C,A), (C,B), then link(C,B) deleted.

    Accounting (tuples shipped between nodes; updates a node sends to itself are free).
    The localized plan ships each link to its destination (``link_rev``, rule ``r2a``) and
    the join of ``r2`` back to the link's source (``r2_aux``, rule ``r2b``), where
    ``reachable`` is derived locally. The initial computation ships 16 tuples (4
    ``link_rev`` + 12 ``r2_aux``), as Liu count for set semantics ("4 initial link tuples,
    and 12 reachable tuples"). Deleting link(C, B):

    * over-deletion ships 13 deletions: ``link_rev(B, C)`` and every ``r2_aux`` tuple
      (12): every reachable tuple is over-deleted, as in Fig. 5 steps 1-4;
    * re-derivation ships 10 tuples: the 9 ``r2_aux`` tuples that computing the view from
      scratch on the three remaining links ships (all of its 12 but the 3 link mirrors:
      every reachable tuple is re-derived, Fig. 5 steps 5-8, "equivalent to computing the
      entire reachable view from scratch"), plus ``link_rev(B, A)``: node B lost a
      ``link_rev`` fact, so ``r2a`` is fired again for heads at B;
    * the barrier: 2 phases started (over-delete, re-derive), each after one done message
      from each of the two workers other than the coordinator's and followed by one go
      message to each: 8 messages, no tuples.

    The counts are the same under every delivery order: each rule instance fires its
    deletion once (when its first body fact disappears), and re-derivation fires each
    instance once.
    """
    tally = _Shipped()
    net = Network(REACH, {"link": FIG3}, annotation="dred", delivery=delivery, seed=seed,
                  batch=batch, on_node=tally.install).run()
    assert net.metrics["tuples_sent"] == 16
    assert tally.take() == {(1, "link_rev"): 4, (1, "r2_aux"): 12}
    assert net.metrics["barrier_messages"] == 0          # insertions need no barrier
    scratch = _Shipped()
    Network(REACH, {"link": FIG3[:3]}, annotation="set", delivery=delivery, seed=seed,
            batch=batch, on_node=scratch.install).run()
    scratch = scratch.take()
    assert scratch == {(1, "link_rev"): 3, (1, "r2_aux"): 9}
    before = dict(net.metrics)
    net.delete("link", ("c", "b")).run()
    over = _phase(net, before, "overdelete_tuples")
    again = _phase(net, before, "rederive_tuples")
    assert (over, again) == (13, 10)
    assert tally.take() == {(-1, "link_rev"): 1, (-1, "r2_aux"): 12,
                            (1, "link_rev"): 1, (1, "r2_aux"): scratch[(1, "r2_aux")]}
    assert _phase(net, before, "tuples_sent") == over + again
    assert _phase(net, before, "phase_rounds") == 1
    assert _phase(net, before, "barriers") == 2
    assert _phase(net, before, "barrier_messages") == 8
    assert _phase(net, before, "bytes_sent") == (
        _phase(net, before, "overdelete_bytes") + _phase(net, before, "rederive_bytes")
        + _phase(net, before, "barrier_bytes"))
    assert net.relations()["reachable"] == psn.evaluate(REACH, {"link": FIG3[:3]})[
        "reachable"]


def test_barrier_traffic_adds_up_per_worker_and_in_the_simulator():
    """Barrier messages are counted per sending worker and node (the totals stay the sum
    of the rows), in the simulator's step tallies too, and take simulated time."""
    import topologies
    simulation = sim.Simulation(REACH, topologies.make("grid", rows=4, cols=4),
                                annotation="dred", seed=1)
    simulation.run_workload("all; delete-links:1", check=True)
    load, delete = simulation.steps
    assert load.check and delete.check
    m = simulation.net.metrics
    assert m["barrier_messages"] == 2 * 2 * 15            # 2 barriers, done + go, 15 others
    for rows in (m["workers"], m["nodes"]):
        assert sum(r["messages_sent"] for r in rows.values()) == m["messages_sent"]
        assert sum(r["bytes_sent"] for r in rows.values()) == m["bytes_sent"]
    assert sum(s.traffic["msgs_sent"] for s in simulation.steps) == m["messages_sent"]
    assert delete.sim_time > 0
    # the phase counters per step (psn run --metrics), adding up to the run's
    assert load.traffic["barrier_messages"] == 0 < delete.traffic["barrier_messages"]
    for key in ("barrier_messages", "overdelete_tuples", "rederive_tuples"):
        assert load.traffic[key] + delete.traffic[key] == m[key]


AVG = """
a1 avgVal(@X, avg<V>) :- val(@X, V).
a2 seen(@Y, X, A) :- avgVal(@X, A), peer(@X, Y).
a3 low(@Y, X) :- seen(@Y, X, A), A < 5.
"""


@pytest.mark.parametrize("seed", range(12))
def test_a_held_retraction_of_a_value_that_comes_back(seed):
    """An average that leaves a value and comes back to it within one phase (5, then 4,
    then 5 again) has its retraction of 5 held: aggregate results are counted, so the
    next round deletes 4 and keeps 5, under any order."""
    program = psn.parse(AVG)
    rng = random.Random(seed)
    facts = {"val": [("x", 5), ("y", 2)], "peer": [("x", "y"), ("y", "x")]}
    bursts = [[(1, "val", ("x", 3)), (1, "val", ("x", 7))],
              [(-1, "val", ("x", 3)), (-1, "val", ("y", 2)), (1, "val", ("y", 9))],
              [(-1, "val", ("x", 7)), (1, "val", ("x", 3)), (-1, "val", ("x", 3))]]
    final = {"val": [("x", 5), ("y", 9)], "peer": facts["peer"]}
    delivery = rng.choice(["fifo", "random", "adversarial"])
    net = Network(program, facts, annotation="dred", delivery=delivery, seed=seed,
                  batch=rng.random() < 0.7, roundtrip=True).run()
    for burst in bursts:
        net.apply(burst)
        if rng.random() < 0.5:
            net.run()
    net.run()
    assert net.relations() == psn.evaluate(program, final)


@pytest.mark.parametrize("delivery", ["fifo", "random", "adversarial"])
def test_a_base_fact_that_rules_derive_through_itself_goes(delivery):
    """reachable(a, c) is a base fact, and r2 derives it again through the cycle a-b-a
    from itself: deleting the base fact over-deletes it whole, and re-derivation finds no
    other derivation (with link(a, c) there is one, and it stays)."""
    links = [("a", "b"), ("b", "a")]
    for extra in ([], [("a", "c")]):
        facts = {"link": links + extra, "reachable": [("a", "c")]}
        net = Network(REACH, facts, annotation="dred", delivery=delivery).run()
        net.delete("reachable", ("a", "c")).run()
        assert net.relations() == psn.evaluate(REACH, {"link": links + extra}), extra


def test_a_base_fact_inserted_twice_survives_one_deletion():
    """Base insertions are counted: the ledger keeps the second insertion live."""
    for delivery in ("random", "adversarial"):
        net = Network(REACH, {"link": FIG3}, annotation="dred", delivery=delivery).run()
        net.insert("link", ("c", "b")).run()
        net.delete("link", ("c", "b")).run()
        assert ("c", "b") in net.relations()["link"]
        assert net.relations() == psn.evaluate(REACH, {"link": FIG3})


COUNT = """
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
c1 fanout(@S, count<D>) :- reachable(@S, D).
f1 wide(@S) :- fanout(@S, N), N >= 3.
"""


def test_an_aggregate_that_climbs_back_takes_another_round_and_the_bound_stops_it():
    """Over-deletion lowers a count that re-derivation raises again, one value at a
    time: each raise retracts the previous value, held for another round; the result is
    exact, and a run past the bound on rounds stops with an error."""
    program = psn.parse(COUNT)
    for delivery in ("fifo", "random", "adversarial"):
        net = Network(program, {"link": FIG3}, annotation="dred", delivery=delivery).run()
        before = dict(net.metrics)
        net.delete("link", ("c", "b")).run()
        assert _phase(net, before, "phase_rounds") == 2
        assert net.relations() == psn.evaluate(program, {"link": FIG3[:3]})
    net = Network(program, {"link": FIG3}, annotation="dred").run()
    net.host.phases.max_rounds = 1
    with pytest.raises(EvaluationError, match="did not settle after 1 rounds"):
        net.delete("link", ("c", "b")).run()


def test_refusals_name_the_fix():
    negated = psn.parse("u1 lonely(@X) :- node(@X), not link(@X, X).\n"
                        "r1 link(@X, Y) :- edge(@X, Y).")
    with pytest.raises(PSNError, match="cannot maintain negation") as exc:
        Network(negated, annotation="dred")
    assert "--annotation absorption" in exc.value.hint
    with pytest.raises(InputError, match="does not keep in a form MinShip can ship"):
        Network(REACH, annotation="dred", ship="lazy")
    with pytest.raises(InputError, match="does not support") as exc:
        Network(SHORTEST, annotation="dred", aggsel="multi")
    assert "--aggsel off" in exc.value.hint
    assert Network(SHORTEST, annotation="dred").resolved.aggsel == "off"
    from psn.distributed import RayNetwork
    with pytest.raises(InputError, match="--engine ray does not run") as exc:
        RayNetwork(REACH, annotation="dred")       # refused before any worker starts
    assert "--engine sim" in exc.value.hint


def test_cli_runs_dred_and_refuses_it_on_ray(fig5_files, capsys):
    argv = ["run", "examples/reachable.ndl", "--facts", str(fig5_files / "f.ndl"),
            "--burst", str(fig5_files / "b.ndl"), "--annotation", "dred",
            "--delivery", "adversarial", "--check", "--format", "json"]
    assert main(argv) == 0
    import json
    out = json.loads(capsys.readouterr().out)
    assert out["run"]["annotation"] == "dred"
    assert out["metrics"]["barrier_messages"] == 8
    assert out["metrics"]["overdelete_tuples"] == 13
    assert main(["run", "examples/reachable.ndl", "--facts", str(fig5_files / "f.ndl"),
                 "--annotation", "dred", "--engine", "ray", "--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert "--engine ray does not run" in err and "--engine sim" in err
    assert "Traceback" not in err
