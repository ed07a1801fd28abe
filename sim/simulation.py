"""The simulator's Python API: a PSN program on a topology, driven through a workload.

Role: :class:`Simulation` puts the pieces together. It builds a
:class:`~sim.network.SimTransport` on a :class:`~sim.clock.VirtualClock` from the topology,
delivery model, placement and processing-time model, runs the engine
(:class:`engine.Network`) over it, expands a workload (:mod:`engine.workloads`) step by step,
injects each step's burst, runs it to quiescence, turns soft state (``materialize`` with a
finite lifetime) into scheduled deletions, measures each step (:mod:`sim.metrics`; Liu et al.
Sec. 7.1) and, when asked, checks the result relations against the centralized reference
``psn.evaluate`` on the current base facts (Nigam et al. Definition 1: after every burst the
relations equal the SN result).

Example::

    sim = Simulation(psn.load("examples/reachable.ndl"), topologies.make("ts100"),
                     annotation="derivation", delivery="random", seed=1)
    for step in sim.run_workload("insert:0.5,1.0;delete-links:3", check=True):
        print(step.label, step.sim_time, step.traffic["bytes_sent"], step.check)

Deliberately not here: the PSN iteration (``engine``), annotation semantics
(``provenance``), the command line (``psn run --engine sim``, :mod:`psn.cli.runners`).
Nothing here reads the wall clock except to report wall time.
"""

from __future__ import annotations

from ndlog.check import verdict
from ndlog.errors import InputError
from ndlog.text import count_noun, shows_progress, step_heartbeat
from ndlog.reference import evaluate as _python_reference, fact_rows

import math
import random
import sys
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from .clock import MAX_TIME, VirtualClock, beyond
from .delivery import ProcessingModel, require_at_least
from .metrics import STATE_FIELDS, Counters, StepResult, row_table, write_metrics
from .network import LatencyModel, SimTransport
from engine.network import parse_burst_items
from ndlog.gcpause import relaxed_gc
from engine.placement import Placement
from engine.wire import packed_items_size
from engine.guards import soft_state_deletions
from engine.options import RunOptions, require_callable, require_flag, require_whole
from engine.workloads import Step, Workload, WorkloadContext, parse_workload, workload_rng
from ndlog.analysis import aggsel_candidates

__all__ = ["Simulation", "compare_relations", "state_figures"]


def _load_program(program):
    """A program from a ``.ndl`` path (read: a missing file is an error naming it), NDlog
    text, or a parsed program."""
    from ndlog.parser import as_program, load
    if isinstance(program, Path) or (isinstance(program, str) and "\n" not in program
                                      and program.strip().endswith(".ndl")):
        return load(program)
    return as_program(program)


def _load_topology(topology, seed: int):
    import topologies
    if isinstance(topology, (str, Path)):
        text = str(topology)
        if topologies.names_file(text):
            return topologies.load(text)        # a missing file: an error that says so
        return topologies.make(text, seed=seed)
    if topology is not None and not isinstance(topology, topologies.Topology):
        raise InputError(f"a topology is a Topology, a generator name or a file, got "
                         f"{type(topology).__name__} {topology!r}")
    return topology


