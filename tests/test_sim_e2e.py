"""End-to-end tests of the simulator driving the real PSN engine.

After every step of a workload, the engine's relations must equal the centralized reference
``psn.evaluate`` on the current base facts (Nigam et al. Definition 1), whatever the delivery
model and placement. Derivation sets are exact but exponential, so these runs use small
graphs; the 100-node acceptance runs are in ``tests/test_sim_acceptance.py``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import psn
import topologies
from ndlog.errors import InputError
from psn.cli import main
from sim import Placement, Simulation

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REACHABLE = psn.load(EXAMPLES / "reachable.ndl")
SHORTEST = psn.load(EXAMPLES / "shortest_path.ndl")
REGION = psn.parse("""
g1 activeRegion(@X, R) :- seed(@X, R), isTriggered(@X).
g2 activeRegion(@Y, R) :- activeRegion(@X, R), isTriggered(@X), nbr(@X, Y).
g3 regionSize(@R, count<X>) :- activeRegion(@X, R).
g4 largestRegion(@K, max<N>) :- regionSize(@R, N), sink(@R, K).
g5 largestRegions(@K, R) :- regionSize(@R, N), sink(@R, K), largestRegion(@K, N).
""")


def assert_all_checked(steps):
    assert steps
    for s in steps:
        assert s.check is True, (s.label, s.diff)


@pytest.mark.parametrize("delivery,workers", [("random", None), ("adversarial", 2),
                                              ("fifo:jitter=1", 3)])
def test_reachable_insert_delete_flap_equals_reference(delivery, workers):
    topo = topologies.make("ring", n=5)
    s = Simulation(REACHABLE, topo, annotation="derivation", delivery=delivery,
                   workers=workers, seed=7, roundtrip=True)
    steps = s.run_workload("insert:0.4,1.0;delete-links:2;flap:random:1", check=True)
    assert [x.label.split()[0] for x in steps] == ["insert", "insert", "delete", "delete",
                                                    "flap", "flap"]
    assert_all_checked(steps)
    assert len(s.relations()["reachable"]) > 0
    assert s.transport.in_flight() == 0


def test_reachable_on_a_tree_with_deletions_random_delivery():
    topo = topologies.make("random", n=7, m=6, seed=5, connected=True)     # a tree
    s = Simulation(REACHABLE, topo, annotation="derivation", delivery="random", seed=2)
    assert_all_checked(s.run_workload("insert:0.5,1.0;delete-links:6", check=True))
    assert s.relations()["reachable"] == set()


def test_shortest_path_aggregates_follow_deletions():
    topo = topologies.make("ring", n=5)
    s = Simulation(SHORTEST, topo, annotation="derivation", delivery="random", seed=3)
    steps = s.run_workload("insert:1.0;delete-links:2", check=True)
    assert_all_checked(steps)
    assert s.relations()["minCost"]


def test_region_query_trigger_and_untrigger():
    grid = topologies.make("sensor-grid", sensors=16, size=40, radius=10, seeds=2, seed=1)
    s = Simulation(REGION, grid, annotation="derivation", delivery="random", seed=4)
    steps = s.run_workload("sensors:trigger=0.5,untrigger", check=True)
    assert len(steps) == 2 + round(0.5 * 14)
    assert_all_checked(steps)
    assert s.base_facts()["isTriggered"] == {(x,) for x in grid.seeds}


def test_one_worker_sends_nothing_between_workers_and_agrees():
    topo = topologies.make("ring", n=5)
    results = {}
    for label, placement in [("per-node", Placement()), ("one", Placement(1))]:
        s = Simulation(REACHABLE, topo, annotation="derivation", placement=placement,
                       delivery="random", seed=1)
        steps = s.run_workload("insert:1.0;delete-links:1", check=True)
        assert_all_checked(steps)
        results[label] = (s, steps)
    one_sim, one_steps = results["one"]
    assert all(st.traffic["bytes_sent"] == 0 and st.traffic["local_msgs"] > 0
               for st in one_steps)
    assert one_sim.transport.metrics.totals["worker_bytes_sent"] == 0
    per_sim, per_steps = results["per-node"]
    assert all(st.traffic["bytes_sent"] > 0 for st in per_steps)
    assert per_sim.relations() == one_sim.relations()


def test_one_manager_per_process_or_per_worker_agrees_in_the_simulator():
    """Absorption provenance with the workers sharing one CUDD manager (the default) or
    each its own (every message then rebuilt from its bytes): same relations after every
    step, same traffic, same virtual convergence time."""
    topo = topologies.make("random", n=8, m=14, seed=3, connected=True)
    runs = {}
    for contexts in ("process", "worker"):
        s = Simulation(REACHABLE, topo, annotation="absorption", delivery="random", seed=5,
                       workers=3, contexts=contexts)
        steps = s.run_workload("insert:1.0;delete-links:3", check=True)
        assert_all_checked(steps)
        runs[contexts] = (s, steps)
    (shared, a), (own, b) = runs["process"], runs["worker"]
    assert len({id(shared.net.context_of(n).bdd) for n in shared.net.nodes}) == 1
    assert len({id(own.net.context_of(n).bdd) for n in own.net.nodes}) == 3
    for x, y in zip(a, b):
        assert x.traffic["bytes_sent"] == y.traffic["bytes_sent"] > 0
        assert x.sim_time == y.sim_time
    assert shared.relations() == own.relations()


def test_soft_state_expires_at_its_virtual_time():
    prog = psn.parse("""
        materialize(link, 5, infinity, keys(1,2)).
        r1 reachable(@S, D) :- link(@S, D).
        r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
    """)
    s = Simulation(prog, topologies.make("line", n=3), annotation="derivation",
                   delivery="fifo", seed=1)
    s.transport.trace = []
    assert s.step(insert={"link": [(0, 1), (1, 0)]}, check=True).check
    assert (1, 0) in s.relations()["reachable"]
    s.clock.run(until=3.0)
    s.step(insert={"link": [(0, 1)]})           # a refresh: (0, 1) now lives until 8 s
    assert s.advance(1.5, check=True).check     # t = 4.5: nothing expired yet
    assert s.expired == 0 and (1, 0) in s.relations()["link"]
    assert s.advance(1.0, check=True).check     # t = 5.5: (1, 0) expired at 5 s
    assert s.expired == 1 and s.relations()["link"] == {(0, 1)}
    assert s.relations()["reachable"] == {(0, 1)}
    assert s.advance(5.0, check=True).check     # (0, 1) expired at 8 s
    assert s.relations()["reachable"] == set()
    injected = [(t[1], t[3]) for t in s.transport.trace if t[0] == "send" and t[2] is None]
    assert injected[-2:] == [(5.0, 1), (8.0, 0)]


def test_soft_state_follows_the_ledger_through_keys_refusals_and_program_facts():
    """Expiries follow what the engine accepted: a fact deleted and re-inserted in one step
    is present and expires from then; a keyed replacement's old tuple does not expire
    (it is gone already); a refused step schedules and cancels nothing; a soft fact in the
    program text expires too; every step equals the reference."""
    def sim_of(text: str) -> Simulation:
        return Simulation(psn.parse(text + "r1 reach(@S, D) :- link(@S, D).\n"), None,
                          annotation="absorption", delivery="random", seed=1)
    s = sim_of("materialize(link, 5, infinity, keys(1, 2)).\n")
    s.step(insert={"link": [(1, 2)]})
    s.clock.run(until=2.0)
    assert s.step(insert={"link": [(1, 2)]}, delete={"link": [(1, 2)]}, check=True).check
    assert s.base_facts() == {"link": {(1, 2)}}
    assert s.advance(4.5, check=True).check and s.expired == 0      # t = 6.5 < 7
    assert s.advance(1.0, check=True).check and s.base_facts() == {}
    keyed = sim_of("materialize(link, 5, infinity, keys(1)).\n")
    keyed.step(insert={"link": [(1, 2)]})
    keyed.clock.run(until=1.0)
    keyed.step(insert={"link": [(1, 3)]})                            # replaces (1, 2)
    assert keyed.advance(4.5, check=True).check                      # t = 5.5
    assert keyed.expired == 0 and keyed.base_facts() == {"link": {(1, 3)}}
    assert keyed.advance(1.0, check=True).check and keyed.expired == 1
    sized = sim_of("materialize(link, 5, 1, keys(1, 2)).\n")
    sized.step(insert={"link": [(1, 2)]})
    with pytest.raises(InputError, match="holds at most 1 tuple per node"):
        sized.step(insert={"link": [(1, 3), (1, 4)]}, delete={"link": [(1, 2)]})
    assert sized.advance(5.5, check=True).check and sized.base_facts() == {}
    keyed.step(insert={"link": [(1, 4), (1, 3)]})
    keyed.step(insert={"link": [(1, 5), (1, 3)]})       # replaced, then back in one step:
    assert keyed.base_facts() == {"link": {(1, 3)}}     # an insertion, not a refresh
    with pytest.raises(InputError, match=r"cannot delete link\(@1, 3\)"):
        keyed.step(delete={"link": [(1, 3), (1, 3)]})   # one insertion, deleted twice
    assert keyed.advance(6.0, check=True).check and keyed.base_facts() == {}
    with pytest.raises(InputError, match=r"cannot delete link\(@1, 3\)"):
        keyed.step(delete={"link": [(1, 3)]})           # expired already: refused whole,
    assert keyed.step(insert={"link": [(1, 3)]}, check=True).check   # and forgotten
    assert keyed.base_facts() == {"link": {(1, 3)}}
    twice = sim_of("materialize(link, 5, infinity, keys(1, 2)).\n")
    twice.step(insert={"link": [(1, 2)]})
    twice.step(delete={"link": [(1, 2)]}, insert={"link": [(1, 2), (1, 2)]})
    assert len(twice.net.ledger.live[("link", (1, 2))]) == 1       # the second: a refresh
    assert twice.step(delete={"link": [(1, 2)]}, check=True).check
    assert twice.base_facts() == {}
    text = sim_of("materialize(link, 5, infinity, keys(1, 2)).\nlink(@1, 2).\n")
    assert text.base_facts() == {"link": {(1, 2)}}
    assert text.advance(6.0, check=True).check and text.expired == 1
    assert text.relations()["reach"] == set()
    again = sim_of("materialize(link, 5, infinity, keys(1, 2)).\nlink(@1, 2).\nlink(@1, 2).\n")
    assert again.step(delete={"link": [(1, 2)]}, check=True).check   # written twice: a
    assert again.base_facts() == {}                                   # refresh, as in a step


def test_set_semantics_refuses_soft_state_it_cannot_delete_before_anything_runs():
    """Expiries are deletions: refused when the simulation is made, as psn run refuses
    them, not at the first expiry inside a later step."""
    from engine.guards import UnsafeAnnotationError
    program = psn.parse("materialize(m, 1, infinity, keys(1, 2)).\n"
                        "d1 two(@X, Y) :- link(@X, Z), link(@Z, Y).\n"
                        "d2 deg(@X, sum<V>) :- two(@X, Y), m(@Y, V).\n")
    with pytest.raises(UnsafeAnnotationError, match="table m expires its facts after 1"):
        Simulation(program, None, annotation="set", delivery="fifo")
    plain = psn.parse("materialize(m, 1, infinity, keys(1, 2)).\nr1 q(@X, Y) :- m(@X, Y).\n")
    s = Simulation(plain, None, annotation="set")        # exact there: it runs
    s.step(insert={"m": [(3, 0)]})
    assert s.advance(2.0, check=True).check and s.relations()["q"] == set()


@pytest.mark.parametrize("annotation", ["relative", "dred", "absorption"])
def test_an_expiry_during_a_barrier_is_delivered_before_the_step_ends(annotation):
    """A phased scheme's barriers and traversal take virtual time; a soft fact that expires
    meanwhile sends its deletion then, and the run goes on until it is processed (relative
    provenance used to end the step with m(@3, 0) still present)."""
    program = psn.parse("materialize(m, 1, infinity, keys(1, 2)).\n"
                        "d1 two(@X, Y) :- link(@X, Z), link(@Z, Y).\n"
                        "d2 deg(@X, sum<V>) :- two(@X, Y), m(@Y, V).\n")
    s = Simulation(program, None, annotation=annotation, delivery="fifo", seed=1, workers=1)
    s.step(insert={"link": [(3, 2)], "m": [(3, 0)]})
    s.advance(0.999 - s.now)                    # m(@3, 0) expires at 1 s, within the step
    step = s.step(insert={"link": [(3, 2)]}, delete={"link": [(3, 2)]}, check=True)
    assert step.check, step.diff                # (DRed's step ends before 1 s)
    assert s.advance(max(0.0, 1.5 - s.now), check=True).check
    assert s.expired == 1 and "m" not in s.base_facts() and s.relations()["m"] == set()


def test_a_wait_lasts_until_the_deletions_of_its_expiries_are_processed():
    """docs/simulator.md: a wait whose expiries are still being processed when its time is
    up ends once they are done, and a burst after it starts its lifetimes then."""
    program = psn.parse("materialize(s, 2, infinity, keys(1, 2)).\n"
                        "r1 q(@D, S) :- s(@S, D).\n")
    ring = topologies.make("ring", n=3, latency=1500)           # 1.5 s per link
    sim = Simulation(program, ring, delivery="fifo", seed=0, processing="0s+0s")
    sim.step(insert={"s": [(0, 1)]})                            # q(@1, 0) at 1.5 s
    assert sim.now == pytest.approx(1.5)
    # s(@0, 1) expires at 2 s, 0.5 s into the wait; its deletion reaches node 1 at 3.5 s
    sim.step(insert={"s": [(1, 2)]}, advance=1.2, check=True)
    assert sim.expired == 1 and sim.steps[-1].start == pytest.approx(2.0)
    sim.advance(5.49 - sim.now)                                 # injected at 3.5, not 2.7
    assert sim.base_facts() == {"s": {(1, 2)}} and sim.relations()["q"] == {(2, 1)}
    assert sim.advance(0.02, check=True).check and sim.base_facts() == {}


@pytest.mark.parametrize("engine", ["memory", "sim"])
def test_a_burst_file_applies_in_its_own_order_on_every_engine(engine, tmp_path, capsys):
    """Insert, then delete, then insert: the simulator used to move every deletion first
    and refuse the burst (the deletion found no insertion)."""
    burst = tmp_path / "b.ndl"
    burst.write_text("+link(@1, 2).\n-link(@1, 2).\n+link(@2, 3).\n")
    assert main(["run", "examples/reachable.ndl", "--burst", str(burst), "--engine", engine,
                 "--check", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["relations"]["link"] == [[2, 3]] and out["summary"]["check"] is True


@pytest.mark.parametrize("engine", ["memory", "sim"])
def test_a_deletion_before_its_insertion_in_one_burst_is_cancelled_on_every_engine(
        engine, tmp_path, capsys):
    """A deletion that an insertion later in the same burst matches is cancelled by it,
    as the ledger does: the in-memory engine and Ray ran this burst, the simulator refused
    it ('cannot delete link(@2, 3)'). A deletion left unmatched at the end of the burst is
    still refused."""
    facts = tmp_path / "f.ndl"
    facts.write_text("link(@1, 2).\n")
    burst = tmp_path / "b.ndl"
    burst.write_text("-link(@2, 3).\n+link(@2, 3).\n+link(@3, 4).\n")
    argv = ["run", "examples/reachable.ndl", "--facts", str(facts), "--engine", engine]
    assert main(argv + ["--burst", str(burst), "--check", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["relations"]["link"] == [[1, 2], [3, 4]] and out["summary"]["check"] is True
    burst.write_text("-link(@2, 3).\n+link(@2, 3).\n-link(@2, 3).\n")
    assert main(argv + ["--burst", str(burst)]) == 2
    assert capsys.readouterr().err.startswith(f"{burst}:3:2: error: cannot delete link(@2, 3)")


def test_a_keyed_or_soft_deletion_before_its_insertion_matches_the_in_memory_engine():
    """The same bursts through Simulation.step and Network.apply: the same base facts and
    relations, a keyed table's replacement and a soft-state fact included."""
    from engine import Network
    program = ("materialize(val, infinity, infinity, keys(1)).\n"
               "materialize(peer, 5, infinity, keys(1, 2)).\n"
               "r1 reach(@S, D) :- link(@S, D).\n"
               "r2 reach(@S, D) :- link(@S, Z), reach(@Z, D).\n"
               "v1 both(@S, V) :- val(@S, V), peer(@S, D).\n")
    bursts = [[(1, "val", (1, 3)), (1, "peer", (1, 2)), (1, "link", (1, 2))],
              [(-1, "val", (1, 5)), (1, "val", (1, 5)), (-1, "peer", (1, 4)),
               (1, "peer", (1, 4)), (-1, "link", (2, 3)), (1, "link", (2, 3)),
               (1, "link", (2, 1))]]
    sim = Simulation(program, None, seed=1, state_metrics=False)
    net = Network(program, seed=1)
    for burst in bursts:
        assert sim.step(updates=burst, check=True).check
        net.apply(burst).run()
        assert sim.base_facts() == net.base_facts()
        assert sim.relations() == net.relations()
    assert sim.base_facts() == {"peer": {(1, 2)}, "link": {(1, 2), (2, 1)}}


