"""Serialized size and write/read times of absorption-provenance BDDs (provenance.bdd).

Role: measure the wire form of :mod:`provenance.bdd` (a node list rebuilt with ``ite``,
chosen because ``dd.cudd.Function`` does not pickle and ``to_expr``/``add_expr`` blow up
exponentially) for BDDs of growing size: random monotone DNFs (sets of
path-like variable sets) and real reachability provenance computed centrally on seeded
random graphs. "write" is serialize + msgpack.packb in the sender's manager; "read" is
msgpack.unpackb + deserialize (ite rebuild) in another manager, either a fresh one (variables
declared on the fly) or one whose variable order was reversed beforehand.

``--ts100`` measures instead how large the *whole* absorption provenance of reachable gets
on GT-ITM's ``ts100`` (what eager MinShip must eventually bring every node): a central
semi-naive fixpoint in one CUDD manager, no engine, no network, for growing fractions of
the (bidirectional) links, with the variables in link order, in the order of a depth-first
walk of the topology (a stub's links together) and with CUDD's sifting on, each in a child
process stopped at ``--budget`` seconds; then, for a few seeded pairs of nodes, the size of
the end result alone (the OR of every simple path, built from networkx's enumeration of
them), in link order and depth-first order.

Deliberately not here: assertions (see tests/test_bdd.py), the engine's traffic
(``bench/bench_provenance.py``).

Run: ``python -m bench.bench_bdd [--repeat N]`` or ``python -m bench.bench_bdd --ts100
[--budget S] [--fractions F ...] [--orders ORDER ...] [--no-pairs]`` (``--ts100`` needs
networkx, in the ``bench`` extra). Recorded figures: ``bench/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import random
import shlex
import statistics
import sys
import time
from pathlib import Path

import msgpack

from bench.common import print_header, print_table, timer
from provenance.bdd import BDDContext, var_name

__all__ = ["main"]

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))   # graphs.py


def _time(fn, repeat: int) -> float:
    """Median milliseconds of ``fn()`` over ``repeat`` runs."""
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0) * 1000)
    return statistics.median(runs)


def path_dnf(ctx: BDDContext, rng: random.Random, n_vars: int, terms: int, length: int):
    """``terms`` products of ``length`` variables, each drawn from a window of ``2 * length``
    consecutive insertion ids (derivations use nearby links). Fully random products blow up
    exponentially under any fixed order (40 variables, 20 products of 4: 16,238 nodes)."""
    sets = []
    for _ in range(terms):
        start = rng.randrange(0, n_vars - 2 * length)
        sets.append([var_name(i) for i in rng.sample(range(start, start + 2 * length),
                                                      length)])
    return ctx.from_sets(sets)


def reachable_provenance(ctx: BDDContext, n: int, m: int, seed: int):
    """Provenance of every reachable tuple of a seeded random graph (central naive fixpoint
    in BDDs, links numbered in (src, dst) order); returns the largest."""
    from graphs import random_links
    import psn
    from provenance.posbool import BDDSemiring, evaluate_annotated
    prog = psn.load(Path(__file__).resolve().parent.parent / "examples" / "reachable.ndl")
    links = [(a, b) for a, b, _ in random_links(n, m, random.Random(seed))]
    base = {"link": {t: ctx.var(var_name(i)) for i, t in enumerate(links)}}
    prov = evaluate_annotated(prog, base, BDDSemiring(ctx))["reachable"]
    return max(prov.values(), key=lambda f: f.dag_size)


def ts100_links(fraction: float, seed: int = 0) -> list[tuple]:
    """A seeded ``fraction`` of ``ts100``'s bidirectional links, both directions, in
    (src, dst) order (the order of their variables)."""
    import topologies
    links = sorted(topologies.make("ts100", seed=0).facts(2)["link"])
    pairs = sorted({tuple(sorted(lk)) for lk in links})
    random.Random(seed).shuffle(pairs)
    keep = set(pairs[:round(len(pairs) * fraction)])
    return [lk for lk in links if tuple(sorted(lk)) in keep]


def depth_first(links: list[tuple]) -> list[tuple]:
    """``links`` ordered by a depth-first walk of the (undirected) topology, each component
    from its best-connected node (smallest id among ties): a link comes after every link
    between nodes visited before its later end, so the links of a stub (hung off its
    transit node by one link) stay together."""
    nbrs: dict = {}
    for a, b in links:
        nbrs.setdefault(a, set()).add(b)
        nbrs.setdefault(b, set()).add(a)
    pos: dict = {}
    for start in sorted(nbrs, key=lambda v: (-len(nbrs[v]), v)):
        stack = [start]
        while stack:
            v = stack.pop()
            if v in pos:
                continue
            pos[v] = len(pos)
            stack.extend(sorted(nbrs[v] - pos.keys(), reverse=True))
    return sorted(links, key=lambda lk: (max(pos[lk[0]], pos[lk[1]]),
                                         min(pos[lk[0]], pos[lk[1]]), pos[lk[0]]))


#: The variable orders of ``--ts100``: label -> (CUDD sifting on, order of the links).
ORDERS = {"link order": (False, list), "depth-first": (False, depth_first),
          "sifting": (True, list)}


def full_provenance(links: list[tuple], reorder: bool, report) -> None:
    """The provenance of every reachable tuple over ``links`` by a semi-naive fixpoint in
    one manager: ``P(s, d) = link(s, d) | OR_z link(s, z) & P(z, d)``; ``report`` gets
    the figures after every round."""
    ctx = BDDContext(reorder=reorder, memory_estimate=2**32)
    var = {lk: ctx.var(var_name(i)) for i, lk in enumerate(links)}
    into: dict = {}
    for s, z in links:
        into.setdefault(z, []).append(s)
    prov = dict(var)
    delta = dict(var)
    t0 = time.perf_counter()
    rounds = 0
    while delta:
        new: dict = {}
        for (z, d), f in delta.items():
            for s in into.get(z, ()):
                if s == d:
                    continue
                g = var[(s, z)] & f
                old = prov.get((s, d), ctx.false)
                if not g <= old:
                    prov[(s, d)] = old | g
                    new[(s, d)] = new.get((s, d), ctx.false) | g
        delta = new
        rounds += 1
        report({"rounds": rounds, "tuples": len(prov),
                "manager nodes": len(ctx.bdd),   # live nodes
                "largest": max(f.dag_size for f in prov.values()),
                "s": round(time.perf_counter() - t0, 1), "finished": not delta})


def _ts100_child(fraction: float, order: str, queue) -> None:
    import warnings
    warnings.simplefilter("ignore")
    reorder, arrange = ORDERS[order]
    full_provenance(arrange(ts100_links(fraction)), reorder, queue.put)


#: The fractions of ts100's links ``--ts100`` runs by default.
FRACTIONS = (0.5, 0.65, 0.8, 1.0)


def ts100_rows(budget: float, fractions=FRACTIONS, orders=tuple(ORDERS)) -> list[list]:
    """One row per (fraction, order): the last round reported within ``budget``."""
    import multiprocessing as mp
    import queue as queues
    rows = []
    for fraction in fractions:
        for order in orders:
            fork = mp.get_context("fork")
            q = fork.Queue()
            proc = fork.Process(target=_ts100_child, args=(fraction, order, q))
            t0 = time.perf_counter()
            proc.start()
            last = None
            while True:
                left = budget - (time.perf_counter() - t0)
                if left <= 0:
                    break
                try:
                    last = q.get(timeout=min(left, 1.0))
                except queues.Empty:
                    if proc.exitcode is not None:      # the child failed: stop, saying which
                        raise SystemExit(f"the {order} fixpoint on {fraction:g} of the "
                                         f"links failed (exit code {proc.exitcode})")
                    continue
                if last["finished"]:
                    break
            proc.kill()
            proc.join()
            done = bool(last and last["finished"])
            rows.append([fraction, len(ts100_links(fraction)), order,
                         last["rounds"] if last else 0,
                         last["tuples"] if last else "", last["manager nodes"] if last else "",
                         last["largest"] if last else "",
                         last["s"] if done else f"stopped at {budget:g} s"])
            print(*rows[-1], sep=" | ", flush=True)
    return rows


def pair_rows(pairs: int = 6, seed: int = 0) -> list[list]:
    """For ``pairs`` seeded pairs of ``ts100`` nodes, every link present: the number of
    simple paths and the BDD size of their OR (the pair's whole provenance), in link order
    and in depth-first order."""
    import networkx as nx
    links = ts100_links(1.0)
    g = nx.DiGraph(links)
    rng = random.Random(seed)
    chosen = [tuple(rng.sample(sorted(g), 2)) for _ in range(pairs)]
    paths = {(s, d): [list(zip(p, p[1:])) for p in nx.all_simple_paths(g, s, d)]
             for s, d in chosen}
    sizes = {}
    for order, (_, arrange) in ORDERS.items():
        if order == "sifting":
            continue
        ctx = BDDContext()
        var = {lk: ctx.var(var_name(i)) for i, lk in enumerate(arrange(links))}
        for pair, ps in paths.items():
            f = ctx.false
            for p in ps:
                f = f | ctx.conj([var[e] for e in p])
            sizes[pair, order] = f.dag_size
    return [[f"{s} -> {d}", len(paths[s, d]), sizes[(s, d), "link order"],
             sizes[(s, d), "depth-first"]] for s, d in chosen]


def measure(label: str, ctx: BDDContext, f, repeat: int) -> list:
    data = ctx.serialize(f)
    packed = msgpack.packb(data)

    def write():
        ctx._ser_cache.clear()
        msgpack.packb(ctx.serialize(f))
    write = _time(write, repeat)

    fresh = [BDDContext() for _ in range(repeat)]        # manager creation not timed

    def read_fresh():
        fresh.pop().deserialize(msgpack.unpackb(packed, use_list=False))
    reversed_ctx = BDDContext(reorder=True)
    for v in sorted(ctx.support(f), key=lambda v: -int(v[1:])):
        reversed_ctx.var(v)
    read = _time(read_fresh, repeat)
    read_rev = _time(lambda: reversed_ctx.deserialize(msgpack.unpackb(packed, use_list=False)),
                     repeat)
    nodes = f.dag_size
    return [label, nodes, len(ctx.support(f)), len(packed), round(len(packed) / nodes, 2),
            round(write, 3), round(read, 3), round(read_rev, 3)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--ts100", action="store_true",
                    help="the whole provenance of reachable on ts100 instead")
    ap.add_argument("--budget", type=float, default=120.0,
                    help="--ts100: seconds per fixpoint (default 120)")
    ap.add_argument("--fractions", type=float, nargs="+", default=list(FRACTIONS),
                    metavar="F", help="--ts100: fractions of the links (default: %(default)s)")
    ap.add_argument("--orders", nargs="+", choices=list(ORDERS), default=list(ORDERS),
                    metavar="ORDER", help="--ts100: variable orders, of: " + ", ".join(
                        repr(o) for o in ORDERS) + " (default: all)")
    ap.add_argument("--no-pairs", action="store_true",
                    help="--ts100: skip the end results of the seeded pairs")
    args = ap.parse_args(argv)
    if any(not 0 < f <= 1 for f in args.fractions):
        ap.error("--fractions are in (0, 1]")
    if args.ts100:
        try:
            import networkx  # noqa: F401  (the pairs' simple paths)
        except ImportError:
            raise SystemExit('--ts100 needs networkx: pip install -e ".[bench]"') from None
        print_header("Whole absorption provenance of reachable on ts100, central",
                     "python -m bench.bench_bdd " + shlex.join(argv if argv is not None
                                                               else sys.argv[1:]))
        rows = ts100_rows(args.budget, args.fractions, args.orders)
        print_table(["links", "link tuples", "order", "rounds", "tuples", "manager nodes",
                     "largest BDD", "fixpoint s"], rows)
        print("# a stopped row gives the last round completed within the budget")
        if args.no_pairs:
            return 0
        print()
        print_table(["pair (every link)", "simple paths", "BDD nodes, link order",
                     "BDD nodes, depth-first"], pair_rows())
        print("# the pair's whole provenance, the OR of its simple paths, built alone")
        return 0
    print_header("Serialized absorption-provenance BDDs: size and write/read time",
                 f"python -m bench.bench_bdd --repeat {args.repeat}")
    rng = random.Random(0)
    rows = []
    for n_vars, terms, length in [(8, 2, 2), (20, 8, 3), (40, 20, 4), (80, 40, 5),
                                  (150, 80, 6), (300, 200, 8)]:
        ctx = BDDContext()
        f = path_dnf(ctx, rng, n_vars, terms, length)
        rows.append(measure(f"path dnf v={n_vars} t={terms} l={length}", ctx, f,
                            args.repeat))
    for n, m in [(8, 16), (12, 30), (16, 40)]:
        for reorder in (False, True):
            ctx = BDDContext(reorder=reorder)
            with timer() as took:
                f = reachable_provenance(ctx, n, m, seed=n)
            label = f"reachable n={n} m={m} {'sifting' if reorder else 'ids'}"
            rows.append(measure(label, ctx, f, args.repeat) + [round(took(), 2)])
    for r in rows:
        if len(r) == 8:
            r.append("")
    print_table(["BDD", "nodes", "vars", "bytes", "B/node", "write ms", "read ms (fresh)",
                 "re-read ms (warm, reversed)", "fixpoint s"], rows)
    print("# 'ids': variables ordered by insertion id (default); 'sifting': CUDD dynamic")
    print("# reordering on during the fixpoint. reachable rows: the largest provenance of")
    print("# all reachable tuples. write = serialize + msgpack.packb (cache cleared);")
    print("# read (fresh) = msgpack.unpackb + deserialize into a new manager; re-read = the")
    print("# same into a manager declared in reversed order that has rebuilt it before.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
