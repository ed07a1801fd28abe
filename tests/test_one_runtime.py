"""One runtime behind every engine: the same options, steps, output shape and answers.

``psn run`` on the in-memory engine, the simulator and Ray must print one JSON document
shape, run the same steps for the same workload and seed, refuse options that do not apply
to the chosen engine, and give the reference's relations. The Python API resolves the same
defaults everywhere (absorption provenance with lazy MinShip).
"""

from __future__ import annotations

import json

import pytest

import psn
from engine import Network, RunOptions
from engine.guards import default_memory_limit
from ndlog.analysis import aggsel_candidates
from ndlog.errors import InputError
from psn.cli import main
from psn.cli.runners import STEP_COLUMNS
from tests.corpus import from_json

EXAMPLES = "examples"
TOP_KEYS = {"run", "steps", "summary", "relations", "metrics"}


def _json(capsys, argv) -> dict:
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _relations(doc) -> dict[str, set]:
    return from_json(doc["relations"])


LINKS = [(1, 2, 3), (2, 3, 1), (3, 1, 2), (1, 3, 7), (3, 4, 1)]
BURSTS = [[(-1, (3, 1, 2)), (1, (4, 1, 1))], [(-1, (1, 3, 7)), (1, (2, 4, 5))]]


def _fact(t: tuple, arity: int) -> str:
    return "link(@" + ", ".join(map(str, t[:arity])) + ")."


def write_inputs(tmp_path, arity: int):
    """``f.ndl`` (five links), ``b1.ndl`` and ``b2.ndl`` (a deletion and an insertion each)
    for link/``arity``; returns the final link facts."""
    (tmp_path / "f.ndl").write_text("\n".join(_fact(t, arity) for t in LINKS) + "\n")
    final = {t[:arity] for t in LINKS}
    for i, burst in enumerate(BURSTS, 1):
        lines = []
        for sign, t in burst:
            lines.append(("+" if sign > 0 else "-") + _fact(t, arity))
            (final.add if sign > 0 else final.discard)(t[:arity])
        (tmp_path / f"b{i}.ndl").write_text("\n".join(lines) + "\n")
    return {"link": sorted(final)}


@pytest.fixture
def bursts(tmp_path):
    write_inputs(tmp_path, 3)
    return tmp_path


@pytest.mark.parametrize("program", ["reachable.ndl", "shortest_path.ndl"])
def test_json_shape_and_relations_are_the_same_on_every_engine(program, tmp_path, capsys):
    """Recursion and aggregates, two bursts with deletions: memory, sim and Ray print one
    document shape and the same relations, equal to psn.evaluate on the final facts."""
    path = f"{EXAMPLES}/{program}"
    program_ast = psn.load(path)
    final = write_inputs(tmp_path, program_ast.arities()["link"])
    bursts = tmp_path
    base = ["run", path, "--facts", str(bursts / "f.ndl"), "--burst", str(bursts / "b1.ndl"),
            "--burst", str(bursts / "b2.ndl"), "--format", "json"]
    docs = {
        "memory": _json(capsys, base + ["--engine", "memory"]),
        "sim": _json(capsys, base + ["--engine", "sim"]),
        "ray": _json(capsys, base + ["--engine", "ray", "--workers", "2"]),
    }
    want = psn.evaluate(program_ast, final)
    pruned = set(aggsel_candidates(program_ast))      # pruned by aggregate selection
    for engine, doc in docs.items():
        assert set(doc) == TOP_KEYS, engine
        assert doc["run"]["engine"] == engine
        assert doc["run"]["annotation"] == "absorption" and doc["run"]["ship"] == "lazy"
        # the ceiling that applies (75 % of this machine's memory by default), not None
        assert doc["run"]["max_memory"] == default_memory_limit(), engine
        assert ("delivery" in doc["run"]) == (engine != "ray"), engine    # Ray: no model
        assert [s["label"] for s in doc["steps"]] == ["facts", f"burst {bursts / 'b1.ndl'}",
                                                      f"burst {bursts / 'b2.ndl'}"]
        for row in doc["steps"]:
            assert set(STEP_COLUMNS) <= set(row), engine
        got = _relations(doc)
        assert set(got) == set(want), engine
        for rel in want:
            if rel not in pruned:
                assert got[rel] == want[rel], (engine, rel)
    assert _relations(docs["memory"]) == _relations(docs["ray"]) == _relations(docs["sim"])


