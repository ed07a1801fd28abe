"""``psn reference PROGRAM [--facts FILE]... [--engine python|spark] [--spark-master URL]
[--format table|json|csv] [--output FILE]``: compute the reference result relations.

Role: the command-line face of the two reference evaluators (RUNTIME.md §6): the Python
one (:func:`ndlog.reference.evaluate`) and the Spark batch one
(:func:`psn.batch.spark.evaluate_spark`, local Spark unless ``--spark-master`` names a
cluster). Prints the relations or writes them to a file.

Deliberately not here: distributed runs and their checking (``psn run --check spark``
calls :func:`psn.batch.spark.evaluate_spark` and :func:`ndlog.check.compare_relations`);
pyspark is imported only when ``--engine spark`` is chosen.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.add_argument("--output", metavar="FILE", default=None,
                   help="write the relations to FILE instead of standard output")
    p.add_argument("--no-aggsel", action="store_true",
                   help="turn aggregate selection off (enumerates every path)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ndlog.errors import InputError
    from ndlog.output import read_facts_files, render_relations
    from ndlog.parser import load

    if args.spark_master and args.engine != "spark":
        raise InputError("--spark-master needs --engine spark")
    program = load(args.program)
    facts = read_facts_files(args.facts)
    if args.engine == "spark":
        from ..batch.spark import evaluate_spark
        result = evaluate_spark(program, facts, aggsel=not args.no_aggsel,
                                master=args.spark_master)
    else:
        from ndlog.reference import evaluate
        result = evaluate(program, facts, aggsel=not args.no_aggsel)
    text = render_relations(result, args.format)
    if args.output:
        try:
            with open(args.output, "w") as fh:
                fh.write(text + "\n")
        except OSError as exc:
            raise InputError(f"cannot write '{args.output}': {exc.strerror or exc}") from None
    else:
        sys.stdout.write(text + "\n")
    return 0
