"""The NDlog parser (ndlog.parser): AST shapes, literals, comments, declarations, positions.

The reference programs of docs/language.md (section 10) are parsed and their shapes checked
literal by literal; error positions are asserted as (line, column) and on the caret line of
the rendering.
"""

from __future__ import annotations

import math

import pytest

import psn
from ndlog import ast as A
from ndlog.errors import InputError, NDlogSemanticError, NDlogSyntaxError
from ndlog.parser import parse_atom, parse_facts

from test_checks import REACHABLE, REGION, SHORTEST_PATH


def shape(lit) -> tuple:
    """A span-free summary of a literal: atoms as (pred, loc, arg kinds)."""
    if isinstance(lit, A.Atom):
        return (lit.pred, lit.loc, tuple(_kind(a) for a in lit.args))
    if isinstance(lit, A.Assign):
        return (":=", lit.var.name, _kind(lit.expr))
    return (lit.op, _kind(lit.left), _kind(lit.right))


def _kind(t) -> str:
    if isinstance(t, A.Var):
        return t.name
    if isinstance(t, A.Aggregate):
        return f"{t.func}<{t.var.name if t.var else '*'}>"
    if isinstance(t, A.Call):
        return t.name
    if isinstance(t, A.BinOp):
        return t.op
    return type(t).__name__


def one_fact_value(text: str):
    program = psn.parse(f"v({text}).")
    return program.facts[0].values[0]


# -- reference programs -----------------------------------------------------------------

def test_reachability_shape():
    p = psn.parse(REACHABLE)
    assert [r.name for r in p.rules] == ["r1", "r2"]
    assert all(r.named for r in p.rules)
    r2 = p.rules[1]
    assert shape(r2.head) == ("reachable", 0, ("S", "D"))
    assert [shape(b) for b in r2.body] == [("link", 0, ("S", "Z")),
                                           ("reachable", 0, ("Z", "D"))]
    assert p.distributed and p.idb == {"reachable"} and p.edb == {"link"}


def test_shortest_path_shape():
    p = psn.parse(SHORTEST_PATH)
    assert [r.name for r in p.rules] == [f"sp{i}" for i in range(1, 8)]
    sp2 = p.rules[1]
    assert [shape(b) for b in sp2.body] == [
        ("link", 0, ("S", "Z", "C1")),
        ("path", 0, ("Z", "D", "P2", "C2", "L2")),
        ("==", "f_member", "Const"),
        (":=", "P", "f_prepend"), (":=", "C", "+"), (":=", "L", "+"),
    ]
    sp3 = p.rules[2]
    assert shape(sp3.head) == ("minCost", 0, ("S", "D", "min<C>"))
    assert sp3.is_aggregate and sp3.head.aggregates[0][0] == 2
    assert [r.is_aggregate for r in p.rules] == [False, False, True, True, False, False, False]
    assert shape(p.rules[6].head) == ("shortestCheapestPath", 0,
                                      ("S", "D", "P1", "C", "P2", "L"))


def test_region_shape():
    p = psn.parse(REGION)
    g2 = p.rules[1]
    assert shape(g2.head) == ("activeRegion", 0, ("Y", "R"))
    assert [shape(b) for b in g2.body] == [("activeRegion", 0, ("X", "R")),
                                           ("isTriggered", 0, ("X",)),
                                           ("nbr", 0, ("X", "Y"))]
    assert shape(p.rules[2].head) == ("regionSize", 0, ("R", "count<X>"))
    assert shape(p.rules[3].head) == ("largestRegion", 0, ("K", "max<N>"))


def test_two_and_three_hop_shape():
    p = psn.parse("h1 hop(@X, Y) :- link(@X, Z), link(@Z, Y).\n"
                  "h2 tri_hop(@X, Y) :- hop(@X, Z), link(@Z, Y).\n")
    assert [shape(r.head) for r in p.rules] == [("hop", 0, ("X", "Y")),
                                                ("tri_hop", 0, ("X", "Y"))]


def test_location_may_be_any_argument():
    p = psn.parse("p(X, @Y) :- q(X, @Y).")
    assert p.rules[0].head.loc == 1 and p.rules[0].head.loc_term == A.Var("Y")


