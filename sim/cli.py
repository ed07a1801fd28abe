"""Command-line glue for ``psn run --engine sim``: the simulator's flags and runner.

Role: :func:`cli_options` adds the simulator's flags to the ``psn run`` parser (skipping any
flag the parser already has, such as ``--annotation``, ``--delivery``, ``--seed``,
``--format``, ``--relation``, ``--facts``, ``--burst``), and :func:`run_from_args` builds a
:class:`~sim.simulation.Simulation` from the parsed flags, runs the workload with a progress
bar, prints one row per step and a summary, writes ``--metrics``, and with ``--check``
reports every difference from ``psn.evaluate`` tuple by tuple (exit status 1 on a
difference). ``psn run`` calls them as::

    sim.cli_options(parser)                    # in register()
    if args.engine == "sim": return sim.run_from_args(args)

Deliberately not here: parsing NDlog, building topologies (``topologies``), the engine.
"""

from __future__ import annotations

from psn.oracle import reference_evaluator

import argparse
import json
import sys

from ndlog.errors import InputError

from .workloads import SPEC_HELP

__all__ = ["cli_options", "run_from_args", "build_simulation", "print_steps"]


def _add(parser, *flags, **kw) -> None:
    if any(f in parser._option_string_actions for f in flags):
        return
    parser.add_argument(*flags, **kw)


def cli_options(parser: argparse.ArgumentParser) -> None:
    """Add the simulator's flags (see the module docstring) to ``parser``."""
    g = parser.add_argument_group("simulator (--engine sim)")
    _add(g, "--topology", default="ts100", metavar="NAME|FILE",
         help="topology: ts100 (default), gtitm, dense, sparse, sensor-grid, ring, line, "
         "grid, random, or a GT-ITM .alt / PSN .json file")
    _add(g, "--topology-option", action="append", default=[], metavar="KEY=VALUE",
         help="generator option, e.g. nodes=1000, n=8, sensors=100, radius=20 (repeatable)")
    _add(g, "--topology-seed", type=int, default=None, metavar="N",
         help="seed of the topology generator (default: --seed)")
    _add(g, "--workload", default=None, metavar="SPEC", help=SPEC_HELP)
    _add(g, "--workers", default=None, metavar="N",
         help="place nodes on N workers by hash (default: one worker per node)")
    _add(g, "--placement-map", default=None, metavar="FILE",
         help="explicit placement: lines 'node worker'")
    _add(g, "--processing", default="20us+50us", metavar="T[+B]",
         help="processing time per update [+ per batch] (default 20us+50us)")
    _add(g, "--local-latency", default=None, metavar="DURATION",
         help="latency between nodes of one worker (default: the topology's)")
    _add(g, "--cost", choices=("latency", "hops", "length"), default="latency",
         help="link cost of link/3 facts (default latency in ms)")
    _add(g, "--metrics", default=None, metavar="FILE",
         help="write per-step, per-node and per-worker metrics (.json or .csv)")
    _add(g, "--check", action="store_true",
         help="compare with psn.evaluate after every step; report differences")
    _add(g, "--progress", action=argparse.BooleanOptionalAction, default=None,
         help="progress bar on stderr (default: when stderr is a terminal)")
    _add(g, "--delivery", default="random", metavar="MODEL",
         help="fifo | random | adversarial, with options e.g. random:jitter=0.5")
    _add(g, "--annotation", default="best", metavar="NAME",
         help="annotation scheme (default: the best available)")
    _add(g, "--seed", type=int, default=0, help="seed of the run's random.Random")


def _topology_options(items: list[str]) -> dict:
    out = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise InputError(f"--topology-option takes KEY=VALUE, not {item!r}")
        out[key.strip().replace("-", "_")] = _value(value.strip())
    return out


def _value(text: str):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def topology_from_args(args: argparse.Namespace):
    """The topology of ``--topology NAME|FILE`` (default ``ts100``) with
    ``--topology-option`` and ``--topology-seed`` (default ``--seed``); shared by the
    simulator's and Ray's ``psn run``."""
    from pathlib import Path

    import topologies

    seed = getattr(args, "seed", 0) or 0
    tseed = getattr(args, "topology_seed", None)
    name = getattr(args, "topology", None) or "ts100"
    opts = _topology_options(getattr(args, "topology_option", []))
    if Path(name).exists():
        return topologies.load(name, **opts)
    try:
        return topologies.make(name, seed=seed if tseed is None else tseed, **opts)
    except TypeError as exc:
        raise InputError(f"bad --topology-option for {name!r}: {exc}") from None


