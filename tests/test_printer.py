"""ndlog.printer: printed NDlog parses back to an equal AST.

Covers every program of the golden corpus (raw and localized), seeded random expression
trees (precedence and associativity), every kind of constant, unnamed rules and the
``#hidden`` statement.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import psn
from ndlog import ast as A
from ndlog.printer import format_atom, format_program, format_rule, format_term

from corpus import case_dirs

import localize

LOCALIZE = Path(__file__).with_name("programs") / "localize"


def roundtrip(program: A.Program) -> A.Program:
    return psn.parse(format_program(program), check=False)


@pytest.mark.parametrize("path", case_dirs(), ids=lambda p: p.name)
def test_corpus_programs_roundtrip(path):
    program = psn.load(path / "program.ndl")
    assert roundtrip(program) == program
    again = format_program(roundtrip(program))
    assert again == format_program(program)  # printing is a fixpoint too


@pytest.mark.parametrize("path", case_dirs(), ids=lambda p: p.name)
def test_localized_corpus_programs_roundtrip(path):
    program = localize.localize(psn.load(path / "program.ndl"))
    back = psn.parse(format_program(program))  # with the static checks
    assert back == program
    assert back.hidden == program.hidden


def test_hidden_statement_roundtrips():
    program = psn.parse("#hidden(b, a).\na(@X, Y) :- b(@X, Y).\nc(@X, Y) :- a(@X, Y).\n")
    assert program.hidden == frozenset({"a", "b"})
    text = format_program(program)
    assert text.splitlines()[0] == "#hidden(a, b)."
    assert roundtrip(program) == program


def test_unnamed_rules_print_without_a_name():
    program = psn.parse("p(X) :- q(X).\nr1 r(X) :- p(X).\ns(X) :- r(X).\n")
    assert [r.named for r in program.rules] == [False, True, False]
    lines = format_program(program).splitlines()
    assert lines[0] == "p(X) :- q(X)."
    assert lines[1] == "r1 r(X) :- p(X)."
    assert roundtrip(program) == program


@pytest.mark.parametrize("value", [
    0, 7, -3, 2.5, -0.125, 1e-05, 2.5e20, float("inf"), float("-inf"), "sym", "Upper",
    "two words", 'say "hi"', "back\\slash", "f_name", "infinity", "nil", "", (), (1, "a"),
    ((1, 2), (), ("x", -4)), "materialize",
])
def test_constants_roundtrip(value):
    rule = A.Rule("k", A.Atom("c", (A.Var("X"), A.Const(value)), None),
                  (A.Atom("n", (A.Var("X"),), None),))
    back = psn.parse(format_rule(rule), check=False).rules[0]
    assert back == rule
    assert back.head.args[1].value == value


def _random_term(rng: random.Random, depth: int) -> A.Term:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice([A.Var(rng.choice("XYZ")), A.Const(rng.randint(-5, 9)),
                           A.Const(rng.choice(["a", "B c", ()])), A.Const(1.5)])
    kind = rng.randrange(4)
    if kind == 0:
        return A.Neg(A.BinOp("+", A.Var("X"), _random_term(rng, depth - 1))
                     if rng.random() < 0.5 else A.Var("Y"))
    if kind == 1:
        return A.Call(rng.choice(["f_min", "f_max"]),
                      (_random_term(rng, depth - 1), _random_term(rng, depth - 1)))
    if kind == 2:
        return A.ListExpr((A.Var("X"), _random_term(rng, depth - 1)))
    return A.BinOp(rng.choice("+-*/%"), _random_term(rng, depth - 1),
                   _random_term(rng, depth - 1))


def test_random_expressions_roundtrip():
    rng = random.Random(20261125)
    for _ in range(400):
        term = _random_term(rng, 4)
        lit = A.Compare("==", A.Var("W"), term)
        rule = A.Rule("e", A.Atom("out", (A.Var("W"), A.Var("X")), None),
                      (A.Atom("n", (A.Var("X"), A.Var("Y"), A.Var("Z"), A.Var("W")), None),
                       lit, A.Assign(A.Var("V"), term)))
        back = psn.parse(format_rule(rule), check=False).rules[0]
        assert back == rule, format_term(term)


def test_associativity_and_precedence_parentheses():
    x, y, z = A.Var("X"), A.Var("Y"), A.Var("Z")
    assert format_term(A.BinOp("-", A.BinOp("-", x, y), z)) == "X - Y - Z"
    assert format_term(A.BinOp("-", x, A.BinOp("-", y, z))) == "X - (Y - Z)"
    assert format_term(A.BinOp("*", A.BinOp("+", x, y), z)) == "(X + Y) * Z"
    assert format_term(A.BinOp("+", x, A.BinOp("*", y, z))) == "X + Y * Z"
    assert format_term(A.Neg(A.BinOp("+", x, y))) == "-(X + Y)"
    assert format_term(A.Neg(A.Neg(x))) == "- -X"


def test_atoms_aggregates_and_materialize():
    atom = A.Atom("stats", (A.Var("C"), A.Aggregate("min", A.Var("G")),
                            A.Aggregate("count", None)), 0)
    assert format_atom(atom) == "stats(@C, min<G>, count<*>)"
    assert format_atom(A.Atom("p", ())) == "p()"
    program = psn.parse("materialize(link, 30, infinity, keys(1, 2)).\n"
                        "materialize(t, infinity, 10, keys(1)).\n"
                        "link(@a, b, 3).\nt(@a).\n")
    assert format_program(program).splitlines()[:2] == [
        "materialize(link, 30, infinity, keys(1, 2)).",
        "materialize(t, infinity, 10, keys(1)).",
    ]
    assert roundtrip(program) == program


def test_expected_localized_texts_parse_to_the_localized_programs():
    for case in ("nigam_r2", "three_location"):
        program = psn.load(LOCALIZE / case / "program.ndl")
        expected = psn.load(LOCALIZE / case / "expected.ndl")
        assert localize.localize(program) == expected
