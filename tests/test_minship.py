"""MinShip (Liu et al. ICDE 2009, Sec. 5) in the PSN engine, with absorption provenance.

* reorder property tests: seeded schedules of insertion bursts, deletions, links deleted and
  re-inserted, overlapping or not, under every delivery order, with lazy and with eager
  shipping; the final relations equal ``psn.evaluate`` on the live links. Eager: every
  provenance equals PosBool over the live insertions. Lazy: every stored provenance is
  sound (each of its derivations is a PosBool derivation), and no stored fact at any node
  keeps a deleted link's variable. The number of schedules run is counted
  (:data:`SCHEDULES`) and checked by the last test of the module;
* deletions between nodes travel as node-wide zeroings, at most one per message and last;
  one node-wide zeroing at one node, including one that overtakes an insertion;
* exactness of eager shipping on seeded random graphs;
* lazy shipping ships no more tuples than set semantics (30-node graph, insertions only);
* Liu Fig. 2 with MinShip: deleting link(C,B) is bounded by the facts that shipped p4;
* MinShip per worker (``minship_at="worker"``, Liu Sec. 3: a query processor is the proxy
  of the nodes it hosts): the same reorder property tests on reachability planned as Liu
  Fig. 4 (the join at the link's destination ships ``reachable`` itself, so that nodes of
  one worker ship the same facts); the same run as per node when every node is its own
  worker; fewer tuples shipped when the nodes share a worker; errors naming the fix.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import psn
from graphs import random_links
from engine import Network
from engine.minship import MinShip, Record, parse_ship, stage_of
from engine.node import EVERY_FACT
from ndlog.errors import InputError
from engine.transport import Placement
from provenance import get_scheme
from provenance import absorption
from provenance.absorption import AbsorptionScheme, Zeroing
from provenance.base import SHIP_ABSORBED, SHIP_BUFFER, SHIP_NOW
from provenance.bdd import var_name
from test_liu_engine import FIG2, STEP4, Ledger, provenance_of

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REACH = psn.load(EXAMPLES / "reachable.ndl")
#: Reachability as Liu Fig. 4 plans it: ``reachable(@S, D)`` computed at the link's
#: destination and shipped as it is.
REACH_LIU = psn.load(EXAMPLES / "reachable_liu.ndl")

#: Schedules run by the property tests of this module (checked at the end).
SCHEDULES = {"count": 0}
PER_CASE = 250          # 6 cases (2 modes x 3 orders) x 250 schedules
PER_WORKER_CASE = 80    # the same 6 cases with MinShip per worker


def _links(rng: random.Random) -> list:
    n = rng.randint(6, 10)
    return [(a, b) for a, b, _ in random_links(n, rng.randint(n, 2 * n), rng)]


def _schedule(rng: random.Random, net: Network, ledger: Ledger, links: list) -> None:
    """Insert ``links``; then 1-3 bursts that delete links, re-insert some of them in the same
    burst (a deletion followed by its re-insertion), and occasionally delete a link before it
    was ever inserted in the burst that inserts it (the deletion overtakes its insertion);
    bursts overlap or run to quiescence."""
    live = list(links)
    for t in links:
        ledger.insert(t)
    net.apply([(1, "link", t) for t in links])
    if rng.random() < 0.5:
        net.run()
    for _ in range(rng.randint(1, 3)):
        burst = []
        for t in rng.sample(live, min(len(live), rng.randint(1, 3))):
            burst.append((-1, "link", t))
            ledger.delete(t)
            live.remove(t)
            if rng.random() < 0.5:
                burst.append((1, "link", t))
                ledger.insert(t)
                live.append(t)
        if rng.random() < 0.2:                       # a fresh link, deleted before inserted
            a, b = rng.sample(sorted({x for t in links for x in t}), 2)
            if (a, b) not in live:
                burst += [(-1, "link", (a, b)), (1, "link", (a, b)), (1, "link", (a, b))]
                ledger.insert((a, b))
                ledger.delete((a, b))
                ledger.insert((a, b))
                live.append((a, b))
        net.apply(burst)
        if rng.random() < 0.5:
            net.run()
    net.run()


def _sound(got: dict, expected: dict) -> bool:
    """Every derivation of every stored provenance contains a PosBool derivation."""
    if set(got) != set(expected):
        return False
    return all(any(e <= s for e in expected[t]) for t, sets in got.items() for s in sets)


def _support(net: Network, nid, f) -> set:
    """The variables of a stored provenance (a single derivation or a BDD)."""
    ctx = net.context_of(nid)
    return ctx.bdd.support(net.scheme.function(ctx, f))


def _dead_in_store(net: Network, dead: set) -> list:
    """Stored facts, at any node and of any predicate, whose provenance still has a
    deleted link's variable (a zeroing reaches every fact that holds it)."""
    bad = []
    for nid in net.nodes:
        for pred, rows in net.node_state(nid).items():
            bad += [(nid, pred, t) for t, f in rows.items() if _support(net, nid, f) & dead]
    return bad


