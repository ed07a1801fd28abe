"""Benchmark of the Spark reference (``psn.batch``) next to the Python reference.

Run from the checkout::

    python -m bench.bench_spark                       # ts100 and a 1,000-node topology
    python -m bench.bench_spark --sizes 100 --queries reachable
    python -m bench.bench_spark --python-max 100      # skip Python above 100 nodes

Topologies: ``topologies.make("ts100")`` (GT-ITM transit-stub, 100 nodes) for 100 and
``topologies.make("dense", nodes=N)`` (GT-ITM transit-stub variant) for other sizes; every
link in both directions, cost = latency. Prints one row per (query, size): Spark time
(the first row also shows the session start), Python time, result size, semi-naive rounds,
and whether the two results agree (:func:`ndlog.check.compare_relations`).
Target: 100-node reachable under 30 s on ``local[2]`` including the session start (a local
Spark session alone takes several seconds to start). Recorded figures: ``bench/RESULTS.md``.

Deliberately not here: assertions (a benchmark reports; tests never time anything).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import psn
import topologies
from ndlog.check import compare_relations
from ndlog.errors import EvaluationError

from .common import print_header, print_table, timer

__all__ = ["main"]

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
QUERIES = {"reachable": ("reachable.ndl", 2), "shortest-path": ("shortest_path.ndl", 3)}


def topology(n: int, seed: int):
    if n == 100:
        return topologies.make("ts100", seed=seed)
    return topologies.make("dense", seed=seed, nodes=n)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000", help="comma-separated node counts")
    ap.add_argument("--queries", default="reachable,shortest-path")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=600,
                    help="stop a Spark evaluation after this many seconds (its jobs are "
                    "cancelled and the row says so)")
    ap.add_argument("--python-max", type=int, default=10**9,
                    help="run the Python reference only up to this many nodes")
    args = ap.parse_args(argv)
    print_header("Spark reference vs Python reference",
                 "python -m bench.bench_spark " + " ".join(sys.argv[1:] if argv is None
                                                           else argv))
    from psn.batch.session import get_session
    from psn.batch.spark import SparkStats, evaluate_spark
    with timer() as start:
        session = get_session(args.master)
    started = start()
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        topo = topology(n, args.seed)
        for q in args.queries.split(","):
            file, arity = QUERIES[q]
            program = psn.load(EXAMPLES / file)
            facts = {"link": topo.link_facts(arity=arity)}
            stats = SparkStats()
            got, spark_s = _limited(lambda: evaluate_spark(program, facts, session=session,
                                                           stats=stats),
                                    session, args.time_limit)
            py_s, agree = None, "-"
            if got is None:
                rows.append([q, n, len(facts["link"]), "-", "-", started if not rows else "",
                             f"> {args.time_limit:.0f} (stopped)", "not run", "-"])
                print(f"# stopped {q} n={n} after {args.time_limit:.0f} s", flush=True)
                continue
            if n <= args.python_max:
                with timer() as t:
                    ref = psn.evaluate(program, facts)
                py_s = t()
                agree = "yes" if compare_relations(ref, got).ok else "NO"
            derived = sum(len(v) for k, v in got.items() if k != "link")
            rows.append([q, n, len(facts["link"]), derived, max(stats.rounds.values() or [0]),
                         started if not rows else "", spark_s,
                         py_s if py_s is not None else "skipped", agree])
            print(f"# done {q} n={n}: spark {spark_s:.1f} s", flush=True)
    print_table(["query", "nodes", "link tuples", "derived", "rounds", "spark start s",
                 "spark s", "python s", "agree"], rows,
                targets={"100-node reachable": "spark start + spark s < 30 s on local[2]"})


def _limited(run, session, limit: float):
    """``(result, seconds)`` of ``run()``, or ``(None, seconds)`` if it ran past ``limit``
    seconds: a timer cancels the session's Spark jobs, which makes ``run`` fail."""
    import threading
    fired = threading.Event()

    def cancel():
        fired.set()
        session.sparkContext.cancelAllJobs()
    timer_thread = threading.Timer(limit, cancel)
    timer_thread.start()
    try:
        with timer() as t:
            try:
                result = run()
            except EvaluationError:   # how evaluate_spark reports a cancelled Spark job
                if not fired.is_set():
                    raise
                result = None
        return result, t()
    finally:
        timer_thread.cancel()


if __name__ == "__main__":
    main()
