"""Bad input files and pathological programs end in a PSNError with a position, quickly.

One test (or a few) per failure a user found by fuzzing the front end and the input readers:
an unclosed comment before a syntax error (once an exponential regular-expression scan), CSV
fields past the csv module's limit, terms nested past Python's recursion limit, integers past
Python's 4,300-digit conversion limit, non-UTF-8 files, facts and bursts whose predicate,
arity or ``@`` position does not fit the program or each other, burst syntax errors without a
word on the burst syntax, CSV header rows, and CSV values such as ``nan``.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

import psn
import topologies
from engine import Network
from engine.bursts import BURST_HINT, parse_burst, read_burst_file
from engine.placement import parse_placement
from ndlog.builtins import format_value
from ndlog.errors import (EvaluationError, InputError, NDlogSemanticError, NDlogSyntaxError,
                          PSNError, Span)
from ndlog.output import (jsonable, program_locations, read_facts_file, read_facts_files,
                          relations_to_json, render_relations)
from ndlog.parser import MAX_NESTING, FactShapes, load, parse_facts
from psn.batch import evaluate_spark
from psn.verify.counterexample import Counterexample

from test_checks import REACHABLE

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

ARITIES = {"link": 3, "reachable": 2}
LOCATIONS = {"link": 0, "reachable": 0}


def caret_column(err: PSNError) -> int:
    return err.render().splitlines()[2].index("^") - 4 + 1


def write(tmp_path, name: str, text: str | bytes):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# -- an unclosed comment before a syntax error ------------------------------------------------

@pytest.mark.parametrize("lines", [28, 200, 2000])
def test_unclosed_comment_is_reported_at_the_comment_quickly(lines):
    text = "link(@a, b, 1).\n/* not closed\n" + "link(@a, b, 1).\n" * lines + "link(@a, , 1).\n"
    start = time.perf_counter()
    with pytest.raises(NDlogSyntaxError) as info:
        psn.parse(text, "c.ndl")
    assert time.perf_counter() - start < 1.0
    err = info.value
    assert "unterminated comment" in err.message
    assert (err.filename, err.line, err.column) == ("c.ndl", 2, 1)
    assert err.render().splitlines()[1] == "    /* not closed"


def test_closed_comments_around_an_error_still_point_at_the_error():
    text = "/* one\n two */\nlink(@a, b, 1). /* three */\nlink(@a, , 1).\n"
    with pytest.raises(NDlogSyntaxError) as info:
        psn.parse(text, "c.ndl")
    assert (info.value.line, info.value.column) == (4, 10)
    assert "unterminated" not in info.value.message


def test_unclosed_comment_in_a_facts_file_and_a_burst(tmp_path):
    text = "link(@a, b, 1).\n  /* open\n" + "link(@a, b, 1).\n" * 300
    with pytest.raises(NDlogSyntaxError, match="unterminated comment") as info:
        read_facts_file(write(tmp_path, "f.ndl", text))
    assert (info.value.line, info.value.column) == (2, 3)
    with pytest.raises(NDlogSyntaxError, match="unterminated comment") as info:
        parse_burst("+" + text, "b.txt")
    assert (info.value.line, info.value.column) == (2, 3)


# -- CSV fields past the csv module's limit ---------------------------------------------------

def test_csv_field_past_the_field_size_limit(tmp_path):
    path = write(tmp_path, "link.csv", "a,b,1\nb,c,2\nc," + "x" * 200_000 + ",3\n")
    with pytest.raises(InputError) as info:
        read_facts_file(path)
    err = info.value
    assert (err.filename, err.line) == (str(path), 3)
    assert "longer than" in err.message and "characters" in err.message
    assert len(err.render()) < 500  # the long line is cut around the column


# -- terms nested past the recursion limit ----------------------------------------------------

@pytest.mark.parametrize("term,what", [
    ("Z" + " + 1" * 3000, "sum"),
    ("-" * 3000 + "Z", "negation"),
    ("f_abs(" * 600 + "Z" + ")" * 600, "call"),
    ("[" * 3000 + "Z" + "]" * 3000, "list"),
    ("Z" + " + 1" * 400, "sum below the parser's old limit"),
])
def test_deep_terms_are_a_syntax_error_at_the_term(term, what):
    text = f"r1 p(@X, Y) :- q(@X, Z),\n    Y := {term}.\n"
    with pytest.raises(NDlogSyntaxError) as info:
        psn.parse(text, "deep.ndl")
    err = info.value
    assert "nested too deep" in err.message, what
    assert (err.line, err.column) == (2, 10)
    assert caret_column(err) == 10


def test_terms_at_the_nesting_limit_parse_and_evaluate():
    sums = "Z" + " + 1" * MAX_NESTING
    lists = "[" * MAX_NESTING + "Z" + "]" * MAX_NESTING
    calls = "f_abs(" * MAX_NESTING + "Z" + ")" * MAX_NESTING
    text = (f"r1 s(@X, Y) :- q(@X, Z), Y := {sums}.\n"
            f"r2 l(@X, Y) :- q(@X, Z), Y := {lists}.\n"
            f"r3 c(@X, Y) :- q(@X, Z), Y := {calls}.\n"
            "q(@a, -2).\n")
    result = psn.evaluate(psn.parse(text, "limit.ndl"))
    assert result["s"] == {("a", MAX_NESTING - 2)}
    assert result["c"] == {("a", 2)}
    (value,) = [t[1] for t in result["l"]]
    for _ in range(MAX_NESTING):
        value = value[0]
    assert value == -2
    assert "[[[" in render_relations(result)


def test_deep_list_in_a_facts_file_is_a_syntax_error(tmp_path):
    path = write(tmp_path, "f.ndl", "link(@a, b, 1).\nlink(@a, b, " + "[" * 5000 + "]" * 5000
                 + ").\n")
    with pytest.raises(NDlogSyntaxError, match="nested too deep") as info:
        read_facts_file(path)
    assert (info.value.filename, info.value.line, info.value.column) == (str(path), 2, 13)


@pytest.fixture
def default_recursion_limit():
    """Python's default recursion limit during the test (Ray, Spark or another test of the
    session may have raised it, which would let the deep values through)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(old)


def test_values_nested_deeply_at_run_time_end_in_evaluation_errors(default_recursion_limit):
    grow = "p(@a, 0, nil).\nr1 p(@X, M, [L]) :- p(@X, N, L), N < 1500, M := N + 1.\n"
    result = psn.evaluate(psn.parse(grow, "grow.ndl"))
    assert len(result["p"]) == 1501
    with pytest.raises(EvaluationError, match="nested too deeply"):
        render_relations(result)
    with pytest.raises(EvaluationError, match="nested too deeply"):
        relations_to_json(result)
    compare = grow + "r2 q(@X, N) :- p(@X, N, L), p(@X, N2, L2), N != N2, L == L2.\n"
    with pytest.raises(EvaluationError, match="rule r2") as info:
        psn.evaluate(psn.parse(compare, "grow.ndl"))
    assert info.value.line == 3


# -- integers past Python's str->int limit ----------------------------------------------------

LONG = "9" * 5000


