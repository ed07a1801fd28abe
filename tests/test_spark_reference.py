"""The Spark reference (psn.batch.spark) against the Python reference (psn.evaluate).

Every case of the golden corpus, seeded random graphs (10-30 nodes) for reachable and
shortest path, and the errors Python raises, all on one shared local Spark session.
"""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import networkx as nx
import pytest

import psn
from psn.batch.spark import SparkStats, evaluate_spark
from ndlog.check import compare_relations
from ndlog.errors import EvaluationError, InputError

from corpus import case_ids, load_case, CORPUS
from graphs import random_links, symmetric_links

pytestmark = pytest.mark.spark

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REACHABLE = (EXAMPLES / "reachable.ndl").read_text()
SHORTEST = (EXAMPLES / "shortest_path.ndl").read_text()


def _agree(expected, actual):
    diff = compare_relations(expected, actual)
    assert diff.ok, diff.render(limit=20)


@pytest.mark.parametrize("name", case_ids())
def test_corpus_case_equals_python_reference(spark, name):
    case = load_case(CORPUS / name)
    got = evaluate_spark(case.program, case.facts, session=spark)
    _agree(psn.evaluate(case.program, case.facts), got)
    if case.expected:
        _agree(case.expected, got)


@pytest.mark.parametrize("seed,n,m", [(1, 10, 25), (2, 20, 40)])
def test_random_reachable(spark, seed, n, m):
    rng = random.Random(seed)
    links = [(a, b) for a, b, _ in random_links(n, m, rng)]
    program = psn.parse(REACHABLE)
    stats = SparkStats()
    got = evaluate_spark(program, {"link": links}, session=spark, stats=stats)
    _agree(psn.evaluate(program, {"link": links}), got)
    g = nx.DiGraph(links)  # independent oracle: reachable = non-empty paths
    closure = {(s, d) for s in g for d in nx.descendants(g, s)}
    closure |= {(s, s) for s in g if any(s in nx.descendants(g, z) for z in g.successors(s))
                or g.has_edge(s, s)}
    assert got["reachable"] == closure
    assert stats.rounds["reachable"] >= 1


def test_random_reachable_symbol_nodes(spark):
    rng = random.Random(7)
    names = [f"n{i}" for i in range(15)]
    links = [(a, b) for a, b, _ in random_links(15, 30, rng, nodes=names)]
    program = psn.parse(REACHABLE)
    got = evaluate_spark(program, {"link": links}, session=spark)
    _agree(psn.evaluate(program, {"link": links}), got)
    assert all(isinstance(v, str) for t in got["reachable"] for v in t)


@pytest.mark.parametrize("seed,n,m", [(3, 10, 15)])
def test_random_shortest_path(spark, seed, n, m):
    rng = random.Random(seed)
    links = symmetric_links(n, m, rng)
    program = psn.parse(SHORTEST)
    got = evaluate_spark(program, {"link": links}, session=spark)
    _agree(psn.evaluate(program, {"link": links}), got)
    g = nx.DiGraph()
    g.add_weighted_edges_from(links)
    for s, d, c in got["minCost"]:  # independent oracle: Dijkstra
        if s != d:
            assert c == nx.dijkstra_path_length(g, s, d)
    for s, d, p, c in got["cheapestPath"]:
        assert p[0] == s and p[-1] == d and len(set(p)) == len(p)
        assert c == sum(g[a][b]["weight"] for a, b in zip(p, p[1:]))


def test_shortest_path_without_aggregate_selection(spark):
    links = symmetric_links(5, 5, random.Random(5))
    program = psn.parse(SHORTEST)
    got = evaluate_spark(program, {"link": links}, session=spark, aggsel=False)
    _agree(psn.evaluate(program, {"link": links}, aggsel=False), got)
    pruned = psn.evaluate(program, {"link": links})
    assert got["minCost"] == pruned["minCost"]
    assert got["path"] >= pruned["path"]


def test_progress_is_called_after_every_round(spark, capsys):
    chain = [(i, i + 1) for i in range(1, 5)]
    calls, stats = [], SparkStats()
    got = evaluate_spark(psn.parse(REACHABLE), {"link": chain}, session=spark, stats=stats,
                         progress=lambda *call: calls.append(call))
    assert len(got["reachable"]) == 10
    assert [c[:2] for c in calls] == [("reachable", r)
                                      for r in range(1, stats.rounds["reachable"] + 1)]
    assert sum(c[2] for c in calls) == 10 - len(chain) and calls[-1][2] == 0
    from psn.cli import main
    facts = Path(__file__).resolve().parent / "programs" / "reachable" / "facts.ndl"
    assert main(["reference", str(EXAMPLES / "reachable.ndl"), "--facts", str(facts),
                 "--progress"]) == 0
    err = capsys.readouterr().err
    assert "reference, reachable" in err and "round 1: 7 new" in err, err


def test_the_python_reference_reports_each_new_round_once():
    from psn.cli.reference_cmd import _with_progress
    calls, seen = [], []
    guard = _with_progress(lambda *call: seen.append(call), lambda *call: calls.append(call))
    from ndlog.reference import evaluate
    evaluate(psn.parse(REACHABLE), {"link": [(i, i + 1) for i in range(1, 5)]}, guard=guard)
    assert calls == [("reachable", r) for r in range(1, len(calls) + 1)] and len(calls) >= 3
    assert len(seen) > len(calls)             # the memory guard still sees every firing


def test_a_program_without_a_finite_fixpoint_shows_its_rounds_going_on(spark):
    """Spark's reference has no memory ceiling of its own: a caller sees the rounds."""

    class Enough(Exception):
        pass

    def progress(predicates, rounds, added):
        assert (predicates, added) == ("path", 2)
        if rounds == 4:
            raise Enough
    endless = ("p1 path(@S, D, P) :- link(@S, D), P := [S, D].\n"
               "p2 path(@S, D, P) :- link(@S, Z), path(@Z, D, P2), P := f_prepend(S, P2).\n")
    with pytest.raises(Enough):
        evaluate_spark(psn.parse(endless), {"link": [(1, 2), (2, 1)]}, session=spark,
                       progress=progress)


