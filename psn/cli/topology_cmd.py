"""``psn topology``: generate, convert and summarize topologies.

Role: the command-line front end of the ``topologies`` package::

    psn topology gtitm [--spec FILE | --domains T --transit N --stubs S --stub-nodes M ...]
                       [--nodes N --density dense|sparse] [--seed N] [--output FILE.alt]
    psn topology sensor-grid --sensors 100 --size 100 --radius 20 --seeds 5 [--random]
                       [--seed N] [--output FILE.json]
    psn topology ring|line --nodes N | grid --rows R --cols C
                | random --nodes N (--links M | --p P) [--connected] [--output FILE]
    psn topology info FILE

Each prints a one-line summary (nodes, links per class, connectivity); ``--output`` writes
the topology (GT-ITM ``alt`` for ``.alt`` files, PSN JSON otherwise).

Deliberately not here: the generators themselves (``topologies``), running programs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]


def _latency_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("latency (ms) per link class")
    g.add_argument("--latency-tt", type=float, help="transit-transit (default 50)")
    g.add_argument("--latency-ts", type=float, help="transit-stub (default 10)")
    g.add_argument("--latency-ss", type=float, help="stub-stub (default 2)")


def _latencies(args) -> dict:
    from engine.delivery import MAX_DURATION, require_at_least
    out = {}
    for cls in ("tt", "ts", "ss"):
        v = getattr(args, f"latency_{cls}", None)
        if v is None:
            continue
        require_at_least(f"--latency-{cls} (ms)", v, 0, high=MAX_DURATION * 1e3)
        out[cls.upper()] = int(v) if float(v).is_integer() else v
    return out


def register(subparsers) -> None:
    """Add the ``psn topology`` subcommand to ``subparsers`` (the parser's
    subcommands), with one subcommand of its own per topology generator and ``info``."""
    p = subparsers.add_parser(
        "topology", help="generate or inspect network topologies (GT-ITM, sensor grids)",
        description="Generate GT-ITM transit-stub graphs, sensor grids and small test "
                    "graphs; print a summary and optionally write the topology.")
    sub = p.add_subparsers(dest="kind", metavar="KIND", required=True)

    g = sub.add_parser("gtitm", help="GT-ITM transit-stub graph (default: ts100, 100 nodes)")
    g.add_argument("--spec", metavar="FILE", help="an itm spec file ('ts <count> [<seed>]' ...)")
    g.add_argument("--domains", type=int, help="transit domains (top-level n; default 1)")
    g.add_argument("--transit", type=int, help="mean nodes per transit domain (default 4)")
    g.add_argument("--stubs", type=int, help="mean stubs per transit node (default 3)")
    g.add_argument("--stub-nodes", type=int, help="mean nodes per stub (default 8)")
    g.add_argument("--extra-ts", type=int, help="extra transit-stub edges (default 0)")
    g.add_argument("--extra-ss", type=int, help="extra stub-stub edges (default 0)")
    g.add_argument("--nodes", type=int,
                   help="use the dense/sparse variant with about this many nodes: it grows "
                        "by transit domains of 100 nodes, so N is rounded to the nearest "
                        "multiple of 100, at least 100 (the output says so); not with "
                        "--spec, --domains, --transit, --stubs, --stub-nodes or --extra-*")
    g.add_argument("--density", choices=("sparse", "dense"), default=None,
                   help="with --nodes: about 1.8 (sparse, the default) or 4 (dense) links "
                        "per node")
    g.add_argument("--count", type=int,
                   help="number of graphs (default: the spec's, else 1); with --output "
                        "FILE, graph i goes to FILE-i.alt as itm names them")
    g.add_argument("--no-quirks", action="store_true",
                   help="build every transit domain with the transit parameters "
                        "(GT-ITM uses the stub parameters after the first)")
    g.add_argument("--seed", type=int, help="random seed (default: the spec's, else 0)")
    g.add_argument("--output", "-o", metavar="FILE", help="write .alt (or .json)")
    _latency_args(g)
    g.set_defaults(func=_gtitm)

    s = sub.add_parser("sensor-grid", help="sensors on a square area for the region query")
    s.add_argument("--sensors", type=int, default=100, help="number of sensors (default 100)")
    s.add_argument("--size", type=float, default=100.0, help="side of the area, m (100)")
    s.add_argument("--radius", type=float, default=20.0, help="neighbour radius k, m (20)")
    s.add_argument("--seeds", type=int, default=5, help="seed groups (default 5)")
    s.add_argument("--random", action="store_true", help="random placement (default: grid)")
    s.add_argument("--sink", type=int, help="sink node id (default: nearest the centre)")
    s.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    s.add_argument("--output", "-o", metavar="FILE",
                   help="write JSON (not .alt: alt has no place for the seeds and sink)")
    s.set_defaults(func=_sensor)

    for name, helptext in (("ring", "a cycle"), ("line", "a path")):
        r = sub.add_parser(name, help=helptext)
        r.add_argument("--nodes", "-n", type=int, default=10)
        r.add_argument("--output", "-o", metavar="FILE")
        r.set_defaults(func=_simple)
    gr = sub.add_parser("grid", help="a rows x cols mesh")
    gr.add_argument("--rows", type=int, default=4)
    gr.add_argument("--cols", type=int, default=4)
    gr.add_argument("--output", "-o", metavar="FILE")
    gr.set_defaults(func=_simple)
    rnd = sub.add_parser("random", help="a seeded G(n, m) or G(n, p) graph")
    rnd.add_argument("--nodes", "-n", type=int, default=10)
    rnd.add_argument("--links", "-m", type=int, help="number of links (G(n, m))")
    rnd.add_argument("--p", type=float, help="link probability (G(n, p))")
    rnd.add_argument("--connected", action="store_true", help="make it connected")
    rnd.add_argument("--seed", type=int, default=0)
    rnd.add_argument("--output", "-o", metavar="FILE")
    rnd.set_defaults(func=_simple)

    i = sub.add_parser("info", help="summarize a topology file (.alt or .json)")
    i.add_argument("file")
    i.set_defaults(func=_info)


#: the fix for a topology over the memory limit (75% of the machine's memory)
_SMALLER = "make it smaller: psn topology builds what fits in 75% of this machine's memory"


def _emit(topo, output) -> None:
    import topologies
    if output:                  # first: a topology the file cannot hold prints nothing
        topologies.save(topo, output)
    print(topo.summary())
    if output:
        print(f"wrote {output}")


def _gtitm(args) -> int:
    from dataclasses import replace

    import topologies
    from engine.guards import default_memory_limit
    from ndlog.errors import InputError
    from ndlog.files import require_writable
    from topologies.gtitm import generate_many

    _check_gtitm_counts(args)
    require_writable(args.output)
    if args.spec and args.nodes is not None:
        raise InputError("give --spec or --nodes, not both")
    shape = [flag for flag, dest in _SHAPE if getattr(args, dest) is not None]
    if args.nodes is not None and shape:
        raise InputError(f"give --nodes or {shape[0]}, not both: --nodes {args.nodes} picks "
                         f"the {args.density or 'sparse'} variant's shape, and {shape[0]} "
                         f"would change it (and its node count)",
                         hint=f"leave out --nodes to shape the graph with {shape[0]}, or "
                              f"leave out {shape[0]} for about {args.nodes} nodes")
    if args.density is not None and args.nodes is None:
        raise InputError(f"--density {args.density} applies to the variant of --nodes N",
                         hint=f"add --nodes N, e.g. --nodes 1000 --density {args.density}")
    if args.count is not None and args.count < 1:
        raise InputError(f"--count takes a number of graphs >= 1, not {args.count}")
    if args.nodes is not None:
        topologies.check_size(args.density or "sparse", default_memory_limit(), hint=_SMALLER,
                              nodes=args.nodes)
        params = topologies.ts_variant(args.nodes, args.density or "sparse")
    elif args.spec:
        params = topologies.read_spec(args.spec)
    else:
        params = replace(topologies.TS100, count=1, seed=None)
    overrides = {"stubs_per_transit": args.stubs, "extra_ts": args.extra_ts,
                 "extra_ss": args.extra_ss}
    params = replace(params, **{k: v for k, v in overrides.items() if v is not None})
    for field, value in (("top", args.domains), ("transit", args.transit),
                         ("stub", args.stub_nodes)):
        if value is not None:
            params = replace(params, **{field: replace(getattr(params, field), n=value)})
    count = args.count or (params.count if args.spec else 1)
    topologies.check_size("gtitm", default_memory_limit(), hint=_SMALLER, params=params,
                          **({"count": count} if count != 1 else {}))
    seed = args.seed if args.seed is not None else (params.seed or 0)
    topos = generate_many(params, count, seed, quirks=not args.no_quirks,
                          latencies=_latencies(args) or None)
    if args.nodes is not None and topos[0].n != args.nodes:
        print(f"note: --nodes {args.nodes} made {topos[0].n} nodes: the {args.density or 'sparse'}"
              f" variant grows by transit domains of 100 nodes (--nodes is rounded to the "
              f"nearest multiple of 100, at least 100)")
    if len(topos) == 1:
        _emit(topos[0], args.output)
        return 0
    for k, topo in enumerate(topos):
        out = None
        if args.output:
            path = Path(args.output)
            out = str(path.with_name(f"{path.stem}-{k}{path.suffix or '.alt'}"))
        _emit(topo, out)
    return 0


#: the options of ``psn topology gtitm`` that shape the graph, as ``(flag, dest)``
_SHAPE = (("--domains", "domains"), ("--transit", "transit"), ("--stubs", "stubs"),
          ("--stub-nodes", "stub_nodes"), ("--extra-ts", "extra_ts"),
          ("--extra-ss", "extra_ss"))

#: the least value of each count of ``psn topology gtitm``, as ``(flag, dest, least)``
_COUNTS = (("--nodes", "nodes", 1), ("--domains", "domains", 1), ("--transit", "transit", 1),
           ("--stubs", "stubs", 0), ("--stub-nodes", "stub_nodes", 1),
           ("--extra-ts", "extra_ts", 0), ("--extra-ss", "extra_ss", 0))


def _check_gtitm_counts(args) -> None:
    """Refuse a count of ``psn topology gtitm`` below its least value, naming the flag
    (``--nodes 0`` made ``ts100`` without a word, ``--domains 0`` was refused as a spec
    file's "bad n parameter")."""
    from ndlog.errors import InputError
    for flag, dest, least in _COUNTS:
        value = getattr(args, dest)
        if value is not None and value < least:
            raise InputError(f"{flag} takes a number >= {least}, not {value}")


def _sensor(args) -> int:
    import topologies
    from engine.guards import default_memory_limit
    from ndlog.files import require_writable
    require_writable(args.output)
    topologies.check_size("sensor-grid", default_memory_limit(), hint=_SMALLER,
                          sensors=args.sensors)
    topo = topologies.make("sensor-grid", args.seed, sensors=args.sensors, size=args.size,
                           radius=args.radius, seeds=args.seeds, sink=args.sink,
                           placement="random" if args.random else "grid")
    _emit(topo, args.output)
    return 0


def _simple(args) -> int:
    import topologies
    from engine.guards import default_memory_limit
    from ndlog.files import require_writable
    require_writable(args.output)
    size = ({"rows": args.rows, "cols": args.cols} if args.kind == "grid" else
            {"n": args.nodes, "m": getattr(args, "links", None), "p": getattr(args, "p", None)})
    topologies.check_size(args.kind, default_memory_limit(), hint=_SMALLER,
                          **{k: v for k, v in size.items() if v is not None})
    if args.kind in ("ring", "line"):
        topo = topologies.make(args.kind, n=args.nodes)
    elif args.kind == "grid":
        topo = topologies.make("grid", rows=args.rows, cols=args.cols)
    else:
        topo = topologies.make("random", args.seed, n=args.nodes, m=args.links, p=args.p,
                               connected=args.connected)
    _emit(topo, args.output)
    return 0


def _info(args) -> int:
    import topologies
    topo = topologies.load(args.file)
    print(topo.summary())
    if topo.name:
        print(f"id: {topo.name}")
    return 0
