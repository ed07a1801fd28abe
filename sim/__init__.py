"""A discrete-event network simulator that drives the PSN engine on virtual time.

Role: run PSN programs the way Liu et al. (ICDE 2009, Sec. 7) ran them: on a topology with
link latencies, with messages delayed, reordered and placed on workers, through workloads of
insertions, deletions, link flaps and sensor triggers, measured per node and per worker.

- :mod:`sim.events`, :mod:`sim.clock`: the event queue and the virtual clock (the Clock
  protocol of :mod:`engine.transport`);
- :mod:`sim.network`: :class:`SimTransport`, the Transport protocol on virtual time
  (latencies from the topology, delivery models, workers, processing time);
- :mod:`sim.delivery`: the processing-time model (delivery models, placement and workloads
  are the engine's, shared by every transport: :mod:`engine.delivery`,
  :mod:`engine.placement`, :mod:`engine.workloads`);
- :mod:`sim.metrics`: counters, per-step results, JSON and CSV files;
- :mod:`sim.simulation`: :class:`Simulation`, the Python API.

Deliberately not here: the PSN iteration and annotations (``engine``, ``provenance``),
topology generation (``topologies``), the command line (``psn run --engine sim``). The
engine never imports this package.
"""

from __future__ import annotations

from .clock import VirtualClock
from .delivery import Adversarial, Fifo, ProcessingModel, RandomJitter, make_delivery
from .events import Event, EventQueue
from .metrics import StepResult, write_csv, write_json, write_metrics
from .network import LatencyModel, SimTransport
from engine.placement import Placement, parse_placement
from .simulation import Simulation, compare_relations
from engine.workloads import Step, Workload, parse_workload

__all__ = [
    "Simulation", "SimTransport", "VirtualClock", "EventQueue", "Event", "LatencyModel",
    "Placement", "parse_placement", "Fifo", "RandomJitter", "Adversarial", "make_delivery",
    "ProcessingModel", "Workload", "Step", "parse_workload", "StepResult", "write_json",
    "write_csv", "write_metrics", "compare_relations",
]