def test_runtime_errors_match_python(spark):
    program = psn.parse("q(X, Y, X / Y) :- n(X), n(Y).\nn(1). n(0).\n", "div.ndl")
    with pytest.raises(EvaluationError) as py_err:
        psn.evaluate(program)
    with pytest.raises(EvaluationError) as spark_err:
        evaluate_spark(program, session=spark)
    assert spark_err.value.span is not None
    assert spark_err.value.span.filename == "div.ndl"
    assert "division by zero" in spark_err.value.message
    assert "division by zero" in py_err.value.message


def test_nonpositive_cost_under_aggsel_is_an_error(spark):
    program = psn.parse(SHORTEST)
    links = [(1, 2, 1), (2, 3, 0), (3, 4, 1)]
    with pytest.raises(EvaluationError):
        psn.evaluate(program, {"link": links})
    with pytest.raises(EvaluationError) as err:
        evaluate_spark(program, {"link": links}, session=spark)
    assert "aggregate selection" in err.value.message
    # the hint's fix, in both of its Python forms ("off" read as true before)
    want = psn.evaluate(program, {"link": links}, aggsel=False)
    _agree(want, evaluate_spark(program, {"link": links}, session=spark, aggsel="off"))


def test_mixed_list_is_a_clear_input_error(spark):
    program = psn.parse("q(L) :- p(L).\n")
    with pytest.raises(InputError) as err:
        evaluate_spark(program, {"p": [((1, "a"),)]}, session=spark)
    assert "[1, a]" in err.value.message


def test_the_public_entry_checks_facts_and_reads_text_as_psn_evaluate(spark):
    from psn.batch import evaluate_spark as public
    text = "r1 p(X) :- link(X).\n"
    for call in (psn.evaluate, lambda p, f: public(p, f, session=spark)):
        with pytest.raises(InputError) as err:
            call(text, {"lnk": [(1,)]})
        assert err.value.message == "predicate 'lnk' is not used by the program"
        assert "link" in err.value.hint
    _agree(psn.evaluate(text, {"link": [(1,)]}), public(text, {"link": [(1,)]}, session=spark))


def test_a_constant_head_beside_a_recursive_join(spark):
    """Spark failed inside its optimizer ("key not found: c0#10L", its constraint
    propagation through a union) on a recursive relation with a rule whose head is a
    constant beside a rule joining the relation (found by differential fuzzing)."""
    program = psn.parse("p(N) :- link(1, N).\np(1) :- p(0).\np(N) :- p(N), link(N, 0).\n")
    facts = {"link": [(0, 2), (1, 0), (2, 1), (0, 1), (1, 2), (2, 0)]}
    got = evaluate_spark(program, facts, session=spark)
    assert got == psn.evaluate(program, facts) and got["p"] == {(0,), (1,), (2,)}


def test_an_integer_is_ordered_against_a_float_exactly(spark):
    """``<``, ``<=``, ``>``, ``>=`` between an integer and a float cast the integer to a
    float, which rounds beyond 2^53: ``2**53 + 1 > 2.0**53`` was false, and ``2**63 - 1 <
    2.0**63`` too. Both orders of the operands, whole and fractional floats, infinities
    and floats beyond 64 bits."""
    ops = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    text = "".join(f"{n}(X, Y) :- big(X), fl(Y), X {o} Y.\n"
                   f"r{n}(Y, X) :- fl(Y), big(X), Y {o} X.\n" for n, o in ops.items())
    big = [2**53 + 1, 2**53, -(2**53 + 1), 5, 4, -5, 0, 2**62, -2**63, 2**63 - 1]
    fl = [2.0**53, -2.0**53, 4.5, 5.0, -4.5, 0.0, float("inf"), float("-inf"), 1e300,
          -1e300, 2.0**63, -2.0**63]
    facts = {"big": [(x,) for x in big], "fl": [(y,) for y in fl]}
    program = psn.parse(text)
    got = evaluate_spark(program, facts, session=spark)
    assert got == psn.evaluate(program, facts)
    assert (2**53 + 1, 2.0**53) in got["gt"] and (2**63 - 1, 2.0**63) in got["lt"]


def test_min_max_and_aggregate_selection_order_integers_and_floats_exactly(spark):
    """``min``/``max`` over a group holding integers and floats, and aggregate selection
    over integer and float costs or group keys, compared an integer as a float, which
    rounds beyond 2^53: ``min`` of ``2**53 + 1`` and ``2.0**53`` was the integer, a cost of
    ``2**53 + 1`` tied with one of ``2.0**53`` and stayed, and nodes ``2**53 + 1`` and
    ``2.0**53`` were one group, so the costlier was dropped. Costs of ``2**54 + 2`` and
    ``2**54 + 1`` (both ``2.0**54``, and above it) tied."""
    b = 2 ** 53
    program = psn.parse("lo(G, min<X>) :- v(G, X).\nhi(G, max<X>) :- v(G, X).\n")
    pairs = [(b + 1, float(b)), (b - 1, float(b)), (2**63 - 1, 2.0**63), (-(b + 1), -float(b)),
             (b + 1, float(b + 2)), (b + 3, float(b + 2)), (5, 5.5)]
    facts = {"v": [(g, x) for g, pair in enumerate(pairs) for x in pair]}
    got = evaluate_spark(program, facts, session=spark)
    assert _typed(got) == _typed(psn.evaluate(program, facts))
    assert (0, float(b)) in got["lo"] and (0, b + 1) in got["hi"]
    program = psn.parse("sp1 cost(S, D, C) :- link(S, D, C).\n"
                        "sp2 cost(S, D, C) :- link(S, Z, C1), cost(Z, D, C2), C := C1 + C2.\n"
                        "sp3 best(S, D, min<C>) :- cost(S, D, C).\n")
    for links in ([(1, 2, b + 1), (1, 3, 1), (3, 2, float(b) - 1)],
                  [(1, 2, 2 * b + 2), (1, 3, 1), (3, 2, 2 * b), (1, 4, 0.5)],
                  [(1, b + 1, 5), (1, float(b), 3), (0, 1, 1), (1, 2, 7), (2, 2.0, 1)]):
        got = evaluate_spark(program, {"link": links}, session=spark)
        want = psn.evaluate(program, {"link": links})
        assert _typed(got) == _typed(want) and want["best"]
    assert {(1, b + 1, 5), (0, b + 1, 6), (1, float(b), 3)} <= got["best"]


