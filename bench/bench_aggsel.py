"""Benchmark of aggregate selection: off, single and multi (Liu et al. ICDE 2009, Sec. 7.4).

Run: ``python -m bench.bench_aggsel`` from the checkout (``--topologies sparse`` for one
topology, ``--modes single,multi`` for some modes). Shortest path
(``examples/shortest_path.ndl``, Liu Query 2) on the dense and the sparse 100-node
transit-stub topologies of Liu Sec. 7.3 (the presets ``liu-dense``, four link tuples per node,
and ``liu-sparse``, half as many; ``docs/topologies.md``) in the simulator, absorption provenance with lazy MinShip, random delivery, every link inserted in
one burst, checked against ``psn.evaluate`` (``--check``; the aggregate relations minCost,
minHops, cheapestPath, fewestHops and shortestCheapestPath are compared, ``path`` is not:
every mode prunes it differently). Per row, in a fresh child process: tuples and bytes
shipped between nodes, simulated convergence time, wall time, peak memory, the check.

The modes:

* ``multi``: one query, ``path`` pruned to the tuples best for the cost or the hop count;
* ``single``: one query per aggregate (``path_minCost`` pruned by the cost only,
  ``path_minHops`` by the hop count only; :func:`localize.passes.one_query_per_aggregate`),
  the traffic summed; the rows below it split its tuples per query (the predicates each
  query derives; what both read, such as the link mirror, is ``shared``);
* ``off``: nothing pruned. It enumerates every simple path, which does not finish on a
  dense topology (Liu: "do not complete within 5 minutes for dense topologies"): the run
  stops at ``--off-memory`` of resident memory (default 4 GiB) or ``--off-updates`` updates
  sent, and the row says how far it got.

Target (Liu Sec. 7.4): multi ships about half of what single ships. Recorded figures:
``bench/RESULTS.md``.

Deliberately not here: assertions (a benchmark reports; tests never time anything).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
from pathlib import Path

from .common import peak_rss_mb, print_header, print_table, timer

__all__ = ["main"]

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MODES = ("off", "single", "multi")
AGGREGATES = ("minCost", "minHops", "cheapestPath", "fewestHops", "shortestCheapestPath")


class QueryTally:
    """A send stage, installed last on every node, counting the tuples each node ships to
    another node per query (:func:`queries`): the same updates the transport counts in
    ``tuples_sent``."""

    def __init__(self, query_of: dict):
        self.query_of = query_of
        self.tuples: dict[str, int] = {}

    def install(self, node) -> None:
        node.send_stages.append(self)

    def send(self, node, out: list) -> list:
        me, tally, query_of = node.id, self.tuples, self.query_of
        for dst, upd in out:
            if dst != me:
                q = query_of.get(upd[1], "shared")
                tally[q] = tally.get(q, 0) + 1
        return out

    def flush(self, node) -> list:
        return []


def queries(source, program) -> dict[str, str]:
    """``predicate -> query`` of ``program`` (the :class:`engine.EngineProgram` a run
    prepared from ``source``, split by ``one_query_per_aggregate`` when single): the
    aggregate of the one copy a predicate depends on (``sp2_minCost_aux`` -> ``minCost``);
    predicates depending on no copy or on several are left out (``shared``)."""
    from localize.analysis import query_splits
    from ndlog.analysis import dependency_graph
    copies = {c: c[len(s.pred) + 1:] for s in query_splits(source).values()
              for c in s.copies.values() if c in program.predicates}
    reads: dict[str, set[str]] = {}
    for dep in dependency_graph(program.program):
        reads.setdefault(dep.head, set()).add(dep.body)
    out = {}
    for pred in program.predicates:
        seen, todo, hit = {pred}, [pred], set()
        while todo:
            p = todo.pop()
            if p in copies:
                hit.add(copies[p])
            for q in reads.get(p, ()):
                if q not in seen:
                    seen.add(q)
                    todo.append(q)
        if len(hit) == 1:
            out[pred] = hit.pop()
    return out


def _row(config: dict) -> dict:
    """One run (in a child process): its figures."""
    import psn
    import topologies
    from engine import NotConvergedError, RunOptions
    from engine.guards import MemoryLimitError
    from sim import Simulation

    program = psn.load(EXAMPLES / "shortest_path.ndl")
    topo = topologies.make(config["topology"], seed=config["seed"])
    off = config["mode"] == "off"
    options = RunOptions(aggsel=config["mode"], seed=config["seed"],
                         max_memory=config["off_memory"] if off else None,
                         max_updates=config["off_updates"] if off else None)
    out = {"links": topo.num_links}
    with timer() as t:
        sim = Simulation(program, topo, options=options, state_metrics=False)
        tally = QueryTally(queries(program, sim.net.program))
        sim.net.host.on_node = tally.install        # before the first node exists
        try:
            (step,) = sim.run_workload("all", check=config["check"], progress=False)
        except (MemoryLimitError, NotConvergedError) as exc:
            step = None
            out["stopped"] = type(exc).__name__
    out["wall"] = t()
    totals = sim.net.transport.metrics.totals
    out.update(tuples=totals["tuples_sent"], bytes=totals["bytes_sent"],
               rss=peak_rss_mb(), queries=dict(sorted(tally.tuples.items())),
               aggsel=sim.aggsel)
    if step is not None:
        rel = sim.relations()
        out.update(sim_time=step.sim_time, check=step.check,
                   rows={p: len(rel[p]) for p in rel if p.startswith("path")})
    else:
        out["sim_time"] = sim.now
    return out


def _run(config: dict) -> dict:
    with mp.get_context("spawn").Pool(1) as pool:
        return pool.apply(_row, (config,))


def _cells(topology: str, mode: str, r: dict) -> list:
    """A table row; a run that was stopped shows the traffic up to the stop."""
    mb, wall = f"{r['bytes'] / 2**20:.2f}", f"{r['wall']:.1f}"
    if "stopped" in r:
        why = "memory" if r["stopped"] == "MemoryLimitError" else "updates"
        return [topology, r["links"], mode, r["tuples"], mb, "-", wall, round(r["rss"]),
                f"did not finish (stopped at the {why} limit)"]
    check = "ok" if r["check"] else ("FAILED" if r["check"] is False else "-")
    return [topology, r["links"], mode, r["tuples"], mb, f"{r['sim_time']:.3f}", wall,
            round(r["rss"]), check]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topologies", default="liu-dense,liu-sparse",
                    help="comma-separated topology names (default liu-dense,liu-sparse; "
                    "GT-ITM's own dense,sparse are denser)")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="comma-separated aggregate-selection modes (default off,single,multi)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--off-memory", type=float, default=4.0,
                    help="GiB of resident memory at which an 'off' run stops (default 4)")
    ap.add_argument("--off-updates", type=int, default=20_000_000,
                    help="updates sent at which an 'off' run stops (default 20,000,000)")
    ap.add_argument("--no-check", dest="check", action="store_false")
    args = ap.parse_args(argv)
    print_header("aggregate selection: off, single, multi on shortest path (Liu Sec. 7.4)",
                 "python -m bench.bench_aggsel " + " ".join(sys.argv[1:]))
    print("# simulator, absorption provenance, lazy MinShip, random delivery, seed "
          f"{args.seed}; every link inserted in one burst"
          + ("; checked against psn.evaluate (the five aggregate relations)"
             if args.check else ""))
    rows, per_query, results = [], [], {}
    for topology in args.topologies.split(","):
        for mode in args.modes.split(","):
            r = _run({"topology": topology, "mode": mode, "seed": args.seed,
                      "check": args.check, "off_memory": int(args.off_memory * 2**30),
                      "off_updates": args.off_updates})
            results[(topology, mode)] = r
            rows.append(_cells(topology, mode, r))
            print("  " + "  ".join(str(c) for c in rows[-1]), file=sys.stderr, flush=True)
            if mode == "single":
                for q, n in r["queries"].items():
                    rows_of = r.get("rows", {}).get(f"path_{q}", "-")
                    per_query.append([topology, q, n, rows_of])
    print_table(["topology", "links", "aggsel", "tuples shipped", "MB shipped",
                 "sim s", "wall s", "peak MB", "check"], rows)
    if per_query:
        print("\nsingle, per query (tuples shipped; rows of the query's copy of path)")
        print_table(["topology", "query", "tuples shipped", "path rows"], per_query)
    ratios = []
    for topology in args.topologies.split(","):
        m, s = results.get((topology, "multi")), results.get((topology, "single"))
        if m and s and "stopped" not in m and "stopped" not in s and s["bytes"]:
            ratios.append(f"{topology} {m['bytes'] / s['bytes']:.2f} (bytes), "
                          f"{m['tuples'] / s['tuples']:.2f} (tuples)")
    if ratios:
        print("\nmulti / single: " + "; ".join(ratios))
    print("target: multi ships about half of single (Liu Sec. 7.4); off does not finish on "
          "dense topologies")


if __name__ == "__main__":
    main()