@pytest.mark.parametrize("text,col", [
    (f"link(@a, b, {LONG}).", 13),
    (f"materialize(link, {LONG}, infinity, keys(1)).", 19),
    (f"materialize(link, infinity, infinity, keys({LONG})).", 44),
    (f"r1 p(@X, Y) :- link(@X, Y, C), C > {LONG}.", 36),
])
def test_long_integer_literals_are_syntax_errors(text, col):
    with pytest.raises(NDlogSyntaxError) as info:
        psn.parse(text, "int.ndl")
    err = info.value
    assert "integer literal too long: 5000 digits" in err.message
    assert (err.line, err.column) == (1, col)
    assert caret_column(err) == col
    assert len(err.render().splitlines()[1]) < 120  # the 5000-digit line is cut


def test_long_integer_in_csv_and_facts_files(tmp_path):
    with pytest.raises(InputError, match="integer too long: 5000 digits") as info:
        read_facts_file(write(tmp_path, "link.csv", f"a,b,1\nb,c,{LONG}\n"))
    assert (info.value.line, info.value.column) == (2, 5)
    with pytest.raises(NDlogSyntaxError, match="too long") as info:
        read_facts_file(write(tmp_path, "f.ndl", f"link(@a, b, 1).\nlink(@a, b, {LONG}).\n"))
    assert (info.value.line, info.value.column) == (2, 13)


def test_results_with_integers_too_long_for_str_print_exactly():
    bound = "1" + "0" * 3000
    program = psn.parse(f"big(@a, 10).\nr1 big(@X, M) :- big(@X, N), N < {bound}, "
                        "M := N * N * N.\n")
    result = psn.evaluate(program)
    huge = max(t[1] for t in result["big"])
    assert huge == 10 ** 6561
    assert format_value(huge) == "1" + "0" * 6561
    assert format_value(-(huge + 7)) == "-1" + "0" * 6560 + "7"
    assert "big(a, 1" + "0" * 6561 + ")" in render_relations(result)
    assert ("a", "1" + "0" * 6561) in [tuple(r) for r in relations_to_json(result)["big"]]
    json.dumps(relations_to_json(result))
    assert jsonable(10 ** 20) == 10 ** 20


# -- non-UTF-8 files --------------------------------------------------------------------------

def _place_on_two_workers(path):
    parse_placement(2, str(path))


FACTS_NOT_UTF8 = b"link(@a, b, 1).\nlink(@a, \xe9t\xe9, 1).\n"   # 0xe9 at line 2, column 10
ALT_NOT_UTF8 = b"GRAPH 2 1 \xfd\n"                                # 0xfd at line 1, column 11


@pytest.mark.parametrize("reader,what,content,where", [
    (read_facts_file, "facts file", FACTS_NOT_UTF8, (2, 10, "0xe9")),
    (read_burst_file, "burst file", FACTS_NOT_UTF8, (2, 10, "0xe9")),
    (load, "program file", FACTS_NOT_UTF8, (2, 10, "0xe9")),
    (lambda p: topologies.load(p), "topology file", ALT_NOT_UTF8, (1, 11, "0xfd")),
    (lambda p: topologies.read_alt(p), "topology file", ALT_NOT_UTF8, (1, 11, "0xfd")),
    (lambda p: topologies.read_json(p), "topology file", ALT_NOT_UTF8, (1, 11, "0xfd")),
    (lambda p: topologies.read_spec(p), "spec file", ALT_NOT_UTF8, (1, 11, "0xfd")),
    (lambda p: Counterexample.load(p), "counterexample file", ALT_NOT_UTF8, (1, 11, "0xfd")),
    (_place_on_two_workers, "placement map", ALT_NOT_UTF8, (1, 11, "0xfd"))])
def test_every_input_file_that_is_not_utf8_names_the_file_and_the_byte(tmp_path, reader,
                                                                       what, content, where):
    """Topology, spec, placement-map and counterexample files ended in a
    UnicodeDecodeError traceback; program, facts and burst files already said this."""
    line, column, byte = where
    path = write(tmp_path, "x.ndl", content)
    with pytest.raises(InputError) as info:
        reader(path)
    err = info.value
    assert f"{what} '{path}' is not UTF-8" in err.message and byte in err.message
    assert (err.filename, err.line, err.column) == (str(path), line, column)
    assert caret_column(err) == column


@pytest.mark.parametrize("reader,what,name", [
    (read_facts_file, "facts file", "link.csv"), (read_facts_file, "facts file", "f.ndl"),
    (read_burst_file, "burst file", "b.ndl"), (load, "program file", "p.ndl"),
    (topologies.load, "topology file", "t.alt")])
def test_a_nul_byte_is_an_error_at_its_position(tmp_path, reader, what, name):
    """A CSV field holding a NUL byte was read as a string with the NUL in it."""
    path = write(tmp_path, name, b"1,2\n3,2\x00\n")
    with pytest.raises(InputError, match=f"{what} '{path}' holds a NUL byte") as info:
        reader(path)
    assert (info.value.line, info.value.column) == (2, 4)


def test_a_device_or_pipe_is_read_to_its_first_nul_byte_or_a_bound(tmp_path, monkeypatch):
    """/dev/zero as a facts file was read until the memory ran out (a MemoryError traceback
    under a limit), and so was a pipe that never ends; one that ends reads as a file."""
    import os
    import threading
    import ndlog.parser as parser
    monkeypatch.setattr(parser, "MOST_STREAMED", 1 << 20)
    if os.path.exists("/dev/zero"):
        with pytest.raises(InputError, match="holds a NUL byte") as info:
            read_facts_file("/dev/zero")
        assert (info.value.line, info.value.column) == (1, 1)
    fifo = tmp_path / "f.ndl"
    os.mkfifo(fifo)

    def feed(times):
        try:
            with open(fifo, "wb") as fh:
                for _ in range(times):
                    fh.write(b"link(@1, 2).\n" * 4096)
        except BrokenPipeError:             # the reader stopped, as it should
            pass
    endless = threading.Thread(target=feed, args=(10 ** 9,), daemon=True)
    endless.start()
    with pytest.raises(InputError, match="is a device or pipe that sent more than 1 MiB"):
        read_facts_file(fifo)
    endless.join(60)        # its next write fails: else the next reader would get its data
    assert not endless.is_alive()
    threading.Thread(target=feed, args=(1,), daemon=True).start()
    assert read_facts_file(fifo) == {"link": [(1, 2)] * 4096}


def test_non_utf8_csv_file(tmp_path):
    path = write(tmp_path, "link.csv", b"a,b,1\n\xff,c,2\n")
    with pytest.raises(InputError, match="not UTF-8") as info:
        read_facts_file(path)
    assert (info.value.line, info.value.column) == (2, 1)


def test_byte_order_mark_and_crlf_are_read(tmp_path):
    path = write(tmp_path, "f.ndl", b"\xef\xbb\xbflink(@a, b, 1).\r\nlink(@b, c, 2).\r\n")
    assert read_facts_file(path) == {"link": [("a", "b", 1), ("b", "c", 2)]}
    path = write(tmp_path, "link.csv", b"\xef\xbb\xbfa,b,1\r\nb,c,2\r\n")
    assert read_facts_file(path) == {"link": [("a", "b", 1), ("b", "c", 2)]}


# -- arities of facts and bursts --------------------------------------------------------------

def test_fact_of_another_arity_than_the_program(tmp_path):
    path = write(tmp_path, "f.ndl", "link(@a, b, 1).\n  link(@b, c).\n")
    with pytest.raises(InputError) as info:
        read_facts_file(path, ARITIES)
    err = info.value
    assert err.message == "link has 2 arguments here, but arity 3 in the program"
    assert (err.filename, err.line, err.column) == (str(path), 2, 3)
    assert caret_column(err) == 3


