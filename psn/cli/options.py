"""The options of the run commands, each declared once, and which engine each applies to.

Role: ``psn run`` (and the commands built on it) take one set of options, declared here in
groups: the program's inputs, the run's settings (:class:`engine.RunOptions`), the topology
and workload, the simulator's timing, Ray's cluster, checks and output. Every option's
default is ``None`` here, so that a value the user gave can be told from a default; the
defaults themselves are decided in one place each (:class:`engine.RunOptions` for the run's
settings, :data:`ENGINE_DEFAULTS` for the rest). :func:`check_engine_options` makes an
option that does not apply to the chosen engine an error that says so.

Deliberately not here: running anything (:mod:`psn.cli.run_cmd`, :mod:`psn.cli.runners`).
"""

from __future__ import annotations

import argparse

from ndlog.errors import InputError

__all__ = ["ENGINES", "add_run_options", "check_engine_options", "run_options", "engine_of",
           "load_program"]

#: The engines of ``psn run --engine``.
ENGINES = ("memory", "sim", "ray")

#: Options that apply to some engines only: ``dest -> (engines, why not elsewhere)``.
ONLY = {
    "delivery": (("memory", "sim"), "Ray's delivery order is whatever the machines make of "
                 "it"),
    "why": (("memory", "sim"), "the provenance lives in the Ray workers' processes"),
    "processing": (("sim",), "only the simulator models processing time"),
    "local_latency": (("sim",), "only the simulator models latency"),
    "metrics": (("sim",), "per-node metric files are the simulator's"),
    "address": (("ray",), "only Ray joins a cluster"),
    "connect_timeout": (("ray",), "only Ray connects to a cluster"),
}

SPEC_HELP_SHORT = ("all | insert:F,... | delete-links:N | flap:U-V:N | "
                   "sensors:trigger=F,untrigger | wait:T, joined by ';'")


