"""``psn run PROGRAM [options]``: run a program on any engine, step by step.

A run is a list of steps, each one burst run to quiescence (the bursty model of Nigam et
al. 2012, Sec. 3.1): the ``--facts`` files, then the ``--workload`` on the ``--topology``
(expanded against the live base facts with :class:`engine.workloads.WorkloadContext`, so the
same workload and seed give the same steps on every engine), then each ``--burst`` file
(``--overlap``: all of them as one step). The same steps run on the in-memory engine, the
simulator or Ray (:mod:`psn.cli.runners`); ``--check`` compares with the reference after
every step.

Output has one shape on every engine. ``--format json`` prints one document with ``run``
(the resolved settings), ``steps`` (one row per step, :data:`psn.cli.runners.STEP_COLUMNS`),
``summary``, ``relations`` (every relation of the program, or those of ``--relation``) and
``metrics``; the table prints the steps with the same columns, a summary line, the
relations (a count per relation when they are many), and ``--why`` formulas.

Deliberately not here: the option declarations (:mod:`psn.cli.options`), the engines.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import dataclass
from typing import Any

from ndlog.errors import InputError, PSNError
from ndlog.output import program_shapes
from ndlog.text import count_noun, shows_progress

from .options import (add_run_options, check_engine_options, engine_of, load_program,
                      run_options)

__all__ = ["register", "run", "execute", "report", "Outcome", "plan_steps", "print_table",
           "TABLE_LIMIT"]

#: Relations with at most this many tuples in all are printed in full by the table output.
TABLE_LIMIT = 500


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``psn run`` subcommand and its options to ``sub`` (the parser's
    subcommands), with :func:`run` as its action."""
    p = sub.add_parser("run", help="run a program on the PSN engine",
                       description="Run an NDlog program with pipelined semi-naive "
                       "evaluation (PSN) on in-memory nodes, the simulator or Ray, apply "
                       "bursts of updates or a workload, and print what each step cost and "
                       "the final relations.")
    p.add_argument("program", help="NDlog program file")
    add_run_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``psn run`` with the parsed ``args``.

    Returns
    -------
    int
        The exit status.
    """
    return report(args, execute(args))


@dataclass
class Outcome:
    """What a run produced: the resolved settings, the step rows, and the final relations,
    base facts, metrics and ``--why`` formulas."""

    run: dict
    rows: list[dict]
    relations: dict[str, set]
    base_facts: dict[str, set]
    metrics: dict
    #: ``(text, formula)``; the formula is None for a fact that is not derived, the
    #: :class:`engine.why.TooLarge` error for one whose provenance is too large to print
    why: list[tuple[str, Any]]


def execute(args: argparse.Namespace, program=None) -> Outcome:
    """Run the steps the parsed flags describe on their engine (see the module doc);
    ``program`` (parsed) instead of reading ``args.program``."""
    from ndlog.files import require_writable

    from .runners import make_runner

    engine = engine_of(args)
    check_engine_options(args, engine)
    require_writable(args.metrics, "metrics file")
    if args.workload is not None and not args.workload.strip():
        from engine.workloads import SPEC_HELP
        raise InputError("--workload is empty (an unset shell variable?)",
                         hint=f"leave --workload out for 'all', or give {SPEC_HELP}")
    if program is None:
        program = load_program(args.program)
    options = run_options(args, engine)
    topology = _topology(args)
    if topology is not None:            # refused before a runner starts: too many deletions
        from engine.workloads import parse_workload
        _refuse_timeless_wait(parse_workload(args.workload or "all", topology), program,
                              engine)
    shapes = program_shapes(program)
    facts = _read_facts(args, shapes)
    bursts = _read_bursts(args, shapes)
    wanted = _why_wanted(args.why, program, options, shapes)
    _refuse_inexact_deletions(args, program, options, bursts, engine)
    with _engine_errors(engine):
        runner = make_runner(engine, program, options, args, topology)
        try:
            _check_relation_names(args, runner)
            _check_why_supported(runner, wanted)
            _note_minship_per_node(args, options, runner)
            rows = _run_steps(args, runner, program, topology, facts, bursts)
            return Outcome(runner.describe(), rows, runner.relations(), runner.base_facts(),
                           runner.metrics(), [(text, _why(runner, pred, tup))
                                              for text, pred, tup in wanted])
        finally:
            runner.close()


def _note_minship_per_node(args, options, runner) -> None:
    """``--minship-at worker`` where every node is its own worker (the in-memory engine and
    the simulator without ``--workers`` or ``--placement``) is MinShip per node: say so
    rather than let the run look as if a stage were shared."""
    if (args.minship_at == "worker" and runner.engine != "ray"
            and options.workers is None and options.placement is None):
        print("note: every node is its own worker here, so --minship-at worker is MinShip "
              "per node; give --workers N or --placement to share a stage among the nodes "
              "of a worker", file=sys.stderr)


def _check_relation_names(args, runner) -> None:
    """Refuse an unknown ``--relation`` before the run, not after it."""
    from ndlog.output import select_relations
    names = getattr(args, "relation", None)
    if names:
        select_relations(dict.fromkeys(runner.relation_names(), set()), names)


def _engine_errors(engine: str):
    """Ray's failures as one clear PSN error (:func:`psn.distributed.runtime.ray_errors`)."""
    if engine != "ray":
        return contextlib.nullcontext()
    from ..distributed.runtime import ray_errors
    return ray_errors()


