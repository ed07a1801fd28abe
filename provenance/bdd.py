"""Absorption-provenance BDDs on CUDD: a per-worker manager, variable naming, zeroing,
a compact wire form, and minimal sum-of-products printing (Liu et al., ICDE 2009, Sec. 4).

Role: the building blocks the ``absorption`` annotation scheme is made of.

* :func:`var_name` / :class:`InsertionRegistry`: one Boolean variable per base-tuple
  *insertion*, named ``x<insertion id>`` with ids handed out monotonically by whoever
  injects the insertion (the driver). A re-inserted tuple gets a new variable, so a
  deletion (the variable set to false) is final and can never be undone by a late message:
  this is what makes zeroing order-insensitive under any delivery order. Every manager derives
  the same name for the same insertion, so independent managers agree on names. A node
  names the variables it makes itself (an aggregate result's) ``x<negative id>``, with
  :func:`node_var_id`: unique in the run, without asking the driver.
* :class:`BDDContext`: one ``dd.cudd`` manager (one per process and thread: CUDD is not
  thread-safe), with AND, OR, the difference ``new & ~old``, ``is_false``, zeroing with
  ``let({x: False})`` (not ``dd.cudd.restrict``, which is the generalized cofactor),
  serialization and minimal SOP.
* :class:`ZeroSet`: the per-node set of variables seen zeroed; every incoming provenance is
  restricted by it, so that the result does not depend on delivery order.

Manager policy:

* ``initial_cache_size`` is lowered to 2**10: an empty manager costs ~0.1 MiB instead of
  ~8 MiB, which matters with one manager per worker and many workers per machine (the
  in-process driver shares one manager among its workers by default, see
  ``engine.Network(contexts=)``).
* Dynamic reordering is **off** by default. Variables are kept in one static order in every
  manager (a new ``x<i>`` is inserted at its place among the declared ones): grouped by the
  node of their base fact when the manager is told it (``placed``), then by insertion id,
  so all managers share one relative order: rebuilding a received BDD then follows the
  sender's order, runs are reproducible, and no sifting pause hits the engine loop.
  ``BDDContext(reorder=True)`` turns CUDD's sifting on (new variables are then appended);
  correctness never depends on the order (the wire form is order-independent). Sifting
  shrinks large reachability provenance (``bench/bench_bdd.py``), but the scheme registered
  as ``absorption`` keeps it off: lazy MinShip ships single derivations, whose wire form
  rebuilds fastest in managers that share one variable order.

Wire form (msgpack-able, ints only apart from non-standard variable names)::

    [names, nodes, root]

``names`` lists the variables used, each as the int ``i`` for ``x<i>`` or as a str otherwise;
``nodes`` is a flat list of triples ``var, low, high`` in bottom-up order (children first);
a reference ``r`` denotes node ``r >> 1`` (node 0 is the constant true, node ``k >= 1`` is
triple ``k - 1``), complemented when ``r & 1``. So ``[[], [], 0]`` is true and
``[[], [], 1]`` is false. The node list mirrors CUDD's complement edges and is rebuilt
with ``ite`` in the receiver's manager whatever its variable order.

Deliberately not here: the engine's annotation protocol (``provenance/absorption.py``),
MinShip and aggregate selection (the engine's operators), ``pickle`` (``dd.cudd.Function``
does not pickle) and ``to_expr``/``add_expr`` (exponential blow-up on large BDDs).
"""

from __future__ import annotations

import bisect
import itertools
import re
import signal
import sys
import weakref
from typing import Callable, Iterable

import msgpack
import dd.cudd as _cudd

from ndlog.builtins import format_value
from ndlog.packing import packb
from ndlog.signals import STOPPING, held

__all__ = [
    "VAR_PREFIX", "var_name", "insertion_id", "format_fact", "InsertionRegistry",
    "BDDContext", "node_key", "ZeroSet", "WireError", "NotMonotoneError", "Function",
    "chain_ids", "chain_overhead", "chains_overhead", "node_var_id", "var_key",
]

Function = _cudd.Function

VAR_PREFIX = "x"

_UNKNOWN = object()

#: Default ``memory_estimate`` of a manager (see :class:`BDDContext`).
MEMORY_ESTIMATE = 2**26
_VAR_RE = re.compile(r"x(0|-?[1-9][0-9]*)\Z")


class WireError(ValueError):
    """A serialized BDD that is not well formed (bad reference, bad name table)."""


class NotMonotoneError(ValueError):
    """Minimal SOP was asked of a provenance that is not a positive (monotone) function."""


# ---------------------------------------------------------------------------------------
# variable naming


def var_name(insertion: int) -> str:
    """The variable of base-tuple insertion number ``insertion`` (Liu Sec. 4: P(t) of a base
    tuple is a variable, true while inserted, false once deleted).

    Parameters
    ----------
    insertion:
        A non-negative insertion id, unique per insertion across the whole run; or a
        negative id a node made for a variable of its own (an aggregate result's,
        :func:`node_var_id`), unique across the run too.

    Returns
    -------
    str
        ``"x<insertion>"``; every manager derives the same name.
    """
    if not isinstance(insertion, int) or isinstance(insertion, bool):
        raise ValueError(f"an insertion id is an int, got {insertion!r}")
    return f"{VAR_PREFIX}{insertion}"


def node_var_id(node, k: int) -> int:
    """The id of the ``k``-th variable (``k >= 1``) that ``node`` makes itself: a negative
    int no other node and no base insertion (whose ids are ``>= 0``) has, made without
    asking anyone (Szudzik's pairing of ``k`` and an injective code of the node: ``2n+1``
    for an int ``n >= 0``, else twice the msgpack bytes read as an int, plus 2; 0 for
    ``None``). Small for small nodes: node 7's first variable is ``-242``.

    Parameters
    ----------
    node:
        The node's id (an NDlog value), or None for a centralized run.
    k:
        The variable's number at that node, from 1.

    Returns
    -------
    int
        ``-(1 + pair(code(node), k))``.
    """
    if node is None:
        code = 0
    elif type(node) is int and node >= 0:
        code = 2 * node + 1
    else:       # msgpack's first byte is never 0 here (0 packs alone, as the int above)
        code = 2 * int.from_bytes(packb(node), "big") + 2
    pair = code * code + code + k if code >= k else k * k + code
    return -1 - pair


