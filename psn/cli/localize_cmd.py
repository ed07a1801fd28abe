"""``psn localize PROGRAM [--explain] [-o FILE]``: print the localized program as NDlog.

The output parses again (auxiliary predicates are kept hidden by a ``#hidden`` statement),
so it can be saved and given to ``psn eval`` or ``psn run``. ``--explain`` first prints, as
``//`` comments (the output still parses), which rule became which rules and why.

Deliberately not here: the rewrite itself (:mod:`localize`) and printing
(:mod:`ndlog.printer`).
"""

from __future__ import annotations

import argparse

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``psn localize`` subcommand and its options to ``sub`` (the parser's
    subcommands), with :func:`run` as its action."""
    p = sub.add_parser("localize", help="rewrite a distributed program so that every rule "
                       "body lives at one node",
                       description="Localize an NDlog program (Nigam et al. 2012, Sec. 2.1; "
                       "Loo et al. 2006) and print it as NDlog.")
    p.add_argument("program", help="NDlog program file")
    p.add_argument("--explain", action="store_true",
                   help="also show which rule became which rules, and why (as comments)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the program to FILE instead of standard output")
    p.set_defaults(func=run)


def _comment(text: str) -> str:
    return "\n".join(("// " + line).rstrip() for line in text.splitlines()) + "\n"


def run(args: argparse.Namespace) -> int:
    """Run ``psn localize`` with the parsed ``args``; the exit status."""
    from localize import explain

    from ndlog.files import require_writable, write_atomic
    from .options import load_program
    from ndlog.printer import format_program

    require_writable(args.output)
    result = explain(load_program(args.program))
    text = format_program(result.program)
    if args.explain:
        text = _comment(result.text()) + "\n" + text
    if args.output is not None:
        write_atomic(args.output, text)
    else:
        print(text, end="")
    return 0
