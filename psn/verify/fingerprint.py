"""Canonical forms and digests of a PSN network's state, for state hashing in ``psn verify``.

Role: turn what a delivery order can change into plain, process-independent values and
short digests: a node's committed state with its annotations, its waiting deletions and
queue, its annotation context (absorption: the variables it has seen zeroed), its pick and
send stages (aggregate selection, MinShip's shipped and buffered provenance), its aggregate
operators; and an in-flight message (destination and updates). Two network states with
equal digests are treated as the same state by the exhaustive search
(:mod:`psn.verify.search`), so a canonical form must keep everything a node's future
behaviour depends on, and may forget only:

* the order of Python dicts and sets (a relation, an index, a buffer keyed by fact): the
  engine's operators are order-insensitive by design (Nigam et al. 2012, Sec. 4; Liu et
  al. 2009, Sec. 4-6), and the same content in another order is the same state;
* counters kept for reports (messages shipped, updates held, ...), and MinShip's count and
  set of buffered records under lazy shipping, which only eager shipping reads;
* indexes derived from what is kept (absorption's ``holders``, the zeroed cube);
* the representation of one annotation: a BDD is written in its wire form
  (:meth:`provenance.bdd.BDDContext.serialize`, canonical for a fixed variable order), a
  single derivation as its sorted insertion ids, a zeroing as its variables.

An object of a type this module does not know is compared attribute by attribute; one
without attributes it can read gets a form unique to the object, which is never equal to
another state's (sound: the search then merges nothing there).

Deliberately not here: choosing deliveries, comparing with the reference, anything that
changes the network (every function here only reads).
"""

from __future__ import annotations

import hashlib
from typing import Any

from provenance.absorption import Alternatives, Zeroing
from engine.minship import MinShip
from provenance.bdd import BDDContext, Function, ZeroSet

__all__ = ["Canon", "digest", "node_form", "update_form", "SKIPPED_ATTRIBUTES",
           "NODE_ATTRIBUTES_READ"]

#: Attributes left out of the canonical form of engine objects: counters kept for reports,
#: structures derived from kept ones, static configuration, back references.
SKIPPED_ATTRIBUTES = frozenset({
    # counters
    "shipped_insertions", "buffered", "absorbed", "deletions_sent", "deletions_dropped",
    "held", "released", "entries", "held_left", "held_size",
    # derived from kept attributes
    "bdd", "_zcube", "_zpending", "zids", "holders", "any_zeroed",
    # static configuration and back references
    "selectors", "spec", "node", "mode", "window",
})

_PLAIN = frozenset({type(None), bool, int, float, str, bytes})


def _first(pair: tuple) -> str:
    """A dict item's printed key: items sort by it alone (keys are unique, values may not
    compare)."""
    return pair[0]


def digest(form: Any) -> bytes:
    """A 16-byte digest of a canonical form (BLAKE2b of its ``repr``, which is the same
    in every process for the plain values canonical forms are made of)."""
    return hashlib.blake2b(repr(form).encode(), digest_size=16).digest()


