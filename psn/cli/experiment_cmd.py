"""``psn experiment``: reproduce the papers' figures, one command each.

Role: the command-line front end of :mod:`psn.experiment`::

    psn experiment list
    psn experiment NAME [--quick] [--runs N] [--seed S] [--output DIR] [--jobs J]
                        [--executor local|inline|ray] [--address HOST:PORT]
                        [--time-budget S] [--max-memory SIZE] [--fresh] [--report-only]
    psn experiment all [same options]

``NAME`` is ``fig7`` ... ``fig14`` (Liu et al. 2009 Sec. 7) or ``nigam`` (Nigam et al.
2012 Fig. 6 and Sec. 5-6). Each writes raw rows, a summary with 95% confidence intervals,
one PNG and SVG per panel and ``report.md`` into ``--output`` (default
``experiments/NAME``); ``all`` writes every experiment under ``--output`` (default
``experiments``) and an ``index.md``. Finished runs are cached in ``DIR/cache``, so an
interrupted sweep resumes.

Deliberately not here: the experiments themselves (:mod:`psn.experiment`).
"""

from __future__ import annotations

import argparse
import shlex
import sys

__all__ = ["register"]


def register(subparsers) -> None:
    """Add the ``psn experiment`` subcommand and its options to ``subparsers`` (the
    parser's subcommands)."""
    from psn.experiment.figures import EXPERIMENTS, SCALES
    names = ", ".join(EXPERIMENTS)
    p = subparsers.add_parser(
        "experiment", help="reproduce the papers' figures (Liu et al. Sec. 7, Nigam et al.)",
        description="Run one of the papers' experiments with repetitions, write raw rows, "
                    "a summary with 95% confidence intervals, one figure per panel and a "
                    f"report beside the paper's claims. NAME: {names}; 'list' lists them, "
                    "'all' runs every one.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", metavar="NAME", help=f"{names}, list or all")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_const", const="quick", dest="scale",
                      help=f"reduced sizes, {SCALES['quick']['runs']} repetitions, "
                           f"{SCALES['quick']['time_budget']:g} s per run (minutes on a "
                           f"2-core machine)")
    size.add_argument("--tiny", action="store_const", const="tiny", dest="scale",
                      help=argparse.SUPPRESS)
    p.set_defaults(scale="full")
    p.add_argument("--runs", type=int, metavar="N",
                   help=f"repetitions per point (default {SCALES['full']['runs']}, "
                        f"--quick {SCALES['quick']['runs']})")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="seed of the first repetition (repetition r uses S + r, nigam's "
                        "the T delivery seeds from S + r*T on; default 0)")
    p.add_argument("--output", "-o", metavar="DIR",
                   help="output directory (default experiments/NAME, or experiments for "
                        "all)")
    p.add_argument("--cache", metavar="DIR", help="run cache (default DIR/cache)")
    p.add_argument("--jobs", "-j", type=int, default=1, metavar="J",
                   help="runs in parallel, in local processes (default 1)")
    p.add_argument("--executor", choices=("local", "inline", "ray"), default="local",
                   help="local processes (default), this process (inline), or Ray tasks")
    p.add_argument("--address", metavar="HOST:PORT",
                   help="Ray cluster to run on (--executor ray; default: a local runtime)")
    p.add_argument("--time-budget", metavar="S",
                   help=f"wall-clock seconds per run before it counts as not finished, "
                        f"above 0 (default {SCALES['full']['time_budget']:g}, --quick "
                        f"{SCALES['quick']['time_budget']:g})")
    p.add_argument("--max-memory", metavar="SIZE",
                   help="resident memory per run, e.g. 4G, at least 64M (default: the "
                        "smaller of 4 GiB and half the machine's memory divided by --jobs; "
                        "with --report-only, the runs' own)")
    p.add_argument("--fresh", action="store_true", help="rerun cached runs")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing: rebuild rows, summary, figures and report from the "
                        "runs.json already in --output")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)


def _time_budget(args) -> float | None:
    """``--time-budget`` in seconds (a number, or with a unit: ``90s``), checked by
    :func:`psn.experiment.base.check_time_budget`; None when not given."""
    from engine.delivery import parse_duration
    from ndlog.errors import InputError
    from psn.experiment.base import check_time_budget
    if args.time_budget is None:
        return None
    try:
        seconds = parse_duration(args.time_budget)
    except ValueError:
        raise InputError(f"--time-budget {args.time_budget!r} is not a number of seconds",
                         hint="e.g. --time-budget 300") from None
    return check_time_budget(seconds, args.time_budget)