# -- inputs --------------------------------------------------------------------------------

def _refuse_topology_options(args) -> None:
    """Options of a topology given without one: they were silently ignored."""
    given = [flag for flag, value in (("--topology-option", args.topology_option),
                                      ("--topology-seed", args.topology_seed),
                                      ("--cost", args.cost)) if value not in (None, [])]
    if given:
        raise InputError(f"{given[0]} applies to a topology, and this run has none",
                         hint="add --topology NAME (or a --workload, which runs on ts100 by "
                              "default), or leave out " + ", ".join(given))


def _topology(args):
    """The topology of ``--topology`` (or the default one when only ``--workload`` asks
    for one), else ``None``: no topology is loaded unless asked for."""
    if not (args.topology or args.workload):
        _refuse_topology_options(args)
        return None
    from pathlib import Path

    import topologies
    name = args.topology or "ts100"
    opts = _topology_options(args.topology_option)
    seed = args.seed or 0
    if topologies.names_file(name):
        if not Path(name).exists():
            raise InputError(f"topology file '{name}' does not exist",
                             hint="give an existing .alt or .json file, or a generator name "
                             "such as ts100")
        if opts:
            raise InputError(f"--topology-option {args.topology_option[0]} does not apply to "
                             f"the topology file '{name}': generator options apply to a "
                             f"generator (--topology NAME), a file fixes the nodes, links "
                             f"and latencies",
                             hint="leave out --topology-option, or write the topology you "
                             "want with psn topology ... --output FILE")
        return topologies.load(name)
    valid = [k for k in topologies.options_of(name) if k not in _NOT_ON_THE_COMMAND_LINE]
    for key in opts:
        if key not in valid:
            raise InputError(f"--topology {name} has no option {key!r}",
                             hint=f"the options of {name} are {', '.join(valid)}, as "
                             f"--topology-option KEY=VALUE")
    if "latency" in opts:                # in ms; a run's delays are bounded up front too
        from engine.delivery import MAX_DURATION, require_at_least
        require_at_least("--topology-option latency (ms)", opts["latency"], 0,
                         high=MAX_DURATION * 1e3)
    from engine.guards import default_memory_limit, parse_memory
    topologies.check_size(name, default_memory_limit() if args.max_memory is None
                          else parse_memory(args.max_memory), **opts)
    try:
        return topologies.make(name, seed=seed if args.topology_seed is None
                               else args.topology_seed, **opts)
    except TypeError as exc:
        words = [f"{k}={v}" for k, v in opts.items() if isinstance(v, str)]
        if words:                           # a number option given a word: say so
            example = _OPTION_EXAMPLES.get(name, f"--topology-option {valid[0]}=N")
            raise InputError(f"bad --topology-option for {name!r}: "
                             f"{', '.join(words)} is not a number",
                             hint=f"give a number, e.g. {example}") from None
        raise InputError(f"bad --topology-option for {name!r}: {exc}") from None
    except InputError as exc:
        if exc.hint is not None or exc.span is not None:   # says enough, or where
            raise
        example = _OPTION_EXAMPLES.get(name)
        raise InputError(exc.message, hint=f"the {name} generator takes its options as "
                         f"--topology-option KEY=VALUE (repeatable)"
                         + (f", e.g. {example}" if example else "")) from None


