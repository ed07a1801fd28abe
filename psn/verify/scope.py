"""What ``psn verify`` checks: the problem (program, facts, bursts, annotation) and its scope.

Role: the inputs of a verification, checked once and kept in plain values so that a
counterexample file can carry them and a worker process can rebuild them:

* :class:`Scope`: which delivery orders are explored (``--scope SPEC``): bursts one at a
  time or overlapping, whether the initial facts are loaded under every order too, the
  delivery bound past which a schedule counts as not terminating, how many messages one
  delivery may batch, FIFO channels, state hashing, a bound on out-of-order choices;
* :class:`Budget`: how much search (``--budget N|TIME``): a number of schedules or seconds;
* :class:`Problem`: the program, the initial facts and the bursts as phases, the annotation
  scheme and the run options of the in-memory engine.

Deliberately not here: running anything (:mod:`psn.verify.model`), searching
(:mod:`psn.verify.search`), reading files (the command line).
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any, Iterable, Mapping

from ndlog import ast as A
from ndlog.analysis import aggsel_mode
from ndlog.errors import InputError, PSNError, Span
from ndlog.reference import fact_rows
from ndlog.text import count_noun, json_kind

__all__ = ["Scope", "Budget", "Problem", "Phase", "DEFAULT_BOUND", "DEFAULT_BUDGET",
           "DEFAULT_SECONDS", "UNEXPLORED_FACTOR", "format_update"]

#: Deliveries per burst past which a schedule is a non-termination counterexample.
DEFAULT_BOUND = 2000
#: A phase delivered in FIFO order and not explored (the initial facts, by default) may take
#: this many times the bound: it is one schedule that sets the scene, one message per
#: delivery, and a correct load takes far longer than a burst (reachable on a 4-clique
#: with derivation sets: 23,388 deliveries, its bursts under 2,000).
UNEXPLORED_FACTOR = 100
#: Schedules run when no budget is given (or :data:`DEFAULT_SECONDS`, whichever comes first).
DEFAULT_BUDGET = 100_000
#: Seconds a search runs when no budget is given.
DEFAULT_SECONDS = 600.0

_FLAGS = {"overlap": ("overlap", True), "facts": ("facts", True), "fifo": ("fifo", True),
          "nohash": ("hashing", False), "hash": ("hashing", True)}
_NUMBERS = {"bound": "bound", "batch": "batch", "delays": "delays"}


@dataclass(frozen=True)
class Scope:
    """Which delivery orders a verification explores.

    Parameters
    ----------
    overlap:
        Inject every burst at once and run to quiescence once (updates of different bursts
        then race), instead of one burst at a time.
    facts:
        Explore the delivery orders of the initial facts too; by default they are loaded in
        FIFO order (one schedule) and only the bursts are explored.
    bound:
        Deliveries per explored phase (one burst, or the facts with ``facts``) after which
        a schedule that has not reached quiescence is a non-termination counterexample; a
        phase loaded in FIFO order (the facts, by default) may take
        :data:`UNEXPLORED_FACTOR` times as many.
    batch:
        Messages one delivery may hand to a node at once (its next step then picks them
        together, a complete iteration of Nigam et al. 2012, Definition 4); 1 delivers one
        message per step.
    fifo:
        Channels are FIFO: only the oldest in-flight message of each channel
        ``(sender, receiver)`` may be delivered (the assumption of Liu et al. 2009 that
        Nigam et al. 2012, Sec. 6 drop).
    hashing:
        Skip network states already explored (exhaustive mode).
    delays:
        At most this many choices per schedule that are not the FIFO choice (delay-bounded
        search, without state hashing: complete only if the bound never left a choice
        out); None for no bound.
    """

    overlap: bool = False
    facts: bool = False
    bound: int = DEFAULT_BOUND
    batch: int = 1
    fifo: bool = False
    hashing: bool = True
    delays: int | None = None

    def __post_init__(self):
        from engine.options import require_flag
        for name in ("overlap", "facts", "fifo", "hashing"):
            require_flag(getattr(self, name), f"scope: {name}")
        for name in ("bound", "batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"scope: {name} must be a positive integer, got {value!r}")
        if self.delays is not None and (isinstance(self.delays, bool)
                                        or not isinstance(self.delays, int)
                                        or self.delays < 0):
            raise InputError(f"scope: delays must be a non-negative integer, "
                             f"got {self.delays!r}")

    @classmethod
    def parse(cls, text: str | None, **overrides) -> "Scope":
        """A scope from ``--scope`` text: comma-separated ``overlap``, ``facts``, ``fifo``,
        ``nohash``, ``bound=N``, ``batch=N``, ``delays=N`` (e.g. ``overlap,batch=2``).

        Raises
        ------
        InputError
            Naming the item that is not one of those.
        """
        if text is not None and not isinstance(text, str):
            raise InputError(f"a scope is a string such as 'fifo,batch=2', got "
                             f"{type(text).__name__}")
        _refuse_unknown(overrides, [f.name for f in fields(cls)], "Scope.parse")
        values: dict[str, Any] = {}
        for item in (text or "").split(","):
            item = item.strip()
            if not item:
                continue
            key, eq, value = item.partition("=")
            key = key.strip().lower()
            if not eq and key in _FLAGS:
                name, setting = _FLAGS[key]
            elif eq and key in _NUMBERS:
                name = _NUMBERS[key]
                try:
                    setting = int(value.strip())
                except ValueError:
                    raise InputError(f"--scope: {key} takes an integer, not "
                                     f"{value.strip()!r}") from None
            else:
                raise InputError(f"--scope: unknown item {item!r}",
                                 hint="items: overlap, facts, fifo, nohash, bound=N, "
                                 "batch=N, delays=N")
            if values.get(name, setting) != setting:
                raise InputError(f"--scope {text!r} sets {name} twice, to "
                                 f"{values[name]!r} and to {setting!r}",
                                 hint="give each item once")
            values[name] = setting
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def spec(self) -> str:
        """The scope as ``--scope`` text (what :meth:`parse` reads back)."""
        items = [name for name in ("overlap", "facts", "fifo") if getattr(self, name)]
        if not self.hashing:
            items.append("nohash")
        if self.bound != DEFAULT_BOUND:
            items.append(f"bound={self.bound}")
        if self.batch != 1:
            items.append(f"batch={self.batch}")
        if self.delays is not None:
            items.append(f"delays={self.delays}")
        return ",".join(items)

    def describe(self) -> str:
        """The scope in words, for reports."""
        parts = ["bursts overlapping" if self.overlap else "one burst at a time",
                 "facts loaded under every order" if self.facts else "facts loaded FIFO",
                 "FIFO channels" if self.fifo else "any message may overtake any other",
                 f"{self.batch} message(s) per delivery",
                 f"at most {self.bound:,} deliveries per explored phase"]
        if self.delays is not None:
            parts.append(f"at most {self.delays} non-FIFO choice(s) per schedule")
        return "; ".join(parts)


def _refuse_unknown(options: Mapping, known: list[str], where: str) -> None:
    """Refuse a keyword argument of ``where`` that is not one of ``known`` (it would end
    in a TypeError from the dataclass, or be ignored)."""
    unknown = [key for key in options if key not in known]
    if unknown:
        raise InputError(f"{where} has no option {unknown[0]!r}",
                         hint=f"its options are {', '.join(known)}")


_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$", re.IGNORECASE)
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class Budget:
    """How much a search may run: ``schedules`` (a count) or ``seconds``, or both (the
    first reached ends it). Default: 100,000 schedules or 10 minutes."""

    schedules: int | None = DEFAULT_BUDGET
    seconds: float | None = DEFAULT_SECONDS

    def __post_init__(self):
        n, t = self.schedules, self.seconds
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise InputError(f"budget: schedules must be a positive integer or None, "
                             f"got {n!r}")
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float))
                              or not 0 < t < math.inf):
            raise InputError(f"budget: seconds must be a positive finite number or None (no "
                             f"time limit), got {t!r}")

    @classmethod
    def parse(cls, value: "str | int | float | Budget | None") -> "Budget":
        """``1000`` (schedules), ``"30s"``, ``"2m"``, ``"500ms"``, ``"1h"`` (time), or a
        Budget.

        Raises
        ------
        InputError
            For anything else, naming the value.
        """
        if value is None:
            return cls()
        if isinstance(value, Budget):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 1:
                raise InputError(f"budget (--budget) must be positive, got {value}")
            return cls(schedules=value, seconds=None)
        text = str(value).strip()
        if text.isdigit():
            return cls.parse(int(text))
        m = _TIME.match(text)
        if m is None or float(m.group(1)) <= 0:
            raise InputError(f"budget (--budget) takes a number of schedules (1000) or a "
                             f"time (30s, 2m, 500ms), not {value!r}")
        return cls(schedules=None, seconds=float(m.group(1)) * _UNIT[m.group(2).lower()])

    def split(self, parts: int) -> "Budget":
        """The share of one of ``parts`` workers (schedules divided, time the same)."""
        if self.schedules is None:
            return self
        return Budget(max(1, -(-self.schedules // parts)), self.seconds)

    def describe(self) -> str:
        out = []
        if self.schedules is not None:
            out.append(count_noun(self.schedules, "schedule"))
        if self.seconds is not None:
            out.append(f"{self.seconds:g} s")
        return " or ".join(out) or "unbounded"


def format_update(sign: int, pred: str, tup: tuple, loc: int | None) -> str:
    """``+link(@1, 2)``: an update in burst-file syntax (``@`` before argument ``loc``)."""
    from engine.node import format_fact
    return ("+" if sign > 0 else "-") + format_fact(pred, tup, loc)


@dataclass(frozen=True)
class Phase:
    """Updates injected at once and run to quiescence, then checked (Definition 1)."""

    label: str
    updates: tuple
    explored: bool


#: the fields of a :class:`Problem` that are run options, what ``Problem.make`` passes on
_RUN_FIELDS = ("ship", "aggsel", "unsafe", "derivation_budget", "derivation_total")


@dataclass(frozen=True)
class Problem:
    """A program, its initial facts and bursts, an annotation and a scope: what one
    verification runs under many schedules.

    Parameters
    ----------
    program:
        The parsed program (:class:`ndlog.ast.Program`).
    facts:
        Initial base facts, ``[(1, pred, tuple)]`` (the program's own facts come first).
    bursts:
        ``[[(sign, pred, tuple), ...], ...]``.
    annotation:
        A registered scheme name, or a scheme object (copied fresh for every schedule).
    scope:
        The :class:`Scope`.
    ship, aggsel, unsafe, derivation_budget, derivation_total:
        Fields of :class:`engine.options.RunOptions`.
    """

    program: A.Program
    facts: tuple = ()
    bursts: tuple = ()
    annotation: Any = "absorption"
    scope: Scope = field(default_factory=Scope)
    ship: str | None = None
    aggsel: str = "auto"
    unsafe: bool = False
    derivation_budget: int | None = None
    derivation_total: int | None = None

    @classmethod
    def make(cls, program, facts: "Mapping[str, Iterable] | Iterable | None" = None,
             bursts: Iterable = (), annotation: Any = "absorption",
             scope: "Scope | str | None" = None, **options) -> "Problem":
        """A problem from the forms the Python API accepts: NDlog text or a program;
        facts as ``{pred: [tuple, ...]}`` or a list of updates; bursts as lists of
        updates (``(sign, pred, tuple)`` or ``"+link(@1, 2)"`` strings, see
        :func:`engine.network.parse_update`).

        Raises
        ------
        InputError
            For a malformed fact or update, an annotation that is neither a registered
            scheme name nor a scheme object, an unknown option, or nothing to verify (no
            bursts, and a scope that delivers the facts in one order).
        """
        from engine.network import parse_burst_items
        from ndlog.parser import as_program
        _refuse_unknown(options, list(_RUN_FIELDS), "Problem.make")
        program = as_program(program)
        if bursts is None:
            raise InputError("bursts is a list of bursts, each a list of updates (give [] "
                             "for none)")
        if isinstance(facts, Mapping):
            items = []
            for pred, rows in facts.items():
                items.extend((1, pred, r) for r in fact_rows(pred, rows))
            facts = items
        elif facts is not None and (isinstance(facts, (str, bytes))
                                    or not isinstance(facts, Iterable)):
            raise InputError(f"facts are {{pred: [tuple, ...]}} or a list of insertions, "
                             f"got {type(facts).__name__} {facts!r:.80}")
        fact_updates = tuple(parse_burst_items(facts or (), program))
        for sign, pred, tup in fact_updates:
            if sign < 0:
                raise InputError(f"initial facts are insertions; -{pred}{tup!r} deletes",
                                 hint="put deletions in a burst")
        if isinstance(bursts, (str, bytes)) or not isinstance(bursts, Iterable):
            raise InputError(f"bursts must be a list of bursts, each a list of updates, "
                             f"got {type(bursts).__name__} {bursts!r:.80}")
        burst_updates = []
        for burst in bursts:
            if isinstance(burst, (str, bytes)):
                raise InputError(f"a burst must be a list of updates, got {burst!r}")
            burst_updates.append(tuple(parse_burst_items(burst, program)))
        if not isinstance(scope, Scope):
            scope = Scope.parse(scope)
        if not burst_updates and not scope.facts:
            raise InputError("nothing to verify: no bursts, and the initial facts are "
                             "delivered in one order (FIFO)",
                             hint="give the updates to verify as bursts (--burst FILE), or "
                                  "explore the facts' delivery orders too (--scope facts)")
        from provenance import get_scheme
        get_scheme(annotation)          # an InputError for an unknown name or no scheme
        if not isinstance(annotation, str):
            annotation = copy.deepcopy(annotation)      # a pristine template
        if "aggsel" in options:
            options["aggsel"] = aggsel_mode(options["aggsel"])
        return cls(program, fact_updates, tuple(burst_updates), annotation, scope,
                   **options)

    def with_scope(self, **changes) -> "Problem":
        return replace(self, scope=replace(self.scope, **changes))

    @property
    def annotation_name(self) -> str:
        return self.annotation if isinstance(self.annotation, str) else \
            getattr(self.annotation, "name", type(self.annotation).__name__)

    def scheme(self):
        """A fresh annotation scheme object for one schedule (a scheme keeps state, e.g. a
        derivation budget's running total)."""
        if isinstance(self.annotation, str):
            return self.annotation
        return copy.deepcopy(self.annotation)

    def run_options(self):
        """The :class:`engine.options.RunOptions` of every schedule."""
        from engine.options import RunOptions
        return RunOptions(annotation=self.scheme(), ship=self.ship, aggsel=self.aggsel,
                          delivery="fifo" if self.scope.fifo else "random",
                          unsafe=self.unsafe, max_memory=self._memory_limit,
                          derivation_budget=self.derivation_budget,
                          derivation_total=self.derivation_total)

    @cached_property
    def _memory_limit(self) -> int:
        """Every schedule's memory ceiling: the engine's default, found once (``0``, none,
        if the machine's memory is unknown)."""
        from engine.guards import default_memory_limit
        return default_memory_limit() or 0

    def phases(self) -> list[Phase]:
        """The initial facts (explored only with ``scope.facts``), then the bursts (one
        phase each, or one for all with ``scope.overlap``). The program's own facts are
        injected by :class:`engine.network.Network` itself and run with the first phase."""
        out = [Phase("facts", tuple(self.facts), self.scope.facts)]
        if self.scope.overlap and self.bursts:
            out.append(Phase("all bursts", tuple(u for b in self.bursts for u in b), True))
        else:
            out += [Phase(f"burst {i + 1}", tuple(b), True)
                    for i, b in enumerate(self.bursts)]
        return out

    def locations(self) -> dict[str, int | None]:
        """``pred -> index of its '@' argument`` (for printing updates)."""
        from ndlog.output import program_locations
        return program_locations(self.program)

    # -- a file's worth ------------------------------------------------------------------
    def to_json(self) -> dict:
        """The problem as JSON values (program text, updates in burst syntax).

        Raises
        ------
        InputError
            If the annotation is a scheme object that is not registered by name (a file
            can only name a registered scheme), or the program has no source text.
        """
        if not isinstance(self.annotation, str):
            raise InputError(f"annotation {self.annotation_name!r} is an object, not a "
                             f"registered name: a counterexample file cannot name it",
                             hint="register it with provenance.register_scheme")
        if not self.program.source:
            raise InputError("the program has no source text to write in a counterexample "
                             "file", hint="parse it from NDlog text (psn.parse, psn.load)")
        loc = self.locations()
        return {
            "program": self.program.source,
            "facts": [format_update(s, p, t, loc.get(p)) for s, p, t in self.facts],
            "bursts": [[format_update(s, p, t, loc.get(p)) for s, p, t in b]
                       for b in self.bursts],
            "annotation": self.annotation,
            "scope": self.scope.spec(),
            "options": {"ship": self.ship, "aggsel": self.aggsel, "unsafe": self.unsafe,
                        "derivation_budget": self.derivation_budget,
                        "derivation_total": self.derivation_total},
        }

    @classmethod
    def from_json(cls, data: Mapping, where: str = "counterexample") -> "Problem":
        """Inverse of :meth:`to_json`.

        Raises
        ------
        InputError
            Naming the missing or malformed field.
        """
        from engine.program import prepare
        from ndlog.parser import parse
        if not isinstance(data, Mapping):
            raise InputError(f"{where}: 'problem' must be an object (program, facts, bursts, "
                             f"annotation), got a JSON {json_kind(data)}")
        missing = [k for k in ("program", "facts", "bursts", "annotation") if k not in data]
        if missing:
            raise InputError(f"{where}: the problem has no {', '.join(map(repr, missing))}")
        text, facts, bursts = data["program"], data["facts"], data["bursts"]
        annotation, scope = data["annotation"], data.get("scope", "")
        options = data.get("options", {})
        if not isinstance(text, str) or not isinstance(annotation, str):
            raise InputError(f"{where}: 'program' and 'annotation' must be strings")
        if not isinstance(facts, list) or not isinstance(bursts, list) \
                or not all(isinstance(b, list) for b in bursts):
            raise InputError(f"{where}: 'facts' must be a list of updates and 'bursts' a "
                             f"list of lists of updates")
        if not isinstance(scope, str) or not isinstance(options, Mapping):
            raise InputError(f"{where}: 'scope' must be a string and 'options' an object")
        options = {k: v for k, v in options.items() if v is not None}
        unknown = set(options) - {"ship", "aggsel", "unsafe", "derivation_budget",
                                  "derivation_total"}
        if unknown:
            raise InputError(f"{where}: unknown options {sorted(unknown)}")
        program = parse(text, f"{where} (program)")
        try:
            problem = cls.make(program, facts, bursts, annotation, scope, **options)
            problem.run_options().resolve(prepare(program))     # the annotation, ship, ...
            return problem
        except PSNError as exc:
            if exc.span is None:
                raise InputError(f"{where}: {exc.message}", hint=exc.hint) from None
            if exc.span.filename is None:       # in the text of one update of the file
                exc.span = Span(exc.line, exc.column, f"{where} (an update)")
            raise
