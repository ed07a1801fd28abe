"""What PSN prints says what it means, briefly: ``--output`` writes the format its file
names, a ``StepResult`` prints as one short line, and counts agree with their nouns."""

from __future__ import annotations

import csv
import doctest
import io
import json
from dataclasses import asdict
from pathlib import Path

import pytest

import psn
import ndlog.text
from psn.cli import main
from psn.cli import reference_cmd
from ndlog.text import count_noun

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PROGRAM = EXAMPLES / "reachable.ndl"
FACTS = "link(@1, 2). link(@2, 3). link(@3, 1).\n"
COMMANDS = [["reference", "--engine", "python"], ["eval"]]


@pytest.fixture
def facts(tmp_path) -> str:
    path = tmp_path / "facts.ndl"
    path.write_text(FACTS)
    return str(path)


def _expected() -> dict:
    result = psn.evaluate(psn.load(PROGRAM), {"link": [(1, 2), (2, 3), (3, 1)]})
    return {name: sorted(rows) for name, rows in result.items()}


def _run(command: list[str], facts: str, *options: str) -> int:
    return main([command[0], str(PROGRAM), "--facts", facts, *command[1:], *options])


@pytest.mark.parametrize("command", COMMANDS, ids=["reference", "eval"])
def test_output_json_extension_writes_json(command, facts, tmp_path, capsys):
    out = tmp_path / "result.json"
    assert _run(command, facts, "--output", str(out)) == 0
    assert capsys.readouterr().out == ""
    written = json.loads(out.read_text())
    assert {name: sorted(map(tuple, rows)) for name, rows in written.items()} == _expected()


@pytest.mark.parametrize("command", COMMANDS, ids=["reference", "eval"])
def test_output_csv_extension_writes_csv(command, facts, tmp_path):
    out = tmp_path / "result.CSV"  # the extension is matched case-insensitively
    assert _run(command, facts, "--output", str(out)) == 0
    rows = list(csv.reader(io.StringIO(out.read_text())))
    assert rows[0] == ["relation", "arg1", "arg2"]      # as wide as the widest relation
    reachable = {tuple(map(int, r[1:])) for r in rows[1:] if r[0] == "reachable"}
    assert sorted(reachable) == _expected()["reachable"]


@pytest.mark.parametrize("command", COMMANDS, ids=["reference", "eval"])
def test_other_extensions_write_a_table_and_format_wins(command, facts, tmp_path):
    table = tmp_path / "result.txt"
    assert _run(command, facts, "--output", str(table)) == 0
    text = table.read_text()
    assert "reachable (9 tuples)" in text and "  reachable(1, 3)" in text
    as_json = tmp_path / "result.out"
    assert _run(command, facts, "--format", "json", "--output", str(as_json)) == 0
    assert json.loads(as_json.read_text())["reachable"]


@pytest.mark.parametrize("command", COMMANDS, ids=["reference", "eval"])
@pytest.mark.parametrize("fmt,name", [("table", "x.json"), ("csv", "x.json"),
                                      ("json", "x.csv")])
def test_format_and_extension_that_disagree_are_an_input_error(command, facts, tmp_path,
                                                               capsys, fmt, name):
    out = tmp_path / name
    assert _run(command, facts, "--format", fmt, "--output", str(out)) == 2
    err = capsys.readouterr().err
    assert f"--format {fmt} disagrees with --output" in err
    assert "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("command", COMMANDS, ids=["reference", "eval"])
@pytest.mark.parametrize("name,text,message", [
    ("f.ndl", "link(@1, 2).\nlnk(@2, 3).\n", "f.ndl:2:1: error: predicate 'lnk' is not "
     "used by the program"),
    ("lnk.csv", "1,2\n", "lnk.csv:1:1: error: predicate 'lnk' is not used by the program"),
    ("f.ndl", "link(1, @2).\n", "f.ndl:1:10: error: link has its '@' on argument 2 here"),
    ("f.ndl", "link(@1, 2, 3).\n", "f.ndl:1:1: error: link has 3 arguments here, but arity "
     "2 in the program")])