#: options of ``topologies.make`` whose values (a dict, a ``TSParams``) KEY=VALUE cannot give
_NOT_ON_THE_COMMAND_LINE = ("params", "latencies")

#: the options of some generators (``topologies.make``), for hints
_OPTION_EXAMPLES = {
    "random": "--topology-option n=20 --topology-option m=40 (or p=0.2)",
    "ring": "--topology-option n=10", "line": "--topology-option n=10",
    "grid": "--topology-option rows=4 --topology-option cols=5",
    "dense": "--topology-option nodes=300", "sparse": "--topology-option nodes=300"}


def _topology_options(items: list[str]) -> dict:
    out, given = {}, {}
    for item in items or []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise InputError(f"--topology-option takes KEY=VALUE, not {item!r}")
        name = key.strip().replace("-", "_")
        if name in out:
            raise InputError(f"--topology-option {key.strip()} is given twice "
                             f"({given[name]}, then {item}); the last one would be used "
                             f"without a word", hint="give each option once")
        out[name], given[name] = _value(value.strip()), item
    return out


def _value(text: str):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def _read_facts(args, shapes: dict) -> list:
    """The ``--facts`` files, checked against the program's arities and locations."""
    from ndlog.output import read_facts_files
    facts = read_facts_files(args.facts, **shapes)
    return [(1, p, t) for p, rows in facts.items() for t in rows]


def _read_bursts(args, shapes: dict) -> list[tuple[str, list]]:
    """The ``--burst`` files, checked like the facts."""
    from engine.bursts import read_burst_file
    return [(f"burst {path}", read_burst_file(path, **shapes)) for path in args.burst]


def _why_facts(texts: list[str], shapes: dict) -> list[tuple[str, str, tuple]]:
    """``--why`` arguments as ``(text, pred, tuple)``, read before anything runs and
    checked against the program's ``shapes`` (:func:`ndlog.output.program_shapes`) as the
    facts are: a predicate, arity or ``@`` the program does not have is refused before the
    run, not after it."""
    from ndlog.parser import FactShapes, parse_atom
    out = []
    for text in texts:
        try:
            atom = parse_atom(text.strip(), "--why", FactShapes(**shapes))
        except PSNError as e:
            shown = repr(text) if len(text) <= 80 else f"'{text[:60]}...' ({len(text):,} " \
                "characters)"
            raise InputError(f"--why {shown} is not a fact of this program: "
                             f"{e.render()}") from None
        out.append((text.strip(), atom.pred, atom.values))
    return out


def _why_wanted(texts: list[str], program, options, shapes: dict
                ) -> list[tuple[str, str, tuple]]:
    """:func:`_why_facts`, where one query per aggregate (``--aggsel single``) also
    accepts the copies its queries derive (``path_minCost`` and ``path_minHops``, shaped
    as ``path``) and refuses the predicate they replace, which it does not compute."""
    if options.aggsel != "single":
        return _why_facts(texts, shapes)
    from engine.why import refuse_split
    from localize.analysis import query_splits
    arities, locations = dict(shapes["arities"]), dict(shapes["locations"])
    for pred, split in query_splits(program).items():
        for copy in split.copies.values():
            arities[copy] = arities.get(pred)
            locations[copy] = locations.get(pred)
    wanted = _why_facts(texts, {"arities": arities, "locations": locations})
    for text, pred, _ in wanted:
        refuse_split(program, pred, repr(text))
    return wanted


def _refuse_timeless_wait(workload, program, engine: str) -> None:
    """Refuse a ``wait`` phase on an engine without virtual time when the program has soft
    state: nothing would expire, and ``--check`` would agree (it compares with the same
    base facts), so the run would look like the simulator's and be another."""
    from engine.guards import soft_state_deletions
    from engine.workloads import Wait
    if engine == "sim" or not any(isinstance(p, Wait) for p in workload.phases):
        return
    soft = soft_state_deletions(program)
    if soft is not None:
        raise InputError(f"the workload {workload.spec!r} waits, but engine {engine} has no "
                         f"virtual time: {soft}, and nothing would expire",
                         hint="run it on the simulator (--engine sim), which expires soft "
                              "state as time passes")


