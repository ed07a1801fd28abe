"""Benchmark of the network simulator driving the PSN engine.

Run: ``python -m bench.bench_sim`` from the checkout (``--quick`` skips the 1,000-node row).
For the reachable query on the 100-node default GT-ITM topology (``ts100``; one worker per
node, and 12 workers as in Liu's default setting) and on a 1,000-node dense transit-stub
topology, all links inserted in one burst, random delivery: simulated convergence time,
wall time (of building and running the simulation, modules already imported), peak memory
(RSS of a fresh child process per row) and traffic between workers, plus the number of
reachable tuples. The annotation is the engines' default, absorption provenance with lazy
MinShip (``--annotation NAME`` for another; ``--workers N`` places the per-node rows on N
workers). Targets on a 2-core machine, with absorption lazy: 100 nodes under 2 s wall;
1,000 nodes (a million reachable tuples) under 120 s wall and 8 GB peak memory. Recorded
figures: ``bench/RESULTS.md``.

Deliberately not here: assertions (a benchmark reports; tests never time anything).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
from pathlib import Path

from .common import peak_rss_mb, print_header, print_table, timer

__all__ = ["main"]

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _annotation(requested: str):
    """The scheme to run: ``requested``, or the engines' default for ``default``."""
    return "absorption" if requested == "default" else requested


def _preload() -> None:
    """Import what a run imports lazily (the localizer, the schemes, MinShip), so that the
    wall time is the run's and not the interpreter's one-time module loading (about 0.2 s
    on this machine)."""
    import localize  # noqa: F401
    import provenance.absorption  # noqa: F401
    import engine.aggsel  # noqa: F401
    import engine.minship  # noqa: F401


def _row(config: dict) -> list:
    """Run one configuration (in a child process) and return its table row."""
    import psn
    import topologies
    from sim import Simulation

    topo = topologies.make(config["topology"], seed=config["seed"], **config["options"])
    program = psn.load(EXAMPLES / "reachable.ndl")
    annotation = _annotation(config["annotation"])
    _preload()
    with timer() as t:
        sim = Simulation(program, topo, annotation=annotation, delivery=config["delivery"],
                         workers=config["workers"], seed=config["seed"],
                         state_metrics=False)
        (step,) = sim.run_workload("insert:1.0", progress=False)
    wall = t()
    name = getattr(annotation, "name", annotation)
    if sim.ship:
        name += f" ({sim.ship})"
    reach = len(sim.relations()["reachable"])
    return [f"{config['topology']}", topo.n, topo.num_links, name,
            config["workers"] or "per node", reach, step.sim_time, wall, peak_rss_mb(),
            step.traffic["bytes_sent"] / 2**20, step.traffic["msgs_sent"]]


def _run_child(config: dict, queue) -> None:
    queue.put(_row(config))


def run_isolated(config: dict) -> list:
    """:func:`_row` in a forked child, so peak memory is that row's own."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_run_child, args=(config, queue))
    proc.start()
    row = queue.get()
    proc.join()
    return row


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the 100-node row")
    ap.add_argument("--annotation", default="default")
    ap.add_argument("--delivery", default="random")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    print_header("network simulator: reachable, all links inserted",
                 "python -m bench.bench_sim" + (" --quick" if args.quick else ""))
    configs = [{"topology": "ts100", "options": {}, "workers": args.workers},
               {"topology": "ts100", "options": {}, "workers": 12}]
    if not args.quick:
        configs.append({"topology": "dense", "options": {"nodes": 1000},
                        "workers": args.workers})
    rows = []
    for c in configs:
        c.update(annotation=args.annotation, delivery=args.delivery, seed=args.seed)
        rows.append(run_isolated(c))
    print_table(["topology", "nodes", "links", "annotation", "workers", "reachable",
                 "sim conv s", "wall s", "peak MiB", "traffic MiB", "messages"], rows,
                targets={"100 nodes": "< 2 s wall (absorption lazy)",
                         "1,000 nodes": "< 120 s wall, < 8 GB peak (absorption lazy)"})


if __name__ == "__main__":
    main()
