"""The simulated network: a Transport (``engine.transport``) that lives in virtual time.

Role: :class:`SimTransport` is what :class:`engine.Network` sends through when it runs in
the simulator. It implements the Transport protocol (``connect``, ``send``, ``poll``,
``in_flight``, ``clock``, ``placement``, ``metrics``) on a :class:`~sim.clock.VirtualClock`:

- a message from node ``src`` to node ``dst`` arrives after the topology's latency (the link's
  own latency between neighbours, the shortest-path latency otherwise;
  :meth:`topologies.graph.Topology.latency`) plus what the delivery model adds
  (:mod:`sim.delivery`: FIFO per channel, random jitter that reorders, adversarial);
- nodes live on workers (:class:`engine.placement.Placement`); a worker processes the nodes
  that received updates one after the other, each for the processing-time model's cost of
  the updates it received, and a worker busy until ``b`` takes new deliveries only at
  ``b``; the messages a node sends while processing leave when its batch is done;
- :meth:`poll` advances virtual time to the next arrival (running every event due at that
  instant, soft-state expiries included) and hands out what arrived;
- traffic is counted as serialized on the wire (``engine.wire`` through the engine's codec):
  :class:`engine.transport.TrafficMetrics` like every transport, plus
  :class:`sim.metrics.Counters` with the receiving side, updates processed and messages
  between two nodes of one worker counted apart (they cost no traffic).

Deliberately not here: the PSN iteration (the engine steps nodes after each poll), workloads
and checks (:mod:`sim.simulation`), metric files (:mod:`sim.metrics`). All randomness comes
from the ``random.Random`` handed in.
"""

from __future__ import annotations

import math
import random
from typing import Any, Callable, Hashable

from engine.delivery import Delivery, make_delivery, require_at_least
from engine.placement import Placement
from engine.transport import Meter, Metered

from .clock import VirtualClock
from .delivery import ProcessingModel
from .metrics import Counters

__all__ = ["LatencyModel", "SimTransport"]


def _shuffle(rng: random.Random, x: list) -> None:
    """Shuffle ``x`` in place with ``rng``: the permutation ``rng.shuffle(x)`` makes.

    The same Fisher-Yates walk and the same draws as ``random.Random.shuffle`` (each index
    drawn from ``rng.getrandbits`` with rejection, as ``Random._randbelow`` does), written
    out so that no function call is paid per element: the random delivery model shuffles
    every message of more than one update, and ``Random.shuffle`` took 9 % of cProfile's
    time in a simulator run of reachable with set semantics. Written here, the permutation
    for a seed no longer depends on how the running Python implements ``shuffle`` either.

    Parameters
    ----------
    rng:
        The run's random number generator.
    x:
        The list to permute.
    """
    getrandbits = rng.getrandbits
    for i in range(len(x) - 1, 0, -1):
        n = i + 1
        k = n.bit_length()
        j = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        x[i], x[j] = x[j], x[i]


class LatencyModel:
    """Message latency in seconds between two nodes, from a topology.

    Parameters
    ----------
    topology:
        A :class:`topologies.Topology` (latencies in ms) or ``None`` (every message between
        two different nodes takes ``default`` seconds).
    default:
        Latency (s) for nodes the topology does not know, or disconnected pairs.
    scale:
        Seconds per topology unit (``1e-3``: topology latencies are milliseconds).
    local:
        ``None`` charges the topology latency even between two nodes of one worker (the
        simulated network is what is modelled); a number (e.g. ``0``) charges that instead.
    placement:
        Needed with ``local``.
    """

    def __init__(self, topology=None, default: float = 0.001, scale: float = 1e-3,
                 local: float | None = None, placement: Placement | None = None):
        require_at_least("the default latency", default, 0, duration=True)
        if local is not None:
            require_at_least("the latency between nodes of one worker (local latency)",
                             local, 0, duration=True)
        self.topology = topology
        self.default = default
        self.scale = scale
        self.local = local
        self.placement = placement
        self._cache: dict = {}
        self.fallbacks = 0

    def __call__(self, src: Hashable, dst: Hashable) -> float:
        key = (src, dst)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._compute(src, dst)
        return hit

    def _compute(self, src, dst) -> float:
        if src == dst:
            return 0.0
        if (self.local is not None and self.placement is not None
                and self.placement.same_worker(src, dst)):
            return self.local
        topo = self.topology
        if topo is None or not _is_node(topo, src) or not _is_node(topo, dst):
            self.fallbacks += 1
            return self.default
        lat = topo.latency(src, dst)
        if lat == math.inf:
            self.fallbacks += 1
            return self.default
        return lat * self.scale