def _check(seed: int, ship: str, delivery: str, at: str = "node") -> None:
    rng = random.Random(f"{seed}/{ship}/{delivery}/{at}")
    links = _links(rng)
    ledger = Ledger()
    # all nodes in one worker (3 seeds in 4), or one worker per node, with one CUDD manager
    # per worker (updates then cross managers in their wire form) or one for the process;
    # per worker: one worker, or 2-3 workers by hash
    placement = Placement.single() if seed % 4 else None
    program = REACH
    if at == "worker":          # nodes of one worker ship the same facts in Liu's plan
        program = REACH_LIU
        placement = Placement.single() if seed % 3 == 0 else Placement(2 + seed % 2)
    net = Network(program, options=psn.RunOptions(minship_at=at),
                  annotation=AbsorptionScheme(reorder=False), ship=ship,
                  delivery=delivery, seed=seed, batch=seed % 3 != 0, roundtrip=seed % 5 == 0,
                  placement=placement, contexts="worker" if seed % 8 == 0 else "process")
    _schedule(rng, net, ledger, links)
    SCHEDULES["count"] += 1
    live = sorted(ledger.live)
    assert net.relations()["reachable"] == \
        psn.evaluate(REACH, {"link": live})["reachable"], (seed, ship, delivery)
    got, expected = provenance_of(net), ledger.expected()
    assert not _dead_in_store(net, ledger.dead), (seed, ship, delivery)
    if ship.startswith("eager"):
        assert got == expected, (seed, ship, delivery)
    else:
        assert _sound(got, expected), (seed, ship, delivery)


@pytest.mark.parametrize("delivery", ["random", "adversarial", "fifo"])
@pytest.mark.parametrize("ship", ["lazy", "eager"])
def test_any_delivery_order_gives_the_reference_relations(ship, delivery):
    for seed in range(PER_CASE):
        _check(seed, ship if seed % 4 else ship.replace("eager", "eager:1"), delivery)


@pytest.mark.parametrize("delivery", ["random", "adversarial", "fifo"])
@pytest.mark.parametrize("ship", ["lazy", "eager"])
def test_minship_at_worker_any_delivery_order(ship, delivery):
    """One MinShip stage per worker, shared by its nodes: exact relations, eager provenance
    equal to PosBool, lazy provenance sound, no deleted variable left anywhere."""
    for seed in range(PER_WORKER_CASE):
        _check(seed, ship if seed % 4 else ship.replace("eager", "eager:1"), delivery,
               at="worker")


@pytest.mark.parametrize("at", ["node", "worker"])
def test_lazy_minship_ships_the_derivation_its_sender_keeps(at):
    """Liu Fig. 4's plan, seed 7, adversarial order, 3 workers: a node shipped
    reachable(2,3) with a derivation through a cycle, then its store absorbed it into a
    shorter one. Lazy MinShip must ship the shorter one (at once when it comes, and when
    choosing the alternative to ship before a deletion): the node would never forward the
    deletion of the cycle's links, and another node's zeroing of them would drop the fact
    at its receiver while the live alternative stayed buffered (reachable(2,3) and (3,3)
    were missing)."""
    rng = random.Random("7/lazy/adversarial/worker")
    links = _links(rng)
    ledger = Ledger()
    net = Network(REACH_LIU, options=psn.RunOptions(minship_at=at),
                  annotation=AbsorptionScheme(reorder=False), ship="lazy",
                  delivery="adversarial", seed=7, placement=Placement(3))
    _schedule(rng, net, ledger, links)
    assert net.relations()["reachable"] == \
        psn.evaluate(REACH, {"link": sorted(ledger.live)})["reachable"]


def test_minship_at_worker_is_per_node_with_one_node_per_worker():
    rng = random.Random(5)
    links = [(a, b) for a, b, _ in random_links(12, 30, rng)]
    runs = [Network(REACH_LIU, {"link": links}, options=psn.RunOptions(minship_at=at),
                    seed=2).run() for at in ("node", "worker")]
    assert runs[0].relations() == runs[1].relations()
    for k in ("tuples_sent", "bytes_sent", "messages_sent"):
        assert runs[0].metrics[k] == runs[1].metrics[k], k


@pytest.mark.parametrize("ship", ["lazy", "eager"])
def test_minship_at_worker_buffers_what_the_nodes_of_a_worker_ship(ship):
    """Nodes of one worker share one stage: a fact two of them derive towards a node is
    shipped once (lazy) and the rest buffered, so fewer bytes cross workers than with a
    stage per node; the relations are the reference's, before and after deletions."""
    rng = random.Random(11)
    n = 16 if ship == "lazy" else 7          # eager ships every simple path
    links = [(a, b) for a, b, _ in random_links(n, 3 * n, rng)]
    gone = rng.sample(links, 5)
    live = [t for t in links if t not in gone]
    runs = {}
    for at in ("node", "worker"):
        net = Network(REACH_LIU, {"link": links}, ship=ship, seed=3,
                      options=psn.RunOptions(minship_at=at, workers=3)).run()
        assert net.relations()["reachable"] == \
            psn.evaluate(REACH, {"link": links})["reachable"]
        inserted = net.metrics["worker_bytes_sent"]
        for t in gone:
            net.delete("link", t).run()
        assert net.relations()["reachable"] == \
            psn.evaluate(REACH, {"link": live})["reachable"]
        runs[at] = (net, inserted)
    net, inserted = runs["worker"]
    stages = {w: {id(stage_of(net.node(n))) for n in net.nodes if net.worker_of(n) == w}
              for w in {net.worker_of(n) for n in net.nodes}}
    assert all(len(ids) == 1 for ids in stages.values()) and len(stages) >= 2
    if ship == "lazy":          # eager ships every derivation either way
        assert inserted < runs["node"][1]


