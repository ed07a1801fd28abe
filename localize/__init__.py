"""Rule localization: rewrite a distributed NDlog program so that every rule body lives at
one node (Nigam et al. 2012, Sec. 2.1; Loo et al., SIGMOD 2006).

Role: the public entry points :func:`localize` (the rewritten program) and :func:`explain`
(the same, with which rule became which and why). A rule whose body spans several locations
is *link-restricted* when its locations are connected by link atoms (a body atom at ``S``
naming ``Z``); the atoms at the other locations are evaluated there and their bindings shipped,
step by step along the links, to the node the rule runs at, through hidden auxiliary
predicates. The passes are in :mod:`localize.passes`, the analyses in
:mod:`localize.analysis`; negated atoms go through them as placeholders
(:mod:`localize.negation`). :func:`unfold_hidden` inlines the auxiliaries again, for analyses
that look for the shape of the rules the user wrote (aggregate selection).

Deliberately not here: evaluation (a localized program is run by the engine or by
:func:`psn.evaluate`, which gives the same result relations as for the original program),
printing (:mod:`ndlog.printer`), and the static checks of :mod:`ndlog.checks`, which the parser
runs before.
"""

from __future__ import annotations

from dataclasses import dataclass

from ndlog import ast as A
from ndlog.errors import InputError

from ndlog.rewrite import lift_atom_expressions

from .analysis import body_locations, plan_rule, show_location
from .negation import hide_negations, restore_negations
from .passes import PASSES, Event, unfold_hidden

__all__ = ["localize", "explain", "Explanation", "PASSES", "unfold_hidden"]


def _run(program: A.Program, log: list | None) -> A.Program:
    if not program.distributed:
        return program
    for rule in program.rules:  # reject before rewriting anything
        plan_rule(rule, program.source)
    out = hide_negations(_lift_remote(program))  # negated atoms travel as placeholders
    for p in PASSES:
        out = p(out, log=log)
    return restore_negations(out, program, log=log)


def _lift_remote(program: A.Program) -> A.Program:
    """Lift the expression arguments of body atoms (``q(@Z, X + 1)``) into a fresh variable
    and a test (:func:`ndlog.rewrite.lift_atom_expressions`) in the rules whose body spans
    several locations: an atom binds only its plain arguments, and the test then runs where
    its variables are known, which need not be the atom's location. Local rules are kept
    as written."""
    remote = tuple(r for r in program.rules if len(body_locations(r)) > 1)
    lifted = lift_atom_expressions(program.with_(rules=remote)).rules
    if lifted == remote:
        return program
    made = dict(zip((r.name for r in remote), lifted))
    return program.with_(rules=tuple(made.get(r.name, r) for r in program.rules))


def localize(program: A.Program, **options) -> A.Program:
    """Rewrite a distributed program into an equivalent localized one.

    Parameters
    ----------
    program:
        A parsed program (:func:`psn.parse`). A centralized program (no ``@``) is returned
        unchanged; so are rules whose body already lives at one location.

    Returns
    -------
    Program
        Every rule body reads one location; heads may be remote. Link mirrors and auxiliary
        predicates are in ``Program.hidden``. For Nigam's ``r2``::

            r2a link_rev(@Z, S) :- link(@S, Z).
            r2b r2_aux(@S, Z, D) :- reachable(@Z, D), link_rev(@Z, S).
            r2c reachable(@S, D) :- link(@S, Z), r2_aux(@S, Z, D).

    Raises
    ------
    LocalizationError
        Naming the rule and its position, for a rule whose body locations no link atom
        connects, or whose head location variable the body does not bind.

    Notes
    -----
    Nigam et al. (2012), Sec. 2.1 (rule localization, ``co-link``); Loo et al. (SIGMOD
    2006), link-restricted rules.
    """
    if options:
        raise InputError(f"localize takes no options, got {', '.join(sorted(options))}")
    return _run(program, None)


@dataclass(frozen=True)
class Explanation:
    """The localized ``program`` and the ``events`` (one per rule made) that explain it."""

    original: A.Program
    program: A.Program
    events: tuple[Event, ...]

    def made_from(self, name: str) -> list[str]:
        """Names of the rules made from input rule ``name`` (mirrors included)."""
        return [e.rule.name for e in self.events if e.origin == name]

    def text(self) -> str:
        """One paragraph per input rule: kept as is, or which rules it became and why."""
        from ndlog.printer import format_rule
        lines: list[str] = []
        if not self.original.distributed:
            return "the program is centralized (no '@'): nothing to localize"
        for rule in self.original.rules:
            where = f" (line {rule.span.line})" if rule.span else ""
            label = rule.name if rule.named else f"unnamed rule {rule.name}"
            events = [e for e in self.events if e.origin == rule.name]
            plan = plan_rule(rule)
            if plan.local:
                renamed = "".join(f"; it is now called {e.rule.name}" for e in events
                                  if e.kind == "renamed")
                lines.append(f"{label}{where}: unchanged, {plan.reason}"
                             + _remote_head(rule, plan.root) + renamed)
                continue
            locs = [show_location(plan.root)] + [show_location(s.child) for s in plan.steps]
            spans = ", ".join(locs[:-1]) + " and " + locs[-1]
            mirrors = [e.rule.name for e in events if e.kind == "mirror"]
            also = (f" (and the mirror{'s' if len(mirrors) > 1 else ''} "
                    f"{', '.join(mirrors)})") if mirrors else ""
            lines.append(f"{label}{where}: its body spans {spans}; {plan.reason}. It became "
                         + ", ".join(e.rule.name for e in events
                                     if e.kind in ("ship", "residual")) + also + ":")
            for e in events:
                lines.append(f"  {format_rule(e.rule)}")
                lines.append(f"      {e.kind}: {e.why}")
        return "\n".join(lines)


def _remote_head(rule: A.Rule, where) -> str:
    head = rule.head.loc_term
    if where is None or head is None or head == where:
        return ""
    return f" ({show_location(where)}; its head is sent to {show_location(head)})"


def explain(program: A.Program) -> Explanation:
    """Localize ``program`` and record which rule became which rules and why.

    Returns
    -------
    Explanation
        ``program`` is exactly :func:`localize` (``program``); ``text()`` is what
        ``psn localize --explain`` prints.
    """
    log: list[Event] = []
    out = _run(program, log)
    return Explanation(program, out, tuple(log))
