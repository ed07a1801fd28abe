"""Guards against silent wrong answers and silent blow-ups of a run.

Role: the checks and limits a driver applies before and during a run, so that a run either
gives the reference's answer or stops with an error that names the cause and the fix:

* **set semantics under deletions** (:func:`set_deletion_problem`,
  :func:`check_set_deletions`): ``--annotation set`` keeps no count and no provenance, so
  a deletion removes a fact even when another derivation still supports it. The static
  check accepts exactly the programs in which no fact ever has two derivations (see
  :func:`set_deletion_problem`) and refuses the rest with :class:`UnsafeAnnotationError`;
  :func:`implicit_deletions` says whether a program deletes facts even when the workload
  does not (soft state, keyed tables);
* **derivation-set budget** (:class:`AnnotationBudgetError`, :func:`budget_error`):
  derivation sets (Nigam et al. 2012, Sec. 5) grow exponentially with a graph's cycles; the
  scheme counts its entries and raises
  :class:`~provenance.base.AnnotationBudgetExceeded`, which the node turns into this
  user-facing error naming the fact;
* **memory ceiling** (:class:`MemoryGuard`, :class:`MemoryLimitError`,
  :func:`default_memory_limit`, :func:`parse_memory`, :func:`check_memory_limit`): a cheap
  resident-set check a delivery loop calls often, so a run stops with a message instead of
  being killed by the operating system (or taking the machine with it); a ceiling below
  what the process needs before its first update (:data:`MIN_MEMORY`) is refused up front.

Deliberately not here: deciding when a guard applies (the run options and the drivers do),
the budget's bookkeeping (:mod:`provenance.derivation`), and killing or pausing anything:
every guard raises, the caller decides.
"""

from __future__ import annotations

import math
import os
import re
import sys
import time

from ndlog import ast as A
from ndlog.analysis import rules_by_head, strata
from ndlog.errors import EvaluationError, InputError, Span
from ndlog.text import format_bytes

__all__ = [
    "set_deletion_problem", "check_set_deletions", "implicit_deletions",
    "aggregate_reader_problem",
    "soft_state_deletions",
    "UnsafeAnnotationError", "AnnotationBudgetError", "budget_error",
    "MemoryGuard", "MemoryLimitError", "default_memory_limit", "physical_memory",
    "current_rss", "parse_memory", "check_memory_limit", "DEFAULT_MEMORY_FRACTION",
    "MIN_MEMORY",
]

#: The share of the machine's (or the container's) memory a run may use by default.
DEFAULT_MEMORY_FRACTION = 0.75

#: The lowest memory ceiling a run accepts (bytes). A Python process with the engine loaded
#: resides in about 45-50 MiB before its first update (an idle interpreter alone in about
#: 13 MiB), so a lower ceiling stops every run at its first check, having measured nothing.
MIN_MEMORY = 64 << 20

_FIX_SET = "use --annotation absorption, or --unsafe to run it unchecked"


# ---------------------------------------------------------------------------------------
# set semantics under deletions


class UnsafeAnnotationError(InputError):
    """The chosen annotation scheme would give wrong answers on this program and workload
    (``--annotation set`` with deletions where a fact can have two derivations)."""


