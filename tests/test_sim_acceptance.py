"""ACCEPTANCE: the simulator on the paper's default workloads, end to end.

- reachable and shortest path on the default 100-node GT-ITM topology (``ts100``), every link
  inserted, then 20 links deleted one at a time, random delivery, absorption provenance with
  lazy MinShip: relations equal ``psn.evaluate`` after every step;
- the region query on a 100-sensor grid: trigger half the sensors, then un-trigger them at
  random, checked the same way;
- insertions only (fractions 0.25 .. 1.0 of the links, Liu Fig. 7) with set semantics,
  which is exact for insertions.

Deletions on these sizes need absorption provenance (Liu Sec. 4): derivation sets
enumerate every cycle-free derivation and do not finish on a 100-node graph. Marked
``slow``; each is meant to stay well under two minutes on the 2-core machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import psn
import topologies
from sim import Simulation

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REGION = """
g1 activeRegion(@X, R) :- seed(@X, R), isTriggered(@X).
g2 activeRegion(@Y, R) :- activeRegion(@X, R), isTriggered(@X), nbr(@X, Y).
g3 regionSize(@R, count<X>) :- activeRegion(@X, R).
g4 largestRegion(@K, max<N>) :- regionSize(@R, N), sink(@R, K).
g5 largestRegions(@K, R) :- regionSize(@R, N), sink(@R, K), largestRegion(@K, N).
"""

def _checked(steps):
    for s in steps:
        assert s.check is True, (s.label, s.diff)
    return steps


def test_acceptance_reachable_ts100_insertions_set_semantics():
    topo = topologies.make("ts100", seed=1)
    assert topo.n == 100
    s = Simulation(psn.load(EXAMPLES / "reachable.ndl"), topo, annotation="set",
                   delivery="random", seed=1, state_metrics=False)
    steps = _checked(s.run_workload("insert:0.25,0.5,0.75,1.0", check=True))
    assert len(steps) == 4
    assert len(s.relations()["reachable"]) == 100 * 100


@pytest.mark.parametrize("program", ["reachable.ndl", "shortest_path.ndl"])
def test_acceptance_ts100_all_links_then_20_deletions(program):
    topo = topologies.make("ts100", seed=1)
    s = Simulation(psn.load(EXAMPLES / program), topo, annotation="absorption",
                   ship="lazy", delivery="random", seed=1, state_metrics=False)
    steps = _checked(s.run_workload("insert:1.0;delete-links:20", check=True))
    assert len(steps) == 21


def test_acceptance_region_query_100_sensors():
    grid = topologies.make("sensor-grid", sensors=100, seed=1)
    s = Simulation(psn.parse(REGION), grid, annotation="absorption", ship="lazy",
                   delivery="random", seed=1, state_metrics=False)
    steps = _checked(s.run_workload("sensors:trigger=0.5,untrigger", check=True))
    assert len(steps) == 2 + round(0.5 * (100 - len(grid.seeds)))
