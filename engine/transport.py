"""Transports and clocks: how updates travel between nodes, and what that costs.

Role: the interfaces the one hosting loop (:class:`engine.Host`) talks to, and the
in-memory defaults. A :class:`Transport` accepts the updates a node produced
(:meth:`Transport.send`), holds them in flight, and hands them out in the order its delivery
policy chooses (:meth:`Transport.poll`); it measures traffic in messages, tuples and msgpack
bytes (:mod:`engine.wire`, counted by its :class:`Meter`), per node and per *worker* (a
process hosting many nodes; nodes and workers are distinct, as in Liu et al. 2009, Sec. 7,
where 100 nodes ran on 12-24 machines). A :class:`Placement` says which node lives on which
worker; a message between two nodes of one worker costs no network traffic (counted
separately), a message from a node to itself costs nothing. A :class:`Clock` tells the
time the transport lives in: a logical counter here, virtual seconds in the simulator
(:mod:`sim`).

Delivery orders of :class:`InMemoryTransport` (channels are *not* FIFO in PSN, Nigam Sec. 3.1):

``fifo``
    per channel (source, destination) in send order; each poll delivers a random prefix of
    a random subset of channels (seeded), so channels interleave differently per seed.
``random``
    any in-flight update may overtake any other, across bursts too: each poll delivers a
    seeded random sample of the in-flight updates in random order.
``adversarial``
    one update per poll: the newest in-flight deletion if there is one (so deletions arrive
    before the insertions they follow whenever possible), else the newest insertion.

:class:`ScriptedTransport` delivers in an order written down in advance (one list of
updates per poll), to reproduce a paper's counterexample schedule exactly (Nigam et al.
2012, Sec. 6, Fig. 6).

Deliberately not here: the PSN iteration (:mod:`engine.node`, :mod:`engine.host`), virtual
time and latencies (``sim/``), Ray actors (``psn.distributed``). Those implement the same
two protocols.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any, Callable, Protocol, runtime_checkable

from ndlog.builtins import format_value
from ndlog.errors import InputError, PSNError
from ndlog.parser import parse_atom
from .delivery import DELIVERY_MODELS, Delivery, make_delivery
from .placement import Placement
from .wire import Codec

__all__ = ["Clock", "LogicalClock", "Transport", "Placement", "TrafficMetrics", "Meter",
           "Metered",
           "InMemoryTransport", "ScriptedTransport", "DELIVERY_ORDERS"]

DELIVERY_ORDERS = DELIVERY_MODELS


@runtime_checkable
class Clock(Protocol):
    """The time a transport lives in (logical steps, or virtual seconds in the simulator)."""

    def now(self) -> float:
        """Current time."""


class LogicalClock:
    """A counter advanced by one per :meth:`InMemoryTransport.poll`."""

    def __init__(self) -> None:
        self.t = 0

    def now(self) -> float:
        return self.t

    def tick(self, n: int = 1) -> None:
        self.t += n


class TrafficMetrics:
    """Traffic counters: totals, per sending node and per sending worker.

    Totals: ``messages_sent`` (one message = the updates one node step sends to one other
    node), ``tuples_sent``, ``bytes_sent`` (msgpack size of those messages),
    ``annotation_bytes`` (serialized annotations inside them), ``worker_messages_sent`` and
    ``worker_bytes_sent`` (the part that crosses workers), ``local_tuples`` (updates a node
    sends to itself: free).
    """

    FIELDS = ("messages_sent", "tuples_sent", "bytes_sent", "annotation_bytes",
              "worker_messages_sent", "worker_bytes_sent", "local_tuples")

    def __init__(self) -> None:
        self.totals = dict.fromkeys(self.FIELDS, 0)
        self.per_node: dict[Any, dict[str, int]] = {}
        self.per_worker: dict[Any, dict[str, int]] = {}

    def _add(self, table: dict, key, field: str, n: int) -> None:
        row = table.get(key)
        if row is None:
            row = table[key] = dict.fromkeys(self.FIELDS, 0)
        row[field] += n

    def count(self, node, worker, field: str, n: int) -> None:
        self.totals[field] += n
        self._add(self.per_node, node, field, n)
        self._add(self.per_worker, worker, field, n)

    def message(self, node, worker, tuples: int, size: int, ann_bytes: int,
                crosses_workers: bool) -> None:
        """Count one message of ``tuples`` updates and ``size`` bytes from ``node``."""
        rn = self.per_node.get(node)
        if rn is None:
            rn = self.per_node[node] = dict.fromkeys(self.FIELDS, 0)
        rw = self.per_worker.get(worker)
        if rw is None:
            rw = self.per_worker[worker] = dict.fromkeys(self.FIELDS, 0)
        for row in (self.totals, rn, rw):
            row["messages_sent"] += 1
            row["tuples_sent"] += tuples
            row["bytes_sent"] += size
            row["annotation_bytes"] += ann_bytes
            if crosses_workers:
                row["worker_messages_sent"] += 1
                row["worker_bytes_sent"] += size


class Meter:
    """Encodes each message a node sends and counts its traffic: the one place where a
    transport turns updates into wire bytes (:class:`engine.wire.Codec`) and counts them
    (:class:`TrafficMetrics`).

    Every transport (in-memory, simulator, Ray) owns one. A message from a node to itself is
    free (``local_tuples``); any other message is counted as the length of its encoding in
    the sender's annotation context, between workers or inside one (the
    :class:`~engine.placement.Placement` decides). The receiver gets the updates rebuilt from
    the bytes in its own context when ``roundtrip`` is on, or when the annotations are bound
    to a context the receiver does not share (another CUDD manager); only then, or when
    ``bytes_across`` asks for the bytes of a message between workers, are the bytes built.
    Otherwise the message is measured (:meth:`engine.wire.Codec.measure`: the same length,
    without serializing absorption's single derivations or packing twice).

    Parameters
    ----------
    placement:
        Node to worker.
    roundtrip:
        Rebuild every message between two nodes from its bytes (proves the wire format).
    """

    def __init__(self, placement: Placement, roundtrip: bool = False):
        self.placement = placement
        self.roundtrip = roundtrip
        #: a message between workers is always encoded (set by a transport whose workers
        #: are processes); else only when the receiver decodes it (:meth:`must_rebuild`)
        self.bytes_across = False
        self.metrics = TrafficMetrics()
        self.codec: Codec | None = None
        self.context_of: Callable[[Any], Any] = lambda node: None

    def connect(self, codec: Codec, context_of: Callable[[Any], Any]) -> None:
        """Take the engine's wire codec and ``node -> annotation context``."""
        self.codec = codec
        self.context_of = context_of

    def local(self, src: Any, n: int) -> None:
        """Count ``n`` updates a node sends to itself (free)."""
        self.metrics.count(src, self.placement.worker(src), "local_tuples", n)

    def encode(self, src: Any, dst: Any, updates: list) -> tuple[bytes | None, int, bool]:
        """Count one message from ``src`` to another node ``dst``.

        Returns ``(data, size, crosses)``: the message's bytes when somebody reads them
        (the receiver must decode them, :meth:`must_rebuild`, or the message crosses
        workers and ``bytes_across`` is set), else ``None``; its size in bytes, the same
        either way (:meth:`engine.wire.Codec.measure`); and whether it crosses workers.
        """
        place = self.placement.worker
        wsrc = place(src)
        crosses = wsrc != place(dst)
        codec = self.codec
        if codec is None:
            data, size, ann_bytes = None, 0, 0
        elif (crosses and self.bytes_across) or self.must_rebuild(src, dst, crosses):
            data, ann_bytes = codec.encode_measured(updates, self.context_of(src))
            size = len(data)
        else:
            data = None
            size, ann_bytes = codec.measure(updates, self.context_of(src))
        self.metrics.message(src, wsrc, len(updates), size, ann_bytes, crosses)
        return data, size, crosses

    def must_rebuild(self, src: Any, dst: Any, crosses: bool) -> bool:
        """True if ``dst`` must decode the message from its bytes (see the class doc)."""
        return self.codec is not None and (self.roundtrip or (
            crosses and self.codec.must_rebuild(self.context_of, src, dst)))

    def rebuild(self, dst: Any, data: bytes) -> list:
        """The updates of a message, decoded in ``dst``'s context."""
        return self.codec.decode(data, self.context_of(dst))

    def carry(self, src: Any, dst: Any, updates: list) -> tuple[list, bytes | None]:
        """Count a message and return ``(updates as the receiver gets them, bytes to decode
        on arrival or None)``: what an in-process transport needs. ``src`` is ``None`` for
        updates the environment injects (free, never encoded)."""
        if src is None:
            return updates, None
        if src == dst:
            self.local(src, len(updates))
            return updates, None
        return updates, self.encode(src, dst, updates)[0]   # bytes only if decoded


class Metered:
    """The part of a transport that its :class:`Meter` (``self.meter``) provides: the
    placement, the traffic counters and ``connect``. Every transport here derives from it."""

    meter: Meter

    @property
    def placement(self) -> Placement:
        return self.meter.placement

    @property
    def metrics(self) -> TrafficMetrics:
        return self.meter.metrics

    def connect(self, codec: Codec, context_of: Callable[[Any], Any]) -> None:
        """Give the meter the engine's wire codec and ``node -> annotation context``."""
        self.meter.connect(codec, context_of)


@runtime_checkable
class Transport(Protocol):
    """What the engine's driver needs from a transport."""

    clock: Clock
    placement: Placement
    metrics: TrafficMetrics

    def connect(self, codec: Codec, context_of: Callable[[Any], Any]) -> None:
        """Give the transport the wire codec and ``node -> annotation context``."""

    def send(self, src: Any, dst: Any, updates: list) -> None:
        """Accept updates from node ``src`` (``None``: injected by the environment)."""

    def poll(self) -> list[tuple[Any, tuple]]:
        """Next deliveries ``[(destination, update)]``; empty when nothing is in flight."""

    def in_flight(self) -> int:
        """Number of updates sent and not yet delivered."""


class InMemoryTransport(Metered):
    """In-process transport with a chosen delivery order (see the module docstring).

    Parameters
    ----------
    delivery:
        ``fifo``, ``random`` or ``adversarial``, or the simulator's form with options
        (``random:jitter=0.5,abs=2ms``, ``adversarial:period=8``, see
        :func:`engine.delivery.make_delivery`). This transport has no clock, so the
        options, which shape the simulator's delays, are checked but do not change the
        order: ``random`` already lets any update overtake any other, and ``adversarial``
        already delivers the newest deletion first.
    seed:
        Seeds the delivery order (``random.Random(seed)``).
    placement:
        Node to worker (default: one worker per node).
    clock:
        Default :class:`LogicalClock`.
    roundtrip:
        Decode every message from its msgpack bytes in the receiver's context (always done
        across workers for schemes whose annotations are bound to a context).
    chunk:
        ``"random"`` (default) or ``"all"``: with ``fifo``, deliver every channel completely
        on each poll (synchronous rounds; fastest).
    """

    def __init__(self, delivery: "str | Delivery" = "fifo", seed: int = 0, *,
                 placement: Placement | None = None, clock: Clock | None = None,
                 roundtrip: bool = False, chunk: str = "random"):
        if chunk not in ("random", "all"):
            raise InputError(f"unknown chunk policy '{chunk}'; choose random or all")
        self.model = make_delivery(delivery)
        self.delivery = self.model.name
        self.rng = random.Random(seed)
        self.meter = Meter(placement or Placement(), roundtrip)
        self.clock = clock or LogicalClock()
        self.chunk = chunk
        self._channels: dict[tuple, deque] = {}
        self._pool: list[tuple[Any, tuple]] = []
        self._dels: list[tuple[Any, tuple]] = []
        self._ins: list[tuple[Any, tuple]] = []
        self._count = 0


    def describe(self) -> str:
        """The delivery order, e.g. ``random`` (timing options have no effect here)."""
        return self.delivery

    # -- sending -------------------------------------------------------------------------
    def send(self, src: Any, dst: Any, updates: list) -> None:
        if not updates:
            return
        updates, data = self.meter.carry(src, dst, updates)
        if data is not None:
            updates = self.meter.rebuild(dst, data)
        self._enqueue(src, dst, updates)

    def _enqueue(self, src, dst, updates: list) -> None:
        self._count += len(updates)
        if self.delivery == "fifo":
            ch = self._channels.get((src, dst))
            if ch is None:
                ch = self._channels[(src, dst)] = deque()
            ch.extend(updates)
        elif self.delivery == "random":
            self._pool.extend((dst, u) for u in updates)
        else:
            for u in updates:
                (self._dels if u[0] < 0 else self._ins).append((dst, u))

    # -- delivering ----------------------------------------------------------------------
    def in_flight(self) -> int:
        return self._count

    def poll(self) -> list[tuple[Any, tuple]]:
        return [(dst, u) for dst, ups in self.poll_batches() for u in ups]

    def poll_batches(self) -> list[tuple[Any, list]]:
        """:meth:`poll` grouped as ``[(destination, [update, ...])]`` in delivery order
        (an optional fast path of the in-memory transport; drivers fall back to ``poll``)."""
        if not self._count:
            return []
        if isinstance(self.clock, LogicalClock):
            self.clock.tick()
        if self.delivery == "fifo":
            out = self._poll_fifo()
            self._count -= sum(len(ups) for _, ups in out)
            return out
        if self.delivery == "random":
            flat = self._poll_random()
        else:
            flat = [self._dels.pop() if self._dels else self._ins.pop()]
        self._count -= len(flat)
        return [(dst, [u]) for dst, u in flat]

    def _poll_fifo(self) -> list:
        out: list = []
        rng = self.rng
        chans = list(self._channels.items())
        everything = self.chunk == "all"
        for i, (key, q) in enumerate(chans):
            if not everything and rng.random() < 0.5 and (out or i < len(chans) - 1):
                continue
            n = len(q) if everything else rng.randint(1, len(q))
            if n == len(q):
                out.append((key[1], list(q)))
                del self._channels[key]
            else:
                out.append((key[1], [q.popleft() for _ in range(n)]))
        return out

    def _poll_random(self) -> list:
        pool, rng = self._pool, self.rng
        n = len(pool)
        k = 1 + int((n - 1) * rng.random() ** 2)
        out = []
        for _ in range(k):
            i = rng.randrange(len(pool))
            pool[i], pool[-1] = pool[-1], pool[i]
            out.append(pool.pop())
        return out


class ScriptedTransport(Metered):
    """In-process transport that delivers in an order given as a list: for reproducing a
    counterexample's schedule (Nigam et al. 2012, Sec. 6, Fig. 6) step by step.

    Each entry of ``script`` is one poll. It names the updates that poll delivers, each as
    a signed fact (``"+r(@2)"``, ``"-q(@3)"``, or ``(sign, pred, tuple)``); for each, in the
    order named, the oldest update in flight with that sign and fact (whatever its
    annotation) is delivered. The entry ``"*"`` delivers everything in flight, in send order.
    While the script lasts, nothing else is delivered; after it, every poll delivers
    everything in flight in send order (synchronous rounds: every channel FIFO). A script
    starts at the next poll: give one to the constructor for the first run, or to
    :meth:`follow` before a later run (a burst after the initial facts have settled).

    Parameters
    ----------
    script:
        The polls, in order: each a list of signed facts, one signed fact, or ``"*"``.
        Default: none (every poll delivers everything in flight).
    placement, clock, roundtrip:
        As for :class:`InMemoryTransport`.

    Raises
    ------
    InputError
        At construction, for an entry that is not a signed fact; from :meth:`poll`, when an
        entry names an update that is not in flight (the run left the script), listing what
        is in flight.
    """

    delivery = "scripted"

    def __init__(self, script=(), *, placement: Placement | None = None,
                 clock: Clock | None = None, roundtrip: bool = False):
        self.script: list = []
        self.polled = 0
        self.follow(script)
        self.meter = Meter(placement or Placement(), roundtrip)
        self.clock = clock or LogicalClock()
        self._flight: list[tuple[Any, tuple]] = []


    def follow(self, script) -> "ScriptedTransport":
        """Deliver the next polls as ``script`` says (see the class doc), in place of what
        is left of the current script.

        Raises
        ------
        InputError
            For an entry that is not a signed fact or ``"*"``.
        """
        self.script = [_script_step(entry, i + 1) for i, entry in enumerate(script)]
        self.polled = 0
        return self

    def describe(self) -> str:
        return f"scripted ({len(self.script)} polls, then everything in flight per poll)"

    def send(self, src: Any, dst: Any, updates: list) -> None:
        if not updates:
            return
        updates, data = self.meter.carry(src, dst, updates)
        if data is not None:
            updates = self.meter.rebuild(dst, data)
        self._flight.extend((dst, u) for u in updates)

    def in_flight(self) -> int:
        return len(self._flight)

    def poll(self) -> list[tuple[Any, tuple]]:
        return [(dst, u) for dst, ups in self.poll_batches() for u in ups]

    def poll_batches(self) -> list[tuple[Any, list]]:
        """The next poll of the script (or everything in flight after it), as
        ``[(destination, [update, ...])]`` in delivery order."""
        if not self._flight:
            return []
        if isinstance(self.clock, LogicalClock):
            self.clock.tick()
        step = self.script[self.polled] if self.polled < len(self.script) else None
        self.polled += 1
        if step is None:
            flat, self._flight = self._flight, []
        else:
            flat = [self._take(want) for want in step]
        out: list[tuple[Any, list]] = []
        for dst, u in flat:
            if out and out[-1][0] == dst:
                out[-1][1].append(u)
            else:
                out.append((dst, [u]))
        return out

    def _take(self, want: tuple) -> tuple[Any, tuple]:
        sign, pred, tup = want
        for i, (dst, u) in enumerate(self._flight):
            if u[0] == sign and u[1] == pred and u[2] == tup:
                return self._flight.pop(i)
        flight = ", ".join(_signed(u[0], u[1], u[2]) for _, u in self._flight)
        raise InputError(f"scripted poll {self.polled}: "
                         f"{_signed(sign, pred, tup)} is not in flight; "
                         f"in flight: {flight}")


def _script_step(entry, number: int) -> list | None:
    """One poll of a script as ``[(sign, pred, tuple), ...]``; ``None`` for ``"*"``."""
    if entry == "*":
        return None
    items = [entry] if isinstance(entry, (str, tuple)) else list(entry)
    out = []
    for item in items:
        if isinstance(item, str):
            text = item.strip()
            if text[:1] not in ("+", "-"):
                raise InputError(f"scripted poll {number}: {item!r} must start with + or -")
            try:
                fact = parse_atom(text[1:].rstrip("."))
            except PSNError as e:
                raise InputError(f"scripted poll {number}: {item!r} is not a fact: {e}"
                                 ) from None
            out.append((1 if text[0] == "+" else -1, fact.pred, fact.values))
        else:
            try:
                sign, pred, tup = item
            except (TypeError, ValueError):
                raise InputError(f"scripted poll {number}: {item!r} is not a signed fact"
                                 ) from None
            out.append((1 if sign in (1, "+") else -1, pred, tuple(tup)))
    return out


def _signed(sign: int, pred: str, tup: tuple) -> str:
    """``+p(1, a)``: an update as a script names it."""
    return ("+" if sign > 0 else "-") + f"{pred}(" + ", ".join(map(format_value, tup)) + ")"
