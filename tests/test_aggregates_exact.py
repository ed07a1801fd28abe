"""``sum<...>`` and ``avg<...>`` are exact and independent of order in every evaluator.

A float sum is the exactly rounded sum of the multiset of values (``0.1 + 0.2 + 0.3`` is
``0.6`` although adding left to right gives ``0.6000000000000001``; ``1e16 + -1e16 + 1`` is
``1.0`` in any order), an integer sum is exact and an average is that sum divided by the
count. The Python reference, the engine under every delivery order and the Spark reference
are checked against an independent oracle: exact rational arithmetic, rounded once.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

import psn
from engine import Network
from ndlog.errors import EvaluationError

DECLARE = "materialize(link, infinity, infinity, keys(1, 2)).\n"
# the group is the link's source: the aggregate runs where the facts are
LOCAL = DECLARE + """\
s1 total(@S, sum<C>) :- link(@S, D, C).
a1 mean(@S, avg<C>) :- link(@S, D, C).
"""
# the group is the link's destination: the values arrive from several nodes, in any order
REMOTE = DECLARE + """\
s1 total(@D, sum<C>) :- link(@S, D, C).
a1 mean(@D, avg<C>) :- link(@S, D, C).
"""
CASES = {"tenths": [0.1, 0.2, 0.3], "cancelling": [1.0e16, -1.0e16, 1.0]}
EXPECTED_SUM = {"tenths": 0.6, "cancelling": 1.0}
DELIVERIES = ["random", "fifo", "adversarial"]


def _exact_sum(values) -> float:
    """The oracle: the exact rational sum, rounded to a float once."""
    return float(sum(map(Fraction, values), Fraction(0)))


def _links(groups: dict[int, list], remote: bool) -> list[tuple]:
    """One link per value; group ``g`` is its source (local) or its destination (remote)."""
    out = []
    for g, values in groups.items():
        for i, c in enumerate(values):
            peer = 100 * (g + 1) + i
            out.append((peer, g, c) if remote else (g, peer, c))
    return out


def _expected(groups: dict[int, list]) -> tuple[set, set]:
    total = {(g, _exact_sum(v)) for g, v in groups.items()}
    mean = {(g, _exact_sum(v) / len(v)) for g, v in groups.items()}
    return total, mean


def _random_groups(seed: int, count: int) -> dict[int, list]:
    """Groups of floats of mixed magnitude and sign, where left-to-right sums go wrong."""
    rng = random.Random(seed)
    return {g: [rng.choice([1.0, -1.0]) * rng.random() * 10.0 ** rng.randint(-3, 17)
                for _ in range(rng.randint(2, 7))]
            for g in range(count)}


def test_the_cases_defeat_left_to_right_addition():
    # the test has teeth: a plain sum gives another answer in some order
    assert sum(CASES["tenths"]) != EXPECTED_SUM["tenths"]
    assert sum(sorted(CASES["cancelling"])) != EXPECTED_SUM["cancelling"]
    for name, values in CASES.items():
        assert _exact_sum(values) == EXPECTED_SUM[name]


@pytest.mark.parametrize("program", [LOCAL, REMOTE], ids=["local", "remote"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_python_reference(program, name):
    groups = {1: CASES[name]}
    got = psn.evaluate(psn.parse(program), {"link": _links(groups, program is REMOTE)})
    assert got["total"] == {(1, EXPECTED_SUM[name])}
    assert (got["total"], got["mean"]) == _expected(groups)


def test_python_reference_random_floats_in_every_fact_order():
    groups = _random_groups(seed=4, count=12)
    program = psn.parse(LOCAL)
    links = _links(groups, remote=False)
    rng = random.Random(5)
    for _ in range(5):
        rng.shuffle(links)
        got = psn.evaluate(program, {"link": links})
        assert (got["total"], got["mean"]) == _expected(groups)


def test_python_reference_integers_are_exact():
    big = 2 ** 53 + 1  # not a float: a sum through floats would be off
    groups = {1: [big, big, big], 2: [2 ** 70, -(2 ** 70), 3]}
    got = psn.evaluate(psn.parse(LOCAL), {"link": _links(groups, remote=False)})
    assert got["total"] == {(1, 3 * big), (2, 3)}
    assert got["mean"] == {(1, (3 * big) / 3), (2, 1.0)}


@pytest.mark.parametrize("delivery", DELIVERIES)
@pytest.mark.parametrize("program", [LOCAL, REMOTE], ids=["local", "remote"])
def test_engine_every_delivery_order(program, delivery):
    groups = {1: CASES["tenths"], 2: CASES["cancelling"]}
    groups |= {g + 10: v for g, v in _random_groups(seed=6, count=4).items()}
    links = _links(groups, program is REMOTE)
    for seed in range(4):
        net = Network(program, {"link": links}, delivery=delivery, seed=seed).run()
        got = net.relations()
        assert (got["total"], got["mean"]) == _expected(groups)
        assert (2, 1.0) in got["total"] and (1, 0.6) in got["total"]


@pytest.mark.parametrize("delivery", DELIVERIES)
def test_engine_sum_after_deletions_and_reinsertions(delivery):
    groups = {1: [1.0e16, -1.0e16, 1.0, 0.1, 0.2, 0.3]}
    links = _links(groups, remote=True)
    net = Network(REMOTE, {"link": links}, delivery=delivery, seed=3).run()
    live = list(links)
    for link in (links[0], links[3], links[1]):
        net.delete("link", link)
        live.remove(link)
        net.run()
        got = net.relations()
        assert got["total"] == {(1, _exact_sum([c for _, _, c in live]))}
    net.insert("link", links[0])
    net.run()
    live.append(links[0])
    assert net.relations()["total"] == {(1, _exact_sum([c for _, _, c in live]))}


# -- the Spark reference ------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize("program", [LOCAL, REMOTE], ids=["local", "remote"])
def test_spark_float_sums_are_exact(spark, program):
    from psn.batch.spark import evaluate_spark
    groups = {1: CASES["tenths"], 2: CASES["cancelling"]}
    groups |= {g + 10: v for g, v in _random_groups(seed=8, count=6).items()}
    parsed = psn.parse(program)
    facts = {"link": _links(groups, program is REMOTE)}
    got = evaluate_spark(parsed, facts, session=spark)
    assert {(1, 0.6), (2, 1.0)} <= got["total"]
    assert (got["total"], got["mean"]) == _expected(groups)
    python = psn.evaluate(parsed, facts)
    assert (got["total"], got["mean"]) == (python["total"], python["mean"])


@pytest.mark.spark
def test_spark_integer_sum_and_average_are_exact(spark):
    from psn.batch.spark import evaluate_spark
    big = 2 ** 53 + 1
    # group 1: float(3 * big) / 3 is 2**53 + 2, the exact quotient rounds to 2**53;
    # group 2: a sum at the very top of the 64-bit range
    groups = {1: [big, big, big], 2: [2 ** 62, 2 ** 62 - 1], 3: [5, -7]}
    facts = {"link": _links(groups, remote=False)}
    got = evaluate_spark(psn.parse(LOCAL), facts, session=spark)
    assert got["total"] == {(1, 3 * big), (2, 2 ** 63 - 1), (3, -2)}
    assert got["mean"] == {(1, 2.0 ** 53), (2, (2 ** 63 - 1) / 2), (3, -1.0)}
    assert all(type(v) is int for _, v in got["total"])
    python = psn.evaluate(psn.parse(LOCAL), facts)
    assert (got["total"], got["mean"]) == (python["total"], python["mean"])


@pytest.mark.spark
def test_spark_integer_sum_beyond_64_bits_is_an_error(spark):
    from psn.batch.spark import evaluate_spark
    program = psn.parse(DECLARE + "s1 total(@S, sum<C>) :- link(@S, D, C).\n", "sum.ndl")
    with pytest.raises(EvaluationError) as err:
        evaluate_spark(program, {"link": [(1, 2, 2 ** 62), (1, 3, 2 ** 62)]}, session=spark)
    assert "64 bits" in err.value.message
    assert err.value.span is not None and err.value.span.filename == "sum.ndl"
