"""Analyses of distributed rules for localization: where a body lives and how its parts link.

Role: read-only questions about one rule that the rewrite passes of :mod:`localize.passes`
ask: which locations its body atoms live at (:func:`body_locations`), which body atoms at one
location name another location (:func:`link_graph`), and, from those, the *plan* of a
link-restricted rule (:func:`plan_rule`): the location the residual rule runs at, and the
order in which the other locations are shipped to their neighbours, each step naming the link
atom it travels along. A rule that cannot be localized is reported here, with the reason and
the rule's position (:class:`~ndlog.errors.LocalizationError`). After localization,
:func:`aggsel_plans` tells the engine where aggregate selection applies on the rewritten
program: the pruned predicates and the auxiliaries that carry their columns;
:func:`query_splits` tells the rewrite of single-aggregate selection
(:func:`localize.passes.one_query_per_aggregate`) which copy of a pruned predicate each rule
reads.

Deliberately not here: building rules or programs (analyses never modify the program; the
passes do), and any check that is not about locations (arity, safety and stratification are
:mod:`ndlog.checks`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ndlog import ast as A
from ndlog.analysis import AggSelSpec, aggsel_candidates
from ndlog.builtins import format_value
from ndlog.errors import LocalizationError

__all__ = [
    "Location", "LinkEdge", "Step", "Plan", "AggSelPlan", "aggsel_plans", "QuerySplit",
    "query_splits",
    "location_of", "body_locations", "mentions", "link_graph", "head_location_bound",
    "bound_in_body", "plan_rule", "show_location", "mirror_index", "same_location",
]

#: A location as it appears in a rule: the location term itself (a variable or a constant).
Location = A.Term


def location_of(atom: A.Atom) -> Location | None:
    """The location term of ``atom`` (the ``@`` argument), or ``None`` if it has none."""
    return atom.loc_term


def show_location(loc: Location) -> str:
    """``@S`` for a variable, ``@a`` for a constant: how messages name a location."""
    if isinstance(loc, A.Var):
        return "@" + loc.name
    if isinstance(loc, A.Const):
        return "@" + format_value(loc.value)
    return "@<expression>"


def same_location(a: A.Term, b: A.Term) -> bool:
    """Two location terms denote the same location in every valuation of the rule."""
    if isinstance(a, A.Var) and a.anonymous:
        return a is b  # every '_' is a distinct variable
    return a == b


def body_locations(rule: A.Rule) -> tuple[Location, ...]:
    """The distinct locations of the body atoms of ``rule``, in body order.

    Examples
    --------
    ``reachable(@S,D) :- link(@S,Z), reachable(@Z,D).`` has body locations ``(S, Z)``.
    """
    out: list[Location] = []
    for atom in rule.body_atoms:
        loc = location_of(atom)
        if loc is not None and not any(same_location(loc, seen) for seen in out):
            out.append(loc)
    return tuple(out)


def mentions(atom: A.Atom, loc: Location) -> tuple[int, ...]:
    """Argument positions (0-based, the ``@`` one excluded) where ``atom`` names ``loc``.

    Only plain arguments count: ``link(@S, Z)`` names ``Z`` at position 1; an expression that
    contains ``Z`` does not name it (the node could not address a message with it).
    """
    if isinstance(loc, A.Var) and loc.anonymous:
        return ()
    return tuple(i for i, arg in enumerate(atom.args) if i != atom.loc and arg == loc)


@dataclass(frozen=True)
class LinkEdge:
    """Body atom ``atom`` (the ``index``-th literal of the body), stored at ``src``, names
    location ``dst`` at argument ``position``: the node at ``src`` knows its neighbour
    ``dst``. ``atom`` is ``None`` when ``dst`` is a constant (every node knows it)."""

    src: Location
    dst: Location
    atom: A.Atom | None
    index: int | None
    position: int | None


def link_graph(rule: A.Rule) -> list[LinkEdge]:
    """Every way one body location of ``rule`` knows another, in body order.

    A body atom at ``S`` whose arguments include the location ``Z`` of another body atom is
    a link from ``S`` to ``Z`` (Loo et al., SIGMOD 2006: link-restricted rules). A constant
    location is known everywhere, so every location links to it.

    Returns
    -------
    list of LinkEdge
        One edge per (atom, named position); several may join the same two locations.
    """
    locs = body_locations(rule)
    edges: list[LinkEdge] = []
    for index, lit in enumerate(rule.body):
        if not isinstance(lit, A.Atom) or lit.loc is None:
            continue
        src = location_of(lit)
        for dst in locs:
            if same_location(dst, src):
                continue
            for pos in mentions(lit, dst):
                edges.append(LinkEdge(src, dst, lit, index, pos))
    for dst in locs:
        if isinstance(dst, A.Const):
            for src in locs:
                if not same_location(src, dst):
                    edges.append(LinkEdge(src, dst, None, None, None))
    return edges


def bound_in_body(rule: A.Rule) -> set[str]:
    """Names of the variables the body binds: plain arguments of body atoms, then
    assignments (``:=`` and ``=``) whose right-hand side is bound, to a fixpoint."""
    bound = {a.name for atom in rule.body_atoms for a in atom.args
             if isinstance(a, A.Var) and not a.anonymous}
    changed = True
    while changed:
        changed = False
        for lit in rule.body:
            target, expr = _assignment(lit)
            if target is None or target.name in bound:
                continue
            if all(v.name in bound for v in A.term_vars(expr)):
                bound.add(target.name)
                changed = True
    return bound


def _assignment(lit: A.Literal) -> tuple[A.Var | None, A.Term | None]:
    if isinstance(lit, A.Assign):
        return lit.var, lit.expr
    if isinstance(lit, A.Compare) and lit.op == "=" and isinstance(lit.left, A.Var) \
            and not lit.left.anonymous:
        return lit.left, lit.right
    return None, None


def head_location_bound(rule: A.Rule) -> A.Var | None:
    """The first variable of the head's location term that the body does not bind, or
    ``None`` when the head's location is bound (or the head has no location)."""
    loc = rule.head.loc_term
    if loc is None:
        return None
    if isinstance(loc, A.Var) and loc.anonymous:
        return loc
    bound = bound_in_body(rule)
    for v in A.term_vars(loc):
        if v.name not in bound:
            return v
    return None


