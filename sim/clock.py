"""Virtual time: the simulator's clock, which the engine sees through the Clock protocol.

Role: :class:`VirtualClock` owns an :class:`~sim.events.EventQueue` and a current time in
simulated seconds. ``now()`` reads it; ``call_later``/``call_at`` schedule callbacks; ``run``
pops events in ``(time, seq)`` order, advancing ``now`` to each event's time before running
it, until the queue is empty (quiescence), a time limit or an event budget. Time never moves
backwards and never moves without an event: a simulated second costs nothing if nothing
happens in it.

Deliberately not here: what events mean (:mod:`sim.network`), wall-clock time (only the
metrics measure it), threads or asyncio.
"""

from __future__ import annotations

import math
from typing import Callable

from ndlog.errors import InputError

from .events import Event, EventQueue

__all__ = ["VirtualClock", "MAX_TIME"]

#: Virtual time never passes 1e9 s (about 31.7 years): there a float still resolves about
#: a tenth of a microsecond, so microsecond processing costs and millisecond latencies
#: keep their size. Each option's duration is bounded (``engine.delivery.MAX_DURATION``);
#: the clock refuses an event past this ceiling, and so does a wait.
MAX_TIME = 1e9


def beyond(when: float, what: str = "an event") -> InputError:
    """The error for ``what`` at virtual time ``when`` past :data:`MAX_TIME`."""
    return InputError(f"simulated time would pass {MAX_TIME:g} s: {what} at {when:.15g} s",
                      hint=f"PSN's virtual time stops at {MAX_TIME:g} s (about 31.7 years),"
                           f" where a float still resolves a tenth of a microsecond; use "
                           f"shorter or fewer waits, delays or lifetimes")


class VirtualClock:
    """A discrete-event clock in simulated seconds (the Clock protocol of ``engine.transport``).

    Parameters
    ----------
    start:
        Initial virtual time, seconds.

    Examples
    --------
    >>> clock = VirtualClock()
    >>> seen = []
    >>> _ = clock.call_later(0.5, lambda: seen.append(clock.now()))
    >>> _ = clock.call_later(0.2, lambda: seen.append(clock.now()))
    >>> clock.run()
    2
    >>> seen, clock.now()
    ([0.2, 0.5], 0.5)
    """

    def __init__(self, start: float = 0.0):
        self._now = float(start)
        self.queue = EventQueue()
        self.events_run = 0

    # ------------------------------------------------------------------ Clock protocol

    def now(self) -> float:
        """Current virtual time, seconds."""
        return self._now

    def call_at(self, when: float, fn: Callable, *args, kind: str = "call") -> Event:
        """Run ``fn(*args)`` at virtual time ``when`` (not earlier than now, not later than
        :data:`MAX_TIME`: an :class:`~ndlog.errors.InputError` says so)."""
        if when < self._now:
            raise ValueError(f"cannot schedule at {when} s: the clock is already at "
                             f"{self._now} s")
        if when > MAX_TIME:
            raise beyond(when, f"a {kind} event")
        return self.queue.push(when, fn, args, kind)

    def call_later(self, delay: float, fn: Callable, *args, kind: str = "call") -> Event:
        """Run ``fn(*args)`` ``delay`` simulated seconds from now (``delay >= 0``; past
        :data:`MAX_TIME`, an :class:`~ndlog.errors.InputError` says so)."""
        if delay < 0:
            raise ValueError(f"negative delay {delay!r}")
        if self._now + delay > MAX_TIME:
            raise beyond(self._now + delay, f"a {kind} event")
        return self.queue.push(self._now + delay, fn, args, kind)

    schedule = call_later

    def cancel(self, ev: Event) -> None:
        """Cancel a pending event."""
        self.queue.cancel(ev)

    # ------------------------------------------------------------------ driving

    @property
    def idle(self) -> bool:
        """True when no event is pending (the simulated system is quiescent)."""
        return not self.queue

    def next_time(self) -> float:
        """Time of the next pending event, ``inf`` if none."""
        return self.queue.peek_time()

    def step(self) -> bool:
        """Run the next event; False if there was none."""
        if not self.queue:
            return False
        ev = self.queue.pop()
        self._now = ev.time
        self.events_run += 1
        ev.fn(*ev.args)
        return True

    def run(self, until: float = math.inf, max_events: int | None = None,
            on_event: Callable[[Event], None] | None = None) -> int:
        """Run events in order until the queue is empty, ``until`` or ``max_events``.

        Events at exactly ``until`` still run. Unless stopped by ``max_events``, a finite
        ``until`` leaves the clock at ``until`` (one past :data:`MAX_TIME` is refused with
        an :class:`~ndlog.errors.InputError`). Returns the number of events run.
        """
        if until != math.inf and until > MAX_TIME:
            raise beyond(until, "the end of a run")
        n = 0
        queue = self.queue
        while queue:
            if max_events is not None and n >= max_events:
                return n
            if queue.peek_time() > until:
                break
            ev = queue.pop()
            self._now = ev.time
            self.events_run += 1
            n += 1
            ev.fn(*ev.args)
            if on_event is not None:
                on_event(ev)
        if until != math.inf and until > self._now:
            self._now = until
        return n

    def advance(self, delta: float) -> int:
        """Run every event due in the next ``delta`` seconds and move ``now`` by ``delta``."""
        target = self._now + delta
        n = self.run(until=target)
        self._now = max(self._now, target)
        return n