def test_minship_at_needs_minship():
    with pytest.raises(InputError, match="minship-at"):
        psn.RunOptions(minship_at="router")
    with pytest.raises(InputError, match="--minship-at worker") as err:
        Network(REACH_LIU, {"link": [(1, 2)]}, ship="off",
                options=psn.RunOptions(minship_at="worker"))
    assert "--ship lazy" in err.value.hint
    with pytest.raises(InputError, match="--minship-at worker"):
        Network(REACH_LIU, annotation="set", options=psn.RunOptions(minship_at="worker"))


@pytest.mark.parametrize("seed", range(8))
def test_eager_provenance_equals_posbool(seed):
    rng = random.Random(seed)
    links = _links(rng)
    ledger = Ledger()
    for t in links:
        ledger.insert(t)
    for ship in ("eager", "eager:1", "eager:3"):
        net = Network(REACH, {"link": links}, annotation=AbsorptionScheme(), ship=ship,
                      delivery="random", seed=seed).run()
        assert provenance_of(net) == ledger.expected(), (seed, ship)


def test_lazy_ships_no_more_tuples_than_set_semantics():
    rng = random.Random(30)
    links = [(a, b) for a, b, _ in random_links(30, 90, rng)]
    runs = {}
    for name, ann in (("set", "set"), ("lazy", "absorption")):
        net = Network(REACH, {"link": links}, annotation=ann, delivery="random", seed=3).run()
        runs[name] = net
    assert runs["lazy"].relations() == runs["set"].relations()
    assert runs["lazy"].scheme.default_ship == "lazy"
    assert 0 < runs["lazy"].metrics["tuples_sent"] <= runs["set"].metrics["tuples_sent"]


@pytest.mark.parametrize("ship", ["lazy", "eager"])
@pytest.mark.parametrize("delivery", ["fifo", "random", "adversarial"])
def test_fig2_deleting_link_c_b(ship, delivery):
    net = Network(REACH, {"link": FIG2}, annotation=AbsorptionScheme(), ship=ship,
                  delivery=delivery, seed=1).run()
    if ship == "eager":
        assert provenance_of(net) == {t: frozenset(frozenset(f"x{i}" for i in s)
                                                   for s in sop) for t, sop in STEP4.items()}
    before = net.metrics["tuples_sent"]
    mentioned = sum(1 for nid in net.nodes for rows in net.node_state(nid).values()
                    for f in rows.values() if "x4" in _support(net, nid, f))
    net.delete("link", ("C", "B")).run()
    assert net.relations()["reachable"] == set(STEP4)
    sent = net.metrics["tuples_sent"] - before
    assert sent <= mentioned + 1 < before        # the base deletion plus at most one each
    for t, sets in provenance_of(net).items():
        assert all("x4" not in s for s in sets), t


@pytest.mark.parametrize("ship", ["lazy", "eager"])
def test_records_are_compact(ship):
    """A record with nothing buffered is its shipped provenance alone; a Record object
    only where H differs from S; no empty table is left once deletions forget records;
    record() reads (S, H) either way; lazy keeps no list of records with a buffer."""
    rng = random.Random(11)
    nodes, edges = (14, 40) if ship == "lazy" else (8, 16)     # eager grows fast
    links = [(a, b) for a, b, _ in random_links(nodes, edges, rng)]
    net = Network(REACH, {"link": links}, annotation=AbsorptionScheme(), ship=ship,
                  delivery="random", seed=2).run()
    for lk in links[:6]:
        net.delete("link", lk).run()
    assert net.relations() == psn.evaluate(REACH, {"link": links[6:]})
    bare = objects = 0
    for nid, node in net.nodes.items():
        stage = stage_of(node)
        for (dst, pred), table in stage.records.items():
            assert table, (nid, dst, pred)
            for tup, rec in table.items():
                s, h = stage.record(dst, pred, tup)
                if type(rec) is Record:
                    objects += 1
                    assert (s, h) == (rec.s, rec.h) and h is not s
                else:
                    bare += 1
                    assert s is rec and h is rec
        assert ship == "eager" or not stage.dirty     # only eager's flush reads it
    assert bare > objects > 0 if ship == "lazy" else bare > 0


def test_lazy_sends_the_alternative_before_the_deletion():
    """a->b->c and a->d->c: node a ships reachable(a,c)'s first derivation only; deleting
    the link it used makes a send the buffered alternative, then the deletion, in one
    batch."""
    links = [("a", "b"), ("b", "c"), ("a", "d"), ("d", "c"), ("x", "a")]
    net = Network(REACH, {"link": links}, annotation=AbsorptionScheme(), ship="lazy",
                  delivery="fifo").run()
    stage = next(s for s in net.node("a").send_stages if isinstance(s, MinShip))
    assert stage.buffered + stage.absorbed >= 1
    stored = net.node_state("x")["reachable"][("x", "c")]
    first = net.scheme.explain(net.context_of("x"), stored)
    assert first.count("∨") == 0                   # x holds one derivation of x->c
    assert net.why("reachable", ("x", "c")).count("∨") == 1    # the other is buffered
    used = "b" if 'link(@"a","b")' in first or "link(@a,b)" in first else "d"
    net.delete("link", ("a", used)).run()
    assert ("x", "c") in net.relations()["reachable"]
    assert "link(@a," + ("d" if used == "b" else "b") + ")" in \
        net.why("reachable", ("x", "c")).replace('"', "").replace(" ", "")


