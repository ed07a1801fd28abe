"""The static checks of docs/language.md (ndlog.checks) and the golden error corpus.

Each check gets accepted and rejected programs; rejections are asserted on the error class,
the position (line, column) and the words of the message that say what is wrong. The golden
corpus tests/programs/errors/ pins the exact rendered text, in process and through
``python -m psn eval``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import psn
from ndlog import ast as A
from ndlog.checks import CHECKS, bound_variables, check_program
from ndlog.errors import NDlogSemanticError, NDlogSyntaxError, PSNError

ROOT = Path(__file__).resolve().parent.parent
ERRORS = Path(__file__).with_name("programs") / "errors"

REACHABLE = """\
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
"""
SHORTEST_PATH = """\
sp1 path(@S, D, P, C, L) :- link(@S, D, C), P := f_concat(S, D), L := 1.
sp2 path(@S, D, P, C, L) :- link(@S, Z, C1), path(@Z, D, P2, C2, L2),
                            f_member(P2, S) == 0,
                            P := f_prepend(S, P2), C := C1 + C2, L := L2 + 1.
sp3 minCost(@S, D, min<C>) :- path(@S, D, P, C, L).
sp4 minHops(@S, D, min<L>) :- path(@S, D, P, C, L).
sp5 cheapestPath(@S, D, P, C) :- path(@S, D, P, C, L), minCost(@S, D, C).
sp6 fewestHops(@S, D, P, L) :- path(@S, D, P, C, L), minHops(@S, D, L).
sp7 shortestCheapestPath(@S, D, P1, C, P2, L) :- cheapestPath(@S, D, P1, C),
                                                 fewestHops(@S, D, P2, L).
