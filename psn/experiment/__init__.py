"""Reproducing the papers' experiments: Liu et al. 2009 Sec. 7 and Nigam et al. 2012.

Role: ``psn experiment NAME`` as a library. :func:`run_experiment` plans an experiment's
runs at a scale (:func:`~psn.experiment.figures.make_config`), runs those not in the cache
(:func:`~psn.experiment.executor.run_all`: local processes, this process, or Ray), and
writes raw rows, the summary with 95% confidence intervals over the repetitions, one figure
per panel and ``report.md`` with the paper's claims beside the measurements
(:func:`~psn.experiment.report.write_experiment`)::

    from psn.experiment import make_config, run_experiment
    result = run_experiment("fig7", make_config("quick"), "out/fig7", jobs=2)
    result.report, [c.verdict for c in result.claims]

Every run goes through the project's own APIs (``sim.Simulation`` with
``engine.RunOptions`` and a workload SPEC; ``engine.Network`` for Nigam et al.'s examples)
and has a time and memory budget; a run over budget is data ("did not finish"), drawn and
reported as such, and evidence for a claim only where that stop is what the claim is about.

Deliberately not here: the engine and the simulator themselves; the command line
(:mod:`psn.cli.experiment_cmd`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterable

from engine.options import require_flag
from ndlog.errors import InputError
from ndlog.files import claimed_dir, file_path, require_parent

from .executor import EXECUTORS, Cache, check_run_settings, run_all
from .figures import (EXPERIMENTS, SCALES, Claim, Config, Experiment, get_experiment,
                      make_config)
from .report import ExperimentResult, write_experiment, write_index
from .runs import RunSpec, code_version, execute_run, machine_info, record_problem
from .stats import summarize, t_quantile

__all__ = ["run_experiment", "run_experiments", "EXPERIMENTS", "SCALES", "EXECUTORS",
           "Config", "make_config", "Experiment", "ExperimentResult", "Claim", "RunSpec",
           "Cache", "run_all", "execute_run", "get_experiment", "summarize", "t_quantile",
           "code_version", "machine_info"]


def run_experiment(name: str, cfg: Config, output: str | Path, *, cache: str | Path | None = None,
                   executor: str = "local", jobs: int = 1, address: str | None = None,
                   fresh: bool = False, progress: bool | None = None,
                   command: str = "", report_only: bool = False) -> ExperimentResult:
    """Run (or read from the cache) every run of experiment ``name`` and write its files.

    Parameters
    ----------
    name:
        A key of :data:`EXPERIMENTS`.
    cfg:
        Scale, repetitions, seed and budgets (:func:`make_config`).
    output:
        The directory for rows, summary, figures and ``report.md`` (created if missing; its
        parent directory must exist).
    cache:
        Where finished runs are kept (default ``output/cache``; created if missing, its
        parent directory must exist).
    executor, jobs, address, fresh, progress:
        See :func:`~psn.experiment.executor.run_all`.
    command:
        The command line, for the report.
    report_only:
        Run nothing: rebuild rows, summary, figures and report from the ``runs.json``
        already in ``output`` (after a change to the reports, or with records made by
        another version of the code), which stays as it is (with fewer repetitions than
        it holds, the report uses some of its runs and the others are kept).
    """
    exp = get_experiment(name)
    if not isinstance(cfg, Config):
        raise InputError(f"cfg is a psn.experiment.Config (make_config builds one), got "
                         f"{type(cfg).__name__} {cfg!r:.80}")
    outdir = file_path(output, "experiment output")
    check_run_settings(executor, jobs, fresh, progress)
    require_flag(report_only, "report_only")
    if not isinstance(command, str):
        raise InputError(f"command is the command line (a str), got {type(command).__name__}")
    t0 = time.perf_counter()
    items = exp.plan(cfg)
    _require_directory(outdir, "experiment output", "--output")
    if report_only and not outdir.is_dir():
        _recorded(outdir, [i.spec for i in items])     # refused, without making the dir
    if cache is not None and not report_only:
        # before any run, not after the first
        require_parent(file_path(cache, "run cache"), "the run cache")
        _require_directory(Path(cache), "run cache", "--cache")
    with _claimed(outdir, report_only):
        rebuilt = ""
        if report_only:
            records = _recorded(outdir, [i.spec for i in items])
            previous = _previous_command(outdir)
            # the report names the runs' command, and the one that rebuilt it (which may
            # use some of the runs: fewer repetitions)
            rebuilt = command if previous and command != previous else ""
            command = previous or command
        else:
            store = Cache(Path(cache) if cache is not None else outdir / "cache")
            records = run_all([i.spec for i in items], store, executor=executor, jobs=jobs,
                              address=address, fresh=fresh, progress=progress, label=name)
        return write_experiment(exp, cfg, items, records, outdir, command,
                                None if report_only else time.perf_counter() - t0,
                                runs_file=not report_only, rebuilt=rebuilt)


def _require_directory(path: Path, what: str, option: str) -> None:
    """Refuse a ``path`` that exists and is no directory: the messages were the system's
    ("cannot write the experiment output 'f': File exists", and with ``--report-only``
    "cannot read f/runs.json: [Errno 20] Not a directory: 'f/runs.json'")."""
    if path.exists() and not path.is_dir():
        raise InputError(f"the {what} '{path}' is a file, not a directory",
                         hint=f"give a directory ({option}): psn experiment writes its files "
                              f"into it")


def _claimed(outdir: Path, report_only: bool = False):
    """``outdir`` for this process alone: two runs into one directory both ran every run
    and wrote their files over each other's."""
    return claimed_dir(outdir, "the experiment output",
                       hint="wait for that run to finish" + (
                           "" if report_only else ", or write this one elsewhere (--output)"))