def test_deletions_only_reach_nodes_that_were_shipped_the_variable():
    """A link that no derivation towards a node used causes no message to that node."""
    links = [("a", "b"), ("b", "c"), ("c", "d"), ("e", "f")]
    net = Network(REACH, {"link": links}, annotation="absorption", delivery="fifo").run()
    before = dict(net.metrics["nodes"])
    net.delete("link", ("e", "f")).run()
    after = net.metrics["nodes"]
    for nid in ("a", "b", "c", "d"):
        assert after[nid]["updates_received"] == before[nid]["updates_received"], nid


@pytest.mark.parametrize("seed", range(3))
def test_minship_filters_deletions_so_the_lost_part_is_not_computed(seed):
    """Under MinShip every node context is attached (ship_attach) and derived deletions skip
    the lost-part filter; MinShip's own per-destination filter sends exactly the tuples the
    same run sends when the lost part is computed and checked."""
    rng = random.Random(seed)
    links = [(a, b) for a, b, _ in random_links(9, 20, rng)]
    gone = rng.sample(links, 4)

    class Unattached(AbsorptionScheme):
        def ship_attach(self, ctx):
            pass

    runs = []
    for scheme in (AbsorptionScheme(reorder=False), Unattached(reorder=False)):
        net = Network(REACH, {"link": links}, annotation=scheme, ship="lazy",
                      delivery="random", seed=seed).run()
        assert all(net.context_of(n).minship == (type(scheme) is AbsorptionScheme)
                   for n in net.nodes)
        for t in gone:
            net.delete("link", t).run()
        runs.append(net)
    attached, unattached = runs
    assert attached.relations() == unattached.relations()
    assert attached.metrics["tuples_sent"] == unattached.metrics["tuples_sent"]
    live = [t for t in links if t not in gone]
    assert attached.relations()["reachable"] == \
        psn.evaluate(REACH, {"link": live})["reachable"]
    bare = Network(REACH, {"link": links}, annotation=AbsorptionScheme(), ship="off").run()
    assert not any(bare.context_of(n).minship for n in bare.nodes)


@pytest.mark.parametrize("seed", range(3))
def test_remote_deletions_are_one_node_wide_zeroing_per_message(seed):
    """Between nodes MinShip sends no per-fact deletion: each message carries at most one
    node-wide zeroing (after its alternatives), addressed to its destination and naming
    deleted variables only; every node ends up clean of them."""
    rng = random.Random(seed)
    links = [(a, b) for a, b, _ in random_links(20, 60, rng)]
    net = Network(REACH, {"link": links}, annotation="absorption", delivery="random",
                  seed=seed).run()
    sent = []
    send = net.transport.send
    net.transport.send = lambda src, dst, ups: (sent.append((src, dst, list(ups))),
                                                send(src, dst, ups))[1]
    ledger_dead = set()
    for t in rng.sample(links, 5):
        ledger_dead.add(var_name(links.index(t) + 1))
        net.delete("link", t).run()
    remote = [(src, dst, ups) for src, dst, ups in sent if src is not None and src != dst]
    zeroings = [(dst, u) for _, dst, ups in remote for u in ups if u[0] < 0]
    assert zeroings, "the deletions shipped nothing"
    for src, dst, ups in remote:
        dels = [i for i, u in enumerate(ups) if u[0] < 0]
        assert len(dels) <= 1 and (not dels or dels[0] == len(ups) - 1), (src, dst, ups)
    for dst, (_, pred, tup, ann) in zeroings:
        assert pred == EVERY_FACT and tup == (dst,)
        assert isinstance(ann, Zeroing) and ann.names <= ledger_dead
    live = [t for t in links if var_name(links.index(t) + 1) not in ledger_dead]
    assert net.relations()["reachable"] == \
        psn.evaluate(REACH, {"link": live})["reachable"]
    assert not _dead_in_store(net, ledger_dead)


@pytest.mark.parametrize("scans", [0, absorption.SCANS_BEFORE_INDEX])
def test_node_wide_zeroing_at_one_node(scans, monkeypatch):
    """A node-wide zeroing zeroes exactly the facts whose provenance holds its variables,
    found by an index (``scans=0``) or by a scan (single derivations and BDDs mixed in one
    relation); a zeroing that overtakes an insertion restricts the insertion when it comes;
    a second zeroing of the same variable finds nothing to search."""
    monkeypatch.setattr(absorption, "SCANS_BEFORE_INDEX", scans)
    scheme = AbsorptionScheme(reorder=False)
    net = Network(REACH, annotation=scheme, ship="lazy")
    node = net.node("a")
    ctx = node.ctx
    x1, x2, x3 = (ctx.bdd.var(var_name(i)) for i in (1, 2, 3))
    node.receive((1, "reachable", ("a", "b"), x1 & x2))
    node.receive((1, "reachable", ("a", "c"), x3))
    node.receive((1, "reachable", ("a", "d"), (x1 & x3) | x2))
    node.receive((1, "reachable", ("a", "f"), (1, 3)))       # a single derivation
    node.receive((1, "reachable", ("a", "g"), (2, 3)))
    node.step()
    node.receive((-1, EVERY_FACT, ("a",), Zeroing(frozenset({var_name(1)}))))
    node.receive((1, "reachable", ("a", "e"), x1))          # overtaken by the zeroing
    node.step()
    state = node.relation("reachable")
    assert set(state) == {("a", "c"), ("a", "d"), ("a", "g")}
    assert state[("a", "c")] == x3 and state[("a", "d")] == x2
    # five insertions, the zeroing, the deletions it picks for (a,b), (a,d) and (a,f),
    # then (a,e)
    assert node.metrics.updates_processed == 10
    assert (ctx.holders is None) == (scans > 0) and ctx.swept == {var_name(1)}
    assert ctx.formulas == {"reachable"}        # BDDs were stored there
    node.receive((-1, EVERY_FACT, ("a",), Zeroing(frozenset({var_name(1)}))))
    node.step()
    assert node.metrics.updates_processed == 11 and node.relation("reachable") == state
    assert ctx.scans == (1 if scans else 0)