class Simulation:
    """A PSN program running on a simulated network (see the module docstring).

    Parameters
    ----------
    program:
        A :class:`ndlog.ast.Program`, NDlog text, or a ``.ndl`` path.
    topology:
        A :class:`topologies.Topology`, a topology name for :func:`topologies.make`, or a
        file for :func:`topologies.load`.
    options:
        A :class:`engine.options.RunOptions` (annotation, MinShip, aggregate selection,
        delivery, seed, placement, ...; default: its defaults). The keyword arguments
        ``annotation``, ``ship``, ``aggsel``, ``delivery``, ``seed``, ``roundtrip``,
        ``batch``, ``contexts``, ``workers`` and ``placement`` override single fields
        (``placement``: an :class:`engine.placement.Placement` or a ``node -> worker``
        mapping). ``delivery`` here has timing options (:func:`engine.delivery.make_delivery`).
        ``seed`` seeds the run's two ``random.Random`` generators: ``rng`` (delivery jitter)
        and ``workload_rng`` (which links and sensors a workload picks,
        :func:`engine.workloads.workload_rng`, the same on every engine).
    processing:
        A :class:`~sim.delivery.ProcessingModel` or a string such as ``"20us+50us"``.
    local_latency:
        ``None`` (messages between nodes of one worker take the topology latency) or the
        latency in seconds to charge them instead (e.g. ``0``).
    cost:
        Link cost for ``link/3`` facts: ``latency`` (ms), ``hops`` or ``length``.
    state_metrics:
        Measure per-node state and provenance bytes after every step (costs a pass over
        all stored tuples).
    reference:
        ``evaluate(program, facts) -> relations`` that :meth:`check` compares with (default
        :func:`ndlog.reference.evaluate`; ``psn.oracle.reference_evaluator`` gives
        Spark's); called with ``aggsel=False`` as well when the run prunes nothing.
    """

    def __init__(self, program, topology, *, options: RunOptions | None = None,
                 annotation: Any = None, workers: int | None = None,
                 placement: Placement | dict | None = None, delivery: str | None = None,
                 seed: int | None = None, processing: "ProcessingModel | str | None" = None,
                 local_latency: float | None = None, cost: str = "latency",
                 roundtrip: bool | None = None, state_metrics: bool = True,
                 ship: str | None = None, aggsel: str | bool | None = None,
                 batch: bool | None = None, contexts: str | None = None,
                 reference: Callable | None = None):
        from engine import Network
        require_flag(state_metrics, "state_metrics")
        opts = RunOptions.of(options, annotation=annotation, workers=workers,
                             placement=placement, delivery=delivery, seed=seed,
                             roundtrip=roundtrip, ship=ship, aggsel=aggsel, batch=batch,
                             contexts=contexts)
        self.options = opts
        self.program = _load_program(program)
        self.seed = seed = opts.seed
        self.topology = _load_topology(topology, seed)
        self.rng = random.Random(seed)                        # delivery jitter
        self.workload_rng = workload_rng(seed)                # workload choices
        self.placement = opts.placement_map()
        _check_placed_nodes(self.placement, self.topology)
        if isinstance(processing, str):
            processing = ProcessingModel.parse(processing)
        elif processing is not None and not isinstance(processing, ProcessingModel):
            raise InputError(f"processing is a sim.ProcessingModel or a string such as "
                             f"'20us+50us', got {type(processing).__name__} "
                             f"{processing!r:.80}")
        self.clock = VirtualClock()
        latency = LatencyModel(self.topology, local=local_latency, placement=self.placement)
        self.transport = SimTransport(self.topology, delivery=opts.delivery, rng=self.rng,
                                      placement=self.placement, processing=processing,
                                      clock=self.clock, latency=latency,
                                      roundtrip=opts.roundtrip)
        self.net = Network(self.program, options=opts,
                           transport=self.transport)
        self.resolved = self.net.resolved
        expiring = soft_state_deletions(self.program)
        if expiring is not None:      # expiries delete: refused up front, as psn run does
            self.resolved.check_deletions(self.net.program, expiring)
        self.annotation = self.resolved.scheme.name
        self.ship = self.resolved.ship_text
        self.aggsel = self.resolved.aggsel
        if cost not in ("latency", "hops", "length"):
            raise InputError(f"unknown link cost {cost!r} (latency, hops or length)")
        self.cost = cost
        self.state_metrics = state_metrics
        self._state_cache: dict = {}      # state_figures' per node, between steps
        #: what :meth:`check` compares with (see ``reference``)
        require_callable(reference, "reference", "a function evaluate(program, facts)", 2,
                         () if self.resolved.prunes else ("aggsel",))
        self.reference = reference or _python_reference
        arities = self.program.arities()
        self.link_arity = arities.get("link")
        self.uses = frozenset(self.program.predicates)
        self.steps: list[StepResult] = []
        self._expiry: dict = {}
        self._snapshot = Counters().snapshot()
        self._phases: dict[str, int] = {}
        self.expired = 0
        if self.program.facts:        # facts in the program text: the engine queued them
            self._expiries([], [(f.pred, f.values, life) for f in self.program.facts
                                for life in [self._lifetime(f.pred)] if life is not None])
            self._run_step(Step("program facts"), check=False)

    def __repr__(self) -> str:
        topo = getattr(self.topology, "name", None) or "no topology"
        return (f"<Simulation: {topo}, annotation {self.annotation}, "
                f"{count_noun(len(self.steps), 'step')}, t={self.now:.4f} s>")

    # ------------------------------------------------------------------ properties

    @property
    def now(self) -> float:
        """Current virtual time, seconds."""
        return self.clock.now()

    def relations(self, hidden: bool = False) -> dict[str, set[tuple]]:
        """The engine's current result relations."""
        return self.net.relations(hidden)

    def base_facts(self) -> dict[str, set[tuple]]:
        """The current base facts (as the engine's ledger holds them)."""
        return self.net.base_facts()

    def describe(self) -> dict:
        """The run's settings, JSON-able (goes into the metrics file)."""
        topo = self.topology
        return {
            "program": self.program.filename or "<text>",
            "topology": (topo.summary() if hasattr(topo, "summary") else str(topo))
            if topo is not None else "no topology (1 ms between any two nodes)",
            "nodes": getattr(topo, "n", None),
            "links": getattr(topo, "num_links", None),
            "annotation": getattr(self.annotation, "name", self.annotation),
            "ship": self.ship,
            "aggsel": self.aggsel,
            "placement": self.placement.describe(),
            "delivery": self.transport.delivery.describe(),
            "processing": self.transport.processing.describe(),
            "seed": self.seed,
        }

    # ------------------------------------------------------------------ workloads

    def run_workload(self, spec: "str | Workload | None" = None, check: bool = False,
                     callback: Callable[[StepResult, "Simulation"], Any] | None = None,
                     progress: bool | None = None, max_steps: int | None = None
                     ) -> list[StepResult]:
        """Run a workload step by step; returns this call's :class:`StepResult` list.

        Parameters
        ----------
        spec:
            A workload SPEC (:func:`engine.workloads.parse_workload`) or :class:`Workload`.
        check:
            Compare with ``psn.evaluate`` on the current base facts after every step
            (``StepResult.check`` and ``.diff``).
        callback:
            Called as ``callback(result, simulation)`` after every step.
        progress:
            Show a tqdm bar on stderr (``None``: only when stderr is a terminal).
        max_steps:
            Stop after this many steps.

        Raises
        ------
        ndlog.errors.InputError
            For a malformed ``spec``, a ``max_steps`` that is not a whole number >= 0, or a
            ``callback`` that is not callable.
        """
        require_flag(check, "check")
        require_flag(progress, "progress", optional=True)
        require_whole(max_steps, "max_steps", optional=True)
        require_callable(callback, "callback", "a function (result, simulation)", 2)
        workload = parse_workload(spec, self.topology)
        ctx = WorkloadContext(self.topology, self.base_facts(), self.workload_rng,
                              self.link_arity, self.cost, self.uses)
        total = workload.count(self.topology)
        bar = self._bar = _progress_bar(total, progress, workload.spec)
        out = []
        try:
            for step in workload.steps(ctx):
                if max_steps is not None and len(out) >= max_steps:
                    break
                result = self._run_step(step, check)
                ctx.base = self.base_facts()
                out.append(result)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix_str(f"{step.label} t={result.sim_time:.3f}s"
                                        + ("" if result.check is None else
                                           f" check={'ok' if result.check else 'FAIL'}"))
                if callback is not None:
                    callback(result, self)
        finally:
            self._bar = None
            if bar is not None:
                bar.close()
        return out

    _bar = None

    def _heartbeat(self, label: str):
        """Within a long step, show virtual time and the updates in flight on the bar."""
        return step_heartbeat(self._bar, label, self.clock)

    def step(self, insert: dict | None = None, delete: dict | None = None,
             label: str = "step", advance: float = 0.0, check: bool = False,
             updates: list | None = None, heartbeat=None) -> StepResult:
        """Run one burst: ``insert``/``delete`` map predicates to lists of tuples (the
        deletions apply first), or ``updates`` lists ``(sign, pred, tuple)`` (sign ``1``,
        ``-1``, ``"+"`` or ``"-"``) or ``"+link(@a, b)"`` strings in the order they apply
        (a burst file's), as :func:`engine.network.parse_update` reads them. ``heartbeat``
        is called as ``heartbeat(deliveries, in_flight)`` after every delivery of the step
        (as by :meth:`engine.Network.run`; :func:`ndlog.text.step_heartbeat` shows it on a
        progress bar).

        Raises
        ------
        ndlog.errors.InputError
            For a ``label`` that is not a string, an update that is not one of those forms,
            or both ``updates`` and ``insert``/``delete``; for a burst refused once the
            ``advance`` wait is done (a deletion of a fact that expired during it), after the
            wait is recorded as a step of its own (``wait Xs``), so its time and traffic are
            counted.
        """
        require_at_least("advance (s)", advance, 0, duration=True)
        require_flag(check, "check")
        require_callable(heartbeat, "heartbeat", "a function (deliveries, in_flight)",
                         2)
        if not isinstance(label, str):
            raise InputError(f"label is a string, got {type(label).__name__} {label!r:.80}")
        if updates is not None:
            if insert or delete:
                raise InputError("give updates, or insert and delete, not both")
            updates = parse_burst_items(updates, self.program)
        for given in (insert, delete):
            if given is not None and not isinstance(given, Mapping):
                raise InputError(f"insert and delete map predicates to tuples, got "
                                 f"{type(given).__name__}")
            for pred, rows in (given or {}).items():
                fact_rows(pred, rows)
        return self._run_step(Step(label, dict(insert or {}), dict(delete or {}), advance,
                                   updates), check, heartbeat)

    def advance(self, seconds: float, check: bool = False) -> StepResult:
        """Let ``seconds`` of virtual time pass (soft state expires) and run to quiescence
        (later than ``seconds`` from now when the expiries' deletions are still being
        processed then).

        Raises
        ------
        ndlog.errors.InputError
            If ``seconds`` is not a finite number in ``[0, MAX_DURATION]``
            (:data:`engine.delivery.MAX_DURATION`), or virtual time would pass
            :data:`sim.clock.MAX_TIME`.
        """
        require_at_least("the time to advance (s)", seconds, 0, duration=True)
        require_flag(check, "check")
        return self._run_step(Step(f"wait {seconds:g}s", advance=seconds), check)

    # ------------------------------------------------------------------ one step

    def _run_step(self, step: Step, check: bool, heartbeat=None) -> StepResult:
        tr = self.transport
        wall0 = time.perf_counter()
        events0 = self.clock.events_run
        first = self._wait(step.advance) if step.advance else None
        waited = tr.last_done               # the last batch the wait's expiries caused
        t0 = self.clock.now()
        tr.last_done = t0
        try:
            burst, soft = self._burst(step)
            if burst:
                self.net.apply(burst)       # a refused burst raises: no expiry changes
        except InputError:
            if step.advance:                # the wait is done: its time and traffic count
                self._record(Step(f"wait {step.advance:g}s"), t0 if first is None else first,
                             0.0 if first is None else max(waited, first) - first,
                             wall0, events0, check)
            raise
        self._expiries(burst, soft)
        self.net.run(heartbeat=heartbeat or self._heartbeat(step.label))
        if first is None:
            sim_time = max(tr.last_done, self.clock.now()) - t0
        else:                               # from the first expiry to the last batch done
            end = max(tr.last_done, self.clock.now()) if burst or \
                tr.last_done > t0 else waited
            sim_time = max(end, first) - first
            t0 = first
        return self._record(step, t0, sim_time, wall0, events0, check)

    def _record(self, step: Step, start: float, sim_time: float, wall0: float, events0: int,
                check: bool) -> StepResult:
        """The finished step's result, measured (and checked), appended to the steps."""
        result = StepResult(
            index=len(self.steps), label=step.label, inserted=step.inserted,
            deleted=step.deleted, start=start, sim_time=sim_time,
            wall_time=time.perf_counter() - wall0, events=self.clock.events_run - events0,
            traffic={})
        self._measure(result)
        if check:
            result.check, result.diff = self.check()
        self.steps.append(result)
        return result

    def _wait(self, seconds: float) -> float | None:
        """Let virtual time pass; whatever happens meanwhile (soft-state expiries) is
        processed at its own time and run to quiescence, then the clock stands at
        ``now + seconds``, or later if that run was still going on then. Returns the time of
        the first event in the wait, ``None`` if nothing happened."""
        clock, tr = self.clock, self.transport
        target = clock.now() + seconds
        if target > MAX_TIME:
            raise beyond(target, f"the end of a {seconds:g} s wait")
        first = None
        while clock.next_time() <= target:
            t = clock.next_time()
            if first is None:
                first = t
            while clock.next_time() == t:
                clock.step()
            if tr.in_flight():
                self.net.run()
        if clock.now() < target:
            clock.run(until=target)
        return first

    def _burst(self, step: Step) -> tuple[list, list]:
        """The updates of a step in their order (:meth:`engine.workloads.Step.updates`),
        and the soft-state facts ``(pred, tuple, lifetime)`` whose lifetime (re)starts with
        it. An insertion of a soft-state fact that is present at that point of the step (a
        keyed insertion may have replaced it, a deletion removed it) is a refresh: its
        lifetime restarts and no insertion is sent. A deletion of a fact that is not a base
        fact at that point is a debt that a later insertion of the fact in the step pays (it
        is cancelled by it, as :class:`engine.ledger.Ledger` and the other engines do); a
        debt left at the end of the step refuses the step before anything changes."""
        ledger = self.net.ledger
        count: dict = {}              # fact -> live insertions (< 0: debts) at this point
        holder: dict = {}             # key -> the tuple holding it at this point

        def live(fact) -> int:
            n = count.get(fact)
            return len(ledger.live.get(fact, ())) if n is None else n

        def held(key):
            return holder[key] if key in holder else ledger.keyed.get(key)

        burst, soft = [], {}
        for sign, pred, t in step.updates():
            fact, key = (pred, t), ledger.key(pred, t)
            if sign < 0:
                count[fact] = live(fact) - 1
                if key is not None and not count[fact] and held(key) == t:
                    holder[key] = None
                burst.append((-1, pred, t))
                continue
            if key is not None:
                old = held(key)
                if old is not None and old != t:
                    count[(pred, old)] = min(0, live((pred, old)))    # replaced
                holder[key] = t
            life = self._lifetime(pred)
            if life is not None:
                soft[fact] = life
                if live(fact) > 0:
                    continue              # a refresh: the fact stays, its lifetime restarts
            count[fact] = live(fact) + 1
            burst.append((1, pred, t))
        for sign, pred, t in burst:
            if sign < 0 and live((pred, t)) < 0:
                raise ledger.unmatched(pred, t)
        return burst, [(p, t, life) for (p, t), life in soft.items() if live((p, t)) > 0]

    def _expiries(self, burst: list, soft: list) -> None:
        """After a burst is accepted: a deleted fact's expiry is cancelled, and a
        soft-state fact inserted or refreshed expires its lifetime from now."""
        for sign, pred, t in burst:
            if sign < 0:
                self._cancel_expiry(pred, t)
        for pred, t, life in soft:
            self._schedule_expiry(pred, t, life)

    def _lifetime(self, pred: str) -> float | None:
        table = self.program.table(pred)
        if table is None or table.lifetime == math.inf:
            return None
        return float(table.lifetime)

    def _schedule_expiry(self, pred: str, tup: tuple, life: float) -> None:
        """The fact expires ``life`` seconds from now; past :data:`sim.clock.MAX_TIME`,
        which virtual time never reaches, it never expires."""
        self._cancel_expiry(pred, tup)
        if self.clock.now() + life > MAX_TIME:
            return
        # the event names the simulation weakly: its clock holds the event, and a bound
        # method would make a cycle that keeps a dropped simulation until a full collection
        self._expiry[(pred, tup)] = self.clock.call_later(life, _expire, weakref.ref(self),
                                                          pred, tup, kind="expire")

    def _cancel_expiry(self, pred: str, tup: tuple) -> None:
        ev = self._expiry.pop((pred, tup), None)
        if ev is not None:
            self.clock.cancel(ev)

    def _expire(self, pred: str, tup: tuple) -> None:
        """Soft state: the fact's lifetime ran out; its deletion is a base update now
        (nothing, if a keyed insertion has replaced it meanwhile)."""
        self._expiry.pop((pred, tup), None)
        live = len(self.net.ledger.live.get((pred, tup), ()))
        if live:
            self.expired += 1
            self.net.apply([(-1, pred, tup)] * live)

    # ------------------------------------------------------------------ measuring

    def _measure(self, result: StepResult) -> None:
        c = self.transport.counters
        snap = self._snapshot
        result.traffic = c.total.minus(snap.total)
        phases = self.net.host.phases          # a phased scheme's counters (DRed), per step
        if phases is not None:
            now = phases.report()
            result.traffic.update({k: v - self._phases.get(k, 0) for k, v in now.items()})
            self._phases = now
        per_node = {n: t.minus(snap.nodes.get(n)) for n, t in c.nodes.items()}
        worker_of = self.placement.worker_of
        # each node its own worker of the same id: the worker rows are the node rows, kept
        # once (a 1,000-node step's two tables take over a megabyte)
        shared = (c.workers.keys() == c.nodes.keys()
                  and all(worker_of(n) == n for n in self.net.nodes))
        per_worker = per_node if shared else {w: t.minus(snap.workers.get(w))
                                              for w, t in c.workers.items()}
        if self.state_metrics:
            with relaxed_gc():            # it allocates: a full collection took seconds
                states = state_figures(self.net, self._state_cache)
            for n, fig in states.items():
                per_node.setdefault(n, dict.fromkeys(c.total.as_dict(), 0)).update(fig)
                if shared:
                    continue
                row = per_worker.setdefault(worker_of(n), dict.fromkeys(c.total.as_dict(), 0))
                for k in STATE_FIELDS:
                    row[k] = row.get(k, 0) + fig[k]
            totals = {k: sum(f[k] for f in states.values()) for k in STATE_FIELDS}
            result.state = totals
            if totals["tuples"]:
                result.provenance_per_tuple = totals["provenance_bytes"] / totals["tuples"]
        last = self.steps[-1] if self.steps else None   # rows that repeat are shared
        result.per_node = row_table(per_node, last and last.per_node)
        result.per_worker = result.per_node if shared else \
            row_table(per_worker, last and last.per_worker)
        self._snapshot = c.snapshot()

    def check(self) -> tuple[bool, list]:
        """Compare the engine's relations with ``psn.evaluate`` on the current base facts.

        Returns ``(equal, diff)`` where ``diff`` lists ``(relation, "+"|"-", tuple)``:
        ``+`` the engine has a tuple the reference does not, ``-`` the reverse. Predicates
        the reference prunes by aggregate selection (Liu Sec. 6) are not compared; when the
        run prunes nothing (``aggsel="off"``, or nothing it can prune), neither does the
        reference, and every predicate is compared.
        """
        # the ledger holds the program's own facts too (they can be deleted like any other)
        source, facts = self.program.with_(facts=()), self.base_facts()
        if self.resolved.prunes:
            ref, skip = self.reference(source, facts), _aggsel_pruned(self.program)
        else:                             # nothing pruned: every relation compared
            ref, skip = self.reference(source, facts, aggsel=False), set()
        return compare_relations(self.relations(), ref, skip=skip)

    # ------------------------------------------------------------------ output

    def write_metrics(self, path: str | Path) -> None:
        """Write every step so far as JSON (``.json``) or CSV (``.csv``)."""
        write_metrics(path, self.describe(), self.steps)

    def summary(self) -> dict:
        """Totals over every step so far."""
        steps = self.steps
        last = steps[-1] if steps else None
        traffic: dict = {}
        for s in steps:
            for k, v in s.traffic.items():
                traffic[k] = traffic.get(k, 0) + v
        checks = [s.check for s in steps if s.check is not None]
        return {
            "steps": len(steps),
            "sim_time": sum(s.sim_time for s in steps),
            "wall_time": sum(s.wall_time for s in steps),
            "traffic": traffic,
            "state": last.state if last else {},
            "provenance_per_tuple": last.provenance_per_tuple if last else 0.0,
            "checked": len(checks),
            "check": (all(checks) if checks else None),
        }


