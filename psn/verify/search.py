"""Searching the delivery orders of a problem: exhaustive, random, adversarial, in parallel.

Role: run many :class:`~psn.verify.model.Execution` s of one problem, each under a policy
that picks the next delivery, until a schedule fails, the budget is spent, or (exhaustive)
every order has been covered.

Exhaustive
    A depth-first search over the delivery choices at message granularity, re-executing
    each schedule from the start (stateless search with replayed prefixes), with two
    reductions that keep it complete (Godefroid, *Partial-Order Methods for the
    Verification of Concurrent Systems*, 1996, ch. 5-6):

    * **sleep sets** (partial-order reduction): deliveries to different nodes commute (each
      touches only its receiver's state, and neither disables the other), so after the
      subtree of one delivery has been explored, an independent sibling delivery is not
      taken first again below it;
    * **state hashing**: a network state (every node's canonical form, the in-flight
      messages, the phase: :mod:`psn.verify.fingerprint`) already explored is not explored
      again; with sleep sets the state remembers the deliveries it left asleep and is
      re-entered for those only (Godefroid, Holzmann and Pirottin's combination, which
      keeps every reachable state visited).

    Equal messages (same sender, receiver and content) are one choice. A state seen again
    on the current path is a cycle: the schedule can go on forever, a non-termination
    counterexample; so is a phase with more deliveries than the scope's bound.
Random
    Seeded schedules, each delivery chosen uniformly among the possible ones.
Adversarial
    Deletions first and newest first (the in-memory transport's adversarial order), then
    oldest first, then seeded variations that prefer deletions. Random and adversarial
    schedules that come back to a state they were in are cycle counterexamples too.
Auto
    Exhaustive when the scope looks small: the FIFO schedule's deliveries per node bound
    the number of orders by the product of their factorials, compared with the budget
    (schedules, or seconds at the FIFO schedule's speed); random otherwise.
Parallel (``jobs > 1``)
    Local worker processes (``fork``). Exhaustive search splits the choices at the first
    level of the search tree with enough branches: every worker walks the levels above it
    the same way (without state hashing there), and owns every ``jobs``-th branch below it;
    random and adversarial split the schedule numbers. A worker that finds a counterexample
    stops the others. Counts are summed (a state reached by two workers counts twice);
    the counterexample of the first worker (in worker order) that found one wins.

Deliberately not here: running one schedule (:mod:`psn.verify.model`), shrinking and files
(:mod:`psn.verify.counterexample`), the public result (:mod:`psn.verify`).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import queue as queue_module
import random
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from ndlog.errors import EvaluationError, InputError, PSNError
from ndlog.signals import handling, held

from .model import (Decision, Execution, OutOfTime, Prune, Reference, RunResult, Transition,
                    Violation, tag_of)
from .scope import Budget, Problem

__all__ = ["Search", "SearchStats", "MODES", "estimate_orders", "run_search", "check_cycle",
           "ExhaustivePolicy"]

#: Values of ``mode``.
MODES = ("auto", "exhaustive", "random", "adversarial")
#: ``--jobs`` may fork at most this many worker processes per CPU (10,000 jobs were forked
#: as asked, and the search printed nothing while the machine forked them)
MAX_JOBS_PER_CPU = 4

#: Root branches per worker the parallel split aims at (balance).
_SPLIT_BRANCHES = 4
#: Deepest level the parallel split goes to.
_SPLIT_MAX_DEPTH = 8


@dataclass
class SearchStats:
    """What one search (or one worker) covered.

    Attributes
    ----------
    mode:
        ``exhaustive``, ``random`` or ``adversarial``.
    schedules:
        Schedules run (an exhaustive search ends a schedule early at an explored state).
    finished:
        Schedules run to the end of the last phase.
    states:
        Distinct network states met (at delivery choices); with ``distinct`` False, the
        delivery choices explored (an exhaustive search without state hashing, which
        computes no state digests).
    deliveries:
        Deliveries executed, replayed prefixes included.
    complete:
        The exhaustive search covered every delivery order of the scope.
    failure:
        The first failing schedule's :class:`~psn.verify.model.RunResult`, or None.
    seconds:
        Wall time.
    """

    mode: str
    schedules: int = 0
    finished: int = 0
    states: int = 0
    deliveries: int = 0
    complete: bool = False
    failure: RunResult | None = None
    seconds: float = 0.0
    notes: list = field(default_factory=list)
    spent: bool = False
    distinct: bool = True

    def merge(self, other: "SearchStats") -> None:
        self.schedules += other.schedules
        self.finished += other.finished
        self.states += other.states
        self.deliveries += other.deliveries
        self.complete = self.complete and other.complete
        self.spent = self.spent or other.spent
        self.distinct = self.distinct and other.distinct
        if self.failure is None:
            self.failure = other.failure


class _Frame:
    """One delivery choice on the current path of the exhaustive search."""

    __slots__ = ("phase", "state", "sleep", "todo", "done", "current", "mine", "info")

    def __init__(self, phase: int, state, sleep: frozenset, todo: list, info: dict,
                 mine=None):
        self.phase = phase
        self.state = state
        self.sleep = sleep
        self.todo = todo
        self.info = info                # key -> (index among the possible ones, seqs)
        self.done: list = []
        self.current = None
        self.mine = mine

    def advance(self) -> bool:
        """Take the next key to explore (keys owned by other workers are skipped, and
        count as done for the sleep sets below); False when none is left."""
        while self.todo:
            key = self.todo.pop(0)
            if self.mine is None or key in self.mine:
                self.current = key
                return True
            self.done.append(key)
        return False


class ExhaustivePolicy:
    """The policy of the exhaustive search (module docstring): sleep sets and hashing.

    Parameters
    ----------
    split:
        ``(level, worker, jobs)`` for a parallel worker: the branches of the choices at
        ``level`` are dealt round-robin, this worker taking those numbered ``worker``
        modulo ``jobs``; or None.
    """

    def __init__(self, problem: Problem, split: tuple | None = None):
        self.scope = problem.scope
        self.hashing = problem.scope.hashing and problem.scope.delays is None
        self.stack: list[_Frame] = []
        self.visited: dict[bytes, frozenset] = {}
        self.on_path: dict[bytes, int] = {}
        self.split = split
        self.dealt = 0                  # branches dealt at the split level so far
        self.frames = 0
        self.cut = False                # the delay bound left choices out

    def fixed(self, index: int) -> tuple | None:
        """The delivery of decision ``index`` when it is on the current path (a prefix
        being replayed): ``(message seqs, index among the possible ones, tag)``."""
        if index >= len(self.stack):
            return None
        frame = self.stack[index]
        i, seqs = frame.info[frame.current]
        return seqs, i, tag_of(frame.current)

    def choose(self, d: Decision) -> Transition:
        keys = [t.key for t in d.transitions]
        sleep = self._sleep(d.phase, keys)
        level = d.index
        top = self.split is not None and level <= self.split[0]
        state = d.state() if self.hashing else None
        if state is not None:
            check_cycle(self.on_path, d, remember=False)
            stored = None if top else self.visited.get(state)
            if stored is not None:
                if stored <= sleep:
                    raise Prune()
                todo = [k for k in keys if k in stored and k not in sleep]
                self.visited[state] = stored & sleep
            else:
                if not top:
                    self.visited[state] = sleep
                todo = [k for k in keys if k not in sleep]
        else:
            todo = [k for k in keys if k not in sleep]
        if self.scope.delays is not None and d.deviations >= self.scope.delays:
            if any(k != keys[0] for k in todo):
                self.cut = True
            todo = [k for k in todo if k == keys[0]]
        info = {t.key: (i, t.seqs) for i, t in enumerate(d.transitions)}
        frame = _Frame(d.phase, state, sleep, todo, info, self._mine(level, todo))
        if not frame.advance():
            raise Prune()
        self.stack.append(frame)
        self.frames += 1
        if state is not None:
            self.on_path[state] = level
        return self._replay(d, frame.current)

    def _mine(self, level: int, todo: list):
        if self.split is None or level != self.split[0]:
            return None
        _, worker, jobs = self.split
        mine = {k for j, k in enumerate(todo) if (self.dealt + j) % jobs == worker}
        self.dealt += len(todo)
        return mine

    def _sleep(self, phase: int, keys: list) -> frozenset:
        """The sleep set of a new choice: the parent's sleeping and finished deliveries
        that commute with the delivery that led here (another receiver). Empty at the first
        choice of a phase: between two phases the network reached quiescence and took the
        next burst, which commutes with nothing."""
        if not self.stack or self.stack[-1].phase != phase:
            return frozenset()
        parent = self.stack[-1]
        dst = parent.current[0]
        enabled = set(keys)
        return frozenset(k for k in (*parent.sleep, *parent.done)
                         if k[0] != dst and k in enabled)

    @staticmethod
    def _replay(d: Decision, key) -> Transition:
        for t in d.transitions:
            if t.key == key:
                return t
        raise RuntimeError("a replayed schedule diverged: the engine is not deterministic "
                           "for this program and annotation")

    def backtrack(self) -> bool:
        """Move to the next unexplored choice; False when the search is over."""
        while self.stack:
            frame = self.stack[-1]
            frame.done.append(frame.current)
            if frame.advance():
                return True
            self.stack.pop()
            if frame.state is not None:
                self.on_path.pop(frame.state, None)
        return False


def check_cycle(seen: dict, d: Decision, remember: bool = True) -> None:
    """Raise a ``cycle`` :class:`~psn.verify.model.Violation` if the network is in a state
    it had earlier in this schedule (``seen``: state digest -> decision index), else
    (with ``remember``) remember this one."""
    state = d.state()
    before = seen.get(state)
    if before is not None:
        raise Violation("cycle", f"the network is back in the state it had before delivery "
                        f"{before + 1}: this schedule can repeat forever without reaching "
                        f"quiescence")
    if remember:
        seen[state] = d.index


class _Random:
    """Each delivery uniformly among the possible ones (seeded per schedule); the states
    met are counted, and with ``cycles`` a state met twice is a cycle counterexample."""

    def __init__(self, rng: random.Random, states: set, cycles: bool = True):
        self.rng = rng
        self.states = states
        self.seen: dict | None = {} if cycles else None

    def note(self, d: Decision) -> None:
        self.states.add(d.state())
        if self.seen is not None:
            check_cycle(self.seen, d)

    def choose(self, d: Decision) -> Transition:
        self.note(d)
        return self.rng.choice(d.transitions)


class _Adversarial(_Random):
    """Deletions first; among them (then among the rest) the newest (``order`` "newest"),
    the oldest ("oldest"), or a seeded pick biased to the newest ("random")."""

    def __init__(self, order: str, rng: random.Random, states: set, cycles: bool = True):
        super().__init__(rng, states, cycles)
        self.order = order

    def choose(self, d: Decision) -> Transition:
        self.note(d)
        ts = d.transitions
        dels = [t for t in ts if any(u[0] < 0 for m in t.messages for u in m.updates)]
        pool = dels or ts
        if self.order == "newest":
            return pool[-1]
        if self.order == "oldest":
            return pool[0]
        back = min(int(self.rng.expovariate(0.7)), len(pool) - 1)
        return pool[len(pool) - 1 - back]


class _Fifo:
    def choose(self, d: Decision) -> Transition:
        return d.transitions[0]


class Search:
    """One search of ``problem`` (see the module docstring).

    Parameters
    ----------
    problem, budget:
        What to run and how much.
    seed:
        Seeds the random and adversarial schedules.
    deadline:
        ``time.monotonic()`` value past which no new schedule starts (else from budget).
    """

    def __init__(self, problem: Problem, budget: Budget, seed: int = 0,
                 deadline: float | None = None):
        self.problem = problem
        self.budget = budget
        self.seed = seed
        self.start = time.monotonic()
        self.deadline = deadline if deadline is not None else (
            None if budget.seconds is None else self.start + budget.seconds)
        self.reference = Reference(problem)
        self.forms: dict = {}           # node history -> form digest (Execution)
        #: set by a parallel worker that found a counterexample: the others stop
        self.stop = None
        #: called with the stats after every schedule (a progress display), or None
        self.progress = None

    def _spent(self, stats: SearchStats) -> bool:
        if self.budget.schedules is not None and stats.schedules >= self.budget.schedules:
            return True
        if self.stop is not None and self.stop.is_set():
            return True
        return self.deadline is not None and time.monotonic() >= self.deadline

    def _run(self, policy, stats: SearchStats) -> RunResult | None:
        """One schedule under ``policy``, counted in ``stats``; None if it reached the
        deadline first (``stats.spent``: the search ends without a verdict on it)."""
        try:
            result = Execution(self.problem, policy, self.reference, forms=self.forms,
                               deadline=self.deadline).run()
        except OutOfTime:
            stats.spent = True
            return None
        stats.schedules += 1
        stats.deliveries += result.deliveries
        if result.kind == "ok":
            stats.finished += 1
        if result.failed and stats.failure is None:
            stats.failure = result
        if self.progress is not None:
            self.progress(stats)
        return result

    # -- strategies ------------------------------------------------------------------------
    def fifo(self) -> tuple[RunResult, float, list]:
        """The FIFO schedule: its result, wall time, and deliveries per node per explored
        phase (for :func:`estimate_orders`). With state hashing, a state met twice is a
        cycle counterexample."""
        counts: list[dict] = []
        seen: dict | None = {} if self.problem.scope.hashing else None

        class Counting(_Fifo):
            def choose(self, d):
                if seen is not None:
                    check_cycle(seen, d)
                while len(counts) <= d.phase:
                    counts.append({})
                t = d.transitions[0]
                counts[d.phase][t.dst] = counts[d.phase].get(t.dst, 0) + 1
                return t
        t0 = time.perf_counter()
        result = Execution(self.problem, Counting(), self.reference,
                           deadline=self.deadline).run()
        return result, time.perf_counter() - t0, [c for c in counts if c]

    def exhaustive(self, split: tuple | None = None) -> SearchStats:
        """Depth-first search over every delivery order (module docstring)."""
        stats = SearchStats("exhaustive")
        policy = ExhaustivePolicy(self.problem, split)
        while True:
            if self._spent(stats):
                stats.complete = False
                stats.spent = True
                break
            result = self._run(policy, stats)
            if result is None or result.failed:
                stats.complete = False
                break
            if not policy.backtrack():
                stats.complete = not policy.cut
                if policy.cut:
                    stats.notes.append("the delay bound left delivery orders out")
                break
        stats.states = len(policy.visited) if policy.hashing else policy.frames
        stats.distinct = policy.hashing
        stats.seconds = time.monotonic() - self.start
        return stats

    def random(self, worker: int = 0, jobs: int = 1) -> SearchStats:
        """Seeded random schedules numbered ``worker``, ``worker + jobs``, ..."""
        stats = SearchStats("random")
        states: set = set()
        i = worker
        while not self._spent(stats):
            rng = random.Random(f"psn-verify:{self.seed}:{i}")
            result = self._run(_Random(rng, states, self.problem.scope.hashing), stats)
            if result is None or result.failed:
                break
            i += jobs
        stats.states = len(states)
        stats.seconds = time.monotonic() - self.start
        return stats

    def adversarial(self, worker: int = 0, jobs: int = 1) -> SearchStats:
        """Deletions first, newest first; then oldest first; then seeded variations."""
        stats = SearchStats("adversarial")
        states: set = set()
        i = worker
        while not self._spent(stats):
            order = "newest" if i == 0 else "oldest" if i == 1 else "random"
            rng = random.Random(f"psn-verify-adv:{self.seed}:{i}")
            policy = _Adversarial(order, rng, states, self.problem.scope.hashing)
            result = self._run(policy, stats)
            if result is None or result.failed:
                break
            i += jobs
        stats.states = len(states)
        stats.seconds = time.monotonic() - self.start
        return stats

    def split_level(self, jobs: int) -> int:
        """The shallowest choice level whose branches along the FIFO schedule number at
        least ``jobs`` times a few (for :meth:`exhaustive` in parallel)."""
        widths: list[int] = []

        class Widths(_Fifo):
            def choose(self, d):
                widths.append(len(d.transitions))
                return d.transitions[0]
        Execution(self.problem, Widths(), self.reference).run()
        total = 1
        for level, w in enumerate(widths[:_SPLIT_MAX_DEPTH]):
            total *= max(w, 1)
            if total >= jobs * _SPLIT_BRANCHES:
                return level
        return max(0, min(len(widths), _SPLIT_MAX_DEPTH) - 1)


def estimate_orders(counts: list[dict]) -> int:
    """An upper estimate of the delivery orders to explore: per explored phase, the product
    over nodes of (deliveries to the node)! (each node's arrival order; deliveries to
    different nodes commute), summed over phases; capped at 10**18."""
    total = 0
    for phase in counts:
        prod = 1
        for n in phase.values():
            prod *= math.factorial(min(n, 20))
            if prod > 10 ** 18:
                return 10 ** 18
        total += prod
    return min(total, 10 ** 18)


# -- the entry point -----------------------------------------------------------------------

def run_search(problem: Problem, mode: str, budget: Budget, seed: int = 0,
               jobs: int = 1, progress=None) -> tuple[SearchStats, dict]:
    """Run the search ``mode`` asks for; returns the stats and facts about the choice
    (``{"estimate": ..., "fifo_seconds": ...}`` for ``auto``, which runs the FIFO schedule
    first: if that fails, it is the counterexample). ``progress``, if given, is called
    with the stats after every schedule (in parallel, by the first worker only).

    Raises
    ------
    InputError
        For an unknown mode, a bad number of jobs, or a random or adversarial search
        without a bound (``Budget(None, None)``: it would never end).
    """
    if mode not in MODES:
        raise InputError(f"unknown verify mode {mode!r}; choose one of {', '.join(MODES)}")
    if mode in ("random", "adversarial") and budget.schedules is None \
            and budget.seconds is None:
        raise InputError(f"a {mode} search with an unbounded budget would never end",
                         hint="give a number of schedules or a time (budget=1000 or "
                              "budget='30s'; --budget on the command line)")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InputError(f"jobs (--jobs) must be a positive integer, got {jobs!r}")
    if jobs > MAX_JOBS_PER_CPU * (os.cpu_count() or 1):
        cpus = os.cpu_count() or 1
        raise InputError(f"jobs (--jobs) {jobs} would fork {jobs} processes on a machine "
                         f"with {cpus} CPUs; at most {MAX_JOBS_PER_CPU * cpus} are allowed",
                         hint=f"--jobs {cpus} uses every CPU")
    search = Search(problem, budget, seed)
    search.progress = progress
    info: dict = {}
    if mode == "auto":
        try:
            fifo, seconds, counts = search.fifo()
        except OutOfTime:               # the budget ran out within the FIFO schedule
            return SearchStats("fifo", complete=False, spent=True,
                               seconds=time.monotonic() - search.start), info
        info = {"estimate": estimate_orders(counts), "fifo_seconds": seconds}
        if fifo.failed:                 # the FIFO schedule itself fails: that is enough
            stats = SearchStats("fifo", schedules=1, deliveries=fifo.deliveries,
                                failure=fifo, seconds=seconds)
            return stats, info
        mode = "exhaustive" if _small(info["estimate"], seconds, budget) else "random"
        info["chose"] = mode
    if jobs == 1:
        stats = getattr(search, mode)()
    else:
        stats = _parallel(search, mode, jobs)
    return stats, info


def _small(estimate: int, seconds: float, budget: Budget) -> bool:
    if budget.schedules is not None and estimate > budget.schedules:
        return False
    if budget.seconds is not None and estimate * max(seconds, 1e-4) > budget.seconds:
        return False
    return True


def _parallel(search: Search, mode: str, jobs: int) -> SearchStats:
    """``mode`` on ``jobs`` forked worker processes; the stats merged in worker order."""
    context = multiprocessing.get_context("fork")
    share = Search(search.problem, search.budget.split(jobs), search.seed, search.deadline)
    share.progress = search.progress            # shown by the first worker only
    level = share.split_level(jobs) if mode == "exhaustive" else 0
    share.stop = context.Event()
    queue = context.Queue()
    procs = [context.Process(target=_worker, args=(share, mode, level, w, jobs, queue),
                             daemon=True) for w in range(jobs)]
    _start_quiet(procs)
    results: dict[int, SearchStats] = {}
    errors: list = []
    while len(results) + len(errors) < jobs:
        try:
            w, outcome = queue.get(timeout=0.5)
        except queue_module.Empty:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise EvaluationError(
                    f"a verify worker process died (exit status {dead[0].exitcode}: "
                    f"killed from outside, or by the system when memory ran out)",
                    hint="run again, with fewer --jobs if memory is short")
            continue
        if isinstance(outcome, PSNError):
            errors.append(outcome)
        else:
            results[w] = outcome
    for p in procs:
        p.join()
    if errors:
        raise errors[0]
    merged = SearchStats(mode, complete=True)
    for w in range(jobs):
        merged.merge(results[w])
        merged.notes += results[w].notes
    merged.seconds = time.monotonic() - search.start
    merged.notes.append(f"{jobs} worker processes"
                        + (f", split at choice level {level + 1}"
                           if mode == "exhaustive" else ""))
    return merged


def _start_quiet(procs: list) -> None:
    """Fork ``procs`` with SIGTERM's default action: the parent stops its workers with
    SIGTERM, and a worker that inherited the command's handler (psn.cli.Terminated)
    printed a traceback when stopped. Set around the fork, not in the worker, which
    could be stopped before its first line. SIGTERM is blocked meanwhile, so that one
    sent to the parent in that window waits for the parent's own handler (the default
    action ended the command and left its workers searching for the rest of the budget),
    and one sent to a worker before its first line waits for :func:`_worker` to unblock
    it. Ctrl-C is held meanwhile: one that came while the parent ran the fork's own hooks
    was dropped there ('Exception ignored'), and the search went on for its whole budget
    (a worker inherits the holding handler, and is stopped by SIGTERM)."""
    with held((signal.SIGINT,)), _blocked(signal.SIGTERM), \
            handling(signal.SIGTERM, signal.SIG_DFL):
        for p in procs:
            p.start()


@contextmanager
def _blocked(sig: int) -> Iterator[None]:
    """Block ``sig`` in this thread inside the block (a forked process inherits the
    block); one that comes meanwhile is delivered when the block ends, which puts back
    the signal mask as it was."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {sig})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _worker(search: Search, mode: str, level: int, worker: int, jobs: int, queue) -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})   # see _start_quiet
    if worker:
        search.progress = None
    try:
        if mode == "exhaustive":
            stats = search.exhaustive((level, worker, jobs))
        else:
            stats = getattr(search, mode)(worker, jobs)
    except PSNError as exc:             # e.g. a budget error: the parent raises it
        queue.put((worker, exc))
        return
    if stats.failure is not None:       # steps are rebuilt by the parent's replay
        stats.failure.steps = []
        search.stop.set()
    queue.put((worker, stats))
