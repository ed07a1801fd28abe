"""Benchmark of MinShip per node and per worker, and of eager MinShip on a timer.

Run: ``python -m bench.bench_minship`` from the checkout (``--quick``: workers 4 and 24
only; ``--eager-budget S``: wall seconds given to the eager row, default 300).

Part 1 (Liu et al. 2009, Sec. 7.3 and Fig. 13: 4 to 24 query processors for the 100-node
topology). Reachability on ``ts100``, all links inserted in one burst, random delivery,
absorption provenance with lazy MinShip, nodes placed on N workers by hash, MinShip per
node (``minship_at="node"``) or per worker (``"worker"``, one stage shared by the nodes a
worker hosts, Liu Sec. 3). The program is ``examples/reachable_liu.ndl``, reachability as
Liu Fig. 4 plans it (the join runs at the link's destination, which ships ``reachable``
itself): the localizer's plan for ``examples/reachable.ndl`` ships an auxiliary that names
its sending node, so no two nodes ever ship the same fact and a worker's stage has nothing
to share (one row shows it). Columns: per-tuple provenance bytes of the stored state (Liu
Sec. 7.1), tuples and kilobytes that cross workers, stored state (kB, all nodes),
convergence in simulated seconds, wall seconds, and the check against the reference.

Part 2: ``reachable.ndl`` on ``ts100`` with lazy MinShip beside eager MinShip flushed once
a simulated second (``eager:1s``, Liu Sec. 7.2), one worker per node, for 65% of the links
and for all of them; each eager row runs in a child process and is stopped at the budget,
reporting how far it got (tuples and kilobytes sent, simulated seconds reached).

Deliberately not here: assertions (benchmarks report; the tests check exactness).
Recorded figures: ``bench/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue as queue_module
import time
from pathlib import Path

from .common import print_header, print_table, timer

__all__ = ["main"]

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
WORKERS = (4, 8, 12, 16, 24)


def _simulate(program: str, workers, at: str, ship: str = "lazy", heartbeat=None,
              workload: str = "all"):
    """One run of ``workload`` on ts100 (one step); returns ``(step, wall seconds)``."""
    from engine import RunOptions
    from sim import Simulation

    opts = RunOptions(ship=ship, workers=workers, minship_at=at)
    with timer() as t:
        sim = Simulation(EXAMPLES / program, "ts100", options=opts)
        if heartbeat is not None:
            sim._heartbeat = lambda label: heartbeat(sim)
        (step,) = sim.run_workload(workload, check=True, progress=False)
    return step, t()


def _row(program: str, workers, at: str, ship: str = "lazy", workload: str = "all") -> list:
    step, wall = _simulate(program, workers, at, ship, workload=workload)
    return [program, workers or "1/node", at, ship, workload, step.provenance_per_tuple,
            step.traffic["updates_sent"], step.traffic["bytes_sent"] / 1000,
            step.state["state_bytes"] / 1000, step.sim_time, wall,
            "ok" if step.check else "DIFFERS"]


def _child(program: str, ship: str, workload: str, queue) -> None:
    """Run one row, reporting progress to ``queue`` every few seconds."""
    last = [0.0]

    def beat(sim):
        def tick(deliveries: int, in_flight: int) -> None:
            now = time.monotonic()
            if now - last[0] >= 2:
                last[0] = now
                queue.put(("progress", sim.now, sim.net.transport.metrics.totals["tuples_sent"],
                           sim.net.transport.metrics.totals["bytes_sent"]))
        return tick

    step, wall = _simulate(program, None, "node", ship, beat, workload)
    queue.put(("done", [program, "1/node", "node", ship, workload, step.provenance_per_tuple,
                        step.traffic["updates_sent"], step.traffic["bytes_sent"] / 1000,
                        step.state["state_bytes"] / 1000, step.sim_time, wall,
                        "ok" if step.check else "DIFFERS"]))


def _budgeted_row(program: str, ship: str, workload: str, budget: float) -> list:
    """:func:`_row` in a child process stopped after ``budget`` wall seconds."""
    queue = mp.Queue()
    proc = mp.Process(target=_child, args=(program, ship, workload, queue), daemon=True)
    start = time.monotonic()
    proc.start()
    last = None
    while time.monotonic() - start < budget:
        try:
            msg = queue.get(timeout=1)
        except queue_module.Empty:   # nothing yet (the child is still busy)
            if not proc.is_alive():
                break
            continue
        if msg[0] == "done":
            proc.join()
            return msg[1]
        last = msg
    proc.terminate()
    proc.join()
    sim_t, tuples, nbytes = last[1:] if last else (0.0, 0, 0)
    return [program, "1/node", "node", ship, workload, "-", tuples, nbytes / 1000, "-",
            sim_t, budget, f"stopped at {budget:g} s"]


HEADERS = ["program", "workers", "minship at", "ship", "links", "prov B/tuple",
           "worker tuples",
           "worker kB", "state kB", "sim s", "wall s", "check"]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="workers 4 and 24 only")
    ap.add_argument("--eager-budget", type=float, default=300.0, metavar="S",
                    help="wall seconds for the eager:1s row (default 300)")
    ap.add_argument("--no-eager", action="store_true", help="skip part 2's eager row")
    args = ap.parse_args(argv)
    print_header("MinShip per node and per worker (ts100, all links, random delivery)",
                 "python -m bench.bench_minship" + (" --quick" if args.quick else ""))
    print(f"# load before: {os.getloadavg()[0]:.2f} (1-minute average)")
    workers = (4, 24) if args.quick else WORKERS
    rows = []
    for w in workers:
        for at in ("node", "worker"):
            rows.append(_row("reachable_liu.ndl", w, at))
    for at in ("node", "worker"):
        rows.append(_row("reachable.ndl", 12, at))
    print_table(HEADERS, rows)
    print()
    print("# part 2: lazy vs eager:1s, reachable.ndl, one worker per node; 'insert:0.65' "
          "inserts 65% of the links (Liu Fig. 7's x axis)")
    rows = []
    for workload in ("insert:0.65", "all"):
        rows.append(_row("reachable.ndl", None, "node", "lazy", workload))
        if not args.no_eager:
            rows.append(_budgeted_row("reachable.ndl", "eager:1s", workload,
                                      args.eager_budget))
    print_table(HEADERS, rows)
    print(f"# load after: {os.getloadavg()[0]:.2f} (1-minute average)")


if __name__ == "__main__":
    main()