def state_figures(net, cache: dict | None = None) -> dict:
    """Per node ``{"tuples", "provenance_bytes", "state_bytes"}`` of an engine network.

    ``provenance_bytes``: serialized size (msgpack, ``engine.wire``) of every stored
    annotation occurrence (Liu Sec. 7.1 "per-tuple provenance overhead" is its ratio to
    ``tuples``); ``state_bytes``: that plus the msgpack size of every stored tuple and the
    length of its predicate's name (the "operator state"), hidden relations (localizer
    auxiliaries, aggregate inputs) included. Each relation's tuples and annotations are
    measured in one msgpack call each (:func:`engine.wire.packed_items_size`).

    ``cache``, a dict the caller keeps between calls, holds each node's figures with its
    step count: a node that has not stepped since (only a step changes a node's state)
    keeps its figures without being measured again.
    """
    out = {}
    for nid, node in net.nodes.items():
        steps = node.metrics.steps
        hit = cache.get(nid) if cache is not None else None
        if hit is not None and hit[0] is node and hit[1] == steps:
            out[nid] = dict(hit[2])
            continue
        fig = _node_figures(node, net.codec, net.scheme.occurrences)
        if cache is not None:
            cache[nid] = (node, steps, fig)
        out[nid] = dict(fig)
    return out