@dataclass(frozen=True)
class Step:
    """Ship the atoms at ``child`` to ``parent``.

    ``via`` is the link: either an edge from ``child`` to ``parent`` (the child knows the
    parent: send directly) or an edge from ``parent`` to ``child`` (only the parent knows the
    child: the link atom is mirrored at the child first, Nigam Sec. 2.1).
    """

    child: Location
    parent: Location
    via: LinkEdge

    @property
    def mirrored(self) -> bool:
        return not same_location(self.via.src, self.child)


@dataclass(frozen=True)
class Plan:
    """How a rule is localized: the residual rule runs at ``root``; ``steps`` ship every
    other body location towards it, leaves first (each step's child has no later step
    shipping into it)."""

    rule: A.Rule
    root: Location | None
    steps: tuple[Step, ...]
    reason: str

    @property
    def local(self) -> bool:
        return not self.steps


def _choose_root(rule: A.Rule, locs: tuple[Location, ...], edges: list[LinkEdge]):
    """The location the residual rule runs at, with the reason, and its spanning tree
    (``None`` when no location reaches every other one)."""
    head = rule.head.loc_term
    trees = [(loc, _spanning_tree(loc, locs, edges)) for loc in locs]
    full = [(loc, tree) for loc, tree in trees if len(tree) + 1 == len(locs)]
    for loc, tree in full:
        if head is not None and same_location(loc, head):
            return loc, "the head's location", tree
    if not full:
        at_head = [t for t in trees if head is not None and same_location(t[0], head)]
        loc, tree = (at_head or trees)[0]
        return loc, "", None
    # otherwise: the location from which the fewest links must be mirrored
    best, best_tree = min(full, key=lambda t: sum(1 for s in t[1].values() if s.mirrored))
    return best, "the body location that needs the fewest link mirrors", best_tree


