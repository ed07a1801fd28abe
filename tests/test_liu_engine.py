"""The ``absorption`` scheme through the PSN engine: Liu et al. (ICDE 2009) Fig. 2 end to
end, exactness against the PosBool reference, and delivery-order independence with
deletions, re-insertions and deletions that overtake their insertions.

Every run ships every derivation (no MinShip stage), which is eager shipping with W = 1.
"""

from __future__ import annotations

import random
from pathlib import Path

import msgpack
import pytest

import ndlog
import psn
import topologies
from graphs import random_links
from engine import Network
from provenance import NO_FIRE, get_scheme
from provenance.absorption import AbsorptionScheme, Zeroing
from provenance.bdd import insertion_id, node_key, var_name
from provenance.posbool import POSBOOL, PosBool, evaluate_annotated

REACH = psn.load(Path(__file__).resolve().parent.parent / "examples" / "reachable.ndl")
FIG2 = [("A", "B"), ("B", "C"), ("C", "A"), ("C", "B")]        # p1..p4
STEP4 = {                                                       # Fig. 2, derivation step 4
    ("A", "A"): [{1, 2, 3}], ("A", "B"): [{1}], ("A", "C"): [{1, 2}],
    ("B", "A"): [{2, 3}], ("B", "B"): [{2, 4}, {1, 2, 3}], ("B", "C"): [{2}],
    ("C", "A"): [{3}], ("C", "B"): [{4}, {1, 3}], ("C", "C"): [{2, 4}, {1, 2, 3}],
}


def provenance_of(net: Network, pred: str = "reachable") -> dict[tuple, frozenset]:
    """Every stored tuple of ``pred`` with its provenance's minimal variable sets."""
    out = {}
    for nid in net.nodes:
        ctx = net.context_of(nid)
        for t, f in net.node_state(nid).get(pred, {}).items():
            assert t not in out
            out[t] = frozenset(net.scheme.minimal_sets(ctx, f))
    return out


class Ledger:
    """Mirror of the driver's insertion numbering: seq i is variable x<i>; a deletion
    cancels the oldest live insertion of the fact."""

    def __init__(self):
        self.seq = 0
        self.live: dict[tuple, list[int]] = {}
        self.vars: dict[tuple, list[str]] = {}
        self.dead: set[str] = set()

    def insert(self, t):
        self.seq += 1
        self.live.setdefault(t, []).append(self.seq)
        self.vars.setdefault(t, []).append(var_name(self.seq))

    def delete(self, t):
        self.dead.add(var_name(self.live[t].pop(0)))
        if not self.live[t]:
            del self.live[t]

    def expected(self) -> dict[tuple, frozenset]:
        """PosBool provenance over all insertions, with the deleted variables false."""
        base = {"link": {t: POSBOOL.plus(POSBOOL.zero, frozenset(
            frozenset({v}) for v in vs)) for t, vs in self.vars.items()}}
        ref = evaluate_annotated(REACH, base, POSBOOL).get("reachable", {})
        out = {t: frozenset(s for s in sets if not s & self.dead) for t, sets in ref.items()}
        return {t: s for t, s in out.items() if s}


def test_scheme_object_is_accepted_by_the_registry():
    scheme = AbsorptionScheme()
    assert get_scheme(scheme) is scheme and scheme.name == "absorption"


@pytest.mark.parametrize("delivery,seed,roundtrip", [
    ("fifo", 0, False), ("random", 1, True), ("random", 2, False), ("adversarial", 0, True)])