def _expire(simulation: "weakref.ref[Simulation]", pred: str, tup: tuple) -> None:
    """A soft fact's expiry event: :meth:`Simulation._expire`, if the simulation is alive."""
    sim = simulation()
    if sim is not None:
        sim._expire(pred, tup)


def _check_placed_nodes(placement: Placement, topology) -> None:
    """Refuse a placement map that places a node the topology does not have (it would be
    ignored, and the node it meant placed by hash)."""
    if topology is None or not placement.mapping:
        return
    nodes = range(topology.n)
    stray = [node for node in placement.mapping if node not in nodes
             or isinstance(node, bool)]
    if stray:
        raise InputError(f"the placement map places node {stray[0]!r}, which the "
                         f"{topology.n}-node topology does not have",
                         hint=f"its nodes are 0..{topology.n - 1}")


def _node_figures(node, codec, occurrences) -> dict:
    """:func:`state_figures` of one node."""
    ctx = node.ctx
    tuples = prov = tup_bytes = 0
    for pred, table in node.state.items():
        if not table:
            continue
        tuples += len(table)
        tup_bytes += len(table) * len(pred) + packed_items_size(list(table))
        prov += codec.annotations_size(
            (occ for stored in table.values() for occ in occurrences(stored)), ctx)
    return {"tuples": tuples, "provenance_bytes": prov, "state_bytes": prov + tup_bytes}


def compare_relations(got: dict, want: dict, skip: Iterable[str] = (),
                      limit: int = 20) -> tuple[bool, list]:
    """Tuple-by-tuple comparison of two ``relation -> set`` maps (:meth:`Simulation.check`):
    :func:`ndlog.check.verdict`. Only relations present in ``want`` are compared (base
    relations the reference does not return are ignored); ``limit`` caps the diff list,
    not the verdict."""
    return verdict(got, want, skip, limit)


def _aggsel_pruned(program) -> set[str]:
    """Relations the reference prunes by aggregate selection (not compared)."""
    return set(aggsel_candidates(program))


def _progress_bar(total, progress, label):
    if not shows_progress(progress):
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc=label[:30], unit="step", file=sys.stderr, leave=False)