def test_virtual_time_and_latency_shape_convergence():
    """A line's convergence grows with its latency; the sum of steps is the clock."""
    times = []
    for lat in (1, 10):
        s = Simulation(REACHABLE, topologies.make("line", n=4, latency=lat),
                       annotation="set", delivery="fifo", seed=0)
        (st,) = s.run_workload("insert:1.0")
        assert st.start == 0.0 and st.sim_time > 3 * lat * 1e-3    # three hops at least
        times.append(st.sim_time)
    assert times[1] > times[0]


def test_metrics_files_from_a_run(tmp_path):
    s = Simulation(REACHABLE, topologies.make("ring", n=4), annotation="derivation",
                   workers=2, delivery="random", seed=1)
    s.run_workload("insert:0.5,1.0;delete-links:1", check=True)
    s.write_metrics(tmp_path / "m.json")
    s.write_metrics(tmp_path / "m.csv")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["run"]["annotation"] == "derivation" and doc["run"]["nodes"] == 4
    assert len(doc["steps"]) == 3
    last = doc["steps"][-1]
    assert set(last["per_node"]) == {"0", "1", "2", "3"}
    assert set(last["per_worker"]) <= {"0", "1"}
    assert last["state"]["tuples"] == sum(r["tuples"] for r in last["per_node"].values())
    assert last["check"] is True and last["sim_time"] > 0
    rows = list(csv.DictReader(open(tmp_path / "m.csv")))
    totals = [r for r in rows if r["scope"] == "total"]
    assert len(totals) == 3 and all(r["check"] == "true" for r in totals)
    assert {r["scope"] for r in rows} == {"total", "node", "worker"}
    sent = sum(int(r["bytes_sent"]) for r in rows if r["scope"] == "worker")
    assert sent == sum(int(r["bytes_sent"]) for r in totals)
    s.write_metrics(tmp_path / "M.CSV")              # the suffix in any case, as facts files
    assert (tmp_path / "M.CSV").read_text() == (tmp_path / "m.csv").read_text()


