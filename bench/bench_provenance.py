"""Benchmark of absorption provenance, MinShip and aggregate selection (Liu et al. ICDE 2009,
Sec. 7.2-7.4): prints tables, asserts nothing.

1. Reachability on a seeded random 100-node, 400-link directed graph, all links inserted in
   one burst: ``set``, ``absorption`` with lazy MinShip and ``absorption`` with eager
   MinShip side by side: engine wall time (``Network.run``), tuples and bytes shipped, and
   provenance bytes per shipped tuple (the ``annotation_bytes`` of the wire format). Eager
   runs in a child process killed after ``--eager-limit`` seconds (Liu: their eager run
   did not finish in 5 minutes on a dense graph).
2. Then 20 links deleted one at a time from the lazy run: per-deletion wall time to
   quiescence and tuples shipped (median and max), against the insertion run's tuples,
   and the tuples and bytes of the 20 together.
3. Shortest path (examples/shortest_path.ndl) on a dense graph with no, single and multi
   aggregate selection (absorption, lazy MinShip): tuples and bytes shipped, wall time
   (``off`` is run under the same time limit).

Targets: absorption lazy inserts all links in under 1 s; one link deletion converges in
under 50 ms and ships under 5% of the insertion run's tuples; multi AggSel ships at most
half of single AggSel on a dense graph (Liu et al. Sec. 7.4 report about half). Recorded
figures: ``bench/RESULTS.md``.

Run: ``python bench/bench_provenance.py [--seed N] [--placement node|single]
[--contexts process|worker] [--eager-limit S] [--sp-nodes N] [--sp-links M]``.
``--placement node`` (default) gives every node its own worker, so every update between
nodes is encoded and counted as traffic; ``single`` puts all nodes in one worker (no
traffic). ``--contexts process`` (default, as ``Network``) lets the in-process workers share
one CUDD manager, so a message is encoded but not rebuilt; ``worker`` gives each worker its
own manager, so every message between workers is rebuilt from its bytes (as between Ray
worker processes).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psn  # noqa: E402
from bench.common import print_header, print_table  # noqa: E402
from engine import Network  # noqa: E402
from engine.transport import Placement  # noqa: E402
from provenance.absorption import AbsorptionScheme  # noqa: E402

__all__ = ["main"]

REACH = psn.load(ROOT / "examples" / "reachable.ndl")
SP = psn.load(ROOT / "examples" / "shortest_path.ndl")


def random_links(n: int, m: int, rng: random.Random, cost: int | None = None) -> list:
    links: set = set()
    while len(links) < m:
        a, b = rng.sample(range(n), 2)
        links.add((a, b))
    out = sorted(links)
    return out if cost is None else [(a, b, rng.randint(1, cost)) for a, b in out]


def _placement(name: str):
    return Placement.single() if name == "single" else None


def _scheme(label: str):
    if label == "set":
        return "set", None
    return AbsorptionScheme(reorder=False), label.split(" ", 1)[1]


def _row(label, net, seconds) -> list:
    m = net.metrics
    tuples = m["tuples_sent"]
    per = m["annotation_bytes"] / tuples if tuples else 0.0
    return [label, round(seconds, 3), tuples, m["bytes_sent"], round(per, 1),
            len(net.relations()["reachable"])]


def _insert(program, links, label, placement, aggsel=None, contexts="process"):
    ann, ship = _scheme(label)
    net = Network(program, annotation=ann, ship=ship, aggsel=aggsel, delivery="random",
                  seed=1, placement=_placement(placement), contexts=contexts)
    net.apply((1, "link", t) for t in links)
    t0 = time.perf_counter()
    net.run()
    return net, time.perf_counter() - t0


def _child(program, links, label, placement, aggsel, contexts, queue) -> None:
    net, sec = _insert(program, links, label, placement, aggsel, contexts)
    m = net.metrics
    queue.put((sec, m["tuples_sent"], m["bytes_sent"], m["annotation_bytes"],
               sum(len(v) for v in net.relations().values())))


def _limited(program, links, label, placement, aggsel, limit: float, contexts="process"):
    """Run in a forked child; ``None`` if it did not finish within ``limit`` seconds."""
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(program, links, label, placement, aggsel, contexts, q))
    p.start()
    p.join(limit)
    if p.is_alive():
        p.kill()
        p.join()
        return None
    return q.get() if not q.empty() else None


def reachable_table(args) -> None:
    rng = random.Random(args.seed)
    links = random_links(100, 400, rng)
    rows, nets = [], {}
    for label in ("set", "absorption lazy"):
        net, sec = _insert(REACH, links, label, args.placement, None, args.contexts)
        nets[label] = net
        rows.append(_row(label, net, sec))
    for label in ("absorption eager", "absorption eager:1"):
        res = _limited(REACH, links, label, args.placement, None, args.eager_limit,
                       args.contexts)
        if res is None:
            rows.append([label, f"> {args.eager_limit:.0f} (killed)", "-", "-", "-", "-"])
        else:
            sec, tuples, size, ann, n = res
            rows.append([label, round(sec, 3), tuples, size,
                         round(ann / tuples, 1) if tuples else 0.0, n])
    print("\n## 1. reachable, 100 nodes, 400 links, all inserted in one burst")
    print_table(["run", "wall s", "tuples", "bytes", "prov B/tuple", "reachable"], rows,
                {"absorption lazy insertion": "< 1 s"})
    deletions(nets["absorption lazy"], links, rng, rows[1][2])


def deletions(net, links, rng, insert_tuples: int) -> None:
    rows, times, shipped = [], [], []
    bytes_before = net.metrics["bytes_sent"]
    for i, t in enumerate(rng.sample(links, 20)):
        before = net.metrics["tuples_sent"]
        net.delete("link", t)
        t0 = time.perf_counter()
        net.run()
        sec = time.perf_counter() - t0
        sent = net.metrics["tuples_sent"] - before
        times.append(sec)
        shipped.append(sent)
        rows.append([i + 1, f"link({t[0]}, {t[1]})", round(sec * 1000, 1), sent,
                     round(100 * sent / insert_tuples, 2)])
    ref = psn.evaluate(REACH, {"link": sorted(net.base_facts()["link"])})["reachable"]
    print("\n## 2. absorption lazy: 20 links deleted one at a time")
    print_table(["#", "deleted", "ms", "tuples", "% of insertion"], rows)
    print(f"median {statistics.median(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms; "
          f"tuples median {statistics.median(shipped):.0f}, max {max(shipped)} "
          f"({100 * max(shipped) / insert_tuples:.2f}% of {insert_tuples}); "
          f"all 20: {sum(shipped):,} tuples, "
          f"{net.metrics['bytes_sent'] - bytes_before:,} bytes; "
          f"result equals psn.evaluate: {net.relations()['reachable'] == ref}")
    print("target: one deletion < 50 ms and < 5% of the insertion run's tuples")


def aggsel_table(args) -> None:
    rng = random.Random(args.seed + 1)
    links = random_links(args.sp_nodes, args.sp_links, rng, cost=9)
    ref = psn.evaluate(SP, {"link": links})
    rows = []
    for mode in ("multi", "single", "off"):
        if mode == "off":
            res = _limited(SP, links, "absorption lazy", args.placement, mode,
                           args.eager_limit, args.contexts)
            if res is None:
                rows.append([mode, f"> {args.eager_limit:.0f} (killed)", "-", "-", "-"])
            else:
                rows.append([mode, round(res[0], 3), res[1], res[2], "-"])
            continue
        net, sec = _insert(SP, links, "absorption lazy", args.placement, mode,
                           args.contexts)
        got = net.relations()
        exact = all(got[p] == ref[p] for p in ("minCost", "minHops", "cheapestPath",
                                               "fewestHops", "shortestCheapestPath"))
        m = net.metrics
        rows.append([mode, round(sec, 3), m["tuples_sent"], m["bytes_sent"],
                     "yes" if exact else "NO"])
    print(f"\n## 3. shortest path, {args.sp_nodes} nodes, {args.sp_links} links "
          f"(costs 1..9), absorption lazy")
    print_table(["aggsel", "wall s", "tuples", "bytes", "5 aggregates = psn.evaluate"],
                rows, {"multi vs single": "multi ships about half of single (single: one "
                       "query per aggregate; python -m bench.bench_aggsel for Liu's "
                       "100-node topologies)"})


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--placement", choices=("node", "single"), default="node")
    ap.add_argument("--contexts", choices=("process", "worker"), default="process")
    ap.add_argument("--eager-limit", type=float, default=120.0)
    ap.add_argument("--sp-nodes", type=int, default=30)
    ap.add_argument("--sp-links", type=int, default=240)
    args = ap.parse_args(argv)
    print_header("absorption provenance, MinShip, aggregate selection (Liu Sec. 7.2-7.4)",
                 "python bench/bench_provenance.py " + " ".join(sys.argv[1:]))
    reachable_table(args)
    aggsel_table(args)


if __name__ == "__main__":
    main()
