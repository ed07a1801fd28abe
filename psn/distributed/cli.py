"""``psn run ... --engine ray --workers N [--address ADDR]``: options and runner.

Role: the command-line face of :class:`~psn.distributed.RayNetwork`. :func:`cli_options` adds
``--workers`` and ``--address`` (each only if the parser does not have it yet, so the
simulator and Ray can share ``--workers``); :func:`run_from_args` reads the same flags as
``psn run`` (``program``, ``--facts``, ``--burst``, ``--overlap``, ``--annotation``,
``--pick``, ``--format``, ``--relation``, and ``--check`` when the parser has it), runs the
bursts on Ray, prints relations and metrics like ``psn run`` and shuts down the Ray runtime
if it started it. Ray start-up is printed separately from evaluation time.

Deliberately not here: the ``--engine`` switch itself (``psn/cli/run_cmd.py`` owns it).
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["cli_options", "run_from_args", "DEFAULT_WORKERS"]

#: Workers when ``--workers`` is not given: one per core of the 2-core machines.
DEFAULT_WORKERS = 2


def cli_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--workers N`` and ``--address ADDR`` unless already present."""
    have = {opt for action in parser._actions for opt in action.option_strings}
    if "--workers" not in have:
        parser.add_argument("--workers", type=int, default=None, metavar="N",
                            help=f"workers (Ray actors) hosting the nodes "
                            f"(default {DEFAULT_WORKERS} for --engine ray)")
    if "--address" not in have:
        parser.add_argument("--address", default=None, metavar="ADDR",
                            help="join the Ray cluster at ADDR (HOST:6379, or 'auto'); "
                            "default: a private local Ray runtime on loopback")


def _workers(args) -> int:
    from ..errors import InputError
    n = getattr(args, "workers", None)
    if n is None:
        return DEFAULT_WORKERS
    if not isinstance(n, int) or n < 1:
        raise InputError(f"--workers must be a positive integer, got {n!r}")
    return n


def run_from_args(args: argparse.Namespace, program=None) -> int:
    """Run ``psn run --engine ray`` from parsed arguments; returns the exit status
    (1 if ``--check`` found a difference from ``psn.evaluate``)."""
    from ..engine.bursts import read_burst_file
    from ..output import read_facts_files
    from ..parser import load
    from .network import RayNetwork, WorkerPool
    from .runtime import stop_ray

    if program is None:
        program = load(args.program)
    facts = read_facts_files(getattr(args, "facts", []) or [])
    bursts = [read_burst_file(p) for p in getattr(args, "burst", []) or []]
    import ray
    was_up = ray.is_initialized()
    pool = WorkerPool(_workers(args), getattr(args, "address", None))
    try:
        net = RayNetwork(program, facts, annotation=getattr(args, "annotation", "derivation"),
                         pool=pool, seed=getattr(args, "seed", 0),
                         batch=getattr(args, "pick", "all") == "all")
        if getattr(args, "overlap", False):
            for burst in bursts:
                net.apply(burst)
            net.run()
        else:
            net.run()
            for burst in bursts:
                net.apply(burst).run()
        return _report(args, net, program)
    finally:
        pool.close()
        if not was_up:
            stop_ray()


def _report(args, net, program) -> int:
    from ..errors import InputError
    from ..output import relations_to_json, render_relations

    result = net.relations()
    wanted = getattr(args, "relation", []) or []
    if wanted:
        unknown = [r for r in wanted if r not in result]
        if unknown:
            raise InputError(f"no relation named {', '.join(map(repr, unknown))}; "
                             f"the program has {', '.join(sorted(result))}")
        result = {r: result[r] for r in wanted}
    metrics = net.metrics
    check = _check(net, program) if getattr(args, "check", False) else None
    if getattr(args, "format", "table") == "json":
        doc = {"relations": relations_to_json(result), "metrics": metrics}
        if check is not None:
            doc["check"] = {"equal": check[0], "diff": [list(map(repr, d)) for d in check[1]]}
        print(json.dumps(doc, sort_keys=True, default=repr))
    else:
        print(render_relations(result, "table"))
        keys = ("updates_processed", "messages_sent", "tuples_sent", "bytes_sent",
                "worker_messages_sent", "worker_bytes_sent", "batches_sent")
        print("-- " + ", ".join(f"{k}={metrics[k]}" for k in keys))
        print(f"-- ray: workers={metrics['workers_count']}, "
              f"run_seconds={metrics['wall_seconds']:.3f}, "
              f"ray_startup_seconds={net.pool.ray_startup_seconds:.3f}, "
              f"actor_startup_seconds={net.pool.actor_startup_seconds:.3f}, "
              f"recoveries={metrics['recoveries']}")
        if check is not None:
            if check[0]:
                print("-- check: relations equal psn.evaluate on the final base facts")
            else:
                print("-- check: DIFFERENT from psn.evaluate:", file=sys.stderr)
                for rel, sign, t in check[1]:
                    print(f"   {sign} {rel}{t!r}", file=sys.stderr)
    return 0 if check is None or check[0] else 1


def _check(net, program) -> tuple[bool, list]:
    """Compare with ``psn.evaluate`` on the final base facts (relations pruned by
    aggregate selection are skipped, as the simulator does)."""
    from .. import evaluate
    want = evaluate(program, net.base_facts())
    got = net.relations()
    try:
        from ..analysis import aggsel_candidates
        skip = set(aggsel_candidates(program))
    except Exception:  # noqa: BLE001 - analysis unavailable: compare everything
        skip = set()
    diff = []
    for rel in sorted(want):
        if rel in skip:
            continue
        g, w = got.get(rel, set()), want[rel]
        diff += [(rel, "+", t) for t in sorted(g - w, key=repr)]
        diff += [(rel, "-", t) for t in sorted(w - g, key=repr)]
    return not diff, diff[:20]
