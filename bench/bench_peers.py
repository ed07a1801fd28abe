"""PSN beside the tools a user would pick instead: clingo, networkx, the centralized reference.

Role: one table, in one process per measurement (so peak memory is that measurement's own),
of reachable on GT-ITM's ts100 and on a 1,000-node dense transit-stub topology: clingo
(grounding and solving), networkx (descendants of every node), ``psn.evaluate``, the
simulator with set semantics and with absorption provenance and lazy MinShip (one worker per
node, random delivery), the same absorption run on two local Ray actors (``--engine ray
--workers 2``; its wall time excludes starting Ray and the actors, its peak memory is the
driver's only), and one transit-stub link deletion, incrementally in the simulator vs
recomputed by ``psn.evaluate``. Every row that computes the relation is checked against
``psn.evaluate``'s (column ``same``). It prints the ratios the engine is held to and the
machine; with ``--repeat N`` every figure is the range over N runs.

Run: ``python -m bench.bench_peers [--repeat N]`` (``--quick``: ts100 only). clingo and
networkx come with the ``bench`` extra: ``pip install -e ".[bench]"``.

Deliberately not here: assertions (a benchmark reports; tests never time anything).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import time

from bench.common import peak_rss_mb, print_header, print_table

__all__ = ["main"]

REACH = """
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
"""

TOPOLOGIES = {"ts100": ("ts100", {}), "dense1000": ("dense", {"nodes": 1000})}

#: What the engine is held to: ratio name -> (numerator, denominator, target per topology).
RATIOS = {
    "simulator set / psn.evaluate": ("sim_set", "evaluate", (2.0, 2.0)),
    "simulator absorption / simulator set": ("sim_absorption", "sim_set", (1.3, 1.3)),
    "deletion incremental / psn.evaluate recompute": ("delete_incremental",
                                                      "delete_recompute", (0.5, 0.1)),
    "psn.evaluate / clingo": ("evaluate", "clingo", (1.0, 1.0)),
    "Ray 2 workers / simulator absorption": ("ray2", "sim_absorption", (1.5, 1.5)),
}


def _digest(rows) -> int:
    """One number for a relation (its tuples are ints, so hashing is the same in every
    process): two rows agree when their digests do."""
    return hash(frozenset(rows))


def _topology(name: str):
    import topologies
    kind, options = TOPOLOGIES[name]
    return topologies.make(kind, seed=1, **options)


def _links(topo) -> list[tuple]:
    return sorted(topo.facts(2)["link"])


def _deleted_link(topo) -> tuple:
    """A transit-stub link (seeded choice), both directions."""
    rng = random.Random(7)
    ts = [lk for lk in topo.links if getattr(lk, "cls", None) == "TS"] or list(topo.links)
    lk = rng.choice(sorted(ts, key=lambda x: x.key))
    u, v = lk.key
    return (u, v), (v, u)


def run_clingo(name: str) -> dict:
    import clingo
    links = _links(_topology(name))
    program = ("reachable(S,D) :- link(S,D).\n"
               "reachable(S,D) :- link(S,Z), reachable(Z,D).\n"
               + "".join(f"link({a},{b}).\n" for a, b in links))
    t0 = time.perf_counter()
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], program)
    ctl.ground([("base", [])])
    count = [0]

    def on_model(model):
        count[0] = sum(1 for s in model.symbols(atoms=True) if s.name == "reachable")
    ctl.solve(on_model=on_model)
    return {"wall": time.perf_counter() - t0, "tuples": count[0]}


def run_networkx(name: str) -> dict:
    import networkx as nx
    links = _links(_topology(name))
    t0 = time.perf_counter()
    g = nx.DiGraph(links)
    # reachable(S, D): D is reached from S by one link or more (S itself only on a cycle)
    cyclic = {n for c in nx.strongly_connected_components(g) if len(c) > 1 for n in c}
    cyclic |= {n for n in g.nodes if g.has_edge(n, n)}
    total = sum(len(nx.descendants(g, s)) + (s in cyclic) for s in g.nodes)
    return {"wall": time.perf_counter() - t0, "tuples": total}


def run_evaluate(name: str) -> dict:
    import psn
    program = psn.parse(REACH)
    links = _links(_topology(name))
    t0 = time.perf_counter()
    out = psn.evaluate(program, {"link": links})
    return {"wall": time.perf_counter() - t0, "tuples": len(out["reachable"]),
            "digest": _digest(out["reachable"])}


def run_delete_recompute(name: str) -> dict:
    import psn
    topo = _topology(name)
    gone = set(_deleted_link(topo))
    links = [lk for lk in _links(topo) if lk not in gone]
    program = psn.parse(REACH)
    t0 = time.perf_counter()
    out = psn.evaluate(program, {"link": links})
    return {"wall": time.perf_counter() - t0, "tuples": len(out["reachable"]),
            "digest": _digest(out["reachable"])}


def _simulation(name: str, annotation: str):
    import psn
    from sim import Simulation
    topo = _topology(name)
    return topo, Simulation(psn.parse(REACH), topo, annotation=annotation, seed=1,
                            delivery="random", state_metrics=False)


def run_sim(name: str, annotation: str) -> dict:
    topo, sim = _simulation(name, annotation)
    links = _links(topo)
    t0 = time.perf_counter()
    sim.step(insert={"link": links})
    wall = time.perf_counter() - t0
    rows = sim.relations()["reachable"]
    return {"wall": wall, "tuples": len(rows), "digest": _digest(rows)}


def run_ray(name: str, workers: int = 2) -> dict:
    """Absorption, lazy MinShip, on ``workers`` local Ray actors (nodes placed by hash)."""
    import psn
    from psn.distributed import RayNetwork, WorkerPool, start_ray, stop_ray
    links = _links(_topology(name))
    start_ray()
    pool = WorkerPool(workers)
    try:
        net = RayNetwork(psn.parse(REACH), annotation="absorption", pool=pool,
                         workers=workers)
        net.apply([(1, "link", t) for t in links]).run()
        rows = net.relations()["reachable"]
        return {"wall": net.wall_seconds, "tuples": len(rows), "digest": _digest(rows)}
    finally:
        pool.close()
        stop_ray()


def run_delete_incremental(name: str) -> dict:
    topo, sim = _simulation(name, "absorption")
    sim.step(insert={"link": _links(topo)})
    t0 = time.perf_counter()
    sim.step(delete={"link": list(_deleted_link(topo))})
    wall = time.perf_counter() - t0
    rows = sim.relations()["reachable"]
    return {"wall": wall, "tuples": len(rows), "digest": _digest(rows)}


MEASURES = {
    "clingo": ("clingo 5 (ground + solve), insert all", run_clingo),
    "networkx": ("networkx descendants, insert all", run_networkx),
    "evaluate": ("psn.evaluate, insert all", run_evaluate),
    "sim_set": ("simulator, set", lambda n: run_sim(n, "set")),
    "sim_absorption": ("simulator, absorption lazy", lambda n: run_sim(n, "absorption")),
    "ray2": ("Ray, 2 workers, absorption lazy", run_ray),
    "delete_recompute": ("psn.evaluate recompute after one deletion", run_delete_recompute),
    "delete_incremental": ("simulator absorption, the deletion incrementally",
                           run_delete_incremental),
}


def _child(key: str, name: str, queue) -> None:
    from ndlog.gcpause import relaxed_gc
    with relaxed_gc():
        out = MEASURES[key][1](name)
    out["peak_mib"] = peak_rss_mb()
    queue.put(out)


#: The row each measurement's relation must equal (its digest): the insertion rows that
#: compute reachable, against psn.evaluate; the deletion, against the recomputation.
CHECKED = {"sim_set": "evaluate", "sim_absorption": "evaluate", "ray2": "evaluate",
           "delete_incremental": "delete_recompute"}


def measure(key: str, name: str) -> dict:
    """One measurement in a forked child (its own peak memory)."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(key, name, queue))
    proc.start()
    out = queue.get()
    proc.join()
    return out


