"""``psn.verify``: check that a program and an annotation are reorder-tolerant on a scope.

Role: the public face of the verifier. A program with an annotation scheme is
*reorder-tolerant* on a scope when, under every delivery order of the scope's bursts, every
burst reaches quiescence and then every node's state equals the synchronous semi-naive
result on the current base facts (Nigam et al. 2012, Definition 1, with channels that are
not FIFO, Sec. 3.1). :func:`verify` checks it exhaustively on small scopes (every distinct
delivery order at message granularity, with partial-order reduction and state hashing that
keep the search complete) and by seeded random or adversarial search on large ones, and
returns a :class:`VerifyResult`; a failure comes with a shrunk, replayable
:class:`~psn.verify.counterexample.Counterexample`. :func:`assert_reorder_tolerant` is the
same as a test assertion::

    import psn
    result = psn.verify(program, {"link": links}, [["-link(@1, 2)"]], mode="exhaustive")
    result.ok, result.complete, result.schedules, result.states
    psn.verify.assert_reorder_tolerant(program, {"link": links}, [["-link(@1, 2)"]])

The module is callable: ``psn.verify(...)`` is :func:`verify`.

Deliberately not here: one schedule (:mod:`psn.verify.model`), the search strategies
(:mod:`psn.verify.search`), counterexamples (:mod:`psn.verify.counterexample`), canonical
state forms (:mod:`psn.verify.fingerprint`), the command line (:mod:`psn.cli.verify_cmd`).
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from engine.options import require_flag
from ndlog.errors import InputError
from ndlog.text import count_noun, shows_progress

from .counterexample import Counterexample, shrink
from .model import Reference
from .scope import Budget, Problem, Scope
from .search import MODES, run_search

__all__ = ["verify", "assert_reorder_tolerant", "VerifyResult", "Counterexample", "Scope",
           "Budget", "Problem", "MODES"]


@dataclass
class VerifyResult:
    """What :func:`verify` found and covered.

    Attributes
    ----------
    ok:
        No schedule failed.
    complete:
        The search covered every delivery order of the scope (exhaustive mode, within the
        budget); ``ok and complete`` means the program is reorder-tolerant on the scope.
    mode:
        The search that ran: ``exhaustive``, ``random``, ``adversarial`` (or ``fifo`` when
        the FIFO schedule itself failed).
    schedules:
        Schedules run (the exhaustive search stops a schedule at a state it explored).
    finished:
        Schedules run to the end of the last burst.
    states:
        Distinct network states met at delivery choices (summed over workers); when
        ``distinct_states`` is False (an exhaustive search without state hashing: scope
        ``nohash`` or ``delays``), the delivery choices explored, which may repeat a state.
    deliveries:
        Deliveries executed in the explored phases, replayed prefixes included.
    seconds:
        Wall time of the search (shrinking excluded).
    counterexample:
        The shrunk failing schedule with its trace, or None.
    scope, budget:
        What was asked.
    estimate:
        The upper estimate of delivery orders ``auto`` decided by.
    notes:
        Remarks on coverage (parallel split, delay bound, ...).
    spent:
        The exhaustive search stopped because its budget ran out, before it covered every
        delivery order.
    """

    ok: bool
    complete: bool
    mode: str
    schedules: int
    finished: int
    states: int
    deliveries: int
    seconds: float
    counterexample: Counterexample | None
    scope: Scope
    budget: Budget
    annotation: str
    estimate: int | None = None
    jobs: int = 1
    notes: list = field(default_factory=list)
    spent: bool = False
    distinct_states: bool = True

    def __bool__(self) -> bool:
        return self.ok

    def summary(self) -> str:
        """One paragraph: verdict, coverage, scope."""
        if self.ok and self.complete:
            verdict = "reorder-tolerant on this scope: every delivery order explored"
        elif self.ok:
            verdict = f"no counterexample found, which is not a proof: {self._gap()}"
        elif self.mode == "fifo":          # no delivery order is to blame
            verdict = ("NOT correct even in FIFO order (no reordering involved): "
                       f"{self.counterexample.message}")
        else:
            verdict = f"NOT reorder-tolerant: {self.counterexample.message}"
        search = (f"{self.mode} search" if self.mode != "fifo"
                  else "the FIFO schedule (it fails without any reordering)" if not self.ok
                  else "the FIFO schedule, which auto runs first")
        lines = [
            verdict,
            f"  annotation {self.annotation}; {search}"
            + (f" (auto: about {self.estimate:,} delivery orders)"
               if self.estimate is not None and self.mode != "fifo" else "")
            + f"; {'complete' if self.complete else 'not complete'}",
            f"  {count_noun(self.schedules, 'schedule')} ({self.finished:,} to the end), "
            + (f"{count_noun(self.states, 'distinct state')}, " if self.distinct_states
               else f"{count_noun(self.states, 'delivery choice')} (no state hashing), ")
            + f"{count_noun(self.deliveries, 'delivery', 'deliveries')} in "
              f"{self.seconds:.2f} s",
            f"  scope: {self.scope.describe()}",
            f"  budget: {self.budget.describe()}",
        ]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _gap(self) -> str:
        """Why a search without a counterexample did not cover every order."""
        if self.mode == "fifo":
            return (f"the budget ({self.budget.describe()}) ran out within the FIFO "
                    f"schedule that auto runs first, before any search")
        if not self.schedules:
            return (f"the budget ({self.budget.describe()}) ran out before the {self.mode} "
                    f"search ran a single schedule")
        if self.spent:
            return (f"the exhaustive search ran out of its budget "
                    f"({self.budget.describe()}) before it covered every delivery order")
        if self.mode == "exhaustive":
            return "the search did not cover every delivery order"
        return f"{self.mode} search tries some delivery orders, never all of them"

    def to_json(self) -> dict:
        """The result as JSON values (the counterexample as its file's document)."""
        return {"ok": self.ok, "complete": self.complete, "mode": self.mode,
                "annotation": self.annotation, "schedules": self.schedules,
                "finished": self.finished, "states": self.states,
                "deliveries": self.deliveries, "seconds": round(self.seconds, 3),
                "states_distinct": self.distinct_states,
                "scope": self.scope.spec(), "budget": self.budget.describe(),
                "estimate": self.estimate, "jobs": self.jobs, "notes": list(self.notes),
                "budget_spent": self.spent,
                "counterexample": None if self.counterexample is None
                else self.counterexample.to_json()}


def verify(program, facts: Mapping[str, Iterable] | Iterable | None = None,
           bursts: Iterable = (), annotation: Any = "absorption", mode: str = "auto",
           budget: "int | str | Budget | None" = None, seed: int = 0, jobs: int = 1, *,
           scope: "Scope | str | None" = None, fifo: bool | None = None,
           unsafe: bool = False, ship: str | None = None, aggsel: str | bool = "auto",
           derivation_budget: int | None = None, derivation_total: int | None = None,
           shrinking: bool = True, progress: bool | None = None) -> VerifyResult:
    """Check that ``program`` with ``annotation`` is reorder-tolerant on a scope.

    Parameters
    ----------
    program:
        NDlog text or a parsed program.
    facts:
        Initial base facts, ``{pred: [tuple, ...]}`` or a list of insertions; loaded before
        the bursts (in FIFO order unless the scope says ``facts``).
    bursts:
        A list of bursts, each a list of updates: ``(sign, pred, tuple)`` or
        ``"+link(@1, 2)"`` / ``"-link(@1, 2)"``. Each is injected and delivered to
        quiescence under every schedule explored (all at once with scope ``overlap``).
    annotation:
        A registered scheme name (``absorption``, ``derivation``, ``set``, ...) or a scheme
        object (copied fresh for each schedule; a counterexample file needs a name).
    mode:
        ``exhaustive``, ``random``, ``adversarial`` or ``auto`` (exhaustive when the scope
        looks small for the budget, else random).
    budget:
        Schedules (``1000``) or time (``"30s"``); default 100,000 schedules or 10 minutes,
        whichever comes first.
    seed:
        Seeds random and adversarial schedules.
    jobs:
        Worker processes.
    scope:
        A :class:`Scope` or its text (``"overlap,batch=2"``, see :meth:`Scope.parse`).
    fifo:
        Channels are FIFO (overrides the scope's ``fifo``).
    unsafe, ship, aggsel, derivation_budget, derivation_total:
        Run options (:class:`engine.options.RunOptions`).
    shrinking:
        Shrink a counterexample to few non-FIFO choices before returning it.
    progress:
        Show the schedules explored so far on stderr (a tqdm bar; ``None``: when stderr
        is a terminal).

    Returns
    -------
    VerifyResult

    Raises
    ------
    PSNError
        For a malformed program, fact, burst, scope, budget or option (nothing runs then),
        or a scheme the engine refuses on this program (unless ``unsafe``).
    """
    require_flag(fifo, "fifo", optional=True)
    _require_seed(seed)             # before the problem's own checks, as every setting
    if not isinstance(scope, Scope):
        scope = Scope.parse(scope)
    if fifo is not None:
        scope = replace(scope, fifo=fifo)
    problem = Problem.make(program, facts, bursts, annotation, scope, unsafe=unsafe,
                           ship=ship, aggsel=aggsel, derivation_budget=derivation_budget,
                           derivation_total=derivation_total)
    return verify_problem(problem, mode, Budget.parse(budget), seed, jobs, shrinking,
                          progress)


def _require_seed(seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"seed is an integer, got {seed!r}")


def verify_problem(problem: Problem, mode: str = "auto", budget: Budget | None = None,
                   seed: int = 0, jobs: int = 1, shrinking: bool = True,
                   progress: bool | None = None) -> VerifyResult:
    """:func:`verify` for a built :class:`Problem`."""
    if not isinstance(problem, Problem):
        raise InputError(f"problem is a psn.verify.Problem (Problem.make builds one), got "
                         f"{type(problem).__name__}")
    _require_seed(seed)
    if budget is not None and not isinstance(budget, Budget):
        budget = Budget.parse(budget)
    require_flag(shrinking, "shrinking")
    require_flag(progress, "progress", optional=True)
    budget = budget or Budget()
    bar = _search_bar(budget, jobs, progress)
    try:
        stats, info = run_search(problem, mode, budget, seed, jobs,
                                 None if bar is None else lambda stats: bar.update(1))
    finally:
        if bar is not None:
            bar.close()
    cex = None
    if stats.failure is not None:
        found = stats.failure
        reference = Reference(problem)
        small = shrink(problem, found, reference) if shrinking else found
        cex = Counterexample.from_result(problem, small, found.deviations)
        cex = cex.replay()
        cex.found = found.deviations
    return VerifyResult(
        ok=stats.failure is None, complete=stats.complete and stats.failure is None,
        mode=stats.mode, schedules=stats.schedules, finished=stats.finished,
        states=stats.states, deliveries=stats.deliveries, seconds=stats.seconds,
        counterexample=cex, scope=problem.scope, budget=budget,
        annotation=problem.annotation_name,
        estimate=info.get("estimate") if mode == "auto" else None, jobs=jobs,
        notes=list(stats.notes), spent=stats.spent and stats.failure is None,
        distinct_states=stats.distinct)


def _search_bar(budget: Budget, jobs: int, progress: bool | None):
    """A tqdm bar of the schedules explored (of the budget's, with one job), or None."""
    if not shows_progress(progress):
        return None
    from tqdm import tqdm
    label = "verify" if jobs == 1 else f"verify (worker 1 of {jobs})"
    total = budget.schedules if jobs == 1 else None
    return tqdm(total=total, desc=label, unit=" schedules", file=sys.stderr, leave=False)


def assert_reorder_tolerant(program, facts=None, bursts=(), *, complete: bool = False,
                            **options) -> VerifyResult:
    """Assert that :func:`verify` finds no counterexample (for a user's test suite).

    Parameters
    ----------
    program, facts, bursts, options:
        As :func:`verify`.
    complete:
        Also require that the search covered every delivery order (use with
        ``mode="exhaustive"`` and a budget large enough).

    Returns
    -------
    VerifyResult
        When the assertion holds.

    Raises
    ------
    AssertionError
        With the counterexample step by step, or why the search was not complete.
    """
    require_flag(complete, "complete")
    result = verify(program, facts, bursts, **options)
    if not result.ok:
        raise AssertionError(result.summary() + "\n" + result.counterexample.render())
    if complete and not result.complete:
        raise AssertionError("the search did not cover every delivery order:\n"
                             + result.summary())
    return result


class _CallableModule(types.ModuleType):
    """``psn.verify(...)`` calls :func:`verify`, and ``psn.verify.assert_reorder_tolerant``
    is this module's."""

    def __call__(self, *args, **kwargs) -> VerifyResult:
        return verify(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