def test_fig2_end_to_end(delivery, seed, roundtrip):
    net = Network(REACH, {"link": FIG2}, annotation=AbsorptionScheme(), delivery=delivery,
                  seed=seed, roundtrip=roundtrip).run()
    expected = {t: frozenset(frozenset(var_name(i) for i in s) for s in sop)
                for t, sop in STEP4.items()}
    assert provenance_of(net) == expected
    insert_tuples = net.metrics["tuples_sent"]
    before = {nid: {p: dict(rows) for p, rows in net.node_state(nid).items()}
              for nid in net.nodes}
    net.delete("link", ("C", "B")).run()
    assert net.relations()["reachable"] == set(STEP4)          # nothing is removed
    sent = net.metrics["tuples_sent"] - insert_tuples
    # only facts whose provenance mentioned p4 (x4) can receive a deletion, each at most once
    # per derivation; here: at most one message per such fact, and far fewer than inserting
    mentioned = sum(1 for nid, rels in before.items() for rows in rels.values()
                    for f in rows.values()
                    if "x4" in net.context_of(nid).bdd.support(
                        net.scheme.function(net.context_of(nid), f)))
    assert 0 < sent <= mentioned < insert_tuples
    assert provenance_of(net) == {t: frozenset(s for s in sets if "x4" not in s)
                                  for t, sets in expected.items()}


def test_fig2_why_output():
    net = Network(REACH, {"link": FIG2}, annotation=AbsorptionScheme()).run()
    ctx = net.context_of("C")
    f = net.node_state("C")["reachable"][("C", "B")]
    loc = net.program.loc.get
    assert net.scheme.explain(ctx, f, loc) == \
        'link(@"C","B") ∨ link(@"A","B") ∧ link(@"C","A")'
    assert net.scheme.explain(ctx, None) == "false"


@pytest.mark.parametrize("seed", range(5))
def test_eager_provenance_equals_posbool_on_random_graphs(seed):
    rng = random.Random(seed)
    n = rng.randint(5, 8)
    links = [(a, b) for a, b, _ in random_links(n, rng.randint(n, 2 * n), rng)]
    ledger = Ledger()
    for t in links:
        ledger.insert(t)
    net = Network(REACH, {"link": links}, annotation=AbsorptionScheme(), delivery="random",
                  seed=seed).run()
    assert provenance_of(net) == ledger.expected()


def _schedule(rng: random.Random, links: list, ledger: Ledger, net: Network) -> None:
    """A few bursts: insertions, deletions, re-insertions of deleted links."""
    live = list(links)
    for t in links:
        ledger.insert(t)
    net.apply([(1, "link", t) for t in links])
    for _ in range(rng.randint(1, 3)):
        burst = []
        for t in rng.sample(live, min(len(live), rng.randint(1, 3))):
            burst.append((-1, "link", t))
            ledger.delete(t)
            live.remove(t)
            if rng.random() < 0.5:                     # deleted and re-inserted
                burst.append((1, "link", t))
                ledger.insert(t)
                live.append(t)
        net.apply(burst)
        if rng.random() < 0.5:                         # bursts overlap or not
            net.run()
    net.run()


def _check_schedule(seed: int, rng: random.Random, delivery: str, batch: bool,
                    roundtrip: bool) -> None:
    n = rng.randint(3, 7)
    links = [(a, b) for a, b, _ in random_links(n, rng.randint(n, 2 * n), rng)]
    ledger = Ledger()
    net = Network(REACH, annotation=AbsorptionScheme(), delivery=delivery, seed=seed,
                  batch=batch, roundtrip=roundtrip,
                  contexts="worker" if seed % 3 == 0 else "process")
    _schedule(rng, links, ledger, net)
    live = sorted(ledger.live)
    assert net.relations()["reachable"] == \
        psn.evaluate(REACH, {"link": live})["reachable"], seed
    assert provenance_of(net) == ledger.expected(), seed


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("delivery", ["random", "adversarial", "fifo"])
def test_any_delivery_order_reaches_the_posbool_state(delivery, batch):
    """Seeded random schedules; the final relations equal psn.evaluate on the live links
    and every provenance equals PosBool over the live insertions (with the deleted
    variables false)."""
    for seed in range(15):
        rng = random.Random(1000 * seed + len(delivery) + batch)
        _check_schedule(seed, rng, delivery, batch, roundtrip=seed % 2 == 0)


def test_regression_no_negative_literal_survives_a_zeroing():
    """Shipping ``new & ~old`` left ``~x3`` (x3 deleted) in reachable(0, 2) at node 0 under
    this schedule; monotone differences keep every provenance positive."""
    seed = 128
    _check_schedule(seed, random.Random(seed * 7 + len("random") + True), "random", True,
                    roundtrip=False)