def test_facts_of_one_predicate_with_two_arities_in_one_file(tmp_path):
    path = write(tmp_path, "f.ndl", "link(@a, b, 1).\nlink(@b, c).\n")
    with pytest.raises(InputError) as info:
        read_facts_file(path)
    assert info.value.message == "link has 2 arguments here, but 3 at line 1"
    assert (info.value.line, info.value.column) == (2, 1)


def test_facts_of_one_predicate_with_two_arities_in_two_files(tmp_path):
    first = write(tmp_path, "a.ndl", "link(@a, b, 1).\n")
    second = write(tmp_path, "b.ndl", "\nlink(@b, c).\n")
    assert read_facts_file(second) == {"link": [("b", "c")]}
    with pytest.raises(InputError) as info:
        read_facts_files([str(first), str(second)])
    assert info.value.message == f"link has 2 arguments here, but 3 at {first}:1:1"
    assert (info.value.filename, info.value.line) == (str(second), 2)


def test_fact_of_a_predicate_the_program_does_not_use(tmp_path):
    path = write(tmp_path, "f.ndl", "link(@a, b, 1).\nlnk(@a, b, 1).\n")
    with pytest.raises(InputError) as info:
        read_facts_file(path, ARITIES)
    err = info.value
    assert err.message == "predicate 'lnk' is not used by the program"
    assert (err.line, err.column) == (2, 1)
    assert err.hint == "did you mean 'link'? the program's predicates are link, reachable"


def test_burst_arity_errors_point_past_the_sign():
    text = "+link(@a, b, 1).\n-link(@a, b, 1).\n +link(@a, b).\n"
    with pytest.raises(InputError) as info:
        parse_burst(text, "burst.txt", ARITIES, LOCATIONS)
    err = info.value
    assert str(err.span) == "burst.txt:3:3"
    assert err.message == "link has 2 arguments here, but arity 3 in the program"
    assert err.render().splitlines()[1:3] == ["     +link(@a, b).", "      ^"]
    with pytest.raises(InputError, match="but 3 at line 1"):
        parse_burst(text, "burst.txt")
    with pytest.raises(InputError, match="'reach' is not used") as info:
        parse_burst("-reach(@a, b).\n", "burst.txt", ARITIES)
    assert "did you mean 'reachable'?" in info.value.hint


def test_burst_files_take_the_program_shapes(tmp_path):
    path = write(tmp_path, "b.txt", "+link(@a, b, 1).\n-link(@a, b, 1).\nlink(@c, d, 2).\n")
    assert read_burst_file(path, ARITIES, LOCATIONS) == [
        (1, "link", ("a", "b", 1)), (-1, "link", ("a", "b", 1)), (1, "link", ("c", "d", 2))]
    with pytest.raises(InputError, match="not used by the program"):
        read_burst_file(path, {"reachable": 2})


@pytest.mark.parametrize("apply", [
    lambda prog, burst: psn.Network(prog, {"link": [(1, 2)]}).apply(burst),
    lambda prog, burst: psn.Simulation(prog, topologies.ring(4)).step(updates=burst),
    lambda prog, burst: psn.verify(prog, {"link": [(1, 2)]}, [burst])],
    ids=["Network.apply", "Simulation.step", "verify"])
def test_an_update_string_from_python_is_checked_as_a_burst_file_is(apply):
    """The command line refused ``link(1, @2)`` in a burst file, the Python API took it."""
    program = psn.parse(REACHABLE)
    with pytest.raises(InputError) as info:
        apply(program, ["+link(1, @2)"])
    assert info.value.message == ("link has its '@' on argument 2 here, but on argument 1 "
                                  "in the program")
    assert (info.value.line, info.value.column) == (1, 10)
    with pytest.raises(InputError, match="'lnk' is not used by the program"):
        apply(program, ["-lnk(@1, 2)"])


@pytest.mark.parametrize("call, name", [
    (lambda net, sim: net.relations(hidden="no"), "hidden"),
    (lambda net, sim: net.node_state(1, hidden="no"), "hidden"),
    (lambda net, sim: psn.parse(REACHABLE, check="no"), "check"),
    (lambda net, sim: psn.load(Path(__file__).parents[1] / "examples" / "reachable.ndl",
                               check=()), "check"),
    (lambda net, sim: psn.Simulation(REACHABLE, topologies.ring(4), state_metrics="no"),
     "state_metrics"),
    (lambda net, sim: sim.run_workload("all", check="no"), "check"),
    (lambda net, sim: sim.run_workload("all", progress="no"), "progress"),
    (lambda net, sim: sim.step(insert={"link": [(0, 1)]}, check="yes"), "check"),
    (lambda net, sim: sim.advance(1.0, check=1), "check"),
    (lambda net, sim: psn.verify(REACHABLE, {"link": [(1, 2)]}, [["-link(@1, 2)"]],
                                 shrinking="no"), "shrinking"),
    (lambda net, sim: psn.verify.assert_reorder_tolerant(
        REACHABLE, {"link": [(1, 2)]}, [["-link(@1, 2)"]], complete="no"), "complete"),
    (lambda net, sim: psn.evaluate(REACHABLE, {"link": [(1, 2)]}, hidden="no"), "hidden"),
    (lambda net, sim: evaluate_spark(REACHABLE, {"link": [(1, 2)]}, hidden="no"), "hidden")])
def test_a_yes_or_no_parameter_takes_only_true_or_false(call, name):
    """``complete="no"`` was true: the assertion demanded a complete search;
    ``psn.evaluate(..., hidden="no")`` returned the localizer's auxiliaries; and
    ``psn.parse(text, check="no")`` ran the static checks, ``check=()`` skipped them."""
    net = psn.Network(REACHABLE, {"link": [(1, 2)]}).run()
    sim = psn.Simulation(REACHABLE, topologies.ring(4))
    with pytest.raises(InputError, match=f"^error: {name} must be True or False"):
        call(net, sim)
    assert sim.steps == [] and net.relations(hidden=True)["reachable"] == {(1, 2)}


@pytest.mark.parametrize("filename", [["p.ndl"], {"a": 1}, 3])
def test_parse_refuses_a_filename_that_is_not_a_name(tmp_path, filename):
    """psn.parse(text, filename=["p.ndl"]) kept the list as the program's file name: errors
    began "['p.ndl']:1:34:" and a simulation's metrics file held it as the program."""
    with pytest.raises(InputError, match="filename is the name errors give the text"):
        psn.parse(REACHABLE, filename=filename)
    program = psn.parse(REACHABLE, filename=tmp_path / "p.ndl")
    assert program.filename == str(tmp_path / "p.ndl")


def test_evaluate_takes_its_own_keywords_only():
    """psn.evaluate passed every other keyword on to ndlog.reference.evaluate: guard= was
    'ndlog.reference.evaluate() got multiple values for keyword argument guard' from
    inside it; the keywords are psn.evaluate's own now (a misspelt one is Python's error
    naming evaluate, as for every function of the API)."""
    with pytest.raises(TypeError, match=r"^evaluate\(\) got an unexpected keyword argument"):
        psn.evaluate(REACHABLE, {"link": [(1, 2)]}, guard=print)


