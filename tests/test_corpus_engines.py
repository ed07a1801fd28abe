"""The golden corpus on every engine: in memory, the simulator and Ray.

Every program of ``tests/programs`` runs with its facts, then loses a seeded third of its
base facts in one burst, on the in-memory engine, the simulator and Ray (two workers), with
the default annotation (absorption provenance, lazy MinShip, aggregate selection where it
applies) and, on the two in-process engines, with derivation sets, DRed and relative
provenance (the last two refuse the programs with negation, naming the fix), and with
MinShip per worker (two workers, in memory and in the simulator). After each
step the relations equal ``psn.evaluate`` on the current base facts (relations that aggregate
selection prunes are compared through the aggregates that read them), and after the
insertions they equal the case's ``expected.json``.
"""

from __future__ import annotations

import random

import pytest

import psn
import sim
from engine import Network
from ndlog.analysis import aggsel_candidates
from psn.distributed import RayNetwork, WorkerPool, start_ray
from tests.corpus import case_ids, cases

CASES = {c.name: c for c in cases()}


@pytest.fixture(scope="module")
def pool():
    start_ray()
    p = WorkerPool(2)
    yield p
    p.close()


def _deletions(case, seed: int) -> list:
    """A seeded third of the case's base facts (program facts included), as deletions."""
    facts = [(p, t) for p, rows in case.facts.items() for t in rows]
    facts += [(f.pred, f.values) for f in case.program.facts]
    rng = random.Random(seed)
    chosen = rng.sample(sorted(set(facts), key=repr), len(set(facts)) // 3)
    return [(-1, p, t) for p, t in chosen]


def _compare(net, case, label) -> None:
    skip = set(aggsel_candidates(case.program))
    want = psn.evaluate(case.program.with_(facts=()), net.base_facts())
    got = net.relations()
    for rel in want:
        if rel not in skip:
            assert got.get(rel, set()) == want[rel], (case.name, label, rel)


def _steps(net, case) -> None:
    net.apply([(1, p, t) for p, rows in case.facts.items() for t in rows]).run()
    _compare(net, case, "insertions")
    skip = set(aggsel_candidates(case.program))
    for rel, rows in case.expected.items():
        if rel not in skip:
            assert net.relations().get(rel, set()) == rows, (case.name, rel)
    net.apply(_deletions(case, len(case.name))).run()
    _compare(net, case, "deletions")


def _stored_where_located(net) -> None:
    """Every fact a node stores names that node as its location: the node's join lookups
    on the location argument alone read its whole table (``Node.index_probe``)."""
    nodes = net.sim.net.nodes if isinstance(net, _SimNet) else net.nodes
    for node in nodes.values():
        for pred, rows in node.state.items():
            for t in rows:
                assert node.program.location(pred, t) == node.id, (node.id, pred, t)


class _SimNet:
    """A :class:`sim.Simulation` with the network interface the steps use."""

    def __init__(self, case, annotation, options=None):
        self.sim = sim.Simulation(case.program, None, annotation=annotation,
                                  delivery="random", seed=len(case.name), options=options)
        self._burst: list = []

    def apply(self, burst):
        self._burst = list(burst)
        return self

    def run(self):
        ins: dict = {}
        dels: dict = {}
        for sign, p, t in self._burst:
            (ins if sign > 0 else dels).setdefault(p, []).append(t)
        self.sim.step(insert=ins, delete=dels)
        return self

    def base_facts(self):
        return self.sim.base_facts()

    def relations(self):
        return self.sim.relations()


def _refuses(case, annotation) -> bool:
    """DRed and relative provenance refuse negation up front, naming the annotations that
    maintain it."""
    return annotation in ("dred", "relative") and any(r.negations
                                                      for r in case.program.rules)


@pytest.mark.parametrize("annotation", ["absorption", "derivation", "dred", "relative"])
@pytest.mark.parametrize("name", case_ids())
def test_corpus_in_memory(name, annotation):
    case = CASES[name]
    if _refuses(case, annotation):
        with pytest.raises(psn.PSNError, match="--annotation absorption"):
            Network(case.program, annotation=annotation)
        return
    net = Network(case.program, annotation=annotation, delivery="random", seed=len(name))
    _steps(net, case)
    _stored_where_located(net)


@pytest.mark.parametrize("annotation", ["absorption", "derivation", "dred", "relative"])
@pytest.mark.parametrize("name", case_ids())
def test_corpus_in_the_simulator(name, annotation):
    case = CASES[name]
    if _refuses(case, annotation):
        with pytest.raises(psn.PSNError, match="--annotation absorption"):
            _SimNet(case, annotation)
        return
    net = _SimNet(case, annotation)
    _steps(net, case)
    _stored_where_located(net)


@pytest.mark.parametrize("engine", ["memory", "sim"])
@pytest.mark.parametrize("name", case_ids())
def test_corpus_with_minship_per_worker(name, engine):
    """The default annotation with MinShip shared by the nodes of each of 2 workers."""
    case = CASES[name]
    options = psn.RunOptions(minship_at="worker", workers=2)
    if engine == "memory":
        net = Network(case.program, options=options, delivery="random", seed=len(name))
    else:
        net = _SimNet(case, "absorption", options)
    _steps(net, case)
    _stored_where_located(net)


@pytest.mark.ray
@pytest.mark.parametrize("name", case_ids())
def test_corpus_on_ray(name, pool):
    case = CASES[name]
    with RayNetwork(case.program, pool=pool, workers=2) as net:
        _steps(net, case)