def test_centralized_program_has_no_locations():
    p = psn.parse("tc(X, Y) :- e(X, Y).")
    assert not p.distributed and p.rules[0].head.loc is None


# -- comments and layout ------------------------------------------------------------------

def test_comments_are_ignored_everywhere():
    text = """// leading comment
    /* a block
       over lines */ r1 reachable(@S, /* inside */ D) :- // after the arrow
        link(@S, D).   // trailing
    /**/ link(@a, b). /* last */"""
    p = psn.parse(text)
    assert [r.name for r in p.rules] == ["r1"] and p.facts[0].values == ("a", "b")
    assert p == psn.parse("r1 reachable(@S, D) :- link(@S, D). link(@a, b).")


def test_comment_markers_inside_strings_are_text():
    assert one_fact_value('"a // b /* c"') == "a // b /* c"


def test_empty_and_comment_only_programs():
    assert psn.parse("") == A.Program()
    assert psn.parse("  // nothing\n/* here */\n") == A.Program()


# -- literals -----------------------------------------------------------------------------

@pytest.mark.parametrize("text,value", [
    ("0", 0), ("42", 42), ("-7", -7), ("- 7", -7), ("1.5", 1.5), ("-0.25", -0.25),
    ("2e3", 2000.0), ("1.5E-2", 0.015), ("infinity", math.inf), ("-infinity", -math.inf),
    ("nil", ()), ("[]", ()), ("[1, 2, 3]", (1, 2, 3)), ("[a, [b, nil], \"c\"]",
                                                        ("a", ("b", ()), "c")),
    ("abc", "abc"), ("aBc_9", "aBc_9"), ('"abc"', "abc"), ('""', ""),
    ('"a\\"b"', 'a"b'), ('"back\\\\slash"', "back\\slash"), ('"n\\nt\\tr\\r"', "n\nt\tr\r"),
    ('"it\\\'s"', "it's"), ("(3)", 3), ("-(3)", -3),
])
def test_constant_values(text, value):
    got = one_fact_value(text)
    assert got == value and type(got) is type(value)


def test_symbols_and_strings_are_one_type():
    p = psn.parse('v(abc). v("abc").')
    assert p.facts[0] == p.facts[1]


def test_integers_stay_exact():
    assert one_fact_value("123456789012345678901234567890") == 123456789012345678901234567890


def test_list_with_variables_is_a_list_expression():
    rule = psn.parse("p(X, [X, 1, [X]]) :- q(X).").rules[0]
    lst = rule.head.args[1]
    assert isinstance(lst, A.ListExpr)
    assert lst.items[1] == A.Const(1) and isinstance(lst.items[2], A.ListExpr)


# -- expressions ----------------------------------------------------------------------------

def expr_of(text: str):
    return psn.parse(f"p(X, Y) :- q(X), Y := {text}.").rules[0].body[1].expr


def test_precedence_and_associativity():
    e = expr_of("1 + X * 2")
    assert e == A.BinOp("+", A.Const(1), A.BinOp("*", A.Var("X"), A.Const(2)))
    e = expr_of("X - 1 - 2")
    assert e == A.BinOp("-", A.BinOp("-", A.Var("X"), A.Const(1)), A.Const(2))
    e = expr_of("(X + 1) % 3 / 2")
    assert e == A.BinOp("/", A.BinOp("%", A.BinOp("+", A.Var("X"), A.Const(1)), A.Const(3)),
                        A.Const(2))


def test_unary_minus_of_a_variable_is_neg():
    assert expr_of("-X") == A.Neg(A.Var("X"))
    assert expr_of("2 - -X") == A.BinOp("-", A.Const(2), A.Neg(A.Var("X")))


def test_builtin_calls_parse_with_their_arguments():
    e = expr_of("f_concat(X, f_prepend(1, nil))")
    assert e == A.Call("f_concat", (A.Var("X"), A.Call("f_prepend", (A.Const(1), A.Const(())))))
    assert expr_of("f_size(nil)") == A.Call("f_size", (A.Const(()),))


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">=", "="])
def test_comparison_operators(op):
    lit = psn.parse(f"p(X) :- q(X), X {op} 3.").rules[0].body[1]
    assert lit == A.Compare(op, A.Var("X"), A.Const(3))


