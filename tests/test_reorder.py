"""Reorder property tests: PSN is correct under any delivery order.

Reference programs run on seeded random sparse graphs of 10-30 nodes, with an initial burst
and interleaved insertion/deletion bursts (deletions of present links, new links,
re-insertions, a link deleted and re-inserted within one burst), applied one burst at a time
or all overlapping. Each scenario runs under many seeded delivery schedules across ``fifo``,
``random`` and ``adversarial``, batched and one-update picks; after the last burst the
relations must equal psn.evaluate on the final base facts (Nigam Definition 1) for the
``derivation`` scheme, for ``dred`` (delete and re-derive) and ``relative`` (relative
provenance, eager and lazy in turn), a third of the schedules each, and for ``set`` on
insertion-only scenarios.

Derivation sets enumerate every cycle-free derivation, so graphs are kept sparse (a random
tree plus a few extra links, rejected when they have too many simple paths) and the
schedules are spread over programs. ``SCHEDULES`` counts the schedules run per CI run
(at least 2,000).
"""

from __future__ import annotations

import random

import pytest

import psn
from engine import Network

REACH = """
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
"""
HOPS = """
h1 hop(@X, Y) :- link(@X, Z), link(@Z, Y).
h2 tri_hop(@X, Y) :- hop(@X, Z), link(@Z, Y).
"""
SHORTEST = """
sp1 path(@S, D, P, C, L) :- link(@S, D, C), P := f_concat(S, D), L := 1.
sp2 path(@S, D, P, C, L) :- link(@S, Z, C1), path(@Z, D, P2, C2, L2),
                            f_member(P2, S) == 0,
                            P := f_prepend(S, P2), C := C1 + C2, L := L2 + 1.
sp3 minCost(@S, D, min<C>) :- path(@S, D, P, C, L).
sp4 minHops(@S, D, min<L>) :- path(@S, D, P, C, L).
sp5 cheapestPath(@S, D, P, C) :- path(@S, D, P, C, L), minCost(@S, D, C).
sp6 fewestHops(@S, D, P, L) :- path(@S, D, P, C, L), minHops(@S, D, L).
"""
REGION = """
g1 activeRegion(@X, R) :- seed(@X, R), isTriggered(@X).
g2 activeRegion(@Y, R) :- activeRegion(@X, R), isTriggered(@X), nbr(@X, Y).
g3 regionSize(@R, count<X>) :- activeRegion(@X, R).
g4 largestRegion(@K, max<N>) :- regionSize(@R, N), sink(@R, K).
"""
CLOSURE = """
t1 tc(X, Y) :- link(X, Y).
t2 tc(X, Y) :- link(X, Z), tc(Z, Y).
"""

DELIVERIES = ("fifo", "random", "adversarial")

# (program, scenarios, schedules per scenario); insertion-only scenarios also run `set`.
PLAN = {
    "reachable": (REACH, 16, 45),
    "hops": (HOPS, 10, 35),
    "shortest": (SHORTEST, 8, 25),
    "region": (REGION, 8, 25),
    "closure": (CLOSURE, 12, 45),
}
INSERT_ONLY_SCHEDULES = 12
SCHEDULES = sum(s * k for _, s, k in PLAN.values())


def test_schedule_budget():
    """The plan runs at least 2,000 seeded delivery schedules."""
    assert SCHEDULES >= 2000


# -- scenarios ---------------------------------------------------------------------------
def _simple_paths(links, cap: int) -> int:
    adj: dict = {}
    for a, b in links:
        adj.setdefault(a, []).append(b)
    count = 0
    for start in adj:
        stack = [(start, (start,))]
        while stack:
            v, seen = stack.pop()
            for w in adj.get(v, ()):
                if w not in seen:
                    count += 1
                    if count > cap:
                        return count
                    stack.append((w, seen + (w,)))
    return count