def insertion_id(name: str) -> int | None:
    """The insertion id of a variable named by :func:`var_name` (negative for a variable
    a node made, :func:`node_var_id`), else None."""
    m = _VAR_RE.match(name)
    return int(m.group(1)) if m else None


def var_key(name: str) -> tuple:
    """Sort key of variable names as explanations print them: base insertions by id, then
    the variables nodes made (aggregate results, :func:`node_var_id`) by their number,
    then any other name by name."""
    i = insertion_id(name)
    if i is None:
        return (2, 0, name)
    return (0, i, "") if i >= 0 else (1, -i, "")


def format_fact(pred: str, values: tuple, loc: int | None = None) -> str:
    """``pred(@a,b)``: a fact in NDlog syntax, ``@`` before argument ``loc``."""
    args = [("@" if i == loc else "") + format_value(v) for i, v in enumerate(values)]
    return f"{pred}({','.join(args)})"


class InsertionRegistry:
    """Allocates insertion ids and remembers which base tuple each variable stands for.

    Kept by whoever injects base updates (the driver). Ids grow monotonically from
    ``start``; inserting a tuple that is already live still allocates a new variable (its
    provenance is then the OR of both), and deleting a tuple returns *all* its live
    variables, each to be zeroed everywhere (Liu Sec. 4: deletion sets the variable false).
    """

    def __init__(self, start: int = 0):
        self._next = start
        self._facts: dict[str, tuple[str, tuple, int | None]] = {}
        self._live: dict[tuple[str, tuple], list[str]] = {}

    def insert(self, pred: str, values: tuple, loc: int | None = None) -> str:
        """Allocate the variable of a new insertion of ``pred(values)``; return its name."""
        name = var_name(self._next)
        self._next += 1
        self._facts[name] = (pred, tuple(values), loc)
        self._live.setdefault((pred, tuple(values)), []).append(name)
        return name

    def delete(self, pred: str, values: tuple) -> list[str]:
        """Forget the live insertions of ``pred(values)``; return their variables (maybe
        empty, when the tuple is not live)."""
        return self._live.pop((pred, tuple(values)), [])

    def live(self, pred: str, values: tuple) -> list[str]:
        """The variables of the live insertions of ``pred(values)``."""
        return list(self._live.get((pred, tuple(values)), ()))

    def fact(self, name: str) -> tuple[str, tuple]:
        """``(pred, values)`` of the insertion a variable stands for (KeyError if unknown)."""
        pred, values, _ = self._facts[name]
        return pred, values

    def describe(self, name: str) -> str:
        """``pred(@a,b)`` for a known variable, the name itself otherwise."""
        entry = self._facts.get(name)
        return format_fact(*entry) if entry else name

    @property
    def next_id(self) -> int:
        return self._next

    def __contains__(self, name: str) -> bool:
        return name in self._facts

    def __len__(self) -> int:
        return len(self._facts)


# ---------------------------------------------------------------------------------------
# zeroed variables


class ZeroSet:
    """The variables a node has seen zeroed (deleted insertions).

    A deletion is final (a re-insertion is a new variable), so restricting every incoming
    provenance by every variable ever seen zeroed is sound, and it makes a node's state
    independent of whether a deletion overtakes the insertions it cancels (Liu et al. 2009,
    Sec. 4, assumed FIFO channels instead).
    """

    __slots__ = ("_names",)

    def __init__(self, names: Iterable[str] = ()):
        self._names: set[str] = set(names)

    def add(self, names: Iterable[str]) -> set[str]:
        """Record ``names`` as zeroed; return those not seen before."""
        fresh = {n for n in names if n not in self._names}
        self._names |= fresh
        return fresh

    def __contains__(self, name: str) -> bool:
        return name in self._names

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def frozen(self) -> frozenset[str]:
        return frozenset(self._names)


# ---------------------------------------------------------------------------------------
# the manager


#: Node lists of the wire forms of cubes, by number of variables (shared, never mutated).
_CHAINS: dict[int, list[int]] = {}

def _chain_nodes(n: int) -> list[int]:
    """The node list of the wire form of a cube of ``n`` variables (shared: never mutate).
    Node j (1-based) tests ``names[j - 1]``; its low child is false, its high child node
    j - 1."""
    nodes = _CHAINS.get(n)
    if nodes is None:
        nodes = _CHAINS[n] = [x for j in range(1, n + 1) for x in (j - 1, 1, (j - 1) << 1)]
    return nodes


def chain_overhead(n: int) -> int:
    """Bytes the msgpack encoding of a cube's wire form takes beyond its list of names.

    Parameters
    ----------
    n:
        The cube's number of variables.

    Returns
    -------
    int
        The bytes of its node list, its root and the outer array's header: the encoding of
        :func:`chain_form`-like ``[names, nodes, root]`` less that of ``names``.
    """
    size = _CHAIN_OVERHEAD.get(n)
    if size is None:                    # an empty list packs to one byte
        size = _CHAIN_OVERHEAD[n] = len(msgpack.packb([[], _chain_nodes(n), n << 1])) - 1
    return size


_CHAIN_OVERHEAD: dict[int, int] = {}


def chains_overhead(lengths: list[int]) -> int:
    """The summed :func:`chain_overhead` of many cubes (a message's, which every transport
    counts), looked up in a table for cubes of fewer than 64 variables.

    Parameters
    ----------
    lengths:
        The cubes' numbers of variables.

    Returns
    -------
    int
        ``sum(chain_overhead(n) for n in lengths)``.
    """
    try:
        return sum(map(_SHORT_CHAINS.__getitem__, lengths))
    except IndexError:
        return sum(map(chain_overhead, lengths))