def test_assignment_literal():
    lit = psn.parse("p(Y) :- q(X), Y := X + 1.").rules[0].body[1]
    assert isinstance(lit, A.Assign) and lit.var == A.Var("Y")


@pytest.mark.parametrize("text,func,var", [("min<C>", "min", "C"), ("max< C >", "max", "C"),
                                           ("count<*>", "count", None), ("sum<X_1>", "sum", "X_1"),
                                           ("avg<Cost>", "avg", "Cost")])
def test_aggregates(text, func, var):
    src = f"p(S, {text}) :- q(S, C, X_1, Cost)."
    agg = psn.parse(src).rules[0].head.args[1]
    assert agg == A.Aggregate(func, A.Var(var) if var else None)


def test_anonymous_variable():
    body = psn.parse("p(X) :- q(X, _, _).").rules[0].body[0]
    assert all(isinstance(a, A.Var) and a.anonymous for a in body.args[1:])
    assert not A.Var("_x").anonymous


# -- statements -------------------------------------------------------------------------------

def test_materialize_with_lifetime_size_keys():
    p = psn.parse("materialize(link, infinity, infinity, keys(1,2)).\n"
                  "materialize(neighbor, 30, 100, keys(2)).\n"
                  "link(@a, b). neighbor(@a, b).")
    link, nbr = p.tables
    assert (link.pred, link.lifetime, link.size, link.keys) == ("link", math.inf, math.inf,
                                                                 (1, 2))
    assert (nbr.lifetime, nbr.size, nbr.keys) == (30, 100, (2,))
    assert p.table("neighbor") is nbr and p.table("nothing") is None


def test_unnamed_rules_get_generated_names_that_do_not_clash():
    p = psn.parse("p(X) :- q(X).\nrule1 p(X) :- r(X).\np(X) :- s(X).\n")
    assert [r.name for r in p.rules] == ["rule2", "rule1", "rule3"]
    assert [r.named for r in p.rules] == [False, True, False]


def test_spans_are_positions_but_not_part_of_equality():
    a = psn.parse("p(X) :- q(X).")
    b = psn.parse("\n\n   p( X )  :-   q( X ) .")
    assert a == b
    assert (b.rules[0].head.span.line, b.rules[0].head.span.column) == (3, 4)
    assert (b.rules[0].body[0].args[0].span.line, b.rules[0].body[0].args[0].span.column) == \
        (3, 20)


def test_facts_helpers():
    facts = parse_facts("link(@1, 2, 10).\nlink(@2, 3, -1.5).")
    assert [f.values for f in facts] == [(1, 2, 10), (2, 3, -1.5)]
    assert parse_atom("reachable(@a, c)").values == ("a", "c")
    with pytest.raises(NDlogSemanticError, match="only facts"):
        parse_facts("p(X) :- q(X).")


def test_load_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        psn.load(tmp_path / "nope.ndl")


def test_load_names_the_file_in_errors(tmp_path):
    f = tmp_path / "bad.ndl"
    f.write_text("p(X) :- q(X)\n")
    with pytest.raises(NDlogSyntaxError) as info:
        psn.load(f)
    assert info.value.span.filename == str(f)
    assert info.value.render().startswith(f"{f}:1:13: syntax error: ")


# -- positions in errors ----------------------------------------------------------------------

def syntax_error(text: str) -> NDlogSyntaxError:
    with pytest.raises(NDlogSyntaxError) as info:
        psn.parse(text, "e.ndl")
    return info.value


def caret_column(err) -> int:
    return err.render().splitlines()[2].index("^") - 4 + 1


@pytest.mark.parametrize("text,line,col,words", [
    ("p(X) :- q(X) r(X).", 1, 14, "expected ',', '.'"),
    ("p(X :- q(X).", 1, 5, "unexpected ':-'"),
    ("p(X) :- q(X), X $ 1.", 1, 17, "unexpected character '$'"),
    ("p(X) :-\n  q(X),\n  .", 3, 3, "expected a term"),
    ('p("abc).', 1, 3, "unterminated string"),
    ("p(a).\n  /* open\n", 2, 3, "unterminated comment"),
    ('p("\\z").', 1, 4, "unknown escape"),
    ("materialize(t, -1, 1, keys(1)).", 1, 16, "unexpected '-'"),
    ("p(X) :- f_abs(X).", 1, 17, "unexpected '.'"),
])
def test_syntax_error_positions(text, line, col, words):
    err = syntax_error(text)
    assert (err.line, err.column) == (line, col)
    assert words in err.message
    assert caret_column(err) == col