def test_facts_are_checked_against_the_program(command, name, text, message, tmp_path,
                                               capsys):
    """A misspelt predicate, a misplaced ``@`` or a wrong arity is an error at the fact,
    as in ``psn run``, instead of a relation the program never reads."""
    path = tmp_path / name
    path.write_text(text)
    assert _run(command, str(path)) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err
    assert captured.out == ""


def test_format_without_output_prints_that_format(facts, capsys):
    assert _run(["eval"], facts, "--format", "csv") == 0
    assert capsys.readouterr().out.startswith("relation,arg1,arg2\n")
    assert _run(["eval"], facts) == 0
    assert "reachable (9 tuples)" in capsys.readouterr().out


def test_unwritable_output_is_an_input_error(facts, tmp_path, capsys):
    out = tmp_path / "missing-dir" / "x.json"
    assert _run(["reference", "--engine", "python"], facts, "--output", str(out)) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and "Traceback" not in err


def test_output_format_and_count_noun_docstrings():
    for module in (reference_cmd, ndlog.text):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


@pytest.mark.parametrize("n,expected", [(0, "0 tuples"), (1, "1 tuple"), (2, "2 tuples"),
                                        (1000, "1,000 tuples"), (-1, "-1 tuples")])
def test_count_noun(n, expected):
    assert count_noun(n, "tuple") == expected


def test_count_noun_irregular_plural():
    assert count_noun(1, "entry", "entries") == "1 entry"
    assert count_noun(12345, "entry", "entries") == "12,345 entries"


# -- StepResult ------------------------------------------------------------------------


def _steps(n: int, annotation: str = "derivation", workload: str = "all; delete-links:1"):
    import sim
    import topologies
    s = sim.Simulation(PROGRAM, topologies.make("ring", n=n), annotation=annotation, seed=1)
    return s.run_workload(workload, check=True)


def test_step_result_repr_is_one_short_line():
    # derivation sets on a ring grow fast with its size: the large ring only inserts
    small, big = _steps(5), _steps(30, annotation="set", workload="all")
    for step in small + big:
        text = repr(step)
        assert "\n" not in text and len(text) < 250, text
        assert text.startswith(f"StepResult(index={step.index}, label={step.label!r}")
        assert "check=True" in text
        assert "per_node" not in text and "per_worker" not in text
    # the per-node tables grow with the network; the repr does not
    assert len(repr(big[0])) <= len(repr(small[0])) + 12
    assert len(str(asdict(big[0]))) > 20 * len(repr(big[0]))
    traffic = big[0].traffic
    assert f"{traffic['msgs_sent']} messages, {traffic['bytes_sent']} bytes sent" in \
        repr(big[0])


def test_step_result_repr_names_a_failed_check_and_shortens_long_labels():
    step = _steps(4)[0]
    step.check, step.diff = False, [("reachable", "-", (1, 2))]
    step.label = "x" * 500
    text = repr(step)
    assert "check=False" in text and "diff=<1 tuple>" in text
    assert len(text) < 250 and "..." in text


def test_csv_values_read_back_as_the_same_values(tmp_path):
    """Strings were written as NDlog literals, quotes and all ('"Hello"' came back with
    its quotes); now as their text, except where that text reads as another value."""
    from ndlog.output import read_facts_file, render_relations
    rows = {("Hello", 1), ("a b", 2.5), ("12", 3), ("infinity", float("inf")), ("x", -4),
            ('say "hi"', 5)}
    text = render_relations({"greet": rows}, "csv")
    lines = text.splitlines()[1:]
    assert 'greet,Hello,1' in lines and 'greet,"""12""",3' in lines
    (tmp_path / "greet.csv").write_text("".join(line.split(",", 1)[1] + "\n"
                                                for line in lines))
    back = read_facts_file(tmp_path / "greet.csv", arities={"greet": 2})
    assert set(back["greet"]) == rows