#: ``chain_overhead(n)`` for ``n < 64`` (:func:`chains_overhead`)
_SHORT_CHAINS = tuple(chain_overhead(n) for n in range(64))


def chain_ids(data) -> list[int] | None:
    """The insertion ids named by a wire form that is the chain of a conjunction of
    ``x``-variables (what :meth:`BDDContext.serialize` gives for one derivation), else
    None, also for anything malformed (which :meth:`BDDContext.deserialize` then rejects).
    msgpack hands arrays back as tuples, so the node list is compared as a list."""
    try:
        names, nodes, root = data
        n = len(names)
        if root != n << 1 or list(nodes) != _chain_nodes(n):
            return None
    except (TypeError, ValueError):
        return None
    for x in names:
        if type(x) is not int:
            return None
    return list(names)


#: Managers of contexts that were collected, kept until no Function refers to them.
_GRAVEYARD: list = []


def _bury(manager) -> None:
    _GRAVEYARD.append(manager)


def _sweep() -> None:
    """Free the buried managers that no Function refers to any more.

    ``dd.cudd.Function`` holds its manager strongly, but when Functions and their manager
    are collected together as cyclic garbage, the collector may clear a Function's
    reference first and free the manager while other Functions still hold CUDD nodes
    (``dd`` then reports "Still N nodes referenced upon shutdown" and the late
    dereferences touch freed memory). So a context's manager outlives the context: it is
    buried when the context is collected and freed here once only this list holds it (the
    list, the loop variable and ``getrefcount``'s argument: three references).
    """
    _GRAVEYARD[:] = [m for m in _GRAVEYARD if sys.getrefcount(m) > 3]


def node_key(node) -> tuple:
    """A sort key of a node value: one total order over ints, floats, strings and the
    rest (by ``repr``), the same in every process (for :class:`BDDContext`'s ``placed``)."""
    t = type(node)
    if t is int or t is float:
        return (0, node)
    return (1, node) if t is str else (2, repr(node))


