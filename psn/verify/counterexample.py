"""Counterexamples: a failing schedule, shrunk, printed step by step, written and replayed.

Role: a failing schedule is a list of *choices*, one per delivery of the explored phases:
the index of the delivery taken among the possible ones, oldest first, so ``0`` is the FIFO
choice and a schedule past the end of its list goes on in FIFO order. :func:`shrink`
reduces a failing schedule to one with few non-FIFO choices by delta debugging (Zeller and
Hildebrandt, *Simplifying and isolating failure-inducing input*, 2002) on the set of its
non-FIFO choices, each candidate replacing some of them by the FIFO choice and kept if the
schedule still fails the same way; the result is 1-minimal (putting any one of its
remaining choices back to FIFO makes the failure go away) and never longer than the
schedule it started from.

A :class:`Counterexample` carries the problem (program text, facts, bursts, annotation,
scope), the choices with a short tag of each delivery (so a replay in another process
follows the same messages even if their order among the possible ones differs), the
failure and the trace of deliveries: which updates reached which node, from whom, whether
it overtook an earlier message of its channel, how the node's state changed and what it
sent. It is written as JSON (``psn verify`` writes one on failure) and replayed by
``psn verify --replay FILE`` or :meth:`Counterexample.replay`.

Deliberately not here: finding the failure (:mod:`psn.verify.search`), running a schedule
(:mod:`psn.verify.model`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.node import format_fact
from engine.options import require_flag, require_whole
from ndlog.errors import InputError
from ndlog.files import file_path, write_atomic
from ndlog.parser import read_text
from ndlog.text import count_noun

from .model import (FAILURES, Decision, Execution, Reference, RunResult, Transition,
                    node_text)
from .scope import Problem
from .search import check_cycle

__all__ = ["Counterexample", "shrink", "replay_choices", "FORMAT", "VERSION"]

FORMAT = "psn-verify-counterexample"
VERSION = 1

#: Replays :func:`shrink` may spend.
MAX_SHRINK_RUNS = 400


class _Replay:
    """Follow recorded choices (by tag when given, else by index), then FIFO; with
    ``cycles``, fail as soon as the network is back in a state it had."""

    def __init__(self, choices: list, tags: list | None = None, cycles: bool = False):
        self.choices = choices
        self.tags = tags
        self.cycles = cycles
        self.seen: dict[bytes, int] = {}
        self.diverged = False

    def choose(self, d: Decision) -> Transition:
        if self.cycles:
            check_cycle(self.seen, d)
        i, ts = d.index, d.transitions
        if i >= len(self.choices):
            return ts[0]
        if self.tags is not None and i < len(self.tags):
            for t in ts:
                if t.tag() == self.tags[i]:
                    return t
            self.diverged = True
        c = self.choices[i]
        return ts[c] if 0 <= c < len(ts) else ts[0]


def replay_choices(problem: Problem, choices: list, tags: list | None = None, *,
                   cycles: bool = False, trace: bool = False,
                   reference: Reference | None = None) -> tuple[RunResult, bool]:
    """Run ``problem`` under recorded choices; returns the result and whether the run
    diverged from the tags (a delivery they name was not possible)."""
    policy = _Replay(list(choices), None if tags is None else list(tags), cycles)
    result = Execution(problem, policy, reference, trace=trace).run()
    return result, policy.diverged


def _trim(choices: list) -> list:
    out = list(choices)
    while out and out[-1] == 0:
        out.pop()
    return out


def shrink(problem: Problem, found: RunResult, reference: Reference | None = None,
           max_runs: int = MAX_SHRINK_RUNS) -> RunResult:
    """A schedule failing like ``found`` (same kind) with a 1-minimal set of non-FIFO
    choices (module docstring), as the result of its own run; ``found`` itself if no
    replay within ``max_runs`` fails the same way with fewer."""
    reference = reference or Reference(problem)
    cycles = found.kind == "cycle"
    base = _trim(found.choices)
    runs = 0
    best = found

    def fails(kept: list[int]) -> RunResult | None:
        nonlocal runs
        if runs >= max_runs:
            return None
        runs += 1
        keep = set(kept)
        candidate = [c if i in keep else 0 for i, c in enumerate(base)]
        result, _ = replay_choices(problem, candidate, cycles=cycles, reference=reference)
        return result if result.kind == found.kind else None

    items = [i for i, c in enumerate(base) if c]
    last = fails([]) if items else None
    if last is not None:
        items = []
    n = 2
    while len(items) >= 2 and runs < max_runs:
        size = math.ceil(len(items) / n)
        for j in range(0, len(items), size):
            rest = items[:j] + items[j + size:]
            result = fails(rest)
            if result is not None:
                items, last = rest, result
                n = max(n - 1, 2)
                break
        else:
            if n >= len(items):
                break
            n = min(2 * n, len(items))
    if last is None:                    # nothing removed: the schedule as it is, normalized
        runs = 0
        last = fails(items)
    if last is None or last.deviations > best.deviations:
        return best
    last.choices = _trim(last.choices)
    last.tags = last.tags[:len(last.choices)]
    return last


@dataclass
class Counterexample:
    """A failing schedule of a problem (module docstring).

    Attributes
    ----------
    problem:
        The :class:`~psn.verify.scope.Problem`.
    kind:
        ``wrong-state``, ``no-quiescence``, ``cycle`` or ``error`` (or ``ok`` for a replay
        that no longer fails).
    phase, label:
        The phase that failed (index and label, e.g. ``burst 1``).
    choices, tags:
        One per delivery of the explored phases (module docstring); FIFO after the end.
    deliveries:
        Deliveries of the explored phases.
    reordered:
        Deliveries that overtook an earlier message of their channel.
    diff:
        ``[(node, relation, sign, tuple)]`` for ``wrong-state``: ``+`` a tuple the node has
        and should not, ``-`` one it lacks.
    message:
        The failure in words.
    steps:
        The trace (:class:`~psn.verify.model.Step`), when replayed with a trace.
    found:
        Non-FIFO choices of the schedule first found, before shrinking.
    diverged:
        A replay could not follow a recorded delivery (it took the one at the same index).
    """

    problem: Problem
    kind: str
    phase: int
    label: str
    choices: list
    tags: list
    deliveries: int = 0
    reordered: int = 0
    diff: list = field(default_factory=list)
    message: str = ""
    steps: list = field(default_factory=list)
    found: int | None = None
    diverged: bool = False
    rounds: dict = field(default_factory=dict)

    @classmethod
    def from_result(cls, problem: Problem, result: RunResult,
                    found: int | None = None, diverged: bool = False) -> "Counterexample":
        choices = _trim(result.choices)
        return cls(problem, result.kind, result.phase, result.label, choices,
                   list(result.tags[:len(choices)]), result.deliveries,
                   result.reordered, list(result.diff), result.message, list(result.steps),
                   found, diverged, dict(result.rounds))

    @property
    def failed(self) -> bool:
        """True unless this is a replay that no longer fails."""
        return self.kind != "ok"

    @property
    def deviations(self) -> int:
        """Non-FIFO choices."""
        return sum(1 for c in self.choices if c)

    @property
    def length(self) -> int:
        """The length of the schedule as written: its choices up to the last non-FIFO one
        (FIFO after it)."""
        return len(self.choices)

    def replay(self, trace: bool = True) -> "Counterexample":
        """Run the schedule again (following the tags, FIFO past the end); the result as a
        new Counterexample (``kind == "ok"`` if it no longer fails), with its trace."""
        require_flag(trace, "trace")
        result, diverged = replay_choices(self.problem, self.choices, self.tags,
                                          cycles=self.kind == "cycle", trace=trace)
        return Counterexample.from_result(self.problem, result, self.found, diverged)

    # -- files -----------------------------------------------------------------------------
    def to_json(self) -> dict:
        """The counterexample as a JSON document (see :meth:`from_json`)."""
        loc = self.problem.locations()
        return {
            "format": FORMAT, "version": VERSION,
            "problem": self.problem.to_json(),
            "kind": self.kind, "phase": self.phase, "label": self.label,
            "message": self.message,
            "choices": list(self.choices), "tags": list(self.tags),
            "deliveries": self.deliveries, "reordered": self.reordered,
            "deviations": self.deviations, "found_deviations": self.found,
            "diverged": self.diverged,
            "diff": [{"node": node_text(n), "relation": rel, "sign": "+" if s > 0 else "-",
                      "fact": format_fact(rel, t, loc.get(rel))}
                     for n, rel, s, t in self.diff],
            "steps": [s.to_json() for s in self.steps],
        }

    def write(self, path: str | Path) -> Path:
        """Write :meth:`to_json` to ``path``; returns the path.

        Raises
        ------
        InputError
            If the file cannot be written.
        """
        path = file_path(path, "counterexample file")
        write_atomic(path, json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n",
                     "counterexample file")
        return path

    @classmethod
    def from_json(cls, data: Any, where: str = "counterexample") -> "Counterexample":
        """A counterexample from :meth:`to_json`'s document (only the problem, the choices
        and tags, and the failure's kind and phase are read: the rest is rebuilt by
        :meth:`replay`).

        Raises
        ------
        InputError
            Naming the file and what is wrong with it.
        """
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise InputError(f"{where}: not a psn verify counterexample (no "
                             f"\"format\": \"{FORMAT}\")")
        if data.get("version") != VERSION:
            raise InputError(f"{where}: counterexample version {data.get('version')!r}; "
                             f"this psn reads version {VERSION}")
        choices, tags = data.get("choices"), data.get("tags")
        if not isinstance(choices, list) or not all(
                isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in choices):
            raise InputError(f"{where}: 'choices' must be a list of non-negative integers")
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise InputError(f"{where}: 'tags' must be a list of strings")
        phase = data.get("phase", -1)
        if isinstance(phase, bool) or not isinstance(phase, int):
            raise InputError(f"{where}: 'phase' must be an integer, got {phase!r}")
        kind = data.get("kind")
        if kind not in (*FAILURES, "ok"):       # "ok": a replay that no longer fails
            raise InputError(f"{where}: 'kind' must be one of {', '.join(FAILURES)} or ok, "
                             f"got {kind!r}")
        found = data.get("found_deviations")
        if found is not None and (isinstance(found, bool) or not isinstance(found, int)
                                  or found < 0):
            raise InputError(f"{where}: 'found_deviations' must be a non-negative integer "
                             f"or null, got {found!r}")
        problem = Problem.from_json(data.get("problem"), where)
        return cls(problem, kind, phase,
                   str(data.get("label", "")), choices, tags, found=found)

    @classmethod
    def load(cls, path: str | Path) -> "Counterexample":
        """Read a counterexample file.

        Raises
        ------
        InputError
            If the file cannot be read or is not a counterexample.
        """
        text = read_text(path, "counterexample file")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") \
                from None
        return cls.from_json(data, str(path))

    # -- printing --------------------------------------------------------------------------
    def render(self, limit: int | None = 60) -> str:
        """The counterexample step by step (the explored phases' deliveries; a phase
        loaded in FIFO order in one line), then the differences from the reference.
        ``limit``: at most this many deliveries, the first and the last halves (a schedule
        that never reaches quiescence is long); None for all."""
        require_whole(limit, "limit", optional=True)
        if not self.failed:
            made = count_noun(self.deliveries, 'delivery', 'deliveries')
            passed = (f"the schedule no longer fails: every node agrees with the reference "
                      f"after every phase ({made}, {self.deviations} non-FIFO)")
            if self.diverged:
                passed += ("\n  note: the replay could not follow every recorded delivery "
                           "(the program, facts or annotation differ from those that "
                           "failed?), so this is not the recorded schedule")
            return passed
        out = [f"counterexample ({self.kind}): {self.message}",
               f"  annotation {self.problem.annotation_name}; scope: "
               f"{self.problem.scope.describe()}",
               f"  schedule: {count_noun(self.deliveries, 'delivery', 'deliveries')} in the "
               f"explored phases, {self.reordered} out of order, {self.deviations} non-FIFO "
               f"choice(s)" + (f" (shrunk from {self.found})"
                               if self.found is not None and self.found != self.deviations
                               else "")]
        if self.diverged:
            out.append("  note: the replay could not follow every recorded delivery")
        phases = self.problem.phases()
        for i, n in sorted(self.rounds.items()):
            out.append(f"  [{phases[i].label}] delivered in FIFO order: "
                       f"{count_noun(n, 'delivery', 'deliveries')}")
        steps = self.steps
        if limit is not None and len(steps) > limit:
            head, tail = limit // 2, limit - limit // 2
            out += [s.render() for s in steps[:head]]
            out.append(f"        ... {len(steps) - limit:,} deliveries not shown ...")
            out += [s.render() for s in steps[len(steps) - tail:]]
        else:
            out += [s.render() for s in steps]
        if self.diff:
            loc = self.problem.locations()
            out.append(f"differences from the synchronous semi-naive result after "
                       f"{self.label} (+ extra, - missing):")
            out += [f"  node {node_text(n)}: {'+' if s > 0 else '-'} "
                    f"{format_fact(rel, t, loc.get(rel))}" for n, rel, s, t in self.diff]
        return "\n".join(out)
