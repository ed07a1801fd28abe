"""``psn run PROGRAM [--facts FILE]... [--burst FILE]... [--annotation NAME]
[--delivery fifo|random|adversarial] [--seed N] [--overlap] [--format table|json]``:
run a program on the PSN engine over the in-memory transport and print the final relations
and the traffic metrics.

Bursts apply in order, each run to quiescence, unless ``--overlap`` injects them all at once.
``--format json`` prints ``{"relations": {name: sorted tuples}, "metrics": {...}}`` with at
least the totals ``updates_processed``, ``messages_sent``, ``tuples_sent``, ``bytes_sent``.

Structure: :func:`register` declares the flags in small groups (:func:`_add_engine_flags`,
...), :func:`build_network` turns the parsed flags into a :class:`engine.Network`, and
:func:`run` drives and prints; later issues add flags (``--engine``, ``--topology``,
``--ship``, ``--check``) by extending those pieces.

Deliberately not here: the engine, the simulator, Ray (imported inside ``run`` only).
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["register", "build_network", "run"]

ANNOTATIONS = ("set", "derivation", "absorption")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a program on the PSN engine",
                       description="Run an NDlog program with pipelined semi-naive "
                       "evaluation (PSN) on in-memory nodes, apply bursts of updates, and "
                       "print the final relations and metrics.")
    p.add_argument("program", help="NDlog program file")
    p.add_argument("--facts", action="append", default=[], metavar="FILE",
                   help="initial facts: NDlog fact statements or FILE.csv (repeatable)")
    p.add_argument("--burst", action="append", default=[], metavar="FILE",
                   help="a burst of updates, one per line: +fact. / -fact. / fact. "
                   "(repeatable; applied in order)")
    p.add_argument("--overlap", action="store_true",
                   help="inject all bursts at once instead of each to quiescence")
    _add_engine_flags(p)
    _add_output_flags(p)
    _add_transport_flags(p)
    p.set_defaults(func=run)


ENGINES = ("sim", "memory", "ray")


def _add_transport_flags(p: argparse.ArgumentParser) -> None:
    """``--engine``, ``--check`` and the simulator's and Ray's own flags (issues 6-8)."""
    import sim
    from .. import distributed
    p.add_argument("--engine", choices=ENGINES, default=None,
                   help="sim: the discrete-event simulator on a topology (the default "
                   "whenever --topology or --workload is given); memory: in-memory nodes "
                   "without latencies (the default otherwise); ray: Ray actors")
    p.add_argument("--check", nargs="?", const="python", default=None,
                   choices=("python", "spark"),
                   help="compare the relations with the reference after every burst: "
                   "psn.evaluate (python, the default) or Spark batch jobs (spark); report "
                   "differences tuple by tuple and exit 1 if there are any")
    p.add_argument("--spark-master", default=None, metavar="URL",
                   help="Spark master for --check spark (default: local)")
    p.add_argument("--topology", default=None, metavar="NAME|FILE",
                   help="topology for --engine sim/ray: ts100 (default), gtitm, dense, "
                   "sparse, sensor-grid, ring, line, grid, random, or an .alt/.json file")
    sim.cli_options(p)
    distributed.cli_options(p)


def _engine(args: argparse.Namespace) -> str:
    if args.engine:
        return args.engine
    return "sim" if (args.topology or getattr(args, "workload", None)) else "memory"


def _add_engine_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--annotation", default=None, metavar="NAME",
                   help="annotation scheme: set, derivation or absorption (default: "
                   "derivation on --engine memory, the best available -- absorption -- on "
                   "sim and ray)")
    p.add_argument("--delivery", choices=("fifo", "random", "adversarial"), default="random",
                   help="delivery order of the in-memory transport (default random)")
    p.add_argument("--seed", type=int, default=0, help="seed of the delivery order")
    p.add_argument("--pick", choices=("all", "one"), default="all",
                   help="pick all pickable updates per iteration (default) or one")
    # issue 5: MinShip, aggregate selection, provenance you can read
    p.add_argument("--ship", default=None, metavar="MODE",
                   help="MinShip (Liu Sec. 5): eager, eager:W, lazy or off (default: lazy "
                   "with --annotation absorption, off otherwise)")
    p.add_argument("--aggsel", choices=("multi", "single", "off"), default="multi",
                   help="aggregate selection (Liu Sec. 6) where detected: multi (default), "
                   "single (first aggregate only) or off; not with --annotation derivation")
    p.add_argument("--why", action="append", default=[], metavar="FACT",
                   help="print the provenance of FACT, e.g. 'reachable(@a,c)', as a minimal "
                   "sum of products over base tuples (needs --annotation absorption)")


def _add_output_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--relation", action="append", default=[], metavar="NAME",
                   help="print only this relation (repeatable)")


def build_network(args: argparse.Namespace):
    """The :class:`engine.Network` the flags describe, with the initial facts."""
    from engine import Network
    from ndlog.output import read_facts_files
    from ndlog.parser import load

    program = load(args.program)
    facts = read_facts_files(args.facts)
    from engine.minship import parse_ship
    ship = getattr(args, "ship", None)
    parse_ship(ship)                                   # InputError naming a bad value
    aggsel = getattr(args, "aggsel", "off")
    if args.annotation == "derivation":
        aggsel = "off"                                 # multiplicities: see engine.aggsel
    net = Network(program, facts, annotation=args.annotation, delivery=args.delivery,
                  seed=args.seed, batch=args.pick == "all", ship=ship, aggsel=aggsel)
    if getattr(args, "why", None) and not hasattr(net.scheme, "explain"):
        from ndlog.errors import InputError
        raise InputError(f"--why needs provenance: annotation '{args.annotation}' keeps "
                         f"none (use --annotation absorption)")
    return net


def run(args: argparse.Namespace) -> int:
    engine = _engine(args)
    if engine != "memory":
        args.annotation = args.annotation or "best"
        args.topology = args.topology or "ts100"
        if engine == "sim":
            import sim
            return sim.run_from_args(args)
        from .. import distributed
        return distributed.run_from_args(args)
    args.annotation = args.annotation or "derivation"
    return _run_memory(args)


def _run_memory(args: argparse.Namespace) -> int:
    from engine.bursts import read_burst_file
    from ndlog.output import relations_to_json, render_relations, select_relations

    bursts = [read_burst_file(path) for path in args.burst]
    net = build_network(args)
    failures = []
    if args.overlap:
        for burst in bursts:
            net.apply(burst)
        net.run()
        failures += _check_burst(args, net, "all bursts")
    else:
        net.run()
        failures += _check_burst(args, net, "facts")
        for path, burst in zip(args.burst, bursts):
            net.apply(burst)
            net.run()
            failures += _check_burst(args, net, f"burst {path}")
    result = net.relations()
    result = select_relations(result, args.relation)
    metrics = net.metrics
    if args.format == "json":
        print(json.dumps({"relations": relations_to_json(result), "metrics": metrics},
                         sort_keys=True))
    else:
        print(render_relations(result, "table"))
        keys = ("updates_processed", "messages_sent", "tuples_sent", "bytes_sent")
        print("-- " + ", ".join(f"{k}={metrics[k]}" for k in keys))
    _print_why(net, getattr(args, "why", []))
    if args.check:
        verdict = "ok" if not failures else f"FAILED after {len(failures)} burst(s)"
        print(f"-- check against {args.check}: {verdict}", file=sys.stderr)
    return 1 if failures else 0


def _check_burst(args: argparse.Namespace, net, label: str) -> list[str]:
    """``--check``: compare with the reference on the current base facts; print and return
    the differences (relations pruned by aggregate selection are not compared)."""
    if not args.check:
        return []
    from ndlog.analysis import aggsel_candidates
    from ndlog.check import compare_relations
    from psn.oracle import reference_evaluator

    program = net.program.source.with_(facts=())
    evaluate = reference_evaluator(args.check, args.spark_master)
    want = evaluate(program, net.base_facts())
    got = net.relations()
    names = sorted(set(want) - set(aggsel_candidates(program)))
    diff = compare_relations(want, got, relations=names)
    if diff.ok:
        return []
    print(f"check failed after {label}:", file=sys.stderr)
    print(diff.render(expected_name=args.check, actual_name="run"), file=sys.stderr)
    return [label]


def _print_why(net, facts: list) -> None:
    """``--why FACT``: one line ``FACT = formula`` per fact (Network.why)."""
    from ndlog.errors import InputError
    from ndlog.parser import parse_atom
    for text in facts:
        try:
            atom = parse_atom(text.strip().rstrip("."))
        except Exception as e:  # PSNError with a caret: re-raise as bad user input
            raise InputError(f"--why {text!r} is not a fact: {e}") from None
        print(f"{text.strip()} = {net.why(atom.pred, atom.values)}")
