"""The event queue of the discrete-event simulator: a heap of timed callbacks.

Role: hold what happens next in virtual time. Events are ordered by ``(time, seq)``: at equal
times the one scheduled first runs first, so a run is a deterministic function of the program,
the topology and the seed (no hidden randomness, no wall-clock ordering).
Cancelling an event marks it dead; the heap drops dead events lazily when they surface.

Deliberately not here: the meaning of events (message delivery, processing, expiry live in
:mod:`sim.network`), the notion of "now" seen by the engine (:mod:`sim.clock`), and any
randomness.
"""

from __future__ import annotations

import heapq
import math
from typing import Callable

__all__ = ["Event", "EventQueue"]


class Event:
    """One scheduled callback: ``fn(*args)`` at virtual time ``time``.

    ``seq`` is the queue's insertion counter and breaks ties between events at the same time;
    ``kind`` is a free label (``"deliver"``, ``"process"``, ``"expire"``) used in traces.
    """

    __slots__ = ("time", "seq", "fn", "args", "kind", "cancelled", "_queue")

    def __init__(self, time: float, seq: int, fn: Callable, args: tuple, kind: str,
                 queue: "EventQueue | None" = None):
        self.time = time
        self.seq = seq
        self.fn = fn
        self.args = args
        self.kind = kind
        self.cancelled = False
        self._queue = queue

    def cancel(self) -> None:
        """Do not run this event (it stays in the heap until it surfaces)."""
        if self._queue is not None:
            self._queue.cancel(self)
        else:
            self.cancelled = True

    def __lt__(self, other: "Event") -> bool:
        return (self.time, self.seq) < (other.time, other.seq)

    def __repr__(self) -> str:
        state = " cancelled" if self.cancelled else ""
        return f"<Event {self.kind} t={self.time:g} #{self.seq}{state}>"


class EventQueue:
    """A min-heap of :class:`Event` keyed by ``(time, seq)`` (stored as tuples, so the heap
    compares in C).

    Examples
    --------
    >>> q = EventQueue()
    >>> for t, label in [(2.0, "b"), (1.0, "a"), (2.0, "c")]:
    ...     _ = q.push(t, print, (label,))
    >>> while q:
    ...     ev = q.pop(); ev.fn(*ev.args)
    a
    b
    c
    """

    __slots__ = ("_heap", "_seq", "_live")

    def __init__(self):
        self._heap: list[Event] = []
        self._seq = 0
        self._live = 0

    def push(self, time: float, fn: Callable, args: tuple = (), kind: str = "call") -> Event:
        """Schedule ``fn(*args)`` at ``time``; returns the :class:`Event` (for cancelling)."""
        if time != time or time == math.inf:
            raise ValueError(f"cannot schedule an event at time {time!r}")
        ev = Event(time, self._seq, fn, args, kind, self)
        heapq.heappush(self._heap, (time, self._seq, ev))
        self._seq += 1
        self._live += 1
        return ev

    def cancel(self, ev: Event) -> None:
        """Cancel ``ev`` if it is still pending."""
        if not ev.cancelled:
            ev.cancelled = True
            self._live -= 1

    def _drop_dead(self) -> None:
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)

    def peek_time(self) -> float:
        """Time of the next live event, ``inf`` when there is none."""
        self._drop_dead()
        return self._heap[0][0] if self._heap else math.inf

    def pop(self) -> Event:
        """Remove and return the next live event; ``IndexError`` when empty."""
        self._drop_dead()
        ev = heapq.heappop(self._heap)[2]
        ev.cancelled = True  # it is spent: a later cancel() must not count it again
        self._live -= 1
        return ev

    def __len__(self) -> int:
        return self._live

    def __bool__(self) -> bool:
        return self._live > 0

    @property
    def scheduled(self) -> int:
        """Events ever scheduled (the tie-breaking sequence counter)."""
        return self._seq

    def pending(self) -> list[Event]:
        """Live events in time order (for inspection and tests)."""
        return [e for _, _, e in sorted(self._heap) if not e.cancelled]

