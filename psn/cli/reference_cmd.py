"""``psn reference PROGRAM [--facts FILE]... [--engine python|spark] [--spark-master URL]
[--format table|json|csv] [--output FILE] [--max-memory SIZE] [--progress]``: compute the
reference result relations.

Role: the command-line face of the two reference evaluators: the Python one
(:func:`ndlog.reference.evaluate`) and the Spark batch one
(:func:`psn.batch.spark.evaluate_spark`, local Spark unless ``--spark-master`` names a
cluster). Prints the relations or writes them to a file, in the format ``--format`` names or
else the one the file's extension names (:func:`output_format`, shared with ``psn eval``).

Deliberately not here: distributed runs and their checking (``psn run --check spark``
calls :func:`psn.batch.spark.evaluate_spark` and :func:`ndlog.check.compare_relations`);
pyspark is imported only when ``--engine spark`` is chosen.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from ndlog.text import shows_progress

__all__ = ["register", "run", "add_output_options", "add_memory_option", "memory_guard",
           "output_format", "write_text", "FORMATS"]

#: formats relations can be rendered in (:func:`ndlog.output.render_relations`)
FORMATS = ("table", "json", "csv")
#: file extensions that name a format; any other extension means ``table``
_SUFFIX_FORMATS = {".json": "json", ".csv": "csv"}


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``psn reference`` subcommand and its options to ``sub`` (the parser's
    subcommands), with :func:`run` as its action."""
    p = sub.add_parser("reference", help="compute reference results (Python or Spark)",
                       description="Evaluate an NDlog program with synchronous semi-naive "
                       "evaluation, in Python or as Spark batch jobs, and print (or write) "
                       "every relation.")
    p.add_argument("program", help="NDlog program file")
    p.add_argument("--facts", action="append", default=[], metavar="FILE",
                   help="facts file: NDlog fact statements, or FILE.csv rows of the "
                   "predicate named by the file (repeatable)")
    p.add_argument("--engine", choices=("python", "spark"), default="spark",
                   help="evaluator (default: spark)")
    p.add_argument("--spark-master", metavar="URL", default=None,
                   help="Spark master URL (default: local[*], UI off, quiet logs)")
    add_output_options(p)
    p.add_argument("--no-aggsel", action="store_true",
                   help="turn aggregate selection off (enumerates every path)")
    add_memory_option(p, " (--engine python)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show the semi-naive rounds of the recursive strata on stderr "
                   "(default: when stderr is a terminal)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``psn reference`` with the parsed ``args``.

    Returns
    -------
    int
        The exit status.
    """
    from ndlog.errors import InputError
    from ndlog.files import require_writable
    from ndlog.output import program_shapes, read_facts_files, render_relations
    from .options import load_program

    if args.spark_master and args.engine != "spark":
        raise InputError("--spark-master needs --engine spark")
    if args.max_memory is not None and args.engine == "spark":
        raise InputError("--max-memory applies to --engine python; Spark's memory is set "
                         "by Spark's own configuration", hint="leave out --max-memory, or "
                         "use --engine python")
    guard = memory_guard(args.max_memory)
    fmt = output_format(args.format, args.output)
    require_writable(args.output)
    program = load_program(args.program)
    facts = read_facts_files(args.facts, **program_shapes(program))
    if args.engine == "spark":
        from ..batch.spark import evaluate_spark
        with _round_bar(args.progress) as progress:
            result = evaluate_spark(program, facts, aggsel=not args.no_aggsel,
                                    master=args.spark_master, progress=progress)
    else:
        from ndlog.reference import evaluate
        with _round_bar(args.progress) as progress:
            result = evaluate(program, facts, aggsel=not args.no_aggsel,
                              guard=_with_progress(guard, progress))
    write_text(render_relations(result, fmt), args.output)
    return 0


@contextlib.contextmanager
def _round_bar(show: bool | None):
    """A ``progress(predicates, round, added=None)`` callback (as
    :func:`psn.batch.spark.evaluate_spark` calls it) that shows the semi-naive rounds on a
    tqdm line on stderr (``show`` None: when stderr is a terminal), or None. A program
    without a finite fixpoint shows its rounds going on (until Ctrl-C on Spark)."""
    if not shows_progress(show):
        yield None
        return
    from tqdm import tqdm
    bar = tqdm(desc="reference", unit=" rounds", file=sys.stderr, leave=False)

    def progress(predicates: str, rounds: int, added: int | None = None) -> None:
        bar.set_description_str(f"reference, {predicates}", refresh=False)
        bar.set_postfix_str(f"round {rounds:,}" + ("" if added is None else
                                                   f": {added:,} new"), refresh=False)
        bar.update(1)
    try:
        yield progress
    finally:
        bar.close()


def _with_progress(guard, progress):
    """The Python reference's ``guard(round, predicates)`` (called after every rule
    firing), which also shows each new round of a stratum on ``progress``."""
    if progress is None:
        return guard
    last = [None]

    def guarded(rounds: int, predicates: frozenset) -> None:
        if guard is not None:
            guard(rounds, predicates)
        if rounds and (rounds, predicates) != last[0]:
            last[0] = (rounds, predicates)
            progress("/".join(sorted(predicates)), rounds)
    return guarded


def add_memory_option(p: argparse.ArgumentParser, where: str = "") -> None:
    """Add ``--max-memory`` to a subcommand that runs the Python reference."""
    p.add_argument("--max-memory", default=None, metavar="SIZE",
                   help="stop the evaluation past this resident memory" + where + ": 4G, "
                   "512M, a fraction of this machine's memory (0.5), or off (default 0.75; "
                   "a program without a finite fixpoint stops there)")


def memory_guard(text: str | None):
    """The guard of ``--max-memory`` ``text`` (None: the default ceiling) for
    :func:`ndlog.reference.evaluate`, or None for no ceiling."""
    from engine.guards import parse_memory

    from ..oracle import memory_ceiling
    size = None if text is None else parse_memory(text)
    return memory_ceiling(size, "--max-memory", "off")


def add_output_options(p: argparse.ArgumentParser) -> None:
    """Add ``--format`` and ``--output`` to a subcommand that prints relations."""
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="table (each relation, then its tuples), json or csv "
                   "(relation,arg1,...; a string as its text where that reads back as the "
                   "same string); default: the format --output's extension names (.json, "
                   ".csv), else table")
    p.add_argument("--output", metavar="FILE", default=None,
                   help="write the relations to FILE instead of standard output")


def output_format(fmt: str | None, output: str | None) -> str:
    """The format to render relations in, from ``--format`` and ``--output``.

    Parameters
    ----------
    fmt:
        The ``--format`` given, or ``None``.
    output:
        The ``--output`` file, or ``None`` for standard output.

    Returns
    -------
    str
        ``fmt`` if given; else the format the extension of ``output`` names (``.json``,
        ``.csv``, case-insensitive); else ``"table"``.

    Raises
    ------
    InputError
        If ``fmt`` is given and ``output``'s extension names another format
        (``--format table --output x.json``).

    Examples
    --------
    >>> output_format(None, "result.JSON"), output_format(None, "out.txt")
    ('json', 'table')
    >>> output_format("csv", None), output_format("json", "out.txt")
    ('csv', 'json')
    """
    from ndlog.errors import InputError

    named = _SUFFIX_FORMATS.get(Path(output).suffix.lower()) if output else None
    if fmt is None:
        return named or "table"
    if named is not None and named != fmt:
        raise InputError(f"--format {fmt} disagrees with --output '{output}', whose "
                         f"extension names {named}; drop one of them or make them agree")
    return fmt


def write_text(text: str, output: str | None) -> None:
    """Write ``text`` and a newline to the file ``output``, or to standard output.

    Raises
    ------
    InputError
        If ``output`` cannot be written (missing directory, no permission, ...).
    """
    from ndlog.files import write_atomic

    if not output:
        sys.stdout.write(text + "\n")
        return
    write_atomic(output, text + "\n")