def test_a_soft_state_fact_inserted_twice_is_deleted_once_on_every_engine(tmp_path, capsys):
    """A re-insertion of a present soft-state fact is a refresh, not a second insertion,
    on every engine (the simulator also restarts its lifetime): one deletion removes it."""
    program = tmp_path / "soft.ndl"
    program.write_text("materialize(link, 30, infinity, keys(1, 2)).\n"
                       "link(@1, 2).\n"
                       "r1 reach(@S, D) :- link(@S, D).\n"
                       "r2 reach(@S, D) :- link(@S, Z), reach(@Z, D).\n")
    (tmp_path / "f.ndl").write_text("link(@2, 3).\nlink(@1, 2).\n")
    (tmp_path / "b1.ndl").write_text("+link(@1, 2).\n")
    (tmp_path / "b2.ndl").write_text("-link(@1, 2).\n")
    base = ["run", str(program), "--facts", str(tmp_path / "f.ndl"), "--burst",
            str(tmp_path / "b1.ndl"), "--burst", str(tmp_path / "b2.ndl"), "--format", "json",
            "--check"]
    for engine in ("memory", "sim", "ray"):
        doc = _json(capsys, base + ["--engine", engine])
        assert _relations(doc) == {"link": {(2, 3)}, "reach": {(2, 3)}}, engine


def test_same_workload_and_seed_give_the_same_steps_on_sim_and_ray(capsys):
    argv = ["run", f"{EXAMPLES}/reachable.ndl", "--topology", "ts100", "--workload",
            "all; delete-links:5", "--seed", "3", "--format", "json"]
    sim = _json(capsys, argv + ["--engine", "sim"])
    ray = _json(capsys, argv + ["--engine", "ray", "--workers", "2"])
    mem = _json(capsys, argv + ["--engine", "memory"])
    labels = [s["label"] for s in sim["steps"]]
    assert len(labels) == 6 and labels[1].startswith("delete ")
    assert labels == [s["label"] for s in ray["steps"]] == [s["label"] for s in mem["steps"]]
    assert _relations(sim) == _relations(ray) == _relations(mem)
    facts = {"link": [tuple(t) for t in sim["relations"]["link"]]}
    assert _relations(sim)["reachable"] == psn.evaluate(psn.load(f"{EXAMPLES}/reachable.ndl"),
                                                        facts)["reachable"]


@pytest.mark.parametrize("delivery", ["random:jitter=0.5,abs=2ms", "adversarial:period=8",
                                      "fifo:jitter=1"])
@pytest.mark.parametrize("engine", ["memory", "sim"])
def test_delivery_models_with_options_work_in_memory_and_in_the_simulator(engine, delivery,
                                                                          capsys):
    doc = _json(capsys, ["run", f"{EXAMPLES}/reachable.ndl", "--engine", engine,
                         "--topology", "ring", "--topology-option", "n=6", "--workload",
                         "all; delete-links:2", "--delivery", delivery, "--check",
                         "--format", "json"])
    assert doc["summary"]["check"] is True and doc["summary"]["checked"] == 3