@pytest.mark.parametrize("annotation", [["absorption"], 3, {"set": 1}])
def test_an_annotation_that_is_no_name_nor_scheme_is_refused(annotation):
    """Network(annotation=["absorption"]) ended in 'unhashable type: list' from the
    scheme registry, and annotation=3 in "unknown annotation scheme '3'"."""
    for run in (lambda: psn.Network(REACHABLE, annotation=annotation),
                lambda: psn.Simulation(REACHABLE, topologies.ring(4), annotation=annotation)):
        with pytest.raises(InputError, match="an annotation is a scheme name .* or a scheme "
                                             f"object, got {type(annotation).__name__}"):
            run()


@pytest.mark.parametrize("node", [{"a": 1}, [1], {1}])
def test_node_state_of_an_unhashable_node_is_refused(node):
    """Network.node_state([1]) and Network.node([1]) ended in 'TypeError: unhashable
    type: list' from the nodes' dict; no location value is unhashable."""
    net = psn.Network(REACHABLE, {"link": [(1, 2)]}).run()
    for call in (net.node_state, net.node):
        with pytest.raises(InputError, match="a node is named by its location value, got "
                                             f"{type(node).__name__}"):
            call(node)
    assert net.node_state(3) == {} and net.node_state(1)["reachable"] == {(1, 2): (1,)}


def test_a_placement_of_a_node_the_topology_lacks_is_refused():
    """It was ignored, and the node it meant placed by hash."""
    with pytest.raises(InputError, match="places node 9, which the 4-node topology does "
                                         "not have"):
        psn.Simulation(REACHABLE, topologies.ring(4), placement={0: 0, 9: 1}, workers=2)
    sim = psn.Simulation(REACHABLE, topologies.ring(4), placement={0: 0, 3: 1}, workers=2)
    assert sim.placement.worker_of(3) == 1


def test_csv_arity_against_the_program(tmp_path):
    path = write(tmp_path, "link.csv", "a,b\nb,c\n")
    assert read_facts_file(path) == {"link": [("a", "b"), ("b", "c")]}
    with pytest.raises(InputError) as info:
        read_facts_file(path, ARITIES)
    assert info.value.message == "link has 2 columns here, but arity 3 in the program"
    assert (info.value.line, info.value.column) == (1, 1)
    with pytest.raises(InputError, match="'lnk' is not used"):
        read_facts_file(write(tmp_path, "lnk.csv", "a,b,1\n"), ARITIES)


def test_program_arities_and_locations_accept_their_own_facts(tmp_path):
    program = psn.parse(REACHABLE)
    arities, locations = program.arities(), program_locations(program)
    assert (arities, locations) == ({"reachable": 2, "link": 2}, {"reachable": 0, "link": 0})
    path = write(tmp_path, "f.ndl", "link(@a, b). link(b, c).\n")
    assert read_facts_file(path, arities, locations) == {"link": [("a", "b"), ("b", "c")]}
    facts = read_facts_file(path, arities, locations)
    assert psn.evaluate(program, facts)["reachable"] == {("a", "b"), ("b", "c"), ("a", "c")}


# -- a burst syntax error explains the burst syntax -------------------------------------------

@pytest.mark.parametrize("text", ["link(@a, b, 1).\n+ 5\n", "link(@a, b, 1).\n:- x.\n"])
def test_facts_and_burst_syntax_errors_expect_only_what_such_a_file_holds(text):
    """They listed '#hidden' and 'materialize', which only a program may hold."""
    for parse_text in (lambda t: parse_burst(t, "b.txt"), lambda t: parse_facts(t, "f.ndl")):
        with pytest.raises(NDlogSyntaxError) as info:
            parse_text(text)
        assert info.value.message.endswith("; expected a name, end of input")
    with pytest.raises(NDlogSyntaxError, match="expected '#hidden', 'materialize', a name"):
        psn.parse(text)


@pytest.mark.parametrize("text,line", [
    ("+link(@a, b, 1).\n*link(@a, b, 1).\n", 2),
    ("+link(@a, b, 1)\n-link(@a, c, 1).\n", 1),
    ("+link(@a, b, 1).\n+ link(X, b, 1) :- q(X).\n", 2),
])
def test_burst_syntax_errors_hint_at_the_burst_syntax(text, line):
    with pytest.raises((NDlogSyntaxError, NDlogSemanticError)) as info:
        parse_burst(text, "b.txt")
    assert info.value.line == line
    assert info.value.hint.endswith(BURST_HINT)
    assert BURST_HINT == "each line is +fact. (insert), -fact. (delete) or fact. (insert)"
    assert info.value.render().splitlines()[-1] == f"hint: {info.value.hint}"


def test_facts_file_syntax_errors_have_no_burst_hint(tmp_path):
    with pytest.raises(NDlogSyntaxError) as info:
        read_facts_file(write(tmp_path, "f.ndl", "link(@a, b, 1).\n*link(@a, b, 1).\n"))
    assert BURST_HINT not in (info.value.hint or "")


# -- CSV header rows --------------------------------------------------------------------------

def test_csv_header_of_capitalized_names_is_skipped(tmp_path):
    path = write(tmp_path, "reachable.csv", "S,D\na,b\nb,c\n")
    assert read_facts_file(path) == {"reachable": [("a", "b"), ("b", "c")]}
    path = write(tmp_path, "link.csv", "\nSrc, Dst ,Cost_2\na,b,1\n")
    assert read_facts_file(path) == {"link": [("a", "b", 1)]}


@pytest.mark.parametrize("first", ["src,dst", "S,dst", "S,2", "S D,X", "@S,D", "S,"])
def test_csv_first_row_that_is_not_all_capitalized_names_is_data(tmp_path, first):
    path = write(tmp_path, "reachable.csv", f"{first}\na,b\n")
    rows = read_facts_file(path)["reachable"]
    assert len(rows) == 2 and rows[1] == ("a", "b")


def test_csv_header_counts_for_the_width_and_only_the_first_row_is_one(tmp_path):
    with pytest.raises(InputError, match="row has 2 columns, earlier rows have 3") as info:
        read_facts_file(write(tmp_path, "link.csv", "Src,Dst,Cost\na,b\n"))
    assert info.value.line == 2
    path = write(tmp_path, "names.csv", "Who,Whom\nAlice,Bob\n")
    assert read_facts_file(path) == {"names": [("Alice", "Bob")]}


def test_csv_values(tmp_path):
    path = write(tmp_path, "v.csv",
                 "1, -2 ,+3,2.5,1e3,infinity,-infinity,nan,inf,1_000,x y,\"a,b\",\n")
    (row,) = read_facts_file(path)["v"]
    assert row == (1, -2, 3, 2.5, 1000.0, float("inf"), float("-inf"), "nan", "inf", "1_000",
                   "x y", "a,b", "")


def test_csv_record_lines_count_quoted_newlines(tmp_path):
    path = write(tmp_path, "p.csv", 'a,"two\nlines"\nb,c,d\n')
    with pytest.raises(InputError, match="row has 3 columns") as info:
        read_facts_file(path)
    assert info.value.line == 3


# -- location specifiers of facts and bursts --------------------------------------------------

def test_fact_locating_another_argument_than_the_program(tmp_path):
    path = write(tmp_path, "f.ndl", "link(@a, b, 1).\nlink(a, @b, 1).\n")
    with pytest.raises(InputError) as info:
        read_facts_file(path, ARITIES, LOCATIONS)
    err = info.value
    assert err.message == "link has its '@' on argument 2 here, but on argument 1 in the program"
    assert (err.line, err.column) == (2, 10)
    assert caret_column(err) == 10


