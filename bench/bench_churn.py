"""Benchmark of a long run with link churn: does the cost of a flap stay flat?

Run: ``python -m bench.bench_churn`` from the checkout (``--flaps N``, ``--block K``,
``--program P``, ``--topology T``, ``--annotation A``, ``--seed S``, ``--same-link``).
Reachability (``examples/reachable.ndl``; ``--program shortest_path``: the shortest-path
query, whose ``min`` aggregates give every new result a fresh variable under absorption)
in the simulator, random delivery, the defaults of ``psn run`` (state figures measured
after every step): every link inserted, then ``--flaps`` link
flaps (default 1,000: each a deletion step and a re-insertion step of a present link drawn
at random for that flap, the workload ``flap:random:1`` repeated; with ``--same-link``, one
link drawn once and flapped every time, ``flap:random:N``). Per block of ``--block`` flaps
(default 200): wall time per flap, the process's resident memory at the block's end, the
variables the nodes remember as zeroed and the alternatives MinShip holds buffered. A
flap must cost the same at the end of the run as at its start; the zeroed variables are
the part of the state that grows with the run (each one is a deleted base fact a late
message could still carry). The last step is checked against ``psn.evaluate``.

Deliberately not here: assertions (a benchmark reports; tests never time anything).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .common import print_header, print_table

__all__ = ["main"]

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PROGRAMS = ("reachable", "shortest_path")
ANNOTATIONS = ("absorption", "dred", "relative")


def _held(simulation) -> tuple[int, int]:
    """(zeroed variables over all nodes, alternatives buffered by MinShip)."""
    from engine.minship import MinShip, Record
    zeroed = buffered = 0
    for node in simulation.net.nodes.values():
        zeroed += len(getattr(node.ctx, "zeroed", ()))
        for stage in node.send_stages:
            if not isinstance(stage, MinShip):
                continue
            for table in stage.records.values():
                for rec in table.values():
                    if type(rec) is Record and rec.h is not rec.s:
                        buffered += len(getattr(rec.h, "fs", (rec.h,)))
    return zeroed, buffered


def workload(flaps: int, same_link: bool) -> str:
    """Every link, then ``flaps`` flaps: of one random link, or of a link drawn per flap."""
    if same_link:
        return f"all; flap:random:{flaps}"
    return "all; " + "; ".join(["flap:random:1"] * flaps)


def run(program: str, topology: str, annotation: str, flaps: int, block: int,
        seed: int, same_link: bool = False) -> list[list]:
    """The table's rows: one per block of flaps."""
    import psn
    import sim
    from engine.guards import current_rss
    program = psn.load(EXAMPLES / f"{program}.ndl")
    simulation = sim.Simulation(program, topology, annotation=annotation, seed=seed,
                                delivery="random")
    rows: list[list] = []
    done = [0, time.perf_counter()]

    def measure(result, simulation) -> None:
        if not result.label.startswith("flap"):
            done[1] = time.perf_counter()     # the load: flaps are timed from its end
            return
        if result.deleted:
            return                            # a flap is counted at its re-insertion
        done[0] += 1
        if done[0] % block and done[0] != flaps:
            return
        now = time.perf_counter()
        first = rows[-1][0] if rows else 0
        zeroed, buffered = _held(simulation)
        rows.append([done[0], (now - done[1]) / (done[0] - first) * 1000,
                     current_rss() / 2 ** 20, zeroed, buffered])
        done[1] = time.perf_counter()         # the next block without this count

    t0 = time.perf_counter()
    simulation.run_workload(workload(flaps, same_link), callback=measure, progress=False)
    ok, diff = simulation.check()
    print(f"# {annotation}: {time.perf_counter() - t0:.1f} s wall for the whole run; "
          f"the last step equals psn.evaluate: {'yes' if ok else 'NO ' + repr(diff[:3])}")
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flaps", type=int, default=1000)
    ap.add_argument("--block", type=int, default=200)
    ap.add_argument("--program", default="reachable", choices=PROGRAMS)
    ap.add_argument("--topology", default="ts100")
    ap.add_argument("--annotation", default="absorption", choices=ANNOTATIONS,
                    help="a scheme that deletes exactly on recursive programs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--same-link", action="store_true",
                    help="flap one link drawn once, instead of a link drawn per flap")
    args = ap.parse_args(argv)
    if args.flaps < 1 or args.block < 1:
        ap.error("--flaps and --block must be at least 1")
    command = " ".join(["python -m bench.bench_churn"] + (argv if argv is not None
                                                          else sys.argv[1:]))
    which = "one link" if args.same_link else "a link drawn per flap"
    print_header(f"link churn ({which}), {args.program} on {args.topology}: the cost of a "
                 "flap along the run", command)
    rows = run(args.program, args.topology, args.annotation, args.flaps, args.block,
               args.seed, args.same_link)
    print_table(["flaps done", "ms per flap", "RSS MiB", "zeroed variables",
                 "buffered alternatives"], rows)


if __name__ == "__main__":
    main()