def test_deletion_overtaking_its_insertion():
    net = Network(REACH, annotation=AbsorptionScheme(), delivery="adversarial")
    net.apply(["-link(@a, b)", "+link(@a, b)", "+link(@b, c)", "+link(@a, b)"])
    net.run()
    assert net.relations()["reachable"] == {("a", "b"), ("b", "c"), ("a", "c")}
    # the cancelled insertion's variable stays zeroed at its node; the re-insertion is new
    ctx = net.context_of("a")
    assert "x1" in ctx.zeroed
    assert provenance_of(net)[("a", "c")] == frozenset({frozenset({"x3", "x2"})})


def test_wire_forms_of_the_two_annotations():
    scheme = AbsorptionScheme()
    shared = scheme.shared_context()
    a, b = scheme.context("a", shared), scheme.context("b", scheme.shared_context())
    f = scheme.join(a, scheme.base(a, ("link", ("a", "b")), 7),
                    scheme.base(a, ("link", ("b", "c")), 9))
    assert scheme.serialize(a, Zeroing(frozenset({"x7", "x9"}))) == [[7, 9]]
    assert scheme.deserialize(b, ((7, 9),)) == Zeroing(frozenset({"x7", "x9"}))
    g = scheme.deserialize(b, scheme.serialize(a, f))
    assert scheme.minimal_sets(b, g) == [frozenset({"x7", "x9"})]
    b.add_zeroed(["x9"])                          # the receiver already saw x9 zeroed
    assert scheme.is_zero(b, scheme.deserialize(b, scheme.serialize(a, f)))


def test_scheme_laws_on_samples():
    scheme = AbsorptionScheme()
    ctx = scheme.context(0, scheme.shared_context())
    rng = random.Random(3)
    for _ in range(50):
        x, y, z = (scheme.sample(ctx, rng) for _ in range(3))
        j, c = scheme.join, scheme.combine
        assert scheme.equal(ctx, c(ctx, x, j(ctx, x, y)), x)
        assert scheme.equal(ctx, j(ctx, x, c(ctx, y, z)), c(ctx, j(ctx, x, y), j(ctx, x, z)))
        assert scheme.equal(ctx, j(ctx, x, scheme.one(ctx)), x)
        assert scheme.is_zero(ctx, j(ctx, x, scheme.zero(ctx)))
        assert scheme.equal(ctx, scheme.deserialize(ctx, scheme.serialize(ctx, x)), x)
    assert PosBool.var("x") == frozenset({frozenset({"x"})})


SP = psn.load(Path(__file__).resolve().parent.parent / "examples" / "shortest_path.ndl")


@pytest.mark.parametrize("delivery", ["random", "adversarial", "fifo"])
def test_head_aggregates_follow_deletions(delivery):
    """Aggregate results get their own variable, zeroed when the operator retracts them:
    shortest path (no aggregate selection) through a deletion burst and a re-insertion."""
    for seed in range(4):
        rng = random.Random(seed)
        links = random_links(5, 8, rng, max_cost=4)
        net = Network(SP, {"link": links}, annotation=AbsorptionScheme(),
                      delivery=delivery, seed=seed).run()
        live = list(links)
        gone = rng.sample(live, 2)
        for t in gone:
            net.delete("link", t)
            live.remove(t)
        net.insert("link", gone[0])
        live.append(gone[0])
        net.run()
        ref = psn.evaluate(SP, {"link": live}, aggsel=False)
        got = net.relations()
        for pred in ("minCost", "minHops", "cheapestPath", "fewestHops"):
            assert got[pred] == ref[pred], (seed, pred)


def _lazy_run(contexts: str, roundtrip: bool = False):
    rng = random.Random(31)
    links = [(a, b) for a, b, _ in random_links(12, 30, rng)]
    net = Network(REACH, annotation="absorption", delivery="random", seed=5,
                  contexts=contexts, roundtrip=roundtrip)
    net.apply((1, "link", t) for t in links)
    net.run()
    net.apply((-1, "link", t) for t in links[::4])
    net.run()
    return net, [t for i, t in enumerate(links) if i % 4]