def test_burst_locating_another_argument_than_the_program():
    with pytest.raises(InputError, match="'@' on argument 2 here, but on argument 1 in the "
                       "program") as info:
        parse_burst("-link(2, @3, 1).\n", "b.txt", ARITIES, LOCATIONS)
    assert str(info.value.span) == "b.txt:1:11"


def test_facts_of_one_predicate_locating_two_arguments(tmp_path):
    path = write(tmp_path, "f.ndl", "link(a, @b, 1).\nlink(@a, b, 1).\n")
    with pytest.raises(InputError) as info:
        read_facts_file(path)
    assert info.value.message == "link has its '@' on argument 1 here, but on argument 2 at line 1"
    assert (info.value.line, info.value.column) == (2, 7)


def test_location_rules_that_accept():
    # the program locates the second argument: so may the facts
    program = psn.parse("r1 back(X, @Y) :- link(X, @Y).\n")
    locations = program_locations(program)
    assert locations == {"back": 1, "link": 1}
    facts = parse_facts("link(a, @b).\nlink(b, c).\n", "f.ndl", program.arities(), locations)
    assert [f.values for f in facts] == [("a", "b"), ("b", "c")]
    # a centralized program locates nothing: '@' only names an argument there
    central = psn.parse("r1 tc(X, Y) :- edge(X, Y).\n")
    facts = parse_facts("edge(@a, b).\nedge(c, @d).\n", "f.ndl", central.arities(),
                        program_locations(central))
    assert [f.values for f in facts] == [("a", "b"), ("c", "d")]
    # unknown locations: consistent positions are fine, wherever they are
    assert len(parse_facts("link(a, @b).\nlink(c, @d).\nlink(e, f).\n")) == 3


def test_fact_shapes_directly():
    shapes = FactShapes({"p": 1})
    shapes.check("p", 1, Span(1, 1, "x"), None)
    with pytest.raises(InputError, match="p has 2 things here, but arity 1 in the program"):
        shapes.check("p", 2, Span(2, 1, "x"), None, noun="thing")
    with pytest.raises(InputError) as info:
        FactShapes({}).check("p", 1, Span(1, 1, "x"), None)
    assert info.value.hint == "the program uses no predicates"


# -- rendering of odd source lines ------------------------------------------------------------

def test_caret_line_counts_lines_as_the_parser_does():
    # a form feed is blank space to the parser, not a line break
    with pytest.raises(NDlogSyntaxError) as info:
        psn.parse("p(a).\x0cq(a).\nr(a) s\n", "ff.ndl")
    assert info.value.line == 2
    assert info.value.render().splitlines()[1] == "    r(a) s"


def test_control_characters_are_shown_as_question_marks():
    with pytest.raises(NDlogSyntaxError) as info:
        psn.parse("p(a).\x00", "nul.ndl")
    assert info.value.render().splitlines()[1:3] == ["    p(a).?", "         ^"]



def test_long_source_lines_are_cut_around_the_column():
    text = "p(" + "a, " * 1000 + "$" + ", b" * 1000 + ")."
    with pytest.raises(NDlogSyntaxError) as info:
        psn.parse(text, "long.ndl")
    err = info.value
    assert err.column == 3003
    shown, caret = err.render().splitlines()[1:3]
    assert shown.startswith("    ...") and shown.endswith("...") and len(shown) < 120
    assert shown[caret.index("^")] == "$"


# -- materialize sizes ------------------------------------------------------------------------

SIZED = psn.parse("materialize(link, infinity, 2, keys(1, 2)).\n"
                  "r1 reachable(@S, D) :- link(@S, D).\n"
                  "r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).")
FULL = [(1, 2), (1, 3), (2, 1)]          # node 1 holds 2 links: its table is full


def test_base_facts_past_a_table_size_are_an_input_error_in_the_reference():
    assert psn.evaluate(SIZED, {"link": FULL})["reachable"] == {
        (s, d) for s in (1, 2) for d in (1, 2, 3)}
    with pytest.raises(InputError) as info:
        psn.evaluate(SIZED, {"link": FULL + [(1, 4)]})
    assert info.value.message == (
        "table 'link' holds at most 2 tuples per node (its materialize size), but the base "
        "facts give it 3 at node 1, e.g. link(@1, 4)")
    assert "does not evict" in info.value.hint
    keyed = psn.parse("materialize(link, infinity, 1, keys(1)).\nr1 reachable(@S, D) :- "
                      "link(@S, D).")     # a keyed replacement keeps one tuple
    assert psn.evaluate(keyed, {"link": [(1, 2), (1, 3)]})["reachable"] == {(1, 3)}


@pytest.mark.parametrize("annotation", ["absorption", "derivation", "dred"])
def test_a_burst_past_a_table_size_is_refused_whole_and_loses_nothing(annotation):
    from engine import Network
    net = Network(SIZED, {"link": FULL}, annotation=annotation).run()
    before = net.relations()
    with pytest.raises(InputError, match=r"gives? it 3 at node 1, e\.g\. link\(@1, 5\)"):
        net.apply([(1, "link", (2, 3)), (1, "link", (1, 5))])
    assert net.base_facts() == {"link": set(FULL)}
    assert net.run().relations() == before
    net.apply([(1, "link", (2, 3)), (-1, "link", (1, 3)), (1, "link", (1, 5))]).run()
    facts = {"link": {(1, 2), (2, 1), (2, 3), (1, 5)}}
    assert net.base_facts() == facts
    assert net.relations() == psn.evaluate(SIZED, facts)


# -- words where numbers go ---------------------------------------------------------------------

@pytest.mark.parametrize("options,message", [
    (["--topology-option", "rows=x", "--topology-option", "cols=3"],
     "error: topology grid: option rows must be a finite whole number, not 'x'"),
    (["--topology-option", "rows=3", "--topology-option", "cols=3",
      "--workload", "all; delete-links:x"],
     "error: bad workload phase 'delete-links:x' in 'all; delete-links:x': 'x' is not a whole "
     "number"),
    (["--topology-option", "rows=3", "--topology-option", "cols=3", "--workload", "insert:0.5,y"],
     "'y' is not a number"),
    (["--topology-option", "rows=3", "--topology-option", "cols=3", "--workload", "flap:1-b"],
     "'b' is not a whole number")])
