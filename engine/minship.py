"""MinShip: ship the first derivation of a tuple at once, buffer the alternatives.

Role: Liu et al. (ICDE 2009), Sec. 5 (Algorithm 3, BatchShipEager / BatchShipLazy), as a
:class:`~engine.node.SendStage` of one node. For every destination ``d`` and every fact
``f`` the node has sent towards ``d``, the stage keeps a record ``(S, H)``:

``S``
    the *shipped* provenance: the OR of everything sent for ``f`` to ``d``;
``H``
    everything produced for ``f`` towards ``d``: ``S`` OR the *buffer* ``B`` of alternative
    derivations not absorbed by ``S`` (the buffer is non-empty iff ``H`` differs from ``S``).
    The scheme decides how ``H`` is kept (``ship_merge``; ``ship_value`` gives its OR):
    absorption keeps a list of the alternatives rather than one BDD of their OR, because
    the OR of a few path conjunctions is a large BDD in a fixed variable order (reachable,
    100 nodes and 400 links: up to 5,683 nodes for 10 paths), while MinShip only asks
    whether a new derivation is absorbed, what survives a zeroing, and for one derivation.

Records are kept per destination and predicate (``records[(d, pred)][tuple]``), and one
with nothing buffered (``H`` is ``S``, most of them) is ``S`` itself; a :class:`Record`
holds the two only when they differ. Reachable on a dense 300-node topology keeps 830,460
records, 10% of them with something buffered; as a ``[S, H]`` list under a
``(d, pred, tuple)`` key each, the run's peak memory was 443 MiB instead of 329 MiB.

An insertion of ``f`` towards ``d`` is shipped at once if ``d`` has nothing live for it (no
record); otherwise it is merged into ``H`` unless ``H`` absorbs it (``ann → H``, CUDD's Leq,
no node built). Lazy shipping also ships at once a derivation that absorbs the one shipped
(its base tuples are a subset of ``S``'s; it becomes ``S``), and before a deletion it ships
a buffered alternative no other one absorbs: the sender's own store keeps only the shorter
derivation, so the sender would never forward the deletion of the variables only a longer
one holds, while the receiver may learn of them from another sender and lose ``S`` with
the shorter derivation still buffered here (found with reachability planned as Liu Fig. 4
does, ``examples/reachable_liu.ndl``: 9 of 360 seeded schedules lost a fact).

A deletion (a zeroing) is forwarded to ``d`` only if ``S`` depends on a zeroed variable,
i.e. only along the paths on which provenance depending on it was shipped; the buffer is
never told (it was never shipped). To another node it is forwarded as one
*node-wide* zeroing per destination and step (:data:`~engine.node.EVERY_FACT`, naming
the dead variables of every ``S`` it concerns, after the step's alternatives), not as one
deletion per fact: the receiver zeroes those variables in every fact that holds them (the
scheme's ``zero_everywhere``: deleting a base tuple sets its variable to false everywhere
it occurs, Liu Sec. 4). Reachable, 100 nodes and 400 links, 20 link deletions: 12,331
tuples and 486,483 bytes shipped instead of 20,998 and 642,465 per fact (the largest of
the 20: 1,166 tuples, 3.0% of the insertion run; per fact it was 2,293, 5.9%). A receiver
finds the facts by a scan for its first node-wide zeroings and by an index of its facts by
their variables after that (the scheme's ``zero_everywhere``), so a run without deletions
pays nothing, and a variable already swept from a node is not searched for again.

``H`` drops its dead alternatives at every deletion that reaches the record, whether or
not ``S`` depends on them (kept, they piled up with every flap of a link, and every new
derivation was tested against them); variables zeroed at the node by other deletions may
stay in ``H`` until something is shipped from it (then it is restricted first): being
monotone, it absorbs a live derivation iff its live part does. Lazy shipping
ships *one* derivation at a time (a minimal satisfying set of the provenance,
``ship_one``), so what crosses the network is a conjunction of base variables, never the
whole buffered formula.

Modes
    ``eager[:W]``
        Every ``W`` buffered alternatives (counted per stage, default :data:`DEFAULT_WINDOW`
        = 100: few, larger batches; the end-of-stream flush bounds the delay anyway) all
        buffers of the stage are shipped (``S`` becomes ``H``), one update per fact: the OR
        of its buffered alternatives that ``S`` does not absorb (not their monotone
        difference with ``S``: each was absorbed by nothing buffered when it came, and the
        receiver takes its own difference with what it holds; on ``ts100`` with 65% of the
        links, eager on a 1 s timer, this cut the run from 23.8 to 15.2 s for 5% more
        bytes); the end of the stream (:meth:`flush`, called by the driver at quiescence)
        ships them too. At quiescence every receiver therefore holds the full provenance:
        with eager shipping every tuple's provenance equals its PosBool provenance. ``W = 1``
        ships every non-absorbed alternative in the step that produced it. ``eager:T`` (a
        period, ``eager:1s``) flushes on the host's timer instead (:class:`ShipMode`).
    ``lazy`` (``W`` infinite)
        Buffers are shipped only when needed for correctness: when a zeroing makes ``S``
        false while ``H`` (zeroed too) is not, one derivation of ``H`` is sent as an insertion
        **before** the deletion, in the same step and the same batch. :meth:`flush` ships
        nothing: at the end of the stream buffers stay buffered, since every live tuple is
        already held by its receivers; they are needed only if a later deletion kills
        ``S``. (The driver's flush at quiescence is therefore a no-op for lazy.)

Invariant (lazy and eager alike), per node, destination and fact: ``H`` is the OR of every
derivation the node produced for the fact towards that destination, and whenever ``S`` has
no live derivation left, ``H`` has none either (the record is then dropped). The receiver
holds at least ``S`` from this sender (once in-flight messages arrive; it restricts by its own zeroed
variables, so a deletion overtaking the alternative sent before it only removes the tuple
transiently, and the alternative, whose variables are all live, restores it). Hence a fact is
present at the receiver iff some sender has a live ``H`` for it, iff it is derivable:
the relations are exact in both modes; only the provenance the receiver stores is partial
under lazy shipping (it holds the derivations shipped, not every alternative).

Per node or per worker (:data:`AT`, ``RunOptions.minship_at``): by default each node has its
own stage. With ``worker`` one stage serves every node a worker hosts (Liu et al. 2009,
Sec. 3: a query processor is the proxy of the devices of its sub-network), so ``S`` and
``H`` are kept per (destination, fact) for the whole worker and a fact two of its nodes
derive towards one destination is shipped once. The stage then works in the context of
whichever node is sending; one that has seen fewer variables zeroed could ship a buffered
alternative another node knows to be dead, whose death that node has already sent through
(or filtered in) this record; that is one more reason why ``H`` drops its dead
alternatives at every deletion that reaches the record. Aggregate selection applies
towards other workers.
With one node per worker this is the per-node stage.

The stage also hosts the *sending side* of aggregate selection (Liu Sec. 6: AggSel is
"embedded within MinShip"): given a :class:`~engine.aggsel.Selector` per predicate, a new
fact that is not best in its group towards ``d`` (for any aggregate, ties kept) is only
recorded (``S`` None, ``H`` its provenance, "held"); when a shipped fact of the group
disappears, the held facts that became best are shipped.

Works with schemes that implement the shipping algebra of
:class:`provenance.absorption.AbsorptionScheme` (``ship_restrict``, ``ship_restricts``,
``ship_absorbs``, ``ship_verdict``, ``ship_merge``, ``ship_value``, ``ship_diff``,
``ship_one``, ``ship_zeroed_names``, ``ship_dead_names``, ``ship_zeroing``, and on the
receiving side ``zero_everywhere``);
:func:`install` leaves other schemes alone (``set`` has no provenance to buffer,
``derivation`` must ship every occurrence).

Reading (``psn run --why``, :mod:`engine.why`): :meth:`MinShip.unshipped_keys` and
:meth:`MinShip.unshipped` list the derivations a node still buffers, without touching
its records; :func:`stage_of` finds a node's stage.

Deliberately not here: the fixpoint's own absorption (``provenance.absorption.pick``), the
receiving side of aggregate selection (:mod:`engine.aggsel`), delivery and traffic
accounting (``engine.transport``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ndlog.errors import InputError
from provenance.base import SHIP_ABSORBED, SHIP_NOW

from .node import EVERY_FACT

__all__ = ["MinShip", "Record", "ShipMode", "parse_ship", "install", "node_stages",
           "stage_of", "DEFAULT_WINDOW", "supports", "AT"]

#: Default eager window: buffered alternatives per stage between two flushes.
DEFAULT_WINDOW = 100

#: Where MinShip decides (``minship_at``): ``node``, one stage per node (the default);
#: ``worker``, one stage per worker, shared by the nodes it hosts (Liu et al. 2009, Sec. 3:
#: a query processor is the proxy of the nodes of its sub-network).
AT = ("node", "worker")


class ShipMode(NamedTuple):
    """A MinShip mode as :func:`parse_ship` reads it.

    Attributes
    ----------
    mode:
        ``"eager"`` or ``"lazy"``.
    window:
        Eager by count: buffered alternatives per node between two flushes; ``None`` when
        lazy, or when eager flushes on a timer only.
    period:
        Eager on a timer: the host flushes every node's buffers every ``period`` of the
        transport's clock (virtual seconds in the simulator; in memory and on Ray the clock
        is logical, one unit per delivery round), as Liu et al. 2009 (Sec. 7) flush once a
        second. ``None`` otherwise.
    """

    mode: str
    window: int | None = None
    period: float | None = None

    def __str__(self) -> str:
        if self.period is not None:
            return f"{self.mode}:{self.period:g}s"
        return self.mode if self.window is None else f"{self.mode}:{self.window}"


def parse_ship(text: "str | ShipMode | None") -> ShipMode | None:
    """``"eager"``, ``"eager:W"`` (every ``W`` alternatives), ``"eager:T"`` with a time
    unit (``1s``, ``500ms``: every ``T`` of the clock), ``"lazy"`` or ``"off"``/``None``.

    Raises
    ------
    InputError
        For anything else (naming the value).
    """
    if text is None or text == "off":
        return None
    if isinstance(text, ShipMode):
        return text
    mode, _, w = str(text).partition(":")
    if mode == "lazy" and not w:
        return ShipMode("lazy")
    if mode == "eager":
        if not w:
            return ShipMode("eager", DEFAULT_WINDOW)
        if w.strip().isdigit() and int(w) >= 1:
            return ShipMode("eager", int(w))
        period = _period(w)
        if period is not None:
            return ShipMode("eager", None, period)
    raise InputError(f"ship (--ship) must be 'eager', 'eager:W' (W >= 1 alternatives), "
                     f"'eager:T' (a period such as 1s or 500ms), 'lazy' or 'off', "
                     f"got {text!r}")


def _period(text: str) -> float | None:
    from .delivery import parse_duration
    if not text.strip() or text.strip()[-1].isdigit():
        return None                # a bare number is a window, not a period
    try:
        seconds = parse_duration(text)
    except ValueError:
        return None
    if not math.isfinite(seconds):
        raise InputError(f"ship (--ship) eager:T takes a finite period, not {text.strip()!r}",
                         hint="give a period such as eager:1s or eager:500ms")
    return seconds if seconds > 0 else None


def supports(scheme) -> bool:
    """True if ``scheme`` implements the shipping algebra MinShip needs."""
    return all(hasattr(scheme, m) for m in ("ship_restrict", "ship_restricts",
                                            "ship_absorbs", "ship_verdict", "ship_diff",
                                            "ship_zeroed_names", "ship_dead_names",
                                            "ship_zeroing", "ship_one", "ship_merge",
                                            "ship_value", "zero_everywhere"))


class Record:
    """A MinShip record whose ``H`` is not ``S``: something is buffered, or aggregate
    selection holds the fact back (``s`` None). A record with nothing buffered is kept as
    ``S`` alone, without this object (at 1,000 nodes there are millions of records, most
    of them with nothing buffered)."""

    __slots__ = ("s", "h")

    def __init__(self, s, h):
        self.s = s
        self.h = h


def _pair(rec) -> tuple:
    """A stored record as ``(S, H)``."""
    return (rec.s, rec.h) if type(rec) is Record else (rec, rec)


def _put(table: dict, tup, rec, s, h) -> None:
    """Store the record ``(s, h)`` of ``tup``: ``s`` alone when ``h`` is ``s``, else in
    ``rec`` (the stored value) if it is a :class:`Record`, else in a new one."""
    if h is s:
        table[tup] = s
    elif type(rec) is Record:
        rec.s, rec.h = s, h
    else:
        table[tup] = Record(s, h)


class MinShip:
    """The MinShip send stage of one node (see the module docstring).

    Parameters
    ----------
    mode:
        ``"eager"`` or ``"lazy"``.
    window:
        Eager: buffered alternatives between flushes (``>= 1``; ``math.inf``: only the
        host's timer and the end of the stream flush); ignored when lazy.
    selectors:
        ``predicate -> Selector`` for sending-side aggregate selection (may be empty).
    worker_of:
        ``node -> worker`` when the stage is shared by the nodes of one worker
        (``minship_at="worker"``, see the module docstring); None for a node's own stage.

    Attributes
    ----------
    shipped_insertions, buffered, absorbed, deletions_sent, deletions_dropped, held:
        Counters (per stage: per node, or per worker when shared) for benchmarks.
    """

    def __init__(self, mode: str = "lazy", window: int | None = None,
                 selectors: dict | None = None, worker_of=None):
        if mode not in ("eager", "lazy"):
            raise InputError(f"unknown MinShip mode {mode!r}")
        self.mode = mode
        #: ``node -> worker`` when the stage is shared by the nodes of one worker
        #: (:data:`AT` ``worker``), None when it serves one node
        self.worker_of = worker_of
        self.window = (window or DEFAULT_WINDOW) if mode == "eager" else None
        self.selectors = selectors or {}
        #: ``(dst, pred) -> {tup: record}``: a record is ``S`` itself while ``H`` is ``S``
        #: (nothing buffered, the common case), else a :class:`Record` (see :meth:`record`)
        self.records: dict[tuple, dict] = {}
        #: ``(dst, pred, tup)`` of the records with a buffer, for eager's flush (lazy never
        #: flushes, so it keeps none: a tenth of the records have a buffer)
        self.dirty: dict[tuple, None] = {}
        self.groups: dict[tuple, dict] = {}     # (dst, pred, group key) -> {tup: None}
        self.pending = 0
        self.shipped_insertions = 0
        self.buffered = 0
        self.absorbed = 0
        self.deletions_sent = 0
        self.deletions_dropped = 0
        self.held = 0

    # -- the SendStage protocol ------------------------------------------------------------
    def send(self, node, out: list) -> list:
        """Filter one step's ``[(destination, update)]`` (Liu Alg. 3, per destination)."""
        scheme, ctx = node.scheme, node.ctx
        me = node.id
        remote = self._remote(me)
        # nothing zeroed at the node: no derivation to restrict (asked once per step)
        restrict = scheme.ship_restrict if scheme.ship_restricts(ctx) else None
        if self.selectors:                     # every new fact joins its group first
            out = self._restrict_and_group(scheme, ctx, remote, out)
            restrict = None
        res: list = []
        touched: dict[tuple, None] = {}
        zeros: dict = {}                        # remote destination -> names to zero
        records, dirty = self.records, self.dirty
        verdict, merge, one = scheme.ship_verdict, scheme.ship_merge, scheme.ship_one
        equal = scheme.equal
        lazy = self.mode == "lazy"
        plain = lazy and not self.selectors
        shipped = absorbed = buffered = 0
        last = table = None             # (dst, pred) of table, the last item's records
        for item in out:
            dst, upd = item
            sign, pred, tup, ann = upd
            if sign < 0:
                self._delete(scheme, ctx, dst, pred, tup, ann, res, touched,
                             zeros if dst != me else None)
                last = None                     # it may have dropped the table
                continue
            if restrict is not None:
                ann = restrict(ctx, ann)
                if ann is None:
                    continue
            if last is None or last[1] is not pred or last[0] != dst:
                last = (dst, pred)
                table = records.get(last)
                if table is None:
                    table = records[last] = {}
            rec = table.get(tup)
            if rec is None:
                if not plain:                   # eager, or aggregate selection
                    self._insert(scheme, ctx, table, dst, pred, tup, None, ann, res,
                                 remote(dst))
                    continue
                first = one(ctx, ann)           # lazy: ship one derivation at once
                res.append(item if first is upd[3] else (dst, (1, pred, tup, first)))
                shipped += 1
                # the record (_ship_record, written out: one per derivation shipped)
                table[tup] = first if first is ann or equal(ctx, first, ann) \
                    else Record(first, ann)
                continue
            if type(rec) is Record:
                if rec.s is None:               # held by aggregate selection
                    self._insert(scheme, ctx, table, dst, pred, tup, rec, ann, res,
                                 remote(dst))
                    continue
                s_, h_ = rec.s, rec.h
            else:
                s_ = h_ = rec
            judged = verdict(ctx, s_, h_, ann, lazy)
            if judged == SHIP_ABSORBED:
                absorbed += 1
            elif judged == SHIP_NOW:
                # a derivation that absorbs the one shipped (a subset of its base tuples:
                # the sender's own store dropped the longer one, so it will never send a
                # deletion for its other variables): ship it, it becomes S
                _put(table, tup, rec, ann, merge(ctx, h_, ann))
                res.append(item if ann is upd[3] else (dst, (1, pred, tup, ann)))
                shipped += 1
            else:                               # buffered: an alternative
                _put(table, tup, rec, s_, merge(ctx, h_, ann))
                if not lazy:
                    dirty[(dst, pred, tup)] = None
                buffered += 1
        self.shipped_insertions += shipped
        self.absorbed += absorbed
        self.buffered += buffered
        self.pending += buffered
        for gk in touched:
            self._release(scheme, ctx, gk, res)
        for dst, names in zeros.items():        # after the alternatives, as Liu's lazy
            res.append((dst, (-1, EVERY_FACT, (dst,), scheme.ship_zeroing(ctx, names))))
            self.deletions_sent += 1
        if self.mode == "eager" and self.pending >= self.window:
            res.extend(self.flush(node))
        return res

    def _remote(self, me):
        """``dst -> bool``: whether aggregate selection applies towards ``dst`` from node
        ``me`` (another node; with a stage per worker, another worker's node, so that a
        node never holds back what it sends itself)."""
        if self.worker_of is None:
            return lambda dst: dst != me
        wof = self.worker_of
        mine = wof(me)
        return lambda dst: wof(dst) != mine

    def _restrict_and_group(self, scheme, ctx, remote, out: list) -> list:
        """``out`` with insertions restricted by the zeroed variables (dropped when nothing
        is left), after every new fact towards a remote node (``remote(dst)``) joined its
        aggregate-selection group (:meth:`_join_group`)."""
        items = []
        for dst, upd in out:
            sign, pred, tup, ann = upd
            if sign > 0:
                ann = scheme.ship_restrict(ctx, ann)
                if ann is None:
                    continue
                if remote(dst):
                    self._join_group(dst, pred, tup)
                upd = (sign, pred, tup, ann)
            items.append((dst, upd))
        return items

    def flush(self, node) -> list:
        """End of stream: eager ships every buffer; lazy ships nothing (see the module
        docstring: its buffers are sent only before a deletion that needs them)."""
        if self.mode == "lazy" or not self.dirty:
            return []
        scheme, ctx = node.scheme, node.ctx
        absorbs = scheme.ship_absorbs
        split = getattr(scheme, "ship_alternatives", None)
        res: list = []
        for key in list(self.dirty):
            dst, pred, tup = key
            table, rec = self._lookup(dst, pred, tup)
            if type(rec) is not Record or rec.s is None:   # nothing buffered, or held
                continue
            have = scheme.ship_restrict(ctx, rec.h)
            if have is None:
                continue
            # the buffered alternatives S does not absorb, as one OR: each was absorbed by
            # nothing buffered when it came, so their OR needs no monotone difference
            # against S here (the receiver takes its own against what it holds); that
            # difference, on ORs of many paths, was most of the sender's time
            d = None
            for alt in split(ctx, have) if split is not None else [have]:
                if not absorbs(ctx, rec.s, alt):
                    d = alt if d is None else scheme.ship_merge(ctx, d, alt)
            shipped = rec.s
            if d is not None:
                d = scheme.ship_value(ctx, d)
                # S keeps what it shipped, dead variables included: a later zeroing of
                # them must still be forwarded to the receiver
                shipped = scheme.combine(ctx, shipped, d)
            _put(table, tup, rec, shipped, shipped)     # H is S again: nothing buffered
            if d is not None:
                res.append((dst, (1, pred, tup, d)))
                self.shipped_insertions += 1
        self.dirty.clear()
        self.pending = 0
        return res

    def _minimal(self, scheme, ctx, have):
        """Lazy: the buffered alternative of ``have`` that no other one absorbs (a shortest
        derivation: its sender's store keeps it, see the module docstring), else ``have``
        itself; eager ships all of ``have`` anyway."""
        split = getattr(scheme, "ship_alternatives", None)
        if self.mode == "eager" or split is None:
            return have
        alts = split(ctx, have)
        best = alts[0]
        for alt in alts[1:]:
            if scheme.ship_absorbs(ctx, alt, best):     # alt has a subset of its tuples
                best = alt
        return best

    def _first(self, scheme, ctx, ann):
        """What to ship of a fact's first derivations: all of them when eager, one when
        lazy (the rest stays buffered)."""
        if self.mode == "eager":
            return scheme.ship_value(ctx, ann)
        return scheme.ship_one(ctx, ann)

    # -- insertions ------------------------------------------------------------------------
    def _join_group(self, dst, pred, tup) -> None:
        """A new fact towards ``dst`` joins its aggregate-selection group before any fact of
        the step is judged, so that one beaten by another of the same step is held at once
        instead of being shipped as a short-lived best."""
        sel = self.selectors.get(pred)
        if sel is not None and self.record(dst, pred, tup) is None:
            self.groups.setdefault((dst, pred, sel.key(tup)), {})[tup] = None

    def _insert(self, scheme, ctx, table: dict, dst, pred, tup, rec, ann, res: list,
                remote: bool) -> None:
        # a new record (rec None), or one held back by aggregate selection (rec.s None);
        # ann is already restricted by the zeroed variables (send); table is
        # records[(dst, pred)] (send handles a shipped record's absorbed and buffered cases)
        if rec is None:
            sel = self.selectors.get(pred) if remote else None
            if sel is not None:
                gk = (dst, pred, sel.key(tup))
                members = self.groups.setdefault(gk, {})
                members[tup] = None
                if not sel.qualifies(tup, members):
                    table[tup] = Record(None, ann)
                    self.held += 1
                    return
            first = self._first(scheme, ctx, ann)
            res.append((dst, (1, pred, tup, first)))
            self.shipped_insertions += 1
            self._ship_record(scheme, ctx, table, dst, pred, tup, None, first, ann)
            return
        if scheme.ship_absorbs(ctx, rec.h, ann):  # held: accumulate, still not shipped
            self.absorbed += 1
        else:
            rec.h = scheme.ship_merge(ctx, rec.h, ann)

    # -- deletions -------------------------------------------------------------------------
    def _delete(self, scheme, ctx, dst, pred, tup, ann, res: list, touched: dict,
                zeros: dict | None) -> None:
        table, rec = self._lookup(dst, pred, tup)
        if rec is None:
            self.deletions_dropped += 1          # nothing shipped there: nothing to undo
            return
        shipped, have = _pair(rec)
        names = scheme.ship_zeroed_names(ctx, ann)
        if shipped is None:                      # held (never shipped): forget silently
            self.deletions_dropped += 1
            new_h = scheme.ship_restrict(ctx, have, names)
            if new_h is None:
                self._forget(table, dst, pred, tup, touched)
            else:
                rec.h = new_h
            return
        new_s = scheme.ship_restrict(ctx, shipped, names)
        if have is not shipped:
            # H drops its dead alternatives now, whether or not S depends on them: one S
            # does not depend on stayed for good (H grew by one alternative per flap of a
            # link it crossed, and every later derivation was tested against them all);
            # and with a stage shared by a worker's nodes, another node may ship from H
            # with a context that has not seen these variables zeroed
            have = scheme.ship_restrict(ctx, have, names)
            if have is None or scheme.equal(ctx, have, shipped):
                have = shipped
        if new_s is not None and scheme.equal(ctx, new_s, shipped):
            self.deletions_dropped += 1          # the shipped part does not depend on it
            _put(table, tup, rec, shipped, have)
            return
        dead = names | scheme.ship_dead_names(ctx, shipped)
        if new_s is None and have is not shipped:   # H, restricted above, has a live one
            new_s = self._first(scheme, ctx, self._minimal(scheme, ctx, have))
            res.append((dst, (1, pred, tup, new_s)))   # alternatives first, then the deletion
            self.shipped_insertions += 1
        if zeros is None:                        # this node: the fact's own deletion
            res.append((dst, (-1, pred, tup, scheme.ship_zeroing(ctx, dead))))
            self.deletions_sent += 1
        else:                                    # another node: one node-wide zeroing
            have_dead = zeros.get(dst)
            zeros[dst] = dead if have_dead is None else have_dead | dead
        if new_s is None:
            self._forget(table, dst, pred, tup, touched)
        else:                                    # S alone if nothing was buffered
            _put(table, tup, rec, new_s, new_s if have is shipped else have)

    def _ship_record(self, scheme, ctx, table, dst, pred, tup, rec, first, have) -> None:
        """Record that ``first`` was shipped out of ``have``: ``S`` alone when it is all
        of ``have``, else with ``have`` as ``H``, noted for eager's flush (lazy keeps no
        list of records with a buffer)."""
        if first is have or scheme.equal(ctx, first, have):
            _put(table, tup, rec, first, first)
        else:
            _put(table, tup, rec, first, have)
            if self.mode == "eager":
                self.dirty[(dst, pred, tup)] = None

    def _lookup(self, dst, pred, tup) -> tuple:
        """``(table of (dst, pred) or None, stored record or None)``."""
        table = self.records.get((dst, pred))
        return table, None if table is None else table.get(tup)

    def _forget(self, table: dict, dst, pred, tup, touched: dict) -> None:
        del table[tup]
        if not table:
            del self.records[(dst, pred)]
        self.dirty.pop((dst, pred, tup), None)
        sel = self.selectors.get(pred)
        if sel is not None:
            gk = (dst, pred, sel.key(tup))
            members = self.groups.get(gk)
            if members is None or tup not in members:
                return
            members.pop(tup, None)
            if not members:
                del self.groups[gk]
            else:
                touched[gk] = None

    def _release(self, scheme, ctx, gk, res: list) -> None:
        """A shipped fact of group ``gk`` disappeared: ship the held facts now best."""
        members = self.groups.get(gk)
        if not members:
            return
        dst, pred, _ = gk
        sel = self.selectors[pred]
        table = self.records[(dst, pred)]
        for tup in sel.qualified(members):
            rec = table[tup]
            if type(rec) is Record and rec.s is None:
                have = scheme.ship_restrict(ctx, rec.h) or rec.h
                first = self._first(scheme, ctx, self._minimal(scheme, ctx, have))
                res.append((dst, (1, pred, tup, first)))
                self.shipped_insertions += 1
                self._ship_record(scheme, ctx, table, dst, pred, tup, rec, first, have)

    # -- reading ---------------------------------------------------------------------------
    def unshipped_keys(self) -> list[tuple]:
        """``(destination, pred, tuple)`` of every record that may hold derivations not
        shipped (its buffer is not known to be empty, or aggregate selection holds it);
        :meth:`unshipped` tells which really do. Read-only."""
        return [(dst, pred, tup) for (dst, pred), table in self.records.items()
                for tup, rec in table.items() if type(rec) is Record]

    def record(self, dst, pred: str, tup: tuple):
        """The record of ``pred(tup)`` towards ``dst`` as ``(S, H)`` (``S`` None while
        aggregate selection holds the fact; ``H`` is ``S`` when nothing is buffered), or
        None if there is none. Read-only."""
        rec = self._lookup(dst, pred, tup)[1]
        return None if rec is None else _pair(rec)

    def unshipped(self, node, dst, pred: str, tup: tuple) -> list:
        """The derivations of ``pred(tup)`` this node produced towards ``dst`` and has not
        shipped there: the alternatives of ``H`` (live ones, in ``node``'s annotation
        context) that the shipped ``S`` does not absorb; every alternative of a fact
        aggregate selection holds back. Empty when nothing is buffered. Read-only: the
        record is left as it is (``psn run --why`` ORs these into the receiver's
        provenance, :mod:`engine.why`).

        Parameters
        ----------
        node:
            The :class:`~engine.node.Node` this stage sends for (its scheme and context).
        dst, pred, tup:
            The record's destination node and fact.
        """
        rec = self.record(dst, pred, tup)
        if rec is None or rec[1] is rec[0]:
            return []
        scheme, ctx = node.scheme, node.ctx
        have = scheme.ship_restrict(ctx, rec[1])
        if have is None:
            return []
        split = getattr(scheme, "ship_alternatives", None)
        alts = split(ctx, have) if split is not None else [scheme.ship_value(ctx, have)]
        shipped = None if rec[0] is None else scheme.ship_restrict(ctx, rec[0])
        if shipped is None:
            return alts
        return [a for a in alts if not scheme.ship_absorbs(ctx, shipped, a)]

    def stats(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in ("shipped_insertions", "buffered", "absorbed",
                                              "deletions_sent", "deletions_dropped", "held")}


def node_stages(program, scheme, ship=None, aggsel: str | None = None, at: str = "node",
                placement=None):
    """An ``on_node`` callback installing aggregate selection and MinShip on every node,
    or None when there is nothing to install.

    Parameters
    ----------
    program:
        The :class:`~engine.program.EngineProgram`.
    scheme:
        The annotation scheme object.
    ship:
        A :class:`ShipMode`, its text (``eager[:W]``, ``eager:1s``, ``lazy``, ``off``), or
        None: off. On a timer (``period``) the stage never flushes by count; the host
        flushes it (:class:`engine.host.Host` ``flush_period``). The scheme's ``default_ship`` (``lazy`` for the
        registered ``absorption``) is the caller's to apply (:class:`engine.options.
        RunOptions` resolves it), so that an explicit ``off`` stays off.
    aggsel:
        ``multi``, ``single``, ``off`` or None (off).
    at:
        ``node``: one MinShip stage per node; ``worker``: one stage per worker of
        ``placement``, shared by the nodes it hosts (:data:`AT`).
    placement:
        ``node -> worker`` (an :class:`engine.placement.Placement`); needed with
        ``at="worker"``.
    """
    from .aggsel import install as install_aggsel, selectors as make_selectors
    if at not in AT:
        raise InputError(f"minship_at (--minship-at) must be one of {', '.join(AT)}, "
                         f"not {at!r}")
    if at == "worker" and placement is None:
        raise InputError("MinShip between workers needs the placement of nodes on workers")
    parsed = parse_ship(ship)
    receive, send = make_selectors(program, aggsel or "off")
    if parsed is None or not supports(scheme):
        parsed, send = None, {}
    if parsed is None and not receive:
        return None

    window = None if parsed is None else \
        math.inf if parsed.period is not None else parsed.window
    shared: dict = {}               # worker -> its stage (at="worker")
    worker_of = placement.worker if at == "worker" else None

    def on_node(node) -> None:
        install_aggsel(node, receive)
        if parsed is None:
            return
        if worker_of is None:
            install(node, parsed.mode, window, send)
            return
        w = worker_of(node.id)
        stage = shared.get(w)
        if stage is None:
            stage = shared[w] = MinShip(parsed.mode, window, send, worker_of)
        install(node, stage=stage)
    return on_node


def stage_of(node) -> MinShip | None:
    """The :class:`MinShip` stage among ``node.send_stages`` (:func:`install` appends at
    most one), or None."""
    return next((s for s in node.send_stages if isinstance(s, MinShip)), None)


def install(node, mode: str = "lazy", window: int | None = None,
            selectors: dict | None = None, stage: MinShip | None = None):
    """Append a :class:`MinShip` stage to ``node.send_stages`` if its scheme supports the
    shipping algebra (a new one, or ``stage``, shared by the nodes of one worker); return
    the stage or None."""
    if not supports(node.scheme):
        return None
    if stage is None:
        stage = MinShip(mode, window, selectors)
    node.send_stages.append(stage)
    attach = getattr(node.scheme, "ship_attach", None)
    if attach is not None:
        attach(node.ctx)
    return stage