def _spanning_tree(root: Location, locs, edges) -> dict[int, Step]:
    """Breadth-first tree from ``root``: body-location index -> step shipping it to its
    parent. Direct links (child knows parent) are preferred over mirrored ones."""
    index = {i: loc for i, loc in enumerate(locs)}
    pos = next(i for i, loc in index.items() if same_location(loc, root))
    seen, queue, out = {pos}, [pos], {}
    while queue:
        p = queue.pop(0)
        parent = index[p]
        for c, child in index.items():
            if c in seen:
                continue
            direct = [e for e in edges
                      if same_location(e.src, child) and same_location(e.dst, parent)]
            mirror = [e for e in edges
                      if same_location(e.src, parent) and same_location(e.dst, child)
                      and e.atom is not None]
            if direct or mirror:
                out[c] = Step(child, parent, (direct or mirror)[0])
                seen.add(c)
                queue.append(c)
    return out


def _postorder(root_index: int, tree: dict[int, Step], locs) -> list[Step]:
    children: dict[int, list[int]] = {}
    for c, step in tree.items():
        p = next(i for i, loc in enumerate(locs) if same_location(loc, step.parent))
        children.setdefault(p, []).append(c)
    out: list[Step] = []

    def visit(n: int) -> None:
        for c in sorted(children.get(n, ())):
            visit(c)
            out.append(tree[c])
    visit(root_index)
    return out


def _unconnected_error(rule: A.Rule, locs, tree: dict[int, Step],
                       root_index: int, source: str | None) -> LocalizationError:
    reached = set(tree) | {root_index}
    lost = next(i for i in range(len(locs)) if i not in reached)
    atom = next(a for a in rule.body_atoms if same_location(location_of(a), locs[lost]))
    here = ", ".join(show_location(locs[i]) for i in sorted(reached))
    there = show_location(locs[lost])
    return LocalizationError(
        f"rule '{rule.name}' cannot be localized: no body atom links {there} to {here}, so "
        f"its body cannot be evaluated at one node (a body atom at one location must name "
        f"the other location, e.g. link({show_location(locs[root_index])}, {there[1:]}))",
        atom.span or rule.span, source,
        hint="join the atoms through a link predicate, or give them one location")


def _first_location(rule: A.Rule) -> str:
    locs = body_locations(rule)
    return show_location(locs[0]) if locs else "@S"