def _recorded(outdir: Path, specs: list[RunSpec]) -> dict:
    """The records of ``specs`` from ``outdir/runs.json`` (``report_only``)."""
    import json
    path = outdir / "runs.json"
    try:
        saved = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"{outdir} holds no runs.json: no run of an experiment wrote there",
                         hint="run the experiment first (without --report-only), or give "
                              "the --output of a run") from None
    except (OSError, ValueError) as exc:
        why = exc.strerror or exc if isinstance(exc, OSError) else exc
        raise InputError(f"cannot read {path}: {why}",
                         hint="run the experiment first (without --report-only)") from None
    by_spec: dict = {}
    number: dict = {}
    for i, r in enumerate(saved if isinstance(saved, list) else [saved]):
        try:
            spec = RunSpec.from_dict(r["spec"])
            earlier = by_spec.get(spec)
        except (KeyError, TypeError, ValueError, AttributeError):   # not a record we wrote
            raise InputError(f"{path}: run {i + 1} is not a run record (no valid 'spec')",
                             hint="run the experiment again without --report-only") \
                from None
        if earlier is not None and earlier != r:
            # two records of one run (runs.json files put together): which one the report
            # would use is not the file's to say
            raise InputError(f"{path}: runs {number[spec]} and {i + 1} are two different "
                             f"records of the same run (same parameters)",
                             hint="keep one of them, or run the experiment again without "
                                  "--report-only")
        by_spec[spec], number[spec] = r, number.get(spec, i + 1)
        problem = record_problem(r)
        if problem:
            raise InputError(f"{path}: run {i + 1} is not a run record as psn experiment "
                             f"writes it: {problem}",
                             hint="run the experiment again without --report-only")
    missing = [s for s in specs if s not in by_spec]
    if missing:
        raise InputError(f"{len(missing)} of the experiment's {len(specs)} runs are not in "
                         f"{path} (other scale, seed or budget?)",
                         hint="use the options of the run that wrote it, or run without "
                              "--report-only")
    return {s: by_spec[s] for s in specs}


def _previous_command(outdir: Path) -> str:
    """The command of the report already in ``outdir`` (the runs' command), or ``""``."""
    try:
        text = (outdir / "report.md").read_text()
    except OSError:
        return ""
    for line in text.splitlines():
        if line.startswith("- Command: `") and line.endswith("`"):
            return line[len("- Command: `"):-1]
    return ""


def run_experiments(names: list[str], cfg: Config, output: str | Path, *,
                    command: str = "", **kw) -> tuple[list[ExperimentResult], Path]:
    """Run several experiments into ``output/NAME`` with one shared cache
    (``output/cache``) and write ``output/index.md``.

    Raises
    ------
    InputError
        For ``names`` that are not a list of experiment names, or an argument
        :func:`run_experiment` refuses, before any experiment runs.
    """
    if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise InputError(f"names are a list of experiment names, got {type(names).__name__} "
                         f"{names!r:.80}")
    names = list(names)
    for n in names:
        get_experiment(n)
    outdir = file_path(output, "experiment output")
    kw.setdefault("cache", outdir / "cache")
    with _claimed(outdir):
        results = [run_experiment(n, cfg, outdir / n, command=command, **kw) for n in names]
        return results, write_index(results, outdir, command)