def add_run_options(p: argparse.ArgumentParser, *, engine: bool = True) -> None:
    """Declare every option of a run on ``p`` (each once), in groups."""
    inputs = p.add_argument_group("inputs")
    inputs.add_argument("--facts", action="append", default=[], metavar="FILE",
                        help="initial facts: NDlog fact statements, or FILE.csv (rows of "
                        "the predicate named by the file) (repeatable)")
    inputs.add_argument("--burst", action="append", default=[], metavar="FILE",
                        help="a burst of updates, one per line: +fact. / -fact. / fact. "
                        "(repeatable; applied in order, each run to quiescence)")
    inputs.add_argument("--overlap", action="store_true",
                        help="inject all bursts at once instead of each to quiescence")
    settings = p.add_argument_group("the run")
    if engine:
        settings.add_argument("--engine", choices=ENGINES, default=None,
                              help="memory: in-process nodes; sim: the discrete-event "
                              "simulator on a topology; ray: Ray actors (default: sim when "
                              "--topology or --workload is given, else memory)")
    settings.add_argument("--annotation", default=None, metavar="NAME",
                          help="annotation scheme: absorption (default), derivation, set, "
                          "dred (delete and re-derive) or relative (relative provenance), "
                          "the last two not on Ray; "
                          "the papers' failure modes counting, original and fifo-base run "
                          "only with --unsafe")
    settings.add_argument("--ship", default=None, metavar="MODE",
                          help="MinShip: lazy (default with absorption), eager, eager:W "
                          "(every W alternatives), eager:1s (on a timer of the clock) or off; "
                          "with --annotation relative: eager (default; off is the same) or lazy")
    settings.add_argument("--minship-at", default=None, choices=("node", "worker"),
                          help="where MinShip buffers alternative derivations: per node "
                          "(default) or per worker, shared by the nodes it hosts")
    settings.add_argument("--aggsel", default=None, choices=("auto", "multi", "single", "off"),
                          help="aggregate selection: auto (default: multi where it applies), "
                          "multi (prune on every aggregate at once), single (one query per "
                          "aggregate, each pruned by its own) or off")
    settings.add_argument("--delivery", default=None, metavar="MODEL",
                          help="delivery order: random (default), fifo or adversarial, with "
                          "the simulator's timing options, e.g. random:jitter=0.5,abs=2ms or "
                          "adversarial:period=8 (memory and sim)")
    settings.add_argument("--seed", type=int, default=None,
                          help="seed of the delivery order and of the workload (default 0)")
    settings.add_argument("--pick", choices=("all", "one"), default=None,
                          help="pick all pickable updates per iteration (default) or one")
    settings.add_argument("--workers", default=None, metavar="N",
                          help="place nodes on N workers by a stable hash (default: one "
                          "worker per node; on Ray, 2 actors)")
    settings.add_argument("--placement-map", default=None, metavar="FILE",
                          help="explicit placement: lines 'node worker'")
    guards = p.add_argument_group("limits")
    guards.add_argument("--max-memory", default=None, metavar="SIZE",
                        help="stop the run past this resident memory: 4G, 512M, a fraction "
                        "of this machine's memory (0.5), or off (default 0.75)")
    guards.add_argument("--derivation-budget", type=int, default=None, metavar="N",
                        help="--annotation derivation: derivations stored per fact "
                        "(default 10,000)")
    guards.add_argument("--derivation-total", type=int, default=None, metavar="N",
                        help="--annotation derivation: derivations stored in all "
                        "(default 200,000)")
    guards.add_argument("--max-updates", type=int, default=None, metavar="N",
                        help="stop a run that has sent N updates without reaching quiescence "
                        "(default: unbounded, 200,000 for a scheme that may not terminate; "
                        "0: unbounded)")
    guards.add_argument("--unsafe", action="store_true",
                        help="run an annotation where it may give wrong answers (set "
                        "semantics with deletions on a recursive program, the failure modes "
                        "counting, original, fifo-base) instead of refusing; the output is "
                        "marked unchecked")
    topo = p.add_argument_group("topology and workload")
    topo.add_argument("--topology", default=None, metavar="NAME|FILE",
                      help="ts100, gtitm, dense, sparse, liu100, liu-dense, liu-sparse, "
                      "sensor-grid, ring, line, grid, random, or an .alt / .json file "
                      "(default with --workload: ts100)")
    topo.add_argument("--topology-option", action="append", default=[], metavar="KEY=VALUE",
                      help="generator option, e.g. nodes=1000, n=8 (repeatable)")
    topo.add_argument("--topology-seed", type=int, default=None, metavar="N",
                      help="seed of the topology generator (default: --seed)")
    topo.add_argument("--workload", default=None, metavar="SPEC",
                      help=f"steps of link/sensor updates on the topology: {SPEC_HELP_SHORT} "
                      "(default with --topology: all)")
    topo.add_argument("--cost", choices=("latency", "hops", "length"), default=None,
                      help="cost of link/3 facts (default latency in ms)")
    sim = p.add_argument_group("simulator (--engine sim)")
    sim.add_argument("--processing", default=None, metavar="T[+B]",
                     help="processing time per update [+ per batch] (default 20us+50us)")
    sim.add_argument("--local-latency", default=None, metavar="DURATION",
                     help="latency between nodes of one worker (default: the topology's)")
    sim.add_argument("--metrics", default=None, metavar="FILE",
                     help="write per-step, per-node and per-worker metrics (CSV if FILE "
                     "ends in .csv, else JSON)")
    ray = p.add_argument_group("Ray (--engine ray)")
    ray.add_argument("--address", default=None, metavar="ADDR",
                     help="join the Ray cluster at HOST:PORT or 'auto' (default: a private "
                     "local Ray runtime on loopback)")
    ray.add_argument("--connect-timeout", type=float, default=None, metavar="SECONDS",
                     help="give up connecting to --address after this long (default 10)")
    out = p.add_argument_group("checks and output")
    out.add_argument("--check", nargs="?", const="python", default=None,
                     choices=("python", "spark"),
                     help="compare the relations with the reference after every step: "
                     "psn.evaluate (python, the default) or Spark batch jobs (spark); exit 1 "
                     "on a difference")
    out.add_argument("--spark-master", default=None, metavar="URL",
                     help="Spark master for --check spark (default: local[*])")
    out.add_argument("--why", action="append", default=[], metavar="FACT",
                     help="print the provenance of FACT, e.g. 'reachable(@a,c)', as a "
                     "minimal sum of products of base facts (needs absorption)")
    out.add_argument("--format", choices=("table", "json"), default="table")
    out.add_argument("--relation", action="append", default=[], metavar="NAME",
                     help="print only this relation (repeatable)")
    out.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="progress bar on stderr (default: when stderr is a terminal)")