def _refuse_inexact_deletions(args, program, options, bursts, engine: str) -> None:
    """Before anything runs: refuse a run that will delete facts when the annotation
    cannot make deletions exact on this program (set semantics on recursion, ...)."""
    from engine import prepare
    from engine.guards import implicit_deletions
    from engine.workloads import parse_workload
    prepared = prepare(program)
    resolved = options.resolve(prepared, fixed_order=engine == "ray")
    if resolved.deletion_problem is None:
        return
    if any(sign < 0 for _, burst in bursts for sign, _, _ in burst):
        because = "a burst deletes facts"
    elif args.workload and parse_workload(args.workload).deletes:
        because = f"the workload {args.workload!r} deletes facts"
    else:
        because = implicit_deletions(program)
    if because is not None:
        resolved.check_deletions(prepared, because)


def _why(runner, pred: str, tup: tuple) -> str | None:
    """The formula of ``--why``, ``None`` for a fact that is not derived, or the
    :class:`engine.why.TooLarge` error (reported after the run's output, which a question
    too large to answer does not throw away)."""
    from engine.why import NotDerived, TooLarge
    try:
        return runner.why(pred, tup)
    except NotDerived:
        return None
    except TooLarge as exc:
        return exc


def _check_why_supported(runner, wanted) -> None:
    if wanted and getattr(runner.net.scheme, "explain", None) is None:
        raise InputError(f"--why needs absorption provenance, which annotation "
                         f"'{runner.net.scheme.name}' does not keep",
                         hint="use --annotation absorption")


# -- steps ---------------------------------------------------------------------------------

def plan_steps(args, runner, program, topology, facts: list, bursts: list):
    """``(label, burst, advance)`` for every step, the workload's expanded lazily against
    the runner's live base facts."""
    if facts:
        yield "facts", facts, 0.0
    if topology is not None:
        from engine.workloads import WorkloadContext, parse_workload
        workload = parse_workload(args.workload or "all", topology)
        ctx = WorkloadContext.for_run(topology, program, args.seed or 0,
                                      args.cost or "latency", runner.base_facts())
        for step in workload.steps(ctx):
            yield step.label, step.updates(), step.advance
            ctx.base = runner.base_facts()
    if args.overlap and bursts:
        from engine.bursts import Burst
        yield "all bursts", Burst.merged(b for _, b in bursts), 0.0
    else:
        for label, burst in bursts:
            yield label, burst, 0.0


def _run_steps(args, runner, program, topology, facts, bursts) -> list[dict]:
    checker = _checker(args, program)
    bar = _progress(args)
    rows = []
    try:
        for label, burst, advance in _printing_done_steps(
                runner, rows, plan_steps(args, runner, program, topology, facts, bursts)):
            row = _guarded_step(runner, rows, label, burst, advance, bar)
            row["check"], row["diff"] = checker(runner) if checker else (None, [])
            rows.append(row)
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(label[:40])
        if not rows:        # only the program's own facts
            row = runner.step("program facts", [], bar=bar)
            row["check"], row["diff"] = checker(runner) if checker else (None, [])
            rows.append(row)
    finally:
        if bar is not None:
            bar.close()
        if args.metrics:    # a stopped run too keeps the metrics of its steps (maybe none:
            runner.sim.write_metrics(args.metrics)      # no older run's file is left)
    return rows


def _printing_done_steps(runner, rows: list[dict], steps):
    """``steps``, except that when the workload refuses a later step (an ``InputError``,
    e.g. a flap of a link that is not present then), the steps completed so far are
    printed before the error propagates."""
    from ndlog.errors import InputError
    try:
        yield from steps
    except InputError:
        if rows:
            print(f"-- stopped before step {len(rows)}; the steps before it:")
            print_table(runner.describe(), rows)
        raise


