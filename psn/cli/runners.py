"""The engines behind ``psn run``, each behind the same small interface.

Role: a :class:`Runner` takes steps (one burst each, run to quiescence) and reports each step
as a row with the same keys on every engine (:data:`STEP_COLUMNS`): wall time, messages and
bytes between nodes and between workers, updates processed, stored tuples, taken as
differences of the engine's own cumulative counters (:meth:`engine.Host.report`, which every
engine assembles its metrics from). The simulator adds its virtual time and per-tuple
provenance bytes; Ray adds its calls between workers and recoveries.

- :class:`MemoryRunner`: :class:`engine.Network` on the in-memory transport;
- :class:`SimRunner`: :class:`sim.Simulation` (virtual time, latencies, soft state);
- :class:`RayRunner`: :class:`psn.distributed.RayNetwork` on a pool of Ray actors.

Deliberately not here: parsing options (:mod:`psn.cli.options`), the steps themselves and
printing (:mod:`psn.cli.run_cmd`).
"""

from __future__ import annotations

import time
from typing import Any

from ndlog.text import step_heartbeat

__all__ = ["Runner", "MemoryRunner", "SimRunner", "RayRunner", "STEP_COLUMNS", "make_runner"]

#: Keys of every step row, on every engine (plus ``label``, ``check`` and ``diff``).
STEP_COLUMNS = ("wall_time", "messages_sent", "bytes_sent", "worker_messages_sent",
                "worker_bytes_sent", "updates_processed", "state_tuples")

_COUNTERS = ("messages_sent", "bytes_sent", "worker_messages_sent", "worker_bytes_sent",
             "updates_processed")


class Runner:
    """A run on one engine: :meth:`step` applies a burst and runs it to quiescence."""

    engine = "?"

    def __init__(self, program, options):
        self.program = program
        self.options = options
        self._before = dict.fromkeys(_COUNTERS, 0)

    # -- the engine's part -----------------------------------------------------------------
    def _apply(self, label: str, burst: list, advance: float, bar) -> dict:
        """Inject ``burst``, let ``advance`` seconds pass where time exists, run to
        quiescence, showing the step's progress on ``bar`` (a tqdm bar, or None); returns
        engine-specific extra columns."""
        raise NotImplementedError

    def metrics(self) -> dict:
        """The engine's cumulative metrics (totals plus breakdowns)."""
        raise NotImplementedError

    # -- shared ----------------------------------------------------------------------------
    def step(self, label: str, burst: list, advance: float = 0.0, bar=None) -> dict:
        """One step: ``burst`` of ``(sign, pred, tuple)``; returns its row. A tqdm ``bar``
        shows the step's progress while it runs (:func:`ndlog.text.step_heartbeat`)."""
        t0 = time.perf_counter()
        extra = self._apply(label, burst, advance, bar)
        wall = time.perf_counter() - t0
        m = self.metrics()
        row = {"label": label, "wall_time": wall}
        row.update({k: m[k] - self._before[k] for k in _COUNTERS})
        row["state_tuples"] = m["state_tuples"]
        row.update(extra)
        self._before = {k: m[k] for k in _COUNTERS}
        return row

    def base_facts(self) -> dict[str, set[tuple]]:
        return self.net.base_facts()

    def relations(self) -> dict[str, set[tuple]]:
        return self.net.relations()

    def relation_names(self) -> set[str]:
        """The relations :meth:`relations` will return, known before anything runs (with
        ``--aggsel single`` they include each query's copies, such as ``path_minHops``)."""
        return self.net.relation_names()

    def why(self, pred: str, tup: tuple) -> str:
        return self.net.why(pred, tup)

    def describe(self) -> dict:
        """The run's settings as resolved (JSON-able)."""
        out = {"engine": self.engine}
        out.update(self.net.resolved.describe())
        return out

    def close(self) -> None:
        """Release what the engine holds (Ray actors)."""


