"""PSN beside the tools a user would pick instead: clingo, networkx, the centralized reference.

Role: one table, in one process per measurement (so peak memory is that measurement's own),
of reachable on GT-ITM's ts100 and on a 1,000-node dense transit-stub topology: clingo
(grounding and solving), networkx (descendants of every node), ``psn.evaluate``, the
simulator with set semantics and with absorption provenance and lazy MinShip (one worker per
node, random delivery), and one transit-stub link deletion, incrementally in the simulator
vs recomputed by ``psn.evaluate``. It prints the ratios the engine is held to and the
machine.

Run: ``python -m bench.bench_peers`` (``--quick``: ts100 only). clingo and networkx come
with the ``bench`` extra: ``pip install -e ".[bench]"``.

Deliberately not here: assertions (a benchmark reports; tests never time anything).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import time

from bench.common import peak_rss_mb, print_header, print_table

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
}


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
    return {"wall": time.perf_counter() - t0, "tuples": len(out["reachable"])}


def run_delete_recompute(name: str) -> dict:
    import psn
    topo = _topology(name)
    gone = set(_deleted_link(topo))
    links = [lk for lk in _links(topo) if lk not in gone]
    program = psn.parse(REACH)
    t0 = time.perf_counter()
    out = psn.evaluate(program, {"link": links})
    return {"wall": time.perf_counter() - t0, "tuples": len(out["reachable"])}


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
    return {"wall": time.perf_counter() - t0,
            "tuples": len(sim.relations()["reachable"])}


def run_delete_incremental(name: str) -> dict:
    topo, sim = _simulation(name, "absorption")
    sim.step(insert={"link": _links(topo)})
    t0 = time.perf_counter()
    sim.step(delete={"link": list(_deleted_link(topo))})
    return {"wall": time.perf_counter() - t0,
            "tuples": len(sim.relations()["reachable"])}


MEASURES = {
    "clingo": ("clingo 5 (ground + solve), insert all", run_clingo),
    "networkx": ("networkx descendants, insert all", run_networkx),
    "evaluate": ("psn.evaluate, insert all", run_evaluate),
    "sim_set": ("simulator, set", lambda n: run_sim(n, "set")),
    "sim_absorption": ("simulator, absorption lazy", lambda n: run_sim(n, "absorption")),
    "delete_recompute": ("psn.evaluate recompute after one deletion", run_delete_recompute),
    "delete_incremental": ("simulator absorption, the deletion incrementally",
                           run_delete_incremental),
}


def _child(key: str, name: str, queue) -> None:
    from engine.gcpause import relaxed_gc
    with relaxed_gc():
        out = MEASURES[key][1](name)
    out["peak_mib"] = peak_rss_mb()
    queue.put(out)


def measure(key: str, name: str) -> dict:
    """One measurement in a forked child (its own peak memory)."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(key, name, queue))
    proc.start()
    out = queue.get()
    proc.join()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="ts100 only")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the figures")
    args = ap.parse_args(argv)
    names = ["ts100"] if args.quick else ["ts100", "dense1000"]
    print_header("PSN beside its peers: reachable, all links, then one link deletion",
                 "python -m bench.bench_peers" + (" --quick" if args.quick else ""))
    results = {n: {k: measure(k, n) for k in MEASURES} for n in names}
    rows = [[label] + [v for n in names for v in (results[n][k]["wall"],
                                                  results[n][k]["peak_mib"])]
            for k, (label, _) in MEASURES.items()]
    heads = ["work"] + [h for n in names for h in (f"{n} wall s", f"{n} peak MiB")]
    print_table(heads, rows)
    for n in names:
        counts = {k: r["tuples"] for k, r in results[n].items()}
        print(f"# {n}: reachable tuples {counts}")
    print()
    ratio_rows = []
    for label, (num, den, targets) in RATIOS.items():
        row = [label]
        for i, n in enumerate(names):
            row += [results[n][num]["wall"] / results[n][den]["wall"], f"<= {targets[i]}"]
        ratio_rows.append(row)
    last = names[-1]
    ratio_rows.append([f"peak memory, {last} absorption (MiB)",
                       results[last]["sim_absorption"]["peak_mib"], "<= 1,536"] +
                      ([] if len(names) == 1 else ["", ""]))
    print_table(["ratio"] + [h for n in names for h in (n, "target")], ratio_rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
