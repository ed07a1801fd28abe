"""ndlog.check.compare_relations, the Spark reference catching a corrupted result, and
``psn reference`` on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import psn
from ndlog.check import compare_relations
from psn.cli import main

from corpus import CORPUS, load_case

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_compare_reports_missing_and_extra_in_ndlog_syntax():
    expected = {"path": {(1, 2, (1, 2), 3)}, "link": {("a", "b")}}
    actual = {"path": {(1, 2, (1, 3, 2), 3)}, "link": {("a", "b")}, "new": {("x y",)}}
    diff = compare_relations(expected, actual)
    assert not diff.ok
    assert diff.missing == {"path": [(1, 2, (1, 2), 3)]}
    assert diff.extra == {"path": [(1, 2, (1, 3, 2), 3)], "new": [("x y",)]}
    text = diff.render()
    assert "- path(1, 2, [1, 2], 3)" in text
    assert "+ path(1, 2, [1, 3, 2], 3)" in text
    assert '+ new("x y")' in text
    assert diff.count() == 3


def test_compare_restricted_relations_and_agreement():
    expected = {"r": {(1,)}, "s": {(2,)}}
    actual = {"r": {(1.0,)}, "s": set()}
    assert compare_relations(expected, actual, relations=["r"]).ok
    diff = compare_relations(expected, actual)
    assert diff.relations == ["s"]
    assert "agrees" in compare_relations(expected, expected).render()


@pytest.mark.spark
def test_corrupted_tuple_is_reported(spark):
    from psn.batch.spark import evaluate_spark
    case = load_case(CORPUS / "reachable")
    truth = evaluate_spark(case.program, case.facts, session=spark)
    assert compare_relations(truth, psn.evaluate(case.program, case.facts)).ok
    corrupted = {k: set(v) for k, v in truth.items()}
    victim = sorted(corrupted["reachable"])[0]
    corrupted["reachable"].discard(victim)
    forged = (victim[0], 999)
    corrupted["reachable"].add(forged)
    diff = compare_relations(truth, corrupted)
    assert diff.missing == {"reachable": [victim]}
    assert diff.extra == {"reachable": [forged]}
    rendered = diff.render(expected_name="spark", actual_name="run")
    assert f"- reachable({victim[0]}, {victim[1]})" in rendered
    assert f"+ reachable({victim[0]}, 999)" in rendered


@pytest.mark.spark
def test_cli_reference_spark_matches_python(spark, tmp_path, capsys):
    prog = CORPUS / "nigam_fig1" / "program.ndl"
    facts = CORPUS / "nigam_fig1" / "facts.ndl"
    out = tmp_path / "spark.json"
    assert main(["reference", str(prog), "--facts", str(facts), "--engine", "spark",
                 "--format", "json", "--output", str(out)]) == 0
    assert main(["reference", str(prog), "--facts", str(facts), "--engine", "python",
                 "--format", "json"]) == 0
    py = json.loads(capsys.readouterr().out)
    assert json.loads(out.read_text()) == py
    assert py["tri_hop"]


def test_cli_reference_bad_input_is_a_clean_error(tmp_path, capsys):
    bad = tmp_path / "bad.ndl"
    bad.write_text("r(X) :- \n")
    assert main(["reference", str(bad), "--engine", "python"]) == 2
    err = capsys.readouterr().err
    assert "bad.ndl:" in err and "Traceback" not in err
    assert main(["reference", str(EXAMPLES / "reachable.ndl"), "--engine", "python",
                 "--spark-master", "local[2]"]) == 2


@pytest.mark.spark
def test_run_check_spark_agrees_on_the_default_topology(spark, capsys):
    """``psn run --check spark`` on GT-ITM's default 100-node topology."""
    rc = main(["run", str(EXAMPLES / "reachable.ndl"), "--topology", "ts100",
               "--workload", "all", "--annotation", "set", "--check", "spark"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "check: ok (1 step equal to the reference)" in out.out


@pytest.mark.spark
def test_check_spark_reports_a_corrupted_run_tuple_by_tuple(spark):
    """Corrupt one stored tuple of a finished simulation: the Spark check names it."""
    import sim
    from psn.oracle import reference_evaluator

    s = sim.Simulation(psn.load(EXAMPLES / "reachable.ndl"), "ring", annotation="set",
                       seed=3)
    s.run_workload("all")
    s.reference = reference_evaluator("spark")
    assert s.check() == (True, [])
    node = next(n for n in s.net.nodes.values() if n.state.get("reachable"))
    victim = sorted(node.state["reachable"])[0]
    del node.state["reachable"][victim]
    ok, diff = s.check()
    assert not ok
    assert diff == [("reachable", "-", victim)]