def test_end_of_input_caret_sits_after_last_character_of_last_nonblank_line():
    err = syntax_error("p(a).\nq(X) :- p(X)   \n\n   \n")
    assert (err.line, err.column) == (2, 13)
    assert "end of input" in err.message and err.hint
    assert err.render().splitlines()[1:3] == ["    q(X) :- p(X)   ", "    " + " " * 12 + "^"]


def test_missing_period_points_after_the_unfinished_statement():
    err = syntax_error("r1 p(X) :- q(X)\n\nr2 p(X) :- r(X).")
    assert (err.line, err.column) == (1, 16)
    assert "missing '.'" in err.message and "line 3" in err.message and "','" in err.message
    err = syntax_error("p(a)\nq(b).")
    assert (err.line, err.column) == (1, 5) and "','" not in err.message


def test_expected_tokens_are_exact():
    err = syntax_error("p(X) :- q(X) r(X).")
    assert ":-" not in err.message.split("expected")[1]


def test_tabs_count_as_one_column():
    err = syntax_error("p(X) :-\tq(X) r(X).")
    assert err.column == 14 and caret_column(err) == 14


def test_semantic_errors_of_the_parser_have_positions():
    with pytest.raises(NDlogSemanticError) as info:
        psn.parse("p(1).\np(Y).", "f.ndl")
    assert (info.value.line, info.value.column) == (2, 3)
    with pytest.raises(NDlogSemanticError) as info:
        psn.parse("r p(X) :- q(X).\nr p(X) :- s(X).", "f.ndl")
    assert (info.value.line, info.value.column) == (2, 1) and "line 1" in info.value.message
    with pytest.raises(NDlogSemanticError, match="materialized twice"):
        psn.parse("materialize(t, 1, 1, keys(1)).\nmaterialize(t, 1, 1, keys(1)).")
    with pytest.raises(NDlogSemanticError, match="at least 1") as info:
        psn.parse("materialize(t, 1, 1, keys(2, 0)).")
    assert info.value.column == 30


def test_very_deep_nesting_is_an_error_not_a_crash():
    deep = "p(" + "1 + " * 5000 + "1)."
    err = syntax_error(deep)
    assert "too deep" in err.message


def test_hidden_pragma_names_only_predicates_of_the_program():
    """A misspelt name in ``#hidden`` hid nothing and was accepted."""
    localized = "#hidden(link_rev, r2_aux).\n" \
        "r2a link_rev(@Z, S) :- link(@S, Z).\n" \
        "r2b r2_aux(@S, Z, D) :- reachable(@Z, D), link_rev(@Z, S).\n" \
        "r2c reachable(@S, D) :- link(@S, Z), r2_aux(@S, Z, D).\n"
    assert psn.parse(localized).hidden == {"link_rev", "r2_aux"}
    with pytest.raises(NDlogSemanticError, match="#hidden names 'r2_auxx', which no rule, "
                                                 "fact or table of the program has") as info:
        psn.parse(localized.replace("r2_aux)", "r2_auxx)"), filename="p.ndl")
    assert (info.value.line, info.value.column) == (1, 1)


@pytest.mark.parametrize("text, message, column", [
    ("reachable(@1,", "unexpected end of input; expected '@', an aggregate, a term", 14),
    ("reachable(@1 2)", "unexpected '2'; expected ')'", 14)])
def test_a_fact_without_its_period_is_shown_as_given(text, message, column):
    """The period parse_atom adds was reported as an unexpected '.' and shown."""
    with pytest.raises(NDlogSyntaxError) as info:
        parse_atom(text, "--why")
    err = info.value
    assert err.message.startswith(message) and (err.line, err.column) == (1, column)
    assert err.render().splitlines()[1].strip() == text
