"""Benchmark of deletions: DRed against absorption provenance (Liu et al. ICDE 2009, Sec. 7.2).

Run: ``python -m bench.bench_deletions`` from the checkout (``--deletions N``, ``--seed
S``, ``--no-check``, ``--annotations dred,absorption``). Reachability
(``examples/reachable.ndl``) on the ``ts100`` transit-stub topology in the simulator,
random delivery: every link inserted in one burst, then ``--deletions`` links (default 20,
seeded) deleted one at a time, each its own step (workload ``all; delete-links:20``, the
same links in the same order for every annotation). Per deletion and annotation: tuples
and bytes shipped between nodes, simulated convergence time and wall time; for DRed also
the tuples of each phase (over-delete, re-derive) and the barrier's messages, which are
included in its bytes and convergence time (:mod:`provenance.dred`). The annotations:

* ``dred``: delete and re-derive, Liu's baseline (Sec. 3.2), no MinShip or aggregate
  selection (neither applies);
* ``absorption``: absorption provenance with lazy MinShip (the default);
* ``relative``: relative provenance (:mod:`provenance.relative`), every derivation edge
  shipped when found; per deletion also the traversal's messages and bytes (included in
  its bytes and convergence time, with its barriers) and the facts it deleted.

Every step is checked against ``psn.evaluate`` unless ``--no-check``. Target (Liu Sec.
7.2, Fig. 8): DRed is "an order of magnitude more expensive in both communication overhead
and execution time" than absorption provenance. Recorded
figures: ``bench/RESULTS.md``.

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
ANNOTATIONS = ("dred", "absorption", "relative")
PHASE_KEYS = ("overdelete_tuples", "rederive_tuples", "barrier_messages", "phase_rounds")
TRAVERSAL_KEYS = ("traversal_messages", "traversal_bytes", "retracted")


def run(annotation: str, deletions: int, seed: int, check: bool) -> list[dict] | None:
    """One simulated run; a row per deletion step, or None if the scheme is not built."""
    import psn
    import sim
    from provenance import scheme_names
    if annotation not in scheme_names():
        return None
    program = psn.load(EXAMPLES / "reachable.ndl")
    simulation = sim.Simulation(program, "ts100", annotation=annotation, seed=seed,
                                delivery="random")
    rows: list[dict] = []
    last = [dict(simulation.net.metrics)]

    def measure(result, simulation) -> None:
        now = simulation.net.metrics
        before = last[0]
        row = {"label": result.label, "tuples": result.traffic["updates_sent"],
               "bytes": result.traffic["bytes_sent"], "sim_s": result.sim_time,
               "wall_s": result.wall_time, "check": result.check}
        row.update({k: now.get(k, 0) - before.get(k, 0) for k in PHASE_KEYS + TRAVERSAL_KEYS})
        rows.append(row)
        last[0] = dict(now)

    simulation.run_workload(f"all; delete-links:{deletions}", check=check, callback=measure,
                            progress=False)
    return rows[1:]                                   # the deletions, not the load


def _verdict(rows: list[dict]) -> str:
    checks = {r["check"] for r in rows}
    return "not checked" if checks == {None} else ("ok" if checks == {True} else "FAIL")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--deletions", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--annotations", default=",".join(ANNOTATIONS),
                    help="comma-separated subset of " + ", ".join(ANNOTATIONS))
    args = ap.parse_args(argv)
    chosen = [a.strip() for a in args.annotations.split(",") if a.strip()]
    unknown = sorted(set(chosen) - set(ANNOTATIONS)) or \
        (["absorption (needed for the ratios)"] if "absorption" not in chosen else [])
    if unknown:
        ap.error(f"unknown or missing annotation: {', '.join(unknown)}")
    command = " ".join(["python -m bench.bench_deletions"] + (argv if argv is not None
                                                              else sys.argv[1:]))
    print_header("deletions on ts100: DRed and relative vs absorption provenance "
                 "(Liu Sec. 7.2)", command)
    try:
        print(f"# load average at start: {', '.join(f'{x:.2f}' for x in _load())}")
    except OSError:
        pass
    results = {}
    for ann in ANNOTATIONS:
        if ann not in chosen:
            continue
        t0 = time.perf_counter()
        results[ann] = run(ann, args.deletions, args.seed, not args.no_check)
        if results[ann] is not None:
            print(f"# {ann}: {time.perf_counter() - t0:.1f} s wall for the whole run")
    built = [a for a in results if results[a] is not None]
    short = {"dred": "dred", "absorption": "abs", "relative": "rel"}
    headers = ["deletion"]
    for ann in results:
        if results[ann] is None:
            headers.append(ann)
            continue
        s = short[ann]
        headers += [f"{s} tuples", f"{s} KB", f"{s} sim s", f"{s} wall s"]
        if ann == "dred":
            headers += ["over-del", "re-derive", "barrier msgs", "rounds"]
        if ann == "relative":
            headers += ["traversal msgs", "traversal KB", "retracted"]
    steps = len(results[built[0]])
    rows = [[results[built[0]][i]["label"]] + _cells(results, i) for i in range(steps)]
    rows.append(["total"] + _cells(results, None))
    print_table(headers, rows)
    absn = results["absorption"]
    for ann in built:
        if ann == "absorption":
            continue
        rs = results[ann]
        print(f"{ann} / absorption: "
              f"{_total(rs, 'tuples') / max(1, _total(absn, 'tuples')):.1f}x tuples, "
              f"{_total(rs, 'bytes') / max(1, _total(absn, 'bytes')):.1f}x bytes, "
              f"{_total(rs, 'sim_s') / max(1e-9, _total(absn, 'sim_s')):.1f}x simulated "
              f"time, {_total(rs, 'wall_s') / max(1e-9, _total(absn, 'wall_s')):.1f}x "
              f"wall time")
    print("check: " + ", ".join(f"{a} {_verdict(results[a])}" for a in built))
    print("target (Liu Sec. 7.2, Fig. 8): DRed about 10x absorption provenance in "
          "communication and convergence time")


def _total(rows: list[dict], key: str):
    return sum(r[key] for r in rows)


def _cells(results: dict, i: int | None) -> list:
    """The cells of deletion ``i`` (``None``: the totals) for every annotation."""
    out: list = []
    for ann, rs in results.items():
        if rs is None:
            out.append("not built")
            continue
        pick = (lambda k: rs[i][k]) if i is not None else (lambda k: _total(rs, k))
        out += [pick("tuples"), pick("bytes") / 1024, pick("sim_s"), pick("wall_s")]
        if ann == "dred":
            out += [pick(k) for k in PHASE_KEYS]
        if ann == "relative":
            out += [pick(k) / (1024 if k == "traversal_bytes" else 1)
                    for k in TRAVERSAL_KEYS]
    return out


def _load() -> tuple[float, float, float]:
    import os
    return os.getloadavg()


if __name__ == "__main__":
    main()