def test_lists_of_integers_meet_lists_of_floats_exactly(spark):
    """A list of integers met a list of floats as floats, which round beyond 2^53:
    ``[2**53 + 1] == [2.0**53]`` held, a join on them matched, ``f_member`` found
    ``2.0**53`` in ``[2**53 + 1]`` and ``[2**53 + 1] > [2.0**53]`` did not hold. Equality,
    joins, ordering (lexicographic, shorter first on a common prefix), ``f_member`` and
    nested lists are exact, as in Python."""
    b = 2 ** 53
    ops = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    text = "".join(f"{n}(X, Y) :- li(X), lf(Y), X {o} Y.\n"
                   f"r{n}(Y, X) :- lf(Y), li(X), Y {o} X.\n" for n, o in ops.items())
    text += ("j(X) :- li(X), lf(X).\n"
             "m(X, Y) :- li(X), sf(Y), f_member(X, Y) == 1.\n"
             "n(Y, X) :- lf(Y), si(X), f_member(Y, X) == 1.\n"
             "nested(X, Y) :- lli(X), llf(Y), X == Y.\n"
             "nested_lt(X, Y) :- lli(X), llf(Y), X < Y.\n")
    facts = {"li": [((b + 1,),), ((b,),), ((1, 2),), ((1, b + 1),), ((1,),), ((),)],
             "lf": [((float(b),),), ((1.0, 2.0),), ((1.0, float(b)),), ((1.0, 2.0, 3.0),),
                    ((0.5,),)],
             "sf": [(float(b),), (2.0,)], "si": [(b + 1,), (2,), (b,)],
             "lli": [(((b + 1,), (2,)),), (((1,),),)],
             "llf": [(((float(b),), (2.0,)),), (((1.0,),),)]}
    program = psn.parse(text)
    got = evaluate_spark(program, facts, session=spark)
    assert got == psn.evaluate(program, facts)
    assert ((b + 1,), (float(b),)) in got["gt"] and ((b + 1,), (float(b),)) not in got["eq"]
    assert got["nested"] == {(((1,),), ((1.0,),))}
    assert (((b + 1,), (2,)), ((float(b),), (2.0,))) not in got["nested_lt"]


def test_a_value_reaching_a_relation_as_two_kinds_is_held_once(spark):
    """``1`` from one rule and ``1.0`` from another have different signatures: Spark kept
    both in the relation and derived from each (``q`` held ``(1, 0)`` and ``(1.0, 0.5)``,
    Python one of them), in a recursive relation too, and an aggregate counted ``[]`` from
    columns of lists of two kinds twice. A relation holds the value once, integers first."""
    cases = [("p(X) :- a(X). p(X) :- b(X). q(X, Y) :- p(X), Y := X / 2.\n",
              {"a": [(1,)], "b": [(1.0,)]}, "q", {(1, 0)}),
             ("p(X) :- a(X). p(X) :- b(X). p(Y) :- p(X), c(X, Y). q(X, Y) :- p(X), "
              "Y := X / 2.\n", {"a": [(2,)], "b": [(1.0,)], "c": [(2, 1), (1.0, 3)]},
              "q", {(1.0, 0.5), (2, 1), (3, 1)}),
             ("s(A) :- p(L), A := f_first(L). s(A) :- q(M), A := f_first(M). "
              "c(count<A>) :- s(A).\n", {"p": [(((), (1,)),)], "q": [(((), ("a",)),)]},
              "c", {(1,)})]
    for text, facts, pred, want in cases:
        program = psn.parse(text)
        got = evaluate_spark(program, facts, session=spark)
        assert _typed(got) == _typed(psn.evaluate(program, facts))
        assert got[pred] == want


def test_lists_mixing_integers_and_floats_are_refused(spark):
    """A column of lists of floats turns integers into floats: a list mixing them (given,
    or built by a rule) read back as ``[1.0, 2.5]``, and lists of integers that one group
    held beside lists of floats lost their kind (``[1]`` became ``[1.0]``). Spark refuses
    them, naming the fix; lists of one kind each, side by side, keep their kinds."""
    cases = [("d(Y) :- r(L), Y := f_first(L).\n", {"r": [((1, 2.5),)]}, InputError,
              "[1, 2.5]"),
             ("b(L) :- r(X), L := [X, 1].\n", {"r": [(2.5,)]}, EvaluationError,
              "mixing float and integer"),
             ("c(M) :- r(L, X), M := f_append(L, X).\n", {"r": [((1, 2), 2.5)]},
              EvaluationError, "mixing integer and float"),
             ("a(L, count<X>) :- r(L, X).\n", {"r": [((1,), 5), ((2.5,), 6)]},
              EvaluationError, "a list of integers and a list of floats in one column"),
             ("c(S, D, C) :- r(S, D, C).\n"
              "c(S, D, C) :- r(S, Z, C1), c(Z, D, C2), C := C1 + C2.\n"
              "b(S, D, min<C>) :- c(S, D, C).\n", {"r": [(1, (2,), 3), (1, (2.5,), 4)]},
              EvaluationError, "aggregate selection on 'c': the Spark reference cannot hold "
                               "a list of floats and a list of integers in one column")]
    for text, facts, error, said in cases:
        program = psn.parse(text)
        assert psn.evaluate(program, facts)            # Python evaluates every one
        with pytest.raises(error) as err:
            evaluate_spark(program, facts, session=spark)
        assert said in err.value.message
        assert "--engine python" in err.value.message + (err.value.hint or "")
    program = psn.parse("e(L) :- r(L).\nn(L, count<X>) :- s(L, X).\n")
    facts = {"r": [((1,),), ((2.5,),)], "s": [((1,), 1), ((3,), 2), ((), 3)]}
    got = evaluate_spark(program, facts, session=spark)
    assert _typed(got) == _typed(psn.evaluate(program, facts))
    assert {type(x) for (lst,) in got["e"] for x in lst} == {int, float}