class MemoryRunner(Runner):
    """:class:`engine.Network` on the in-memory transport (no clock: ``advance`` only runs
    the network to quiescence)."""

    engine = "memory"

    def __init__(self, program, options):
        from engine import Network
        super().__init__(program, options)
        self.net = Network(program, options=options)

    def _apply(self, label, burst, advance, bar):
        self.net.apply(burst).run(heartbeat=step_heartbeat(bar, label))
        return {}

    def metrics(self) -> dict:
        return self.net.metrics


class SimRunner(Runner):
    """:class:`sim.Simulation`: virtual time, latencies from the topology, soft state."""

    engine = "sim"

    def __init__(self, program, options, topology, *, processing=None, local_latency=None,
                 cost=None):
        from sim import Simulation
        super().__init__(program, options)
        self.sim = Simulation(program, topology, options=options, processing=processing,
                              local_latency=local_latency, cost=cost or "latency")
        self.net = self.sim.net

    def _apply(self, label, burst, advance, bar):
        result = self.sim.step(updates=burst, label=label, advance=advance,
                               heartbeat=step_heartbeat(bar, label, self.sim.clock))
        return {"sim_time": result.sim_time,
                "provenance_per_tuple": result.provenance_per_tuple}

    def metrics(self) -> dict:
        return self.net.metrics

    def describe(self) -> dict:
        out = super().describe()
        d = self.sim.describe()
        out.update(topology=d["topology"], delivery=d["delivery"],
                   processing=d["processing"], placement=d["placement"])
        return out


class RayRunner(Runner):
    """:class:`psn.distributed.RayNetwork` on a pool of local or remote Ray actors (no
    clock: ``advance`` only runs the network to quiescence)."""

    engine = "ray"

    def __init__(self, program, options, *, address=None, connect_timeout=None):
        import ray

        from provenance import get_scheme

        from ..distributed import RayNetwork, WorkerPool
        from ..distributed.network import refuse_phased
        refuse_phased(get_scheme(options.annotation))   # before Ray starts
        super().__init__(program, options)
        self._was_up = ray.is_initialized()
        self.pool = WorkerPool(options.workers, address, connect_timeout=connect_timeout)
        self.net = RayNetwork(program, options=options, pool=self.pool,
                              placement=options.placement)

    def _apply(self, label, burst, advance, bar):
        recoveries = self.net.recoveries
        self.net.apply(burst).run(heartbeat=step_heartbeat(
            bar, label, what=(("batch received", "batches received"),
                              ("batch in flight", "batches in flight"))))
        return {"recoveries": self.net.recoveries - recoveries}

    def metrics(self) -> dict:
        return self.net.metrics

    def describe(self) -> dict:
        out = super().describe()
        out.pop("delivery", None)          # Ray delivers as its actors run; not a model
        out.update(workers=self.net.workers,
                   ray_startup_seconds=round(self.pool.ray_startup_seconds, 3),
                   actor_startup_seconds=round(self.pool.actor_startup_seconds, 3))
        return out

    def close(self) -> None:
        from ..distributed import stop_ray
        self.pool.close()
        if not self._was_up:
            stop_ray()


def make_runner(engine: str, program, options, args, topology: Any) -> Runner:
    """The runner of ``engine`` for the parsed ``args``."""
    if engine == "memory":
        return MemoryRunner(program, options)
    if engine == "sim":
        from ndlog.errors import InputError
        from sim.delivery import parse_duration, require_at_least
        local = args.local_latency
        try:
            local = None if local is None else parse_duration(local)
            if local is not None:
                require_at_least("--local-latency", local, 0, duration=True)
        except ValueError as exc:
            raise InputError(f"--local-latency: {exc}") from None
        return SimRunner(program, options, topology, processing=args.processing,
                         local_latency=local, cost=args.cost)
    return RayRunner(program, options, address=args.address,
                     connect_timeout=args.connect_timeout)
