"""PSN on Ray: real local Ray, 2-4 worker actors, results equal to the in-memory
engine, the simulator and the centralized reference ``psn.evaluate``; worker failures in the
middle of a run; traffic metrics gathered from the workers.

One Ray runtime and one pool of 4 actors serve the whole module (``ray_pool``); each test
runs its networks on the first 1-4 actors of that pool. Inputs are seeded random graphs and
``topologies`` graphs; expected results always come from an independent evaluator.
"""

from __future__ import annotations

import json
import os
import random
import re
import time

import pytest

import psn
import topologies
from provenance import get_scheme, scheme_names
from engine import Network, RunOptions
from engine.guards import AnnotationBudgetError
from engine.network import NotConvergedError
from ndlog.errors import EvaluationError, InputError

import ray
import sim
from engine.placement import Placement, stable_hash
from psn.cli import main
from psn.distributed import RayNetwork, WorkerPool, start_ray

pytestmark = pytest.mark.ray

PROGRAMS = "tests/programs"
REACH = psn.load("examples/reachable.ndl")
SHORTEST = psn.load(f"{PROGRAMS}/shortest_path/program.ndl")
REGION = psn.load(f"{PROGRAMS}/region/program.ndl")
THREE = psn.load(f"{PROGRAMS}/three_location/program.ndl")
TWO_HOP = psn.parse("""
h1 twoHop(@S, D) :- link(@S, Z), link(@Z, D), S != D.
h2 hopCount(@S, count<D>) :- twoHop(@S, D).
""")


@pytest.fixture(scope="module")
def ray_pool():
    start_ray()
    pool = WorkerPool(4)
    yield pool
    pool.close()
    # Ray itself is left running for other modules of the session and stops at exit