@pytest.mark.parametrize("roundtrip", [False, True])
def test_one_manager_per_process_or_per_worker_gives_the_same_run(roundtrip):
    """``contexts="process"`` shares one CUDD manager among the in-process workers (a
    message is encoded and counted, not rebuilt); ``"worker"`` gives each worker its own
    (every message between workers is rebuilt from its bytes). Relations, provenance and
    traffic agree."""
    shared, live = _lazy_run("process", roundtrip)
    own, _ = _lazy_run("worker", roundtrip)
    managers = {id(shared.context_of(n).bdd) for n in shared.nodes}
    assert len(managers) == 1
    assert len({id(own.context_of(n).bdd) for n in own.nodes}) == len(own.nodes) > 1
    a, b = next(iter(shared.nodes)), list(shared.nodes)[1]
    assert not shared.scheme.must_rebuild(shared.context_of(a), shared.context_of(b))
    assert own.scheme.must_rebuild(own.context_of(a), own.context_of(b))
    assert shared.relations() == own.relations()
    assert shared.relations()["reachable"] == psn.evaluate(REACH, {"link": live})["reachable"]
    assert provenance_of(shared) == provenance_of(own)
    for key in ("tuples_sent", "bytes_sent", "annotation_bytes"):
        assert shared.metrics[key] == own.metrics[key], key


@pytest.mark.parametrize("contexts", ["process", "worker"])
def test_every_manager_orders_base_variables_by_the_node_of_their_fact(contexts):
    """A base insertion's variable takes its level among those of its node's other base
    facts (nodes in ``node_key`` order, then ids), in every CUDD manager of the run, one
    per process or one per worker: the region query's triggers, inserted after the
    neighbour relation, sit beside their sensors' links instead of below every link.
    Variables the nodes make (the aggregates') sit below. Relations equal the reference."""
    region = psn.load(Path(__file__).resolve().parent.parent / "examples" / "region.ndl")
    topo = topologies.make("sensor-grid", sensors=25, radius=25)
    facts = {p: ts for p, ts in topo.facts().items() if p != "sensor"}
    facts["isTriggered"] = [(x,) for x in topo.seeds]
    rng = random.Random(5)
    later = rng.sample([x for x in range(25) if x not in topo.seeds], 10)
    net = Network(region, facts, annotation="absorption", contexts=contexts, seed=2)
    net.run()
    net.apply((1, "isTriggered", (x,)) for x in later).run()
    facts["isTriggered"] += [(x,) for x in later]
    want = psn.evaluate(region, facts)
    assert {p: net.relations()[p] for p in want} == want
    managers = {id(net.context_of(n).bdd): net.context_of(n).bdd for n in net.nodes}
    assert len(managers) == (1 if contexts == "process" else len(net.nodes))
    where = {seq: fact[1][0] for seq, fact in net.scheme._facts.items()
             if type(seq) is int and seq > 0}
    checked = 0
    for bdd in managers.values():
        levels = bdd.bdd.var_levels
        ids = [i for i in map(insertion_id, bdd._vars) if i is not None]
        by_level = sorted(ids, key=lambda i: levels[var_name(i)])
        placed = [i for i in by_level if i > 0]
        assert placed == sorted(placed, key=lambda i: (node_key(where[i]), i))
        assert by_level == placed + sorted(i for i in ids if i < 0)
        checked += len(placed) > 1
    assert checked


def test_unknown_contexts_policy_is_an_input_error():
    with pytest.raises(ndlog.errors.InputError, match="contexts policy 'machine'"):
        Network(REACH, annotation="absorption", contexts="machine")