def set_deletion_problem(program: A.Program) -> str | None:
    """Why deletions under set semantics may give wrong answers for ``program``, or None.

    Set semantics stores presence only, so a deletion that breaks one derivation of a fact
    removes the fact (and what was derived from it) even if another derivation still holds.
    It is exact exactly when no fact can have two derivations at once. This check accepts a
    program only if that holds for every input, which it proves syntactically:

    1. no aggregate (a changed result is retracted and re-inserted, and may come back to an
       earlier value; what reads it sees deletions);
    2. no recursion (a fact on a cycle supports itself, and a graph has many paths);
    3. every derived predicate has one rule and no facts stated in the program (two rules,
       or a rule and a stated fact, are two derivations);
    4. every rule's head determines its body: each variable of a body atom is an argument
       of the head (alone or inside a list), or follows from them through ``:=`` or ``=``;
       no body atom has ``_``. Otherwise two body tuples that differ only in a dropped
       variable derive the same head (``twoHop(@S, D) :- link(@S, Z), link(@Z, D)`` has
       one derivation per ``Z``).

    Conditions the workload must meet too (a program cannot show them): base facts are
    inserted only into predicates no rule derives; a base fact is not inserted again while
    it is present (set semantics does not count insertions, so one deletion removes it);
    and no base fact is deleted and inserted again before the network is quiescent (its
    updates may overtake each other on the way, and an insertion of a present fact is
    dropped).

    Parameters
    ----------
    program:
        The program as written. A distributed one is checked as written, then as the
        engine runs it, localized: an auxiliary that ships bindings to another node may
        leave out a variable the rule reads again there (``b_aux(@S, Z, D) :- link(@Z, D),
        hop_rev(@Z, S, _)``), and is then a projection too. The reason names the rules as
        written, e.g. ``"once localized, rule b ships b_aux(@S, Z, D) (rule bb), which leaves
        out a column of hop_rev, ..."``.

    Returns
    -------
    str or None
        A one-line reason naming the predicate and the rule, e.g. ``"reachable is
        recursive (rule r2)"``; None when deletions under set semantics are exact.
    """
    found = _set_finding(program)
    return None if found is None else found[0]


def check_set_deletions(program: A.Program, because: str | None = None) -> None:
    """Refuse set semantics with deletions on ``program`` unless they are exact.

    Parameters
    ----------
    program:
        See :func:`set_deletion_problem`.
    because:
        What deletes facts, for the message (e.g. ``"the workload deletes links"`` or the
        text of :func:`implicit_deletions`).

    Raises
    ------
    UnsafeAnnotationError
        Pointing at the offending rule (or stated fact), naming the fix.
    """
    found = _set_finding(program)
    if found is None:
        return
    reason, span = found
    cause = f" ({because})" if because else ""
    raise UnsafeAnnotationError(
        f"set semantics cannot delete facts exactly in this program{cause}: {reason}; "
        f"{_FIX_SET}", span, program.source)


def soft_state_deletions(program: A.Program) -> str | None:
    """Why ``program``'s soft state deletes base facts (the first table with a finite
    lifetime: its facts expire), or None; the part of :func:`implicit_deletions` that
    every workload meets once virtual time passes."""
    return next((_expires(t) for t in program.tables if t.lifetime != float("inf")), None)


def _expires(table: A.Materialize) -> str:
    return f"table {table.pred} expires its facts after {table.lifetime:g}"


def implicit_deletions(program: A.Program) -> str | None:
    """Why ``program`` deletes base facts even when no burst deletes one, or None.

    A ``materialize`` table with a finite lifetime expires its facts (soft state); one whose
    keys do not cover every column replaces the stored tuple with the same key (a deletion
    then an insertion).

    Returns
    -------
    str or None
        E.g. ``"table link expires its facts after 10"``.
    """
    arities = program.arities()
    for table in program.tables:
        if table.lifetime != float("inf"):
            return _expires(table)
        arity = arities.get(table.pred)
        if arity is not None and set(table.keys) != set(range(1, arity + 1)):
            keys = ", ".join(str(k) for k in table.keys)
            return (f"table {table.pred} is keyed on keys({keys}): an insertion replaces the "
                    f"tuple with the same key")
    return None


