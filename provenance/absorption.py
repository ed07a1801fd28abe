"""The ``absorption`` annotation scheme: absorption provenance on CUDD BDDs.

Role: Liu et al. (ICDE 2009), Sec. 4, as a strategy object for the PSN engine
(:class:`provenance.base.AnnotationScheme`), built from :mod:`provenance.bdd`:

* every base insertion number ``seq`` (the engine's ledger hands out one per insertion, a
  re-inserted tuple gets a new one) is the variable ``x<seq>``; a join ANDs, alternative
  derivations OR (Liu Fig. 6); a tuple is present iff its provenance is not false;
* **insertion** (pick): the incoming provenance is first restricted by the variables this
  node has seen zeroed, then the stored value becomes ``old | new`` and only the difference
  is fired, and only when it is not false (Liu Alg. 1, deltaPv). The difference is the
  *monotone* one (:meth:`~provenance.bdd.BDDContext.monotone_diff`: the derivations of
  ``new`` that ``old`` does not absorb), not ``new & ~old``: shipping negative literals let a
  dead variable survive as ``~x`` in a receiver's provenance when the zeroing that would
  clean it was (correctly) not sent, which broke exact PosBool provenance and minimal SOP
  under some delivery orders (found by the reorder tests; relations were still right);
* **deletion** is *zeroing*: its annotation is a :class:`Zeroing`, a set of variables set to
  false. A base deletion carries the insertion's variable. On pick the node adds the
  variables to its :class:`~provenance.bdd.ZeroSet`, zeroes the stored provenance (all
  variables it has seen zeroed, ``let`` with false), and, if that removed something, fires
  the delta rules with the part lost; a derived deletion is sent only where the lost part
  joined with the other body facts is not false, i.e. along the paths on which provenance
  depending on those variables was shipped (under MinShip, by MinShip's record of what it
  shipped to each destination instead: :meth:`AbsorptionScheme.ship_attach`; MinShip sends
  another node one *node-wide* zeroing per step, which the receiver applies to every fact
  holding its variables, :meth:`AbsorptionScheme.zero_everywhere`). A tuple whose
  provenance becomes false is deleted. A deletion is never made to wait: if it
  overtakes the insertions it cancels, the node remembers the variables and restricts those
  insertions when they come (correct under any delivery order, where Liu et al. 2009
  assumed FIFO channels);
* on the wire an insertion's provenance is the BDD node list of
  :meth:`provenance.bdd.BDDContext.serialize` (``[names, nodes, root]``) and a zeroing is
  ``[names]`` (a one-element list); both are msgpack-able, no pickle.

Contexts: one :class:`~provenance.bdd.BDDContext` (CUDD manager) per worker, or one per
process shared by the in-process workers (``Network(contexts="process")``, the default; a
Ray worker process has one for the nodes it hosts), and per node an
:class:`AbsorptionContext` holding that manager and the node's zeroed variables. A BDD is
rebuilt from its wire form only between different managers (:meth:`must_rebuild`).

Values. A provenance is a CUDD BDD (:class:`~provenance.bdd.Function`) or, for a single
derivation (a conjunction of base variables ``x<i>``: what a base fact, a join of single
derivations and lazy MinShip's shipments are), a :data:`Cube`: the sorted tuple of its
insertion ids. The ROBDD of a conjunction is the chain of its variables, so the tuple is
that BDD written down without the manager; it is built in CUDD
(:meth:`~provenance.bdd.BDDContext.cube_function`) only when it meets a formula that is not
a single derivation: an OR of two derivations neither of which absorbs the other, a
comparison with such a BDD, minimal SOP. A join of cubes is the union of their ids,
absorption between cubes a subset test, zeroing one a disjointness test; its wire form is
the chain form :meth:`~provenance.bdd.BDDContext.serialize` gives the same conjunction
(the same bytes), and a received chain of ``x``-variables is read back as a cube, in any
manager. On reachable with lazy MinShip and insertions only, no BDD is built at all. Tuples,
not frozensets: a frozenset of 8 ints is 728 bytes, a tuple 104.
The values are opaque to the engine: combine them with the scheme's ``join`` and
``combine`` and read them with :meth:`AbsorptionScheme.function`,
:meth:`~AbsorptionScheme.minimal_sets` or :meth:`~AbsorptionScheme.explain` (``&`` on two
cubes is a ``TypeError``, not an AND).

Negation: the absence of a fact at its node (``!q(t)``, while ``q(t)`` is absent; the
engine maintains it, :mod:`engine.node`) is a fresh variable ``n<node>.<k>`` per absence
(:meth:`AbsorptionScheme.absence`), exactly like a base insertion; when ``q(t)`` appears the
variable dies (:meth:`AbsorptionScheme.absence_ends`, a zeroing, like a base deletion), and
when ``q(t)`` disappears again a new variable is made. Derivations through ``not q(t)`` hold
the variable, so they are zeroed with it wherever they went, and a late derivation holding a
dead variable is restricted away on arrival. Why this is reorder-tolerant:
``docs/provenance.md``, "Negation".

Aggregate results (maintained by the engine's aggregate operator) get a fresh
variable per emitted result tuple, ``x<id>`` with a negative id the node makes itself,
unique in the run (:func:`~provenance.bdd.node_var_id`), kept as a :data:`Cube` like a
base insertion's; the operator's later deletion of the same tuple carries that variable
(the context pairs the calls), so facts derived from an aggregate result are zeroed with
it.

Registered by name (``get_scheme("absorption")``) with lazy MinShip as its default
shipping (:mod:`engine.minship`); an :class:`AbsorptionScheme` built directly ships
every derivation unless given ``ship="lazy"`` or ``"eager[:W]"`` (or the driver's ``ship=``).

The ``ship_*`` methods are the shipping algebra :mod:`engine.minship` uses (absorbed?,
restrict by zeroed variables, add to a buffer of alternatives and read its OR, monotone
difference, one derivation of a provenance, the deletion annotation), so that the engine's
stage never looks inside a BDD itself.

Speed (``python -m bench.bench_provenance``; figures in ``bench/RESULTS.md``): lazy MinShip
ships conjunctions only, so the common cases are read in one pass
down the BDD (wire form, support, one derivation, a cube's monotone difference); zeroing is
one ``Cudd_bddUnivAbstract`` call on a per-node cube of the zeroed variables
(:meth:`AbsorptionContext.restrict`) instead of ``support`` plus ``let``; MinShip's buffers
are :class:`Alternatives` lists. A single derivation is a :data:`Cube` (a BDD that is one
is known by :meth:`~provenance.bdd.BDDContext.cube_ids`), so absorption between
derivations, zeroing one and its wire form are set operations. Eager MinShip ships ORs of
paths: :meth:`AbsorptionScheme.pick` tests their absorption with CUDD's Leq, and a buffer
tests them against a buffered path variable by variable (:func:`_formula_absorbed`).

Deliberately not here: MinShip and aggregate selection (engine send/pick stages), the
manager and wire form themselves (:mod:`provenance.bdd`), the driver's ledger.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from itertools import compress, repeat
from operator import contains, is_, not_
from sys import intern
from typing import Any, Callable, Iterable

from ndlog.builtins import format_value

from .base import NO_FIRE, SHIP_ABSORBED, SHIP_BUFFER, SHIP_NOW, AnnotationScheme
from .bdd import (BDDContext, Function, ZeroSet, chain_ids, chains_overhead, format_fact,
                  insertion_id, node_key, node_var_id, var_name)

__all__ = ["AbsorptionScheme", "AbsorptionContext", "Zeroing", "Alternatives", "Cube",
           "as_cube", "as_function"]

#: A single derivation: the sorted tuple of the insertion ids of its variables, standing
#: for the conjunction of ``x<i>`` (its BDD is a chain); ``()`` is ``true``. An aggregate
#: result's variable has a negative id (:func:`~provenance.bdd.node_var_id`).
Cube = tuple


class Zeroing:
    """A deletion's annotation: the variables set to false.

    ``lost`` is local bookkeeping (the provenance the deletion removed, joined with the rest
    of a rule body); it is not shipped and takes no part in equality or hashing. A Zeroing
    is never equal to a BDD (and compares without raising, unlike ``dd.cudd.Function``).
    Immutable by convention (a plain class with slots: one is made per derived deletion).
    """

    __slots__ = ("names", "lost")

    def __init__(self, names: frozenset, lost: Any = None):
        self.names = names
        self.lost = lost

    def __eq__(self, other) -> bool:
        return isinstance(other, Zeroing) and other.names == self.names

    def __hash__(self) -> int:
        return hash(("zeroing", self.names))

    def __repr__(self) -> str:
        return f"Zeroing({sorted(self.names)!r})"


class Alternatives:
    """MinShip's buffer of one fact towards one destination (Liu Sec. 5): monotone
    provenances whose OR is what the node produced, kept as a list (see
    :meth:`AbsorptionScheme.ship_merge`), each with its variables' insertion ids as a tuple
    when it is a single derivation (:meth:`~provenance.bdd.BDDContext.cube_ids`, else
    None), so that absorption and zeroing against the buffer are set tests (a tuple, not a
    frozenset: buffers hold millions of alternatives on a 1,000-node topology, and a
    frozenset of 15 ints takes about four times the memory). Owned by one MinShip record
    (:meth:`AbsorptionScheme.ship_merge` appends in place); never shipped, never stored
    by a node. Iterates, indexes and counts like the list of its alternatives.

    While every alternative is a single derivation kept as its tuple of ids (all that lazy
    MinShip buffers), ``ids`` is ``fs`` itself: one list instead of two equal ones."""

    __slots__ = ("fs", "ids")

    def __init__(self, fs: list, ids: list):
        self.fs = fs
        self.ids = fs if len(fs) == len(ids) and all(map(is_, fs, ids)) else ids

    def append(self, f, ids: tuple | None) -> None:
        """Add the alternative ``f`` whose insertion ids are ``ids`` (None unless ``f`` is a
        single derivation); ``ids`` stops being ``fs`` when they differ."""
        if self.ids is self.fs:
            if ids is f:
                self.fs.append(f)
                return
            self.ids = list(self.fs)
        self.fs.append(f)
        self.ids.append(ids)

    def __iter__(self):
        return iter(self.fs)

    def __len__(self) -> int:
        return len(self.fs)

    def __getitem__(self, i):
        return self.fs[i]

    def __repr__(self) -> str:
        return f"Alternatives({len(self.fs)})"


def _ids_tuple(ids: tuple | frozenset | None) -> tuple | None:
    return ids if ids is None or type(ids) is tuple else tuple(ids)


def as_function(bdd: BDDContext, a) -> Function:
    """The BDD of a provenance value: a :data:`Cube` is built
    (:meth:`~provenance.bdd.BDDContext.cube_function`), a BDD is returned as it is."""
    return bdd.cube_function(a) if type(a) is tuple else a


def as_cube(ids: Iterable[int]) -> tuple:
    """The :data:`Cube` of the conjunction of ``x<i>`` for ``i`` in ``ids``."""
    return tuple(sorted(set(ids)))


def _union(a: tuple, b: tuple) -> tuple:
    """The :data:`Cube` of ``a ∧ b``: the sorted union of their ids. A join usually adds
    one variable (a link) to a path, or none (it is already there): then no set is made."""
    if len(a) < len(b):
        a, b = b, a
    if len(b) == 1:
        x = b[0]
        if x in a:
            return a
        i = bisect_left(a, x)
        return a[:i] + b + a[i:]
    if not b:
        return a
    s = set(a)
    s.update(b)
    return a if len(s) == len(a) else tuple(sorted(s))


def _pair_union(a, b) -> tuple | None:
    """:meth:`AbsorptionScheme.derive_pair`: the :data:`Cube` of ``a ∧ b`` when both are
    single derivations, else None."""
    if type(a) is tuple and type(b) is tuple:
        return _union(a, b)
    return None


def _subset(a: tuple, b: tuple) -> bool:
    """True if the variables of cube ``a`` are among those of ``b`` (``b → a``)."""
    return len(a) <= len(b) and set(b).issuperset(a)


def _or(bdd: BDDContext, a, b):
    """``a ∨ b`` (Liu Fig. 6, union); two single derivations of which one has the other's
    variables stay a :data:`Cube` (absorption: ``a ∨ (a ∧ c) = a``)."""
    if type(a) is tuple and type(b) is tuple:
        if _subset(a, b):
            return a
        if _subset(b, a):
            return b
    return as_function(bdd, a) | as_function(bdd, b)


def _and(bdd: BDDContext, a, b):
    """``a ∧ b`` (Liu Fig. 6, join); of two single derivations, the union of their
    variables."""
    if type(a) is tuple and type(b) is tuple:
        return _union(a, b)
    return as_function(bdd, a) & as_function(bdd, b)


def _is_false(bdd: BDDContext, a) -> bool:
    return type(a) is not tuple and a == bdd.false


def zero_by(bdd: BDDContext, f, cube: Callable[[], Function], ids,
            zeroed: Callable[[str], bool]):
    """A monotone ``f`` with the variables of the positive cube ``cube()`` false; ``ids``
    are the insertion ids of the cube's ``x``-variables, ``zeroed(name)`` tells whether a
    variable is one of the cube's. A single derivation (a :data:`Cube`, or a BDD that is
    one, over any variables) survives whole or not at all: a set test instead of a CUDD
    call, and the cube is not built. (A CUDD call costs as much as the cube is long, and
    the cube grows with every deletion a long run makes.)"""
    if type(f) is tuple:
        return f if ids.isdisjoint(f) else bdd.false
    known = bdd.known_cube(f)
    if known is not None:
        return f if known.isdisjoint(ids) else bdd.false
    names = bdd.cube_names(f)
    if names is not None:
        return bdd.false if any(map(zeroed, names)) else f
    return bdd.zero_all(f, cube())


#: Node-wide zeroings a node answers by scanning its facts before it indexes them
#: (:meth:`AbsorptionScheme.zero_everywhere`).
SCANS_BEFORE_INDEX = 3

#: Appends to a node's index of facts by variable before its lists first drop their
#: repeats (:func:`_hold`).
HELD_SWEEP_AT = 1024


class AbsorptionContext:
    """Per-node context: the worker's BDD manager and the node's zeroed variables."""

    __slots__ = ("bdd", "zeroed", "any_zeroed", "_zcube", "_zpending", "zids", "node",
                 "minship", "swept", "scans", "holders", "held_left", "held_size",
                 "formulas", "_agg_live", "_agg_next", "_absent_next")

    def __init__(self, bdd: BDDContext, node: Any = None):
        self.bdd = bdd
        self.zeroed = ZeroSet()
        #: ``bool(zeroed)``, as a plain attribute: it is asked for every update shipped.
        self.any_zeroed = False
        #: The conjunction of the zeroed variables but ``_zpending`` (see :meth:`zcube`).
        self._zcube: Function = bdd.true
        self._zpending: list[str] = []
        #: The insertion ids of the zeroed ``x``-variables: zeroing a known single
        #: derivation (:meth:`~provenance.bdd.BDDContext.known_cube`) is a set test.
        self.zids: set[int] = set()
        self.node = node
        #: True once a MinShip stage sends this node's updates (:meth:`AbsorptionScheme.
        #: ship_attach`): it forwards a derived deletion only where what it shipped depends
        #: on the zeroed variables, so the lost part need not be computed.
        self.minship = False
        #: The variables a node-wide zeroing has already swept from every fact of this
        #: node (:meth:`AbsorptionScheme.zero_everywhere`). No fact can hold one again:
        #: they are zeroed here too, so every later insertion is restricted by them on
        #: arrival. A node-wide zeroing of these alone (each neighbour that shipped a
        #: derivation depending on them sends one) then needs no scan.
        self.swept: set[str] = set()
        #: How many node-wide zeroings this node has answered by scanning its facts.
        self.scans = 0
        #: Once a node has scanned :data:`SCANS_BEFORE_INDEX` times, the facts whose
        #: stored provenance may depend on a variable (``insertion id or name -> [fact,
        #: ...]``, repeats allowed), so that later node-wide zeroings find them without a
        #: scan; kept up by :meth:`AbsorptionScheme.pick` with the variables of every
        #: derivation a fact gains. An entry may outlive the variable in the fact, or the
        #: fact, until the next sweep (:func:`_sweep_holders`; harmless meanwhile: the
        #: engine picks a deletion only for a present fact, which is then zeroed to
        #: itself).
        self.holders: dict | None = None
        #: Appends to :attr:`holders` left before its lists next drop their repeats
        #: (:func:`_hold`), and its entries after the last sweep
        #: (:func:`_sweep_holders`).
        self.held_left = HELD_SWEEP_AT
        self.held_size = 0
        #: The predicates in which this node has stored a provenance that is not a single
        #: derivation (a BDD; set by :meth:`AbsorptionScheme.pick`, the only writer): a
        #: scan of any other relation tests its values as tuples of insertion ids without
        #: first checking their types.
        self.formulas: set[str] = set()
        self._agg_live: dict[tuple, int] = {}
        self._agg_next = 0
        self._absent_next = 0

    def add_zeroed(self, names) -> None:
        """Remember ``names`` as zeroed at this node."""
        for name in self.zeroed.add(names):
            self.any_zeroed = True
            self._zpending.append(name)
            i = insertion_id(name)
            if i is not None:
                self.zids.add(i)

    def zcube(self) -> Function:
        """The conjunction of the zeroed variables: zeroing a provenance is then one CUDD
        call (:meth:`~provenance.bdd.BDDContext.zero_all`). Brought up to date when a
        BDD needs it, so that a run of single derivations (lazy MinShip's) never builds
        it nor declares its variables in the manager. Extended by one variable at each
        zeroing instead (a new variable sits below the cube, so each AND rebuilt it), it
        cost time and memory quadratic in the number of zeroed variables over a run."""
        pending = self._zpending
        if pending:
            bdd = self.bdd
            self._zcube = bdd.positive_cube(pending) & self._zcube
            pending.clear()
        return self._zcube

    def restrict(self, f: Function) -> Function:
        """``f`` (monotone) with every variable this node has seen zeroed set to false."""
        if not self.any_zeroed:
            return f
        return zero_by(self.bdd, f, self.zcube, self.zids, self.zeroed.__contains__)

    def absence_var(self) -> tuple[str, Function]:
        """A fresh variable for a new absence at this node: ``n<node>.<k>``, never made
        before (``k`` counts this node's absences), so no earlier zeroing touches it."""
        self._absent_next += 1
        node = "" if self.node is None else format_value(self.node)
        name = f"n{node}.{self._absent_next}"
        return name, self.bdd.var(name)

    def aggregate_var(self, fact: tuple) -> int:
        """The id of a fresh variable for an aggregate result tuple (negative, unique in
        the run: :func:`~provenance.bdd.node_var_id`), or, called again for the same live
        tuple (its deletion), the same id. Not declared in the manager: a derivation
        through the result stays a :data:`Cube`, as one through a base fact does, and
        the variable is declared only if a BDD needs it (a variable is never freed, and
        the result changes at every better path: about 80 new ones per link flap of
        shortest path on a 10-node ring)."""
        live = self._agg_live.pop(fact, None)
        if live is not None:
            return live
        self._agg_next += 1
        live = self._agg_live[fact] = node_var_id(self.node, self._agg_next)
        return live


class AbsorptionScheme(AnnotationScheme):
    """Absorption provenance (Liu et al., ICDE 2009, Sec. 4), order-insensitive.

    Parameters
    ----------
    reorder:
        Dynamic variable reordering (CUDD sifting) of the per-worker managers, on by default:
        reachable, eager, one worker per node, CPU seconds (tuples, bytes shipped): 10 nodes
        and 30 links 1.78 s on vs 1.77 s off; 12 nodes and 40 links 25.9 s on vs 40.7 s
        off (46,876 tuples, 2.4 MB either way). Off, variables follow insertion ids in every
        manager (:class:`~provenance.bdd.BDDContext`), which makes runs easier to read; with
        lazy MinShip (single derivations shipped) off is faster (see :func:`_registered`).
    ship:
        The MinShip mode the engine installs for this scheme when the driver asks for none
        (``"lazy"``, ``"eager[:W]"``; :mod:`engine.minship`); None ships every
        derivation (eager, W = 1, without MinShip's bookkeeping).
    """

    name = "absorption"
    absorptive = True
    idempotent = True
    uses_parts = True
    exact_deletions = False
    context_bound = True
    ships_annotations = True
    negation = True
    uses_places = True

    def __init__(self, reorder: bool = True, ship: str | None = None):
        self.reorder = reorder
        #: MinShip mode the engine installs when none is asked for (``engine.minship``);
        #: the registered scheme (``get_scheme("absorption")``) ships lazily.
        self.default_ship = ship
        #: ``variable -> (pred, tuple)`` for :meth:`describe`: keyed by the insertion id
        #: (or node-made id) of an ``x``-variable, by its name for any other; an
        #: aggregate result's predicate is ``"=" + pred`` (interned), an absence's
        #: ``"!" + pred``. One entry per aggregate result that ever changed.
        self._facts: dict = {}
        self._zero_wire: dict[frozenset, list] = {}     # a zeroing's wire form, by names
        #: insertion id -> the sort key of its fact's node (:meth:`place`), read by every
        #: manager this scheme makes
        self._placed: dict[int, tuple] = {}
        self._node_keys: dict = {}       # node -> node_key(node), one tuple per node

    # -- contexts ------------------------------------------------------------------------
    def shared_context(self) -> BDDContext:
        return BDDContext(reorder=self.reorder, placed=self._placed)

    def place(self, seq: int, node) -> None:
        """Base insertion ``seq`` is a fact of ``node``: its variable takes a level among
        those of the node's other base facts in every manager of this scheme
        (:class:`~provenance.bdd.BDDContext`, ``placed``). On the region query over a
        100-sensor field of radius 25 this took the run from 5.9 to 0.9 s and the
        provenance from 2,575 to 202 bytes per tuple."""
        key = self._node_keys.get(node)
        if key is None:
            key = self._node_keys[node] = node_key(node)
        self._placed[seq] = key

    def context(self, node: Any, shared: BDDContext) -> AbsorptionContext:
        return AbsorptionContext(shared, node)

    def must_rebuild(self, src_ctx, dst_ctx) -> bool:
        """A BDD must be rebuilt in the receiver's manager unless both nodes share one
        (nodes of one worker always do; in-process workers do when the driver shares one
        manager among them). The receiver restricts it by its own zeroed variables on pick
        either way."""
        return src_ctx.bdd is not dst_ctx.bdd

    # -- algebra -------------------------------------------------------------------------
    def one(self, ctx):
        return ctx.bdd.true

    def zero(self, ctx):
        return ctx.bdd.false

    def join(self, ctx, a, b):
        return _and(ctx.bdd, a, b)

    def combine(self, ctx, a, b):
        return _or(ctx.bdd, a, b)

    def is_zero(self, ctx, a) -> bool:
        return _is_false(ctx.bdd, a)

    def equal(self, ctx, a, b) -> bool:
        ta, tb = type(a), type(b)
        if ta is Alternatives or tb is Alternatives:
            return a is b
        if ta is tuple or tb is tuple:
            if ta is tb:
                return a == b
            if ta is Zeroing or tb is Zeroing:
                return False
            return as_function(ctx.bdd, a) == as_function(ctx.bdd, b)
        return a == b

    def sample(self, ctx, rng):
        """A random positive formula over ``x0..x5`` (law tests): a :data:`Cube` (one
        derivation) a third of the time, else a BDD (possibly a cube, true or false)."""
        if rng.random() < 1 / 3:
            return as_cube(rng.sample(range(6), rng.randint(0, 3)))
        names = [var_name(i) for i in range(6)]
        sets = [rng.sample(names, rng.randint(1, 3)) for _ in range(rng.randint(0, 3))]
        return ctx.bdd.from_sets(sets)

    def function(self, ctx, a) -> Function:
        """The BDD of a provenance value (a :data:`Cube` is built in ``ctx``'s manager)."""
        return as_function(ctx.bdd, a)

    # -- base facts ----------------------------------------------------------------------
    def base(self, ctx, fact, seq: int):
        """The variable ``x<seq>`` of base insertion ``seq`` (the driver's ledger numbers
        insertions across the whole run, so names agree in every manager), as the
        :data:`Cube` ``(seq,)``."""
        self._facts[seq] = fact
        return (seq,)

    def aggregate(self, ctx, fact):
        """The variable of an aggregate result ``fact``: a fresh base of its own (Liu et
        al. 2009, Sec. 6), as the :data:`Cube` of its (negative) id, which
        :meth:`describe` shows as ``aggregate p(t)``."""
        ident = ctx.aggregate_var(fact)
        self._facts[ident] = (intern("=" + fact[0]), fact[1])
        return (ident,)

    def absence(self, ctx, fact):
        """A fresh variable for a new absence ``fact = ("!q", t)`` (named
        ``n<node>.<k>``; :meth:`describe` shows it as ``not q(t)``)."""
        name, f = ctx.absence_var()
        self._facts[name] = fact
        return f

    def absence_ends(self, ctx, fact, stored):
        """The absence's variable dies: it is remembered as zeroed at this node (a late
        derivation holding it is restricted away on arrival) and the delta is the
        :class:`Zeroing` of it, with the lost part unless MinShip filters the deletions
        it forwards (as :meth:`pick` does for a base deletion)."""
        names = frozenset(ctx.bdd.support(stored))
        ctx.add_zeroed(names)
        return Zeroing(names) if ctx.minship else Zeroing(names, stored)

    # -- transitions ---------------------------------------------------------------------
    def fresh_type(self, ctx) -> type | None:
        """A single derivation (a :data:`Cube`) of an absent fact is stored and fired as
        it came while the node has zeroed no insertion id and keeps no index of its facts
        by variable (:attr:`AbsorptionContext.holders`, which :meth:`pick` would extend):
        :meth:`pick`'s first case."""
        return tuple if not ctx.zids and ctx.holders is None else None

    def pick(self, ctx, fact, stored, sign: int, ann, owned: bool = False):
        """Insertion: store ``old | new`` (``new`` restricted by the zeroed variables),
        fire the monotone difference of ``new`` and ``old`` when not false. Deletion:
        remember the zeroed variables, zero the stored provenance, fire a :class:`Zeroing`
        with the lost part when something was lost; never waits (Liu Alg. 1 lines 11-35,
        made order-insensitive)."""
        bdd = ctx.bdd
        if sign > 0:
            if type(ann) is tuple:                        # one derivation
                if ctx.zids and not ctx.zids.isdisjoint(ann):
                    return (None, NO_FIRE) if stored is None else (stored, NO_FIRE)
                if stored is None:
                    if ctx.holders is not None:
                        _hold(ctx, fact, ann)
                    return ann, ann
                if type(stored) is tuple:
                    if _subset(stored, ann):              # absorbed: a subset test
                        return stored, NO_FIRE
                elif bdd.cube_function(ann) <= stored:    # absorbed (C speed)
                    return stored, NO_FIRE
                if ctx.holders is not None:
                    _hold(ctx, fact, ann)
                new = _or(bdd, stored, ann)               # not absorbed: itself is new
                if type(new) is not tuple:
                    ctx.formulas.add(fact[0])
                return new, ann
            if ctx.zeroed:
                ann = ctx.restrict(ann)
            if stored is None:
                if ann == bdd.false:
                    return None, NO_FIRE
                ctx.formulas.add(fact[0])
                if ctx.holders is not None:
                    _hold(ctx, fact, ann)
                return ann, ann
            old = as_function(bdd, stored)
            if ann <= old:                                # absorbed (Leq: no node built)
                return stored, NO_FIRE
            ctx.formulas.add(fact[0])
            if ctx.holders is not None:
                _hold(ctx, fact, ann)
            if bdd.known_cube(ann) is not None:           # one derivation, not absorbed
                return old | ann, ann
            return old | ann, bdd.monotone_diff(ann, old)
        names = ann.names if isinstance(ann, Zeroing) else self.ship_zeroed_names(ctx, ann)
        ctx.add_zeroed(names)
        if stored is None:
            return None, NO_FIRE
        new = ctx.restrict(stored)
        if new is stored or (type(stored) is not tuple and new == stored):
            return stored, NO_FIRE
        gone = _is_false(bdd, new)
        if ctx.minship:        # MinShip names what is dead in what it shipped (ship_attach)
            return (None if gone else new), Zeroing(names)
        hit = self.ship_dead_names(ctx, stored)
        old = as_function(bdd, stored)
        return (None if gone else new), Zeroing(hit, old & ~as_function(bdd, new))

    def derive(self, ctx, sign: int, head, parts: list, delta_pos: int) -> Iterable:
        """Insertion: the AND of the body's provenance (delta at ``delta_pos``), if not
        false. Deletion: the :class:`Zeroing` again, if its lost part joined with the other
        body facts is not false (provenance that was never shipped needs no deletion);
        under MinShip always, as MinShip applies that filter per destination
        (:meth:`ship_attach`)."""
        if sign > 0:
            if len(parts) == 2:                          # the common shape of a rule
                u = _pair_union(parts[0][2], parts[1][2])
                if u is not None:
                    return (u,)
            acc = None
            for p in parts:
                a = p[2]
                if type(a) is not tuple:
                    break
                acc = a if acc is None else _union(acc, a)
            else:                                        # single derivations: a union
                return (acc,)
            bdd = ctx.bdd
            acc = bdd.and_all([as_function(bdd, p[2]) for p in parts])
            # stored and shipped provenance is positive and not false, so its AND is not
            # false either (all variables true satisfies it); checked once, not per part
            return () if acc == bdd.false else (acc,)
        z = parts[delta_pos][2]
        if ctx.minship:               # MinShip filters by what it shipped (ship_attach)
            return (z,)
        bdd = ctx.bdd
        acc = z.lost if z.lost is not None else bdd.true
        for j, (_, _, value) in enumerate(parts):
            if j != delta_pos:
                acc = _and(bdd, acc, value)
                if _is_false(bdd, acc):
                    return ()
        return (Zeroing(z.names, acc),)

    def derive_pair(self, ctx):
        """:meth:`derive` of an insertion from two single derivations: their union
        (None for anything else, which :meth:`derive` handles)."""
        return _pair_union

    # -- wire ----------------------------------------------------------------------------
    def serialize(self, ctx, ann):
        if isinstance(ann, Zeroing):
            wire = self._zero_wire.get(ann.names)
            if wire is None:
                if len(self._zero_wire) >= 4096:
                    self._zero_wire.clear()
                wire = self._zero_wire[ann.names] = [sorted(
                    (insertion_id(v) if insertion_id(v) is not None else v
                     for v in ann.names), key=_name_key)]
            return wire
        if type(ann) is tuple:                            # a chain of its variables
            return ctx.bdd._chain_form(ann[::-1])
        return ctx.bdd.serialize(ann)

    def wire_size(self, ctx, anns, packed_size):
        """Single derivations (tuples of wire names) counted in bulk: a chain's encoding is
        its names' plus :func:`~provenance.bdd.chain_overhead` of their number; any other
        annotation is serialized."""
        cubes = [a for a in anns if type(a) is tuple]
        rest = [a for a in anns if type(a) is not tuple] if len(cubes) < len(anns) else ()
        return (packed_size(cubes)
                + chains_overhead([len(c) for c in cubes])
                + (super().wire_size(ctx, rest, packed_size) if rest else 0))

    def deserialize(self, ctx, data):
        if data is not None and len(data) == 1:
            return Zeroing(frozenset(var_name(v) if isinstance(v, int) else v
                                     for v in data[0]))
        ids = chain_ids(data)
        if ids is not None:                               # one derivation: no BDD built
            zids = ctx.zids
            return ctx.bdd.false if zids and not zids.isdisjoint(ids) else as_cube(ids)
        return ctx.bdd.deserialize(data, zeroed=ctx.zeroed)

    # -- shipping algebra (MinShip, engine.minship; Liu Sec. 5) ----------------------
    def ship_attach(self, ctx) -> None:
        """A MinShip stage now sends the updates of ``ctx``'s node. MinShip forwards a
        derived deletion to a destination only if the derivation it shipped there depends
        on the zeroed variables (Liu Alg. 3), so :meth:`pick` and :meth:`derive` stop
        computing the lost part of a deletion (``stored & ~new`` joined with the rule
        body), whose only use is that same filter when every derivation is shipped, and
        :meth:`pick` fires the deletion's own variables instead of the dead variables of
        the stored provenance (MinShip adds the dead variables of what it shipped).
        Measured on reachable, 100 nodes, 20 deletions (CPU time, A/B in alternating
        runs): the same 20,998 tuples shipped, 13-20% less time per deletion for the lost
        part, then 11-17% less (three runs each, 642,465 bytes either way) for the dead
        variables."""
        ctx.minship = True

    def zero_everywhere(self, ctx, ann, facts: Callable[[], Iterable]) -> list:
        """A node-wide zeroing (:data:`engine.node.EVERY_FACT`, sent by MinShip once
        per destination and step instead of one deletion per fact): remember its
        variables as zeroed at this node and return the facts whose stored provenance
        may depend on them (the index may also name a fact that no longer does, which the
        engine then zeroes to itself; it picks the deletion ``ann`` for each fact it
        holds). Deleting a base tuple sets its variable to false everywhere it occurs
        (Liu et al. 2009, Sec. 4).

        ``facts()`` gives the node's present facts as ``(pred, tuples, values)`` per
        relation (two parallel sequences: the facts and their stored provenance).
        Variables a node-wide zeroing has already swept from this node need no search
        (:attr:`AbsorptionContext.swept`). The others are searched by a scan of every
        fact (:func:`_scan`) as long as the node has scanned fewer than
        :data:`SCANS_BEFORE_INDEX` times, then in an index of the facts by their
        variables (:func:`_indexed`), built once and kept up by every later insertion. A
        rent-or-buy choice: a scan tests each single derivation in the interpreter's C
        loops, at about a quarter of the cost of indexing it, but pays again at every
        zeroing that needs a search; the index is paid once, then costs each derivation
        a fact gains one more entry per variable."""
        names = self.ship_zeroed_names(ctx, ann)
        ctx.add_zeroed(names)
        names = frozenset(names - ctx.swept)
        if not names:
            return []
        ctx.swept |= names
        if ctx.holders is None and ctx.scans < SCANS_BEFORE_INDEX:
            ctx.scans += 1
            return _scan(ctx, facts(), names)
        return _indexed(ctx, facts, names)

    def ship_restrict(self, ctx, f, names=()):
        """``f`` (a provenance or an :class:`Alternatives` buffer) with the node's zeroed
        variables (and ``names``) false; None if nothing is left."""
        if not names and not ctx.any_zeroed:
            return f
        bdd = ctx.bdd
        zeroed = ctx.zeroed
        extra = [v for v in names if v not in zeroed] if names else ()
        if extra:
            built: list = []
            more = frozenset(extra)

            def cube():
                if not built:
                    built.append(bdd.positive_cube(extra) & ctx.zcube())
                return built[0]

            def dead(name):
                return name in zeroed or name in more
            ids = ctx.zids.union(i for i in map(insertion_id, extra) if i is not None)
        elif zeroed:
            cube, ids, dead = ctx.zcube, ctx.zids, zeroed.__contains__
        else:
            return f
        false = bdd.false
        if type(f) is Alternatives:
            fs, sets = [], []
            for h, s in zip(f.fs, f.ids):
                if s is not None:                     # a single derivation: all or nothing
                    if ids.isdisjoint(s):
                        fs.append(h)
                        sets.append(s)
                    continue
                g = zero_by(bdd, h, cube, ids, dead)
                if g != false:
                    fs.append(g)
                    sets.append(_ids_tuple(bdd.cube_ids(g)))
            return None if not fs else fs[0] if len(fs) == 1 else Alternatives(fs, sets)
        f = zero_by(bdd, f, cube, ids, dead)
        return None if _is_false(bdd, f) else f

    def ship_absorbs(self, ctx, have, new) -> bool:
        """True if ``new`` adds no derivation to ``have`` (``new → have``). Against an
        :class:`Alternatives` buffer: ``new`` implies one of them, which is exact when
        ``new`` is a single derivation (a conjunction of variables, all lazy MinShip
        meets: it implies an OR of monotone functions iff it implies one of them) and
        only sufficient otherwise (the buffer then keeps a redundant entry)."""
        bdd = ctx.bdd
        if type(new) is tuple:                   # one derivation (what lazy MinShip meets)
            if type(have) is tuple:
                return _subset(have, new)
            if type(have) is Alternatives:
                return _cube_absorbed(bdd, new, have)
        mine = set(new) if type(new) is tuple else bdd.cube_ids(new)
        if type(have) is Alternatives:
            if mine is None:
                return _formula_absorbed(bdd, new, have)
            for h, s in zip(have.fs, have.ids):
                if mine.issuperset(s) if s is not None else (as_function(bdd, new) <= h):
                    return True
            return False
        if mine is None:
            return new <= as_function(bdd, have)
        theirs = have if type(have) is tuple else bdd.known_cube(have)
        if theirs is not None:
            return mine.issuperset(theirs)
        return as_function(bdd, new) <= have

    def ship_restricts(self, ctx) -> bool:
        """Whether :meth:`ship_restrict` without ``names`` may change a provenance at this
        node now, i.e. whether some variable is zeroed here. MinShip asks once per step
        instead of calling :meth:`ship_restrict` on every derivation it is handed."""
        return ctx.any_zeroed

    def ship_verdict(self, ctx, shipped, have, new, lazy: bool) -> int:
        """What MinShip does with ``new``, a derivation of a fact whose record towards a
        destination is ``shipped`` (``S``) and ``have`` (``H``, ``shipped`` itself when
        nothing is buffered).

        Returns
        -------
        int
            :data:`~provenance.base.SHIP_ABSORBED` if ``have`` absorbs it
            (:meth:`ship_absorbs`); else, when ``lazy``,
            :data:`~provenance.base.SHIP_NOW` if it absorbs ``shipped`` (its base tuples
            are a subset of those shipped); else :data:`~provenance.base.SHIP_BUFFER`.

        Notes
        -----
        The two tests of Liu et al. 2009, Sec. 5 (BatchShipLazy) in one call. Between
        single derivations (all lazy MinShip meets) a record with nothing buffered needs
        one subset test: ``S`` absorbs ``new`` only if it is no longer, and ``new``
        absorbs ``S`` only if it is shorter. The two :meth:`ship_absorbs` calls this
        replaces took a third of MinShip's time in a line profile of its ``send``
        (reachable on a dense 150-node topology).
        """
        if type(new) is tuple and type(shipped) is tuple:
            if have is shipped:
                if len(shipped) <= len(new):
                    return SHIP_ABSORBED if set(new).issuperset(shipped) else SHIP_BUFFER
                return SHIP_NOW if lazy and set(shipped).issuperset(new) else SHIP_BUFFER
            if type(have) is Alternatives and have.ids is have.fs:    # all single ones
                if _cubes_absorb(new, have.fs):
                    return SHIP_ABSORBED
                return SHIP_NOW if lazy and _subset(new, shipped) else SHIP_BUFFER
        if self.ship_absorbs(ctx, have, new):
            return SHIP_ABSORBED
        if lazy and self.ship_absorbs(ctx, new, shipped):
            return SHIP_NOW
        return SHIP_BUFFER

    def ship_merge(self, ctx, have, new):
        """Add the derivations ``new`` to the buffer ``have``: an :class:`Alternatives`
        list, not an OR (the OR of a few path conjunctions is a large BDD in a fixed
        variable order, and MinShip only asks whether something is absorbed, what is
        left after zeroing, and for one derivation). An :class:`Alternatives` ``have`` is
        extended in place and returned (MinShip replaces its record's buffer with the
        result either way)."""
        ids = new if type(new) is tuple else _ids_tuple(ctx.bdd.cube_ids(new))
        if type(have) is Alternatives:
            have.append(new, ids)
            return have
        return Alternatives([have, new], [_ids_tuple(_cube_of(ctx.bdd, have)), ids])

    def ship_value(self, ctx, have):
        """The provenance a buffer stands for: the OR of its alternatives."""
        if type(have) is Alternatives:
            bdd = ctx.bdd
            return bdd.disj(as_function(bdd, h) for h in have.fs)
        return have

    def ship_one(self, ctx, f):
        """One derivation of ``f`` (of the first alternative of a buffer): the conjunction
        of a minimal satisfying variable set
        (:meth:`~provenance.bdd.BDDContext.one_prime`). Lazy MinShip ships these."""
        if type(f) is Alternatives:
            f = f[0]
        if type(f) is tuple:
            return f
        return ctx.bdd.one_prime(f)

    def ship_diff(self, ctx, new, old):
        """The derivations of ``new`` not absorbed by ``old`` (monotone); None if none."""
        bdd = ctx.bdd
        d = bdd.monotone_diff(as_function(bdd, self.ship_value(ctx, new)),
                              as_function(bdd, old))
        return None if d == bdd.false else d

    def ship_zeroed_names(self, ctx, ann) -> frozenset:
        """The variables a deletion's annotation sets to false."""
        if isinstance(ann, Zeroing):
            return ann.names
        if type(ann) is tuple:
            return frozenset(map(var_name, ann))
        return frozenset(ctx.bdd.support(ann))

    def ship_dead_names(self, ctx, f) -> frozenset:
        """The variables of ``f`` this node has seen zeroed.

        A known single derivation compares insertion ids. Otherwise, while the node has
        seen few variables zeroed, each is tested (``f`` depends on ``v`` iff ``forall v. f
        != f``: one CUDD call, about 0.7 µs), because ``dd``'s support walks every declared
        variable of the manager (measured on this machine: 28 µs with 400 variables,
        156 µs with 8,000, for a 1,215-node BDD).
        """
        bdd = ctx.bdd
        known = f if type(f) is tuple else bdd.known_cube(f)   # compare x-variable ids
        if known is not None:
            return frozenset(var_name(i) for i in ctx.zids.intersection(known))
        zeroed = ctx.zeroed
        if len(zeroed) <= 25 + bdd.num_vars // 50:
            return frozenset(v for v in zeroed if bdd.zero_all(f, bdd.var(v)) != f)
        return frozenset(v for v in bdd.support(f) if v in zeroed)

    def ship_zeroing(self, ctx, names) -> "Zeroing":
        """A deletion annotation zeroing ``names``."""
        return Zeroing(frozenset(names))

    # -- reading provenance (--why) ------------------------------------------------------
    def describe(self, name: str, loc: Callable[[str], int | None] | None = None,
                 show: Callable[[str, tuple], str] | None = None) -> str:
        """``link(@a,b)`` for a base variable this scheme handed out, ``not q(@a,b)`` for
        the variable of an absence, ``aggregate m(@a,b,4)`` for an aggregate result's,
        else the name. ``show(pred, values)``, if given, prints the fact (instead of
        :func:`~provenance.bdd.format_fact` with ``loc``)."""
        key = insertion_id(name)
        fact = self._facts.get(name if key is None else key)
        if fact is None:
            return name
        pred, tup = fact
        prefix = {"!": "not ", "=": "aggregate "}.get(pred[:1], "")
        pred = pred[1:] if prefix else pred
        if show is not None:
            return prefix + show(pred, tup)
        return prefix + format_fact(pred, tup, loc(pred) if loc else None)

    def explain(self, ctx, stored, loc: Callable[[str], int | None] | None = None) -> str:
        """The minimal sum-of-products of a provenance over base tuples, e.g.
        ``link(@a,b) ∧ link(@b,c) ∨ link(@a,c)``; ``false`` for None. What a node
        stores may be partial under lazy MinShip; ``psn run --why`` prints a fact's
        complete provenance with :meth:`explain_sets` (:mod:`engine.why`)."""
        if stored is None:
            return "false"
        return ctx.bdd.format(as_function(ctx.bdd, stored), lambda v: self.describe(v, loc))

    def ship_alternatives(self, ctx, have) -> list:
        """The alternatives of a MinShip record's ``H`` (an :class:`Alternatives` buffer
        or one provenance) as a list of provenances, each a :data:`Cube` or a BDD, for
        reading what is buffered (:meth:`engine.minship.MinShip.unshipped`)."""
        return list(have.fs) if type(have) is Alternatives else [have]

    def explain_sets(self, sets: Iterable[frozenset],
                     loc: Callable[[str], int | None] | None = None,
                     show: Callable[[str, tuple], str] | None = None) -> str:
        """:meth:`explain` for a provenance given by its minimal variable sets (as
        :meth:`minimal_sets` gives them; ``psn run --why`` computes a fact's complete
        provenance so, :mod:`engine.why`): shorter products first, then by their
        variables, each product's base tuples in insertion order, then the variables the
        nodes made (aggregate results, absences) by what they describe, so that one
        formula prints one way whatever the manager's variable order and the order in
        which the nodes made their variables (which follows the delivery order);
        ``false`` without a set, ``true`` for the empty one. ``show`` prints a fact, as
        for :meth:`describe`."""
        def key(v: str) -> tuple:
            i = insertion_id(v)
            return (0, i, "") if i is not None and i >= 0 else \
                (1, 0, self.describe(v, loc, show))
        products = sorted((sorted(s, key=key) for s in sets),
                          key=lambda p: (len(p), [key(v) for v in p]))
        if not products:
            return "false"
        if not products[0]:
            return "true"
        return " ∨ ".join(" ∧ ".join(self.describe(v, loc, show) for v in p)
                          for p in products)

    def minimal_sets(self, ctx, stored) -> list[frozenset]:
        """The minimal satisfying variable sets of a stored provenance (PosBool)."""
        if stored is None:
            return []
        if type(stored) is tuple:                        # one derivation: itself
            return [frozenset(map(var_name, stored))]
        return ctx.bdd.minimal_sop(stored)


def _hold(ctx: AbsorptionContext, fact, ann) -> None:
    """Index ``fact`` under the variables of ``ann``, a derivation it gains
    (:attr:`AbsorptionContext.holders`).

    A fact derived again (after a link flap, say) is filed again under every variable of
    its new derivation, so the lists of the variables that live long grow with the run.
    Once as many entries were appended as the index held after its last sweep (at first
    :data:`HELD_SWEEP_AT`), every list drops its repeats, first occurrences kept in order
    (:func:`_sweep_holders`): O(1) per append amortized, and the index holds at most about
    twice as many entries as the distinct (variable, fact) pairs ever filed."""
    ids = _cube_of(ctx.bdd, ann)
    if ids is None:                     # not a conjunction of x-variables: ask its support
        ids = [insertion_id(v) if insertion_id(v) is not None else v
               for v in ctx.bdd.support(ann)]
    holders = ctx.holders
    for i in ids:
        holders[i].append(fact)
    ctx.held_left -= len(ids)
    if ctx.held_left <= 0:
        _sweep_holders(ctx)


def _sweep_holders(ctx: AbsorptionContext, present: dict | None = None) -> None:
    """Drop the repeats of every list of :attr:`AbsorptionContext.holders` and set the
    appends left before the next sweep to the entries left (at least
    :data:`HELD_SWEEP_AT`).

    With ``present`` (``(pred, t) -> stored provenance`` of every fact the node holds
    now), also drop the entries of facts that are gone, or whose provenance is a single
    derivation without the list's variable (a BDD's entry is kept), and the lists left
    empty: a variable no fact holds any more (a deleted link's that no node-wide zeroing
    swept here, an aggregate result's that changed) leaves nothing behind."""
    holders = ctx.holders
    total = 0
    for key in list(holders):
        held = holders[key]
        if present is not None:
            held[:] = [f for f in dict.fromkeys(held) if _holds(present.get(f), key)]
            if not held:
                del holders[key]
                continue
        elif len(held) > 1:
            held[:] = dict.fromkeys(held)
        total += len(held)
    ctx.held_size = total
    ctx.held_left = max(HELD_SWEEP_AT, total)


def _holds(stored, key) -> bool:
    """Whether a fact stored with provenance ``stored`` (None: not present) may depend on
    the variable ``key`` (an insertion id, or a name)."""
    return stored is not None and (type(stored) is not tuple or key in stored)


def _scan(ctx: AbsorptionContext, facts: Iterable, names: frozenset) -> list:
    """The facts ``(pred, t)`` among ``facts`` (``(pred, tuples, values)`` per relation)
    whose provenance has a variable of ``names``: a relation in which the node never
    stored a BDD is tested in one C pass (:func:`_cubes_holding`), any other by
    :func:`_depending`."""
    ids = frozenset(i for i in map(insertion_id, names) if i is not None)
    found: list = []
    for pred, tuples, values in facts:
        if pred in ctx.formulas:
            found.extend(_depending(ctx.bdd, pred, tuples, values, ids, names))
        else:
            found.extend((pred, t) for t in _cubes_holding(tuples, values, ids))
    return found


def _indexed(ctx: AbsorptionContext, facts: Callable[[], Iterable], names: frozenset
             ) -> list:
    """The facts that :attr:`AbsorptionContext.holders` files under ``names`` (taken out
    of it), the index built first from ``facts()`` if the node has none yet. Once at least
    half as many entries were appended as the index held after its last sweep (or
    :data:`HELD_SWEEP_AT` less half of that), the index is first swept against the
    node's present facts (:func:`_sweep_holders`): O(1) per entry, amortized."""
    if ctx.holders is None:
        ctx.holders = defaultdict(list)
        for pred, tuples, values in facts():
            for t, f in zip(tuples, values):
                _hold(ctx, (pred, t), f)
    elif ctx.held_left <= ctx.held_size // 2:
        _sweep_holders(ctx, {(pred, t): f for pred, tuples, values in facts()
                            for t, f in zip(tuples, values)})
    held: dict = {}
    for name in sorted(names):          # one order in every process (str hashing)
        key = insertion_id(name)
        held.update(dict.fromkeys(ctx.holders.pop(name if key is None else key, ())))
    return list(held)


def _depending(bdd: BDDContext, pred: str, tuples, values, ids: frozenset,
               names: frozenset) -> list:
    """The facts ``(pred, t)`` among ``tuples`` whose provenance (the parallel ``values``)
    has a variable of ``names`` (``ids``: their insertion ids). The single derivations
    (tuples of insertion ids) are tested in C loops (``compress`` over ``map``), the other
    values, BDDs, one by one by their support."""
    single = list(map(isinstance, values, repeat(tuple)))
    if all(single):
        return [(pred, t) for t in _cubes_holding(tuples, values, ids)]
    found = [(pred, t) for t in _cubes_holding(compress(tuples, single),
                                               compress(values, single), ids)]
    others = list(map(not_, single))
    for t, v in zip(compress(tuples, others), compress(values, others)):
        if not names.isdisjoint(bdd.support(v)):
            found.append((pred, t))
    return found


def _cubes_holding(tuples: Iterable, cubes: Iterable, ids: frozenset) -> Iterable:
    """The items of ``tuples`` whose cube (the parallel ``cubes``) has an id of ``ids``."""
    if not ids:
        return ()
    if len(ids) == 1:                                   # a membership test is cheaper
        (i,) = ids
        return compress(tuples, map(contains, cubes, repeat(i)))
    return compress(tuples, map(not_, map(ids.isdisjoint, cubes)))


def _cube_absorbed(bdd: BDDContext, new: tuple, have: Alternatives) -> bool:
    """True if the :data:`Cube` ``new`` implies one alternative of ``have``: a subset test
    against each single derivation (:func:`_cubes_absorb`), CUDD's Leq against a BDD."""
    ids = have.ids
    if ids is not have.fs and None in ids:  # some alternative is not a single derivation
        mine, f = set(new), as_function(bdd, new)
        return any(mine.issuperset(s) if s is not None else f <= h
                   for h, s in zip(have.fs, ids))
    return _cubes_absorb(new, ids)


def _cubes_absorb(new: tuple, cubes: list) -> bool:
    """True if the :data:`Cube` ``new`` has every id of one of ``cubes`` (implies it).
    One subset test per cube, without first comparing lengths: a longer cube fails at its
    first id that ``new`` lacks. On the buffers of reachable on a dense 100-node topology
    (61,637 tests, a microbenchmark of two rounds) the loop was as fast without the test in
    the first round (0.103 against 0.105 s) and a third faster in the second (0.067 against
    0.099 s)."""
    mine = set(new).issuperset
    for s in cubes:
        if mine(s):
            return True
    return False


def _formula_absorbed(bdd: BDDContext, new: Function, have: Alternatives) -> bool:
    """True if ``new`` (a BDD, not a single derivation) implies one alternative of
    ``have``. ``new`` implies the conjunction of a single derivation iff it implies each
    of its variables: that is asked of CUDD once per variable (Leq against the variable,
    no node built, memoized for the call) and stops at the first variable ``new`` does
    not imply, instead of building each derivation's BDD for one Leq (eager MinShip's
    flushes on ``ts100`` with every link: 21 of 150 s went to those tests)."""
    implied: dict = {}
    for h, s in zip(have.fs, have.ids):
        if s is None:
            if new <= h:
                return True
            continue
        for i in s:
            e = implied.get(i)
            if e is None:
                e = implied[i] = new <= bdd.id_var(i)
            if not e:
                break
        else:
            return True
    return False


def _cube_of(bdd: BDDContext, a) -> tuple | frozenset | None:
    """The insertion ids of a single derivation (:data:`Cube` or BDD), else None."""
    return a if type(a) is tuple else bdd.cube_ids(a)


def _name_key(v):
    return (0, v, "") if isinstance(v, int) else (1, 0, v)


def _registered() -> AbsorptionScheme:
    """The scheme ``get_scheme("absorption")`` returns: lazy MinShip by default (Liu Sec. 5)
    and a fixed variable order (lazy MinShip ships single derivations, conjunctions whose
    order-independent wire form rebuilds fastest in managers that share one order)."""
    return AbsorptionScheme(reorder=False, ship="lazy")


# Registered by name in ``provenance`` (``get_scheme("absorption")``). Shipping every
# derivation grows exponentially with the graph, so the registered factory ships lazily
# (``engine.minship``); ``AbsorptionScheme()`` objects built directly ship every
# derivation unless ``ship=`` is given.
SCHEME = _registered
