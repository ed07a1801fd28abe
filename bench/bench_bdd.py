"""Serialized size and write/read times of absorption-provenance BDDs (provenance.bdd).

Role: measure the wire form of :mod:`provenance.bdd` (a node list rebuilt with ``ite``,
chosen because ``dd.cudd.Function`` does not pickle and ``to_expr``/``add_expr`` blow up
exponentially) for BDDs of growing size: random monotone DNFs (sets of
path-like variable sets) and real reachability provenance computed centrally on seeded
random graphs. "write" is serialize + msgpack.packb in the sender's manager; "read" is
msgpack.unpackb + deserialize (ite rebuild) in another manager, either a fresh one (variables
declared on the fly) or one whose variable order was reversed beforehand.

Deliberately not here: assertions (see tests/test_bdd.py), the engine's traffic
(``bench/bench_provenance.py``).

Run: ``python -m bench.bench_bdd [--repeat N]``. Recorded figures: ``bench/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import msgpack

from bench.common import print_header, print_table, timer
from provenance.bdd import BDDContext, var_name

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
    args = ap.parse_args(argv)
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