def _memory(args) -> int:
    """``--max-memory`` in bytes (:func:`engine.guards.parse_memory`, the rule of ``psn run
    --max-memory``), or the default share of this machine's memory per job; with
    ``--report-only``, the memory budget the recorded runs had, when they agree on one (the
    default share depends on ``--jobs``, which ``--report-only`` refuses, and on the
    machine)."""
    from engine.guards import MIN_MEMORY, parse_memory, physical_memory
    from ndlog.errors import InputError
    if args.max_memory:
        return parse_memory(args.max_memory)
    if args.report_only:
        recorded = _recorded_memory(args)
        if recorded is not None:
            return recorded
    phys = physical_memory() or 8 << 30
    share = int(min(4 << 30, phys // 2 // max(1, args.jobs)))
    if share < MIN_MEMORY:
        raise InputError(f"--jobs {args.jobs} leaves each run less than the minimum of "
                         f"{MIN_MEMORY >> 20} MiB of this machine's memory",
                         hint="use fewer --jobs, or give --max-memory")
    return share


def _recorded_memory(args) -> int | None:
    """The memory budget of every run in the ``runs.json`` that ``--report-only`` reads
    (``--output``, or each experiment's directory under it for ``all``), if they share
    one that a run can have; else None (the runs are then looked for with the default
    budget, and the experiment names what is missing)."""
    import json
    from pathlib import Path
    from engine.guards import MIN_MEMORY
    from psn.experiment.figures import EXPERIMENTS
    out = Path(_output(args) or ".")
    paths = [out / n / "runs.json" for n in EXPERIMENTS] if args.name == "all" \
        else [out / "runs.json"]
    budgets = set()
    for path in paths:
        try:
            runs = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for r in runs if isinstance(runs, list) else ():
            spec = r.get("spec") if isinstance(r, dict) else None
            budget = spec.get("memory_budget") if isinstance(spec, dict) else None
            if (isinstance(budget, int) and not isinstance(budget, bool)
                    and (budget == 0 or budget >= MIN_MEMORY)):
                budgets.add(budget)
    return budgets.pop() if len(budgets) == 1 else None


def _refuse_ignored(args) -> None:
    """Refuse an option that would have no effect: ``--jobs`` beside an executor that
    starts no local processes, and with ``--report-only`` (which runs nothing) the options
    of running (``--fresh``, ``--jobs``, ``--executor``, ``--address``, ``--cache``)."""
    from ndlog.errors import InputError
    if args.report_only:
        given = [flag for flag, given in (
            ("--fresh", args.fresh), (f"--jobs {args.jobs}", args.jobs != 1),
            (f"--executor {args.executor}", args.executor != "local"),
            ("--address", args.address is not None), ("--cache", args.cache is not None))
            if given]
        if given:
            raise InputError(f"{given[0]} does not apply to --report-only, which runs "
                             f"nothing: it rebuilds the report from the runs.json in "
                             f"--output",
                             hint=f"leave out {' and '.join(given)}, or --report-only")
    if args.jobs != 1 and args.executor != "local":
        raise InputError(f"--jobs {args.jobs} sets the local processes of --executor local, "
                         f"and --executor {args.executor} starts none"
                         + (": it runs one run after another in this process"
                            if args.executor == "inline" else
                            ": Ray runs as many tasks at once as the cluster has CPUs"),
                         hint="leave out --jobs, or use --executor local")


def _run(args) -> int:
    from ndlog.errors import InputError
    from psn.experiment import (EXPERIMENTS, make_config, run_experiment, run_experiments)
    if args.name == "list":
        return _list(EXPERIMENTS)
    if args.name != "all" and args.name not in EXPERIMENTS:
        raise InputError(f"unknown experiment {args.name!r}",
                         hint=f"one of {', '.join(EXPERIMENTS)}, list or all")
    if args.executor != "ray" and args.address:
        raise InputError("--address goes with --executor ray")
    _refuse_ignored(args)
    cfg = make_config(args.scale, args.runs, args.seed, _time_budget(args),
                      _memory(args))
    command = "psn experiment " + " ".join(shlex.quote(a) for a in sys.argv[2:]) \
        if len(sys.argv) > 2 and sys.argv[1] == "experiment" else f"psn experiment {args.name}"
    kw = dict(executor=args.executor, jobs=args.jobs, address=args.address, fresh=args.fresh,
              progress=False if args.no_progress else None, command=command,
              report_only=args.report_only)
    if args.cache is not None:        # an empty one is refused, not the default
        kw["cache"] = args.cache
    if args.name == "all":
        out = _output(args)
        results, index = run_experiments(list(EXPERIMENTS), cfg, out, **kw)
        for res in results:
            _print_result(res)
        print(f"index: {index}")
        return _status(results)
    res = run_experiment(args.name, cfg, _output(args), **kw)
    _print_result(res)
    return _status([res])


def _output(args) -> str:
    """``--output``, or the default (``experiments/NAME``, ``experiments`` for all); an
    empty ``--output ''`` is kept, for the experiment to refuse (it wrote into the
    default directory, and said so when that was missing)."""
    if args.output is not None:
        return args.output
    return "experiments" if args.name == "all" else f"experiments/{args.name}"


def _status(results) -> int:
    """1 if an experiment measured nothing (every run stopped before its first point),
    after saying so on stderr; else 0."""
    empty = [res for res in results if not res.measured]
    for res in empty:
        print(f"warning: {res.experiment.name}: nothing was measured, every run "
              f"stopped before its first point ({res.stopped_by()}), so no claim was "
              f"judged\nhint: raise --time-budget or --max-memory (why each run stopped: "
              f"{res.report})", file=sys.stderr)
    return 1 if empty else 0


def _list(experiments) -> int:
    for name, exp in experiments.items():
        print(f"{name:7} {exp.figure}: {exp.title} ({exp.source}, {exp.section})")
    return 0


def _print_result(res) -> None:
    exp = res.experiment
    v = res.verdicts()
    counts = ", ".join(f"{n} {k}" for k, n in v.items()) or "no claims"
    dnf = sum(1 for r in res.records if r.get("status") != "ok")
    print(f"{exp.name}: {len(res.records)} runs ({dnf} did not finish); claims: {counts}; "
          f"report: {res.report}")