@pytest.mark.parametrize("argv, message", [
    (["--engine", "ray", "--delivery", "adversarial"], "--delivery does not apply to --engine ray"),
    (["--engine", "memory", "--processing", "1us"], "--processing does not apply"),
    (["--engine", "memory", "--address", "127.0.0.1:1"], "--address does not apply"),
    (["--engine", "ray", "--why", "reachable(@1,2)"], "--why does not apply"),
    (["--annotation", "set", "--ship", "lazy"], "MinShip"),
    (["--annotation", "derivation", "--aggsel", "multi"], "aggregate selection"),
    (["--delivery", "sometimes"], "unknown delivery model"),
])
def test_an_option_that_does_not_apply_is_an_error(argv, message, capsys):
    assert main(["run", f"{EXAMPLES}/reachable.ndl"] + argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_no_topology_is_loaded_unless_asked(bursts, capsys):
    """Bursts alone on Ray: only the user's facts (no default topology's links)."""
    doc = _json(capsys, ["run", f"{EXAMPLES}/shortest_path.ndl", "--engine", "ray",
                         "--workers", "2", "--facts", str(bursts / "f.ndl"), "--format",
                         "json"])
    assert {tuple(t) for t in doc["relations"]["link"]} == set(LINKS)
    assert "topology" not in doc["run"]


def test_default_annotation_is_absorption_with_lazy_minship_everywhere():
    import sim
    from psn.distributed import RayNetwork
    program = psn.load(f"{EXAMPLES}/reachable.ndl")
    net = Network(program)
    assert net.scheme.name == "absorption" and net.resolved.ship_text == "lazy"
    s = sim.Simulation(program, "ring")
    assert s.annotation == "absorption" and s.ship == "lazy"
    with RayNetwork(program, workers=1) as ray_net:
        assert ray_net.annotation == "absorption"
        assert ray_net.resolved.ship_text == "lazy"
    resolved = RunOptions().resolve(net.program)
    assert (resolved.scheme.name, resolved.ship_text) == ("absorption", "lazy")


def test_options_resolve_aggregate_selection_once():
    shortest = psn.load(f"{EXAMPLES}/shortest_path.ndl")
    net = Network(shortest)
    assert net.resolved.aggsel == "multi"
    assert Network(shortest, annotation="derivation").resolved.aggsel == "off"
    with pytest.raises(InputError, match="aggregate selection"):
        Network(shortest, annotation="derivation", aggsel="single")
    with pytest.raises(InputError, match="MinShip"):
        Network(shortest, annotation="set", ship="eager", delivery="fifo")
    with pytest.raises(InputError, match="exact only when channels are FIFO"):
        Network(shortest, annotation="set")
    reach = psn.load(f"{EXAMPLES}/reachable.ndl")
    assert Network(reach).resolved.aggsel == "off"


def test_on_ray_the_refusal_of_set_with_aggregates_suggests_no_delivery_model(capsys):
    from psn.distributed import RayNetwork
    shortest = psn.load(f"{EXAMPLES}/shortest_path.ndl")
    with pytest.raises(InputError, match="FIFO, not with delivery 'random'") as err:
        Network(shortest, annotation="set")
    assert "--delivery fifo" in err.value.hint
    with pytest.raises(InputError, match="channels are FIFO, not on Ray\n") as err:
        RayNetwork(shortest, annotation="set")
    assert err.value.hint == "use --annotation absorption, or --unsafe to run it unchecked"
    assert main(["run", f"{EXAMPLES}/shortest_path.ndl", "--engine", "ray",
                 "--annotation", "set", "--topology", "ring"]) == 2
    err = capsys.readouterr().err
    assert "FIFO, not on Ray" in err and "delivery" not in err


def test_a_burst_predicate_the_program_does_not_have_is_an_error():
    net = Network(psn.load(f"{EXAMPLES}/reachable.ndl"))
    with pytest.raises(InputError, match="predicate 'lnk' is not used by the program") as err:
        net.apply(["+link(@1, 2)", "+lnk(@1, 2)"])
    assert "did you mean 'link'?" in str(err.value.hint)
    with pytest.raises(InputError, match="no predicate 'lnk'") as err:
        net.apply([(1, "link", (1, 2)), (1, "lnk", (1, 2))])
    assert "link" in str(err.value.hint)
    with pytest.raises(InputError, match="arity 2"):
        net.apply([(1, "link", (1, 2, 3))])
    assert not net.base_facts()        # nothing of a bad burst was injected