def _guarded_step(runner, rows: list[dict], label: str, burst: list, advance: float,
                  bar=None) -> dict:
    """One step (its progress shown on ``bar``, if any); when a limit (memory, derivation
    budget, a bound on updates) or Ctrl-C stops it, the steps completed so far are printed
    before the error propagates."""
    from engine import NotConvergedError
    from engine.bursts import locate_error
    from engine.guards import AnnotationBudgetError, MemoryLimitError
    try:
        return runner.step(label, burst, advance, bar)
    except InputError as exc:               # a deletion of what is not there: its line
        locate_error(exc, [burst])
        raise
    except (MemoryLimitError, AnnotationBudgetError, NotConvergedError,
            KeyboardInterrupt) as exc:
        if rows or not isinstance(exc, KeyboardInterrupt):
            print(f"-- stopped in step {len(rows)} ({label}); the steps before it:")
            print_table(runner.describe(), rows)
        raise


def _checker(args, program):
    """``runner -> (equal, diff)`` against the reference of ``--check``, or ``None``."""
    if not args.check:
        return None
    from ndlog.analysis import aggsel_candidates
    from ndlog.check import verdict

    from ..oracle import reference_evaluator
    reference = reference_evaluator(args.check, args.spark_master)
    source = program.with_(facts=())
    pruned = set(aggsel_candidates(program))

    def check(runner):
        # a run that prunes nothing is compared with a reference that prunes nothing,
        # on every relation
        aggsel = runner.net.resolved.prunes
        want = reference(source, runner.base_facts(), aggsel=aggsel)
        return verdict(runner.relations(), want, skip=pruned if aggsel else set())
    return check


def _progress(args):
    if not shows_progress(args.progress):
        return None
    from tqdm import tqdm
    return tqdm(desc="psn run", unit="step", file=sys.stderr, leave=False)


# -- output --------------------------------------------------------------------------------

def report(args, outcome: Outcome) -> int:
    """Print a run's outcome in ``--format``; returns the exit status (1 if a check
    failed, else 2 if a ``--why`` was too large to answer)."""
    from ndlog.output import relations_to_json, select_relations

    rows = outcome.rows
    relations = select_relations(outcome.relations, args.relation)
    failed = [(i, r) for i, r in enumerate(rows) if r["check"] is False]
    summary = _summary(rows)
    too_large = [(text, f) for text, f in outcome.why if isinstance(f, PSNError)]
    answered = [(text, f) for text, f in outcome.why if not isinstance(f, PSNError)]
    if args.format == "json":
        doc = {"run": outcome.run, "steps": [_jsonable_row(i, r) for i, r in
                                              enumerate(rows)],
               "summary": summary, "relations": relations_to_json(relations),
               "metrics": outcome.metrics}
        if answered:
            doc["why"] = dict(answered)
        if too_large:
            doc["why_errors"] = {text: exc.message for text, exc in too_large}
        print(json.dumps(doc, sort_keys=True, default=repr))
    else:
        print_table(outcome.run, rows, summary)
        _print_relations(relations, explicit=bool(args.relation))
        for text, formula in outcome.why:
            if isinstance(formula, PSNError):
                print(f"{text}: too large to print (see the error)")
            else:
                print(f"{text}: not derived" if formula is None else f"{text} = {formula}")
    for _, exc in too_large:
        print(exc.render(), file=sys.stderr)
    for i, r in failed:
        print(f"check failed after step {i} ({r['label']}):", file=sys.stderr)
        for rel, sign, tup in r["diff"]:
            side = "only in the run" if sign == "+" else "missing from the run"
            print(f"  {rel}{tup} {side}", file=sys.stderr)
    if args.check:
        verdict = "ok" if not failed else f"FAILED after {count_noun(len(failed), 'step')}"
        print(f"-- check against {args.check}: {verdict}", file=sys.stderr)
    return 1 if failed else 2 if too_large else 0


def _jsonable_row(i: int, row: dict) -> dict:
    out = {"index": i}
    out.update(row)
    out["diff"] = [[rel, sign, list(t)] for rel, sign, t in row["diff"]]
    return out