def _set_finding(program: A.Program, checks=None) -> tuple[str, Span | None] | None:
    """(reason, where) of the first condition of :func:`set_deletion_problem` (or of
    ``checks``) that fails, on the program as written, then on the program the engine runs
    (localized)."""
    found = _first_finding(program, checks=checks)
    if found is not None:
        return found[:2]
    if not program.distributed:
        return None
    from localize import explain
    localized = explain(program)
    origin = {e.rule.name: e.origin for e in localized.events}
    found = _first_finding(localized.program, origin, checks)
    if found is None:
        return None
    reason, rule_name = found[0], found[2]
    written = origin.get(rule_name, rule_name)
    source_rule = next((r for r in program.rules if r.name == written), None)
    return reason, source_rule.span if source_rule is not None else None


def aggregate_reader_problem(program: A.Program) -> tuple[str, A.Rule, Span | None] | None:
    """Why set semantics is not exact on what reads an aggregate of ``program``, even
    when nothing else deletes a fact: ``(reason, aggregate rule, where)``, or None.

    An aggregate replaces its result by deleting the old one (in order on FIFO channels),
    and set semantics then deletes what was derived from the old result, although another
    derivation may still hold it: ``q(@S, 1) :- link(@S, D).`` beside
    ``q(@S, V) :- cnt(@S, V).`` loses ``q(@S, 1)`` once ``cnt(@S, 1)`` becomes
    ``cnt(@S, 2)``. So the rules of every predicate that depends on an aggregate must meet
    the conditions 2-4 of :func:`set_deletion_problem` (no recursion, one rule, the head
    determines the body), as written and localized, with three readings that make them
    hold more often than for base-fact deletions: only the atoms whose facts can be
    deleted (aggregate results and what depends on them) need be determined by the head,
    since nothing else deletes a fact; an aggregate rule keeps every body variable (it
    ranges over the distinct body assignments); and the result columns of an aggregate
    atom follow from its group columns (a group holds one result at a time). So
    ``sp5 cheapestPath(@S, D, P, C) :- path(@S, D, P, C, L), minCost(@S, D, C).`` of
    shortest path and ``largestRegions(@K, R) :- regionSize(@R, N), sink(@R, K),
    largestRegion(@K, N).`` of Liu's region query pass.
    """
    results = {r.head.pred: r for r in program.rules if r.is_aggregate}
    if not results:
        return None
    keys = {p: [i for i, a in enumerate(r.head.args) if not isinstance(a, A.Aggregate)]
            for p, r in results.items()}
    downstream = _downstream(program, set(results))
    rules = tuple(r for r in program.rules if r.head.pred in downstream)
    if not rules:
        return None
    found = _set_finding(program.with_(rules=rules), _reader_checks(keys))
    if found is None:
        return None
    return found[0], next(iter(results.values())), found[1]


def _downstream(program: A.Program, sources: set[str]) -> set[str]:
    """The predicates of ``program`` that depend on one of ``sources``, directly or
    through other rules (``sources`` themselves only where they do)."""
    out: set[str] = set()
    changed = True
    while changed:
        changed = False
        for r in program.rules:
            reads = {a.pred for a in r.body_atoms} | {a.pred for a in r.negated_atoms}
            if r.head.pred not in out and reads & (sources | out):
                out.add(r.head.pred)
                changed = True
    return out


def _reader_checks(keys: dict[str, list[int]]):
    """The conditions :func:`aggregate_reader_problem` checks; ``keys``: the group columns
    of each aggregate predicate."""
    def projection(program: A.Program, origin):
        return _projection_finding(program, origin, keys)
    return (_recursion_finding, _definition_finding, projection)


def _first_finding(program: A.Program, origin: dict | None = None, checks=None):
    """``(reason, span, rule name)`` of the first failing condition, or None. ``origin``
    maps the rules of a localized program to the rules they were made from; ``checks``
    are the conditions (default: those of :func:`set_deletion_problem`)."""
    for check in checks or (_aggregate_finding, _recursion_finding, _definition_finding,
                            _projection_finding):
        found = check(program, origin)
        if found is not None:
            return found
    return None


def _localized(reason: str, origin: dict | None) -> str:
    return reason if origin is None else f"once localized, {reason}"


