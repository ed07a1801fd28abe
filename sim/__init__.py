"""A discrete-event network simulator that drives the PSN engine on virtual time.

Role: run PSN programs the way Liu et al. (ICDE 2009, Sec. 7) ran them: on a topology with
link latencies, with messages delayed, reordered and placed on workers, through workloads of
insertions, deletions, link flaps and sensor triggers, measured per node and per worker.

- :mod:`sim.events`, :mod:`sim.clock`: the event queue and the virtual clock (the Clock
  protocol of :mod:`engine.transport`);
- :mod:`sim.network`: :class:`SimTransport`, the Transport protocol on virtual time
  (latencies from the topology, delivery models, workers, processing time);
- :mod:`sim.delivery`, :mod:`sim.placement`: delivery and processing-time models; nodes on
  workers;
- :mod:`sim.workloads`: workloads as data and their SPEC strings;
- :mod:`sim.metrics`: counters, per-step results, JSON and CSV files;
- :mod:`sim.simulation`: :class:`Simulation`, the Python API;
- :mod:`sim.cli`: options and runner for ``psn run --engine sim``.

Deliberately not here: the PSN iteration and annotations (``engine``, ``provenance``), and
topology generation (``topologies``). The engine never imports this package.
"""

from __future__ import annotations

from .clock import VirtualClock
from .delivery import Adversarial, Fifo, ProcessingModel, RandomJitter, make_delivery
from .events import Event, EventQueue
from .metrics import StepResult, write_csv, write_json, write_metrics
from .network import LatencyModel, SimTransport
from .placement import Placement, parse_placement
from .simulation import Simulation, best_annotation, compare_relations
from .workloads import Step, Workload, parse_workload

__all__ = [
    "Simulation", "SimTransport", "VirtualClock", "EventQueue", "Event", "LatencyModel",
    "Placement", "parse_placement", "Fifo", "RandomJitter", "Adversarial", "make_delivery",
    "ProcessingModel", "Workload", "Step", "parse_workload", "StepResult", "write_json",
    "write_csv", "write_metrics", "best_annotation", "compare_relations",
    "cli_options", "run_from_args",
]


def cli_options(parser) -> None:
    """Add the simulator's options to an argparse parser (see :mod:`sim.cli`)."""
    from .cli import cli_options as _opts
    _opts(parser)


def run_from_args(args, program=None) -> int:
    """Run ``psn run --engine sim`` from parsed arguments (see :mod:`sim.cli`)."""
    from .cli import run_from_args as _run
    return _run(args, program)