def plan_rule(rule: A.Rule, source: str | None = None) -> Plan:
    """Decide how to localize one rule of a distributed program (Nigam et al. 2012, Sec. 2.1).

    The residual rule runs at the head's location when the body has an atom there (and the
    other locations can reach it), and otherwise at the body location that needs the fewest
    link mirrors (the first in body order on a tie). The other body locations form a
    breadth-first spanning tree along link atoms; they are shipped to their parent leaves
    first, so a body over three locations is rewritten in two steps. A link may be used in
    either direction: a child that knows its parent ships directly, otherwise the parent's
    link atom is mirrored at the child. A constant location is known everywhere, so every
    location can ship to it (but it cannot ship back without a link).

    Parameters
    ----------
    rule:
        A rule of a distributed program.
    source:
        The program text, for the caret of an error.

    Returns
    -------
    Plan
        ``steps`` is empty when the body already lives at one location.

    Raises
    ------
    LocalizationError
        If the head's location variable is not bound by the body, if a body atom has no
        location specifier, or if the body's locations are not connected by link atoms
        (Loo et al., SIGMOD 2006: only link-restricted rules can be localized).
    """
    for atom in rule.body_atoms:
        if atom.loc is None:
            raise LocalizationError(
                f"rule '{rule.name}' cannot be localized: body atom '{atom.pred}' has no "
                "location specifier", atom.span or rule.span, source)
    unbound = head_location_bound(rule)
    if unbound is not None:
        raise LocalizationError(
            f"rule '{rule.name}' cannot be localized: the head's location variable "
            f"{unbound.name} is not bound by the body, so no node knows where to send "
            f"'{rule.head.pred}' tuples", unbound.span or rule.head.span or rule.span, source,
            hint=f"bind {unbound.name} in a body atom, e.g. "
                 f"link({_first_location(rule)}, {unbound.name})")
    locs = body_locations(rule)
    if len(locs) <= 1:
        return Plan(rule, locs[0] if locs else None, (), "its body already lives at one node")
    edges = link_graph(rule)
    root, why, tree = _choose_root(rule, locs, edges)
    root_index = next(i for i, loc in enumerate(locs) if same_location(loc, root))
    if tree is None:
        raise _unconnected_error(rule, locs, _spanning_tree(root, locs, edges), root_index,
                                 source)
    return Plan(rule, root, tuple(_postorder(root_index, tree, locs)),
                f"it runs at {show_location(root)}, {why}")


def mirror_index(program: A.Program) -> dict[tuple[str, int], str]:
    """The link mirrors a program already has: ``(pred, position) -> mirror predicate``.

    A mirror is a hidden predicate defined by exactly one rule of the shape made by
    :func:`localize.passes.add_link_mirrors`, e.g. ``link_rev(@Z, S, C) :- link(@S, Z, C).``:
    the body is one atom with distinct plain variables, and the head lists the argument at
    ``position`` (now the location), then the body's location, then the other arguments in
    order.
    """
    by_head: dict[str, list[A.Rule]] = {}
    for r in program.rules:
        by_head.setdefault(r.head.pred, []).append(r)
    out: dict[tuple[str, int], str] = {}
    for r in program.rules:  # the first in program order wins
        if r.head.pred in program.hidden and len(by_head[r.head.pred]) == 1:
            key = _mirror_shape(r)
            if key is not None:
                out.setdefault(key, r.head.pred)
    return out


def _mirror_shape(rule: A.Rule) -> tuple[str, int] | None:
    if len(rule.body) != 1 or not isinstance(rule.body[0], A.Atom):
        return None
    body = rule.body[0]
    head = rule.head
    names = [a.name if isinstance(a, A.Var) and not a.anonymous else None for a in body.args]
    if body.loc is None or None in names or len(set(names)) != len(names):
        return None
    if head.loc != 0 or head.arity != body.arity or head.aggregates:
        return None
    for pos in range(body.arity):
        if pos == body.loc:
            continue
        rest = [a for i, a in enumerate(body.args) if i not in (pos, body.loc)]
        if head.args == (body.args[pos], body.args[body.loc], *rest):
            return body.pred, pos
    return None


@dataclass(frozen=True)
class AggSelPlan:
    """Where aggregate selection applies on a localized program (Liu et al. 2009, Sec. 6).

    Attributes
    ----------
    spec:
        The pruned predicate with its group and aggregate columns
        (:class:`ndlog.analysis.AggSelSpec`, found on the rules the user wrote).
    carriers:
        ``hidden predicate -> {column of spec.pred: column of the hidden predicate}``: the
        localizer's auxiliaries that carry the group and aggregate columns of ``spec.pred``
        into a rule deriving it (``sp2_aux`` in shortest path), so that they can be pruned
        as they leave a node.
    guards:
        ``(localized rule, rule, head var, body var, func)``: where each entry of
        ``spec.monotone`` (``rule`` is the user's) can be checked after localization, in
        the first rule made from the user's rule that binds both variables (``sp2b``, which computes ``C := C1 + C2``
        in shortest path). The engine checks them while it prunes.
    """

    spec: AggSelSpec
    carriers: dict[str, dict[int, int]]
    guards: tuple[tuple[str, str, str, str, str], ...] = ()