def _aggregate_finding(program: A.Program, origin):
    for r in program.rules:
        if r.is_aggregate:
            return (_localized(f"{r.head.pred} is an aggregate (rule {r.name})", origin),
                    r.span, r.name)
    return None


def _recursion_finding(program: A.Program, origin):
    comp_of = {p: i for i, comp in enumerate(strata(program)) for p in comp}
    for r in program.rules:
        if any(comp_of[a.pred] == comp_of[r.head.pred] for a in r.body_atoms):
            return (_localized(f"{r.head.pred} is recursive (rule {r.name})", origin),
                    r.span, r.name)
    return None


def _definition_finding(program: A.Program, origin):
    heads = rules_by_head(program)
    for pred, rules in heads.items():
        if len(rules) > 1:
            names = ", ".join(r.name for r in rules)
            count = "two" if len(rules) == 2 else str(len(rules))
            return (_localized(f"{pred} has {count} rules deriving it ({names})", origin),
                    rules[1].span, rules[1].name)
    for fact in program.facts:
        rules = heads.get(fact.pred)
        if rules:
            return (_localized(f"{fact.pred} has facts in the program and rule "
                               f"{rules[0].name} deriving it", origin),
                    fact.span, rules[0].name)
    return None


def _projection_finding(program: A.Program, origin, keys: dict | None = None):
    """A rule whose head leaves out a body variable. With ``keys`` (aggregate predicate ->
    its group columns) an aggregate rule leaves out nothing, and the result columns of an
    aggregate atom follow from its group columns (:func:`aggregate_reader_problem`)."""
    deletable = None if keys is None else set(keys) | _downstream(program, set(keys))
    for r in program.rules:
        if keys is not None and r.is_aggregate:
            continue
        found = _undetermined(r, keys or {}, deletable)
        if found is None:
            continue
        atom, var = found
        if origin is not None and r.name in origin:
            from ndlog.printer import format_atom
            return (f"once localized, rule {origin[r.name]} ships {format_atom(r.head)} "
                    f"(rule {r.name}), which leaves out a column of {atom.pred}, so one "
                    f"{r.head.pred} fact can have several derivations"), r.span, r.name
        name = "an anonymous variable (_)" if var.anonymous else f"variable {var.name}"
        return (_localized(f"rule {r.name} leaves {name} of its body out of its head, so "
                           f"one {r.head.pred} fact can have several derivations", origin),
                var.span or r.span, r.name)
    return None


def _undetermined(rule: A.Rule, keys: dict | None = None,
                  deletable: set[str] | None = None) -> tuple[A.Atom, A.Var] | None:
    """A body atom of ``rule`` and a variable of it that the head does not determine.
    ``keys``: aggregate predicate -> group columns, whose other columns follow from them;
    ``deletable``: the predicates whose atoms are checked (default: every one)."""
    known = {v.name for arg in rule.head.args for v in _injective_vars(arg)}
    equations = []
    for lit in rule.body:
        if isinstance(lit, A.Assign):
            equations.append((lit.var, lit.expr))
        elif isinstance(lit, A.Compare) and lit.op in ("=", "=="):
            equations.append((lit.left, lit.right))
    groups = [(atom, keys[atom.pred]) for atom in rule.body_atoms if atom.pred in (keys or {})]
    changed = True
    while changed:
        changed = False
        for atom, cols in groups:
            if all(v.name in known for i in cols for v in A.term_vars(atom.args[i])):
                for v in (v for arg in atom.args for v in _injective_vars(arg)):
                    if v.name not in known:
                        known.add(v.name)
                        changed = True
        for left, right in equations:
            for target, expr in ((left, right), (right, left)):
                if isinstance(target, A.Var) and not target.anonymous \
                        and target.name not in known \
                        and all(v.name in known for v in A.term_vars(expr)):
                    known.add(target.name)
                    changed = True
    for atom in rule.body_atoms:
        if deletable is not None and atom.pred not in deletable:
            continue
        for arg in atom.args:
            for v in (t for t in A.subterms(arg) if isinstance(t, A.Var)):
                if v.anonymous or v.name not in known:
                    return atom, v
    return None


