"""Ray workers' shards without Ray: three shards exchange msgpack batches to quiescence.

The shard is the Ray actor's pure half (:mod:`psn.distributed.shard`): the engine's one
hosting loop over a worker transport that keeps updates for its own nodes and batches the
rest per destination worker. Driving three shards by hand, as the Ray driver and actors do,
checks the routing, the wire format and the counters without starting Ray.
"""

from __future__ import annotations

import random

import pytest

import psn
from engine import Injector, Placement, RunOptions, prepare
from engine.host import Contexts
from engine.wire import Codec
from provenance.bdd import node_key
from psn.distributed.shard import Shard, pack

REACH = """
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
"""


def _links(rng: random.Random, n: int, m: int) -> list[tuple]:
    out: set[tuple] = set()
    while len(out) < m:
        a, b = rng.sample(range(n), 2)
        out.add((a, b))
    return sorted(out)


class Driver:
    """What the Ray driver does with a burst: inject, encode, one payload per worker."""

    def __init__(self, program, prepared, resolved, placement, shards):
        self.injector = Injector(program, prepared, resolved.scheme,
                                 Contexts(resolved.scheme), keep_places=True)
        self.codec = Codec(resolved.scheme)
        self.placement, self.shards = placement, shards

    def inject(self, burst) -> None:
        by_worker: dict = {}
        for dst, ups in self.injector.updates(burst).items():
            by_worker.setdefault(self.placement.worker(dst), []).append(
                (dst, self.codec.encode(ups, self.injector.context_of(dst))))
        places = pack(self.injector.take_places())
        for shard in self.shards.values():
            shard.place(places)
        for w, msgs in by_worker.items():
            self.shards[w].receive_payload(pack(msgs), counted=False)


def _quiesce(shards) -> int:
    """Exchange batches until none is left, flushing at quiescence; returns the rounds."""
    rounds = 0
    while True:
        moved = False
        for w, shard in shards.items():
            for dst, payload in shard.take_outbox():
                assert dst != w
                shards[dst].receive_payload(payload)
                moved = True
        rounds += moved
        if not moved and not sum(s.flush() for s in shards.values()):
            return rounds


@pytest.mark.parametrize("annotation", ["derivation", "set", "absorption"])
def test_shards_exchange_batches_to_the_reference(annotation):
    rng = random.Random(21)
    links = _links(rng, 12, 18)
    program = psn.parse(REACH)
    prepared = prepare(program)
    resolved = RunOptions(annotation=annotation).resolve(prepared)
    placement = Placement.round_robin(range(12), 3)
    # a scheme object per worker, as each Ray worker resolves the options itself
    shards = {w: Shard(w, prepared, RunOptions(annotation=annotation).resolve(prepared),
                       placement) for w in range(3)}
    driver = Driver(program, prepared, resolved, placement, shards)
    driver.inject([(1, "link", lk) for lk in links])
    rounds = _quiesce(shards)
    got = set()
    for s in shards.values():
        got |= set(s.relations_of(["reachable"]).get("reachable", []))
    assert got == psn.evaluate(program, {"link": links})["reachable"]
    sent = sum(s.batches_sent for s in shards.values())
    assert sent == sum(s.batches_received for s in shards.values()) > 0 and rounds > 1
    reports = [s.report() for s in shards.values()]
    assert all(r["totals"]["local_tuples"] + r["totals"]["messages_sent"] > 0 for r in reports)
    # every node a shard hosts is placed on that shard
    for w, s in shards.items():
        assert all(placement.worker(n) == w for n in s.nodes)
    # every shard knows the node of every insertion, its own nodes' and the others'
    wanted = {seq: node_key(lk[0]) for seq, lk in enumerate(links, 1)}
    for s in shards.values():
        assert s.scheme is not resolved.scheme
        if annotation == "absorption":
            assert s.scheme._placed == wanted
        else:
            assert not s.scheme.uses_places
    assert driver.injector.take_places() == []
    if annotation != "set":           # a deletion, exact under provenance
        gone = links[0]
        driver.inject([(-1, "link", gone)])
        _quiesce(shards)
        left = [lk for lk in links if lk != gone]
        got = set()
        for s in shards.values():
            got |= set(s.relations_of(["reachable"]).get("reachable", []))
        assert got == psn.evaluate(program, {"link": left})["reachable"]


def test_an_actor_pauses_the_collector_for_its_epoch_and_frees_the_last_one():
    """A Ray worker's actor keeps the cyclic collector paused from one epoch's
    ``configure`` to the next (collections between its calls traversed the whole shard),
    and a new epoch collects the previous shard, cycles and all, instead of freezing it."""
    import gc
    import weakref
    from psn.distributed.actor import ShardActor
    program = psn.parse(REACH)
    placement = Placement.round_robin(range(4), 1)
    options = RunOptions(annotation="set")
    actor = ShardActor()
    was = gc.isenabled(), gc.get_freeze_count()
    try:
        actor.configure(0, 0, "reach", program, options, placement, [None])
        assert not gc.isenabled()
        old = actor.shard
        old.itself = old                        # a cycle: only a collection frees it
        gone = weakref.ref(old)
        del old
        actor.configure(1, 0, "reach", program, options, placement, [None])
        assert not gc.isenabled() and actor.epoch == 1
        assert gone() is None and actor.shard is not None
    finally:
        actor._paused.close()
    assert (gc.isenabled(), gc.get_freeze_count()) == was
