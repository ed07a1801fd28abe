"""Prepare a program for the engine: lift expressions, localize, rewrite head aggregates,
find locations.

Role: the one step between the language front-end and the engine. Expression arguments of
body atoms are lifted to variables first (:func:`ndlog.rewrite.lift_atom_expressions`: a
delta rule may start from any body atom, so no atom may hold an expression over variables
another atom binds; lifting before localization lets the localizer evaluate the equality
test wherever its variables are bound). A distributed program is then
localized (``psn.localize``; Nigam et al. 2012, Sec. 2.1) unless every rule body
already lives at one location; then each aggregate rule is split into a *contribution* rule
and an incremental aggregate operator (:mod:`engine.aggregate`), so that the engine's delta
rules only ever see plain heads.

Aggregate rewrite (named pass ``split_aggregates``)::

    before:  a1 stats(C, min<G>, count<S>) :- grade(S, C, G).
    after:   a1 __agg_a1(C, S, C, G) :- grade(S, C, G).       (hidden)
             + operator: group __agg_a1 by its first argument, min over G, count over
               the distinct body assignments (S, C, G), emit stats(C, m, n) at the
               group's node

The contribution tuple holds the head's group-by terms followed by the values of every body
variable (in body order), so aggregates range over distinct body assignments exactly as in
:mod:`ndlog.reference`. It is located at the head's location, so the operator runs at the node
that stores the aggregate result.

Deliberately not here: evaluation, routing, annotations (``engine.node``); the localizer
itself (``localize/``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ndlog import ast as A
from ndlog.errors import LocalizationError
from ndlog.rewrite import lift_atom_expressions, project_negated_wildcards

__all__ = ["EngineProgram", "AggregateSpec", "prepare", "split_aggregates", "is_local",
           "CENTRAL", "AGG_PREFIX", "ABSENCE_PREFIX", "absence_pred"]

#: The single node of a centralized program (no ``@`` anywhere).
CENTRAL = "<central>"

#: Prefix of contribution predicates (not a valid NDlog name, so never user-visible).
AGG_PREFIX = "__agg_"

#: Prefix of absence relations: ``!q(t)`` holds at a node while ``q(t)`` is absent there
#: (not an NDlog name; the relation is kept by :class:`engine.node.Node`, never stored).
ABSENCE_PREFIX = "!"


def absence_pred(pred: str) -> str:
    """The absence relation of ``pred``, whose updates fire the delta rules of the negated
    atoms ``not pred(...)`` (``!pred``)."""
    return ABSENCE_PREFIX + pred


@dataclass(frozen=True)
class AggregateSpec:
    """How to turn a contribution relation into aggregate result tuples.

    ``group_pos[k]`` is the head position of the k-th group-by value (contribution position
    k); ``aggs`` lists ``(head position, func, index into the contribution tuple or None for
    count<*>)``.
    """

    rule: str
    head_pred: str
    head_arity: int
    group_len: int
    group_pos: tuple[int, ...]
    aggs: tuple[tuple[int, str, int | None], ...]
    span: object = None


@dataclass
class EngineProgram:
    """A program ready for the engine.

    Attributes
    ----------
    source:
        The program as given.
    program:
        Localized, with aggregate rules replaced by contribution rules.
    rules:
        ``program.rules`` (the rules the engine compiles into delta rules).
    aggregates:
        Contribution predicate -> :class:`AggregateSpec`.
    loc:
        Predicate -> index of its location argument (``None`` when centralized).
    hidden:
        Predicates left out of results by default (localizer auxiliaries, contributions).
    """

    source: A.Program
    program: A.Program
    rules: tuple[A.Rule, ...]
    aggregates: dict[str, AggregateSpec]
    loc: dict[str, int | None]
    hidden: frozenset[str]
    distributed: bool
    visible: frozenset[str] = field(default_factory=frozenset)
    #: every predicate of ``program`` (computed once)
    predicates: frozenset[str] = field(default_factory=frozenset)
    #: where aggregate selection applies: pruned predicate -> the localizer's
    #: :class:`localize.analysis.AggSelPlan`
    aggsel: dict = field(default_factory=dict)
    #: compiled, node-independent pieces of join plans (filled by engine.compile)
    plan_cache: dict = field(default_factory=dict, repr=False)
    #: predicates some rule of ``program`` reads under ``not`` (their absences are
    #: maintained by every node, :class:`engine.node.Node`)
    negated: frozenset[str] = field(default_factory=frozenset)

    def location(self, pred: str, tup: tuple):
        """The node that stores ``pred(tup)``."""
        if not self.distributed:
            return CENTRAL
        return tup[self.location_position(pred)] if tup else CENTRAL

    def location_position(self, pred: str) -> int:
        """The argument of ``pred`` that names the node storing its facts in a distributed
        program (the first one if no atom of ``pred`` has a location specifier)."""
        i = self.loc.get(pred)
        return 0 if i is None else i

    def made_for(self, pred: str) -> str:
        """For a predicate the engine made (hidden: a localizer auxiliary or mirror, an
        aggregate's contributions), the rule as written that it serves, as words to put
        after one of its facts in a message: ``", an intermediate fact of rule r2 (line
        2)"``; ``""`` for any other predicate.

        Parameters
        ----------
        pred:
            A predicate of :attr:`program`.
        """
        if pred not in self.hidden:
            return ""
        made = next((r for r in self.rules if r.head.pred == pred), None)
        span = None if made is None else made.span
        written = next((r for r in self.source.rules if span is not None and r.span == span),
                       None)
        if written is None:
            return ""
        name = f"rule {written.name} " if written.named else "the rule "
        what = "a contribution to the aggregate of" if pred in self.aggregates \
            else "an intermediate fact of"
        return f", {what} {name}(line {span.line})"


def is_local(rule: A.Rule) -> bool:
    """True if every body atom of ``rule`` has the same location term."""
    locs = {a.loc_term for a in rule.body_atoms}
    return len(locs) <= 1


def _localize(program: A.Program) -> A.Program:
    bad = [r for r in program.rules if not is_local(r)]
    if not bad:
        return program
    from localize import localize
    out = localize(program)
    still = [r for r in out.rules if not is_local(r)]
    if still:  # pragma: no cover - a localizer bug
        raise LocalizationError(f"localized rule {still[0].name} is not local", still[0].span)
    return out


def split_aggregates(program: A.Program) -> tuple[A.Program, dict[str, AggregateSpec]]:
    """Replace every aggregate rule by a contribution rule (see the module docstring).

    Returns the rewritten program (contribution predicates added to ``hidden``) and the
    operator specs by contribution predicate. Together with
    :class:`engine.aggregate.AggregateOperator` this is an incremental group-by that supports
    deletions: per group the set of present contributions is kept, and a change of the
    aggregate's value is emitted as the deletion of the old result tuple and the insertion of
    the new one.
    """
    rules = []
    specs: dict[str, AggregateSpec] = {}
    for r in program.rules:
        if not r.is_aggregate:
            rules.append(r)
            continue
        names = r.body_var_names
        group = [(i, t) for i, t in enumerate(r.head.args) if not isinstance(t, A.Aggregate)]
        pred = AGG_PREFIX + r.name
        args = tuple(t for _, t in group) + tuple(A.Var(n) for n in names)
        loc = None
        if r.head.loc is not None:
            loc = [i for i, _ in group].index(r.head.loc)
        head = A.Atom(pred, args, loc, r.head.span)
        rules.append(A.Rule(r.name, head, r.body, r.named, r.span))
        aggs = []
        for i, agg in r.head.aggregates:
            idx = None if agg.var is None else len(group) + names.index(agg.var.name)
            aggs.append((i, agg.func, idx))
        specs[pred] = AggregateSpec(r.name, r.head.pred, r.head.arity, len(group),
                                    tuple(i for i, _ in group), tuple(aggs), r.span)
    hidden = program.hidden | frozenset(specs)
    return program.with_(rules=tuple(rules), hidden=hidden), specs


def _locations(program: A.Program) -> dict[str, int | None]:
    loc: dict[str, int | None] = {}
    for atom in program.atoms():
        if atom.pred not in loc or loc[atom.pred] is None:
            loc[atom.pred] = atom.loc
    return loc


_PREPARED: dict = {}


def prepare(program: A.Program) -> EngineProgram:
    """Localize (if needed) and split aggregates; see the module docstring.

    The result is memoized per program and file (the last 32), so that many networks on
    one program share its localization and compiled join plans. The file is part of the key
    because programs compare equal without their positions: two files with the same text
    must not share rules whose spans, and so whose error messages, name the other file.

    Raises
    ------
    LocalizationError
        If a rule cannot be localized.
    """
    key = (program, program.filename, program.source)
    try:
        hit = _PREPARED.get(key)
    except TypeError:  # pragma: no cover - unhashable values in a hand-built AST
        return _prepare(program)
    if hit is None:
        hit = _prepare(program)
        if len(_PREPARED) >= 32:
            _PREPARED.pop(next(iter(_PREPARED)))
        _PREPARED[key] = hit
    return hit


def _prepare(program: A.Program) -> EngineProgram:
    from localize.analysis import aggsel_plans
    distributed = program.distributed
    lifted = lift_atom_expressions(project_negated_wildcards(program))
    if program.negated:
        from localize.negation import check_locations
        check_locations(lifted)
    local = _localize(lifted) if distributed else lifted
    rewritten, specs = split_aggregates(local)
    loc = _locations(rewritten)
    visible = frozenset(p for p in local.predicates if p not in local.hidden)
    return EngineProgram(program, rewritten, rewritten.rules, specs, loc, rewritten.hidden,
                         distributed, visible, rewritten.predicates,
                         aggsel=aggsel_plans(program, local), negated=rewritten.negated)