class Canon:
    """Canonical forms of annotations and engine objects (module docstring).

    Parameters
    ----------
    bdd:
        The :class:`~provenance.bdd.BDDContext` the node's BDDs live in, if any.
    """

    def __init__(self, bdd: BDDContext | None = None):
        self.bdd = bdd
        self._active: set[int] = set()

    def __call__(self, x: Any) -> Any:
        t = type(x)
        if t in _PLAIN:
            return x
        if t is tuple:
            for v in x:
                if type(v) not in _PLAIN:
                    return tuple(self(v) for v in x)
            return x                    # plain values only (facts, cubes): as it is
        if t is list:
            return ("L",) + tuple(self(v) for v in x)
        if t is frozenset or t is set:
            return ("S",) + tuple(sorted(repr(self(v)) for v in x))
        if t is dict:
            items = sorted(((repr(self(k)), self(v)) for k, v in x.items()), key=_first)
            return ("D",) + tuple(items)
        return self._object(x)

    def _object(self, x: Any) -> Any:
        if isinstance(x, Function):
            if self.bdd is None:
                return ("F?", id(x))
            return ("F",) + self(self.bdd.serialize(x))
        if isinstance(x, Zeroing):
            return ("Z",) + tuple(sorted(map(str, x.names)))
        if isinstance(x, Alternatives):
            return ("A",) + tuple(self(f) for f in x.fs)
        if isinstance(x, ZeroSet):
            return ("ZS",) + tuple(sorted(map(str, x.frozen())))
        if isinstance(x, BDDContext):
            return ("BDD",)
        if isinstance(x, MinShip):
            return self._minship(x)
        return self._attributes(x)

    def _minship(self, x: MinShip) -> tuple:
        """MinShip's records (shipped ``S`` and produced ``H`` per destination and fact)
        and aggregate-selection groups; its count of buffered alternatives and its set of
        records with a buffer only matter to eager shipping (the window, the flush), so
        lazy shipping leaves them out (they grow with the history, not the state)."""
        form = ("MinShip", x.mode, x.window, self(x.records), self(x.groups))
        if x.mode == "eager":
            form += (x.pending, self(x.dirty))
        return form

    def _attributes(self, x: Any) -> Any:
        key = id(x)
        if key in self._active:
            return ("cycle", type(x).__name__)
        names = _attribute_names(x)
        if names is None:
            return ("?", type(x).__qualname__, id(x))
        self._active.add(key)
        try:
            return (type(x).__qualname__,) + tuple(
                (n, self(getattr(x, n))) for n in names
                if n not in SKIPPED_ATTRIBUTES and hasattr(x, n))
        finally:
            self._active.discard(key)

    def stored(self, value: Any) -> Any:
        """A stored value's form: the whole value, not only the occurrences it contributes
        to joins (DRed's ``(count, derived)`` joins as one occurrence whatever its count,
        and a count of 2 survives a deletion that a count of 1 does not). A multiset of
        occurrences (a dict) or a set is compared by content, in any order."""
        if value is None:
            return ()
        return self(value)


def _attribute_names(x: Any) -> list[str] | None:
    """The data attributes of an engine object, sorted; None for objects without any
    (functions, classes, modules, C objects)."""
    if isinstance(x, type) or type(x).__module__ == "builtins":
        return None
    names: set[str] = set(getattr(x, "__dict__", {}) or ())
    for klass in type(x).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        names.update(s for s in slots if s not in ("__dict__", "__weakref__"))
    return sorted(names) if names else None


def update_form(canon: Canon, update: tuple) -> tuple:
    """``(sign, pred, tuple, annotation)`` in canonical form."""
    sign, pred, tup, ann = update
    return (sign, pred, canon(tup), canon(ann))


#: Attributes of :class:`engine.node.Node` that :func:`node_form` reads in its own way, or
#: leaves out as static (the program, the compiled rules), derived from the state (join
#: indexes), empty between steps (the batch's overlay), or counters. Every other attribute
#: (absence annotations under negation, updates arrived and not fired, ...) is part of the
#: form as it is.
NODE_ATTRIBUTES_READ = frozenset({
    "id", "state", "waiting", "queue", "ctx", "pick_stages", "send_stages", "aggregates",
    "nu", "program", "scheme", "batch", "fire_table", "negated", "_index_specs",
    "_probes", "_nu_cache", "_touched", "metrics", "step", "has_work",
})


def node_form(node) -> tuple:
    """Everything of one :class:`engine.node.Node` a delivery order can change: committed
    state with annotations, waiting deletions, queue, annotation context, pick and send
    stages, aggregate operators, and any other data attribute of the node (see the module
    docstring)."""
    canon = Canon(getattr(node.ctx, "bdd", None))
    state = tuple(sorted(
        (pred, tuple(sorted((repr(canon(t)), canon.stored(s)) for t, s in table.items())))
        for pred, table in node.state.items() if table))
    waiting = tuple(sorted(
        (repr(canon(fact)), tuple(sorted(repr(update_form(canon, u)) for u in ups)))
        for fact, ups in node.waiting.items() if ups))
    queue = tuple(update_form(canon, u) for u in node.queue)
    overlay = tuple(sorted((p, canon(t)) for p, t in node.nu.items() if t))
    context = canon(node.ctx) if node.ctx is not None else None
    stages = tuple(canon(s) for s in (*node.pick_stages, *node.send_stages))
    aggregates = tuple(sorted((pred, canon(op)) for pred, op in node.aggregates.items()))
    rest = tuple((name, canon(value)) for name, value in sorted(vars(node).items())
                 if name not in NODE_ATTRIBUTES_READ and not callable(value))
    return (repr(canon(node.id)), state, waiting, queue, overlay, context, stages,
            aggregates, rest)
