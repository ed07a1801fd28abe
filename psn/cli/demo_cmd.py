"""``psn demo``: the main job on the embedded defaults.

Runs reachability (Liu et al., Query 1) on GT-ITM's default 100-node transit-stub topology in
the discrete-event simulator with the default annotation (absorption provenance with lazy
MinShip), inserts every link, then deletes links one at a time, checking the relations
against the centralized reference after every step. Then the final state is checked against
Spark's batch evaluation (local Spark), and the same workload with the same seed runs on Ray
actors (local Ray): the same steps, and a result equal to the simulator's. Prints
convergence time, traffic and each check's verdict; exits 1 if any check fails.

Deliberately not here: the machinery (``psn run``'s :func:`~psn.cli.run_cmd.execute`,
``psn.batch``); this module only strings them together and prints.
"""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["register"]

#: Ray workers of the replay when --workers is not given
RAY_WORKERS = 2

PROGRAMS = {
    "reachable": "r1 reachable(@S, D) :- link(@S, D).\n"
                 "r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).\n",
}


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``psn demo`` subcommand and its options to ``sub`` (the parser's
    subcommands), with :func:`run` as its action."""
    p = sub.add_parser("demo", help="run the main job: simulator, Spark check, Ray replay",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--program", default=None, metavar="FILE",
                   help="NDlog program over link(@S, D) or link(@S, D, C) "
                   "(default: reachability)")
    p.add_argument("--topology", default="gtitm", metavar="NAME|FILE",
                   help="topology name or file (default: gtitm, GT-ITM's ts100)")
    p.add_argument("--seed", type=int, default=1,
                   help="topology, workload and delivery seed (default: 1: the default "
                   "topology then has 156 links)")
    p.add_argument("--deletions", type=int, default=20,
                   help="links deleted one at a time (default: 20; at most the "
                   "topology's links)")
    p.add_argument("--workers", type=int, default=None,
                   help=f"Ray workers for the replay (default: {RAY_WORKERS}; not with "
                   "--no-ray)")
    p.add_argument("--no-spark", action="store_true", help="skip the Spark check")
    p.add_argument("--no-ray", action="store_true", help="skip the Ray replay")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    p.set_defaults(func=run)


def _run_args(args, engine: str, extra: list[str]) -> argparse.Namespace:
    """The ``psn run`` flags of one leg of the demo (same topology, workload and seed)."""
    from . import build_parser
    workload = f"all; delete-links:{args.deletions}" if args.deletions else "all"
    argv = ["run", args.program or "<demo: reachable>", "--engine", engine,
            "--topology", args.topology, "--workload", workload, "--seed", str(args.seed)]
    if not args.program:                   # a program of the user's: every relation
        argv += ["--relation", "reachable"]
    argv += extra
    if args.progress is not None:
        argv.append("--progress" if args.progress else "--no-progress")
    return build_parser().parse_args(argv)


def _program(args):
    from ndlog.parser import parse

    from .options import load_program
    if args.program:
        return load_program(args.program)
    return parse(PROGRAMS["reachable"], "<demo: reachable>")


def validate(args: argparse.Namespace) -> None:
    """Check the demo's own options before anything runs."""
    from ndlog.errors import InputError
    if args.workers is not None and args.workers < 1:
        raise InputError(f"--workers takes a positive integer, not {args.workers}")
    if args.workers is not None and args.no_ray:
        raise InputError(f"--workers {args.workers} sets the Ray replay's workers, and "
                         f"--no-ray skips the replay",
                         hint="leave out --workers, or --no-ray")
    if args.deletions < 0:
        raise InputError(f"--deletions takes a number >= 0, not {args.deletions}")


def run(args: argparse.Namespace) -> int:
    """Run ``psn demo`` with the parsed ``args``; the exit status."""
    from engine.workloads import TooManyDeletions
    from ndlog.errors import InputError

    from .run_cmd import execute, print_table

    validate(args)
    program = _program(args)
    what = args.program or "reachability"
    where = "the default GT-ITM topology" if args.topology == "gtitm" else \
        f"topology {args.topology}"
    print(f"== PSN demo: {what} on {where} (simulator)")
    try:
        outcome = execute(_run_args(args, "sim", ["--check"]), program)
    except TooManyDeletions as exc:         # in the demo's own words: --deletions
        raise InputError(f"--deletions {args.deletions} is more than the {exc.most} links "
                         f"of {where}", hint=f"give --deletions {exc.most} or fewer") from None
    print_table(outcome.run, outcome.rows)
    ok = all(r["check"] for r in outcome.rows)
    if not args.no_spark:
        ok &= _spark_check(program, outcome)
    if not args.no_ray:
        ok &= _ray_replay(args, program, outcome)
    print(f"== verdict: {'all checks passed' if ok else 'A CHECK FAILED'}")
    return 0 if ok else 1


def _compared(program, outcome) -> list[str]:
    """The relations the demo compares: every relation of the run, except those aggregate
    selection prunes while the run prunes (two evaluations may keep different non-best
    tuples there; the aggregates built on them are compared), as ``psn run --check``."""
    from ndlog.analysis import aggsel_candidates
    pruned = set(aggsel_candidates(program)) if outcome.run["prunes"] else set()
    return sorted(r for r in outcome.relations if r not in pruned)


def _spark_check(program, outcome) -> bool:
    from ndlog.check import compare_relations

    from ..batch.spark import evaluate_spark

    print("== Spark batch reference (local Spark, synchronous semi-naive)")
    start = time.perf_counter()
    spark = evaluate_spark(program.with_(facts=()), outcome.base_facts,
                           aggsel=outcome.run["prunes"])
    diff = compare_relations(spark, outcome.relations, relations=_compared(program, outcome))
    print(f"   {time.perf_counter() - start:.1f} s including session start; "
          f"check: {'ok, the simulation equals Spark' if diff.ok else 'FAILED'}")
    if not diff.ok:
        print(diff.render(expected_name="spark", actual_name="simulation"), file=sys.stderr)
    return diff.ok


def _ray_replay(args, program, sim_outcome) -> bool:
    from ndlog.check import compare_relations

    from .run_cmd import execute

    workers = RAY_WORKERS if args.workers is None else args.workers
    print(f"== Ray replay ({workers} local workers): the same workload and seed")
    outcome = execute(_run_args(args, "ray", ["--workers", str(workers)]), program)
    same_steps = [r["label"] for r in outcome.rows] == [r["label"] for r in sim_outcome.rows]
    diff = compare_relations(sim_outcome.relations, outcome.relations,
                             relations=_compared(program, sim_outcome))
    m = outcome.metrics
    run = outcome.run
    wall = sum(r["wall_time"] for r in outcome.rows)
    print(f"   start-up {run['ray_startup_seconds'] + run['actor_startup_seconds']:.1f} s, "
          f"run {wall:.1f} s; {m['worker_messages_sent']:,} messages, "
          f"{m['worker_bytes_sent']:,} bytes between workers; same steps: "
          f"{'yes' if same_steps else 'NO'}; "
          f"check: {'ok, Ray equals the simulation' if diff.ok else 'FAILED'}")
    if not diff.ok:
        print(diff.render(expected_name="simulation", actual_name="ray"), file=sys.stderr)
    return diff.ok and same_steps