def _injective_vars(term: A.Term):
    """Variables whose value a head argument determines: the argument itself, or the items
    of a list (arithmetic and calls may map two values to one and determine nothing)."""
    if isinstance(term, A.Var):
        if not term.anonymous:
            yield term
    elif isinstance(term, A.ListExpr):
        for item in term.items:
            yield from _injective_vars(item)


# ---------------------------------------------------------------------------------------
# derivation-set budget


class AnnotationBudgetError(EvaluationError):
    """A fact's annotation (its derivation sets) grew past the run's budget."""


def budget_error(exc, fact: str, made_for: str = "") -> AnnotationBudgetError:
    """The user-facing error for a scheme's
    :class:`~provenance.base.AnnotationBudgetExceeded`.

    Parameters
    ----------
    exc:
        The scheme's exception (``size``, ``budget``, ``scope``, ``unit``).
    fact:
        The fact as NDlog, e.g. ``reachable(@1, 5)``.
    made_for:
        For a fact of a predicate the engine made, the rule it serves
        (:meth:`engine.program.EngineProgram.made_for`), else ``""``.

    Returns
    -------
    AnnotationBudgetError
        Naming the fact, the size reached, the budget and the fixes.
    """
    if exc.scope == "fact":
        what = (f"the derivation sets of {fact}{made_for}{',' if made_for else ''} reached "
                f"{exc.size:,} {exc.unit}, over the budget of {exc.budget:,} per fact")
        option = "--derivation-budget"
    elif exc.workers > 1:
        what = (f"the derivation sets on one of {exc.workers} workers reached {exc.size:,} "
                f"{exc.unit} (the last for {fact}{made_for}), over its share of the budget "
                f"in all ({exc.budget:,} on each worker)")
        option = "--derivation-total"
    else:
        what = (f"the derivation sets reached {exc.size:,} {exc.unit} in total (the last "
                f"for {fact}{made_for}), over the budget of {exc.budget:,} in all")
        option = "--derivation-total"
    text = (f"{what}; derivation sets grow exponentially with the graph's cycles: use "
            f"--annotation absorption, or raise the budget with {option} N")
    err = AnnotationBudgetError(text)
    err.fact, err.size, err.budget, err.scope = fact, exc.size, exc.budget, exc.scope
    return err


# ---------------------------------------------------------------------------------------
# memory ceiling


class MemoryLimitError(EvaluationError):
    """The run's resident memory went past its ``--max-memory``."""