def test_cli_runner(tmp_path, capsys):
    out = tmp_path / "m.json"
    argv = ["run", str(EXAMPLES / "reachable.ndl"), "--topology", "ring",
            "--topology-option", "n=4", "--annotation", "derivation",
            "--workload", "insert:0.5,1.0;delete-links:1", "--check",
            "--workers", "2", "--metrics", str(out), "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "check: ok (3 steps equal to the reference)" in text
    assert json.loads(out.read_text())["steps"]
    assert main(argv + ["--format", "json", "--relation", "reachable"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["check"] is True and doc["relations"]["reachable"]
    assert main(argv + ["--topology-option", "bogus=1"]) == 2
    assert "bogus" in capsys.readouterr().err


def _fingerprint(steps):
    return [(s.label, s.sim_time, s.events, s.traffic["bytes_sent"]) for s in steps]


def test_a_run_is_a_function_of_its_seed():
    runs = []
    for seed in (5, 5, 6):
        s = Simulation(REACHABLE, topologies.make("ring", n=4), annotation="derivation",
                       delivery="random", seed=seed)
        runs.append(_fingerprint(s.run_workload("insert:0.5,1.0;delete-links:1")))
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_progress_bar_only_when_asked(capsys):
    s = Simulation(REACHABLE, topologies.make("line", n=3), annotation="set", seed=0)
    s.run_workload("insert:0.5,1.0", progress=False)
    assert capsys.readouterr().err == ""
    s.run_workload("insert:1.0", progress=None)          # stderr is not a terminal here
    assert capsys.readouterr().err == ""
    s.run_workload("insert:1.0", progress=True)
    assert "step" in capsys.readouterr().err


def test_program_facts_are_base_facts_like_any_other():
    prog = psn.parse("""
        link(@0, 1). link(@1, 2).
        r1 reachable(@S, D) :- link(@S, D).
        r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
    """)
    s = Simulation(prog, topologies.make("line", n=4), annotation="derivation", seed=1)
    assert [x.label for x in s.steps] == ["program facts"]
    assert s.relations()["reachable"] == {(0, 1), (0, 2), (1, 2)}
    steps = s.run_workload("insert:1.0;flap:0-1:1", check=True)
    assert steps[0].inserted == 6 - 2          # (0, 1) and (1, 2) were there already
    assert_all_checked(steps)


@pytest.mark.parametrize("annotation", ["set", "derivation", "absorption", "relative",
                                        "dred"])
def test_state_figures_are_the_packed_size_of_every_stored_fact(annotation):
    """Each relation measured in one call equals the per-fact sum: the msgpack size of the
    tuple plus its predicate's name, and of each annotation occurrence."""
    import msgpack
    from sim.simulation import state_figures
    topo = topologies.make("ring", n=5)
    s = Simulation(REACHABLE, topo, annotation=annotation, seed=4)
    s.run_workload("insert;delete-links:3" if annotation != "set" else "insert")
    net, occurrences = s.net, s.net.scheme.occurrences
    got = state_figures(net)
    for nid, node in net.nodes.items():
        stored = [(p, t, v) for p, table in node.state.items() for t, v in table.items()]
        prov = sum(net.codec.annotation_size(occ, node.ctx)
                   for _, _, v in stored for occ in occurrences(v))
        tup = sum(len(p) + len(msgpack.packb(t, use_bin_type=True)) for p, t, _ in stored)
        assert got[nid] == {"tuples": len(stored), "provenance_bytes": prov,
                            "state_bytes": prov + tup}
    assert sum(f["tuples"] for f in got.values()) > 0
    if annotation in ("derivation", "absorption", "relative"):   # they store provenance
        assert sum(f["provenance_bytes"] for f in got.values()) > 0


def test_state_figures_reuse_only_the_nodes_that_did_not_step():
    """Between steps a node that did not step keeps its measured figures (the same cache
    entry); every step's figures equal a measurement from scratch."""
    from sim.simulation import state_figures
    topo = topologies.make("ts100", seed=1)
    s = Simulation(REACHABLE, topo, seed=2)
    net, cache = s.net, {}
    s.run_workload("insert")
    assert state_figures(net, cache) == state_figures(net)
    kept = 0
    for a, b in [(39, 42), (96, 99), (90, 3)]:      # 8, 5 and 100 of 100 nodes step
        assert (a, b) in s.base_facts()["link"]
        before = dict(cache)
        steps = {n: node.metrics.steps for n, node in net.nodes.items()}
        s.step(delete={"link": [(a, b), (b, a)]})
        assert state_figures(net, cache) == state_figures(net)
        for n, node in net.nodes.items():
            assert (cache[n] is before[n]) == (node.metrics.steps == steps[n])
            kept += cache[n] is before[n]
    assert kept > 0


def test_a_wait_in_which_soft_state_expires_reports_the_time_of_its_deliveries():
    """The expiries of a wait step send messages: its sim_time runs from the first expiry
    to the last batch those deliveries caused (it was 0.0, measured from the end of the
    wait, though 40 messages were sent on a ring); a wait in which nothing happens stays
    at 0."""
    prog = psn.parse("""
        materialize(link, 5, infinity, keys(1,2)).
        r1 reachable(@S, D) :- link(@S, D).
        r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
    """)
    s = Simulation(prog, topologies.make("ring"), annotation="derivation",
                   delivery="fifo", seed=1)
    load, expire = s.run_workload("all; wait:6s", check=True)
    assert load.check and expire.check and s.relations()["reachable"] == set()
    assert expire.traffic["msgs_sent"] > 0
    assert expire.start == 5.0                  # the lifetime ends 5 s after the load
    assert 0 < expire.sim_time < 1.0 and expire.start + expire.sim_time < s.now
    quiet = s.advance(1.0)
    assert quiet.sim_time == 0.0 and quiet.traffic["msgs_sent"] == 0
