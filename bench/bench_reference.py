"""Benchmark of the centralized reference evaluator (``psn.evaluate``).

Run: ``python -m bench.bench_reference`` from the checkout. Prints wall time and derived
tuples per second for reachable and shortest path (all four aggregate relations) on a seeded
random 100-node, 400-link graph. Targets on a 2-core machine: reachable < 1 s, shortest path
< 10 s. Recorded figures: ``bench/RESULTS.md``.

Deliberately not here: assertions (a benchmark reports; tests never time anything).
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import psn

from .common import print_header, print_table, timer

__all__ = ["main"]

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def links(n: int, m: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    pairs: set = set()
    while len(pairs) < m:
        a, b = rng.sample(range(n), 2)
        pairs.add((a, b))
    return [(a, b, rng.randint(1, 10)) for a, b in sorted(pairs)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--links", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="runs per row; best is shown")
    args = ap.parse_args(argv)
    print_header("reference evaluator", "python -m bench.bench_reference")
    data = links(args.nodes, args.links, args.seed)
    rows = []
    for name, file, facts, rels in [
        ("reachable", "reachable.ndl", {"link": [(a, b) for a, b, _ in data]},
         ["reachable"]),
        ("shortest path", "shortest_path.ndl", {"link": data},
         ["path", "minCost", "minHops", "cheapestPath", "fewestHops",
          "shortestCheapestPath"]),
    ]:
        program = psn.load(EXAMPLES / file)
        best, derived = float("inf"), 0
        for _ in range(args.repeat):
            with timer() as t:
                result = psn.evaluate(program, facts)
            best = min(best, t())
            derived = sum(len(result[r]) for r in rels)
        rows.append([name, args.nodes, args.links, derived, best, derived / best])
    print_table(["query", "nodes", "links", "derived tuples", "wall s", "tuples/s"], rows,
                targets={"reachable": "< 1 s", "shortest path": "< 10 s"})


if __name__ == "__main__":
    main()