@pytest.mark.parametrize("seed", range(3))
def test_node_wide_zeroing_scan_and_index_agree(seed, monkeypatch):
    """Scanning a node's facts for a node-wide zeroing and looking them up in an index
    find the same facts, zeroing by zeroing, over 8 deletions one at a time (random
    delivery): the index may also name facts that no longer hold the variables (or are
    gone), whose deletions change nothing, so the scan's are a subset of the index's and
    the same tuples are shipped; after each deletion the relation equals the recomputed
    one. (The two give the facts in different orders, which changes which derivation lazy
    MinShip ships first; so that the runs stay comparable, the facts are picked in one
    sorted order here.)"""
    rng = random.Random(seed)
    links = [(a, b) for a, b, _ in random_links(12, 40, rng)]
    gone = rng.sample(links, 8)
    scan = absorption.AbsorptionScheme.zero_everywhere
    runs = {}
    for scans in (0, 1, 100):
        monkeypatch.setattr(absorption, "SCANS_BEFORE_INDEX", scans)
        found: list = []

        def sorted_scan(self, ctx, ann, facts, found=found):
            out = sorted(scan(self, ctx, ann, facts), key=repr)
            found.append((ctx.node, out))
            return out

        monkeypatch.setattr(absorption.AbsorptionScheme, "zero_everywhere", sorted_scan)
        net = Network(REACH, {"link": links}, annotation="absorption", delivery="random",
                      seed=seed).run()
        live = list(links)
        for t in gone:
            net.delete("link", t).run()
            live.remove(t)
            assert net.relations()["reachable"] == \
                psn.evaluate(REACH, {"link": live})["reachable"]
        runs[scans] = (found, net.metrics["tuples_sent"])
        indexed = [n for n in net.nodes if net.context_of(n).holders is not None]
        assert bool(indexed) == (scans < 100)
    (index, sent), (mixed, sent_mixed), (scanned, sent_scanned) = runs.values()
    assert sent == sent_mixed == sent_scanned
    assert [n for n, _ in index] == [n for n, _ in mixed] == [n for n, _ in scanned]
    assert any(found for _, found in scanned)
    for (_, by_index), (_, by_mixed), (_, by_scan) in zip(index, mixed, scanned):
        assert set(by_scan) <= set(by_mixed) <= set(by_index)


def test_holders_drop_their_repeats_in_order():
    """Once as many entries were appended to a node's index of facts by variable as it held
    after its last sweep, every list drops its repeats, keeping first occurrences in order;
    a fact filed again and again does not grow the index."""
    from collections import defaultdict
    from provenance.absorption import HELD_SWEEP_AT, AbsorptionContext, _hold
    from provenance.bdd import BDDContext
    ctx = AbsorptionContext(BDDContext(), "a")
    ctx.holders = defaultdict(list)
    facts = [("reachable", ("a", f"n{k}")) for k in range(5)]
    for r in range(10 * HELD_SWEEP_AT):
        _hold(ctx, facts[r % 5], (1, 2))
        assert len(ctx.holders[1]) <= HELD_SWEEP_AT // 2 + 5
    for i in (1, 2):
        assert ctx.holders[i][:5] == facts
    many = [("reachable", ("a", f"m{k}")) for k in range(3 * HELD_SWEEP_AT)]
    for f in many + many:
        _hold(ctx, f, (3,))
    assert list(dict.fromkeys(ctx.holders[3])) == many
    assert len(ctx.holders[3]) < 2 * len(many)
    assert ctx.holders[1] == facts and ctx.holders[2] == facts


def test_holders_stay_bounded_under_churn(monkeypatch):
    """One link flapped 40 times on a ring: each re-insertion derives facts again under
    the variables of the links that stay, and files them again in the index of facts by
    variable; the index stays within twice the distinct (variable, fact) pairs filed (or
    the first sweep's size), and the relation stays the recomputed one."""
    monkeypatch.setattr(absorption, "SCANS_BEFORE_INDEX", 0)
    monkeypatch.setattr(absorption, "HELD_SWEEP_AT", 64)
    ring = [(k, (k + 1) % 8) for k in range(8)] + [((k + 1) % 8, k) for k in range(8)]
    net = Network(REACH, {"link": ring}, annotation="absorption", delivery="random",
                  seed=3).run()
    for _ in range(40):
        net.delete("link", (0, 1)).run()
        net.insert("link", (0, 1)).run()
    assert net.relations()["reachable"] == psn.evaluate(REACH, {"link": ring})["reachable"]
    indexes = [net.context_of(n).holders for n in net.nodes
               if net.context_of(n).holders is not None]
    assert indexes
    for holders in indexes:
        entries = sum(map(len, holders.values()))
        distinct = sum(len(set(held)) for held in holders.values())
        assert entries <= max(64, 2 * distinct)