"""
REGION = """\
g1 activeRegion(@X, R) :- seed(@X, R), isTriggered(@X).
g2 activeRegion(@Y, R) :- activeRegion(@X, R), isTriggered(@X), nbr(@X, Y).
g3 regionSize(@R, count<X>) :- activeRegion(@X, R).
g4 largestRegion(@K, max<N>) :- regionSize(@R, N), sink(@R, K).
g5 largestRegions(@K, R) :- regionSize(@R, N), sink(@R, K), largestRegion(@K, N).
"""


def rejected(text: str) -> NDlogSemanticError:
    """Parse ``text`` expecting a failed static check; return the error."""
    with pytest.raises(NDlogSemanticError) as info:
        psn.parse(text, "t.ndl")
    err = info.value
    assert err.source == text
    assert err.span is not None and err.span.filename == "t.ndl"
    return err


def at(err: PSNError) -> tuple[int, int]:
    return err.span.line, err.span.column


# -- programs that pass ------------------------------------------------------------------

@pytest.mark.parametrize("text", [REACHABLE, SHORTEST_PATH, REGION], ids=["reach", "sp", "region"])
def test_reference_programs_pass_every_check(text):
    program = psn.parse(text, check=False)
    for check in CHECKS:
        assert check(program) is None


def test_centralized_program_without_any_location_passes():
    program = psn.parse("tc(X, Y) :- e(X, Y).\ntc(X, Y) :- e(X, Z), tc(Z, Y).\ne(1, 2).\n"
                        "e(2, 3).\n")
    assert not program.distributed
    assert psn.evaluate(program)["tc"] == {(1, 2), (2, 3), (1, 3)}


def test_check_program_runs_on_parse_and_can_be_skipped():
    text = "p(X) :- q(Y)."
    program = psn.parse(text, check=False)
    with pytest.raises(NDlogSemanticError):
        check_program(program)
    with pytest.raises(NDlogSemanticError):
        psn.parse(text)


# -- arity -------------------------------------------------------------------------------

def test_arity_points_at_second_use_and_names_first():
    err = rejected("p(X) :- q(X).\nr(Y) :- q(Y, Y).\n")
    assert at(err) == (2, 9)
    assert "'q'" in err.message and "2 arguments" in err.message
    assert "line 1, column 9" in err.message


def test_arity_counts_facts_in_source_order():
    err = rejected("q(1, 2).\np(X) :- q(X).\n")
    assert at(err) == (2, 9) and "line 1, column 1" in err.message


def test_arity_of_head_and_body_agree():
    err = rejected("p(X) :- q(X).\np(X, Y) :- q(X), q(Y).\n")
    assert at(err) == (2, 1) and "'p'" in err.message


# -- builtins ----------------------------------------------------------------------------

def test_unknown_builtin_lists_the_known_ones():
    err = rejected("p(X, Y) :- q(X), Y := f_nope(X).")
    assert at(err) == (1, 23)
    assert "unknown builtin 'f_nope'" in err.message and "f_concat" in err.message


@pytest.mark.parametrize("call,want,given", [("f_size(X, X)", 1, 2), ("f_concat(X)", 2, 1),
                                             ("f_min()", 2, 0)])
def test_builtin_argument_count(call, want, given):
    err = rejected(f"p(X, Y) :- q(X), Y := {call}.")
    assert f"takes {want} argument" in err.message and f"given {given}" in err.message


def test_predicate_names_starting_with_f_are_reserved():
    err = rejected("p(X) :- q(X).\nf_abs(X) :- q(X).")
    assert at(err) == (2, 1) and "reserved" in err.message


@pytest.mark.parametrize("name", ["nil", "infinity", "keys"])
def test_keywords_cannot_name_predicates(name):
    err = rejected(f"{name}(a).")
    assert at(err) == (1, 1) and "keyword" in err.message


def test_builtins_nested_in_heads_and_comparisons_are_checked():
    err = rejected("p(X, f_abs(X, X)) :- q(X).")
    assert at(err) == (1, 6)
    err = rejected("p(X) :- q(X), f_size(f_first(X), 1) > 0.")
    assert "f_first" not in err.message and "f_size" in err.message


# -- aggregates --------------------------------------------------------------------------

def test_aggregate_in_body_atom():
    err = rejected("p(X, C) :- q(X, min<C>).")
    assert at(err) == (1, 17) and "only in rule heads" in err.message


def test_aggregate_in_fact_is_rejected_by_the_parser():
    with pytest.raises(NDlogSemanticError, match="only in rule heads"):
        psn.parse("p(1, max<X>).")


def test_aggregate_group_by_must_be_plain():
    err = rejected("p(X + 1, min<Y>) :- q(X, Y).")
    assert at(err) == (1, 3) and "group-by" in err.message


def test_aggregate_over_anonymous_variable():
    err = rejected("p(X, sum<_>) :- q(X, Y).")
    assert "count<*>" in err.message


def test_aggregate_variable_must_be_bound():
    err = rejected("p(X, max<Z>) :- q(X, Y).")
    assert at(err) == (1, 6) and "'Z'" in err.message and "max<Z>" in err.message


def test_several_aggregates_and_count_star_are_fine():
    facts = {"q": [(1, 2), (1, 4), (2, 5)]}
    many = psn.parse("p(X, min<Y>, max<Y>, count<*>, avg<Y>, sum<Y>) :- q(X, Y).")
    assert psn.evaluate(many, facts)["p"] == {(1, 2, 4, 2, 3.0, 6), (2, 5, 5, 1, 5.0, 5)}
    total = psn.parse("total(count<*>) :- q(X, Y).")
    assert psn.evaluate(total, facts)["total"] == {(3,)}


# -- safety ------------------------------------------------------------------------------

def test_head_variable_unbound_message():
    err = rejected("r2 p(X, Z) :- q(X, Y).")
    assert err.message == ("variable 'Z' in the head of rule r2 is not bound by any body "
                           "atom or assignment")
    assert at(err) == (1, 9)


def test_unnamed_rule_is_named_by_its_line():
    err = rejected("p(X) :- q(X).\n\np(Z) :- q(X).")
    assert "the rule at line 3" in err.message


@pytest.mark.parametrize("body, z", [
    ("q(X), Z := W + 1, W := X * 2", 7),     # assignment before the one it needs
    ("Z = W + 1, W = X * 2, q(X)", 7),       # '=' binds, any order
    ("W := X * 2, q(X), Z = W + 1", 7),
    ("q(X), Z = X, Z = 1 + X - 1", 3),       # second '=' on a bound variable is a test
])
def test_binding_is_order_independent(body, z):
    program = psn.parse(f"p(X, Z) :- {body}.")
    assert psn.evaluate(program, {"q": [(3,)]})["p"] == {(3, z)}


def test_bound_variables_fixpoint_and_binders():
    rule = psn.parse("p(X, Z) :- Z = W + 1, W = X * 2, q(X), X = 3.", check=False).rules[0]
    bound, binders = bound_variables(rule)
    assert bound == {"X", "W", "Z"}
    assert binders == {0, 1}          # X = 3 is a test: X is bound by q(X)


def test_assignment_cycle_is_unbound():
    err = rejected("p(X, Z) :- q(X), Z := W + 1, W := Z * 2.")
    assert "'W'" in err.message and "assignment to 'Z'" in err.message


def test_assign_to_atom_bound_variable():
    err = rejected("p(X) :- q(X), X := 3.")
    assert at(err) == (1, 15) and "already bound by the body atom 'q'" in err.message


def test_assign_twice():
    err = rejected("p(X, Y) :- q(X), Y := 1, Y := 2.")
    assert at(err) == (1, 26) and "twice" in err.message


def test_comparison_variable_unbound():
    err = rejected("p(X) :- q(X), X < Limit.")
    assert at(err) == (1, 19) and "in a comparison" in err.message


def test_equality_with_variable_on_the_right_hints():
    err = rejected("p(X, N) :- q(X), X + 1 = N.")
    assert "'N'" in err.message and "left" in err.hint


def test_expression_argument_of_body_atom_needs_bound_variables():
    err = rejected("p(X) :- q(X), r(X, Y + 1).")
    assert "'Y'" in err.message and "body atom 'r'" in err.message
    psn.parse("p(X) :- q(X), r(X, X + 1).")


@pytest.mark.parametrize("text,where", [
    ("p(X, _) :- q(X).", "head"),
    ("p(X) :- q(X, _), _ < 3.", "comparison"),
    ("p(X) :- q(X), Y := _ + 1.", "assignment"),
    ("p(X) :- q(X, _ + 1).", "expression argument"),
])
def test_anonymous_variable_only_as_plain_body_argument(text, where):
    err = rejected(text)
    assert "'_'" in err.message and where in err.message


def test_anonymous_variables_in_body_atoms_are_fine():
    program = psn.parse("p(X) :- q(X, _, _).")
    assert psn.evaluate(program, {"q": [(1, 2, 3), (1, 4, 5), (6, 6, 6)]})["p"] == \
        {(1,), (6,)}


def test_rule_needs_a_body_atom():
    err = rejected("r p(X) :- X := 1.")
    assert "no atom in its body" in err.message and at(err) == (1, 1)


# -- location ----------------------------------------------------------------------------

def test_mixing_located_and_unlocated_atoms():
    err = rejected("p(@X, Y) :- q(@X, Y), r(X).")
    assert at(err) == (1, 23) and "distributed" in err.message


def test_a_located_fact_makes_the_program_distributed():
    err = rejected("p(X) :- q(X).\nq(@a).")
    assert at(err) == (1, 1) and "line 2, column 1" in err.message


def test_location_position_of_a_predicate_is_fixed():
    err = rejected("p(@X, Y) :- q(@X, Y).\ns(Y, @X) :- p(Y, @X).")
    assert at(err) == (2, 19)
    assert "argument 2 here but on argument 1" in err.message


@pytest.mark.parametrize("loc", ["X + 1", "f_abs(X)", "[X, X]"])
def test_location_specifier_is_variable_or_constant(loc):
    err = rejected(f"p(@{loc}, Y) :- q(@X, Y).")
    assert "location specifier" in err.message and at(err) == (1, 4)


def test_location_constant_is_fine():
    program = psn.parse("p(@a, Y) :- q(@a, Y).\nq(@a, 1).\nq(@b, 2).")
    assert psn.evaluate(program)["p"] == {("a", 1)}


def test_location_aggregate():
    err = rejected("p(@min<X>, Y) :- q(@X, Y).")
    assert "aggregate" in err.message and "location" in err.message


def test_two_location_specifiers_rejected_by_parser():
    with pytest.raises(NDlogSemanticError, match="exactly one '@'"):
        psn.parse("p(@X, @Y) :- q(@X, Y).")


# -- materialize -------------------------------------------------------------------------

def test_keys_within_arity():
    err = rejected("materialize(q, infinity, infinity, keys(1, 3)).\np(X) :- q(X, Y).")
    assert at(err) == (1, 13) and "key position 3" in err.message and "1..2" in err.message


def test_keys_listed_once_and_at_least_one():
    assert "twice" in rejected("materialize(q, 1, 1, keys(2, 2)).\nq(1, 2).").message
    assert "no key positions" in rejected("materialize(q, 1, 1, keys()).\nq(1, 2).").message


def test_a_size_bound_only_on_a_base_table():
    err = rejected("materialize(reachable, infinity, 5, keys(1, 2)).\n"
                   "r1 reachable(@S, D) :- link(@S, D).")
    assert at(err) == (1, 13) and "derived by rule r1" in err.message
    assert err.hint == "declare its size infinity"
    psn.parse("materialize(link, infinity, 5, keys(1, 2)).\n"
              "r1 reachable(@S, D) :- link(@S, D).")


def test_keys_of_an_unused_table_are_not_range_checked():
    program = psn.parse("materialize(q, 10, 100, keys(1, 7)).")
    assert [(t.pred, t.keys) for t in program.tables] == [("q", (1, 7))]


def test_negative_lifetime_and_size_from_a_rewrite_are_rejected():
    good = psn.parse("materialize(q, 10, 100, keys(1)).\nq(1).")
    for field in ("lifetime", "size"):
        table = A.Materialize("q", **{"lifetime": 10, "size": 100, field: -1}, keys=(1,))
        with pytest.raises(NDlogSemanticError, match=f"the {field} of table 'q'"):
            check_program(good.with_(tables=(table,)))


# -- stratification ----------------------------------------------------------------------

def test_aggregate_over_itself():
    err = rejected("sp(S, D, min<C>) :- link(S, D, C).\n"
                   "sp(S, D, min<C>) :- link(S, Z, C1), sp(Z, D, C2), C := C1 + C2.")
    assert at(err) == (2, 10)
    assert err.message.startswith("aggregate over a recursive dependency")


def test_aggregate_over_mutual_recursion():
    err = rejected("a(X, count<Y>) :- b(X, Y).\nb(X, Y) :- a(X, Y).")
    assert "'b', which depends on 'a'" in err.message


def test_aggregate_over_a_recursive_relation_below_it_is_fine():
    # minCost aggregates path; path does not depend on minCost (aggregate selection's case)
    links = [("a", "b", 1), ("b", "c", 1), ("a", "c", 5)]
    out = psn.evaluate(psn.parse(SHORTEST_PATH), {"link": links})
    assert out["minCost"] == {("a", "b", 1), ("b", "c", 1), ("a", "c", 2)}
    out = psn.evaluate(psn.parse(REGION), {"seed": [(1, "r")], "isTriggered": [(1,), (2,)],
                                          "nbr": [(1, 2), (2, 3)], "sink": [("r", 9)]})
    assert out["regionSize"] == {("r", 3)} and out["largestRegions"] == {(9, "r")}


# -- rendering ---------------------------------------------------------------------------

def test_error_renders_file_line_column_and_caret():
    err = rejected("p(X) :- q(X).\nr(Y) :- q(Y, Y).\n")
    lines = err.render().splitlines()
    assert lines[0].startswith("t.ndl:2:9: error: ")
    assert lines[1] == "    r(Y) :- q(Y, Y)."
    assert lines[2] == "    " + " " * 8 + "^"


# -- golden error corpus -----------------------------------------------------------------

GOLDEN = sorted(ERRORS.glob("*.ndl"))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_golden_corpus_is_complete():
    names = {p.stem for p in GOLDEN}
    assert names == {p.stem for p in ERRORS.glob("*.expected")}
    for prefix in ("syntax_", "arity_", "builtin_", "aggregate_", "safety_", "location_",
                   "materialize_", "stratification_"):
        assert any(n.startswith(prefix) for n in names), prefix


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_error_in_process(path):
    expected = path.with_suffix(".expected").read_text()
    rel = _rel(path)
    with pytest.raises(PSNError) as info:
        psn.parse(path.read_text(), rel)
    err = info.value
    kind = NDlogSyntaxError if "syntax error:" in expected.splitlines()[0] else \
        NDlogSemanticError
    assert type(err) is kind
    assert err.render() + "\n" == expected
    assert re.match(rf"{re.escape(rel)}:\d+:\d+: ", expected)


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_error_through_cli(path):
    proc = subprocess.run([sys.executable, "-m", "psn", "eval", _rel(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == path.with_suffix(".expected").read_text()


def test_a_lifetime_no_float_holds_is_refused_at_the_table():
    """'materialize(link, 10**400, ...)' passed the checks and ended in an OverflowError
    traceback when the run formatted or scheduled the lifetime."""
    text = (f"materialize(link, {10**400}, infinity, keys(1,2)).\n"
            "r1 reachable(@S, D) :- link(@S, D).\n")
    with pytest.raises(PSNError, match="the lifetime of table 'link' has 401 digits") as err:
        psn.parse(text)
    assert err.value.line == 1 and "write infinity" in err.value.render()


def test_a_base_predicate_one_letter_off_another_is_warned_about(tmp_path, capsys):
    """'lnk' for 'link' read as an empty relation, silently; pairs such as orbit/orbits
    (one derived) are common on purpose and not reported."""
    from ndlog.analysis import lookalike_inputs
    from psn.cli import main
    text = ("r1 reachable(@S, D) :- link(@S, D).\n"
            "r2 reachable(@S, D) :- lnk(@S, Z), reachable(@Z, D).\n")
    [(atom, close)] = lookalike_inputs(psn.parse(text))
    assert (atom.pred, atom.span.line, atom.span.column, close) == ("lnk", 2, 24, "link")
    assert lookalike_inputs(psn.parse("o1 orbits(X, Y) :- orbit(X, Y).\n")) == []
    program, facts = tmp_path / "typo.ndl", tmp_path / "f.ndl"
    program.write_text(text)
    facts.write_text("link(@1, 2).\n")
    assert main(["eval", str(program), "--facts", str(facts)]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"{program}:2:24: warning: no rule derives 'lnk'")
    assert err.rstrip().endswith("hint: did you mean 'link'?")
