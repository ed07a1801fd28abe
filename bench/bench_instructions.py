"""Instructions the simulator's insertion costs, counted by valgrind: a figure that does
not move with the machine's speed.

Role: compare two versions of the engine on a shared VM whose speed varies between runs
(by up to 2x on the VMs of ``bench/RESULTS.md``). For each topology and annotation it runs
``bench_peers``' simulator workload (reachable, every link inserted in one burst, one worker
per node, random delivery, seed 1) twice under ``valgrind --tool=callgrind``: once up to
the insertion and once through it, each in a fresh interpreter with ``PYTHONHASHSEED=0``,
and prints the difference: the instructions of the insertion alone. ``--checkout DIR``
counts another version's engine (a ``git worktree`` of it), so that one table compares the
two.

Run: ``python -m bench.bench_instructions [--topologies ts100,dense100]
[--annotations set,absorption] [--checkout DIR ...]``. Needs valgrind (``apt install
valgrind``). Under callgrind the code runs far slower: each count of ``ts100`` took about
half a minute, of ``dense100`` over a minute (four counts per checkout and topology).

Deliberately not here: wall time (``bench_peers``) or anything valgrind does not count
(cache misses, memory).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from bench.common import print_header, print_table

__all__ = ["main"]

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGIES = {"ts100": ("ts100", {}), "dense100": ("dense", {"nodes": 100}),
              "dense300": ("dense", {"nodes": 300})}

#: run in the child: build the simulation, then (argument "step") insert every link
CHILD = """
import sys
from bench import bench_peers as bp
bp.TOPOLOGIES[sys.argv[1]] = {topology!r}
topo, sim = bp._simulation(sys.argv[1], sys.argv[2])
links = bp._links(topo)
if sys.argv[3] == "step":
    sim.step(insert={{"link": links}})
"""


def _count(checkout: Path, topology: str, annotation: str, step: bool) -> int:
    """Instructions callgrind counts for the child run in ``checkout``, with or without
    the insertion."""
    code = CHILD.format(topology=TOPOLOGIES[topology])
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         sys.executable, "-c", code, topology, annotation,
         "step" if step else "setup"],
        cwd=checkout, env=env, capture_output=True, text=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"bench_instructions: the run under valgrind failed:\n"
                         f"{done.stderr[-2000:]}")
    return int(found.group(1))


def _names(text: str, known, what: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in names if x not in known]
    if bad or not names:
        raise SystemExit(f"bench_instructions: unknown {what} {', '.join(bad) or text!r}; "
                         f"known: {', '.join(known)}")
    return names


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_instructions",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--topologies", default="ts100,dense100",
                    help=f"comma-separated, of {', '.join(TOPOLOGIES)}")
    ap.add_argument("--annotations", default="set,absorption",
                    help="comma-separated annotation schemes")
    ap.add_argument("--checkout", action="append", type=Path, default=[],
                    help="a checkout of the version to count (repeatable; default: this "
                         "one)")
    args = ap.parse_args(argv)
    checkouts = [c.resolve() for c in args.checkout] or [ROOT]
    for c in checkouts:
        if not (c / "bench" / "bench_peers.py").is_file():
            raise SystemExit(f"bench_instructions: {c} is not a PSN checkout with "
                             f"bench/bench_peers.py")
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_instructions: valgrind is not installed "
                         "(apt install valgrind)")
    topologies = _names(args.topologies, TOPOLOGIES, "topology")
    from provenance import scheme_names
    annotations = _names(args.annotations, scheme_names(), "annotation")
    print_header("Instructions of the simulator's insertion (valgrind callgrind)",
                 "python -m bench.bench_instructions " + " ".join(argv or sys.argv[1:]))
    rows = []
    for topology in topologies:
        for annotation in annotations:
            row = [topology, annotation]
            for c in checkouts:
                setup = _count(c, topology, annotation, False)
                total = _count(c, topology, annotation, True)
                row.append(f"{(total - setup) / 1e6:,.1f}")
            rows.append(row)
            print(f"# {topology}, {annotation}: done", flush=True)
    print_table(["topology", "annotation", *(f"{c.name}: million instructions"
                                             for c in checkouts)], rows)


if __name__ == "__main__":
    main()