def engine_of(args: argparse.Namespace) -> str:
    """The engine a run uses: ``--engine``, else ``sim`` with a topology or a workload,
    else ``memory``."""
    if getattr(args, "engine", None):
        return args.engine
    return "sim" if (args.topology or args.workload) else "memory"


def check_engine_options(args: argparse.Namespace, engine: str) -> None:
    """Raise :class:`InputError` for an option given that does not apply to ``engine``, and
    for ``--spark-master`` without ``--check spark``."""
    for dest, (engines, why) in ONLY.items():
        value = getattr(args, dest, None)
        if value in (None, [], False) or engine in engines:
            continue
        flag = "--" + dest.replace("_", "-")
        raise InputError(f"{flag} does not apply to --engine {engine}: {why}",
                         hint=f"{flag} works with --engine {' or '.join(engines)}")
    if getattr(args, "spark_master", None) and getattr(args, "check", None) != "spark":
        raise InputError("--spark-master names the Spark master of --check spark, and this "
                         "run does not check against Spark",
                         hint="add --check spark, or leave out --spark-master")


def workers(args: argparse.Namespace) -> int | None:
    """``--workers`` as a positive integer, or ``None``."""
    n = args.workers
    if n is None:
        return None
    try:
        n = int(n)
    except (TypeError, ValueError):
        raise InputError(f"--workers takes a positive integer, not {n!r}") from None
    if n < 1:
        raise InputError(f"--workers takes a positive integer, not {n}")
    return n


def run_options(args: argparse.Namespace, engine: str):
    """The :class:`engine.RunOptions` the flags describe (unset flags keep the defaults)."""
    from engine import RunOptions
    from engine.placement import parse_placement

    n = workers(args)
    if engine == "ray" and n is None:
        n = 2
    placement = None
    if args.placement_map:
        placement = parse_placement(None, args.placement_map).mapping
    memory = None
    if args.max_memory is not None:
        from engine.guards import parse_memory
        memory = parse_memory(args.max_memory)
    return RunOptions.of(annotation=args.annotation, ship=args.ship, aggsel=args.aggsel,
                         delivery=args.delivery, seed=args.seed,
                         batch=None if args.pick is None else args.pick == "all",
                         workers=n, placement=placement, unsafe=args.unsafe or None,
                         max_memory=memory, derivation_budget=args.derivation_budget,
                         derivation_total=args.derivation_total, max_updates=args.max_updates,
                         minship_at=args.minship_at)


def load_program(path: str):
    """The program in the file ``path``, parsed and checked, after a warning on stderr for
    each base predicate that may be misspelt (:func:`ndlog.analysis.lookalike_inputs`).

    Raises
    ------
    ndlog.errors.PSNError
        If the file cannot be read, parsed or checked, or holds nothing (no rule, fact or
        declaration: an empty file, or comments only).
    """
    import sys

    from ndlog.analysis import lookalike_inputs
    from ndlog.errors import InputError, NDlogWarning
    from ndlog.parser import load
    program = load(path)
    if not (program.rules or program.facts or program.tables):
        raise InputError(f"program file '{path}' has no rules, facts or declarations",
                         hint="is it the right file? A program is NDlog rules such as "
                              "'r1 reachable(@S, D) :- link(@S, D).'")
    for atom, close in lookalike_inputs(program):
        print(NDlogWarning(
            f"no rule derives '{atom.pred}' and the program gives no table or facts of it: "
            f"unless the facts you give hold it, it is empty", atom.span, program.source,
            hint=f"did you mean '{close}'?").render(), file=sys.stderr)
    return program