def _summary(rows: list[dict]) -> dict:
    checks = [r["check"] for r in rows if r["check"] is not None]
    out = {"steps": len(rows), "wall_time": sum(r["wall_time"] for r in rows),
           "checked": len(checks), "check": all(checks) if checks else None}
    for k in ("messages_sent", "bytes_sent", "worker_messages_sent", "worker_bytes_sent",
              "updates_processed"):
        out[k] = sum(r[k] for r in rows)
    for k in ("sim_time", "recoveries"):
        if rows and k in rows[0]:
            out[k] = sum(r[k] for r in rows)
    return out


def print_table(d: dict, rows: list[dict], summary: dict | None = None) -> None:
    """The step table of a run described by ``d`` (:meth:`Runner.describe`) and its
    summary line."""
    summary = summary or _summary(rows)
    head = f"# engine {d['engine']}: annotation {d['annotation']} (ship {d['ship']}, " \
           f"aggsel {d['aggsel']})"
    if d["engine"] != "ray":
        head += f", delivery {d['delivery']}"
    print(head + f", seed {d['seed']}")
    if "topology" in d:
        print(f"# {d['topology']}; {d['placement']}; processing {d['processing']}")
    if d.get("unsafe"):
        print("# --unsafe: this annotation may give wrong answers on this run; its results "
              "are unchecked")
    if d["engine"] == "ray":
        print(f"# {d['workers']} Ray workers (Ray start-up {d['ray_startup_seconds']:.2f} s "
              f"and actors {d['actor_startup_seconds']:.2f} s, not in the wall times)")
    sim = d["engine"] == "sim"
    cols = [("step", "index"), ("label", "label"), ("wall s", "wall_time")]
    if sim:
        cols.append(("sim s", "sim_time"))
    cols += [("msgs", "messages_sent"), ("KB sent", "bytes_sent"),
             ("worker msgs", "worker_messages_sent"), ("worker KB", "worker_bytes_sent"),
             ("updates", "updates_processed"), ("tuples", "state_tuples")]
    if sim:
        cols.append(("prov B/tuple", "provenance_per_tuple"))
    cols.append(("check", "check"))
    table = [[_cell(key, i, r) for _, key in cols] for i, r in enumerate(rows)]
    names = [name for name, _ in cols]
    widths = [max(len(n), *(len(t[i]) for t in table)) if table else len(n)
              for i, n in enumerate(names)]
    print("  ".join(n.ljust(w) for n, w in zip(names, widths)))
    for t in table:
        print("  ".join(c.ljust(w) if i == 1 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(t, widths))))
    verdict = {None: "not checked",
               True: f"ok ({count_noun(summary['checked'], 'step')} equal to the reference)",
               False: "FAILED"}[summary["check"]]
    sim_part = f"convergence {summary['sim_time']:.4f} s simulated, " \
        if "sim_time" in summary else ""
    print(f"-- {count_noun(summary['steps'], 'step')}: {sim_part}{summary['wall_time']:.2f} s "
          f"wall; {summary['worker_bytes_sent'] / 1e6:.3f} MB in "
          f"{count_noun(summary['worker_messages_sent'], 'message')} between workers; "
          + (f"{count_noun(summary['recoveries'], 'recovery', 'recoveries')} from lost "
             f"workers; " if "recoveries" in summary else "")
          + f"check: {verdict}")


_FORMATS = {"wall_time": "{:.3f}", "sim_time": "{:.4f}", "provenance_per_tuple": "{:.1f}"}


def _cell(key: str, i: int, row: dict) -> str:
    if key == "index":
        return str(i)
    if key == "label":
        return str(row["label"])
    v = row[key]
    if key == "check":
        return {None: "-", True: "ok", False: "FAIL"}[v]
    if key in ("bytes_sent", "worker_bytes_sent"):
        return f"{v / 1e3:.1f}"                  # KB and MB are 10^3 and 10^6 bytes, as
                                                # in psn experiment and the docs
    return _FORMATS.get(key, "{:,}").format(v)


def _print_relations(relations: dict, explicit: bool) -> None:
    from ndlog.output import render_relations
    total = sum(len(ts) for ts in relations.values())
    if explicit or total <= TABLE_LIMIT:
        print(render_relations(relations, "table"))
        return
    for name in sorted(relations):
        print(f"{name}: {count_noun(len(relations[name]), 'tuple')}")
    print(f"-- {count_noun(total, 'tuple')} in all; --relation NAME prints one in full")