@pytest.mark.parametrize("seed", range(3))
def test_dead_names_are_the_zeroed_variables_in_the_support(seed):
    """ship_dead_names: a known single derivation compares ids, few zeroed variables are
    tested one by one, many go through CUDD's support; all three give support ∩ zeroed."""
    rng = random.Random(seed)
    scheme = AbsorptionScheme(reorder=False)
    shared = scheme.shared_context()
    pool = [var_name(i) for i in range(60)]
    for many in (False, True):
        ctx = scheme.context("n", shared)
        # some zeroed variables among those the formulas use, so both answers occur
        ctx.add_zeroed(rng.sample(pool[:12], 2) + rng.sample(pool[12:], 38 if many else 1))
        seen = set()
        for _ in range(40):
            sets = [rng.sample(pool[:12], rng.randint(1, 4)) for _ in range(rng.randint(1, 3))]
            f = shared.from_sets(sets)
            shared.cube_ids(f)                    # a single derivation becomes known
            want = frozenset(v for v in shared.bdd.support(f) if v in ctx.zeroed)
            assert scheme.ship_dead_names(ctx, f) == want
            seen.add(bool(want))
        assert seen == {True, False}


@pytest.mark.parametrize("seed", range(6))
def test_cubes_and_their_bdds_agree_in_every_operation(seed):
    """A single derivation kept as a Cube (sorted insertion ids) behaves exactly as its
    BDD: join, combine, pick (absorbed or not, against a cube or a BDD), zeroing, wire
    form and its bytes, minimal sets; a received chain of x-variables is a cube again."""
    scheme = AbsorptionScheme()
    shared = scheme.shared_context()
    ctx = scheme.context("n", shared)
    bdd = shared
    rng = random.Random(seed)
    for _ in range(40):
        a = tuple(sorted(rng.sample(range(8), rng.randint(1, 4))))
        b = tuple(sorted(rng.sample(range(8), rng.randint(1, 4))))
        fa, fb = scheme.function(ctx, a), scheme.function(ctx, b)
        assert scheme.join(ctx, a, b) == tuple(sorted(set(a) | set(b)))
        assert scheme.function(ctx, scheme.join(ctx, a, b)) == fa & fb
        assert scheme.function(ctx, scheme.combine(ctx, a, b)) == fa | fb
        assert scheme.equal(ctx, a, fa) and scheme.equal(ctx, fa, a)
        # pick of a cube against a stored cube and against the same stored BDD
        for stored in (b, fb, fb | bdd.var(var_name(9))):
            new, fired = scheme.pick(ctx, ("r", (1,)), stored, 1, a)
            absorbed = fa <= scheme.function(ctx, stored)
            assert (fired is NO_FIRE) == absorbed
            assert scheme.function(ctx, new) == scheme.function(ctx, stored) | fa
        wire = scheme.serialize(ctx, a)
        theirs = shared.serialize(fa)                   # the BDD's own wire form
        assert sorted(wire[0]) == sorted(theirs[0]) and wire[1:] == theirs[1:]
        assert len(msgpack.packb(wire)) == len(msgpack.packb(theirs))
        other = scheme.context("m", scheme.shared_context())
        assert scheme.deserialize(other, msgpack.unpackb(msgpack.packb(wire),
                                                          use_list=False)) == a
        assert scheme.minimal_sets(ctx, a) == shared.minimal_sop(fa)
    dead = scheme.context("d", shared)
    dead.add_zeroed([var_name(3)])
    assert scheme.ship_restrict(dead, (1, 3)) is None
    assert scheme.ship_restrict(dead, (1, 2)) == (1, 2)
    assert scheme.is_zero(dead, scheme.deserialize(dead, scheme.serialize(ctx, (1, 3))))
    assert scheme.ship_dead_names(dead, (1, 3, 5)) == {var_name(3)}


def test_a_malformed_chain_is_still_a_wire_error():
    """A wire form that looks like a chain but names a bool or a float is not read as a
    cube: the BDD reader rejects it with a WireError naming the problem. (A negative id
    is a variable a node made, an aggregate result's: read as a cube.)"""
    from provenance.bdd import WireError
    scheme = AbsorptionScheme()
    ctx = scheme.context("n", scheme.shared_context())
    assert scheme.deserialize(ctx, [[2, -5], [0, 1, 0, 1, 1, 2], 4]) == (-5, 2)
    for names in ([1.5], [True], [2, False]):
        n = len(names)
        chain = [x for j in range(1, n + 1) for x in (j - 1, 1, (j - 1) << 1)]
        with pytest.raises(WireError):
            scheme.deserialize(ctx, [names, chain, n << 1])
