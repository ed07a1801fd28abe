"""A transport whose next delivery is chosen by the caller: the engine under a schedule.

Role: the in-flight messages of an in-memory run, handed out one choice at a time by a
callback, so that a verifier (``psn.verify``) can drive the one hosting loop
(:class:`engine.host.Host`, through :class:`engine.network.Network`) along any delivery order
it likes: an exhaustive search, a seeded random walk, a replayed counterexample. Channels
are not FIFO in PSN (Nigam et al. 2012, Sec. 3.1), so any in-flight message may be chosen;
:meth:`ScheduledTransport.enabled` also lists what a FIFO network allows (the oldest
message of every channel).

Granularity. A *message* is what one ``send`` carries: the updates one node step produces
for one destination (:meth:`engine.host.Host.send`); a base update injected by the
environment (``src`` ``None``) is a message of its own, so the updates of one burst reach
their nodes in any order. Each poll delivers the messages the callback chose (usually
one), and the host steps the receiving nodes before it polls again.

Deliberately not here: choosing (the callback's job), hashing states, comparing with a
reference, clocks other than a logical counter, latencies. Traffic is encoded and counted by
a :class:`engine.transport.Meter`, as in every transport.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .placement import Placement
from .transport import LogicalClock, Meter, Metered

__all__ = ["Message", "ScheduledTransport", "oldest_first"]


class Message:
    """One in-flight message.

    Attributes
    ----------
    seq:
        Send order, from 0 (the transport's counter): the FIFO rank of the message.
    src:
        Sending node, ``None`` for an update the environment injected.
    dst:
        Destination node.
    updates:
        ``[(sign, pred, tuple, annotation)]`` as the receiver will get them.
    """

    __slots__ = ("seq", "src", "dst", "updates", "key")

    def __init__(self, seq: int, src: Any, dst: Any, updates: list):
        self.seq = seq
        self.src = src
        self.dst = dst
        self.updates = updates
        #: free for the caller (e.g. a canonical fingerprint); the transport never reads it
        self.key = None

    @property
    def channel(self) -> tuple:
        """``(src, dst)``: the channel the message travels on."""
        return (self.src, self.dst)

    def __repr__(self) -> str:
        return (f"<Message #{self.seq} {self.src!r} -> {self.dst!r}: "
                f"{len(self.updates)} update(s)>")


def oldest_first(transport: "ScheduledTransport") -> list[Message]:
    """The default choice: the message sent first (a FIFO network with one global queue)."""
    return [transport.pending[0]]


class ScheduledTransport(Metered):
    """In-memory transport that asks ``choose`` which in-flight messages to deliver next.

    Parameters
    ----------
    choose:
        ``choose(transport) -> [Message, ...]``, called on every poll while something is in
        flight; returns in-flight messages (from :attr:`pending` or :meth:`enabled`). The
        host steps every node that received something before it polls again, so several
        messages for one node make one batch for its next step, and messages for several
        nodes one synchronous round. It may raise to stop the run (the exception leaves
        :meth:`engine.network.Network.run`). Default :func:`oldest_first`.
    placement:
        Node to worker (default: one worker per node).
    roundtrip:
        Rebuild every message between two nodes from its msgpack bytes.
    on_send:
        Called with every new :class:`Message` (e.g. to fingerprint it once).
    on_idle:
        Called when a poll finds nothing in flight (the host then flushes its nodes' send
        stages, or returns: a point of quiescence).
    """

    def __init__(self, choose: Callable[["ScheduledTransport"], Sequence[Message]] | None
                 = None, *, placement: Placement | None = None, roundtrip: bool = False,
                 on_send: Callable[[Message], None] | None = None,
                 on_idle: Callable[[], None] | None = None):
        self.choose = choose or oldest_first
        self.meter = Meter(placement or Placement(), roundtrip)
        self.clock = LogicalClock()
        self.on_send = on_send
        self.on_idle = on_idle
        #: in-flight messages in send order
        self.pending: list[Message] = []
        self.sent = 0
        self.polls = 0
        self._count = 0

    def describe(self) -> str:
        return "scheduled"

    # -- sending ---------------------------------------------------------------------------
    def send(self, src: Any, dst: Any, updates: list) -> None:
        if not updates:
            return
        updates, data = self.meter.carry(src, dst, updates)
        if data is not None:
            updates = self.meter.rebuild(dst, data)
        if src is None:
            for u in updates:
                self._add(src, dst, [u])
        else:
            self._add(src, dst, list(updates))

    def _add(self, src, dst, updates: list) -> None:
        msg = Message(self.sent, src, dst, updates)
        self.sent += 1
        self._count += len(updates)
        self.pending.append(msg)
        if self.on_send is not None:
            self.on_send(msg)

    # -- choosing --------------------------------------------------------------------------
    def enabled(self, fifo: bool = False) -> list[Message]:
        """The messages that may be delivered next, in send order: every in-flight message,
        or with ``fifo`` the oldest in-flight message of each channel ``(src, dst)``."""
        if not fifo:
            return list(self.pending)
        seen: set = set()
        out = []
        for m in self.pending:
            ch = (m.src, m.dst)
            if ch not in seen:
                seen.add(ch)
                out.append(m)
        return out

    def in_flight(self) -> int:
        return self._count

    def poll(self) -> list[tuple[Any, tuple]]:
        return [(dst, u) for dst, ups in self.poll_batches() for u in ups]

    def poll_batches(self) -> list[tuple[Any, list]]:
        """The chosen messages as ``[(destination, updates)]`` in send order (one entry per
        message); empty when nothing is in flight."""
        if not self.pending:
            if self.on_idle is not None:
                self.on_idle()
            return []
        chosen = sorted(self.choose(self), key=lambda m: m.seq)
        if not chosen:
            raise ValueError("a schedule chose no message while messages are in flight")
        ids = {id(m) for m in chosen}
        if len(ids) != len(chosen):
            raise ValueError("a schedule chose the same message twice")
        before = len(self.pending)
        self.pending = [m for m in self.pending if id(m) not in ids]
        if before - len(self.pending) != len(chosen):
            raise ValueError("a schedule chose a message that is not in flight")
        self._count -= sum(len(m.updates) for m in chosen)
        self.polls += 1
        self.clock.tick()
        return [(m.dst, m.updates) for m in chosen]