def _span(values: list[float]):
    """One run's value, or the range ``lo-hi`` of several."""
    lo, hi = min(values), max(values)
    if len(values) == 1:
        return values[0]
    fmt = (lambda v: f"{v:.3f}") if hi < 1000 else (lambda v: f"{v:,.0f}")
    return f"{fmt(lo)}-{fmt(hi)}"


def _same(runs: list[dict], key: str) -> str:
    """``yes`` when every run of ``key`` gave the relation of its reference row."""
    ref = CHECKED.get(key)
    if ref is None:
        return ""
    ok = all(r[key]["digest"] == r[ref]["digest"] for r in runs)
    return "yes" if ok else "NO"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="ts100 only")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run everything N times and print ranges (default 1)")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the figures")
    args = ap.parse_args(argv)
    names = ["ts100"] if args.quick else ["ts100", "dense1000"]
    print_header("PSN beside its peers: reachable, all links, then one link deletion",
                 "python -m bench.bench_peers" + (" --quick" if args.quick else "")
                 + (f" --repeat {args.repeat}" if args.repeat > 1 else ""))
    runs = {n: [] for n in names}
    for i in range(args.repeat):
        for n in names:
            runs[n].append({k: measure(k, n) for k in MEASURES})
            print(f"# run {i + 1} of {args.repeat}, {n}: done", flush=True)
    rows = [[label] + [v for n in names
                       for v in (_span([r[k]["wall"] for r in runs[n]]),
                                 _span([r[k]["peak_mib"] for r in runs[n]]),
                                 _same(runs[n], k))]
            for k, (label, _) in MEASURES.items()]
    heads = ["work"] + [h for n in names
                        for h in (f"{n} wall s", f"{n} peak MiB", f"{n} same")]
    print_table(heads, rows)
    for n in names:
        counts = {k: r["tuples"] for k, r in runs[n][0].items()}
        print(f"# {n}: reachable tuples {counts}")
    print("# same: the relation equals psn.evaluate's (the deletion: the recomputation's);")
    print("# Ray: wall time without starting Ray and the actors, peak memory of the driver")
    print()
    ratio_rows = []
    for label, (num, den, targets) in RATIOS.items():
        row = [label]
        for i, n in enumerate(names):
            row += [_span([r[num]["wall"] / r[den]["wall"] for r in runs[n]]),
                    f"<= {targets[i]}"]
        ratio_rows.append(row)
    row = ["peak memory, absorption (MiB)"]
    for n in names:
        row += [_span([r["sim_absorption"]["peak_mib"] for r in runs[n]]),
                "<= 1,536" if n == "dense1000" else ""]
    ratio_rows.append(row)
    print_table(["ratio"] + [h for n in names for h in (n, "target")], ratio_rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