def test_the_index_forgets_the_variables_no_fact_holds(monkeypatch):
    """Shortest path on a ring, one link flapped 40 times: every flap changes aggregate
    results, each a new variable that the facts derived from it hold until it changes
    again. The index of facts by variable is swept against the node's present facts, so
    it files about as many variables and entries after 40 flaps as after 10 (before, a
    list per aggregate result stayed), and the relations stay the recomputed ones."""
    monkeypatch.setattr(absorption, "SCANS_BEFORE_INDEX", 0)
    monkeypatch.setattr(absorption, "HELD_SWEEP_AT", 64)
    sp = psn.load(EXAMPLES / "shortest_path.ndl")
    ring = [(k, (k + 1) % 6, 1) for k in range(6)] + [((k + 1) % 6, k, 1) for k in range(6)]
    net = Network(sp, {"link": ring}, annotation="absorption", delivery="random", seed=3,
                  aggsel="off").run()

    def index_size():
        indexes = [net.context_of(n).holders or {} for n in net.nodes]
        return (sum(map(len, indexes)),
                sum(len(held) for holders in indexes for held in holders.values()))

    sizes = []
    for flap in range(40):
        net.delete("link", (0, 1, 1)).run()
        net.insert("link", (0, 1, 1)).run()
        if flap in (9, 39):
            sizes.append(index_size())
    assert net.relations() == psn.evaluate(sp, {"link": ring}, aggsel=False)
    (keys10, entries10), (keys40, entries40) = sizes
    assert keys10 and keys40 <= 1.2 * keys10 and entries40 <= 1.2 * entries10


def test_deletion_overtaking_its_insertion_with_minship():
    for ship in ("lazy", "eager"):
        net = Network(REACH, annotation=AbsorptionScheme(), ship=ship, delivery="adversarial")
        net.apply(["-link(@a, b)", "+link(@a, b)", "+link(@b, c)", "+link(@a, b)"])
        net.run()
        assert net.relations()["reachable"] == {("a", "b"), ("b", "c"), ("a", "c")}


def test_parse_ship():
    assert parse_ship("lazy") == ("lazy", None, None)
    assert parse_ship("eager:7") == ("eager", 7, None)
    assert parse_ship("eager:1s") == ("eager", None, 1.0)
    assert parse_ship("eager:250ms").period == 0.25 and str(parse_ship("eager:2s")) == \
        "eager:2s"
    assert parse_ship("eager")[0] == "eager" and parse_ship("off") is None
    for bad in ("eager:0", "eager:x", "lazy:3", "fast"):
        with pytest.raises(InputError, match="--ship"):
            parse_ship(bad)
    assert get_scheme("absorption").default_ship == "lazy"


def test_zz_schedule_count():
    """Runs last in this module: the property tests ran their schedules."""
    if SCHEDULES["count"] == 0:
        pytest.skip("property tests deselected")
    assert SCHEDULES["count"] >= 6 * PER_CASE + 6 * PER_WORKER_CASE


@pytest.mark.parametrize("seed", range(4))
def test_buffer_of_alternatives_behaves_like_their_or(seed):
    """MinShip's buffer is a list of alternatives (ship_merge), not an OR: absorption of a
    single derivation, zeroing, one derivation and the value agree with the OR; a
    derivation absorbed by the OR but by no single alternative can only be a non-cube."""
    from provenance.absorption import Alternatives
    from provenance.bdd import var_name
    rng = random.Random(seed)
    scheme = AbsorptionScheme(reorder=False)
    ctx = scheme.context("n", scheme.shared_context())
    bdd = ctx.bdd
    pool = [var_name(i) for i in range(10)]

    def cube():
        return bdd.conj(bdd.var(v) for v in rng.sample(pool, rng.randint(1, 4)))

    for _ in range(60):
        have = cube()
        for _ in range(rng.randint(1, 5)):
            new = cube()
            if not scheme.ship_absorbs(ctx, have, new):
                have = scheme.ship_merge(ctx, have, new)
        value = scheme.ship_value(ctx, have)
        probe = cube()
        assert scheme.ship_absorbs(ctx, have, probe) == (probe <= value)
        dead = set(rng.sample(pool, 2))
        left = scheme.ship_restrict(ctx, have, dead)
        want = bdd.zero(value, dead)
        if left is None:
            assert bdd.is_false(want)
        else:
            assert scheme.ship_value(ctx, left) == want
            one = scheme.ship_one(ctx, left)
            assert frozenset(bdd.support(one)) in bdd.minimal_sop(
                scheme.ship_value(ctx, left[0] if type(left) is Alternatives else left))
            assert one <= want