def build_simulation(args: argparse.Namespace, program=None):
    """The :class:`~sim.simulation.Simulation` the flags describe."""
    from ndlog.parser import load

    from .delivery import parse_duration
    from .placement import parse_placement
    from .simulation import Simulation

    if program is None:
        program = load(args.program)
    seed = getattr(args, "seed", 0) or 0
    topo = topology_from_args(args)
    placement = parse_placement(getattr(args, "workers", None),
                                getattr(args, "placement_map", None))
    local = getattr(args, "local_latency", None)
    try:
        local = None if local is None else parse_duration(local)
    except ValueError as exc:
        raise InputError(f"--local-latency: {exc}") from None
    engine_options = {}
    if getattr(args, "pick", "all") == "one":
        engine_options["batch"] = False
    return Simulation(program, topo, annotation=getattr(args, "annotation", "best"),
                      ship=getattr(args, "ship", None),
                      aggsel=getattr(args, "aggsel", "auto"),
                      placement=placement, delivery=getattr(args, "delivery", "random"),
                      seed=seed, processing=getattr(args, "processing", None),
                      local_latency=local, cost=getattr(args, "cost", "latency"),
                      engine_options=engine_options)


def run_from_args(args: argparse.Namespace, program=None) -> int:
    """Run ``psn run --engine sim``; returns the exit status (1 if ``--check`` failed)."""
    from ndlog.output import read_facts_files

    sim = build_simulation(args, program)
    check = bool(getattr(args, "check", False))
    if check:
        sim.reference = reference_evaluator(args.check, getattr(args, "spark_master", None))
    progress = getattr(args, "progress", None)
    extra = read_facts_files(getattr(args, "facts", []) or [])
    if extra:
        sim.step(insert={p: list(ts) for p, ts in extra.items()}, label="facts", check=check)
    sim.run_workload(getattr(args, "workload", None), check=check, progress=progress)
    bursts = getattr(args, "burst", []) or []
    if bursts:
        from engine.bursts import read_burst_file
        for path in bursts:
            ins: dict = {}
            dels: dict = {}
            for item in read_burst_file(path):
                from engine import parse_update
                sign, pred, tup = parse_update(item)
                (ins if sign > 0 else dels).setdefault(pred, []).append(tup)
            sim.step(insert=ins, delete=dels, label=f"burst {path}", check=check)
    if getattr(args, "metrics", None):
        sim.write_metrics(args.metrics)
    failed = [s for s in sim.steps if s.check is False]
    if getattr(args, "format", "table") == "json":
        doc = {"run": sim.describe(), "summary": sim.summary(),
               "steps": [s.summary() for s in sim.steps]}
        rels = _selected(sim, getattr(args, "relation", []))
        if rels is not None:
            from ndlog.output import relations_to_json
            doc["relations"] = relations_to_json(rels)
        print(json.dumps(doc, default=str))
    else:
        print_steps(sim)
        rels = _selected(sim, getattr(args, "relation", []))
        if rels is not None:
            from ndlog.output import render_relations
            print(render_relations(rels, "table"))
    for s in failed:
        print(f"check failed after step {s.index} ({s.label}):", file=sys.stderr)
        for rel, sign, tup in s.diff:
            side = "only in the simulation" if sign == "+" else "missing from the simulation"
            print(f"  {rel}{tup} {side}", file=sys.stderr)
    return 1 if failed else 0


def _selected(sim, names):
    from ndlog.output import select_relations
    return select_relations(sim.relations(), names) if names else None


def print_steps(sim, file=None) -> None:
    """One row per step and a summary line (convergence, traffic, state, check)."""
    file = file or sys.stdout
    d = sim.describe()
    print(f"# {d['topology']}", file=file)
    print(f"# annotation {d['annotation']}, {d['placement']}, delivery {d['delivery']}, "
          f"processing {d['processing']}, seed {d['seed']}", file=file)
    head = ["step", "label", "sim s", "wall s", "msgs", "KB sent", "local msgs", "updates",
            "tuples", "prov B/tuple", "check"]
    rows = []
    for s in sim.steps:
        t = s.traffic
        rows.append([s.index, s.label, f"{s.sim_time:.4f}", f"{s.wall_time:.3f}",
                     t.get("msgs_sent", 0), f"{t.get('bytes_sent', 0) / 1024:.1f}",
                     t.get("local_msgs", 0), t.get("processed", 0),
                     s.state.get("tuples", ""), f"{s.provenance_per_tuple:.1f}",
                     {None: "-", True: "ok", False: "FAIL"}[s.check]])
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    print("  ".join(str(h).ljust(w) for h, w in zip(head, widths)), file=file)
    for r in rows:
        print("  ".join(str(c).rjust(w) if i not in (1,) else str(c).ljust(w)
                        for i, (c, w) in enumerate(zip(r, widths))), file=file)
    s = sim.summary()
    verdict = {None: "not checked", True: f"ok ({s['checked']} steps equal the reference)",
               False: "FAILED"}[s["check"]]
    mb = s["traffic"].get("bytes_sent", 0) / 2**20
    print(f"-- {s['steps']} steps: convergence {s['sim_time']:.4f} s simulated, "
          f"{s['wall_time']:.2f} s wall; traffic {mb:.3f} MB in "
          f"{s['traffic'].get('msgs_sent', 0)} messages between workers; "
          f"check: {verdict}", file=file)
