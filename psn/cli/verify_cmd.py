"""``psn verify PROGRAM [options]``: check reorder-tolerance; ``--replay FILE`` a counterexample.

A program and an annotation are reorder-tolerant on a scope when every delivery order of
the bursts reaches quiescence with every node's state equal to the synchronous semi-naive
result (Nigam et al. 2012, Definition 1). ``psn verify`` runs the program on in-memory
nodes under many delivery orders (:mod:`psn.verify`): exhaustively on small scopes, by
seeded random or adversarial search on large ones. On success it prints what was covered
and exits 0; on failure it prints the shrunk counterexample step by step, writes it as
JSON (``--counterexample FILE``) and exits 1. ``psn verify --replay FILE`` runs a written
counterexample again and prints the same (exit 1 while it still fails, 0 once it does not).

Deliberately not here: the search (:mod:`psn.verify`), running a program once (``psn run``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ndlog.errors import InputError

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``psn verify`` subcommand and its options to ``sub`` (the parser's
    subcommands), with :func:`run` as its action."""
    p = sub.add_parser(
        "verify", help="check that a program is correct under every delivery order",
        description="Run an NDlog program on in-memory PSN nodes under many delivery orders "
        "of its bursts and check every node's state against the synchronous semi-naive "
        "result after each burst; print a shrunk, replayable counterexample if one fails.")
    p.add_argument("program", nargs="?", default=None,
                   help="NDlog program file (not needed with --replay)")
    inputs = p.add_argument_group("inputs")
    inputs.add_argument("--facts", action="append", default=[], metavar="FILE",
                        help="initial facts: NDlog fact statements, or FILE.csv (repeatable)")
    inputs.add_argument("--burst", action="append", default=[], metavar="FILE",
                        help="a burst of updates, one per line: +fact. / -fact. / fact. "
                        "(repeatable; each run to quiescence under every order explored)")
    inputs.add_argument("--replay", default=None, metavar="FILE",
                        help="replay a counterexample file written by psn verify")
    what = p.add_argument_group("what is checked")
    what.add_argument("--annotation", default="absorption", metavar="NAME",
                      help="annotation scheme (default absorption)")
    what.add_argument("--scope", default=None, metavar="SPEC",
                      help="comma-separated: overlap (inject all bursts at once), facts "
                      "(explore the initial load too), fifo (FIFO channels), nohash (no "
                      "state hashing), bound=N (deliveries per burst before a schedule "
                      "counts as not terminating, default 2000), batch=N (messages one "
                      "delivery may batch, default 1), delays=N (at most N non-FIFO choices)")
    what.add_argument("--fifo", action="store_true",
                      help="channels are FIFO (only the oldest message of each channel may "
                      "be delivered)")
    what.add_argument("--ship", default=None, metavar="MODE",
                      help="MinShip: lazy (default with absorption), eager, eager:W, off")
    what.add_argument("--aggsel", default="auto", choices=("auto", "multi", "single", "off"),
                      help="aggregate selection (default auto)")
    what.add_argument("--unsafe", action="store_true",
                      help="run an annotation the engine would refuse on this program (the "
                      "papers' failure modes, set semantics with deletions)")
    search = p.add_argument_group("the search")
    search.add_argument("--mode", default="auto",
                        choices=("auto", "exhaustive", "random", "adversarial"),
                        help="exhaustive: every delivery order (partial-order reduction and "
                        "state hashing); random / adversarial: seeded schedules; auto "
                        "(default): exhaustive when the scope looks small, else random")
    search.add_argument("--budget", default=None, metavar="N|TIME",
                        help="schedules (1000) or time (30s, 5m); default 100,000 schedules or "
                        "10 minutes, whichever comes first")
    search.add_argument("--seed", type=int, default=0,
                        help="seed of random and adversarial schedules (default 0)")
    search.add_argument("--jobs", type=int, default=1, metavar="J",
                        help="worker processes (default 1)")
    search.add_argument("--no-shrink", action="store_true",
                        help="report the counterexample as found, without shrinking it")
    out = p.add_argument_group("output")
    out.add_argument("--counterexample", default=None, metavar="FILE",
                     help="where to write a counterexample (default "
                     "PROGRAM.counterexample.json in the current directory)")
    out.add_argument("--format", choices=("text", "json"), default="text",
                     help="text (default) or one JSON document")
    out.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="schedules explored so far on stderr (default: when stderr is a "
                     "terminal)")
    p.set_defaults(func=run, parser=p)       # a replay compares with the defaults


def run(args: argparse.Namespace) -> int:
    """Run ``psn verify`` with the parsed ``args``.

    Returns
    -------
    int
        The exit status.
    """
    if args.replay:
        return _replay(args)
    if not args.program:
        raise InputError("psn verify needs a PROGRAM file (or --replay FILE)")
    from engine.bursts import locate_error, read_burst_file
    from ndlog.files import require_writable
    from ndlog.output import program_shapes, read_facts_files
    from .options import load_program
    from provenance import get_scheme

    from .. import verify as V

    counterexample = (f"{Path(args.program).stem}.counterexample.json"
                      if args.counterexample is None else args.counterexample)
    require_writable(counterexample, "counterexample file")
    program = load_program(args.program)
    get_scheme(args.annotation)                  # an unknown name fails before anything runs
    shapes = program_shapes(program)
    facts = read_facts_files(args.facts, **shapes)
    bursts = [read_burst_file(path, **shapes) for path in args.burst]
    try:
        result = V.verify(program, facts, bursts, annotation=args.annotation,
                          mode=args.mode, budget=args.budget, seed=args.seed, jobs=args.jobs,
                          scope=args.scope, fifo=True if args.fifo else None,
                          unsafe=args.unsafe, ship=args.ship, aggsel=args.aggsel,
                          shrinking=not args.no_shrink, progress=args.progress)
    except InputError as exc:           # a deletion of what is not there: its burst line
        locate_error(exc, bursts)
        raise
    written = None
    if result.counterexample is not None:
        written = result.counterexample.write(counterexample)
    if args.format == "json":
        doc = result.to_json()
        doc["written"] = None if written is None else str(written)
        print(json.dumps(doc, indent=1, ensure_ascii=False))
    else:
        print(result.summary())
        if result.counterexample is not None:
            print()
            print(result.counterexample.render())
            print(f"\nwritten to {written}; replay with: psn verify --replay {written}")
    return 0 if result.ok else 1


#: (flag, dest) of what a replay takes from its file instead of the command line
_REPLAYED = (("the program", "program"), ("--facts", "facts"), ("--burst", "burst"),
             ("--annotation", "annotation"), ("--scope", "scope"), ("--fifo", "fifo"),
             ("--ship", "ship"), ("--aggsel", "aggsel"), ("--unsafe", "unsafe"),
             ("--mode", "mode"), ("--budget", "budget"), ("--seed", "seed"),
             ("--jobs", "jobs"), ("--no-shrink", "no_shrink"),
             ("--counterexample", "counterexample"))


def _replay(args: argparse.Namespace) -> int:
    from ..verify import Counterexample

    ignored = [flag for flag, dest in _REPLAYED
               if getattr(args, dest) != args.parser.get_default(dest)]
    if ignored:
        print("psn verify: --replay takes the program, facts, bursts, settings and the "
              "schedule from the file; ignored: " + ", ".join(ignored), file=sys.stderr)
    cex = Counterexample.load(args.replay)
    again = cex.replay()
    if args.format == "json":
        print(json.dumps(again.to_json(), indent=1, ensure_ascii=False))
    else:
        print(f"replaying {args.replay}")
        print(again.render())
    return 1 if again.failed else 0