@pytest.mark.parametrize("seed", range(4))
def test_a_buffer_of_single_derivations_keeps_one_list(seed):
    """A buffer keeps each alternative's insertion ids beside it; while every alternative
    is a tuple of ids (lazy MinShip's), the two lists are one, and an alternative that is a
    BDD splits them without losing an entry."""
    from provenance.absorption import Alternatives
    from provenance.bdd import var_name
    rng = random.Random(seed)
    scheme = AbsorptionScheme(reorder=False)
    ctx = scheme.context("n", scheme.shared_context())
    bdd = ctx.bdd
    for _ in range(40):
        alts = [tuple(sorted(rng.sample(range(8), rng.randint(1, 3))))
                for _ in range(rng.randint(2, 6))]
        if rng.random() < 0.5:                          # a formula somewhere in the list
            alts.insert(rng.randrange(len(alts) + 1),
                        bdd.var(var_name(rng.randrange(8))) | bdd.var(var_name(8)))
        have = alts[0]
        for a in alts[1:]:
            have = scheme.ship_merge(ctx, have, a)
        assert type(have) is Alternatives and have.fs == alts
        assert (have.ids is have.fs) == all(type(a) is tuple for a in alts)
        assert have.ids == [a if type(a) is tuple else bdd.cube_ids(a) for a in alts]
        left = scheme.ship_restrict(ctx, have, {var_name(rng.randrange(8))})
        if type(left) is Alternatives:
            assert (left.ids is left.fs) == all(type(a) is tuple for a in left.fs)


@pytest.mark.parametrize("seed", range(3))
def test_formula_absorbed_by_a_buffer_is_implied_by_an_alternative(seed):
    """A derivation that is not a single one (an OR, as eager MinShip ships) against a
    buffer of alternatives: absorbed iff it implies one alternative (tested variable by
    variable for single derivations), as CUDD's Leq says of each alternative's BDD."""
    from provenance.absorption import as_function
    from provenance.bdd import var_name
    rng = random.Random(seed)
    scheme = AbsorptionScheme(reorder=False)
    ctx = scheme.context("n", scheme.shared_context())
    bdd = ctx.bdd
    pool = [var_name(i) for i in range(8)]

    def cube():
        return bdd.conj(bdd.var(v) for v in rng.sample(pool, rng.randint(1, 3)))

    for _ in range(80):
        alts = [tuple(sorted(rng.sample(range(8), rng.randint(1, 3))))
                for _ in range(rng.randint(2, 5))]
        if rng.random() < 0.3:
            alts.append(cube() | cube())            # an alternative that is a formula
        have = alts[0]
        for a in alts[1:]:
            have = scheme.ship_merge(ctx, have, a)
        core = bdd.cube_function(rng.choice(alts[:-1])) if rng.random() < 0.5 else cube()
        new = core & (cube() | cube())              # often implies an alternative
        if bdd.cube_ids(new) is not None:
            continue
        want = any(new <= as_function(bdd, h) for h in have.fs)
        assert scheme.ship_absorbs(ctx, have, new) == want


@pytest.mark.parametrize("seed", range(4))
def test_ship_verdict_answers_as_the_two_absorption_tests(seed):
    """MinShip's one call per derivation (``ship_verdict``) answers as its two tests did:
    absorbed if ``H`` absorbs the new derivation, else (lazy only) shipped now if it
    absorbs ``S``, else buffered; for records with nothing buffered and with buffers of
    single derivations and BDDs, and a new derivation of either kind. A single
    derivation is absorbed exactly when it implies the OR of the buffer."""
    from provenance.absorption import as_function
    rng = random.Random(seed)
    scheme = AbsorptionScheme(reorder=False)
    ctx = scheme.context("n", scheme.shared_context())
    bdd = ctx.bdd

    def cube():
        return tuple(sorted(rng.sample(range(7), rng.randint(1, 4))))

    def derivation(single: float):
        if rng.random() < single:
            return cube()
        return bdd.cube_function(cube()) | bdd.cube_function(cube())

    seen = set()
    for _ in range(300):
        shipped = have = derivation(0.8)
        for _ in range(rng.choice([0, 0, 1, 3])):
            have = scheme.ship_merge(ctx, have, derivation(0.85))
        new = derivation(0.85)
        for lazy in (True, False):
            if scheme.ship_absorbs(ctx, have, new):
                want = SHIP_ABSORBED
            elif lazy and scheme.ship_absorbs(ctx, new, shipped):
                want = SHIP_NOW
            else:
                want = SHIP_BUFFER
            got = scheme.ship_verdict(ctx, shipped, have, new, lazy)
            assert got == want
            if type(new) is tuple:
                assert (got == SHIP_ABSORBED) == (
                    as_function(bdd, new) <= as_function(bdd, scheme.ship_value(ctx, have)))
            seen.add(got)
    assert seen == {SHIP_ABSORBED, SHIP_NOW, SHIP_BUFFER}


def _buffers(node) -> list:
    """The insertion ids of the alternatives buffered by each of ``node``'s MinShip
    records that has a buffer (lazy: single derivations, tuples of ids)."""
    return [rec.h.ids for table in stage_of(node).records.values() for rec in table.values()
            if type(rec) is Record and type(rec.h) is absorption.Alternatives]


