"""Benchmark of the PSN engine: prints tables, asserts nothing.

1. Reachability on a seeded random 100-node, 400-link directed graph with the ``set``
   scheme, all links inserted in one burst: engine wall time (``Network.run``), derivations
   per second, traffic. The distributed program (localized, 100 nodes) and the same rules
   without ``@`` (one node) are both shown. Target: the 100-node ``set`` run under 0.5 s of
   engine time on the 2-core machine (a hand-written loop: 0.012 s).
2. ``derivation`` on 10-, 15-, 20- and 25-node graphs (1.5 links per node): how state
   (stored tuples and occurrences) and messages grow with derivation sets.

Run: ``python bench/bench_engine.py [--seed N] [--repeat R] [--delivery fifo|random|adversarial]``
Engine time is ``Network.run`` only (not parsing, localization, compilation or injection),
as wall seconds and as CPU seconds of the process (steadier on a shared machine); the median
of ``--repeat`` runs is printed. Recorded figures: ``bench/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psn  # noqa: E402
from engine import Network  # noqa: E402

__all__ = ["main"]

REACH = """
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
"""


def random_links(n: int, m: int, rng: random.Random) -> list[tuple]:
    links: set[tuple] = set()
    while len(links) < m:
        a, b = rng.sample(range(n), 2)
        links.add((a, b))
    return sorted(links)


def run_once(program, links, annotation, delivery, seed):
    net = Network(program, annotation=annotation, delivery=delivery, seed=seed)
    net.apply((1, "link", lk) for lk in links)
    t0, c0 = time.perf_counter(), time.process_time()
    net.run()
    net.cpu_seconds = time.process_time() - c0
    return time.perf_counter() - t0, net


def table(rows, headers) -> str:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).rjust(w) for h, w in zip(headers, widths))
    out = [line, "-" * len(line)]
    out += ["  ".join(str(v).rjust(w) for v, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def bench_set(args) -> None:
    rng = random.Random(args.seed)
    links = random_links(100, 400, rng)
    central = psn.parse(REACH.replace("@", ""))
    dist = psn.parse(REACH)
    rows = []
    for label, prog in (("one node (no @)", central), ("100 nodes (localized)", dist)):
        for delivery in args.deliveries:
            times, cpus, net = [], [], None
            for r in range(args.repeat):
                t, net = run_once(prog, links, "set", delivery, args.seed + r)
                times.append(t)
                cpus.append(net.cpu_seconds)
            m = net.metrics
            t, c = statistics.median(times), statistics.median(cpus)
            reach = len(net.relations()["reachable"])
            rows.append((label, delivery, f"{t:.3f}", f"{c:.3f}",
                         f"{m['derivations'] / c:,.0f}",
                         m["updates_processed"], reach, m["messages_sent"],
                         m["tuples_sent"], m["bytes_sent"]))
    t0 = time.perf_counter()
    ref = psn.evaluate(central, {"link": links})
    t_ref = time.perf_counter() - t0
    print("reachable, set, 100 nodes, 400 links, all inserted in one burst "
          f"(median of {args.repeat}; psn.evaluate: {t_ref:.3f} s, "
          f"{len(ref['reachable'])} tuples)")
    print(table(rows, ("program", "delivery", "wall s", "cpu s", "derivations/cpu s",
                       "updates",
                       "reachable", "messages", "tuples sent", "bytes sent")))


def bench_derivation(args) -> None:
    rows = []
    for n in args.sizes:
        rng = random.Random(args.seed * 1000 + n)
        links = random_links(n, int(args.degree * n), rng)
        t, net = run_once(psn.parse(REACH), links, "derivation", "fifo", args.seed)
        m = net.metrics
        per = m["annotation_bytes"] / max(1, m["tuples_sent"])
        rows.append((n, len(links), f"{t:.3f}", f"{net.cpu_seconds:.3f}",
                     m["updates_processed"], m["state_tuples"],
                     m["state_occurrences"], m["messages_sent"], m["tuples_sent"],
                     m["bytes_sent"], f"{per:.0f}"))
    print()
    print(f"reachable, derivation sets (Nigam Sec. 5), random directed graphs with "
          f"{args.degree:g} links per node, all inserted in one burst, fifo")
    print(table(rows, ("nodes", "links", "wall s", "cpu s", "updates", "state tuples",
                       "occurrences", "messages", "tuples sent", "bytes sent",
                       "ann. bytes/tuple")))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--delivery", action="append", dest="deliveries",
                   choices=("fifo", "random", "adversarial"))
    p.add_argument("--sizes", type=int, nargs="*", default=[10, 15, 20, 25])
    p.add_argument("--degree", type=float, default=1.5,
                   help="links per node of the derivation-set graphs (default 1.5; at 2, sizes "
                   "10-25 did not finish in 12 minutes on the loaded 2-core machine)")
    args = p.parse_args(argv)
    args.deliveries = args.deliveries or ["fifo", "random"]
    bench_set(args)
    bench_derivation(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
