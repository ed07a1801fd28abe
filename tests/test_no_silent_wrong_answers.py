"""No silent wrong answers and no silent blow-ups, as a user meets them on the command line.

Every mode either gives the reference's answer or refuses up front with an error that names
the fix; a blow-up (derivation sets on a cyclic graph) stops itself with a clear message;
bad input ends in exit status 2 with a position and no traceback.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import psn
from engine import Network
from engine.guards import UnsafeAnnotationError
from ndlog.analysis import aggsel_candidates
from psn.cli import main
from tests.corpus import case_ids, cases

REACH = "examples/reachable.ndl"
GRID = ["--topology", "grid", "--topology-option", "rows=3", "--topology-option", "cols=3"]
CASES = {c.name: c for c in cases()}


def _run(capsys, argv) -> tuple[int, str, str]:
    rc = main(argv)
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return rc, out.out, out.err


def test_grid_with_deletions_and_no_annotation_is_right(capsys):
    rc, out, err = _run(capsys, ["run", REACH] + GRID +
                        ["--workload", "all; delete-links:3", "--check"])
    assert rc == 0, err
    assert "check: ok (4 steps equal to the reference)" in out


def test_derivation_sets_on_the_grid_finish_or_stop_at_their_budget(capsys):
    rc, out, err = _run(capsys, ["run", REACH] + GRID +
                        ["--workload", "all; delete-links:1", "--annotation", "derivation",
                         "--check"])
    if rc == 0:
        assert "check: ok" in out
    else:
        assert rc == 2 and "over the budget of" in err, err
        assert "--annotation absorption" in err and "--max-memory" not in err


def test_a_small_derivation_budget_names_the_fact(capsys):
    rc, out, err = _run(capsys, ["run", REACH] + GRID +
                        ["--workload", "all", "--annotation", "derivation",
                         "--derivation-budget", "20"])
    assert rc == 2
    assert "the derivation sets of reachable(@" in err and "budget of 20 per fact" in err
    assert "stopped in step 0 (load all)" in out
    # the simulator's columns, although no step finished (the in-memory engine's were shown)
    assert "step  label  wall s  sim s  msgs" in out and "prov B/tuple" in out


def test_set_semantics_refuses_deletions_on_recursion_before_running(capsys):
    rc, out, err = _run(capsys, ["run", REACH] + GRID +
                        ["--workload", "all; delete-links:2", "--annotation", "set"])
    assert rc == 2 and out == ""
    assert "set semantics cannot delete facts exactly" in err
    assert "reachable is recursive (rule r2)" in err and "--annotation absorption" in err
    rc, out, err = _run(capsys, ["run", REACH] + GRID +
                        ["--workload", "all; delete-links:2", "--annotation", "set",
                         "--unsafe"])
    assert rc == 0 and "unchecked" in out


def test_set_semantics_without_deletions_runs(capsys):
    rc, out, err = _run(capsys, ["run", REACH] + GRID +
                        ["--workload", "all", "--annotation", "set", "--check"])
    assert rc == 0, err


@pytest.mark.parametrize("costs, total", [((0.1, 0.2, 0.3), 0.6),
                                          ((1.0e16, -1.0e16, 1.0), 1.0)])
def test_float_sums_pass_the_check_under_every_delivery(costs, total, tmp_path, capsys):
    program = tmp_path / "sum.ndl"
    program.write_text("s1 total(@S, sum<C>) :- link(@S, D, C).\n")
    facts = tmp_path / "f.ndl"
    facts.write_text("".join(f"link(@1, {d}, {c!r}).\n" for d, c in enumerate(costs, 2)))
    for engine in ("memory", "sim"):
        for delivery in ("fifo", "random", "adversarial"):
            for seed in range(4):
                rc, out, err = _run(capsys, [
                    "run", str(program), "--facts", str(facts), "--engine", engine,
                    "--delivery", delivery, "--seed", str(seed), "--check",
                    "--relation", "total"])
                assert rc == 0, (engine, delivery, seed, err)
                assert f"total(1, {total!r})" in out


def test_bad_inputs_exit_2_with_the_position(tmp_path, capsys):
    facts = tmp_path / "f.ndl"
    facts.write_text("link(@1, 2).\nlink(@2, 3, 4).\n")
    rc, _, err = _run(capsys, ["run", REACH, "--facts", str(facts)])
    assert rc == 2 and f"{facts}:2:" in err
    burst = tmp_path / "b.ndl"
    burst.write_text("+link(@1, 2).\n+lnk(@2, 3).\n")
    rc, _, err = _run(capsys, ["run", REACH, "--burst", str(burst)])
    assert rc == 2 and f"{burst}:2:" in err and "lnk" in err
    rc, _, err = _run(capsys, ["run", REACH, "--topology", str(tmp_path / "none.alt")])
    assert rc == 2 and "does not exist" in err
    rc, out, err = _run(capsys, ["demo", "--workers", "0"])
    assert rc == 2 and "--workers" in err and out == ""
    rc, _, err = _run(capsys, ["run", REACH, "--topology", "random"])
    assert rc == 2 and "give exactly one of m" in err
    assert "--topology-option n=20 --topology-option m=40" in err     # where m goes


@pytest.mark.parametrize("annotation", ["set", "absorption", "derivation"])
@pytest.mark.parametrize("name", case_ids())
def test_every_annotation_is_right_or_refuses(name, annotation):
    """The golden corpus with seeded random bursts of deletions and re-insertions: the run
    equals psn.evaluate after every burst, or the annotation is refused before the burst
    runs (and nothing of it is applied)."""
    case = CASES[name]
    rng = random.Random(len(name))
    try:
        net = Network(case.program, case.facts, annotation=annotation, seed=rng.randrange(99))
        net.run()           # a node refuses a scheme that cannot maintain negation
    except UnsafeAnnotationError:
        assert annotation == "set"
        return
    for _ in range(3):
        facts = sorted({(p, t) for p, ts in net.base_facts().items() for t in ts}, key=repr)
        gone = rng.sample(facts, max(1, len(facts) // 4)) if facts else []
        burst = [(-1, p, t) for p, t in gone] + [(1, p, t) for p, t in gone[:1]]
        before = net.relations()
        try:
            net.apply(burst)
        except UnsafeAnnotationError:
            assert annotation == "set"
            assert net.relations() == before          # nothing of the burst applied
            return
        net.run()
        want = psn.evaluate(case.program.with_(facts=()), net.base_facts())
        got = net.relations()
        skip = set(aggsel_candidates(case.program))      # pruned by aggregate selection
        for rel in want:
            if rel not in skip:
                assert got.get(rel, set()) == want[rel], (name, annotation, rel)


@pytest.mark.spark
@pytest.mark.ray
def test_the_demo_runs_a_users_program_and_checks_it_as_psn_run_does(spark, tmp_path, capsys):
    """``psn demo --program`` with shortest path: every relation of the program is reported
    (the demo named 'reachable' and refused it), and the Spark check and the Ray replay
    leave out the relation aggregate selection prunes, as ``psn run --check`` does (two
    evaluations keep different non-best paths: on this grid they differ)."""
    topo = tmp_path / "grid.json"
    assert main(["topology", "grid", "--rows", "4", "--cols", "4", "-o", str(topo)]) == 0
    capsys.readouterr()
    program = Path(__file__).resolve().parent.parent / "examples" / "shortest_path.ndl"
    rc, out, _ = _run(capsys, ["demo", "--program", str(program),
                               "--topology", str(topo), "--deletions", "1"])
    assert rc == 0, out
    assert f"== PSN demo: {program} on topology" in out
    assert "check: ok, the simulation equals Spark" in out
    assert "check: ok, Ray equals the simulation" in out
    assert "all checks passed" in out


def test_facts_of_the_wrong_shape_are_input_errors_on_every_entry_point():
    """None for a predicate's facts, or a predicate that is not a string, was a TypeError
    from deep inside (or a crash in the 'did you mean' hint) on every Python entry point."""
    from ndlog.errors import InputError
    from sim import Simulation
    program = psn.load(REACH)
    calls = [lambda f: psn.evaluate(program, f), lambda f: Network(program, f),
             lambda f: psn.verify(program, f, []),
             lambda f: Simulation(program, "ring", state_metrics=False).step(insert=f)]
    for call in calls:
        with pytest.raises(InputError, match="facts for 'link' must be an iterable of tuples"):
            call({"link": None})
    with pytest.raises(InputError, match="a predicate name must be a string, got 1"):
        psn.evaluate(program, {1: [(1, 2)]})


def test_simulation_step_reads_updates_as_the_other_entry_points_do():
    """``step(updates=...)`` takes the signs and fact strings of bursts and ``psn.verify``
    ('+' was a TypeError; a sign of 5 counted as an insertion)."""
    from ndlog.errors import InputError
    from sim import Simulation
    program = psn.load(REACH)
    sim = Simulation(program, None, seed=1, state_metrics=False)
    step = sim.step(updates=[("+", "link", (1, 2)), "+link(@2, 3)", (1, "link", (3, 4))])
    assert step.inserted == 3 and sim.relations()["reachable"] == psn.evaluate(
        program, {"link": [(1, 2), (2, 3), (3, 4)]})["reachable"]
    sim.step(updates=["-link(@3, 4)"])
    assert (3, 4) not in sim.relations()["link"]
    for bad, what in [([(5, "link", (1, 2))], "sign of a burst item must be"),
                      ([(1.0, "link", (1, 2))], r"\(1 or -1\), got 1.0"),
                      ([(False, "link", (1, 2))], "got False"),
                      ([("x",)], "a burst item must be")]:
        with pytest.raises(InputError, match=what):
            sim.step(updates=bad)
    with pytest.raises(InputError, match="not both"):
        sim.step(insert={"link": [(5, 6)]}, updates=["+link(@6, 7)"])


def test_wrong_kinds_of_program_scope_bursts_cost_and_time_are_input_errors(tmp_path):
    """Each was a TypeError or AttributeError from inside, or silently accepted."""
    from ndlog.errors import InputError
    from sim import Simulation
    program = psn.load(REACH)
    for call, what in [
            (lambda: psn.parse(None), "a program is NDlog text"),
            (lambda: psn.parse(b"p(1)."), "a program is NDlog text"),
            (lambda: psn.load(None), "psn.load takes the path"),
            (lambda: psn.evaluate(None, {}), "a program is NDlog text or a parsed program"),
            (lambda: Network(None, {}), "a program is NDlog text or a parsed program"),
            (lambda: psn.verify(None, {}, []), "a program is NDlog text or a parsed program"),
            (lambda: psn.verify(program, {"link": [(1, 2)]}, [], scope=5),
             "a scope is a string"),
            (lambda: psn.verify(program, {"link": [(1, 2)]}, None), r"give \[\] for none"),
            (lambda: Simulation(str(tmp_path / "nope.ndl"), "ring"),
             "cannot read program file"),
            (lambda: Simulation(program, "ring", cost="latncy"), "unknown link cost"),
            (lambda: Simulation(program, "ring").advance(-1), "must be a finite number"),
            (lambda: Simulation(program, "ring").step(advance=-5), "must be a finite number")]:
        with pytest.raises(InputError, match=what):
            call()


def test_settings_of_the_wrong_kind_are_input_errors():
    """A seed that is not an integer or a fifo that is not a bool (it read "no" as true),
    max_steps below 0 (it ran nothing), a reference that cannot be called (it failed at the
    first check), a placement or options of the wrong kind (TypeErrors from inside)."""
    from ndlog.errors import InputError
    from sim import Simulation
    program = psn.load(REACH)
    facts = {"link": [(1, 2)]}
    for call, what in [
            (lambda: psn.verify(program, facts, [], seed="abc"), "seed is an integer"),
            (lambda: psn.verify(program, facts, [], fifo="no"),
             "fifo must be True or False or None, not 'no'"),
            (lambda: Simulation(program, "ring").run_workload("all", max_steps=-1),
             "max_steps is a whole number"),
            (lambda: Simulation(program, "ring", reference=3), "reference is a function"),
            (lambda: Network(program, facts, placement=[1, 2]), "a placement map is a"),
            (lambda: Simulation(program, "ring", placement="foo"), "a placement map is a"),
            (lambda: Network(program, facts, options={"seed": 1}), "options is a RunOptions")]:
        with pytest.raises(InputError, match=what):
            call()


@pytest.mark.parametrize("annotation", ["absorption", "derivation", "dred", "relative", "set"])
def test_a_computed_nan_is_an_error_not_a_fact_that_stays(annotation, tmp_path, capsys):
    """``infinity - infinity`` made a nan fact. A nan equals nothing, so the deletion of
    its base fact never found it again: absorption kept ``p(1, nan)`` after ``q`` was
    deleted, derivation sets stopped with "engine invariant violated", and ``--check``
    listed each nan fact as both missing and extra. It is now an evaluation error at the
    operator, in the engine as in the references, and nothing is derived from it."""
    program = psn.parse("p(@N, X) :- q(@N, A), X := A * 0.0 + infinity - infinity.\n"
                        "r(@N, X) :- p(@N, X).\n", "nan.ndl")
    with pytest.raises(psn.EvaluationError, match="infinity - infinity is not a number"):
        Network(program, {"q": [(1, 5.0)]}, annotation=annotation).run()
    path = tmp_path / "nan.ndl"
    path.write_text(program.source)
    (tmp_path / "q.ndl").write_text("q(@1, 5.0).\n")
    rc, out, err = _run(capsys, ["run", str(path), "--annotation", annotation,
                                 "--facts", str(tmp_path / "q.ndl")])
    assert rc == 2 and "nan.ndl:1:28: error: infinity - infinity is not a number" in err
