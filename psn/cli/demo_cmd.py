"""``psn demo``: the main job on the embedded defaults.

Runs reachability (Liu et al., Query 1) on GT-ITM's default 100-node transit-stub topology in
the discrete-event simulator with the best annotation available (absorption provenance with
lazy MinShip), inserts every link, then deletes links one at a time, checking the relations
against the centralized reference after every step. Then the final state is checked against
Spark's batch evaluation (local Spark) and replayed on Ray actors (local Ray) whose result must
equal the simulator's. Prints convergence time, traffic and each check's verdict; exits 1 if
any check fails.

Deliberately not here: the machinery (``sim``, ``psn.batch``, ``psn.distributed``); this
module only strings them together and prints.
"""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["register"]

PROGRAMS = {
    "reachable": "r1 reachable(@S, D) :- link(@S, D).\n"
                 "r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).\n",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the main job: simulator, Spark check, Ray replay",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--program", default=None, metavar="FILE",
                   help="NDlog program over link(@S, D) or link(@S, D, C) "
                   "(default: reachability)")
    p.add_argument("--topology", default="gtitm", metavar="NAME|FILE",
                   help="topology name or file (default: gtitm, GT-ITM's ts100)")
    p.add_argument("--seed", type=int, default=1, help="topology, workload and delivery seed")
    p.add_argument("--deletions", type=int, default=20, help="links deleted one at a time")
    p.add_argument("--workers", type=int, default=2, help="Ray workers for the replay")
    p.add_argument("--no-spark", action="store_true", help="skip the Spark check")
    p.add_argument("--no-ray", action="store_true", help="skip the Ray replay")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    p.set_defaults(func=run)


def _program(args):
    from ndlog.parser import load, parse
    if args.program:
        return load(args.program)
    return parse(PROGRAMS["reachable"], "<demo: reachable>")


def run(args: argparse.Namespace) -> int:
    from sim import Simulation
    from sim.cli import print_steps

    program = _program(args)
    print("== PSN demo: reachability on the default GT-ITM topology (simulator)")
    sim = Simulation(program, args.topology, seed=args.seed, delivery="random")
    workload = f"all; delete-links:{args.deletions}" if args.deletions else "all"
    sim.run_workload(workload, check=True, progress=args.progress)
    print_steps(sim)
    ok = all(s.check for s in sim.steps)
    final_facts = {p: set(ts) for p, ts in sim.base_facts().items()}
    result = sim.relations()
    if not args.no_spark:
        ok &= _spark_check(program, final_facts, result)
    if not args.no_ray:
        ok &= _ray_replay(program, sim, final_facts, result, args)
    print(f"== verdict: {'all checks passed' if ok else 'A CHECK FAILED'}")
    return 0 if ok else 1


def _spark_check(program, facts, result) -> bool:
    from ..batch.spark import evaluate_spark
    from ndlog.check import compare_relations

    print("== Spark batch reference (local Spark, synchronous semi-naive)")
    start = time.perf_counter()
    spark = evaluate_spark(program, facts)
    diff = compare_relations(spark, result, relations=sorted(result))
    print(f"   {time.perf_counter() - start:.1f} s including session start; "
          f"check: {'ok, the simulation equals Spark' if diff.ok else 'FAILED'}")
    if not diff.ok:
        print(diff.render(expected_name="spark", actual_name="simulation"), file=sys.stderr)
    return diff.ok


def _ray_replay(program, sim, facts, result, args) -> bool:
    from ndlog.check import compare_relations
    from ..distributed import RayNetwork

    print(f"== Ray replay ({args.workers} local workers): all links, then the same deletions")
    initial = {p: set(ts) for p, ts in sim.topology_facts().items()} \
        if hasattr(sim, "topology_facts") else None
    start = time.perf_counter()
    net = RayNetwork(program, annotation=sim.annotation, workers=args.workers,
                     seed=args.seed)
    try:
        started = time.perf_counter()
        all_links = initial or _all_links(sim)
        net.apply([(1, p, t) for p, ts in all_links.items() for t in ts]).run()
        deleted = [(p, t) for p, ts in all_links.items() for t in ts
                   if t not in facts.get(p, set())]
        for p, t in deleted:
            net.apply([(-1, p, t)]).run()
        got = net.relations()
        metrics = net.metrics
    finally:
        net.close()
    diff = compare_relations(result, got, relations=sorted(result))
    totals = metrics.get("totals", metrics) if isinstance(metrics, dict) else {}
    print(f"   start-up {started - start:.1f} s, run {time.perf_counter() - started:.1f} s; "
          f"{totals.get('worker_messages_sent', '?')} messages, "
          f"{totals.get('worker_bytes_sent', '?')} bytes between workers; "
          f"check: {'ok, Ray equals the simulation' if diff.ok else 'FAILED'}")
    if not diff.ok:
        print(diff.render(expected_name="simulation", actual_name="ray"), file=sys.stderr)
    return diff.ok


def _all_links(sim) -> dict[str, set]:
    arity = sim.link_arity or 2
    return {"link": set(sim.topology.link_facts(arity=arity))}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run(argparse.Namespace(**{"program": None})))
