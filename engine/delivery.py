"""Delivery models: in what order, and after what delay, messages arrive.

Role: decide *when* a message sent at time ``t`` over a channel ``(src, dst)`` with base
latency ``L`` arrives. Channels are not FIFO in PSN (Nigam et al. 2012, Sec. 3.1): every
exact annotation scheme must reach the correct final state under any delivery order, so
the models include orders that overtake. Every transport reads the same ``--delivery``
specification with :func:`make_delivery`; the simulator uses the delays, the clockless
in-memory transport uses the order family. Three models:

- ``fifo``: arrival ``t + L`` (plus optional jitter), never before the previous message on
  the same channel, so every channel delivers in send order (what Liu et al. assume);
- ``random``: arrival ``t + L + U(0, jitter * L + jitter_abs)``, drawn from the simulation's
  seeded ``random.Random``: messages on one channel overtake each other;
- ``adversarial``: deterministic reversal: within each window of ``period`` consecutive
  messages on a channel, later messages get shorter delays, so a burst sent at one instant
  arrives in exactly reverse order (a deletion overtakes the insertion it cancels).

Deliberately not here: event loops and clocks (the transports), traffic accounting
(:mod:`engine.transport`), the simulator's processing-time model. No model drops or
duplicates messages: PSN assumes reliable channels.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ndlog.errors import InputError

__all__ = ["Delivery", "Fifo", "RandomJitter", "Adversarial", "make_delivery",
           "DELIVERY_MODELS", "parse_duration", "require_at_least", "MAX_DURATION",
           "MAX_JITTER"]

#: The longest duration (seconds) a delay, latency, processing time or wait may give:
#: 1e6 s, about 11.6 days. The simulator's virtual time stops at ``sim.clock.MAX_TIME``
#: (1e9 s), where a float still resolves a tenth of a microsecond; a longer duration,
#: or an infinite one through overflow, would push it past.
MAX_DURATION = 1e6
#: The largest relative jitter (a message takes at most ``1 + MAX_JITTER`` times its
#: latency, plus the absolute jitter).
MAX_JITTER = 1e3


class Delivery:
    """Base class: ``arrival(now, channel, latency, rng) -> time``.

    ``fifo`` tells the network to keep arrivals on a channel non-decreasing.
    """

    name = "base"
    fifo = False

    def delay(self, channel: tuple, latency: float, rng: random.Random) -> float:
        """Extra delay (seconds) beyond ``latency`` for the next message on ``channel``."""
        return 0.0

    def describe(self) -> str:
        return self.name


def require_at_least(what: str, value, low: float, duration: bool = False,
                     high: float | None = None) -> None:
    """Refuse ``value`` with an :class:`~ndlog.errors.InputError` naming ``what`` unless it
    is a finite number ``>= low`` (a negative delay would schedule a message before it was
    sent) and ``<= high``. ``duration``: ``value`` is in seconds, shown in a readable
    unit, and ``high`` defaults to :data:`MAX_DURATION`."""
    if duration and high is None:
        high = MAX_DURATION
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    shown = _duration_text(value) if duration and number and math.isfinite(value) \
        else repr(value)
    if not (number and math.isfinite(value) and value >= low):
        raise InputError(f"{what} must be a finite number >= {low:g}, got {shown}")
    if high is not None and value > high:
        if duration:
            raise InputError(f"{what} must be at most {high:g} s (about "
                             f"{high / 86400:.1f} days), got {shown}",
                             hint="simulated time stops at 1e9 s, where a float still "
                                  "resolves a tenth of a microsecond")
        raise InputError(f"{what} must be at most {high:g}, got {shown}")


def _duration_text(seconds: float) -> str:
    size = abs(seconds)
    if size and size < 1e-3:
        return f"{seconds * 1e6:g} us"
    if size and size < 1:
        return f"{seconds * 1e3:g} ms"
    return f"{seconds:g} s"


@dataclass
class Fifo(Delivery):
    """Every channel delivers in send order.

    ``jitter`` (relative, like :class:`RandomJitter`) varies the delay of each message, but
    a message never arrives before an earlier one on its channel; ``jitter=0`` (the default)
    charges exactly the latency.
    """

    jitter: float = 0.0
    jitter_abs: float = 0.0
    name = "fifo"
    fifo = True

    def __post_init__(self):
        require_at_least("fifo delivery: jitter", self.jitter, 0, high=MAX_JITTER)
        require_at_least("fifo delivery: abs", self.jitter_abs, 0, duration=True)

    def delay(self, channel, latency, rng):
        if not self.jitter and not self.jitter_abs:
            return 0.0
        return rng.uniform(0.0, self.jitter * latency + self.jitter_abs)

    def describe(self) -> str:
        if not self.jitter and not self.jitter_abs:
            return "fifo"
        return f"fifo(jitter={self.jitter:g}, abs={self.jitter_abs * 1e3:g} ms)"


@dataclass
class RandomJitter(Delivery):
    """Uniform random extra delay in ``[0, jitter * latency + jitter_abs]`` seconds.

    Parameters
    ----------
    jitter:
        Relative jitter: 1.0 lets a message take up to twice its latency.
    jitter_abs:
        Absolute jitter in seconds (default 1 ms), so that zero-latency messages (a node to
        itself) are reordered too.
    """

    jitter: float = 1.0
    jitter_abs: float = 0.001
    name = "random"

    def __post_init__(self):
        require_at_least("random delivery: jitter", self.jitter, 0, high=MAX_JITTER)
        require_at_least("random delivery: abs", self.jitter_abs, 0, duration=True)

    def delay(self, channel, latency, rng):
        return rng.uniform(0.0, self.jitter * latency + self.jitter_abs)

    def describe(self) -> str:
        return f"random(jitter={self.jitter:g}, abs={self.jitter_abs * 1e3:g} ms)"


@dataclass
class Adversarial(Delivery):
    """Deterministic reordering: within every window of ``period`` messages on a channel,
    message ``k`` gets extra delay ``spread * (1 - (k % period) / period)``, so later
    messages overtake earlier ones (exact reversal for messages sent at one instant).

    ``spread`` is in seconds (default 50 ms, the transit-transit latency).
    """

    period: int = 16
    spread: float = 0.05
    name = "adversarial"

    def __post_init__(self):
        if isinstance(self.period, bool) or not isinstance(self.period, int) \
                or self.period < 1:
            raise InputError(f"adversarial delivery: period must be a whole number >= 1, "
                             f"got {self.period!r}")
        require_at_least("adversarial delivery: spread", self.spread, 0, duration=True)
        self._count: dict = {}

    def delay(self, channel, latency, rng):
        k = self._count.get(channel, 0)
        self._count[channel] = k + 1
        return self.spread * (1.0 - (k % self.period) / self.period)

    def describe(self) -> str:
        return f"adversarial(period={self.period}, spread={self.spread * 1e3:g} ms)"


DELIVERY_MODELS = ("fifo", "random", "adversarial")


def make_delivery(spec: "str | Delivery") -> Delivery:
    """A delivery model from a name or ``name:key=value,...`` string.

    ``"fifo"``, ``"fifo:jitter=1"``, ``"random"``, ``"random:jitter=0.5,abs=2ms"``,
    ``"adversarial"``,
    ``"adversarial:period=8,spread=20ms"``.
    """
    if isinstance(spec, Delivery):
        return spec
    name, _, rest = str(spec).partition(":")
    opts = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq:
            raise InputError(f"bad delivery option {part!r} in {spec!r} (want key=value)")
        if key.strip() in opts:
            raise InputError(f"bad delivery model {spec!r}: option {key.strip()!r} is given "
                             f"twice", hint="give each option once")
        opts[key.strip()] = value.strip()
    if name not in DELIVERY_MODELS:
        raise InputError(f"unknown delivery model {spec!r}",
                         hint=f"one of {', '.join(DELIVERY_MODELS)}")
    try:
        if name == "fifo":
            model: Delivery = Fifo(jitter=_option(float, opts, "jitter", 0.0),
                                   jitter_abs=parse_duration(opts.pop("abs", "0")))
        elif name == "random":
            model = RandomJitter(jitter=_option(float, opts, "jitter", 1.0),
                                 jitter_abs=parse_duration(opts.pop("abs", "1ms")))
        else:
            model = Adversarial(period=_option(int, opts, "period", 16),
                                spread=parse_duration(opts.pop("spread", "50ms")))
    except ValueError as exc:
        raise InputError(f"bad delivery model {spec!r}: {exc}") from None
    except InputError as exc:
        raise InputError(f"bad delivery model {spec!r}: {exc.message}", hint=exc.hint) \
            from None
    if opts:
        raise InputError(f"unknown option(s) {', '.join(opts)} for delivery {name!r}")
    return model


def _option(conv, opts: dict, key: str, default):
    """``conv`` (``int`` or ``float``) of option ``key`` popped from ``opts``, ``default``
    without it; a ValueError naming the option and its text otherwise."""
    if key not in opts:
        return default
    text = opts.pop(key)
    try:
        return conv(text)
    except ValueError:
        kind = "a whole number" if conv is int else "a number"
        raise ValueError(f"{key} must be {kind}, not {text!r}") from None


_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_duration(text: "str | float") -> float:
    """Seconds from ``"20us"``, ``"1.5ms"``, ``"0.2s"`` or a plain number of seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    t = text.strip()
    for unit in sorted(_UNITS, key=len, reverse=True):
        if t.endswith(unit):
            num = t[: -len(unit)].strip()
            try:
                return float(num) * _UNITS[unit]
            except ValueError:
                break
    try:
        return float(t)
    except ValueError:
        raise ValueError(f"not a duration: {text!r} (e.g. 20us, 1.5ms, 0.2s)") from None