class BDDContext:
    """One CUDD manager with the operations of absorption provenance (Liu Sec. 4.1).

    Parameters
    ----------
    reorder:
        Enable CUDD's dynamic reordering (sifting). Off by default: see the module docstring.
    initial_cache_size:
        CUDD's computed-table size; the default 2**10 keeps an empty manager near 0.1 MiB.
    memory_estimate:
        CUDD's soft memory bound (bytes; it caps the growth of the unique and computed
        tables, it is not a limit on the BDDs). Creating a manager takes time in proportion
        to it: ``dd.cudd``'s default of 1 GiB costs about 6 ms per manager, 64 MiB about
        0.3 ms (measured; 100 managers at 1 GiB were 0.77 s of a 100-node run).
    placed:
        ``insertion id -> node_key(node)`` (:func:`node_key`) for the base facts whose
        node is known, read when a variable is declared: placed variables take the levels
        of their node's facts (nodes in :func:`node_key` order, then ids), above every
        variable not placed (by id). Managers given the same map share one order. Without
        placements the levels follow insertion ids, so facts inserted late sit below every
        earlier one: the region query inserts the neighbour relation first and triggers
        sensors later, and the provenance of a region (which sensors and links join it
        to its seed) then grows with the ways the later variables can complete the
        earlier ones, where grouping a node's variables keeps it near a grid's width
        (Bryant 1986: an order that keeps related variables apart can make a BDD
        exponentially larger). Only speed, memory and the size of a BDD's wire form depend
        on the order, never a result.

    Notes
    -----
    Functions of one context must not be mixed with another's; cross managers through
    :meth:`serialize` / :meth:`deserialize`. Not thread-safe (CUDD is not).
    """

    #: Entries of the serialization cache (cleared when full).
    SER_CACHE = 1024
    #: Entries of the cube cache of :meth:`cube_ids` (the older half is dropped when full).
    #: Each keeps its BDD alive: on a 300-node dense topology the peak RSS was 623 / 649 /
    #: 697 / 788 MiB with 2**15 / 2**16 / 2**17 / 2**18 entries, and the walks of evicted
    #: cubes 2**16: 847,443, 2**18: 323,210 (1,480,920 derivations).
    CUBE_CACHE = 1 << 17
    #: Node count (both operands) from which :meth:`monotone_diff` takes the closure.
    PASS_LIMIT = 128
    #: Declared x-variables past which a placed variable is appended below the others, as
    #: an unplaced one is: CUDD inserts a variable at a level in time proportional to the
    #: variables below it, so placing every one costs time quadratic in their number
    #: (declaring 20,000 variables of 100 nodes: 1.38 s placed, 0.21 s by id; 40,000: 5.09
    #: s placed without this cap, 1.62 s with it).
    PLACED_UP_TO = 20_000

    def __init__(self, *, reorder: bool = False, initial_cache_size: int = 2**10,
                 memory_estimate: int = MEMORY_ESTIMATE, placed: dict | None = None):
        _sweep()
        # an exception inside CUDD's constructor (a handler's, for Ctrl-C, SIGTERM or an
        # experiment's time budget) leaves a half-made manager whose destructor prints an
        # error: the signal waits until the manager is made
        with held(STOPPING + (signal.SIGALRM,)):
            self.bdd = _cudd.BDD(memory_estimate=memory_estimate,
                                 initial_cache_size=initial_cache_size)
        weakref.finalize(self, _bury, self.bdd)
        self.bdd.configure(reordering=reorder)
        self.reorder = reorder
        self.true: Function = self.bdd.true
        self.false: Function = self.bdd.false
        #: the level keys (:meth:`_level_key`) of the declared x-variables, in level order
        self._keys: list[tuple] = []
        #: insertion id -> the sort key of its fact's node (``placed``), maybe shared
        self._placed: dict[int, tuple] = {} if placed is None else placed
        #: insertion id -> the level key each declared x-variable was given
        self._key_of: dict[int, tuple] = {}
        self._vars: dict[str, Function] = {}
        self._wire: dict[int, int | str] = {}     # CUDD variable index -> wire name
        self._names_at: dict[int, str] = {}       # CUDD variable index -> name
        self._by_wire: dict[int | str, Function] = {}
        self._ser_cache: dict[int, tuple[Function, list]] = {}
        #: int(f) -> (f, insertion ids of f's variables if f is a positive cube over
        #: x-variables, else None): see :meth:`cube_ids`
        self._csets: dict[int, tuple[Function, frozenset | None]] = {}
        self._true_key = int(self.true)

    # -- variables ------------------------------------------------------------------

    def var(self, name: str) -> Function:
        """The BDD of variable ``name``, declared on first use (at its insertion-id level)."""
        f = self._vars.get(name)
        if f is None:
            f = self._declare(name)
        return f

    def _declare(self, name: str, ident: int | None = _UNKNOWN) -> Function:
        if ident is _UNKNOWN:
            ident = insertion_id(name)
        if ident is not None and not self.reorder:
            key = self._level_key(ident)
            if key[0] == 0 and len(self._keys) >= self.PLACED_UP_TO:
                key = (1, ident)                           # appended, as unplaced
            level = bisect.bisect(self._keys, key)
            self.bdd.insert_var(name, level)
            self._keys.insert(level, key)
            self._key_of[ident] = key
        else:
            self.bdd.declare(name)
            if ident is not None:
                key = self._key_of[ident] = self._level_key(ident)
                bisect.insort(self._keys, key)
        return self._register(name, ident)

    def _level_key(self, ident: int) -> tuple:
        """The sort key of x-variable ``ident``'s level: the key it was declared with;
        before that, ``(0, node key, id)`` if placed, else ``(1, id)`` (see the class
        docstring). A placement told after the declaration changes nothing."""
        key = self._key_of.get(ident)
        if key is not None:
            return key
        where = self._placed.get(ident)
        return (1, ident) if where is None else (0, where, ident)

    def _register(self, name: str, ident: int | None = _UNKNOWN):
        """Remember a declared variable's Function and wire name; return the Function
        (``_wire`` maps CUDD's variable index, stable under reordering, to the wire name)."""
        f = self._vars[name] = self.bdd.var(name)
        if ident is _UNKNOWN:
            ident = insertion_id(name)
        wire = name if ident is None else ident
        if ident is not None:
            self._note_cube(int(f), f, frozenset((ident,)))
        index = self.bdd._index_of_var[name]
        self._wire[index] = wire
        self._names_at[index] = name
        self._by_wire[wire] = f
        return f

    def declared(self, name: str) -> bool:
        return name in self._vars

    @property
    def num_vars(self) -> int:
        return len(self._vars)

    # -- the algebra ----------------------------------------------------------------

    def and_(self, a: Function, b: Function) -> Function:
        """Join (Liu Fig. 6): ``a & b``."""
        return a & b

    def or_(self, a: Function, b: Function) -> Function:
        """Union and projection (Liu Fig. 6): ``a | b``; absorption is automatic."""
        return a | b

    def conj(self, fs: Iterable[Function]) -> Function:
        out = self.true
        for f in fs:
            out = out & f
        return out

    def positive_cube(self, names: Iterable[str]) -> Function:
        """The conjunction of the variables ``names`` (declared on first use), built from
        the lowest level up, so that each AND adds one node above the cube built so far:
        linear in the number of variables, where adding each one at the bottom of a long
        cube rebuilds it (quadratic)."""
        bdd = self.bdd
        fs = [self.var(name) for name in names]
        out = self.true
        for f in sorted(fs, key=lambda g: bdd.level_of_var(g.var), reverse=True):
            out = f & out
        return out

    def disj(self, fs: Iterable[Function]) -> Function:
        """The OR of ``fs``, combined pairwise (a balanced tree of ORs): the OR of many
        path conjunctions, one at a time, makes every step pay for the whole growing
        BDD; pairwise, most ORs are between small operands (eager MinShip's flush ORs
        hundreds of paths: on ``ts100`` with every link, this was the largest cost)."""
        fs = list(fs)
        if not fs:
            return self.false
        while len(fs) > 1:
            last = fs[-1] if len(fs) & 1 else None
            fs = [fs[i] | fs[i + 1] for i in range(0, len(fs) - 1, 2)]
            if last is not None:
                fs.append(last)
        return fs[0]

    def diff(self, new: Function, old: Function) -> Function:
        """``new & ~old``: what a new derivation adds to a stored provenance (Liu Alg. 1-2:
        deltaPv, and ``x - y = x & ~y`` for deletions)."""
        return new & ~old

    def monotone_diff(self, new: Function, old: Function) -> Function:
        """The derivations of ``new`` that ``old`` does not absorb: the OR of the prime
        implicants of ``new`` not implied by ``old`` (both monotone).

        This is the difference of PosBool provenance. Like ``new & ~old`` (:meth:`diff`,
        Liu Alg. 1 deltaPv) it satisfies ``old | d == old | new`` and is false exactly when
        ``new`` is absorbed, but it stays monotone: no negative literal is ever shipped, so
        every stored provenance stays a positive formula (its minimal SOP exists) and a
        variable occurs in a provenance only through derivations that used it. It equals
        the upward closure of ``new & ~old`` (:meth:`monotone_diff_closure`).

        Computed in one pass down both BDDs (memoized on pairs of nodes), from the
        Shannon expansion on the top variable ``x``::

            M(n, o) = M(n0, o0) | x & M(n1, o1)      (x in n's support)
            M(n, o) = M(n, o0)                       (x in o's support only)

        The primes of ``n`` without ``x`` are those of ``n0``, and ``o`` judges them as
        ``o0`` does; a prime ``x & s`` is judged by ``o1``, and one that a prime ``t`` of
        ``n0`` absorbs is either kept with ``t`` (absorbed in the OR) or dropped with it
        (``o0(t)`` gives ``o1(s)``, both being monotone); when only ``o`` depends on
        ``x``, ``M(n, o1) <= M(n, o0)`` since ``o0 <= o1``. The closure took one CUDD
        cofactor (a cube built in Python over every declared variable) and an OR per
        shared variable: on ``ts100`` with 65% of the links and eager MinShip, 7.7 s of
        19,444 differences became 5.0 s. The pass is Python work per pair of nodes, and
        the pairs outnumber the nodes of either BDD, so from :attr:`PASS_LIMIT` nodes
        (both BDDs together) on, ``new & ~old`` is taken in CUDD and closed upwards in
        one pass over its own nodes (:meth:`upward_closure`). Measured on the 5,545
        differences of that size recorded from eager MinShip on a dense 8-node graph
        (``reachable`` with a three-atom rule, BDDs of up to 59,360 nodes): 10.4 s
        with the upward pass, 33.2 s with the pass over pairs and 41.9 s with the
        closure one variable at a time (:meth:`monotone_diff_closure`, which this
        replaced there); below 128 nodes the pass over pairs was as fast or faster.
        """
        if new <= old:                             # absorbed (Leq: no node built)
            return self.false
        if self.is_cube(new):                      # one prime, not implied by old
            return new
        if new.dag_size + old.dag_size >= self.PASS_LIMIT:
            return self.upward_closure(new & ~old)
        T, F = self.true, self.false
        Tk = self._true_key
        Fk = Tk | 1
        memo: dict[tuple[int, int], Function] = {}
        var_at, ite = self._var_at, self.bdd.ite
        stack = [(new, old)]                       # explicit: BDDs may be deep
        while stack:
            n, o = stack[-1]
            kn, ko = int(n), int(o)
            key = (kn, ko)
            if key in memo:
                stack.pop()
                continue
            if ko == Tk or kn == Fk or kn == ko:
                memo[key] = F
            elif ko == Fk:
                memo[key] = n
            elif kn == Tk:                         # the empty prime, o is not true
                memo[key] = T
            else:
                r = self._diff_step(n, o, kn, ko, memo, stack, var_at, ite)
                if r is None:
                    continue                       # children pushed
                memo[key] = r
            stack.pop()
        return memo[(int(new), int(old))]

    @staticmethod
    def _diff_step(n, o, kn: int, ko: int, memo, stack, var_at, ite):
        """One node pair of :meth:`monotone_diff` (neither constant): its result, or None
        after pushing the pairs of children still to compute. The low bit of ``int(g)``
        is the complement flag; ``g.low``/``g.high`` are the regular node's children."""
        lo = o.level
        ln = n.level
        if lo < ln:                                # x in old only: M(n, o0)
            o0 = ~o.low if ko & 1 else o.low
            r = memo.get((kn, int(o0)))
            if r is None:
                stack.append((n, o0))
            return r
        n0, n1 = (~n.low, ~n.high) if kn & 1 else (n.low, n.high)
        if lo == ln:
            o0, o1 = (~o.low, ~o.high) if ko & 1 else (o.low, o.high)
        else:
            o0 = o1 = o
        m0, m1 = memo.get((int(n0), int(o0))), memo.get((int(n1), int(o1)))
        if m0 is None or m1 is None:
            if m0 is None:
                stack.append((n0, o0))
            if m1 is None:
                stack.append((n1, o1))
            return None
        if int(m1) == int(m0):
            return m0
        return ite(var_at(n._index), m1 | m0, m0)

    def upward_closure(self, f: Function) -> Function:
        """The least monotone function above ``f``: a set ``S`` satisfies it iff some
        ``S' <= S`` satisfies ``f`` (with ``f = new & ~old``, :meth:`monotone_diff`).

        One pass over ``f``'s nodes, memoized on them, from the Shannon expansion on the
        top variable ``x``: ``U(f) = U(f0) | x & U(f1)``, since a set without ``x`` has
        below it only sets without ``x`` (``f0``'s), and one with ``x`` sets of either
        kind. Both cofactors of a complemented node are complemented, so the memo is keyed
        on ``int(g)``, complement bit included. One OR and one ``ite`` per node, where the
        closure one variable at a time (:meth:`monotone_diff_closure`) takes a cofactor
        and an OR of the whole BDD per variable."""
        Tk = self._true_key
        memo: dict[int, Function] = {Tk: self.true, Tk | 1: self.false}
        var_at, ite = self._var_at, self.bdd.ite
        stack = [f]                                # explicit: BDDs may be deep
        while stack:
            g = stack[-1]
            k = int(g)
            if k in memo:
                stack.pop()
                continue
            lo, hi = (~g.low, ~g.high) if k & 1 else (g.low, g.high)
            u0, u1 = memo.get(int(lo)), memo.get(int(hi))
            if u0 is None or u1 is None:
                if u0 is None:
                    stack.append(lo)
                if u1 is None:
                    stack.append(hi)
                continue
            stack.pop()
            u = u1 | u0
            memo[k] = u0 if int(u) == int(u0) else ite(var_at(g._index), u, u0)
        return memo[int(f)]

    def monotone_diff_closure(self, new: Function, old: Function) -> Function:
        """:meth:`monotone_diff` as the upward closure of ``new & ~old``: a set ``S``
        satisfies it iff some ``S' <= S`` satisfies ``new & ~old`` (such an ``S'``
        contains a prime ``p`` of ``new`` and, ``old`` being monotone, ``p`` does not
        imply ``old``; conversely such a prime satisfies ``new & ~old``). The closure is
        taken one variable at a time, ``d |= x & d[x := false]``, only for the variables
        of ``old`` (the only ones that can occur negatively). The definition the tests
        check :meth:`monotone_diff` and :meth:`upward_closure` against; slower."""
        d = new & ~old
        if d == self.false:
            return d
        let, support = self.bdd.let, self.support
        for v in support(d) & support(old):      # d is already monotone in new's own vars
            low = let({v: False}, d)
            if low != self.false:
                d = d | (self._vars.get(v) or self.var(v)) & low
        return d

    def is_cube(self, f: Function) -> bool:
        """True if ``f`` is a conjunction of (positive) variables, ``true`` included: every
        node on the way down has the false low branch (a pass down, no node built)."""
        hit = self._csets.get(int(f))
        if hit is not None and hit[1] is not None:
            return True
        return self._cube_taken(f) is not None

    # -- single derivations (cubes) -----------------------------------------------------

    def cube_ids(self, f: Function) -> frozenset | None:
        """The insertion ids of ``f``'s variables if ``f`` is a positive cube over
        ``x``-variables (one derivation: what lazy MinShip ships and what a join of such
        derivations gives), else None; ``true`` is the empty cube.

        Cached per BDD node, and filled in by :meth:`and_all` and :meth:`var` without
        walking the BDD, so that absorption between two derivations is a subset test
        (:meth:`implies`) and a derivation's wire form needs no pass down the BDD.
        """
        k = int(f)
        hit = self._csets.get(k)
        if hit is not None:
            return hit[1]
        taken = self._cube_taken(f)
        ids = None if taken is None else self._ids_of(taken)
        self._note_cube(k, f, ids)
        return ids

    def _ids_of(self, taken: list[int]) -> frozenset | None:
        """The insertion ids of the variables with CUDD indexes ``taken``; None if one of
        them is not an ``x``-variable."""
        wire = self._wire
        ws = [wire.get(vi) for vi in taken]
        return frozenset(ws) if all(type(w) is int for w in ws) else None

    def cube_function(self, ids: Iterable[int]) -> Function:
        """The BDD of the conjunction of the variables ``x<i>`` for ``i`` in ``ids`` (one
        derivation; ``true`` for none), declaring them on first use, and recorded as a
        cube (:meth:`cube_ids`).

        The inverse of :meth:`cube_ids`: the ``absorption`` scheme keeps a single
        derivation as the set of its insertion ids and builds its BDD only when it is
        combined with a formula that is not a single derivation. Built bottom up (by
        decreasing level key, the level order of a manager without reordering), so each
        AND adds one node on top."""
        ids = ids if type(ids) is frozenset else frozenset(ids)
        by_wire = self._by_wire
        f = self.true
        for i in (sorted(ids, key=self._level_key, reverse=True) if self._placed
                  else sorted(ids, reverse=True)):
            v = by_wire.get(i)
            if v is None:
                v = self._vars.get(var_name(i)) or self._declare(var_name(i), i)
            f = v & f
        self._note_cube(int(f), f, ids)
        return f

    def known_cube(self, f: Function) -> frozenset | None:
        """:meth:`cube_ids` if already known (no walk), else None."""
        hit = self._csets.get(int(f))
        return None if hit is None else hit[1]

    def _note_cube(self, key: int, f: Function, ids: frozenset | None) -> None:
        csets = self._csets
        if len(csets) >= self.CUBE_CACHE:         # forget the older half (insertion order)
            for k in list(itertools.islice(csets, len(csets) // 2)):
                del csets[k]
        csets[key] = (f, ids)                     # f keeps the node (and so the key) alive

    def cube_names(self, f: Function) -> list[str] | None:
        """The names of the variables of ``f`` if it is a positive cube, over any variables
        (one derivation, an aggregate's or an absence's variable included), else None: a
        walk down its high branches, as long as the cube, that stops at the first node of
        a formula whose low branch is not false."""
        taken = self._cube_taken(f)
        if taken is None:
            return None
        names = self._names_at
        return [names.get(vi) or self.bdd._var_with_index[vi] for vi in taken]

    def _cube_taken(self, f: Function) -> list[int] | None:
        """The CUDD indexes of a positive cube's variables, top down; None otherwise."""
        F, T = self._true_key | 1, self._true_key
        taken: list[int] = []
        g = f
        while True:
            k = int(g)
            if k == T:
                return taken
            if k & 1 or int(g.low) != F:
                return None
            taken.append(g._index)
            g = g.high

    def and_all(self, fs: list[Function]) -> Function:
        """The AND of ``fs`` (a rule body's provenance, Liu Fig. 6). When every operand is
        a known cube (:meth:`cube_ids`), the result is the cube of the union of their
        variables, and is recorded as such."""
        acc = fs[0]
        for j in range(1, len(fs)):
            acc = acc & fs[j]
        csets = self._csets
        ids = None
        for g in fs:
            hit = csets.get(int(g))
            s = hit[1] if hit is not None else self.cube_ids(g)
            if s is None:
                return acc
            ids = s if ids is None else ids | s
        self._note_cube(int(acc), acc, ids)
        return acc

    def implies(self, f: Function, g: Function) -> bool:
        """``f → g`` (``f <= g``); for two positive cubes, a subset test of their
        variables (a cube implies a cube iff it has all of its variables)."""
        a = self.cube_ids(f)
        if a is not None:
            b = self.cube_ids(g)
            if b is not None:
                return b <= a
        return f <= g

    def one_prime(self, f: Function) -> Function:
        """One derivation of a monotone ``f``: the conjunction of a minimal satisfying
        variable set (walk from the root taking the low branch whenever it is not false;
        the variables taken high form a minimal set). ``f`` itself when it is already a
        conjunction (every low branch false), which is what lazy MinShip mostly meets."""
        T = self._true_key
        F = T | 1
        k = int(f)
        if k == T or k == F:
            return f
        hit = self._csets.get(k)
        if hit is not None and hit[1] is not None:
            return f                              # a known cube: the derivation itself
        taken: list[int] = []
        cube = True
        g = f
        while int(g) != T:
            lo = g.low
            if int(lo) != F:
                g = lo
                cube = False
            else:
                taken.append(g._index)
                g = g.high
        if not cube:
            f = self.true
            for vi in reversed(taken):
                f = f & self._var_at(vi)
        self._note_cube(int(f), f, self._ids_of(taken))   # it is likely to be shipped next
        return f

    def _var_at(self, vi: int) -> Function:
        """The Function of the variable with CUDD index ``vi``."""
        w = self._wire.get(vi)
        if w is None:
            return self._register(self.bdd._var_with_index[vi])
        return self._by_wire[w]

    def is_false(self, f: Function) -> bool:
        return f == self.false

    def is_true(self, f: Function) -> bool:
        return f == self.true

    def support(self, f: Function) -> set[str]:
        """The names of the variables ``f`` depends on. A positive cube (the common case
        under lazy MinShip) is read in one pass down its BDD; anything else asks CUDD
        (``Cudd_Support``, whose names ``dd`` builds from a cube in Python)."""
        if int(f) == self._true_key | 1:
            return set()
        names = self.cube_names(f)
        return self.bdd.support(f) if names is None else set(names)

    def id_var(self, ident: int) -> Function:
        """The BDD of variable ``x<ident>``, declared on first use."""
        f = self._by_wire.get(ident)
        return f if f is not None else self.var(var_name(ident))

    def dag_size(self, f: Function) -> int:
        return f.dag_size

    def from_sets(self, sets: Iterable[Iterable[str]]) -> Function:
        """The monotone function whose satisfying sets are the supersets of ``sets``
        (an OR of ANDs of variables)."""
        return self.disj(self.conj(self.var(v) for v in s) for s in sets)

    # -- zeroing ----------------------------------------------------------------------

    def zero(self, f: Function, names: Iterable[str]) -> Function:
        """``f`` with every variable of ``names`` set to false (Liu Sec. 4: deletion of a
        base tuple). Only variables in ``f``'s support are substituted, so the cost does not
        grow with the number of variables ever zeroed."""
        if f == self.true or f == self.false:
            return f
        names = names if isinstance(names, (set, frozenset, ZeroSet)) else set(names)
        hit = {v: False for v in self.support(f) if v in names}
        return self.bdd.let(hit, f) if hit else f

    def zero_all(self, f: Function, cube: Function) -> Function:
        """A monotone ``f`` with every variable of the positive cube ``cube`` set to false,
        in one CUDD call: for ``f`` monotone in ``x``, ``f[x := false] = f[x := false] &
        f[x := true] = forall x. f`` (``Cudd_bddUnivAbstract``). The caller keeps the cube
        of a node's zeroed variables, so no variable set is rebuilt per call (``let`` builds
        its cube in Python each time).

        Only for monotone ``f`` (every stored and shipped provenance is: see
        :meth:`monotone_diff`); :meth:`zero` is the general form.
        """
        return self.bdd.apply("\\A", cube, f)

    # -- wire form --------------------------------------------------------------------

    def serialize(self, f: Function) -> list:
        """The order-independent wire form ``[names, nodes, root]`` of ``f`` (module
        docstring); msgpack-able, no pickle (annotations cross processes only as msgpack).

        The walk reads CUDD's node pointers directly (``int(g)``: the low bit is the
        complement flag) and variable indexes, not names. Recent results are cached per
        function (the transport sizes and encodes the same annotation, and one provenance
        often goes to several destinations): do not mutate the returned list.
        """
        key = int(f)
        hit = self._ser_cache.get(key)
        if hit is not None:
            return hit[1]
        T = self._true_key
        if key | 1 == T | 1:
            return [[], [], key & 1]
        known = self._csets.get(key)
        if known is not None and known[1] is not None:
            # the form _cube_form gives (decreasing ids), whatever the variable order
            return self._chain_form(sorted(known[1], reverse=True))   # cheaper than caching
        data = self._serialize_cube(f) if not key & 1 else None
        if data is None:
            data = self._serialize_dag(f, key)
        self._remember(key, f, data)
        return data

    def _remember(self, key: int, f: Function, data: list) -> None:
        if len(self._ser_cache) >= self.SER_CACHE:
            self._ser_cache.clear()
        self._ser_cache[key] = (f, data)          # f keeps the node (and so the key) alive

    def _serialize_cube(self, f: Function) -> list | None:
        """The wire form of a positive cube (a conjunction of variables: every node's low
        child is false, its high child regular) in one pass down the BDD, or None if ``f``
        is not one. Lazy MinShip ships only cubes (one derivation each), so this is the
        common case; the form is the one :meth:`_serialize_dag` would give with levels in
        insertion-id order (:meth:`_cube_form`)."""
        taken = self._cube_taken(f)
        return None if taken is None else self._cube_form(taken)

    def _cube_form(self, taken: list[int]) -> list:
        """The wire form of the cube of the variables with CUDD indexes ``taken`` (top
        down): its other variables bottom up, then its insertion ids in decreasing order,
        as :meth:`serialize` writes a cube it knows by its ids, so that a cube has one form
        whatever the variable order and the caches (``psn verify`` compares states by it)."""
        wire = self._wire
        names: list = []
        for vi in reversed(taken):
            w = wire.get(vi)
            if w is None:                          # declared behind our back
                self._register(self.bdd._var_with_index[vi])
                w = wire[vi]
            names.append(w)
        ids = [w for w in names if type(w) is int]
        if len(ids) > 1:
            names = [w for w in names if type(w) is not int] + sorted(ids, reverse=True)
        return self._chain_form(names)

    @staticmethod
    def _chain_form(names: list) -> list:
        """The wire form of the cube of the variables ``names`` (wire names, bottom up)."""
        n = len(names)
        return [names, _chain_nodes(n), n << 1]

    def _serialize_dag(self, f: Function, key: int) -> list:
        """The wire form of any BDD: a depth-first walk, children first."""
        T = self._true_key
        index = {T: 0}
        names: list = []
        name_ix: dict[int, int] = {}
        nodes: list[int] = []
        wire = self._wire
        stack = [f]
        while stack:
            g = stack[-1]
            k = int(g) & ~1
            if k in index:
                stack.pop()
                continue
            lo, hi = g.low, g.high
            kl, kh = int(lo), int(hi)
            il, ih = index.get(kl & ~1), index.get(kh & ~1)
            if il is None or ih is None:
                if il is None:
                    stack.append(lo)
                if ih is None:
                    stack.append(hi)
                continue
            stack.pop()
            vi = g._index
            ix = name_ix.get(vi)
            if ix is None:
                ix = name_ix[vi] = len(names)
                w = wire.get(vi)
                if w is None:                      # declared behind our back
                    w = self._register(self.bdd._var_with_index[vi])
                names.append(w)
            nodes += (ix, (il << 1) | (kl & 1), (ih << 1) | (kh & 1))
            index[k] = len(index)
        return [names, nodes, (index[key & ~1] << 1) | (key & 1)]

    def deserialize(self, data, zeroed: Iterable[str] | ZeroSet = ()) -> Function:
        """Rebuild a wire form with ``ite`` in this manager, with the variables of ``zeroed``
        set to false on the way (cheaper than zeroing afterwards, and a zeroed variable is
        never declared).

        Raises
        ------
        WireError
            If ``data`` is not a well-formed wire form.
        """
        try:
            names, nodes, root = data
            by_wire = self._by_wire
            check = bool(zeroed)
            vs = []
            for x in names:
                v = by_wire.get(x)
                if v is None or check:
                    name = var_name(x) if isinstance(x, int) else _str_name(x)
                    if check and name in zeroed:
                        v = None
                    elif v is None:
                        v = self._vars.get(name) or self._declare(
                            name, x if isinstance(x, int) else insertion_id(name))
                vs.append(v)
            false = self.false
            fns: list[Function] = [self.true]
            append = fns.append
            ite = self.bdd.ite
            for k in range(0, len(nodes), 3):
                lo, hi = nodes[k + 1], nodes[k + 2]
                if lo < 0 or hi < 0:
                    raise WireError(f"node {k // 3 + 1} has a negative reference")
                high = ~fns[hi >> 1] if hi & 1 else fns[hi >> 1]
                x = vs[nodes[k]]
                if lo == 1:                       # low branch false: a conjunction step
                    append(false if x is None else x & high)
                    continue
                low = ~fns[lo >> 1] if lo & 1 else fns[lo >> 1]
                append(low if x is None else ite(x, high, low))
            if root < 0:
                raise WireError("negative root reference")
            r = fns[root >> 1]
            r = ~r if root & 1 else r
            if names and None not in vs:
                ids = chain_ids(data)
                if ids is not None:                            # a single derivation
                    self._note_cube(int(r), r, frozenset(ids))
            return r
        except WireError:
            raise
        except (TypeError, ValueError, IndexError, KeyError) as e:
            raise WireError(f"malformed serialized BDD: {e!r}") from None

    def size_bytes(self, f: Function) -> int:
        """Bytes of ``f``'s wire form packed by msgpack (the per-tuple provenance size of
        Liu Sec. 7.1)."""
        return len(msgpack.packb(self.serialize(f)))

    # -- reading provenance -------------------------------------------------------------

    def minimal_sop(self, f: Function) -> list[frozenset[str]]:
        """The minimal sum-of-products of a monotone provenance: its minimal satisfying
        variable sets (an antichain), sorted by size then variable order.

        Absorption provenance is positive (Liu Sec. 4; the PosBool semiring of Green et al.),
        so its prime implicants are exactly its minimal satisfying sets, and their
        disjunction is its unique minimal SOP. They are computed bottom-up on the BDD: with
        ``f = x & f1 | f0`` and ``f0 <= f1``, ``P(f) = P(f0) | {s + x : s in P(f1), no t in
        P(f0) with t <= s}``.

        Raises
        ------
        NotMonotoneError
            If ``f`` is not monotone (e.g. an in-flight difference ``new & ~old``).
        """
        memo: dict[int, list[frozenset[str]]] = {}
        return sorted(self._primes(f, memo), key=self._set_key)

    def _primes(self, f: Function, memo) -> list[frozenset[str]]:
        # explicit stack: BDD depth can exceed Python's recursion limit
        stack = [f]
        while stack:
            g = stack[-1]
            key = int(g)
            if key in memo:
                stack.pop()
                continue
            if g.var is None:
                memo[key] = [frozenset()] if g == self.true else []
                stack.pop()
                continue
            lo, hi = (~g.low, ~g.high) if g.negated else (g.low, g.high)
            missing = [c for c in (lo, hi) if int(c) not in memo]
            if missing:
                stack += missing
                continue
            p0, p1 = memo[int(lo)], memo[int(hi)]
            for t in p0:
                if not any(s <= t for s in p1):
                    raise NotMonotoneError(
                        f"provenance is not monotone in {g.var}: minimal SOP needs a "
                        "positive formula")
            x = g.var
            memo[key] = p0 + [s | {x} for s in p1 if not any(t <= s for t in p0)]
            stack.pop()
        return memo[int(f)]

    def _set_key(self, s: frozenset[str]):
        return (len(s), sorted(map(var_key, s)))

    def format(self, f: Function, describe: Callable[[str], str] | None = None) -> str:
        """``link(@a,b) ∧ link(@b,c) ∨ link(@a,c)``: the minimal SOP of ``f`` over base
        tuples (``describe`` names a variable, e.g. :meth:`InsertionRegistry.describe`);
        ``true``/``false`` for the constants."""
        if f == self.true:
            return "true"
        if f == self.false:
            return "false"
        describe = describe or (lambda v: v)
        return " ∨ ".join(" ∧ ".join(describe(v) for v in self._ordered(s))
                          for s in self.minimal_sop(f))

    def _ordered(self, s: frozenset[str]) -> list[str]:
        return sorted(s, key=var_key)


def _str_name(x) -> str:
    if not isinstance(x, str):
        raise WireError(f"variable name {x!r} is neither an int nor a str")
    return x