@pytest.mark.parametrize("master", ["bogus://x", "local[x]", "spark:/h:7077", "", "local[0]",
                                    "local[00, 2]"])
def test_a_master_url_spark_would_not_take_is_refused_before_a_jvm_starts(master, capsys):
    """Spark's own refusal of a bad master came as a Java stack trace and a Python
    traceback; the URL is checked first (no session, no JVM is started for it)."""
    from psn.batch.session import get_session
    from psn.cli import main
    with pytest.raises(InputError, match="not a Spark master URL"):
        get_session(master or " ")
    program = Path(__file__).resolve().parent.parent / "examples" / "reachable.ndl"
    assert main(["reference", str(program), "--spark-master", master or " "]) == 2
    err = capsys.readouterr().err
    assert "not a Spark master URL" in err and "Traceback" not in err
    # psn run --check spark refuses it before the run, not at its first check
    assert main(["run", str(program), "--topology", "ring", "--check", "spark",
                 "--spark-master", master or " "]) == 2
    out = capsys.readouterr()
    assert "not a Spark master URL" in out.err and out.out == ""


@pytest.mark.parametrize("options, what", [
    (dict(master=3), "not a Spark master URL: 3"),
    (dict(master=["local[1]"]), r"not a Spark master URL: \['local\[1\]'\]"),
    (dict(session="local"), "session is a pyspark.sql.SparkSession, got str"),
    (dict(stats={}), "stats is a psn.batch.SparkStats, got dict"),
    (dict(progress=3), "progress is a function"),
    (dict(progress=lambda predicates, rounds: None),
     r"progress is .*called as f\(a1, a2, a3\): .*cannot take that call")])
def test_the_spark_reference_names_an_option_of_the_wrong_kind(options, what):
    """master=3 was a TypeError from the master URL's regular expression, session="local"
    an AttributeError ('str' object has no attribute 'conf'), stats={} an AttributeError
    after the whole evaluation; each is refused before any session starts."""
    from psn.batch import evaluate_spark as evaluate_spark_text
    with pytest.raises(InputError, match=what):
        evaluate_spark_text("r1 reachable(@S, D) :- link(@S, D).", {"link": [(1, 2)]},
                            **options)