def current_rss() -> int:
    """Resident memory of this process in bytes (Linux: ``/proc/self/statm``; elsewhere the
    peak from ``getrusage``, which is never below the current value)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return _peak_rss()


def _peak_rss() -> int:
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024   # bytes on macOS, KiB else


try:
    _PAGE = os.sysconf("SC_PAGE_SIZE")
except (AttributeError, ValueError, OSError):
    _PAGE = 4096


class MemoryGuard:
    """A memory ceiling that a loop checks on every iteration, cheaply.

    :meth:`check` counts calls and reads the resident set size only every ``every`` calls
    (one small file read on Linux), so calling it per delivery costs a decrement.
    :meth:`check_soon` reads it once ``interval`` seconds have passed since the last
    reading: for the calls of a loop whose iterations are few and long (one node's step
    over a huge batch), which would seldom add up to ``every``.

    Parameters
    ----------
    limit_bytes:
        The ceiling; ``None`` or ``0`` for none (the guard then never raises).
    every:
        Read the resident size once per this many calls of :meth:`check`.
    hint:
        What the user can do, appended to the error (default: raise ``--max-memory`` or
        shrink the run).
    interval:
        Seconds between two readings by :meth:`check_soon` (a node's step over a huge
        batch calls it between chunks of updates, and is checked about this often while
        it grows).
    share:
        The number of processes that divide ``--max-memory`` among them (the workers of a
        Ray run), each guarded by ``limit_bytes // share``: the error then names the
        worker's share and the whole ceiling, not the share as if it were the option.
    """

    __slots__ = ("limit", "every", "hint", "interval", "share", "_left", "_due")

    def __init__(self, limit_bytes: int | None, every: int = 1000, hint: str | None = None,
                 interval: float = 0.05, share: int = 1):
        if every < 1:
            raise ValueError(f"every must be at least 1, got {every}")
        if share < 1:
            raise ValueError(f"share must be at least 1, got {share}")
        self.limit = (limit_bytes or 0) // share
        self.share = share
        self.every = every
        self.hint = hint
        self.interval = interval
        self._left = every
        self._due = time.monotonic() + interval

    def check(self) -> None:
        """Count one call; every ``every`` calls, :meth:`check_now`.

        Raises
        ------
        MemoryLimitError
            If the resident size is over the limit.
        """
        self._left -= 1
        if self._left:
            return
        self._left = self.every
        self.check_now()

    def check_soon(self) -> None:
        """:meth:`check_now` if ``interval`` seconds have passed since the last reading by
        this method (a clock reading per call, no count).

        Raises
        ------
        MemoryLimitError
            If the resident size is over the limit.
        """
        now = time.monotonic()
        if now < self._due:
            return
        self._due = now + self.interval
        self.check_now()

    def check_now(self) -> int:
        """Read the resident size and compare it with the limit.

        Returns
        -------
        int
            The resident size in bytes.

        Raises
        ------
        MemoryLimitError
            If it is over the limit.
        """
        used = current_rss()
        if 0 < self.limit < used:
            hint = self.hint or ("the run was stopped before the machine ran out of memory; "
                                 "raise --max-memory (a size like 8G, or a fraction like "
                                 "0.9 of this machine's memory) or run a smaller input")
            if self.share > 1:
                whole = self.limit * self.share
                what = (f"a worker used {format_bytes(used)}, over its share (1/{self.share}"
                        f", {format_bytes(self.limit)}) of the run's --max-memory of "
                        f"{format_bytes(whole)}")
            else:
                what = (f"the run used {format_bytes(used)}, over its --max-memory of "
                        f"{format_bytes(self.limit)}")
            err = MemoryLimitError(f"{what}; {hint}")
            err.used, err.limit = used, self.limit
            raise err
        return used


def physical_memory() -> int | None:
    """Bytes of physical memory of the machine, or None if the system does not say."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * size if pages > 0 and size > 0 else None


def _cgroup_limit(cgroups: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup"
                  ) -> int | None:
    """The lowest memory limit of this process's control groups (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``, from its own group up to the root), or None. ``cgroups``
    and ``root`` are where the system keeps them (tests give a directory of their own)."""
    paths = []
    try:
        with open(cgroups) as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        if line.count(":") < 2:
            continue
        _, controllers, path = line.split(":", 2)
        if controllers == "":                                    # v2 unified hierarchy
            base, name = root, "memory.max"
        elif "memory" in controllers.split(","):                 # v1 memory controller
            base, name = root + "/memory", "memory.limit_in_bytes"
        else:
            continue
        parts = [p for p in path.split("/") if p]
        paths.extend("/".join([base, *parts[:i], name]) for i in range(len(parts), -1, -1))
    limits = []
    for path in paths:
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < (1 << 60):     # "max" or v1's huge "unlimited"
            limits.append(int(text))
    return min(limits) if limits else None


def _address_space_limit() -> int | None:
    """The process's soft limit on its address space (``ulimit -v``, ``RLIMIT_AS``) in
    bytes, or None when there is none (or the system has no such limit).

    Past it an allocation fails: Python raises ``MemoryError`` anywhere, or aborts when it
    cannot even build that exception, so a ceiling above it never gets to stop a run."""
    try:
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, AttributeError, ValueError, OSError):
        return None
    return soft if soft != resource.RLIM_INFINITY and soft > 0 else None