def test_a_flapping_link_leaves_no_dead_alternative_buffered():
    """Each re-insertion of a link gives its derivations fresh variables. A buffered
    alternative through the link stayed in MinShip's record after the link's deletion
    when the shipped derivation did not depend on it, so the buffers grew by one per flap
    and every later derivation was tested against them all."""
    links = [(i, (i + 1) % 8) for i in range(8)] + [((i + 1) % 8, i) for i in range(8)]
    net = Network(REACH, {"link": links}, annotation="absorption", ship="lazy",
                  delivery="random", seed=3).run()
    for _ in range(30):
        net.delete("link", (0, 1)).run()
        net.insert("link", (0, 1)).run()
        for node in net.nodes.values():
            dead = net.context_of(node.id).zids
            for ids in _buffers(node):
                assert all(s is None or dead.isdisjoint(s) for s in ids), node.id
    assert net.relations() == psn.evaluate(REACH, {"link": links})
    assert max(len(ids) for node in net.nodes.values() for ids in _buffers(node)) <= 3


def test_zeroings_of_single_derivations_declare_no_bdd_variable():
    """Lazy MinShip keeps single derivations as tuples, so zeroing them is a set test. The
    conjunction of a node's zeroed variables (what zeroing a BDD takes) was extended at
    every zeroing, declaring each variable in the manager and rebuilding the cube: time
    and memory quadratic in the number of deletions. It is now built when a BDD needs it."""
    links = [(i, (i + 1) % 8) for i in range(8)]
    net = Network(REACH, {"link": links}, annotation="absorption", ship="lazy",
                  delivery="fifo").run()
    declared = net.context_of(0).bdd.num_vars
    for _ in range(20):
        net.delete("link", (3, 4)).run()
        net.insert("link", (3, 4)).run()
    assert len(net.context_of(0).zeroed) >= 20
    assert net.context_of(0).bdd.num_vars == declared
    assert net.relations() == psn.evaluate(REACH, {"link": links})


@pytest.mark.parametrize("seed", range(4))
def test_the_cube_of_zeroed_variables_zeroes_bdds(seed):
    """The zeroed variables' cube, brought up to date on demand, zeroes a BDD as zeroing
    each variable in turn does, however the zeroings and the demands interleave."""
    rng = random.Random(seed)
    ctx = AbsorptionScheme().context(None, AbsorptionScheme().shared_context())
    bdd = ctx.bdd
    names = [var_name(i) for i in range(12)]
    zeroed: list = []
    for _ in range(6):
        new = rng.sample(names, rng.randint(0, 3))
        ctx.add_zeroed(frozenset(new))
        zeroed += new
        f = bdd.from_sets([rng.sample(names, rng.randint(1, 4)) for _ in range(5)])
        want = f
        for v in set(zeroed):
            want = bdd.zero_all(want, bdd.var(v))
        assert ctx.restrict(f) == want
        assert ctx.zcube() == bdd.conj(bdd.var(v) for v in set(zeroed))


def test_a_derivation_through_an_absence_is_zeroed_by_a_name_test():
    """A single derivation holding an absence's variable is a BDD cube, not a tuple of
    insertion ids. Zeroing it went through CUDD with the cube of every variable the node
    had seen zeroed, a cost that grew with each deletion of a long run (it did for shortest
    path under link churn, while aggregate results were BDD variables too); it is now a
    test of its variables' names, and the node's cube is not built."""
    scheme = AbsorptionScheme()
    ctx = scheme.context("n", scheme.shared_context())
    bdd = ctx.bdd
    agg = scheme.absence(ctx, ("!q", ("n", "d")))
    f = bdd.and_all([bdd.cube_function((4, 7)), agg])
    assert bdd.known_cube(f) is None and bdd.cube_names(f) is not None
    ctx.add_zeroed(frozenset({var_name(5), "a_other"}))
    assert ctx.restrict(f) == f
    ctx.add_zeroed(bdd.support(agg))
    assert ctx.restrict(f) == bdd.false
    assert ctx._zpending                              # the cube was never needed
    g = bdd.and_all([bdd.cube_function((4,)), agg]) | bdd.cube_function((8,))
    assert bdd.cube_names(g) is None                  # a formula: CUDD, with the cube
    assert ctx.restrict(g) == bdd.cube_function((8,)) and not ctx._zpending


def test_a_derivation_through_an_aggregate_stays_a_tuple_of_ids():
    """An aggregate result's variable is a node-made id (negative), kept as a tuple like a
    base insertion's: a join with it is a union of ids, zeroing it is a set test, and no
    variable is declared in the manager (a declared variable is never freed, and the
    result changes at every better path of a long run)."""
    scheme = AbsorptionScheme()
    ctx = scheme.context("n", scheme.shared_context())
    scheme.ship_attach(ctx)                           # lazy MinShip sends its updates
    agg = scheme.aggregate(ctx, ("minCost", ("n", "d", 3)))
    (ident,) = agg
    assert ident < 0 and scheme.aggregate(ctx, ("minCost", ("n", "d", 3))) == agg
    other = scheme.aggregate(ctx, ("minCost", ("n", "e", 5)))
    assert other != agg                               # a fresh one for another result
    f = scheme.join(ctx, (4, 7), agg)
    assert f == (ident, 4, 7) and ctx.bdd.num_vars == 0
    assert scheme.describe(var_name(ident)) == "aggregate minCost(n,d,3)"
    stored, zeroing = scheme.pick(ctx, ("cheapestPath", ("n", "d")), f, -1, agg)
    assert stored is None and var_name(ident) in zeroing.names
    assert scheme.ship_restrict(ctx, scheme.join(ctx, (4,), agg)) is None
    assert scheme.ship_restrict(ctx, scheme.join(ctx, (4,), other)) == (other[0], 4)
    assert ctx.bdd.num_vars == 0
