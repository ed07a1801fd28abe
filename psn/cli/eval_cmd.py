"""``psn eval PROGRAM [--facts FILE]... [--format table|json|csv] [--output FILE]
[--max-memory SIZE]``: run the centralized reference evaluator and print (or write) every
relation, stopping it past its memory ceiling (a program without a finite fixpoint).

Deliberately not here: distributed execution (``psn run``) and Spark (``psn reference``).
"""

from __future__ import annotations

import argparse

from .reference_cmd import add_memory_option, add_output_options, memory_guard, output_format, \
    write_text

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``psn eval`` subcommand and its options to ``sub`` (the parser's
    subcommands), with :func:`run` as its action."""
    p = sub.add_parser("eval", help="evaluate a program centrally (reference semantics)",
                       description="Evaluate an NDlog program with the centralized "
                       "semi-naive reference evaluator and print its relations.")
    p.add_argument("program", help="NDlog program file")
    p.add_argument("--facts", action="append", default=[], metavar="FILE",
                   help="facts file: NDlog fact statements, or FILE.csv rows of the "
                   "predicate named by the file (repeatable)")
    add_output_options(p)
    p.add_argument("--no-aggsel", action="store_true",
                   help="turn aggregate selection off (enumerates every path)")
    p.add_argument("--relation", action="append", default=[], metavar="NAME",
                   help="print only this relation (repeatable)")
    add_memory_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``psn eval`` with the parsed ``args``.

    Returns
    -------
    int
        The exit status.
    """
    from ndlog.output import (program_shapes, read_facts_files, render_relations,
                              select_relations)
    from .options import load_program
    from ndlog.reference import evaluate

    from ndlog.files import require_writable

    fmt = output_format(args.format, args.output)
    require_writable(args.output)
    guard = memory_guard(args.max_memory)
    program = load_program(args.program)
    facts = read_facts_files(args.facts, **program_shapes(program))
    result = evaluate(program, facts, aggsel=not args.no_aggsel, guard=guard)
    result = select_relations(result, args.relation)
    write_text(render_relations(result, fmt), args.output)
    return 0
