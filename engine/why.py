"""``--why FACT``: the complete provenance of one fact, whatever MinShip left buffered.

Role: answer ``psn run --why`` (and :meth:`engine.network.Network.why`) with the whole
absorption provenance of a fact (Liu et al. 2009, Sec. 4): a positive formula over base
tuples, printed as a minimal sum of products, e.g. ``link(@a,c) ∨ link(@a,b) ∧
link(@b,c)``.

What a node stores is not always the whole formula. Lazy MinShip (Liu Sec. 5) ships one
derivation of a fact and keeps the alternatives buffered at the *sender* until a deletion
needs them, and a buffered alternative may itself be partial: the sender derived it from
its own stored facts, whose alternatives may be buffered at yet other nodes. Say ``a -> b
-> c``, ``a -> d -> c`` and ``x -> a``: node ``a`` derives ``reachable(a,c)`` twice and
buffers one derivation (towards itself), so what it derives from ``reachable(a,c)`` for
node ``x`` uses the other alone; no node holds or buffers ``link(x,a) ∧ link(a,d) ∧
link(d,c)``. So the complete provenance is computed here as a fixpoint over the
derivations of the fact (:func:`why_sets`):

1. the *cone* of the fact: the fact, the body facts of every rule instance that derives
   it from facts present in the network (localized rules, as the engine runs them),
   theirs, and so on (recursive programs make it cyclic);
2. every fact of the cone starts from its stored provenance OR the derivations still
   buffered for it in any node's MinShip stage
   (:meth:`engine.minship.MinShip.unshipped`);
3. the buffered derivations are propagated through the cone's rule instances,
   semi-naively (Nigam et al. 2012, Sec. 2.3: a join with one part new, the others
   current; only the derivations a value does not absorb go on), until nothing new is
   derived.

Why this is the whole formula: the complete provenance is the least fixpoint of
"base tuples OR every rule instance's join". Every stored and buffered derivation belongs
to it, so the start is below it; a rule instance over stored values was computed by the
engine when its last part arrived, and is held by the head's node or buffered by the node
that computed it, so only joins involving buffered derivations are missing, which step 3
adds. Without any buffered derivation (eager MinShip at quiescence, or none) the stored
provenance is the answer.

The fixpoint runs on PosBool antichains (the minimal sets of base variable names,
:mod:`provenance.posbool`; absorption provenance encodes PosBool, Liu Sec. 8), not on
BDDs: variable names mean the same in every annotation context, so nothing is rebuilt
from the wire when workers have their own (``Network(contexts="worker")``), and the work
follows the size of the answer. Reachable on a random graph of 28 nodes and 56 links,
``reachable(0,0)`` (288 products): with BDDs in the scheme's fixed variable order the
deltas grew past 2 million nodes and the fixpoint did not end in minutes; on antichains
it takes 0.4 s, and building the BDD of the answer only to print its minimal sum of
products took 4 s more, so the answer is printed from its sets (``explain_sets``). The
complete formula can be exponential in the graph (all the paths), as it is with every
derivation shipped: :func:`why` gives up with :class:`TooLarge` once a fact it depends
on passes :data:`MAX_PRODUCTS` derivations (reachable, 100 nodes and 200 links: the
cycles through one node pass 2,000 after 5 s of CPU, 5,000 after about 40 s).

A negated atom ``not q(t)`` contributes the variable of the live absence of ``q(t)``
(``docs/provenance.md``, "Negation"): a leaf of the cone, printed ``not q(...)``.

Aggregate selection (Liu Sec. 6) leaves derivations out on purpose (a node keeps facts
it does not fire); with it the formula may leave out derivations through the facts it
held back.

Deliberately not here: printing (the scheme's ``explain_sets``), the CLI, changing the
network (nothing is shipped, flushed or stored).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from ndlog import ast as A
from ndlog.builtins import fact_values
from ndlog.errors import InputError
from ndlog.expr import compile_compare, compile_term
from provenance.bdd import format_fact, format_value
from provenance.posbool import POSBOOL, Antichain
from .minship import stage_of
from .ledger import describe_fact
from .program import ABSENCE_PREFIX

__all__ = ["why", "why_sets", "refuse_split", "NotDerived", "TooLarge", "MAX_PRODUCTS"]

#: Default limit of :func:`why`: derivations of one fact while completing a provenance.
MAX_PRODUCTS = 2000

Fact = tuple  # (pred, tuple)


class NotDerived(InputError):
    """``--why`` asked about a fact the network does not hold (no derivation of it is
    live). The message is ``FACT: not derived``; :attr:`fact` is ``FACT``."""

    def __init__(self, fact: str):
        super().__init__(f"{fact}: not derived")
        self.fact = fact


class TooLarge(InputError):
    """The complete provenance asked for is too large to compute and print: a fact it
    depends on has more than ``limit`` derivations (the formula lists every derivation,
    e.g. every path of a graph)."""

    def __init__(self, fact: str, other: str, limit: int):
        super().__init__(f"--why {fact}: the complete provenance is too large: {other} "
                         f"alone has more than {limit:,} derivations",
                         hint="ask about a fact closer to the base facts, or run a "
                         "smaller network")
        self.fact = fact


def why(net, pred: str, tup, max_products: int | None = MAX_PRODUCTS) -> str:
    """The complete provenance of ``pred(tup)`` as a minimal sum of products over base
    tuples (``link(@a,c) ∨ link(@a,b) ∧ link(@b,c)``), under every MinShip mode: shorter
    products first, the base tuples of a product in insertion order (the scheme's
    ``explain_sets``), so that every MinShip mode and delivery order prints one string.

    Parameters
    ----------
    net:
        A driver at quiescence with ``nodes`` (node id -> :class:`~engine.node.Node`),
        ``program`` (:class:`~engine.program.EngineProgram`) and ``scheme``, e.g.
        :class:`engine.network.Network`.
    pred, tup:
        The fact (``tup`` a tuple of values; lists are frozen into tuples).
    max_products:
        Give up (:class:`TooLarge`) when a fact the answer depends on reaches more
        derivations than this while the buffered ones are propagated; None: no limit.

    Returns
    -------
    str
        The formula (``true`` if it needs no base tuple).

    Raises
    ------
    NotDerived
        If the fact is not held by the network (message ``FACT: not derived``).
    TooLarge
        If ``max_products`` was reached.
    InputError
        If the scheme keeps no provenance, the predicate is unknown or the arity is wrong,
        or the network has updates in flight (a burst applied and not run).
    """
    sets = why_sets(net, pred, tup, max_products)
    return net.scheme.explain_sets(sets, net.program.loc.get, _shower(net.program))


def why_sets(net, pred: str, tup, max_products: int | None = MAX_PRODUCTS
             ) -> frozenset[frozenset[str]]:
    """The complete provenance of ``pred(tup)`` as its minimal sets of base variable
    names (PosBool; a variable is described by the scheme's ``describe``); see the module
    docstring for how it is computed.

    Parameters
    ----------
    net, pred, tup, max_products:
        As for :func:`why`.

    Raises
    ------
    NotDerived, TooLarge, InputError
        As for :func:`why`.
    """
    scheme = net.scheme
    if not all(hasattr(scheme, m) for m in ("explain_sets", "minimal_sets")):
        raise InputError(f"--why needs absorption provenance, which annotation "
                         f"'{scheme.name}' does not keep (use --annotation absorption)")
    if not isinstance(pred, str):
        raise InputError(f"--why: a predicate is a string, got {type(pred).__name__} "
                         f"{pred!r:.80}")
    if not isinstance(tup, (tuple, list)):
        raise InputError(f"--why: the values of '{pred}' must be a tuple, got {tup!r}")
    tup = fact_values(pred, tup)
    text = _check(net, pred, tup)
    transport = getattr(net, "transport", None)
    if transport is not None and transport.in_flight():
        raise InputError(f"--why {text}: the network is not at quiescence (updates in "
                         f"flight: a burst applied and not run yet)",
                         hint="call run() first; the provenance is that of the state a "
                         "run ends in")
    node = net.nodes.get(net.program.location(pred, tup))
    stored = None if node is None else node.state.get(pred, {}).get(tup)
    if stored is None or scheme.is_zero(node.ctx, stored):
        _refuse_split(net, pred, text)
        raise NotDerived(text)
    buffers = _buffers(net)
    if not buffers:
        return frozenset(scheme.minimal_sets(node.ctx, stored))
    return _Completion(net, buffers, text, max_products).sets((pred, tup))


def _shower(prog) -> Callable[[str, tuple], str]:
    """``show(pred, values)``: a fact of a formula as NDlog text, ``@`` before its location
    argument; a fact of the projection the engine negates for ``not link(@S, _)`` (the
    hidden ``link_some(@S) :- link(@S, _)``, :func:`ndlog.rewrite.project_negated_wildcards`)
    as the atom the program wrote, ``link(@6,_)``."""
    projections: dict[str, A.Rule] = {}
    for rule in prog.rules:
        if rule.head.pred in prog.hidden and _is_projection(rule):
            projections[rule.head.pred] = rule

    def show(pred: str, tup: tuple) -> str:
        rule = projections.get(pred)
        if rule is None or len(tup) != len(rule.head.args):
            return format_fact(pred, tup, prog.loc.get(pred))
        env = {v.name: x for v, x in zip(rule.head.args, tup)}
        atom = rule.body[0]
        args = ["_" if t.anonymous else format_value(env[t.name]) for t in atom.args]
        if atom.loc is not None:
            args[atom.loc] = "@" + args[atom.loc]
        return f"{atom.pred}({','.join(args)})"
    return show


def _is_projection(rule: A.Rule) -> bool:
    """True for ``p(@V0, V1) :- q(@V0, _, V1)``: one body atom, whose arguments are the
    head's variables and ``_``."""
    head = rule.head.args
    if len(rule.body) != 1 or not isinstance(rule.body[0], A.Atom) or not all(
            isinstance(t, A.Var) and not t.anonymous for t in head):
        return False
    names = {t.name for t in head}
    args = rule.body[0].args
    return all(isinstance(t, A.Var) and (t.anonymous or t.name in names) for t in args) \
        and any(t.anonymous for t in args)


# -- checking the question -----------------------------------------------------------------
def _check(net, pred: str, tup: tuple) -> str:
    """``pred(tup)`` as NDlog text, after checking the predicate and its arity."""
    text = _text(net, pred, tup)
    arities = _arities(net)
    want = arities.get(pred)
    if want is None:
        if any(t.pred == pred for t in net.program.source.tables):
            return text         # a table declared, never used and holding no fact yet
        hidden = net.program.hidden
        known = ", ".join(f"{p}/{n}" for p, n in sorted(arities.items()) if p not in hidden)
        raise InputError(f"--why {text}: unknown predicate '{pred}' (known: {known})")
    if len(tup) != want:
        raise InputError(f"--why {text}: the fact has {len(tup)} arguments, but "
                         f"'{pred}' has arity {want}")
    return text


def _refuse_split(net, pred: str, text: str) -> None:
    """Refuse a question about a predicate that one query per aggregate (``aggsel=
    "single"``) does not compute: its rules derive a copy per aggregate instead (``path``
    becomes ``path_minCost`` and ``path_minHops``), so "not derived" would be wrong."""
    source = getattr(net, "source", None)
    if source is None or net.program.source is source or pred in source.hidden \
            or pred not in net.program.source.hidden:
        return
    refuse_split(source, pred, text)


def refuse_split(source: A.Program, pred: str, text: str) -> None:
    """Raise :class:`~ndlog.errors.InputError` for ``--why text`` if one query per
    aggregate (``--aggsel single``) splits ``pred`` of the program ``source`` into copies
    (:func:`localize.analysis.query_splits`), naming them; else nothing."""
    from localize.analysis import query_splits
    split = query_splits(source).get(pred)
    if split is None:
        return
    copies = list(split.copies.values())
    raise InputError(f"--why {text}: '{pred}' is not computed with aggregate selection "
                     f"'single': each aggregate's query derives its own copy of it "
                     f"({', '.join(copies)})",
                     hint=f"ask about a copy, e.g. {copies[0]}(...) with the same values, "
                     f"or run with --aggsel multi or off")


def _text(net, pred: str, tup: tuple) -> str:
    """``pred(@a, b)``: a fact as NDlog text, ``@`` before its location argument."""
    return describe_fact(net.program, pred, tup)


def _arities(net) -> dict[str, int]:
    """Every predicate the network knows, with its arity: the program's (as written and
    as run) and those of facts stored for predicates no rule mentions."""
    prog = net.program
    out = dict(prog.program.arities())
    for p, n in prog.source.arities().items():
        out.setdefault(p, n)
    for node in net.nodes.values():
        for p, rows in node.state.items():
            if p not in out and rows:
                out[p] = len(next(iter(rows)))
    return out


# -- what MinShip buffers ------------------------------------------------------------------
def _buffers(net) -> dict[Fact, list[Antichain]]:
    """``fact -> [minimal sets of a derivation]`` for every derivation some node's MinShip
    stage buffers (not shipped), towards any destination. Minimal sets name base
    variables, which mean the same in every context."""
    out: dict[Fact, list] = {}
    sets = net.scheme.minimal_sets
    for node in net.nodes.values():
        stage = stage_of(node)
        if stage is None:
            continue
        for dst, pred, tup in stage.unshipped_keys():
            for alt in stage.unshipped(node, dst, pred, tup):
                out.setdefault((pred, tup), []).append(frozenset(sets(node.ctx, alt)))
    return out


# -- the fixpoint --------------------------------------------------------------------------
class _Completion:
    """The complete provenance of facts of one network (steps 1-3 of the module
    docstring), as PosBool antichains: the minimal sets of base variable names."""

    def __init__(self, net, buffers: dict[Fact, list[Antichain]], text: str,
                 limit: int | None):
        self.net = net
        self.text = text
        self.limit = limit
        self.buffers = buffers
        self.facts = _Facts(net)
        contrib = set(net.program.aggregates)
        self.rules: dict[str, list[_HeadPlan]] = {}
        for rule in net.program.rules:
            if rule.head.pred not in contrib:      # aggregate inputs: results are fresh
                self.rules.setdefault(rule.head.pred, []).append(_HeadPlan(rule))
        self.values: dict[Fact, Antichain] = {}
        self.cone: set[Fact] = set()

    def sets(self, target: Fact) -> Antichain:
        """The minimal sets of the complete provenance of the present fact ``target``."""
        uses = self._cone(target)
        delta: dict[Fact, Antichain] = {}
        for fact in self.cone:
            for alt in self.buffers.get(fact, ()):
                self._add(fact, alt, delta)
        times = POSBOOL.times
        while delta:
            new: dict[Fact, Antichain] = {}
            for fact, d in delta.items():
                for head, body, pos in uses.get(fact, ()):
                    v = d
                    for i, part in enumerate(body):
                        if i != pos and v:
                            v = times(v, self._value(part))
                    if v:
                        self._add(head, v, new)
            delta = new
        return self._value(target)

    def _cone(self, target: Fact) -> dict[Fact, list[tuple[Fact, tuple, int]]]:
        """Every rule instance deriving a fact of the cone of ``target``, indexed by body
        fact: ``body fact -> [(head, body facts, position)]``."""
        uses: dict[Fact, list] = {}
        seen = self.cone = {target}
        todo = [target]
        while todo:
            head = todo.pop()
            for plan in self.rules.get(head[0], ()):
                for body in plan.bodies(head[1], self.facts):
                    for pos, part in enumerate(body):
                        uses.setdefault(part, []).append((head, body, pos))
                        if part not in seen:
                            seen.add(part)
                            todo.append(part)
        return uses

    def _add(self, fact: Fact, v: Antichain, delta: dict) -> None:
        """OR ``v`` into the value of ``fact``; what it adds (the derivations the value
        does not absorb) joins ``delta[fact]``."""
        old = self._value(fact)
        added = [s for s in v if not any(o <= s for o in old)]   # v is an antichain
        if added:
            new = self.values[fact] = _union(old, added)
            if self.limit is not None and len(new) > self.limit:
                raise TooLarge(self.text, _text(self.net, *fact), self.limit)
            have = delta.get(fact)
            delta[fact] = frozenset(added) if have is None else _union(have, added)

    def _value(self, fact: Fact) -> Antichain:
        """The current value of a present fact (its stored provenance at first)."""
        v = self.values.get(fact)
        if v is None:
            node, stored = self.facts.stored(fact)
            v = frozenset(self.net.scheme.minimal_sets(node.ctx, stored))
            self.values[fact] = v
        return v


def _union(old: Antichain, added: list) -> Antichain:
    """The antichain of ``old`` OR ``added``, where no set of ``added`` contains one of
    ``old`` (and ``added`` is an antichain): the sets of ``old`` that ``added`` does not
    absorb, and ``added``."""
    return frozenset([o for o in old if not any(a <= o for a in added)] + added)


class _Facts:
    """The facts present in the network, looked up by bound argument positions."""

    def __init__(self, net):
        self.net = net
        self._index: dict[tuple, dict] = {}

    def stored(self, fact: Fact) -> tuple[Any, Any]:
        """``(node, stored provenance)`` of a present fact, or of a live absence
        ``("!q", t)`` (its variable)."""
        pred, tup = fact
        if pred.startswith(ABSENCE_PREFIX):
            node, value = self._absence(pred[len(ABSENCE_PREFIX):], tup)
            return node, value
        node = self.net.nodes[self.net.program.location(pred, tup)]
        return node, node.state[pred][tup]

    def _absence(self, pred: str, tup: tuple) -> tuple[Any, Any]:
        node = self.net.nodes.get(self.net.program.location(pred, tup))
        return node, (None if node is None else node.absence_of(pred, tup))

    def absent(self, pred: str, tup: tuple) -> bool:
        """True if ``pred(tup)`` is absent from its node and a rule has read the absence
        there (it then has an annotation: :meth:`engine.node.Node.absence_of`)."""
        return self._absence(pred, tup)[1] is not None

    def lookup(self, pred: str, positions: tuple[int, ...], key: tuple) -> Iterator[tuple]:
        """The present tuples of ``pred`` whose values at ``positions`` are ``key``."""
        idx = self._index.get((pred, positions))
        if idx is None:
            idx = self._index[(pred, positions)] = {}
            for node in self.net.nodes.values():
                for t in node.state.get(pred, ()):
                    idx.setdefault(tuple(t[p] for p in positions), []).append(t)
        return iter(idx.get(key, ()))


# -- matching rule instances ---------------------------------------------------------------
class _HeadPlan:
    """The rule instances of one rule that derive a given head tuple: the head binds its
    variables, then the body is joined (atoms with most bound arguments first, every
    assignment and comparison as soon as its variables are bound), and the head is
    computed again and compared (for arguments that are expressions)."""

    def __init__(self, rule: A.Rule):
        self.rule = rule
        self.head_fns = [compile_term(t) for t in rule.head.args]
        self.head_vars: list[tuple[int, str]] = [
            (i, t.name) for i, t in enumerate(rule.head.args)
            if isinstance(t, A.Var) and not t.anonymous]
        self.steps = _plan(rule, {n for _, n in self.head_vars})

    def bodies(self, tup: tuple, facts: _Facts) -> Iterator[tuple[Fact, ...]]:
        """The body facts of every instance deriving ``head(tup)`` from present facts."""
        if len(tup) != len(self.head_fns):
            return
        env: dict = {}
        for i, name in self.head_vars:
            if name in env and env[name] != tup[i]:
                return
            env[name] = tup[i]
        for env, body in _solve(self.steps, 0, env, (), facts):
            if tuple(f(env) for f in self.head_fns) == tup:
                yield body


def _vars(x) -> set[str]:
    if isinstance(x, A.Atom):
        return {v.name for t in x.args for v in A.term_vars(t) if not v.anonymous}
    return {v.name for v in A.literal_vars(x) if not v.anonymous}


def _term_names(t) -> set[str]:
    return {v.name for v in A.term_vars(t) if not v.anonymous}


def _binds(lit, bound: set[str]) -> str | None:
    """The variable a literal binds given ``bound`` (``X := e``, ``X = e`` with ``X``
    unbound), else None (it is a test)."""
    var = lit.var if isinstance(lit, A.Assign) else (
        lit.left if lit.op == "=" and isinstance(lit.left, A.Var) else None)
    if var is None or var.anonymous or var.name in bound:
        return None
    return var.name


def _ready(lit, bound: set[str]) -> bool:
    name = _binds(lit, bound)
    if name is not None:
        expr = lit.expr if isinstance(lit, A.Assign) else lit.right
        return _term_names(expr) <= bound
    return _vars(lit) <= bound


def _plan(rule: A.Rule, bound: set[str]) -> list[tuple[str, Any]]:
    """The join order of ``rule``'s body given the variables ``bound`` at the start, as
    compiled steps (:func:`_solve`). A negated atom is a step once its variables are
    bound: it matches the live absence of its fact (a body part ``("!q", t)``)."""
    bound = set(bound)
    atoms = list(rule.body_atoms)
    negs = [lit.atom for lit in rule.negations]
    lits = [lit for lit in rule.body if not isinstance(lit, (A.Atom, A.Negated))]
    steps: list[tuple[str, Any]] = []
    while atoms or lits or negs:
        neg = next((x for x in negs if _vars(x) <= bound), None)
        if neg is not None:
            negs.remove(neg)
            fns = [compile_term(t) for t in neg.args]
            steps.append(("neg", (neg.pred, lambda env, fns=fns: tuple(f(env) for f in fns))))
            continue
        lit = next((x for x in lits if _ready(x, bound)), None)
        if lit is not None:
            lits.remove(lit)
            steps.append(("lit", _lit_step(lit, bound)))
            bound |= _vars(lit)
            continue
        if not atoms:         # the static checks reject such a rule (unsafe)
            raise RuntimeError(f"rule {rule.name}: {(lits or negs)[0]} never has its "
                               "variables bound")
        atom = max(atoms, key=lambda a: _bound_count(a, bound))   # first of the best
        atoms.remove(atom)
        steps.append(("atom", _atom_step(atom, bound)))
        bound |= _vars(atom)
    return steps


def _bound_count(atom: A.Atom, bound: set[str]) -> int:
    return sum(1 for t in atom.args if not (isinstance(t, A.Var) and t.anonymous)
               and _term_names(t) <= bound)


def _lit_step(lit, bound: set[str]) -> Callable[[dict], dict | None]:
    """``env -> env' or None`` for an assignment (a test if its variable is bound) or a
    comparison."""
    name = _binds(lit, bound)
    if name is not None:
        fn = compile_term(lit.expr if isinstance(lit, A.Assign) else lit.right)
        return lambda env: {**env, name: fn(env)}
    if isinstance(lit, A.Assign):
        fn, var = compile_term(lit.expr), lit.var.name
        return lambda env: env if env[var] == fn(env) else None
    test = compile_compare(lit)
    return lambda env: env if test(env) else None


def _atom_step(atom: A.Atom, bound: set[str]):
    """``(pred, key positions, key function, match)`` for joining ``atom``: the present
    tuples are looked up by the arguments known from ``bound``; ``match(env, t)`` binds
    the others (``env'`` or None)."""
    positions, key_fns, binds, later = [], [], [], []
    first: set[str] = set()
    for p, t in enumerate(atom.args):
        if isinstance(t, A.Var):
            if t.anonymous:
                continue
            if t.name in bound:
                positions.append(p)
                key_fns.append(compile_term(t))
            elif t.name in first:
                later.append((p, compile_term(t)))     # a repeat: equal to the first
            else:
                first.add(t.name)
                binds.append((p, t.name))
        elif _term_names(t) <= bound:
            positions.append(p)
            key_fns.append(compile_term(t))
        else:
            later.append((p, compile_term(t)))

    def key(env: dict) -> tuple:
        return tuple(f(env) for f in key_fns)

    def match(env: dict, t: tuple) -> dict | None:
        if len(t) != atom.arity:
            return None
        e = dict(env)
        for p, n in binds:
            e[n] = t[p]
        for p, f in later:
            if f(e) != t[p]:
                return None
        return e
    return atom.pred, tuple(positions), key, match


def _solve(steps: list, i: int, env: dict, body: tuple, facts: _Facts
           ) -> Iterator[tuple[dict, tuple]]:
    """Every ``(env, body facts)`` satisfying ``steps[i:]`` from ``env``."""
    if i == len(steps):
        yield env, body
        return
    kind, step = steps[i]
    if kind == "lit":
        e = step(env)
        if e is not None:
            yield from _solve(steps, i + 1, e, body, facts)
        return
    if kind == "neg":
        pred, key = step
        t = key(env)
        if facts.absent(pred, t):
            yield from _solve(steps, i + 1, env, body + ((ABSENCE_PREFIX + pred, t),),
                              facts)
        return
    pred, positions, key, match = step
    for t in facts.lookup(pred, positions, key(env)):
        e = match(env, t)
        if e is not None:
            yield from _solve(steps, i + 1, e, body + ((pred, t),), facts)
