"""``psn run`` with the provenance flags: --annotation absorption, --ship, --aggsel, --why,
--minship-at."""

from __future__ import annotations

import json
from contextlib import nullcontext as _no_exit
from pathlib import Path

import pytest

from psn.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def fig2(tmp_path):
    f = tmp_path / "fig2.facts"
    f.write_text('link(@"A","B"). link(@"B","C"). link(@"C","A"). link(@"C","B").\n')
    b = tmp_path / "del.burst"
    b.write_text('-link(@"C","B").\n')
    return f, b


def test_why_prints_minimal_sum_of_products(fig2, capsys):
    facts, burst = fig2
    rc = main(["run", str(EXAMPLES / "reachable.ndl"), "--facts", str(facts),
               "--annotation", "absorption", "--ship", "eager",
               "--why", 'reachable(@"C","B")', "--why", 'reachable(@"A","A")'])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert 'reachable(@"C","B") = link(@"C","B") ∨ link(@"A","B") ∧ link(@"C","A")' in out
    assert 'reachable(@"A","A") = link(@"A","B") ∧ link(@"B","C") ∧ link(@"C","A")' in out
    main(["run", str(EXAMPLES / "reachable.ndl"), "--facts", str(facts), "--burst",
          str(burst), "--annotation", "absorption", "--ship", "lazy",
          "--why", 'reachable(@"C","B")', "--why", 'reachable(@"Z","Z")'])
    out = capsys.readouterr().out.splitlines()
    assert 'reachable(@"C","B") = link(@"A","B") ∧ link(@"C","A")' in out
    assert 'reachable(@"Z","Z"): not derived' in out


@pytest.mark.parametrize("argv,message", [
    (["--ship", "sometimes"], "--ship"),
    (["--annotation", "set", "--why", 'reachable(@"A","B")'], "needs absorption provenance"),
    (["--annotation", "absorption", "--why", "reachable(@A"], "not a fact"),
])
def test_bad_flags_are_input_errors(fig2, capsys, argv, message):
    facts, _ = fig2
    rc = main(["run", str(EXAMPLES / "reachable.ndl"), "--facts", str(facts)] + argv)
    assert rc == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("aggsel", ["multi", "off"])
def test_shortest_path_with_aggsel_flag(tmp_path, capsys, aggsel):
    f = tmp_path / "l.facts"
    f.write_text("link(@a,b,1). link(@b,c,1). link(@a,c,5). link(@c,a,1). link(@b,a,2).\n")
    rc = main(["run", str(EXAMPLES / "shortest_path.ndl"), "--facts", str(f),
               "--annotation", "absorption", "--aggsel", aggsel, "--format", "json",
               "--relation", "minCost"])
    assert rc == 0
    got = json.loads(capsys.readouterr().out)["relations"]["minCost"]
    assert ["a", "c", 2] in got and ["c", "b", 2] in got


def test_minship_at_worker_runs_and_checks(tmp_path, capsys):
    f = tmp_path / "l.facts"
    f.write_text("link(@1,2). link(@2,3). link(@3,1). link(@1,3). link(@3,4). link(@4,2).\n")
    rc = main(["run", str(EXAMPLES / "reachable_liu.ndl"), "--facts", str(f),
               "--minship-at", "worker", "--workers", "2", "--check", "--format", "json"])
    assert rc == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["run"]["minship_at"] == "worker"
    assert "note:" not in captured.err


@pytest.mark.parametrize("engine", ["memory", "sim"])
def test_minship_at_worker_with_a_worker_per_node_says_it_is_per_node(tmp_path, capsys,
                                                                      engine):
    """Without --workers every node is its own worker: the run was MinShip per node, and
    nothing said so."""
    f = tmp_path / "l.facts"
    f.write_text("link(@1,2). link(@2,3). link(@3,1).\n")
    rc = main(["run", str(EXAMPLES / "reachable_liu.ndl"), "--facts", str(f),
               "--engine", engine, "--minship-at", "worker", "--check"])
    assert rc == 0
    assert ("note: every node is its own worker here, so --minship-at worker is MinShip "
            "per node; give --workers N") in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["--minship-at", "worker", "--ship", "off"], "--minship-at worker"),
    (["--minship-at", "worker", "--annotation", "set"], "--minship-at worker"),
    (["--minship-at", "router"], "--minship-at"),
])
def test_minship_at_errors_name_the_fix(fig2, capsys, argv, message):
    facts, _ = fig2
    with pytest.raises(SystemExit) if argv[1] == "router" else _no_exit():
        rc = main(["run", str(EXAMPLES / "reachable.ndl"), "--facts", str(facts)] + argv)
        assert rc == 2
    assert message in capsys.readouterr().err