def _is_node(topo, x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < topo.n


class _Worker:
    __slots__ = ("id", "busy_until", "busy_time", "batches", "pending", "waking")

    def __init__(self, wid):
        self.id = wid
        self.pending: list = []     # arrivals waiting for the worker, in arrival order
        self.waking = False
        self.busy_until = 0.0
        self.busy_time = 0.0
        self.batches = 0


class SimTransport(Metered):
    """Transport over virtual time (see the module docstring).

    Parameters
    ----------
    topology:
        Where latencies come from (``None``: ``latency`` or 1 ms per message).
    delivery:
        ``"fifo"``, ``"random"``, ``"adversarial"`` (options as in
        :func:`sim.delivery.make_delivery`) or a :class:`~sim.delivery.Delivery`.
    seed, rng:
        The run's randomness: ``rng`` if given, else ``random.Random(seed)``.
    placement:
        A :class:`engine.placement.Placement` (default: each node its own worker).
    processing:
        The per-update processing-time model (:class:`sim.delivery.ProcessingModel`).
    clock:
        A :class:`~sim.clock.VirtualClock` (default: a new one at 0 s).
    latency:
        ``(src, dst) -> seconds``; default :class:`LatencyModel` on ``topology``.
    roundtrip:
        Decode every message between two nodes from its wire bytes in the receiver's
        context on arrival (always done across workers for context-bound annotations).
    """

    def __init__(self, topology=None, *, delivery: "str | Delivery" = "fifo", seed: int = 0,
                 rng: random.Random | None = None, placement: Placement | None = None,
                 processing: ProcessingModel | None = None,
                 clock: VirtualClock | None = None,
                 latency: Callable[[Hashable, Hashable], float] | None = None,
                 roundtrip: bool = False):
        self.topology = topology
        self.delivery = make_delivery(delivery)
        self.rng = rng if rng is not None else random.Random(seed)
        self.meter = Meter(placement or Placement(), roundtrip)
        self.processing = processing or ProcessingModel()
        self.clock = clock or VirtualClock()
        self.latency = latency or LatencyModel(topology)
        self.counters = Counters()
        self._workers: dict = {}
        self._channel_last: dict = {}
        self._arrived: list = []          # (dst, updates) delivered, not yet polled
        self._in_flight = 0               # updates sent, not yet handed out by poll
        self._done_at: dict = {}          # node -> completion time of its current batch
        self.last_done = 0.0              # latest batch completion (convergence)
        self.deferred = 0                 # arrivals postponed because a worker was busy
        self.polls = 0
        self.trace: list | None = None    # set to [] to record (kind, time, src, dst, n)

    # ------------------------------------------------------------------ Transport protocol


    def describe(self) -> str:
        """The delivery model with its options."""
        return self.delivery.describe()

    def in_flight(self) -> int:
        """Updates sent and not yet handed out by :meth:`poll`."""
        return self._in_flight

    def send(self, src: Any, dst: Any, updates: list) -> None:
        """Accept ``updates`` from node ``src`` to node ``dst`` (``src=None``: base facts
        injected by the environment, delivered at ``dst`` now and for free).

        Called by the engine after a poll, a node's messages leave when its batch is done.
        """
        if not updates:
            return
        updates = list(updates)
        now = self.clock.now()
        n = len(updates)
        self._in_flight += n
        if src is None:
            self.counters.injected += n
            self._schedule(now, None, dst, updates, None)
            return
        depart = max(now, self._done_at.get(src, now))
        data = self._account(src, dst, updates)
        if src == dst:
            self._schedule(depart, src, dst, updates, None)
            return
        base = self.latency(src, dst)
        channel = (src, dst)
        when = depart + base + self.delivery.delay(channel, base, self.rng)
        if self.delivery.fifo:
            last = self._channel_last.get(channel, 0.0)
            if when < last:
                when = last
            self._channel_last[channel] = when
        if self.delivery.name == "adversarial" and any(u[0] < 0 for u in updates):
            when = depart + base       # deletions take the fast lane
        self._schedule(when, src, dst, updates, data)

    def poll(self) -> list[tuple[Any, tuple]]:
        """Advance virtual time to the next arrival and hand out what arrived then.

        Every event due at that instant runs first (arrivals, soft-state expiries). Returns
        ``[(destination, update)]``, empty only when nothing is in flight. Each receiving
        node's batch is charged to its worker by the processing-time model.
        """
        return [(dst, u) for dst, ups in self.poll_batches() for u in ups]

    def poll_batches(self) -> list[tuple[Any, list]]:
        """:meth:`poll` grouped by message, ``[(destination, [update, ...])]`` in arrival
        order: the engine's fast path (``engine.Network`` uses it when a transport has
        it). Flattening to one pair per update and regrouping took about 19 s of a 176 s
        cProfile run of the 1,000-node dense row with set semantics (13 million updates)."""
        clock = self.clock
        while not self._arrived:
            if not self._in_flight:
                return []
            if clock.idle:  # pragma: no cover - would be a bug of this module
                raise RuntimeError(f"{self._in_flight} updates in flight but no event "
                                   f"scheduled")
            t = clock.next_time()
            while clock.next_time() == t:
                clock.step()
        batch, self._arrived = self._arrived, []
        self.polls += 1
        per_node: dict = {}
        total = 0
        for dst, updates in batch:
            n = len(updates)
            per_node[dst] = per_node.get(dst, 0) + n
            total += n
        self._in_flight -= total
        self._charge(per_node)
        return batch

    # ------------------------------------------------------------------ driving

    def now(self) -> float:
        return self.clock.now()

    def busy_time(self) -> dict:
        """Simulated seconds each worker spent processing."""
        return {w.id: w.busy_time for w in self._workers.values()}

    # ------------------------------------------------------------------ internals

    def _worker(self, wid) -> _Worker:
        w = self._workers.get(wid)
        if w is None:
            w = self._workers[wid] = _Worker(wid)
        return w

    def _account(self, src, dst, updates: list) -> bytes | None:
        """Count the traffic of one message (:class:`engine.transport.Meter`) and the
        simulator's own counters; returns the message's bytes when the receiver must decode
        it on arrival, else ``None``."""
        meter = self.meter
        n = len(updates)
        wsrc = self.placement.worker(src)
        if src == dst:
            meter.local(src, n)
            self.counters.record_send(src, dst, wsrc, wsrc, n, 0, True)
            return None
        data, size, crosses = meter.encode(src, dst, updates)
        wdst = self.placement.worker(dst)
        self.counters.record_send(src, dst, wsrc, wdst, n, size, not crosses)
        return data

    def _schedule(self, when: float, src, dst, updates: list, data) -> None:
        if self.trace is not None:
            self.trace.append(("send", self.clock.now(), src, dst, len(updates), when))
        self.clock.call_at(when, self._arrive, src, dst, updates, data, kind="deliver")

    def _arrive(self, src, dst, updates: list, data) -> None:
        """A message reaches ``dst``'s worker: delivered now, or queued (in arrival order)
        until the worker is free."""
        now = self.clock.now()
        w = self._worker(self.placement.worker(dst))
        if w.busy_until > now or w.pending:
            self.deferred += 1
            w.pending.append((src, dst, updates, data))
            if not w.waking:
                w.waking = True
                self.clock.call_at(max(now, w.busy_until), self._wake, w, kind="wake")
            return
        self._hand_over(src, dst, updates, data)

    def _wake(self, w: _Worker) -> None:
        now = self.clock.now()
        if w.busy_until > now:
            self.clock.call_at(w.busy_until, self._wake, w, kind="wake")
            return
        w.waking = False
        pending, w.pending = w.pending, []
        for item in pending:
            self._hand_over(*item)

    def _hand_over(self, src, dst, updates: list, data) -> None:
        if data is not None:
            updates = self.meter.rebuild(dst, data)
        if len(updates) > 1 and not self.delivery.fifo:
            if self.delivery.name == "adversarial":
                updates = updates[::-1]
            else:
                _shuffle(self.rng, updates)
        if self.trace is not None:
            now = self.clock.now()
            self.trace.append(("deliver", now, src, dst, len(updates), now))
        self._arrived.append((dst, updates))

    def _charge(self, per_node: dict) -> None:
        """Charge each receiving node's batch to its worker, in arrival order."""
        now = self.clock.now()
        self._done_at = {}
        proc = self.processing
        for node, n in per_node.items():
            w = self._worker(self.placement.worker(node))
            start = max(now, w.busy_until)
            cost = proc.cost(n)
            done = start + cost
            w.busy_until = done
            w.busy_time += cost
            w.batches += 1
            self._done_at[node] = done
            self.counters.record_processed(node, w.id, n)
            if done > self.last_done:
                self.last_done = done
