"""The Ray actor of one worker: a :class:`~psn.distributed.shard.Shard` behind Ray calls.

Role: the process boundary. A :class:`ShardActor` is a *synchronous, single-threaded* Ray
actor (so its calls never interleave, and one CUDD manager is only ever used by one thread:
CUDD is not thread-safe). It is created empty and configured by the driver with an *epoch*
(:meth:`ShardActor.configure`); every later call carries the epoch, and a call of an older
epoch is ignored, so batches still in flight from before a rollback can never leak into the
replayed run. Everything that carries updates is msgpack bytes (:mod:`engine.wire`): bursts
from the driver (:meth:`inject`), batches from other workers (:meth:`deliver`), the
relations and metrics sent back. Batches to other workers are fire-and-forget calls of
their :meth:`deliver`; no FIFO order between workers is assumed (the engine does not need
it), and none is needed for termination detection: the driver counts batches sent and
received per worker (:meth:`status`).

The cyclic garbage collector is paused for a whole epoch (:func:`ndlog.gcpause.relaxed_gc`
held from one :meth:`~ShardActor.configure` to the next), not only while a call runs:
with it running between calls, each worker of reachable on the dense 1,000-node topology
spent 3.7 and 5.4 s of a 47 s run in collections (five full ones each, which traverse the
whole shard; timed with ``gc.callbacks``), while the calls' own cyclic garbage came to
about 2,200 objects per worker over a 300-node run. A new epoch collects the previous
one's shard before pausing again.

An error inside a fire-and-forget call cannot reach the driver through its return value, so
the actor keeps the first error (it still propagates to Ray) and reports it with
:meth:`status`: a :class:`ndlog.errors.PSNError` as itself (the driver raises it, span and
all), anything else as its traceback text.

Deliberately not here: the engine loop (``shard``), termination detection, recovery and the
ledger (``psn.distributed.network``), starting Ray (``psn.distributed.runtime``).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import traceback

import ray

from ndlog.errors import PSNError
from ndlog.gcpause import relaxed_gc

from .shard import Shard, pack

__all__ = ["ShardActor", "actor_class"]


class ShardActor:
    """One worker (wrapped by :func:`actor_class` into a Ray actor)."""

    def __init__(self):
        self.epoch = -1
        self.shard: Shard | None = None
        self.peers: list = []
        self.error = None
        self.before_deliver = None
        self._prepared: tuple | None = None
        self._paused = contextlib.ExitStack()   # the collector's pause of this epoch

    def ping(self) -> tuple[int, int]:
        """``(pid, epoch)``; epoch ``-1`` until configured (e.g. just restarted)."""
        return os.getpid(), self.epoch

    def configure(self, epoch: int, index: int, key: str, program, options,
                  placement, peers: list, on_node=None) -> int:
        """Start epoch ``epoch`` with an empty shard: drop every node and counter.

        ``program`` is the source :class:`ndlog.ast.Program` (prepared here once per ``key``
        and cached), ``options`` the run's :class:`engine.RunOptions` (resolved here, as
        every engine resolves them), ``placement`` the :class:`engine.Placement` of nodes
        on worker indexes, ``peers`` the actor handles of all workers by index, ``on_node``
        an optional callable run on every new node. This one-time setup travels through
        Ray's own serialization; updates never do.
        """
        from engine import prepare
        self._pause_collector()
        if self._prepared is None or self._prepared[0] != key:
            self._prepared = (key, prepare(program))
        prepared = self._prepared[1]
        self.epoch = epoch
        self.peers = list(peers)
        self.error = None
        self.shard = Shard(index, prepared, options.resolve(prepared, fixed_order=True),
                           placement, on_node=on_node)
        return os.getpid()

    def _pause_collector(self) -> None:
        """End the last epoch's pause of the cyclic collector, collect what that epoch left
        (its shard, once dropped), and pause the collector for the new epoch."""
        if self.shard is not None:
            self.shard = None
            self._paused.close()
            gc.collect()
        self._paused.enter_context(relaxed_gc())

    def set_hook(self, before_deliver) -> int:
        """Install a callable run before every batch from another worker is handled (the
        tests' fault injection kills the process from one). Returns the pid."""
        self.before_deliver = before_deliver
        return os.getpid()

    # -- updates -------------------------------------------------------------------------
    def inject(self, epoch: int, payloads: list[bytes], places: bytes = b"") -> int:
        """A burst from the driver (already split per worker) and the ``(seq, node)`` of
        its base insertions, msgpack bytes (:meth:`Shard.place`); runs it locally and sends
        the resulting batches. Returns the number of batches sent."""
        if epoch != self.epoch or self.error:
            return 0
        with self._recorded():
            self.shard.place(places)
            self.shard.begin_run()
            for payload in payloads:
                self.shard.receive_payload(payload, counted=False)
            return self._send()

    def deliver(self, epoch: int, src: int, payload: bytes) -> None:
        """A batch from worker ``src`` (fire-and-forget)."""
        if epoch != self.epoch or self.error:
            return
        if self.before_deliver is not None:
            self.before_deliver()
        with self._recorded():
            self.shard.receive_payload(payload)
            self._send()

    @contextlib.contextmanager
    def _recorded(self):
        """Keep the first error of a call for :meth:`status` (a fire-and-forget call has
        no caller to raise it to); the error still propagates to Ray."""
        ok = False
        try:
            yield
            ok = True
        finally:
            if not ok and self.error is None:
                exc = sys.exc_info()[1]
                self.error = exc if isinstance(exc, PSNError) else traceback.format_exc()

    def _send(self) -> int:
        out = self.shard.take_outbox()
        epoch, me, peers = self.epoch, self.shard.index, self.peers
        for w, payload in out:
            peers[w].deliver.remote(epoch, me, payload)
        return len(out)

    def flush(self, epoch: int) -> int:
        """End of stream at this worker's nodes; returns the updates flushed."""
        if epoch != self.epoch or self.error:
            return 0
        with self._recorded():
            n = self.shard.flush()
            self._send()
            return n

    # -- termination detection -----------------------------------------------------------
    def status(self, epoch: int) -> tuple:
        """``(epoch, batches sent, batches received, error or None)`` of this worker."""
        if self.shard is None:
            return self.epoch, 0, 0, None
        return self.epoch, self.shard.batches_sent, self.shard.batches_received, self.error

    # -- reading -------------------------------------------------------------------------
    def finish(self, epoch: int) -> tuple:
        """After quiescence: check deletions left waiting (see ``Shard.check_waiting``)."""
        return self.epoch, (self.error or self.shard.check_waiting())

    def relations(self, epoch: int, preds: list[str]) -> tuple[int, bytes]:
        return self.epoch, pack(self.shard.relations_of(preds))

    def multiset(self, epoch: int, pred: str) -> tuple[int, bytes]:
        return self.epoch, pack(self.shard.multiset(pred))

    def report(self, epoch: int) -> tuple[int, bytes]:
        return self.epoch, pack(self.shard.report())


_ACTOR = None


def actor_class():
    """The Ray actor class (created once per process, after ``ray`` is imported):
    synchronous and single-threaded, restarted by Ray up to 4 times, no automatic task
    retries (the driver replays instead), no CPU reserved (many workers on 2 cores)."""
    global _ACTOR
    if _ACTOR is None:
        _ACTOR = ray.remote(max_restarts=4, max_task_retries=0, num_cpus=0,
                            max_concurrency=1)(ShardActor)
    return _ACTOR