def aggsel_plans(source: A.Program, localized: A.Program) -> dict[str, AggSelPlan]:
    """The aggregate-selection plan of every prunable predicate: what the localizer hands
    the engine along with the program it rewrote. Analysis only; modifies nothing.

    ``source`` is the program as the user wrote it; when it is already localized (hidden
    auxiliaries present), the auxiliaries are unfolded first so that the shapes the
    detection looks for (:func:`ndlog.analysis.aggsel_candidates`) are visible.

    Example (shortest path)::

        sp2 path(@S, D, P, C, L) :- link(@S, Z, C1), path(@Z, D, P2, C2, L2), ...
        localized: sp2c path(@S, D, P, C, L) :- link(@S, Z, C1), sp2_aux(@S, Z, D, ...), ...
        plan: path grouped by (0, 1), min on 3 and 4; carrier sp2_aux maps path's columns
              to its own
    """
    from .passes import unfold_hidden
    specs = aggsel_candidates(source) or aggsel_candidates(unfold_hidden(source))
    return {pred: AggSelPlan(spec, _carriers(localized, spec), _guards(source, localized, spec))
            for pred, spec in specs.items() if pred in localized.predicates}


def _guards(source: A.Program, localized: A.Program, spec: AggSelSpec) -> tuple:
    """Each monotonicity condition of ``spec`` on the first localized rule made from its
    rule (the same span, a name the localizer derived from it) that binds both of its
    variables."""
    spans = {r.name: r.span for r in source.rules}
    out = []
    for name, h, b, func in spec.monotone:
        for rule in localized.rules:
            if spans.get(name) is not None and rule.span == spans[name] \
                    and rule.name.startswith(name) and {h, b} <= _bound(rule):
                out.append((rule.name, name, h, b, func))
                break
    return tuple(out)


def _bound(rule: A.Rule) -> set[str]:
    """Variables a rule's body binds: its positive atoms' and its assignments'."""
    names = {v.name for atom in rule.body_atoms for v in A.literal_vars(atom)}
    names |= {lit.var.name for lit in rule.body if isinstance(lit, A.Assign)}
    return names


def _carriers(program: A.Program, spec: AggSelSpec) -> dict[str, dict[int, int]]:
    """Hidden predicates whose atom in a rule deriving ``spec.pred`` holds every group and
    aggregate variable of the head."""
    out: dict[str, dict[int, int]] = {}
    derived = program.idb           # an auxiliary is derived: a hidden input is no carrier
    columns = list(spec.group) + [p for p, _ in spec.aggregates]
    for rule in program.rules:
        if rule.head.pred != spec.pred:
            continue
        head = [a.name if isinstance(a, A.Var) else None for a in rule.head.args]
        need = {c: head[c] for c in columns}
        if None in need.values():
            continue
        for atom in rule.body_atoms:
            if atom.pred == spec.pred or atom.pred not in program.hidden \
                    or atom.pred not in derived:
                continue
            names = [a.name if isinstance(a, A.Var) else None for a in atom.args]
            if all(v in names for v in need.values()):
                out[atom.pred] = {c: names.index(v) for c, v in need.items()}
    return out


@dataclass(frozen=True)
class QuerySplit:
    """How single-aggregate selection splits a pruned predicate into one query per aggregate
    (Liu et al. 2009, Sec. 7.4: without multi-aggregate selection, a user runs one query per
    aggregate, each pruned by its own aggregate).

    Attributes
    ----------
    pred:
        The pruned predicate (``path`` in shortest path).
    copies:
        ``(position, "min" | "max") -> copy predicate``, in the order of
        ``AggSelSpec.aggregates``: ``{(3, "min"): "path_minCost", (4, "min"): "path_minHops"}``.
    readers:
        ``rule name -> (position, func)``: the aggregate each rule reading ``pred`` outside
        its own rules aggregates (``sp3 minCost(@S, D, min<C>) :- path(...)``) or joins with
        (``sp5 cheapestPath :- path(...), minCost(...)``); that rule reads the copy of it.
    """

    pred: str
    copies: dict[tuple[int, str], str]
    readers: dict[str, tuple[int, str]]