def test_a_word_where_a_number_goes_is_named(options, message, capsys):
    from psn.cli import main
    assert main(["run", "examples/reachable.ndl", "--topology", "grid", *options]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "invalid literal" not in err


def test_the_size_of_a_table_no_rule_reads_is_per_node_too():
    """Its node is its first argument, where the engine would route its facts."""
    program = psn.parse("materialize(link, infinity, 2, keys(1, 2)).\nr1 p(@X) :- m(@X, _).\n")
    psn.evaluate(program, {"link": [(1, 2), (2, 3), (3, 4), (1, 3)]})
    with pytest.raises(InputError, match=r"3 at node 1, e\.g\. link\(@1, 4\)"):
        psn.evaluate(program, {"link": [(1, 2), (1, 3), (1, 4)]})


def test_a_flap_of_a_link_that_is_not_there_is_refused_after_the_steps_before_it(capsys):
    """The steps that ran are printed; the error names the link and the fix."""
    from psn.cli import main
    assert main(["run", "examples/reachable.ndl", "--topology", "ring", "--topology-option",
                 "n=6", "--workload", "insert:0.25;flap:0-1:1", "--seed", "1",
                 "--check"]) == 2
    captured = capsys.readouterr()
    assert "-- stopped before step 1; the steps before it:" in captured.out
    assert "insert 0.25" in captured.out and "check: ok" in captured.out
    assert "error: flap: link 0-1 is not a base fact now" in captured.err
    assert main(["run", "examples/reachable.ndl", "--topology", "line", "--topology-option",
                 "n=1", "--workload", "flap:1-2:1"]) == 2
    captured = capsys.readouterr()
    assert "error: flap: the topology has no link 1-2" in captured.err
    assert "Traceback" not in captured.err


DECLARED = ("materialize(extra, infinity, infinity, keys(1)).\n"
            "r1 reachable(@S, D) :- link(@S, D).\n")


def test_facts_of_a_declared_table_no_rule_uses_are_accepted_everywhere(tmp_path, capsys):
    """A table declared with materialize that no rule or fact uses takes its arity from
    its first fact, in Network, psn.evaluate and the command line alike; a fact of another
    arity is an error, and an undeclared predicate still is."""
    from psn.cli import main
    program = psn.parse(DECLARED)
    facts = {"extra": [(1, 5), (2, 6)], "link": [(1, 2)]}
    net = psn.Network(program, facts).run()
    assert net.relations()["extra"] == psn.evaluate(program, facts)["extra"] == \
        {(1, 5), (2, 6)}
    with pytest.raises(InputError, match="'extra' has arity 2"):
        psn.Network(program, {"extra": [(1, 5), (2, 6, 7)]})
    with pytest.raises(InputError, match="no predicate 'extr'"):
        psn.Network(program, {"extr": [(1, 5)]})
    prog = write(tmp_path, "p.ndl", DECLARED)
    good = write(tmp_path, "f.ndl", "extra(@1, 5).\nextra(@2, 6).\n")
    bad = write(tmp_path, "g.ndl", "extra(@1, 5).\nextra(@2, 6, 7).\n")
    for command in ("eval", "run"):
        assert main([command, str(prog), "--facts", str(good), "--relation", "extra"]) == 0
        assert "extra(2, 6)" in capsys.readouterr().out
        assert main([command, str(prog), "--facts", str(bad)]) == 2
        err = capsys.readouterr().err
        assert f"{bad}:2:1: error: extra has 3 arguments here, but arity 2 at line 1" in err
        assert "Traceback" not in err


RUNTIME_TYPE_ERROR = "p(@1, a).\nr1 s(@X, Z) :- p(@X, Y), Z := Y + 1.\n"


@pytest.mark.parametrize("evaluator", ["reference", "engine"])
def test_runtime_expression_errors_show_the_line_and_a_caret(evaluator):
    from engine import Network
    prog = psn.parse(RUNTIME_TYPE_ERROR, filename="s6.ndl")
    with pytest.raises(EvaluationError) as info:
        if evaluator == "reference":
            psn.evaluate(prog)
        else:
            Network(prog).run()
    err = info.value
    lines = err.render().splitlines()
    assert lines[0].startswith("s6.ndl:2:31: error: operator '+' expects numbers")
    assert lines[1] == "    r1 s(@X, Z) :- p(@X, Y), Z := Y + 1."
    assert caret_column(err) == 31


@pytest.mark.parametrize("evaluator", ["reference", "engine"])
def test_aggregate_selection_cost_error_shows_the_assignment(evaluator):
    from engine import Network
    from pathlib import Path
    sp = psn.load(Path(__file__).resolve().parent.parent / "examples" / "shortest_path.ndl")
    links = [("a", "b", 0), ("b", "c", 1)]
    with pytest.raises(EvaluationError) as info:
        if evaluator == "reference":
            psn.evaluate(sp, {"link": links})
        else:
            Network(sp, {"link": links}).run()
    err = info.value
    lines = err.render().splitlines()
    assert "strictly increase along rule sp2" in lines[0]
    assert (err.line, err.column) == (5, 52)
    assert lines[1].strip() == "P := f_prepend(S, P2), C := C1 + C2, L := L2 + 1."
    assert caret_column(err) == 52


def test_cli_runtime_error_shows_the_caret(tmp_path, capsys):
    from psn.cli import main
    program = write(tmp_path, "s6.ndl", RUNTIME_TYPE_ERROR)
    for command in ("eval", "run"):
        assert main([command, str(program)]) == 2
        err = capsys.readouterr().err.splitlines()
        at = next(i for i, line in enumerate(err) if "expects numbers" in line)
        assert err[at + 1] == "    r1 s(@X, Z) :- p(@X, Y), Z := Y + 1."
        assert err[at + 2] == "    " + " " * 30 + "^"


@pytest.mark.parametrize("body, message", [
    ("Z := Y + 1", "operator '+' expects numbers, got \"a\""),
    ("Y < 1, Z := 0", "cannot compare \"a\" < 1"),
    ("Z := f_size(Y)", "f_size expects a list, got \"a\""),
    ("Z := f_abs([Y])", "f_abs expects a number, got [\"a\"]"),
])
def test_runtime_errors_quote_string_values(body, message):
    prog = psn.parse(f"p(@1, a).\nr1 s(@X, Z) :- p(@X, Y), {body}.\n", filename="s.ndl")
    with pytest.raises(EvaluationError) as info:
        psn.evaluate(prog)
    assert info.value.message == message


# -- the Python API given values of the wrong kind ---------------------------------------------

def test_localize_takes_text_or_a_parsed_program():
    localized = psn.localize(REACHABLE)
    assert [r.name for r in localized.rules] == ["r1", "r2a", "r2b", "r2c"]
    assert psn.localize(psn.parse(REACHABLE)) == localized
    with pytest.raises(InputError, match="got NoneType"):
        psn.localize(None)


@pytest.mark.parametrize("field, kind", [
    ("max_memory", "non-negative"), ("max_updates", "non-negative"),
    ("derivation_budget", "positive"), ("derivation_total", "positive")])
@pytest.mark.parametrize("bad", ["zzz", -1, 1.5, True])
def test_run_options_refuse_a_limit_that_is_not_a_count(field, kind, bad):
    with pytest.raises(InputError, match=f"\\({field}\\) must be a {kind} integer"):
        psn.RunOptions(**{field: bad})
    assert getattr(psn.RunOptions(**{field: 3}), field) == 3


@pytest.mark.parametrize("flag", ["--derivation-budget", "--derivation-total"])
@pytest.mark.parametrize("bad", ["0", "-1"])
def test_a_derivation_budget_below_one_is_refused_with_one_message(flag, bad, capsys):
    """-1 was refused as not "a non-negative integer" and 0, which is one, as not "a
    positive integer": two rules for one option."""
    from psn.cli import main
    assert main(["run", str(EXAMPLES / "reachable.ndl"), "--annotation", "derivation",
                 flag, bad]) == 2
    err = capsys.readouterr().err
    assert f"must be a positive integer, not {bad}" in err and "non-negative" not in err


@pytest.mark.parametrize("field", ["batch", "roundtrip", "unsafe"])
@pytest.mark.parametrize("bad", ["no", 1, None])
def test_run_options_refuse_a_flag_that_is_not_a_bool(field, bad):
    """unsafe="no" was taken as true: a set-semantics run with deletions went unchecked."""
    with pytest.raises(InputError, match=f"{field} must be True or False, not "):
        psn.RunOptions(**{field: bad})
    with pytest.raises(InputError, match="unsafe must be True or False, not 'no'"):
        psn.verify(REACHABLE, {"link": [(1, 2)]}, [["-link(@1, 2)"]], annotation="set",
                   unsafe="no")
    assert getattr(psn.RunOptions(**{field: False}), field) is False


@pytest.mark.parametrize("burst, got", [("+link(@1, 5)", "str '+link(@1, 5)'"),
                                         ({"link": [(1, 5)]}, "dict {'link'"), (3, "int 3")])
def test_a_burst_that_is_not_a_list_of_updates_is_named(burst, got):
    """A string burst was read character by character ("unexpected end of input"), an int
    burst was a TypeError."""
    from engine import Network
    from sim import Simulation
    net = Network(REACHABLE, {"link": [(1, 2)]}).run()
    sim = Simulation(REACHABLE, "ring")
    for attempt in (lambda: net.apply(burst), lambda: sim.step(updates=burst)):
        with pytest.raises(InputError, match=f"a burst is a list of updates, got "
                                             f"{re.escape(got)}") as info:
            attempt()
        assert '["+link(@1, 2)"]' in info.value.hint
    assert net.apply(["+link(@1, 5)"]).run().relations()["link"] == {(1, 2), (1, 5)}


def test_callbacks_transports_and_bounds_of_the_wrong_kind_are_named_before_a_run():
    """on_node=3, heartbeat=3 and callback=3 were TypeErrors in the middle of a run (the
    callback's after the first step), transport=3 and processing=3 AttributeErrors, and
    run(max_polls=-1) or max_polls="3" ran unbounded."""
    from engine import Network
    from sim import Simulation
    net = Network(REACHABLE, {"link": [(1, 2)]})
    sim = Simulation(REACHABLE, "ring")
    tries = [(lambda: Network(REACHABLE, on_node=3), "on_node is a function of the new Node"),
             (lambda: Network(REACHABLE, transport=3), "transport is an engine.transport"),
             (lambda: net.run(heartbeat=3), "heartbeat is a function"),
             (lambda: net.run(max_polls=-1), "max_polls is a whole number >= 0 or None, "
                                             "got -1"),
             (lambda: net.run(max_polls="3"), "max_polls is a whole number"),
             (lambda: Simulation(REACHABLE, "ring", processing=3),
              "processing is a sim.ProcessingModel or a string such as '20us\\+50us', got "
              "int 3"),
             (lambda: sim.run_workload("all", callback=3), "callback is a function")]
    for attempt, what in tries:
        with pytest.raises(InputError, match=what):
            attempt()
    assert sim.steps == []
    assert net.run(max_polls=100).relations()["reachable"] == {(1, 2)}


def test_callbacks_that_cannot_take_their_call_are_refused_before_a_run(tmp_path):
    """A callback of the wrong shape failed only when first called: a Simulation's
    ``callback=lambda result: ...`` after the first step's work, a ``reference`` without
    ``aggsel`` at the first check of a run that prunes nothing."""
    from engine import Network
    from psn.experiment.executor import Cache, run_all
    from sim import Simulation
    net = Network(REACHABLE, {"link": [(1, 2)]})
    sim = Simulation(REACHABLE, "ring")
    tries = [(lambda: Network(REACHABLE, on_node=lambda: None),
              r"on_node is a function of the new Node, called as f\(a1\): .*<lambda> cannot "
              r"take that call \(too many positional arguments\)"),
             (lambda: net.run(heartbeat=lambda deliveries: None),
              r"heartbeat is a function \(deliveries, in_flight\), called as f\(a1, a2\)"),
             (lambda: sim.run_workload("all", callback=lambda result: None),
              r"callback is .*, called as f\(a1, a2\)"),
             (lambda: sim.run_workload("all", callback=lambda r, s, extra: None),
              r"missing a required argument: 'extra'"),
             (lambda: sim.step(insert={"link": [(0, 1)]}, heartbeat=lambda: None),
              r"heartbeat is a function \(deliveries, in_flight\)"),
             (lambda: Simulation(REACHABLE, "ring", aggsel="off",
                                 reference=lambda program, facts: {}),
              r"reference is .*, called as f\(a1, a2, aggsel=...\): .* unexpected keyword"),
             (lambda: run_all([], Cache(tmp_path), on_record=lambda spec: None),
              r"on_record is a function \(spec, record\), called as f\(a1, a2\)")]
    for attempt, what in tries:
        with pytest.raises(InputError, match=what):
            attempt()
    assert sim.steps == []
    # what the calls can take is accepted: defaults, *args, builtins without a signature
    Simulation(REACHABLE, "ring", reference=lambda program, facts, aggsel=True: {})
    assert sim.run_workload("insert", callback=lambda *args: None)[-1].label == "insert 1"
    assert net.run(heartbeat=lambda d, n, extra=0: None).relations()["reachable"] == {(1, 2)}


def test_multiset_of_a_relation_the_program_does_not_have_is_named():
    """multiset("lnk") was {}, as for a relation with no tuples."""
    from engine import Network
    net = Network(REACHABLE, {"link": [(1, 2)]}).run()
    with pytest.raises(InputError, match="the program has no relation 'lnk'") as info:
        net.multiset("lnk")
    assert info.value.hint == "did you mean 'link'?"
    assert net.multiset("reachable") == {(1, 2): 1} and net.multiset("r2_aux") == {}


@pytest.mark.parametrize("value, kind", [({2}, "set"), ({2: 3}, "dict"),
                                         ([1, {2}], "set"), (object(), "object"),
                                         (None, "NoneType"), (b"2", "bytes")])
def test_a_fact_value_that_cannot_be_stored_is_named(value, kind):
    from engine import Network
    net = Network(REACHABLE, {"link": [(1, 2)]}, annotation="absorption").run()
    tries = [lambda: psn.evaluate(REACHABLE, {"link": [(1, value)]}),
             lambda: Network(REACHABLE, {"link": [(1, value)]}),
             lambda: net.apply([(1, "link", (1, value))]),
             lambda: net.why("link", (1, value))]
    for attempt in tries:
        with pytest.raises(InputError, match=f"a fact of 'link' has a value NDlog cannot "
                                             f"hold: .* \\(of type {kind}\\)"):
            attempt()
    assert net.relations()["reachable"] == {(1, 2)}      # nothing was accepted


@pytest.mark.parametrize("value", [float("nan"), [2, float("nan")]])
def test_a_nan_in_a_fact_is_refused_since_it_could_never_be_deleted(value):
    """link(1, nan) was stored, and its deletion then matched no insertion (nan != nan)."""
    from engine import Network
    net = Network(REACHABLE, {"link": [(1, 2)]}).run()
    tries = [lambda: psn.evaluate(REACHABLE, {"link": [(1, value)]}),
             lambda: Network(REACHABLE, {"link": [(1, value)]}),
             lambda: net.apply([(1, "link", (1, value))])]
    for attempt in tries:
        with pytest.raises(InputError, match="a fact of 'link' has a value NDlog cannot "
                                             "hold: nan") as info:
            attempt()
        assert "never be matched or deleted" in info.value.hint
    assert net.relations()["link"] == {(1, 2)}


def test_other_number_types_in_facts_become_int_and_float():
    """A bool or a numpy number was stored as it was given, which the wire then refused
    (numpy) or printed as True; NDlog's numbers are int and float."""
    import numpy as np
    got = psn.evaluate(REACHABLE, {"link": [(np.int64(1), [True, np.float32(0.5)])]})
    (row,) = got["reachable"]
    assert row == (1, (1, 0.5)) and [type(v) for v in (row[0], *row[1])] == [int, int, float]


def test_lists_in_facts_are_stored_as_tuples_at_every_depth():
    got = psn.evaluate(REACHABLE, {"link": [(1, [2, (3, [4])])]})
    assert got["reachable"] == {(1, (2, (3, (4,))))}


def test_simulation_refuses_a_topology_or_workload_of_the_wrong_kind(tmp_path):
    from sim import Simulation
    with pytest.raises(InputError, match="got int 5"):
        Simulation(REACHABLE, 5)
    missing = tmp_path / "none.alt"
    with pytest.raises(InputError, match=f"cannot read topology file '{missing}'"):
        Simulation(REACHABLE, missing)
    sim = Simulation(REACHABLE, "ring")
    with pytest.raises(InputError, match="a workload is a SPEC string or a Workload, "
                                         "got int 5"):
        sim.run_workload(5)
    assert sim.steps == []


@pytest.mark.parametrize("ship", ["eager:1e400s", "eager:nanms", "eager:-infs"])
def test_a_ship_period_that_is_not_finite_is_refused(ship, capsys):
    """--ship eager:1e400s was taken, and the run reported its MinShip as "eager:infs"."""
    from psn.cli import main
    assert main(["run", str(EXAMPLES / "reachable.ndl"), "--ship", ship]) == 2
    out = capsys.readouterr()
    assert f"eager:T takes a finite period, not '{ship[6:]}'" in out.err
    assert "Traceback" not in out.err and out.out == ""


# -- workloads larger than the topology ---------------------------------------------------------

@pytest.mark.parametrize("workload, what", [
    ("delete-links:1000", "delete-links:1000 asks for more deletions than there are links to "
     "delete: the topology has 6 links, so at most 6"),
    ("all; delete-links:4; delete-links:3", "the topology has 6 links (4 of them deleted by "
     "the phases before), so at most 2"),
])
def test_more_deletions_than_links_are_refused_before_the_run(workload, what, capsys):
    """delete-links:1000 on a 6-link ring ran 6 deletions and said nothing."""
    from psn.cli import main
    assert main(["run", "examples/reachable.ndl", "--topology", "ring", "--topology-option",
                 "n=6", "--workload", workload]) == 2
    out = capsys.readouterr()
    assert what in out.err and "hint: ask for at most" in out.err
    assert out.out == ""
    assert main(["run", "examples/reachable.ndl", "--topology", "ring", "--topology-option",
                 "n=6", "--workload", "all; delete-links:4; all; delete-links:6"]) == 0


def test_demo_refuses_more_deletions_than_links_in_its_own_words(capsys):
    """psn demo --deletions 100000 deleted every link and reported 100000 asked for."""
    from psn.cli import main
    assert main(["demo", "--deletions", "100000", "--no-spark", "--no-ray"]) == 2
    err = capsys.readouterr().err
    assert "error: --deletions 100000 is more than the 156 links of the default GT-ITM " \
        "topology" in err and "hint: give --deletions 156 or fewer" in err


def test_demo_refuses_workers_for_a_replay_it_skips(capsys):
    """psn demo --workers 3 --no-ray ran without the replay and without a word on the
    --workers it ignored."""
    from psn.cli import main
    assert main(["demo", "--workers", "3", "--no-spark", "--no-ray"]) == 2
    err = capsys.readouterr().err
    assert "error: --workers 3 sets the Ray replay's workers, and --no-ray skips the " \
        "replay" in err and "hint: leave out --workers, or --no-ray" in err


def test_deletions_that_run_out_mid_run_stop_with_an_error():
    """A phase that finds no present link left (they expired, say) stops the run with an
    error naming how many it made, instead of ending early without a word."""
    import random

    import topologies
    from engine.workloads import DeleteLinks, TooManyDeletions, WorkloadContext
    ring = topologies.ring(4)
    ctx = WorkloadContext(ring, {"link": {(0, 1, 1), (1, 0, 1)}}, random.Random(0))
    steps = DeleteLinks(3).steps(ctx)
    assert next(steps).label == "delete 0-1"
    ctx.base = {"link": set()}
    with pytest.raises(TooManyDeletions, match="no present link is left to delete after 1"):
        next(steps)


@pytest.mark.parametrize("rule", ["Y := [Z]", "Y := f_prepend(Z, nil)",
                                  "Y := f_append([0], Z)"])
def test_a_list_wrapped_in_a_list_every_round_stops(rule):
    """'n(@X, Y) :- n(@X, Z), Y := [Z].' has no finite fixpoint, and its memory grows too
    slowly for --max-memory: psn eval, psn run (memory, sim) and psn reference ran until
    killed, each round slower than the last, and hashing values some 120,000 levels deep
    overflows the C stack (a crash). A list nested past MAX_VALUE_NESTING is now an
    EvaluationError at the expression, in every Python evaluator (shown here on a
    recursion bounded past it, which ends without the bound)."""
    from ndlog.builtins import MAX_VALUE_NESTING
    program = psn.parse(f"n(@X, 0, Y) :- seed(@X, Y).\nr2 n(@X, M, Y) :- n(@X, N, Z), "
                        f"{rule}, N < {MAX_VALUE_NESTING + 500}, M := N + 1.\n", "nest.ndl")
    facts = {"seed": [("a", 0)]}
    with pytest.raises(EvaluationError, match=f"nested more than {MAX_VALUE_NESTING:,} "
                       "levels deep") as ref:
        psn.evaluate(program, facts, max_memory=0)
    assert (ref.value.line, ref.value.column) == (2, 37)
    with pytest.raises(EvaluationError, match="no finite fixpoint") as run:
        Network(program, facts, annotation="set").run()
    assert (run.value.line, run.value.column) == (2, 37)


def test_a_product_beyond_its_bits_stops_a_squaring_recursion(tmp_path, capsys):
    """'n(@X, Y) :- n(@X, Z), Y := Z * Z + 2.' doubles its digits every round: psn eval and
    psn run went on until killed, a multiplication taking a minute after 25 rounds while
    memory stayed far below any ceiling. A product beyond MAX_PRODUCT_BITS is now an
    EvaluationError at the '*', in every Python evaluator; a product within it is kept
    exactly."""
    from ndlog.expr import MAX_PRODUCT_BITS
    from psn.cli import main
    square = "m(@X, Y) :- n(@X, Z), Y := Z * Z."
    fits = 2 ** (MAX_PRODUCT_BITS // 2 - 1)
    assert psn.evaluate(square, {"n": [(1, fits)]})["m"] == {(1, fits * fits)}
    with pytest.raises(EvaluationError, match=f"an integer of {MAX_PRODUCT_BITS // 2 + 1:,} "
                       f"bits \\* an integer of .* more than the {MAX_PRODUCT_BITS:,} a "
                       "product may have") as over:
        psn.evaluate(square, {"n": [(1, 2 * fits)]})
    assert (over.value.line, over.value.column) == (1, 28)
    program = tmp_path / "square.ndl"
    program.write_text("n(@X, Y) :- n(@X, Z), Y := Z * Z + 2.\n")
    facts = tmp_path / "f.ndl"
    facts.write_text("n(@1, 3).\n")
    for argv in (["eval", str(program), "--facts", str(facts)],
                 ["run", str(program), "--facts", str(facts)],
                 ["run", str(program), "--facts", str(facts), "--topology", "ring"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "square.ndl:1:28" in err and "no finite fixpoint" in err, argv
        assert "Traceback" not in err
