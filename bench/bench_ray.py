"""Benchmark: PSN on Ray with 1, 2 and 4 workers, beside the in-memory engine and the simulator.

Role: how Ray compares with the in-process engines. Reachability (Liu et al. Query 1) on the
100-node GT-ITM topology (``topologies.make("gtitm")``), with absorption provenance and lazy
MinShip by default (``--annotation NAME`` for another scheme), evaluated by

* the in-memory engine (:class:`engine.Network`, random delivery, 4 workers by hash),
* the simulator (:class:`sim.Simulation`, 4 workers by hash), when ``sim`` is importable,
* :class:`psn.distributed.RayNetwork` on 1, 2 and 4 local Ray actors,

all in the same process and run. Reported per row: wall seconds of the evaluation (the
engine's ``run()`` calls; Ray start-up and actor start-up excluded and printed
separately), messages and bytes between nodes, messages and bytes between workers, Ray
calls between workers (batches), and whether the result equals ``psn.evaluate``. Target:
Ray with 4 workers within 3x the simulator's wall time on a 2-core machine. Recorded
figures: ``bench/RESULTS.md``.

Usage::

    python bench/bench_ray.py [--annotation NAME] [--topology NAME] [--deletions K]
                              [--workers 1,2,4] [--repeat N] [--seed S]

Deliberately not here: assertions (benchmarks report; tests never time anything).
"""

from __future__ import annotations

import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import print_header, print_table  # noqa: E402

import psn  # noqa: E402
import topologies  # noqa: E402

__all__ = ["main"]

REACH = """
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
"""


def _scheme(name: str):
    """What to pass as ``annotation=``: the name, or a fresh scheme object for
    ``absorption`` in an installation where that scheme is not registered by name."""
    from provenance import scheme_names
    if name == "absorption" and name not in scheme_names():
        from provenance.absorption import AbsorptionScheme
        return AbsorptionScheme()
    return name


def _bursts(facts: dict, deletions: int, seed: int) -> list[list]:
    links = facts["link"]
    bursts = [[(1, "link", t) for t in links]]
    if deletions:
        rng = random.Random(seed)
        bursts.append([(-1, "link", t) for t in rng.sample(links, deletions)])
    return bursts


def _row(name, workers, seconds, m, ok, calls="-"):
    return [name, workers, round(seconds, 3), m["messages_sent"], m["bytes_sent"],
            m["worker_messages_sent"], m["worker_bytes_sent"], calls,
            "yes" if ok else "NO"]


def _equal(got, want) -> bool:
    return all(got.get(k, set()) == v for k, v in want.items())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--annotation", default=None,
                    help="annotation scheme (default: absorption)")
    ap.add_argument("--topology", default="gtitm")
    ap.add_argument("--deletions", type=int, default=0,
                    help="a second burst deleting K random links (not with set)")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--repeat", type=int, default=1, help="runs per row (best is shown)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    annotation = args.annotation or "absorption"
    program = psn.parse(REACH)
    topo = topologies.make(args.topology, seed=args.seed)
    facts = topo.facts(2)
    bursts = _bursts(facts, args.deletions, args.seed)
    counts = [int(w) for w in args.workers.split(",")]
    print_header(f"PSN on Ray: reachable on {args.topology} ({topo.n} nodes, "
                 f"{len(facts['link'])} links), annotation {annotation}",
                 "python bench/bench_ray.py " + " ".join(argv or sys.argv[1:]))

    from engine import Network
    from engine.placement import Placement
    final = {"link": set(facts["link"]) - {t for b in bursts[1:] for _, _, t in b}}
    want = psn.evaluate(program, final)
    rows = []
    timings = {}

    def best_of(fn, seconds):
        """Best of ``--repeat`` runs by the engine's own run time (``run()`` calls only:
        building networks and Ray start-up are left out for every engine alike)."""
        best = None
        for _ in range(args.repeat):
            res = fn()
            dt = seconds(res)
            if best is None or dt < best[0]:
                best = (dt, res)
        return best

    four = Placement(4)
    dt, net = best_of(lambda: _run_local(program, bursts, annotation,
                                         {n: four(n) for n in range(topo.n)}, Network),
                      lambda n: n.wall_seconds)
    timings["engine"] = dt
    rows.append(_row("in-memory engine", 4, dt, net.metrics, _equal(net.relations(), want)))

    try:
        import sim
    except ImportError:
        sim = None
    if sim is not None:
        dt, s = best_of(lambda: _run_sim(sim, program, topo, bursts, annotation, args.seed),
                        lambda s: s.net.wall_seconds)
        timings["sim"] = dt
        rows.append(_row("simulator", 4, dt, s.net.metrics, _equal(s.relations(), want)))

    from psn.distributed import RayNetwork, WorkerPool, start_ray, stop_ray
    ray_seconds = start_ray()
    pool = WorkerPool(max(counts))
    try:
        for w in counts:
            def once():
                net = RayNetwork(program, annotation=_scheme(annotation), pool=pool,
                                 workers=w)
                for burst in bursts:
                    net.apply(burst).run()
                return net
            dt, net = best_of(once, lambda n: n.wall_seconds)
            m = net.metrics
            timings[f"ray{w}"] = dt
            rows.append(_row("ray", w, dt, m, _equal(net.relations(), want),
                             m["batches_sent"]))
    finally:
        pool.close()
        stop_ray()
    print_table(["engine", "workers", "wall s", "messages", "bytes", "worker msgs",
                 "worker bytes", "ray calls", "correct"], rows)
    print(f"ray start-up (ray.init): {ray_seconds:.2f} s; {max(counts)} actors: "
          f"{pool.actor_startup_seconds:.2f} s (both excluded from wall s)")
    base = timings.get("sim", timings["engine"])
    label = "simulator" if "sim" in timings else "in-memory engine"
    if "ray4" in timings:
        ratio = timings["ray4"] / base
        print(f"target: ray with 4 workers within 3x the {label}'s wall time: "
              f"{ratio:.2f}x -> {'met' if ratio <= 3 else 'NOT met'}")
    return 0


def _run_local(program, bursts, annotation, placement, Network):
    net = Network(program, annotation=_scheme(annotation), delivery="random", seed=1,
                  placement=placement)
    for burst in bursts:
        net.apply(burst).run()
    return net


def _run_sim(sim, program, topo, bursts, annotation, seed):
    s = sim.Simulation(program, topo, annotation=_scheme(annotation), workers=4, seed=seed,
                       state_metrics=False)
    for burst in bursts:
        ins = {}
        dels = {}
        for sign, pred, t in burst:
            (ins if sign > 0 else dels).setdefault(pred, []).append(t)
        s.step(insert=ins, delete=dels)
    return s


if __name__ == "__main__":
    sys.exit(main())