def default_memory_limit(fraction: float = DEFAULT_MEMORY_FRACTION) -> int | None:
    """A safe ceiling: ``fraction`` of the machine's physical memory, or of the control
    group's limit (a container) or of the process's address-space limit (``ulimit -v``)
    when that is lower. None if none is known."""
    known = [m for m in (physical_memory(), _cgroup_limit(), _address_space_limit()) if m]
    return int(min(known) * fraction) if known else None


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*(?:([kmgt])(?:i?b)?|(b)|(%))?$")


def parse_memory(text: str, option: str = "--max-memory") -> int:
    """A memory size from the command line, in bytes.

    Accepts a size with a binary unit (``4G``, ``4GiB``, ``512M``, ``1.5g``,
    ``67108864B``), a fraction of this machine's physical memory (``0.5``) or a percentage
    (``50%``), and ``off`` (or ``none``) for no limit, which returns ``0``. A ceiling must
    be at least :data:`MIN_MEMORY` (:func:`check_memory_limit`).

    Parameters
    ----------
    text:
        What the user wrote.
    option:
        The option's name, for messages.

    Raises
    ------
    ndlog.errors.InputError
        For anything else, a size below :data:`MIN_MEMORY`, a fraction outside
        ``(0, 1]``, or a fraction when the machine's memory is unknown.
    """
    raw = str(text).strip()
    low = raw.lower()
    if low in ("off", "none"):
        return 0
    m = _SIZE.match(low)
    form = ("give a size with a unit (4G, 512M), a fraction of this machine's memory "
            "(0.5), or off")
    if m is None:
        raise InputError(f"{option} {raw!r} is not a memory size; {form}")
    number, unit, byte, percent = m.groups()
    value = float(number)
    if not math.isfinite(value):
        raise InputError(f"{option} {raw!r} is not a memory size; {form}")
    if unit or byte:
        size = int(value * _UNITS[unit or ""])
        if size < 1:
            raise InputError(f"{option} {raw!r} is below one byte; {form}")
        return check_memory_limit(size, option, raw)
    fraction = value / 100 if percent else value
    if not 0 < fraction <= 1:
        raise InputError(f"{option} {raw!r}: a fraction of this machine's memory must be "
                         f"in (0, 1] (a percentage in (0, 100]); for a size, {form}")
    physical = physical_memory()
    if physical is None:
        raise InputError(f"{option} {raw!r}: this system does not report its memory; give "
                         f"a size with a unit (4G, 512M)")
    return check_memory_limit(max(int(physical * fraction), 1), option, raw)


def check_memory_limit(size: int, option: str = "--max-memory", shown: str | None = None
                       ) -> int:
    """``size`` (bytes) if it can serve as a run's memory ceiling: ``0`` (no ceiling) or at
    least :data:`MIN_MEMORY`.

    Parameters
    ----------
    size:
        The ceiling in bytes.
    option:
        The option (or parameter) that set it, for messages.
    shown:
        How the user wrote it (default: ``size`` in bytes).

    Returns
    -------
    int
        ``size``.

    Raises
    ------
    ndlog.errors.InputError
        For a negative size, or one between ``0`` and :data:`MIN_MEMORY`, which every run
        would exceed before doing any work.
    """
    if size == 0:
        return 0
    if size < MIN_MEMORY:
        what = repr(shown) if shown is not None else f"{size:,} bytes"
        raise InputError(f"{option} {what} is below the minimum of "
                         f"{format_bytes(MIN_MEMORY)}: a Python process with the engine "
                         f"loaded already uses about that much, so every run would stop "
                         f"before doing any work",
                         hint=f"give at least {MIN_MEMORY >> 20}M (or off for no limit)")
    return size