def test_a_stopped_session_is_started_anew():
    """``psn.batch.stop_session`` stops the process's session and the next evaluation
    starts a new one (in a process of its own: the suite's session stays up). The JVM's
    error stream reaches stderr without its "Using incubator modules" warning."""
    import subprocess
    import sys
    script = (
        "import psn\n"
        "from psn.batch import evaluate_spark, get_session, stop_session\n"
        "stop_session()\n"                      # nothing running: nothing to do
        "first = get_session('local[1]')\n"
        "first.sparkContext._jvm.System.err.println('from the JVM')\n"
        "stop_session()\n"
        "assert first.sparkContext._jsc is None\n"
        "got = evaluate_spark(psn.parse('r(X, Y) :- e(X, Y).'), {'e': [(1, 2)]},\n"
        "                     master='local[1]')\n"
        "assert got['r'] == {(1, 2)} and get_session() is not first\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
    assert "from the JVM\n" in done.stderr and "incubator" not in done.stderr, done.stderr


def test_a_standalone_master_nobody_listens_on_is_refused_at_once(capsys):
    """Spark retries an unreachable standalone master for about a minute and then fails
    with a Java error; a master whose port refuses connections is refused before that."""
    import socket
    from ndlog.errors import EvaluationError
    from psn.batch.session import check_reachable
    from psn.cli import main
    with socket.socket() as probe:                 # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    master = f"spark://127.0.0.1:{port}"
    with pytest.raises(EvaluationError, match="cannot reach the Spark master") as err:
        check_reachable(master)                    # what starting a session does first
    assert f"127.0.0.1:{port}" in err.value.message and "local" in err.value.hint
    program = Path(__file__).resolve().parent.parent / "examples" / "reachable.ndl"
    assert main(["run", str(program), "--topology", "ring", "--check", "spark",
                 "--spark-master", master]) == 2
    out = capsys.readouterr()
    assert "cannot reach the Spark master" in out.err and out.out == ""
    for bad in ("spark://nohost", "spark://h:99999", "spark://h:\u00b2"):
        with pytest.raises(InputError, match="not a Spark master URL"):
            check_reachable(bad)
    check_reachable("local[2]")                    # only standalone masters are probed


def test_an_interrupt_during_spark_is_plain(spark):
    """Ctrl-C during a Spark job printed Python tracebacks before 'psn: interrupted':
    PySpark's own SIGINT handler calls into the JVM from inside the signal handler
    ('reentrant call'), and py4j logs the interrupted call with its traceback. Once the
    session runs, Ctrl-C raises KeyboardInterrupt plainly and py4j's log is dropped."""
    import logging
    import signal
    import threading
    from psn.batch.session import get_session
    assert get_session() is spark
    if threading.current_thread() is threading.main_thread():
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    here = logging.LogRecord("root", logging.ERROR, "/x/site-packages/py4j/java_gateway.py",
                             1, "KeyboardInterrupt while sending command.", None, None)
    mine = logging.LogRecord("root", logging.ERROR, "/x/psn/cli/run_cmd.py", 1, "m", None,
                             None)
    root = logging.getLogger()
    assert not root.filter(here) and root.filter(mine)
    assert not logging.getLogger("py4j.clientserver").isEnabledFor(logging.CRITICAL)


# -- found by differential fuzzing of the two references (random programs and facts) ------
def test_float_remainder_by_zero_is_an_evaluation_error_in_both(spark):
    """``X % 0.0`` crashed the Python reference with math.fmod's ValueError (a traceback);
    it is a division by zero, as in Spark, and ``infinity % 2.0`` is not a number (an
    error in both)."""
    program = psn.parse("q(X, Y) :- a(X), Y := -4 % X.\n", "mod.ndl")
    for run in (psn.evaluate, lambda p, f: evaluate_spark(p, f, session=spark)):
        with pytest.raises(EvaluationError, match="division by zero"):
            run(program, {"a": [(0.0,)]})
    program = psn.parse("q(X, Y) :- a(X), Y := X % 2.0.\n")
    facts = {"a": [(float("-inf"),), (-7.5,)]}
    for run in (psn.evaluate, lambda p, f: evaluate_spark(p, f, session=spark)):
        with pytest.raises(EvaluationError, match="not a number"):
            run(program, facts)
    facts = {"a": [(-7.5,), (5,)]}
    got = evaluate_spark(program, facts, session=spark)
    _agree(psn.evaluate(program, facts), got)
    assert got["q"] == {(-7.5, -1.5), (5, 1.0)}


def test_nil_beside_nested_lists_in_one_column(spark):
    """A column holding ``nil`` and lists of lists: ``nil`` was stored as an array of
    strings, which Spark cannot cast to an array of arrays (a raw DATATYPE_MISMATCH)."""
    program = psn.parse("q(X) :- lst(X, [[1]]).\n"
                        "r(X, M) :- lst(X, L), M := [L, [[2]]].\n"
                        "s(X) :- lst(X, L), L != [[3, 4]].\n")
    facts = {"lst": [(1, ()), (2, ((1,),)), (3, ((3, 4),))]}
    got = evaluate_spark(program, facts, session=spark)
    _agree(psn.evaluate(program, facts), got)
    assert got["q"] == {(2,)} and got["s"] == {(1,), (2,)}
    assert (1, ((), ((2,),))) in got["r"]


def test_an_assignment_nothing_reads_still_raises(spark):
    """Spark dropped the column of an assigned variable that nothing reads, and with it
    the error of its expression: Python raises on every row, so must Spark."""
    for text, facts in [("q(X) :- a(X), Y := X / 0.\n", {"a": [(1,)]}),
                        ("q(X) :- a(X), Y := X / 0.\n", {"a": [(1.5,)]}),
                        ("r(X) :- a(X), Y = f_first(nil).\n", {"a": [(1,)]})]:
        program = psn.parse(text, "unread.ndl")
        with pytest.raises(EvaluationError) as py_err:
            psn.evaluate(program, facts)
        with pytest.raises(EvaluationError) as spark_err:
            evaluate_spark(program, facts, session=spark)
        assert spark_err.value.span.filename == "unread.ndl"
        assert spark_err.value.message.split(" in ")[0] in py_err.value.message
    program = psn.parse("q(X) :- a(X), Y := X / 2.\n")
    assert evaluate_spark(program, {"a": [(1,)]}, session=spark)["q"] == {(1,)}


@pytest.mark.parametrize("expr", ["(X + 4611686018427387904) * 4",
                                  "-9223372036854775807 - X - 2",
                                  "-(-9223372036854775807 - X - 1)",
                                  "f_abs(-9223372036854775807 - X - 1)",
                                  "(-9223372036854775807 - X - 1) / -1"])
def test_an_integer_beyond_64_bits_is_refused_by_name(spark, expr):
    """An integer result beyond 64 bits failed with Spark's raw ARITHMETIC_OVERFLOW text
    (suggesting to turn ANSI mode off); it is the documented 64-bit refusal."""
    program = psn.parse(f"q(X, Y) :- a(X), Y := {expr}.\n")
    assert len(psn.evaluate(program, {"a": [(0,)]})["q"]) == 1
    with pytest.raises(EvaluationError, match="exceeds 64 bits") as err:
        evaluate_spark(program, {"a": [(0,)]}, session=spark)
    assert err.value.span is not None and "use --engine python" in err.value.message


def test_a_count_counts_equal_assignments_of_different_kinds_once(spark):
    """Spark counted the assignments of each combination of signatures apart: ``1`` and
    ``1.0`` (equal in NDlog) twice, and a body without variables once per signature."""
    program = psn.parse("q(X) :- a(X).\nq(X) :- b(X).\nc(count<X>) :- q(X).\n"
                        "d(count<*>) :- lst(_).\n")
    facts = {"a": [(1,)], "b": [(1.0,)], "lst": [((5,),), ((1.5, 2.0),), (("z",),)]}
    got = evaluate_spark(program, facts, session=spark)
    _agree(psn.evaluate(program, facts), got)
    assert got["c"] == {(1,)} and got["d"] == {(1,)}


NOT_A_NUMBER_RULES = [
    ("q(X, Y) :- a(X), Y := X - X.", "infinity - infinity is not a number"),
    ("q(X, Y) :- a(X), Y := 0 * X.", "0 * infinity is not a number"),
    ("q(X, Y) :- a(X), Y := X / X.", "infinity / infinity is not a number"),
    ("q(X, Y) :- a(X), Y := X % 3.", "infinity % 3 is not a number"),
    ("q(X, Y) :- a(X), Y := f_dist([X, 1.0], [X, 2.0]).",
     "f_dist of [infinity, 1.0] and [infinity, 2.0] is not a number"),
    ("q(X, sum<Y>) :- a(X), b(Y).", "sum<...> in rule rule1: the sum of infinity and "
                                    "-infinity is not a number"),
    ("q(X, avg<Y>) :- a(X), b(Y).", "avg<...> in rule rule1: the sum of infinity and"),
]


@pytest.mark.parametrize("rule,python", NOT_A_NUMBER_RULES)
def test_a_result_that_is_not_a_number_is_an_error_in_both(spark, rule, python):
    """``infinity - infinity`` was a nan value: in Python it equals nothing (itself
    included), so a fact holding it was never matched by a join of another copy, and the
    engine could never delete it. Every operation that makes one is an error in the Python
    reference and in Spark, each naming the position."""
    program = psn.parse(rule + "\n", "nan.ndl")
    used = {"a", "b"} if "b(Y)" in rule else {"a"}
    facts = {"a": [(float("inf"),)], "b": [(float("inf"),), (float("-inf"),)]}
    facts = {p: rows for p, rows in facts.items() if p in used}
    with pytest.raises(EvaluationError, match=re.escape(python)) as info:
        psn.evaluate(program, facts)
    assert "nan.ndl:1:" in str(info.value) and "never be matched or deleted" in str(info.value)
    with pytest.raises(EvaluationError, match="is not a number") as info:
        evaluate_spark(program, facts, session=spark)
    assert "nan.ndl:1:" in str(info.value)
    if "f_dist" not in rule:   # an infinity beside a finite value keeps its IEEE answer
        facts = {"a": [(2.5,)], "b": [(float("inf"),), (1.0,)]}
        facts = {p: rows for p, rows in facts.items() if p in used}
        _agree(psn.evaluate(program, facts), evaluate_spark(program, facts, session=spark))


def test_an_integer_beyond_the_float_range_in_float_arithmetic(spark):
    """An integer beyond 1.8e308 met by a float (``X * 1.5``, an ``f_dist`` coordinate)
    raised a raw OverflowError from the Python reference; and an ``f_dist`` whose square
    overflows was one too in Python (``(1e200) ** 2``), and ``infinity`` in Spark. Both are
    errors naming the value; the Spark reference holds 64-bit integers only."""
    big = 10 ** 400
    for rule, want in [("q(Y) :- a(X), Y := X * 1.5.", "an integer of 401 digits * 1.5 is "
                        "beyond the float range"),
                       ("q(Y) :- a(X), Y := 2.0 / X.", "2.0 / an integer of 401 digits"),
                       ("q(Y) :- a(X), Y := f_dist([X], [0]).",
                        "f_dist of [an integer of 401 digits] and [0] is beyond")]:
        with pytest.raises(EvaluationError, match=re.escape(want)):
            psn.evaluate(psn.parse(rule), {"a": [(big,)]})
    program = psn.parse("q(Y) :- a(X), Y := f_dist([X, 0.0], [0.0, X]).\n", "far.ndl")
    for run in (psn.evaluate, lambda p, f: evaluate_spark(p, f, session=spark)):
        with pytest.raises(EvaluationError, match="far.ndl:1:.*beyond the float range"):
            run(program, {"a": [(1e200,)]})
    facts = {"a": [(1e150,), (float("inf"),)]}
    got = evaluate_spark(program, facts, session=spark)
    _agree(psn.evaluate(program, facts), got)
    (near,), (far,) = sorted(got["q"])
    assert math.isclose(near, math.sqrt(2) * 1e150) and far == float("inf")


def test_aggregate_selection_over_integer_and_float_costs(spark):
    """Shortest path whose costs mix integers and floats was refused by the Spark reference
    ("needs one kind per argument"); the two kinds compete in one group as they do in
    Python. Nodes that mix them make path vectors that mix them, which Spark refuses (it
    held the integers as floats). Costs that mix numbers and strings are an evaluation
    error in both (Python's aggregate selection raised a TypeError)."""
    program = psn.parse(SHORTEST)
    links = [(1, 2, 1), (2, 3, 2.5), (1, 3, 4), (3, 1, 1)]
    got = evaluate_spark(program, {"link": links}, session=spark)
    want = psn.evaluate(program, {"link": links})
    assert _typed(got) == _typed(want)
    assert {type(t[3]) for t in got["path"]} == {int, float}   # the costs
    with pytest.raises(EvaluationError, match="cannot build a list mixing integer and float"):
        evaluate_spark(program, {"link": links + [(3, 1.0, 2)]}, session=spark)
    bad = [(1, 2, 1), (2, 3, "x")]
    program = psn.parse("sp1 path(S, D, C) :- link(S, D, C).\n"
                        "sp2 path(S, D, C) :- link(S, Z, C1), path(Z, D, C2), C := C1 + C2.\n"
                        "sp3 best(S, D, min<C>) :- path(S, D, C).\n")
    for run in (psn.evaluate, lambda p, f: evaluate_spark(p, f, session=spark)):
        with pytest.raises(EvaluationError, match="aggregate selection on 'path'"):
            run(program, {"link": bad + [(2, 3, 4)]})


def _typed(rels):
    """Relations with each value's type beside it (within lists too), so ``1`` and ``1.0``
    differ."""
    return {p: {tuple(_with_type(v) for v in t) for t in r} for p, r in rels.items()}


def _with_type(value):
    if isinstance(value, tuple):
        return "list", tuple(_with_type(v) for v in value)
    return type(value).__name__, value


def test_a_term_keeps_the_kind_python_gives_it_row_by_row(spark):
    """``f_min``/``f_max`` of an integer and a float is the integer in some rows and the
    float in others; Spark held both as a float, so ``f_min(X, 4.5) / 2`` with ``X = 3``
    was ``1.5`` where Python's is ``1`` (integer division). In assignments, head
    arguments, comparisons, negations, nested, and as a group key."""
    program = psn.parse(
        "q(X, Y) :- a(X), Y := f_min(X, 4.5) / 2.\n"
        "h(X, f_max(X, 4.5) / 2) :- a(X).\n"
        "t(X) :- a(X), f_min(X, 4.5) / 2 == 1.\n"
        "n(X, Y) :- a(X), Y := f_min(f_max(X, 2.5), 5) / 2.\n"
        "u(X) :- a(X), not b(f_min(X, 4.5) / 2).\n"
        "c(Z, count<X>) :- a(X), Z := f_min(X, 4.5) / 2.\n")
    facts = {"a": [(1,), (3,), (4,), (7,), (9,)], "b": [(1,), (3.5,)]}
    want = psn.evaluate(program, facts)
    got = evaluate_spark(program, facts, session=spark)
    assert _typed(got) == _typed(want)
    assert got["q"] == {(1, 0), (3, 1), (4, 2), (7, 2.25), (9, 2.25)}
    assert {type(y) for _, y in got["q"]} == {int, float}


def test_aggregates_over_integers_and_floats_keep_each_group_kind(spark):
    """``min``/``max`` take the kind of the value they pick and ``sum`` is an integer
    unless a float is summed, group by group; Spark gave ``7.0`` for a group of integers
    once the relation held a float anywhere. A key that is an integer in one assignment
    and a float in another is one group, as in Python."""
    program = psn.parse("lo(G, min<X>) :- a(G, X).\nhi(G, max<X>) :- a(G, X).\n"
                        "s(G, sum<X>) :- a(G, X).\nv(G, avg<X>) :- a(G, X).\n"
                        "c(G, count<X>) :- a(G, X).\nk(X, count<G>) :- a(G, X).\n")
    facts = {"a": [(1, 7), (1, 9), (2, 3), (2, 2.5), (3, 4.5), (3, 4), (4, 1.5),
                   (5, 2**61), (5, 2**61 + 1), (6, 3.0)]}
    want = psn.evaluate(program, facts)
    got = evaluate_spark(program, facts, session=spark)
    assert _typed(got) == _typed(want)
    assert (1, 7) in got["lo"] and type(dict(got["lo"])[1]) is int
    assert dict(got["s"])[5] == 2**62 + 1 and type(dict(got["s"])[2]) is float
    assert dict(got["k"])[3] == 2  # 3 (group 2) and 3.0 (group 6) are one key


def test_a_variable_keeps_its_first_binding_and_equality_is_exact(spark):
    """A variable bound by two atoms keeps the value (and kind) of the one that binds it
    first, as Python's plan does; Spark cast both to a float. An integer equals a float
    only where they are equal as numbers: Spark compared them as floats, so ``2**53 + 1``
    equalled ``2.0**53``."""
    program = psn.parse("q(X, Y) :- a(X), b(X), Y := X / 2.\n"
                        "j(X) :- big(X), fl(X).\n"
                        "e(X) :- big(X), X == 9007199254740992.0.\n"
                        "k(X) :- big(X), not fl(X).\n"
                        "m(X) :- pair(X, X).\n")
    facts = {"a": [(3,), (5.0,)], "b": [(3.0,), (5,)], "big": [(2**53 + 1,), (2**53,)],
             "fl": [(2.0**53,)], "pair": [(2**53 + 1, 2.0**53), (4, 4.0)]}
    want = psn.evaluate(program, facts)
    got = evaluate_spark(program, facts, session=spark)
    assert _typed(got) == _typed(want)
    assert _typed(got)["q"] == {(("int", 3), ("int", 1)), (("float", 5.0), ("float", 2.5))}
    assert got["j"] == got["e"] == {(2**53,)} and got["k"] == {(2**53 + 1,)}


def test_aggregate_selection_checks_an_integer_cost_against_a_float_exactly(spark):
    """Aggregate selection checks that a recursive rule strictly worsens the cost; Spark
    compared the integer cost with the float one as floats, which round beyond 2^53:
    ``0.5 + (2**53 + 3)`` is ``2.0**53 + 4``, above ``2**53 + 3``, but equal to it as a
    float, so Spark refused the derivation that Python accepts (found by differential
    fuzzing)."""
    program = psn.parse("c(S, D, C) :- r(S, D, C).\n"
                        "c(S, D, C) :- r(S, Z, C1), c(Z, D, C2), C := C1 + C2.\n"
                        "b(S, D, min<C>) :- c(S, D, C).\n")
    facts = {"r": [(1, 2, 0.5), (2, 3, 2**53 + 3)]}
    got = evaluate_spark(program, facts, session=spark)
    want = psn.evaluate(program, facts)
    assert _typed(got) == _typed(want) and (1, 3, 2.0**53 + 4) in got["b"]
    facts = {"r": [(1, 2, 1.0), (2, 3, 2**53 + 1)]}  # 2.0**53 is below 2**53 + 1
    for run in (psn.evaluate, lambda p, f: evaluate_spark(p, f, session=spark)):
        with pytest.raises(EvaluationError, match="needs C to strictly increase"):
            run(program, facts)


def test_the_distance_of_integer_positions_is_exact(spark):
    """``f_dist`` of two lists of integers cast them to floats first, which round beyond
    2^53: ``f_dist([2**53 + 1], [2**53])`` was ``0.0`` on Spark and ``1.0`` in Python,
    which squares the exact differences and rounds their sum once (found by differential
    fuzzing). Floats, and integers beside floats, are float arithmetic in both."""
    b = 2 ** 53
    program = psn.parse("q(P, Q, D) :- pos(N, P), pos(N, Q), D := f_dist(P, Q).\n")
    points = [(b + 1,), (b,), (b + 1, -b), (3, 4), (0, 0), (2**63 - 1, -2**63),
              (-2**63, 2**63 - 1), (0.5, 2.0), (float(b), 0.0), (), (123456789, 987654321),
              (94906267, 94906265)]
    facts = {"pos": [(len(p), p) for p in points]}
    got = evaluate_spark(program, facts, session=spark)
    want = psn.evaluate(program, facts)
    assert _typed(got) == _typed(want)
    assert ((b + 1,), (b,), 1.0) in got["q"] and ((3, 4), (0, 0), 5.0) in got["q"]


def test_the_smaller_of_an_integer_and_a_float_is_picked_exactly(spark):
    """``f_min``/``f_max`` of an integer and a float chose between them as floats, which
    round beyond 2^53: ``f_min(2**53 + 1, 2.0**53)`` was the integer (Python's is the
    float, below it) and ``f_max(2**63 - 1, 2.0**63)`` the integer too. Of a list of
    integers and a list of floats, both were cast to lists of floats: ``f_min([1], [2.5])``
    was ``[1.0]`` (Python's is ``[1]``). The result is the argument Python picks, compared
    exactly, with its kind (found by differential fuzzing)."""
    b = 2 ** 53
    program = psn.parse("lo(X, Y, M) :- p(X, Y), M := f_min(X, Y).\n"
                        "hi(X, Y, M) :- p(X, Y), M := f_max(Y, X).\n"
                        "h(X, Y) :- p(X, Y), f_max(X, Y) == X.\n")
    facts = {"p": [(b + 1, float(b)), (float(b), b + 1), (2**63 - 1, 2.0**63), (b - 1, float(b)),
                   (3, 2.5), ((1,), (2.5,)), ((b + 1,), (float(b),)), ((3, 1), (3.0,)),
                   (((1,), (2,)), ((1.0,), (2.0,))), (((b + 1,),), ((float(b),),)),
                   ((), (0.5,)), ((2,), (2.0,))]}
    got = evaluate_spark(program, facts, session=spark)
    want = psn.evaluate(program, facts)
    assert _typed(got) == _typed(want)
    assert (b + 1, float(b), float(b)) in got["lo"] and (2**63 - 1, 2.0**63, 2.0**63) in got["hi"]
    assert ((1,), (2.5,), (1,)) in got["lo"] and ((b + 1,), (float(b),), (b + 1,)) in got["hi"]


def test_a_list_appended_or_prepended_is_one_element(spark):
    """``f_append(L, X)`` and ``f_prepend(X, L)`` with a list ``X`` added its elements, as
    ``f_concat`` does, where Python adds ``X`` as one element: ``f_append(nil, [2])`` was
    ``[2]`` (Python's is ``[[2]]``) and ``f_append([[1]], [2])`` was refused as a list
    mixing kinds (found by differential fuzzing)."""
    program = psn.parse("a(L, X, M) :- p(L, X), M := f_append(L, X).\n"
                        "b(L, X, M) :- p(L, X), M := f_prepend(X, L).\n")
    facts = {"p": [((), (2,)), (((1,),), (2,)), (((1.5,),), (2.5, 3.0)), ((), ()),
                   (((),), ((4,),))]}
    got = evaluate_spark(program, facts, session=spark)
    want = psn.evaluate(program, facts)
    assert _typed(got) == _typed(want)
    assert ((), (2,), ((2,),)) in got["a"] and (((1,),), (2,), ((2,), (1,))) in got["b"]


def test_lists_whose_kinds_differ_are_ordered_as_far_as_python_orders_them(spark):
    """An ordering comparison or ``f_min``/``f_max`` of two lists whose element kinds do
    not unify (a list of lists of integers and one of lists of strings) was always an
    error on Spark; Python orders them element by element and raises only at a pair it
    cannot order, so ``[[], [1]] < [["a"]]`` holds (``[] < ["a"]`` decides) while
    ``[[1]] < [["a"]]`` is an error (found by differential fuzzing)."""
    program = psn.parse("lt(L, M) :- p(L), q(M), L < M.\n"
                        "ge(L, M) :- p(L), q(M), L >= M.\n"
                        "lo(L, M, X) :- p(L), q(M), X := f_min(L, M).\n"
                        "hi(L, M, X) :- p(L), q(M), X := f_max(M, L).\n")
    facts = {"p": [(((), (1,)),), (((),),), ((),)], "q": [((("a",),),), ((("b",), ()),)]}
    got = evaluate_spark(program, facts, session=spark)
    want = psn.evaluate(program, facts)
    assert _typed(got) == _typed(want)
    assert (((), (1,)), (("a",),)) in got["lt"] and (((),), (("b",), ())) in got["lt"]
    assert (((), (1,)), (("a",),), ((), (1,))) in got["lo"]
    for rule in ("r(L, M) :- p(L), q(M), L < M.\n", "r(X) :- p(L), q(M), X := f_max(L, M).\n"):
        program = psn.parse(rule)
        facts = {"p": [(((), (1,)),)], "q": [(((), ("b",)),)]}   # 1 < "b" is an error
        for run in (psn.evaluate, lambda p, f: evaluate_spark(p, f, session=spark)):
            with pytest.raises(EvaluationError, match="cannot compare"):
                run(program, facts)


def test_empty_lists_of_columns_of_different_kinds_are_equal(spark):
    """A column of lists of integers can hold ``[]`` (``f_first([[], [1]])``), and so can
    one of lists of strings; Spark took values of kinds that do not unify as never equal,
    so the two ``[]`` did not join, ``==`` between them was false, ``not`` kept them and
    ``f_member`` did not find one in a list of the other, where Python finds them equal
    (found by differential fuzzing)."""
    program = psn.parse("s(A) :- p(L), A := f_first(L).\n"
                        "t(A) :- q(M), A := f_first(M).\n"
                        "j(A) :- s(A), t(A).\n"
                        "e(A, B) :- s(A), t(B), A == B.\n"
                        "d(A, B) :- s(A), t(B), A != B.\n"
                        "n(A) :- s(A), not t(A).\n"
                        "m(L, A) :- q(L), s(A), f_member(L, A) == 1.\n"
                        "k(L) :- p(L), q(L).\n")
    facts = {"p": [(((), (1,)),), (((1,),),), (((), ()),)],
             "q": [(((), ("a",)),), ((("b",),),), (((), ()),)]}
    got = evaluate_spark(program, facts, session=spark)
    want = psn.evaluate(program, facts)
    assert _typed(got) == _typed(want)
    assert got["j"] == {((),)} and ((), ()) in got["e"] and got["n"] == {((1,),)}
    assert (((), ("a",)), ()) in got["m"] and got["k"] == {(((), ()),)}