def _directed(n: int, m: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    out: set[tuple] = set()
    while len(out) < m:
        out.add(tuple(rng.sample(range(n), 2)))
    return sorted(out)


def _reference(program, facts) -> dict[str, set[tuple]]:
    return psn.evaluate(program, facts, aggsel=False)


def _assert_same(got: dict, want: dict, skip=()) -> None:
    for name in want:
        if name in skip:
            continue
        assert got.get(name, set()) == want[name], name


def _in_memory(program, bursts, annotation, seed=1) -> Network:
    net = Network(program, annotation=annotation, delivery="random", seed=seed)
    for burst in bursts:
        net.apply(burst).run()
    return net


def _run_bursts(net, bursts, program) -> None:
    """Run each burst to quiescence and compare with psn.evaluate on the base facts."""
    for burst in bursts:
        net.apply(burst).run()
        _assert_same(net.relations(), _reference(program, net.base_facts()))


def _insert(facts: dict) -> list:
    return [(1, p, t) for p, rows in facts.items() for t in rows]


# -- the reference programs, insert-only, set semantics ----------------------------------

def _region_facts():
    topo = topologies.make("sensor-grid", sensors=20, size=50.0, radius=10.0, seeds=3)
    facts = {p: ts for p, ts in topo.facts().items() if p in REGION.predicates}
    rng = random.Random(5)
    facts["isTriggered"] = [(x,) for x in range(topo.n) if rng.random() < 0.7]
    return facts


# Programs with head aggregates emit deletions of superseded results, which set semantics
# cannot order (it is the insert-only baseline): they run with derivation sets, on inputs
# small enough for that exact scheme.
CASES = {
    "reachable-random50": (REACH, "set", lambda: {"link": _directed(50, 90, 1)}),
    "two-hop-count-random40": (TWO_HOP, "derivation",
                               lambda: {"link": _directed(40, 80, 2)}),
    "three-location-random30": (THREE, "set", lambda: {
        "link": _directed(30, 60, 3), "owns": [(i, f"r{i % 4}") for i in range(0, 30, 3)]}),
    "shortest-path-ring20": (SHORTEST, "derivation",
                             lambda: topologies.make("ring", n=20).facts(3, cost="hops")),
    "region-sensors20": (REGION, "derivation", _region_facts),
}


@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_reference_programs(ray_pool, case, workers):
    program, annotation, make = CASES[case]
    facts = make()
    with RayNetwork(program, facts, annotation=annotation, pool=ray_pool,
                    workers=workers) as net:
        got = net.run().relations()
    want = _reference(program, facts)
    _assert_same(got, want)
    mem = _in_memory(program, [_insert(facts)], annotation).relations()
    assert got == mem


def test_gtitm_100_nodes_on_four_workers(ray_pool):
    facts = topologies.make("gtitm").facts(2)
    net = RayNetwork(REACH, facts, annotation="set", pool=ray_pool, workers=4).run()
    got = net.relations()
    assert got["reachable"] == _reference(REACH, facts)["reachable"]
    m = net.metrics
    assert m["nodes_count"] == 100
    assert set(m["workers"]) == {0, 1, 2, 3}
    assert m["worker_messages_sent"] > 0


# -- every annotation scheme, with insertions and deletions ------------------------------

def _scheme_bursts(annotation: str, seed: int):
    """Bursts for a scheme: deletions only where the scheme supports them (``set`` is
    insert-only); small graphs for the provenance schemes (``derivation`` is exponential on
    dense graphs, ``absorption`` ships BDDs)."""
    small = annotation != "set"
    links = _directed(20, 28, seed) if small else _directed(40, 80, seed)
    rng = random.Random(seed)
    first, later = links[: len(links) * 2 // 3], links[len(links) * 2 // 3:]
    bursts = [_insert({"link": first}), _insert({"link": later})]
    if get_scheme(annotation).exact_deletions:
        gone = rng.sample(links, 6)
        bursts.append([(-1, "link", t) for t in gone])
        bursts.append([(1, "link", t) for t in gone[:3]] +
                      [(-1, "link", t) for t in rng.sample(sorted(set(links) - set(gone)),
                                                           2)])
    return bursts


@pytest.mark.parametrize("annotation", [n for n in scheme_names()
                                        if get_scheme(n).unsafe_reason is None
                                        and not get_scheme(n).phased])
def test_every_scheme_with_bursts(ray_pool, annotation):
    bursts = _scheme_bursts(annotation, seed=11)
    with RayNetwork(REACH, annotation=annotation, pool=ray_pool, workers=3) as net:
        _run_bursts(net, bursts, REACH)
        got = net.relations()
    mem = _in_memory(REACH, bursts, annotation)
    assert got == mem.relations()
    if annotation == "derivation":  # the multiset of derivations, not only the set
        assert net.multiset("reachable") == mem.multiset("reachable")


def test_absorption_provenance_across_workers(ray_pool):
    # BDD provenance is bound to each worker's CUDD manager: it crosses workers as node lists
    from provenance import absorption
    links = _directed(20, 28, 13)
    rng = random.Random(13)
    gone = rng.sample(links, 5)
    bursts = [_insert({"link": links}), [(-1, "link", t) for t in gone],
              [(1, "link", t) for t in gone[:2]]]
    with RayNetwork(REACH, annotation=absorption.AbsorptionScheme(), pool=ray_pool,
                    workers=3) as net:
        _run_bursts(net, bursts, REACH)
        assert net.metrics["annotation_bytes"] > 0


def test_deletions_before_insertions_in_one_overlapping_run(ray_pool):
    links = _directed(20, 26, 4)
    net = RayNetwork(REACH, annotation="derivation", pool=ray_pool, workers=2)
    net.apply([(-1, "link", links[0]), (-1, "link", links[1])])
    net.apply(_insert({"link": links}))
    net.run()
    _assert_same(net.relations(), _reference(REACH, {"link": links[2:]}))


def test_shortest_path_with_deletions(ray_pool):
    links = topologies.make("line", n=12).facts(3, cost="hops")["link"]
    bursts = [_insert({"link": links}),
              [(-1, "link", links[4]), (-1, "link", links[9])],
              [(1, "link", links[4])]]
    with RayNetwork(SHORTEST, annotation="derivation", pool=ray_pool, workers=4) as net:
        _run_bursts(net, bursts, SHORTEST)


def test_minship_and_aggregate_selection_on_workers(ray_pool):
    # absorption with lazy MinShip (its default) and multi-aggregate selection, stages built
    # on every worker: relations other than the pruned `path` equal the reference
    from ndlog.analysis import aggsel_candidates
    links = topologies.make("ring", n=20).facts(3, cost="hops")["link"]
    bursts = [_insert({"link": links}), [(-1, "link", links[6]), (-1, "link", links[7])]]
    pruned = set(aggsel_candidates(SHORTEST))
    with RayNetwork(SHORTEST, annotation="absorption", aggsel="multi", pool=ray_pool,
                    workers=4) as net:
        for burst in bursts:
            net.apply(burst).run()
            _assert_same(net.relations(), psn.evaluate(SHORTEST, net.base_facts()),
                         skip=pruned)


@pytest.mark.parametrize("ship", ["lazy", "eager"])
def test_minship_per_worker_on_ray(ray_pool, ship):
    """One MinShip stage per actor, shared by the nodes it hosts (reachability planned as
    Liu Fig. 4, where nodes of one worker ship the same facts): the relations equal the
    reference after insertions and deletions, as in memory with the same placement."""
    liu = psn.load("examples/reachable_liu.ndl")
    links = topologies.make("ring", n=16).facts(2)["link"] + [(0, 8), (8, 0), (4, 12)]
    bursts = [_insert({"link": links}), [(-1, "link", links[3]), (-1, "link", (0, 8))]]
    with RayNetwork(liu, pool=ray_pool, workers=3, ship=ship,
                    options=RunOptions(minship_at="worker")) as net:
        for burst in bursts:
            net.apply(burst).run()
            assert net.relations() == psn.evaluate(liu, net.base_facts())


def test_same_result_as_simulator(ray_pool):
    topo = topologies.make("random", n=40, m=80, seed=3)
    facts = topo.facts(2)
    s = sim.Simulation(REACH, topo, annotation="set", workers=2, seed=3)
    s.step(insert=facts)
    net = RayNetwork(REACH, facts, annotation="set", pool=ray_pool, workers=2).run()
    assert net.relations()["reachable"] == s.relations()["reachable"]
    # the same hash placement as the simulator: each node on the same worker
    shards = Placement(2)
    assert all(s.placement.worker_of(n) == shards(n) for n in range(40))
    placed = {int(k): row["worker"] for k, row in net.metrics["nodes"].items()}
    assert placed == {n: shards(n) for n in {t[0] for t in facts["link"]}}


# -- placement and metrics ---------------------------------------------------------------

def test_explicit_placement_and_worker_metrics(ray_pool):
    links = _directed(30, 60, 6)
    mapping = {n: (0 if n < 10 else 1 if n < 20 else 2) for n in range(30)}
    net = RayNetwork(REACH, {"link": links}, annotation="set", pool=ray_pool, workers=3,
                     placement=mapping).run()
    m = net.metrics
    for name, row in m["nodes"].items():
        assert row["worker"] == mapping[int(name)]
    for field in ("messages_sent", "bytes_sent", "worker_messages_sent",
                  "worker_bytes_sent", "local_tuples"):
        assert m[field] == sum(w[field] for w in m["workers"].values())
        assert m[field] == sum(r[field] for r in m["nodes"].values())
    assert sum(w["batches_sent"] for w in m["workers"].values()) == \
        sum(w["batches_received"] for w in m["workers"].values())
    assert m["worker_bytes_sent"] <= m["bytes_sent"]
    # set semantics stores exactly the fixpoint (auxiliary relations included)
    assert m["state_tuples"] == _in_memory(REACH, [_insert({"link": links})], "set") \
        .metrics["state_tuples"]


def test_one_worker_sends_nothing_between_workers(ray_pool):
    links = _directed(25, 50, 8)
    net = RayNetwork(REACH, {"link": links}, annotation="set", pool=ray_pool, workers=1).run()
    m = net.metrics
    assert m["worker_messages_sent"] == m["worker_bytes_sent"] == m["batches_sent"] == 0
    assert m["messages_sent"] > 0
    _assert_same(net.relations(), _reference(REACH, {"link": links}))


def test_placement_is_stable_and_explicit_first():
    m = Placement(4, {"x": 2})
    assert m("x") == 2
    assert all(m(n) == stable_hash(n) % 4 for n in range(50))
    assert stable_hash("node-a") == stable_hash("node-a")


def test_a_node_written_as_a_float_is_the_same_node_on_every_worker(ray_pool):
    """``5.0`` and ``5`` are one node (``1 == 1.0``), but the placement hashed their reprs
    (``'5.0'``, ``'5'``) and each process kept whichever it met first: the driver put
    link(@5.0, 6) on one worker, the workers routed node 5's messages to the other, and
    reachable(@4, 6) was missing with 2 workers (right with 1, in memory and in
    psn.evaluate)."""
    assert stable_hash(5.0) == stable_hash(5) and stable_hash((1, 2.0)) == stable_hash((1, 2))
    facts = {"link": [(4, 5), (5.0, 6)]}
    with RayNetwork(REACH, facts, annotation="derivation", pool=ray_pool, workers=2) as net:
        got = net.run().relations()
    assert got["reachable"] == _reference(REACH, facts)["reachable"] == {(4, 5), (4, 6),
                                                                          (5, 6)}


# -- failures ----------------------------------------------------------------------------

def test_killed_worker_is_restarted_and_run_converges(ray_pool):
    links = _directed(40, 80, 9)
    net = RayNetwork(REACH, {"link": links[:60]}, annotation="set", pool=ray_pool,
                     workers=3).run()
    net.apply(_insert({"link": links[60:]}))
    pid = _pid(net.actors[1])
    net.start()                      # the burst is in flight between workers ...
    ray.kill(net.actors[1], no_restart=False)   # ... when worker 1 dies
    _wait_gone(net.actors[1], pid)
    net.run()
    assert net.recoveries >= 1
    _assert_same(net.relations(), _reference(REACH, {"link": links}))
    assert net.metrics["recoveries"] == net.recoveries


def test_worker_dead_for_good_is_replaced(ray_pool):
    links = _directed(30, 60, 12)
    net = RayNetwork(REACH, {"link": links[:40]}, annotation="set", pool=ray_pool,
                     workers=4).run()
    old = net.actors[3]
    pid = _pid(old)
    net.apply(_insert({"link": links[40:]})).start()
    ray.kill(old, no_restart=True)             # Ray will not restart this one
    _wait_gone(old, pid)
    net.run()
    assert net.actors[3] is not old and len(ray_pool) == 4
    _assert_same(net.relations(), _reference(REACH, {"link": links}))


def _pid(actor) -> int:
    return ray.get(actor.ping.remote(), timeout=60)[0]


def _wait_gone(actor, pid: int, seconds: float = 60.0) -> None:
    """Wait until process ``pid`` no longer answers for ``actor``: ``ray.kill`` returns
    before the process dies, so a run started at once could finish on the old process
    (and a read of its relations too), with no loss to recover from. Once killed, a call
    fails, or a restarted process (another pid) answers it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if _pid(actor) != pid:
                return
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError(f"the killed worker still answered after {seconds:g} s")


def test_worker_crashing_while_handling_a_batch(ray_pool):
    links = _directed(20, 28, 10)
    # deleting link(a, b) with a on worker 1 and b on worker 0 sends worker 0 a batch (the
    # deletion of the mirror link_rev(b, a)), whatever the timing
    shards = Placement(2)
    cross = [t for t in links if shards(t[0]) == 1 and shards(t[1]) == 0]
    bursts = [_insert({"link": links}), [(-1, "link", cross[0]), (-1, "link", links[7])]]
    net = RayNetwork(REACH, annotation="derivation", pool=ray_pool, workers=2)
    net.apply(bursts[0]).run()
    before = net.metrics
    ray.get(net.actors[0].set_hook.remote(_crash_after(1)))   # exits on its next batch
    net.apply(bursts[1]).run()
    assert net.recoveries == 1
    after = net.metrics
    assert after["recoveries"] == 1
    # the counters carry what was counted before the loss, plus the replay: never less
    for key in ("messages_sent", "bytes_sent", "worker_messages_sent", "updates_processed",
                "batches_sent"):
        assert after[key] > before[key], key
    _assert_same(net.relations(), _reference(REACH, net.base_facts()))
    assert net.multiset("reachable") == _in_memory(REACH, bursts, "derivation") \
        .multiset("reachable")


def test_worker_lost_while_a_burst_is_injected_counts_a_recovery(ray_pool):
    links = _directed(20, 28, 11)
    net = RayNetwork(REACH, annotation="set", pool=ray_pool, workers=2)
    net.apply(_insert({"link": links[:20]})).run()
    ray.get(net.actors[0].set_hook.remote(_crash_after(1)))
    # a batch the driver sends ahead of the burst: worker 0 exits on it, so the injection
    # queued behind it (same caller, so in order) fails
    net.actors[0].deliver.remote(net.epoch, 1, b"")
    assert any(Placement(2)(a) == 0 for a, _ in links[20:])   # the burst reaches worker 0
    net.apply(_insert({"link": links[20:]})).run()
    assert net.recoveries == 1 and net.metrics["recoveries"] == 1
    _assert_same(net.relations(), _reference(REACH, {"link": links}))


def test_every_worker_knows_the_node_of_every_insertion_after_a_replay_too(ray_pool,
                                                                          tmp_path):
    """The driver tells every worker the node of each new base insertion, those of the
    other workers' nodes too (absorption orders its BDD variables by it, in every
    manager), and a worker that lost its state those of the whole history."""
    links = _directed(20, 60, 12)
    shards = Placement(2)
    first, rest = links[:20], links[20:]
    to = {w: [t for t in rest if shards(t[0]) != w and shards(t[1]) == w] for w in (0, 1)}
    local = [t for t in rest if shards(t[0]) == shards(t[1]) == 0]
    assert len(to[0]) >= 5 and len(to[1]) >= 4 and local
    net = RayNetwork(REACH, annotation="absorption", pool=ray_pool, workers=2)
    net.apply(_insert({"link": first})).run()
    assert len(net.resolved.scheme._placed) == 20

    def probe(name: str, burst: list) -> dict:
        # each worker writes what it knows before its next batch from the other one
        known = dict(net.resolved.scheme._placed)
        paths = [tmp_path / f"{name}{w}.json" for w in (0, 1)]
        for actor, path in zip(net.actors, paths):
            ray.get(actor.set_hook.remote(_write_placed(str(path))))
        try:
            net.apply(_insert({"link": burst})).run()
        finally:     # the pool's actors serve the next tests: no probe is left behind
            ray.get([actor.set_hook.remote(None) for actor in net.actors])
        for path in paths:
            got = {seq: tuple(key) for seq, key in json.loads(path.read_text())}
            assert {s: tuple(k) for s, k in known.items()}.items() <= got.items()
        return known

    assert len(probe("one", [to[0][0], to[1][0]])) == 20     # sent with the first run
    assert len(probe("two", [to[0][1], to[1][1]])) == 22     # and with a later burst
    net.apply(_insert({"link": local[:1]})).run()            # updates for worker 0 only
    assert len(probe("three", [to[0][2], to[1][2]])) == 25   # worker 1 was told too
    ray.get(net.actors[0].set_hook.remote(_crash_after(1)))
    net.apply(_insert({"link": [to[0][3]]})).run()
    assert net.recoveries == 1
    assert len(probe("after", [to[0][4], to[1][3]])) == 28
    _assert_same(net.relations(), _reference(REACH, net.base_facts()))


def _write_placed(path: str):
    """A test-only probe for :meth:`ShardActor.set_hook`: before each batch it handles,
    the worker writes to ``path`` the ``(insertion id, node key)`` pairs its scheme knows
    (a nested function, so that Ray pickles it by value)."""
    def hook() -> None:
        import gc
        from psn.distributed.shard import Shard
        shard, = [o for o in gc.get_objects() if type(o) is Shard]
        with open(path, "w") as f:
            json.dump(sorted(shard.scheme._placed.items()), f)
    return hook


def _crash_after(batches: int):
    """A test-only fault for :meth:`ShardActor.set_hook`: the worker process exits abruptly
    while handling its ``batches``-th next batch (a nested function, so that Ray pickles it
    by value)."""
    left = [batches]

    def hook() -> None:
        left[0] -= 1
        if left[0] <= 0:
            os._exit(17)
    return hook


# -- errors and the command line ---------------------------------------------------------

def test_why_refuses_with_the_engines_that_explain(ray_pool):
    net = RayNetwork(REACH, {"link": [(1, 2)]}, annotation="absorption", pool=ray_pool,
                     workers=2).run()
    with pytest.raises(InputError, match="does not apply to a RayNetwork") as info:
        net.why("reachable", (1, 2))
    assert "engine.Network" in info.value.hint
    assert Network(REACH, {"link": [(1, 2)]}, annotation="absorption").run() \
        .why("reachable", (1, 2)) == "link(@1,2)"


def test_unmatched_deletion_is_an_input_error(ray_pool):
    net = RayNetwork(REACH, {"link": [(1, 2)]}, annotation="derivation", pool=ray_pool,
                     workers=2)
    net.delete("link", (2, 3))
    with pytest.raises(InputError, match=r"cannot delete link\(@?2, 3\)"):
        net.run()


def test_bad_worker_counts_are_input_errors(ray_pool):
    with pytest.raises(InputError):
        RayNetwork(REACH, pool=ray_pool, workers=9)
    with pytest.raises(InputError):
        RayNetwork(REACH, pool=ray_pool, workers=2, placement={1: 5})


@pytest.mark.parametrize("make, what", [
    (lambda: RayNetwork(REACH, [("link", (1, 2))]), "facts must be a mapping of predicate"),
    (lambda: RayNetwork(REACH, {"link": (1, 2)}), "fact of 'link' must be a tuple, got 1"),
    (lambda: RayNetwork(REACH, {"link": [(1, 2, 3)]}), "has 3 arguments"),
    (lambda: RayNetwork(REACH, workers=0), "number of workers must be a positive integer"),
    (lambda: RayNetwork(REACH, workers=1, placement={1: 5}), "placed on worker 5"),
    (lambda: RayNetwork(REACH, on_node=3), "on_node is a function"),
    (lambda: RayNetwork(REACH, on_node=lambda: None), r"on_node .*called as f\(a1\)"),
    (lambda: RayNetwork(REACH, max_recoveries="x"), "max_recoveries is a whole number"),
    (lambda: RayNetwork(REACH, pool=4), "pool is a WorkerPool, got int"),
    (lambda: RayNetwork(REACH, options=RunOptions(delivery="fifo")),
     "delivery 'fifo' does not apply to Ray")])
def test_bad_arguments_are_refused_before_any_actor_starts(monkeypatch, make, what):
    """Facts as a list, or a row that is not a tuple, were an AttributeError or TypeError;
    those and a wrong arity, workers=0 or a bad placement were refused only after the
    network had started its actors, which nothing then stopped."""
    def no_pool(*args, **kwargs):
        raise AssertionError("a WorkerPool was started")
    monkeypatch.setattr("psn.distributed.network.WorkerPool.__init__", no_pool)
    with pytest.raises(InputError, match=what):
        make()


def test_a_closed_network_says_so_and_a_misspelt_relation_is_named():
    """After close(), relations() was empty sets, metrics had no counters and run() an
    IndexError; multiset("lnk") was {}."""
    net = RayNetwork(REACH, {"link": [(1, 2)]}, workers=1)
    with net:
        assert net.run().multiset("reachable") == {(1, 2): 1}
        with pytest.raises(InputError, match="no relation 'lnk'") as info:
            net.multiset("lnk")
        assert info.value.hint == "did you mean 'link'?"
    for read in (net.relations, lambda: net.metrics, net.run, lambda: net.multiset("link")):
        with pytest.raises(InputError, match="this RayNetwork is closed") as info:
            read()
        assert "before close()" in info.value.hint


def test_derivation_total_is_a_budget_in_all_on_ray_too(ray_pool):
    """The budget of derivations in all was each worker's: every worker counted its own
    against the whole of it, so reachable on the complete 4-node graph (21,240 derivations)
    with a total of 15,000 stopped in memory and in the simulator and ran to the end on 4
    workers (12 workers may store 12 times the budget, until the memory ceiling stops
    them). Each worker now holds its share, as with the memory ceiling."""
    links = [(a, b) for a in range(4) for b in range(4) if a != b]
    opts = RunOptions(annotation="derivation", derivation_total=15_000)
    with pytest.raises(AnnotationBudgetError, match="in total"):
        Network(REACH, {"link": links}, options=opts).run()
    one_each = {n: n for n in range(4)}
    net = RayNetwork(REACH, {"link": links}, options=opts, pool=ray_pool, workers=4,
                     placement=one_each)
    with pytest.raises(AnnotationBudgetError) as info:
        net.run()
    assert "on one of 4 workers" in info.value.message
    assert "(3,750 on each worker)" in info.value.message
    # a budget the network stays within holds on the workers too
    roomy = opts.replace(derivation_total=30_000)
    net = RayNetwork(REACH, {"link": links}, options=roomy, pool=ray_pool, workers=4,
                     placement=one_each).run()
    assert net.relations() == Network(REACH, {"link": links}, options=roomy).run().relations()


def test_a_run_past_its_bound_on_updates_stops_on_ray_too(ray_pool):
    """max_updates (--max-updates; 200,000 by default for a scheme that may not terminate)
    bounded the updates a run sends in memory and in the simulator, and nothing on Ray:
    --max-updates 5 was ignored, and counting derivations (--unsafe) on a cycle, which the
    simulator stops after 200,000 updates, ran on Ray until the memory ceiling. Each worker
    now stops past the bound, with the same error."""
    net = RayNetwork(REACH, {"link": _directed(20, 40, 3)}, options=RunOptions(max_updates=5),
                     pool=ray_pool, workers=2)
    with pytest.raises(NotConvergedError, match="did not converge after 5 updates"):
        net.run()
    opts = RunOptions(annotation="counting", unsafe=True, max_updates=1000)
    cycle = {"link": [(1, 2), (2, 1)]}
    with pytest.raises(NotConvergedError) as mem:
        Network(REACH, cycle, options=opts).run()
    net = RayNetwork(REACH, cycle, options=opts, pool=ray_pool, workers=2)
    with pytest.raises(NotConvergedError) as got:
        net.run()
    assert got.value.render() == mem.value.render()
    assert "annotation 'counting' counts derivations" in got.value.message
    # a cycle closed among the nodes of a worker that no burst is injected into: trig(@a,
    # ...) lives on worker 0 and makes q facts on worker 1, which loops on its own
    closing = psn.parse("""
    t1 q(@Y, Z) :- trig(@X, Y, Z).
    r1 r(@S, D) :- q(@S, D).
    r2 r(@S, D) :- q(@S, Z), r(@Z, D).
    """)
    place = Placement(2)
    a = next(n for n in range(40) if place(n) == 0)
    b0, b1 = [n for n in range(40) if place(n) == 1][:2]
    net = RayNetwork(closing, {"trig": [(a, b1, b0)]}, options=opts, pool=ray_pool,
                     workers=2).run()
    net.insert("trig", (a, b0, b1))
    with pytest.raises(NotConvergedError, match="after 1,000 updates"):
        net.run()


def test_engine_error_on_a_worker_reaches_the_driver(ray_pool):
    # a rule failing at run time on a worker (division by zero) raises in the driver the
    # same PSN error, with its position, as the in-memory engine
    prog = psn.parse("d1 q(@S, X) :- p(@S, A, B), X := A / B.")
    facts = {"p": [(1, 4, 0), (2, 4, 2)]}
    with pytest.raises(EvaluationError) as mem:
        Network(prog, facts, annotation="set").run()
    net = RayNetwork(prog, facts, annotation="set", pool=ray_pool, workers=2)
    with pytest.raises(EvaluationError) as got:
        net.run()
    assert got.value.render() == mem.value.render()


def test_cli_runner_prints_relations_and_checks(ray_pool, tmp_path, capsys):
    (tmp_path / "facts.ndl").write_text("link(@1, 2). link(@2, 3). link(@3, 1).\n")
    (tmp_path / "b1.ndl").write_text("-link(@3, 1).\n+link(@3, 4).\n")
    rc = main(["run", "examples/reachable.ndl", "--engine", "ray", "--workers", "2",
               "--facts", str(tmp_path / "facts.ndl"), "--burst", str(tmp_path / "b1.ndl"),
               "--annotation", "derivation", "--format", "json", "--relation", "reachable",
               "--check"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    want = _reference(REACH, {"link": [(1, 2), (2, 3), (3, 4)]})["reachable"]
    assert {tuple(r) for r in doc["relations"]["reachable"]} == want
    assert doc["summary"]["check"] is True and doc["summary"]["checked"] == 2
    assert doc["metrics"]["workers_count"] == 2
    assert ray.is_initialized()   # the runner leaves a runtime it did not start alone


def test_cli_runner_takes_the_topology_and_workload(ray_pool, capsys):
    rc = main(["run", "examples/reachable.ndl", "--engine", "ray", "--topology", "ring",
               "--topology-option", "n=16", "--workload", "insert:0.5,1.0",
               "--annotation", "set", "--workers", "3", "--check"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "check: ok (2 steps equal to the reference)" in out


def test_local_workers_run_at_normal_priority(ray_pool):
    """Ray starts its workers at niceness 15 unless told otherwise: with any other process
    busy on the machine, a 100-node run took 7 s instead of 1 s. The private local runtime
    starts them at the driver's own priority."""
    for pid, _ in ray.get([a.ping.remote() for a in ray_pool.actors]):   # (pid, epoch)
        assert os.getpriority(os.PRIO_PROCESS, pid) == os.getpriority(os.PRIO_PROCESS, 0)


def test_a_worker_past_its_share_of_max_memory_names_the_whole_ceiling(ray_pool):
    """Each of N workers stops past 1/N of --max-memory, and its error called that share
    the run's --max-memory: 'psn run ... --engine ray --workers 2 --max-memory 1G' said
    'over its --max-memory of 512.0 MiB', a ceiling the user never gave."""
    from engine.guards import MemoryLimitError
    endless = ("p1 path(@S, D, P) :- link(@S, D), P := [S, D].\n"
               "p2 path(@S, D, P) :- link(@S, Z), path(@Z, D, P2), P := f_prepend(S, P2).")
    net = RayNetwork(endless, {"link": [(1, 2), (2, 1)]}, pool=ray_pool, workers=2,
                     options=RunOptions(max_memory=128 << 20))
    with pytest.raises(MemoryLimitError) as info:
        net.run()
    assert re.search(r"^a worker used [\d.]+ [MG]iB, over its share \(1/2, 64\.0 MiB\) of "
                     r"the run's --max-memory of 128\.0 MiB; ", info.value.message), \
        info.value.message
