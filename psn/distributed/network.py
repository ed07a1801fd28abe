"""A PSN network on Ray: the driver, termination detection and recovery.

Role: :class:`RayNetwork` has the API of :class:`engine.Network` (``insert``, ``delete``,
``apply``, ``run``, ``relations``, ``multiset``, ``base_facts``, ``metrics``) and runs the
same engine on a :class:`WorkerPool` of Ray actors, one per worker, each hosting the shard
of nodes the run's :class:`engine.Placement` puts on it (by a stable hash, or an explicit
map). How a run goes:

1. **Ledger.** Bursts go through the driver's :class:`engine.Injector`, the one every
   engine injects through: it checks each update against the program, numbers insertions,
   matches deletions and builds the base annotations. The updates are encoded with
   :mod:`engine.wire` and grouped per worker; the driver keeps every burst (the *history*).
2. **Injection.** :meth:`RayNetwork.run` sends each worker its part of the pending bursts,
   and every worker the node of each new base insertion if the scheme asks for it
   (:meth:`~provenance.base.AnnotationScheme.place`: absorption orders its BDD variables
   by node; not counted as traffic, as the bursts are not); workers run the PSN loop and
   exchange batches (msgpack bytes, one Ray call per destination worker and per handled
   call, no FIFO assumption).
3. **Termination** (Mattern's four-counter method): the driver polls every
   worker for its numbers of batches sent and received; the run has quiesced when the sums
   are equal *and* a second, later round returns the same sums. Counters only grow and a
   worker is single-threaded, so two equal rounds with sent == received mean no batch was
   in flight between them. Then every worker flushes its send stages (MinShip's end of
   stream); if anything was flushed, detection starts over.
4. **Recovery.** Workers are Ray actors with ``max_restarts``; a call failing with
   ``RayActorError`` or a worker answering with an older epoch (a restarted actor is
   unconfigured) means state was lost. The driver waits until every worker answers (making
   a new actor if Ray gave up restarting one), starts a new *epoch* on all of them (empty
   shards; batches of older epochs are ignored on arrival) and replays the whole history.
   PSN's correctness under any delivery order (Nigam et al. 2012, Definition 1) makes the
   replayed run converge to the same relations; nothing is checkpointed, so no annotation
   (e.g. a BDD) is ever pickled. The cost is a replay from the empty state.

Deliberately not here: the engine loop of a worker (``shard``), the actor (``actor``),
``ray.init`` (``runtime``). Relations and metrics are gathered on demand, as msgpack bytes.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Iterable, Mapping

import ray
from ray.exceptions import ActorDiedError, GetTimeoutError, RayActorError, RayError, RayTaskError

from engine import Injector, Placement, RunOptions, prepare
from engine.host import Contexts
from engine.options import require_callable, require_flag, require_whole
from engine.network import check_relation
from engine.transport import TrafficMetrics
from engine.wire import Codec
from ndlog.errors import EvaluationError, InputError, PSNError
from ndlog.parser import as_program
from ndlog.reference import fact_rows
from ndlog.text import count_noun

from .actor import actor_class
from .runtime import start_ray
from .shard import pack, unpack

__all__ = ["RayNetwork", "WorkerPool", "refuse_phased"]


class _WorkerLost(Exception):
    """A worker died or was restarted: its state is gone."""


class WorkerPool:
    """``workers`` Ray actors (one per worker), reusable by several :class:`RayNetwork` runs.

    Parameters
    ----------
    workers:
        Number of actors.
    address:
        ``None``: local Ray (started if needed, see :func:`psn.distributed.start_ray`);
        else the address of a running cluster.
    connect_timeout:
        Seconds to wait for the cluster at ``address`` (default: ``start_ray``'s).

    Attributes
    ----------
    ray_startup_seconds, actor_startup_seconds:
        Seconds spent in ``ray.init`` (0 if Ray was already up) and starting the actors.
    """

    def __init__(self, workers: int, address: str | None = None, *,
                 connect_timeout: float | None = None):
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise InputError(f"the number of workers must be a positive integer, "
                             f"got {workers!r}")
        extra = {} if connect_timeout is None else {"connect_timeout": connect_timeout}
        self.ray_startup_seconds = start_ray(address, **extra)
        self._epochs = 0
        t0 = time.perf_counter()
        self.actors = [self._new() for _ in range(workers)]
        self.pids = ray.get([a.ping.remote() for a in self.actors])
        self.actor_startup_seconds = time.perf_counter() - t0

    @staticmethod
    def _new():
        # SPREAD places the workers on different machines of a cluster when it has several
        return actor_class().options(scheduling_strategy="SPREAD").remote()

    def __len__(self) -> int:
        return len(self.actors)

    def next_epoch(self) -> int:
        """A fresh epoch number: unique over every network run on this pool, so batches of
        an earlier network or of a rolled-back run are never taken for current ones."""
        self._epochs += 1
        return self._epochs

    def replace(self, i: int) -> None:
        """Put a new actor in place of worker ``i`` (Ray gave up restarting it)."""
        self.actors[i] = self._new()

    def wait_alive(self, i: int, deadline: float) -> None:
        """Wait until worker ``i`` answers (it may be restarting), replacing it if it is
        dead for good."""
        died = 0
        while True:
            try:
                ray.get(self.actors[i].ping.remote(), timeout=30)
                return
            except ActorDiedError:
                died += 1
                if died >= 3:
                    self.replace(i)
                    died = 0
            except (RayActorError, GetTimeoutError):
                pass
            if time.monotonic() > deadline:
                raise EvaluationError(f"Ray worker {i} did not come back after a failure")
            time.sleep(0.1)

    def close(self) -> None:
        """Kill the actors (Ray itself keeps running; see :func:`psn.distributed.stop_ray`)."""
        for a in self.actors:
            try:
                ray.kill(a, no_restart=True)
            except (RayError, ValueError):   # already gone, or Ray already stopped
                pass
        self.actors = []


def refuse_phased(scheme) -> None:
    """Refuse a scheme that runs in phases separated by global barriers (DRed's
    over-delete and re-derive, Liu et al. 2009, Sec. 3.2): the Ray driver's termination
    detection does not run a scheme's phase coordinator.

    Raises
    ------
    ndlog.errors.InputError
        Naming the engines that run it.
    """
    if getattr(scheme, "phased", False):
        raise InputError(f"annotation '{scheme.name}' runs in phases separated by a global "
                         f"barrier, which --engine ray does not run",
                         hint="use --engine sim or --engine memory, or --annotation "
                         "absorption on Ray")


class RayNetwork:
    """A PSN network whose nodes live on Ray actors (see the module docstring).

    Parameters
    ----------
    program:
        A :class:`ndlog.ast.Program` or NDlog text (localized like :class:`engine.Network`).
    facts:
        ``predicate -> iterable of tuples``: the first burst (with the program's facts).
    options:
        A :class:`engine.RunOptions` (annotation, MinShip, aggregate selection, batch,
        roundtrip, seed, placement; default: its defaults), resolved once on the driver
        (so a bad option fails before any worker runs) and on every worker. The keyword
        arguments ``annotation``, ``seed``, ``batch``, ``roundtrip``, ``ship`` and
        ``aggsel`` override single fields; a scheme object must be picklable (each worker
        gets its own copy). Ray's delivery order is whatever the machines make of it (PSN
        does not depend on it), so ``delivery`` does not apply here.
    workers:
        Number of workers (actors), default 2; with ``pool``, the first ``workers`` actors
        of the pool (default: all of them).
    address:
        ``None``: local Ray on loopback; ``"HOST:6379"``: join that cluster.
    placement:
        ``node -> worker index`` for some nodes (the others by stable hash), or an
        :class:`engine.Placement` with ``workers`` workers.
    pool:
        A :class:`WorkerPool` to run on (reused across networks, one network at a time;
        not closed by :meth:`close`). Default: a new pool of ``workers`` actors, closed by
        :meth:`close`.
    max_recoveries:
        Worker failures tolerated per network before giving up.
    on_node:
        As for :class:`engine.Network`: called with every new node, on the worker that
        hosts it (so it must be picklable: a module-level function or object).
    """

    def __init__(self, program, facts: Mapping[str, Iterable] | None = None, *,
                 options: RunOptions | None = None, annotation=None,
                 workers: int | None = None, address: str | None = None, placement=None,
                 seed: int | None = None, batch: bool | None = None,
                 roundtrip: bool | None = None, pool: WorkerPool | None = None,
                 max_recoveries: int = 5, on_node=None, ship=None,
                 aggsel: str | bool | None = None):
        program = as_program(program)
        opts = RunOptions.of(options, annotation=annotation, seed=seed, batch=batch,
                             roundtrip=roundtrip, ship=ship, aggsel=aggsel)
        if opts.delivery != RunOptions.delivery:
            # the safety checks would take its word (set semantics with aggregates passed
            # with delivery="fifo"), but Ray's order is whatever the machines make of it
            raise InputError(f"delivery {opts.delivery!r} does not apply to Ray: its "
                             f"delivery order is whatever the machines make of it",
                             hint="leave delivery out of the options of a RayNetwork, or "
                                  "run the delivery model in psn.Simulation or psn.Network")
        self.options = opts
        self.source = program
        self.resolved = opts.resolve(prepare(program), fixed_order=True)
        refuse_phased(self.resolved.scheme)
        # what the workers run (split into one query per aggregate with aggsel "single");
        # they are sent its source and resolve it again, which leaves it as it is
        self.program = self.resolved.program
        self.annotation = self.resolved.scheme.name
        self.seed = opts.seed
        self.on_node = on_node
        self._contexts = Contexts(self.resolved.scheme)
        self.injector = Injector(program, self.program, self.resolved.scheme,
                                 self._contexts, self.resolved, keep_places=True)
        self._codec = Codec(self.resolved.scheme)
        require_callable(on_node, "on_node", "a function of the new Node", 1)
        require_whole(max_recoveries, "max_recoveries")
        if facts is not None and not isinstance(facts, Mapping):
            raise InputError(f"facts must be a mapping of predicate -> tuples, got "
                             f"{type(facts).__name__}")
        # everything that can be refused is checked before any actor starts: an error
        # raised here leaves no pool behind for the caller to close
        if pool is not None and not isinstance(pool, WorkerPool):
            raise InputError(f"pool is a WorkerPool, got {type(pool).__name__}")
        n = (len(pool) if pool is not None else 2) if workers is None else workers
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"the number of workers must be a positive integer, got "
                             f"{n!r}", hint="a closed WorkerPool has no actors: make a "
                             "new one" if pool is not None and not len(pool) else None)
        if pool is not None and n > len(pool):
            raise InputError(f"cannot run {n} workers on a pool of {len(pool)}")
        self.placement = _placement(placement, n)
        self.workers = n
        self._own_pool = pool is None
        self.pool = pool
        self.epoch = 0
        self.key = uuid.uuid4().hex
        #: every burst: its payload per worker and its insertions' ``(seq, node)``
        self.history: list[tuple[dict[int, bytes], list]] = []
        self.pending: list[tuple] = []
        self.recoveries = 0
        self.max_recoveries = max_recoveries
        self._carried: dict[str, int] = {}     # counters of epochs lost to failures
        self._last: dict[str, int] = {}        # counters at the end of the last run
        self.polls = 0
        self.wall_seconds = 0.0
        self.last_run_seconds = 0.0
        # workers get a fresh epoch and the whole history on the first run
        self._needs_replay = True
        initial = [(1, f.pred, f.values) for f in program.facts]
        for pred, rows in (facts or {}).items():
            initial.extend((1, pred, r) for r in fact_rows(pred, rows))
        if initial:
            self.apply(initial)
        if self.pool is None:
            self.pool = WorkerPool(n, address)

    # -- bursts (the ledger) -------------------------------------------------------------
    def __repr__(self) -> str:
        return (f"<RayNetwork: {count_noun(self.workers, 'worker')}, annotation "
                f"{self.annotation}, epoch {self.epoch}, "
                f"{count_noun(self.recoveries, 'recovery', 'recoveries')}>")

    def insert(self, pred: str, tup: tuple) -> "RayNetwork":
        """Inject an insertion of a base fact (sent on the next :meth:`run`)."""
        return self.apply([(1, pred, tup)])

    def delete(self, pred: str, tup: tuple) -> "RayNetwork":
        """Inject a deletion of a base fact."""
        return self.apply([(-1, pred, tup)])

    def apply(self, burst: Iterable) -> "RayNetwork":
        """Inject a burst (items as for :func:`engine.parse_update`); a bad item is an
        :class:`InputError` and nothing of the burst is injected."""
        from engine.network import parse_burst_items
        items = parse_burst_items(burst, self.source)
        for _, pred, tup in items:
            self.injector.check(pred, tup)
        self.pending.extend(self.injector.updates(items).items())
        return self

    def base_facts(self) -> dict[str, set[tuple]]:
        """The current base facts (every fact with a live insertion)."""
        return self.injector.ledger.facts()

    # -- running -------------------------------------------------------------------------
    def start(self) -> "RayNetwork":
        """Send the pending bursts to the workers without waiting for quiescence."""
        self._require_open()
        self.injector.ledger.check()  # InputError for a deletion that matches no insertion
        pending, self.pending = self.pending, []
        places = self.injector.take_places()
        if not pending:
            return self
        by_worker: dict[int, list] = {}
        encode, ctx_of = self._codec.encode, self._contexts
        for dst, ups in pending:
            by_worker.setdefault(self.placement.worker(dst), []).append(
                (dst, encode(ups, ctx_of(dst))))
        burst = {w: pack(msgs) for w, msgs in by_worker.items()}
        self.history.append((burst, places))
        if self._needs_replay:
            return self
        try:
            self._inject({w: [p] for w, p in burst.items()}, places)
        except _WorkerLost:   # a recovery like any other: counted, and the workers back
            self._recover()
        return self

    def run(self, heartbeat=None) -> "RayNetwork":
        """Send the pending bursts and wait until the network has quiesced.

        ``heartbeat``, if given, is called as ``heartbeat(received, in_flight)`` after every
        poll of the workers: the batches they have received and those sent but not yet
        received (the progress of a long run).

        Raises
        ------
        InputError
            If a deletion of a base fact matches no insertion.
        EvaluationError
            If a worker failed with an error, or failed more than ``max_recoveries`` times.
        """
        require_callable(heartbeat, "heartbeat", "a function (received, in_flight)",
                         2)
        t0 = time.perf_counter()
        self.start()
        while True:
            try:
                if self._needs_replay:
                    self._replay()
                self._quiesce(heartbeat)
                self._finish()
                break
            except _WorkerLost:
                self._recover()
            except PSNError as exc:   # a runtime error at a rule: show the rule's line
                raise exc.locate(self.source.source, self.source.filename)
        self.injector.quiescent()
        self._last = self._counters(self.metrics)
        self.last_run_seconds = time.perf_counter() - t0
        self.wall_seconds += self.last_run_seconds
        return self

    def _recover(self) -> None:
        self.recoveries += 1
        if self.recoveries > self.max_recoveries:
            raise EvaluationError(f"Ray workers failed {self.recoveries} times; giving up")
        # the new epoch's counters start at zero and count the replay: carry what the
        # network had counted up to its last finished run
        self._carried = dict(self._last)
        self._needs_replay = True
        deadline = time.monotonic() + 180
        for i in range(self.workers):
            self.pool.wait_alive(i, deadline)

    def _replay(self) -> None:
        """New epoch on every worker, then the whole history again."""
        self.epoch = self.pool.next_epoch()
        self._configure_all()
        per_worker: dict[int, list[bytes]] = {}
        places: list = []
        for burst, burst_places in self.history:
            for w, payload in burst.items():
                per_worker.setdefault(w, []).append(payload)
            places += burst_places
        self._inject(per_worker, places)
        self._needs_replay = False

    def _configure_all(self) -> None:
        actors = self.pool.actors[:self.workers]
        refs = [a.configure.remote(self.epoch, i, self.key, self.program.source,
                                   self.options, self.placement, actors, self.on_node)
                for i, a in enumerate(actors)]
        try:
            ray.get(refs)
        except RayActorError:
            self._needs_replay = True
            raise _WorkerLost() from None

    def _inject(self, per_worker: dict[int, list[bytes]], places: list) -> None:
        # every worker, those without updates of the burst too: each starts counting the
        # updates its nodes send in the run (max_updates) when it is injected, and each
        # is told where every new insertion lives
        actors = self.pool.actors
        placed = pack(places)
        self._get([actors[w].inject.remote(self.epoch, per_worker.get(w, []), placed)
                   for w in range(self.workers)])

    def _get(self, refs: list) -> list:
        try:
            return ray.get(refs)
        except RayActorError:
            raise _WorkerLost() from None
        except RayTaskError as exc:          # an error inside a worker's call
            cause = exc.cause if isinstance(exc.cause, PSNError) else exc
            _raise(None, cause)

    def _call(self, method: str, *args) -> list:
        """Call ``method(epoch, *args)`` on every worker; results without their epoch."""
        actors = self.pool.actors[:self.workers]
        res = self._get([getattr(a, method).remote(self.epoch, *args) for a in actors])
        if any(r[0] != self.epoch for r in res):
            raise _WorkerLost()
        return [r[1:] if len(r) > 2 else r[1] for r in res]

    def _quiesce(self, heartbeat=None) -> None:
        """Wait for global quiescence: two equal polls with sent == received, then flush."""
        prev = None
        while True:
            rows = self._call("status")
            self.polls += 1
            for i, (_, _, err) in enumerate(rows):
                if err:
                    _raise(i, err)
            sent = sum(r[0] for r in rows)
            received = sum(r[1] for r in rows)
            if heartbeat is not None:
                heartbeat(received, max(sent - received, 0))   # workers polled in turn
            now = (sent, received)
            if sent == received and now == prev:
                flushed = self._get([a.flush.remote(self.epoch)
                                     for a in self.pool.actors[:self.workers]])
                if not any(flushed):
                    return
                now = None
            prev = now

    def _finish(self) -> None:
        for i, err in enumerate(self._call("finish")):
            if err:
                _raise(i, err)

    def _gather(self, method: str, *args) -> list:
        """Call a read-only method on every worker, recovering from failures first."""
        self._require_open()
        if self._needs_replay:   # never run, or a failure not yet repaired
            self.run()
        while True:
            try:
                return [unpack(b) for b in self._call(method, *args)]
            except _WorkerLost:
                self._recover()
                self.run()

    # -- reading -------------------------------------------------------------------------
    def relation_names(self, hidden: bool = False) -> set[str]:
        """The relations :meth:`relations` returns (as :meth:`engine.Network.relation_names`;
        asks no worker)."""
        require_flag(hidden, "hidden")
        preds = set(self.program.visible) | self.injector.ledger.preds
        if hidden:
            return preds | set(self.program.predicates)
        return preds - (set(self.program.hidden) | set(self.source.hidden))

    def relations(self, hidden: bool = False) -> dict[str, set[tuple]]:
        """Result relations, the union over all workers (same keys as
        :meth:`engine.Network.relations`)."""
        preds = self.relation_names(hidden)
        out: dict[str, set[tuple]] = {p: set() for p in preds}
        for part in self._gather("relations", sorted(preds)):
            for p, tuples in part.items():
                out[p].update(tuples)
        return out

    def multiset(self, pred: str) -> dict[tuple, int]:
        """``tuple -> number of stored occurrences`` of ``pred`` over all workers."""
        check_relation(pred, self.relation_names(hidden=True))
        out: dict[tuple, int] = {}
        for part in self._gather("multiset", pred):
            for t, n in part:
                out[t] = out.get(t, 0) + n
        return out

    def why(self, pred: str, tup: tuple) -> str:
        """Not on Ray: the provenance lives in the workers' CUDD managers, which
        :meth:`engine.Network.why` reads in the process that runs the nodes.

        Raises
        ------
        InputError
            Always, naming the engines that explain a fact.
        """
        raise InputError("why() does not apply to a RayNetwork: the provenance lives in the "
                         "Ray workers' processes",
                         hint="run it in engine.Network (or a sim.Simulation's .net), or "
                         "psn run --engine memory or sim, to explain a fact")

    @property
    def metrics(self) -> dict:
        """Totals as :attr:`engine.Network.metrics` (``messages_sent``, ``bytes_sent``,
        ``worker_messages_sent``, ``worker_bytes_sent``, ...) plus ``batches_sent`` (Ray
        calls between workers), ``recoveries``, ``epoch``, start-up seconds, and the
        ``nodes`` and ``workers`` breakdowns (``workers[i]``: traffic sent by worker ``i``).

        After a recovery the totals of the counters (messages, bytes, updates, ...) are what
        the network counted up to its last finished run plus everything the new epoch did
        (the replay of the whole history included), so they never decrease; the ``nodes``
        and ``workers`` breakdowns and ``state_tuples`` describe the current epoch."""
        reports = self._gather("report")
        totals: dict[str, Any] = {}
        nodes: dict = {}
        workers: dict = {}
        dropped = 0
        for i, rep in enumerate(reports):
            for k, v in rep["totals"].items():
                totals[k] = totals.get(k, 0) + v
            nodes.update(rep["nodes"])
            row = dict.fromkeys(TrafficMetrics.FIELDS, 0)
            row.update(rep["workers"].get(str(i), {}))     # traffic this worker sent
            row.update(batches_sent=rep["batches_sent"],
                       batches_received=rep["batches_received"],
                       nodes_count=len(rep["nodes"]),
                       updates_processed=rep["totals"]["updates_processed"],
                       state_tuples=rep["totals"]["state_tuples"])
            workers[i] = row
            dropped += rep["dropped_deletions"]
        totals["batches_sent"] = sum(w["batches_sent"] for w in workers.values())
        for k, v in self._carried.items():
            totals[k] += v
        totals.update(polls=self.polls, wall_seconds=round(self.wall_seconds, 6),
                      dropped_deletions=dropped, nodes_count=len(nodes),
                      workers_count=self.workers, recoveries=self.recoveries,
                      epoch=self.epoch,
                      ray_startup_seconds=round(self.pool.ray_startup_seconds, 6),
                      actor_startup_seconds=round(self.pool.actor_startup_seconds, 6))
        totals["nodes"] = nodes
        totals["workers"] = workers
        return totals

    @staticmethod
    def _counters(metrics: dict) -> dict[str, int]:
        return {k: metrics[k] for k in _COUNTERS}

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def actors(self) -> list:
        """The actor handles of the workers, by index (for fault-injection tests)."""
        return self.pool.actors[:self.workers]

    def _require_open(self) -> None:
        """Raise :class:`InputError` if the workers are gone (:meth:`close`, or the pool's
        own ``close``): a closed network would read as empty."""
        if len(self.pool.actors) < self.workers:
            raise InputError("this RayNetwork is closed: its workers were stopped",
                             hint="read relations and metrics before close() (or the end "
                                  "of the with block), or make a new RayNetwork")

    def close(self) -> None:
        """Kill the actors if this network created its pool (Ray keeps running)."""
        if self._own_pool and self.pool.actors:
            self.pool.close()

    def __enter__(self) -> "RayNetwork":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: Totals of :attr:`RayNetwork.metrics` that count work (carried across a recovery).
_COUNTERS = ("messages_sent", "tuples_sent", "bytes_sent", "annotation_bytes",
             "worker_messages_sent", "worker_bytes_sent", "local_tuples",
             "updates_processed", "updates_received", "updates_fired", "derivations",
             "steps", "batches_sent")


def _placement(placement, workers: int) -> Placement:
    """The placement of nodes on ``workers`` worker indexes: an explicit map (checked),
    the rest by stable hash."""
    if isinstance(placement, Placement):
        if placement.workers != workers:
            raise InputError(f"the placement has {placement.workers} workers, the run "
                             f"{workers}")
        return placement
    return Placement(workers, placement)        # checks that the map names 0..workers-1


def _raise(worker: int | None, err) -> None:
    """Raise a worker's error in the driver: a PSN error as itself, else as an
    :class:`~ndlog.errors.EvaluationError` carrying the worker's traceback."""
    if isinstance(err, PSNError):
        raise err
    who = "a Ray worker" if worker is None else f"Ray worker {worker}"
    raise EvaluationError(f"{who} failed: {str(err).rstrip()}")