def query_splits(program: A.Program) -> dict[str, QuerySplit]:
    """Every prunable predicate with two aggregates or more that can be split into one copy
    per aggregate: what :func:`localize.passes.one_query_per_aggregate` rewrites. Analysis
    only; modifies nothing.

    A predicate of :func:`ndlog.analysis.aggsel_candidates` is split when every aggregate
    rule reading it computes a single aggregate (``minCost(@S, D, min<C>)``; a rule with
    ``min<C>`` and ``min<L>`` in one head needs both at once and is one query, so its
    predicate is not split) and no rule reads it under ``not``. The copy of an aggregate is
    named after the head of the first aggregate rule computing it: ``path_minCost``
    (made unique against the program's predicates).

    Examples
    --------
    Shortest path (Liu Query 2): ``path`` with ``min`` on ``C`` (read by ``sp3`` and
    ``sp5``) and on ``L`` (read by ``sp4`` and ``sp6``) splits into ``path_minCost`` and
    ``path_minHops``.
    """
    specs = {p: s for p, s in aggsel_candidates(program).items() if len(s.aggregates) >= 2}
    if not specs:
        return {}
    taken = set(program.predicates)
    out: dict[str, QuerySplit] = {}
    for pred, spec in specs.items():
        split = _split(program, spec, taken)
        if split is not None:
            out[pred] = split
    return out


def _split(program: A.Program, spec: AggSelSpec, taken: set[str]) -> QuerySplit | None:
    pred = spec.pred
    if any(a.pred == pred for r in program.rules for a in r.negated_atoms):
        return None
    readers = [r for r in program.rules
               if r.head.pred != pred and any(a.pred == pred for a in r.body_atoms)]
    computed: dict[str, tuple[int, str]] = {}      # aggregate head -> what it aggregates
    named: dict[tuple[int, str], str] = {}         # aggregate -> first head computing it
    for r in readers:
        if not r.is_aggregate:
            continue
        keys = _aggregated(r, pred)
        if keys is None or len(keys) != 1:
            return None
        computed[r.head.pred] = keys[0]
        named.setdefault(keys[0], r.head.pred)
    uses: dict[str, tuple[int, str]] = {}
    for r in readers:
        if r.is_aggregate:
            uses[r.name] = computed[r.head.pred]
            continue
        joined = [a.pred for a in r.body_atoms if a.pred in computed]
        if len(joined) != 1:
            return None
        uses[r.name] = computed[joined[0]]
    if set(named) != set(spec.aggregates):
        return None
    copies = {}
    for key in spec.aggregates:
        name = f"{pred}_{named[key]}"
        copy, k = name, 1
        while copy in taken:
            k += 1
            copy = f"{name}_{k}"
        taken.add(copy)
        copies[key] = copy
    return QuerySplit(pred, copies, uses)


def _aggregated(rule: A.Rule, pred: str) -> list[tuple[int, str]] | None:
    """``(position in pred, func)`` of each aggregate of ``rule``'s head over its one
    ``pred`` atom, or ``None`` if an aggregate does not read a plain argument of it."""
    atoms = [a for a in rule.body_atoms if a.pred == pred]
    if len(atoms) != 1:
        return None
    names = [a.name if isinstance(a, A.Var) and not a.anonymous else None
             for a in atoms[0].args]
    out = []
    for _, agg in rule.head.aggregates:
        if agg.var is None or agg.var.name not in names:
            return None
        out.append((names.index(agg.var.name), agg.func))
    return out