def _sparse_graph(rng: random.Random, n: int, cap: int = 500) -> list[tuple]:
    """A random tree (edges away from the root) plus a few extra links, cycles included."""
    while True:
        links = {(rng.randrange(i), i) for i in range(1, n)}
        for _ in range(max(2, n // 5)):
            a, b = rng.sample(range(n), 2)
            links.add((a, b))
        links = sorted(links)
        if _simple_paths(links, cap) <= cap:
            return links


def _bursts(rng: random.Random, links: list, insert_only: bool):
    """Initial facts and 3 bursts of (sign, link) over ``links``."""
    rng.shuffle(links)
    k = max(3, int(len(links) * 0.75))
    initial, spare = links[:k], links[k:]
    live = set(initial)
    bursts = []
    for _ in range(3):
        burst = []
        if not insert_only:
            for link in rng.sample(sorted(live), min(3, len(live))):
                burst.append((-1, link))
                live.discard(link)
        for _ in range(2):
            if spare:
                link = spare.pop()
                burst.append((1, link))
                live.add(link)
        if not insert_only and burst and rng.random() < 0.5:
            gone = [lk for s, lk in burst if s < 0]
            if gone:  # re-inserted in the same burst
                burst.append((1, gone[0]))
                live.add(gone[0])
        if not insert_only and live and rng.random() < 0.5:
            link = rng.choice(sorted(live))  # deleted and re-inserted within one burst
            burst += [(-1, link), (1, link)]
        bursts.append(burst)
    return initial, bursts, sorted(live)


def _scenario(name: str, index: int, insert_only: bool = False):
    """(facts, bursts of (sign, pred, tuple), final facts) for program ``name``."""
    rng = random.Random(f"{name}-{index}-{insert_only}")
    n = rng.randint(10, 30)
    links = _sparse_graph(rng, n, cap=250 if name in ("shortest", "region") else 500)
    if name == "shortest":
        cost = {lk: rng.randint(1, 9) for lk in links}
        initial, bursts, final = _bursts(rng, links, insert_only)
        return ({"link": [lk + (cost[lk],) for lk in initial]},
                [[(s, "link", lk + (cost[lk],)) for s, lk in b] for b in bursts],
                {"link": [lk + (cost[lk],) for lk in final]})
    if name == "region":
        return _region(rng, n, links, insert_only)
    initial, bursts, final = _bursts(rng, links, insert_only)
    return ({"link": initial}, [[(s, "link", lk) for s, lk in b] for b in bursts],
            {"link": final})


def _region(rng: random.Random, n: int, links, insert_only: bool):
    # Symmetric neighbours: a tree over n nodes already has n(n-1) simple paths, so the
    # sensor field is a forest of small clusters, each a tree plus one extra edge (a cycle).
    pairs = set()
    start = 0
    while start < n:
        size = min(n - start, rng.randint(4, 7))
        members = list(range(start, start + size))
        for i in range(1, size):
            pairs.add((members[rng.randrange(i)], members[i]))
        if size >= 3:
            pairs.add(tuple(rng.sample(members, 2)))
        start += size
    nbr = sorted({(a, b) for a, b in pairs if a != b} | {(b, a) for a, b in pairs if a != b})
    seeds = [(x, f"r{x}") for x in rng.sample(range(n), 2)]
    sink = [(r, 0) for _, r in seeds]
    triggered = sorted(rng.sample(range(n), n // 2) + [x for x, _ in seeds])
    facts = {"nbr": nbr, "seed": seeds, "sink": sink,
             "isTriggered": sorted({(x,) for x in triggered})}
    live = set(facts["isTriggered"])
    others = [(x,) for x in range(n) if (x,) not in live]
    bursts = []
    for _ in range(3):
        burst = []
        if not insert_only:
            for t in rng.sample(sorted(live), min(2, len(live))):
                burst.append((-1, "isTriggered", t))
                live.discard(t)
        if others:
            t = others.pop()
            burst.append((1, "isTriggered", t))
            live.add(t)
        bursts.append(burst)
    final = dict(facts, isTriggered=sorted(live))
    return facts, bursts, final


# -- running -----------------------------------------------------------------------------
def _schedules(count: int, rng: random.Random):
    for i in range(count):
        yield (DELIVERIES[i % 3], rng.randrange(10**6), rng.random() < 0.8,
               rng.random() < 0.5)


def _run(program, facts, bursts, *, annotation, delivery, seed, batch, overlap, ship=None):
    net = Network(program, facts, annotation=annotation, delivery=delivery, seed=seed,
                  batch=batch, ship=ship)
    if overlap:
        for b in bursts:
            net.apply(b)
        net.run()
    else:
        net.run()
        for b in bursts:
            net.apply(b)
            net.run()
    return net.relations()


def _check(got, ref, context) -> None:
    for rel in set(ref) | set(got):
        assert got.get(rel, set()) == ref.get(rel, set()), (rel, context)


def _cases():
    for name, (_, scenarios, _) in PLAN.items():
        for i in range(scenarios):
            yield pytest.param(name, i, id=f"{name}-{i}")


@pytest.mark.parametrize("name,index", list(_cases()))
def test_reorder_derivation(name, index):
    text, _, per = PLAN[name]
    program = psn.parse(text)
    facts, bursts, final = _scenario(name, index)
    ref = psn.evaluate(program, final, aggsel=False)
    rng = random.Random(f"sched-{name}-{index}")
    for delivery, seed, batch, overlap in _schedules(per, rng):
        got = _run(program, facts, bursts, annotation="derivation", delivery=delivery,
                   seed=seed, batch=batch, overlap=overlap)
        _check(got, ref, (name, index, delivery, seed, batch, overlap))


@pytest.mark.parametrize("name,index", list(_cases()))
def test_reorder_dred(name, index):
    text, _, per = PLAN[name]
    program = psn.parse(text)
    facts, bursts, final = _scenario(name, index)
    ref = psn.evaluate(program, final, aggsel=False)
    rng = random.Random(f"dred-{name}-{index}")
    for delivery, seed, batch, overlap in _schedules(max(6, per // 3), rng):
        got = _run(program, facts, bursts, annotation="dred", delivery=delivery,
                   seed=seed, batch=batch, overlap=overlap)
        _check(got, ref, (name, index, delivery, seed, batch, overlap))


@pytest.mark.parametrize("name,index", list(_cases()))
def test_reorder_relative(name, index):
    text, _, per = PLAN[name]
    program = psn.parse(text)
    facts, bursts, final = _scenario(name, index)
    ref = psn.evaluate(program, final, aggsel=False)
    rng = random.Random(f"relative-{name}-{index}")
    for i, (delivery, seed, batch, overlap) in enumerate(_schedules(max(6, per // 3), rng)):
        ship = ("eager", "lazy")[i % 2]
        got = _run(program, facts, bursts, annotation="relative", delivery=delivery,
                   seed=seed, batch=batch, overlap=overlap, ship=ship)
        _check(got, ref, (name, index, delivery, seed, batch, overlap, ship))


@pytest.mark.parametrize("name", ["reachable", "hops", "closure"])
def test_reorder_set_insert_only(name):
    text = PLAN[name][0]
    program = psn.parse(text)
    for index in range(3):
        facts, bursts, final = _scenario(name, index, insert_only=True)
        ref = psn.evaluate(program, final)
        rng = random.Random(f"set-{name}-{index}")
        for delivery, seed, batch, overlap in _schedules(INSERT_ONLY_SCHEDULES, rng):
            got = _run(program, facts, bursts, annotation="set", delivery=delivery,
                       seed=seed, batch=batch, overlap=overlap)
            _check(got, ref, (name, index, delivery, seed, batch, overlap))
