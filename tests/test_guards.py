"""Guards against silent wrong answers and silent blow-ups (engine.guards).

Set semantics under deletions: the static check's verdict is compared with what the engine
does (accepted programs match the reference on seeded random bursts under any delivery;
every kind of refused program has a burst on which set semantics gives a wrong answer).
Derivation-set budget: the scheme's bookkeeping, and a 3x3 grid that stops with an error
naming a fact where absorption finishes. Memory ceiling: size parsing (a ceiling below
what the process already uses is refused) and a guard that trips after a real allocation;
the centralized reference's ceiling stops a program without a finite fixpoint (in a child
process whose address space is capped, so that a broken guard cannot exhaust the machine).
"""

from __future__ import annotations

import random
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import psn
from engine import Network
from engine.program import prepare
from engine.guards import (
    MIN_MEMORY, AnnotationBudgetError, MemoryGuard, MemoryLimitError, UnsafeAnnotationError,
    check_memory_limit, check_set_deletions, current_rss, default_memory_limit,
    implicit_deletions, parse_memory, physical_memory, set_deletion_problem,
)
from ndlog.errors import EvaluationError, InputError
from provenance import get_scheme
from provenance.base import AnnotationBudgetExceeded
from provenance.derivation import DerivationScheme

REACH = """
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
"""

# -- set semantics under deletions -------------------------------------------------------

# Programs in which no fact can have two derivations: set semantics deletes exactly.
EXACT = {
    "two-hop": "t twoHop(@S, Z, D) :- link(@S, Z), link(@Z, D).",
    "assignments": """
        a tag(@S, D, C) :- link(@S, D), C := D * 10.
        b copy(@S, D) :- link(@S, X), D := X.
    """,
    "strata": """
        a hop(@S, D, [S, D]) :- link(@S, D).
        b back(@D, S, P) :- hop(@S, D, P).
        c mutual(@S, D) :- link(@S, D), link(@D, S).
    """,
    "centralized": "p sym(X, Y) :- e(X, Y), e(Y, X).",
}

# One program per condition, with the reason the check gives and a burst sequence on which
# set semantics loses a fact that another derivation still supports.
REFUSED = {
    "recursion": (REACH, "reachable is recursive (rule r2)",
                  [["+link(@a, b)", "+link(@b, c)", "+link(@a, c)"], ["-link(@a, b)"]]),
    "two rules": ("""
        a near(@S, D) :- link(@S, D).
        b near(@S, D) :- back(@S, D).
        """, "near has two rules deriving it (a, b)",
                  [["+link(@a, b)", "+back(@a, b)"], ["-link(@a, b)"]]),
    "projection": ("t twoHop(@S, D) :- link(@S, Z), link(@Z, D).",
                   "rule t leaves variable Z of its body out of its head, so one twoHop fact "
                   "can have several derivations",
                   [["+link(@a, b)", "+link(@b, d)", "+link(@a, c)", "+link(@c, d)"],
                    ["-link(@a, b)"]]),
    "anonymous": ("s source(@S) :- link(@S, _).",
                  "rule s leaves an anonymous variable (_) of its body out of its head, so "
                  "one source fact can have several derivations",
                  [["+link(@a, b)", "+link(@a, c)"], ["-link(@a, b)"]]),
    "localized semi-join": ("b two(@S, Z, D, P) :- hop(@S, Z, P), link(@Z, D).",
                            "once localized, rule b ships b_aux(@S, Z, D) (rule bb), which "
                            "leaves out a column of hop_rev, so one b_aux fact can have "
                            "several derivations",
                            [["+hop(@a, b, 1)", "+hop(@a, b, 2)", "+link(@b, c)"],
                             ["-hop(@a, b, 1)"]]),
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_programs_are_accepted(name):
    assert set_deletion_problem(psn.parse(EXACT[name])) is None
    check_set_deletions(psn.parse(EXACT[name]))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_programs_name_the_rule(name):
    text, reason, _ = REFUSED[name]
    assert set_deletion_problem(psn.parse(text)) == reason


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_programs_do_go_wrong_under_set_semantics(name):
    text, _, bursts = REFUSED[name]
    program = psn.parse(text)
    net = Network(program, annotation="set", delivery="fifo", unsafe=True)
    for burst in bursts:
        net.apply(burst).run()
    ref = psn.evaluate(program, net.base_facts(), aggsel=False)
    got = net.relations()
    assert any(got.get(p, set()) != rows for p, rows in ref.items())
    exact = Network(program, annotation="absorption", delivery="fifo")
    for burst in bursts:
        exact.apply(burst).run()
    assert all(exact.relations().get(p, set()) == rows for p, rows in ref.items())


def test_aggregates_and_stated_facts_are_refused():
    agg = psn.parse("m minCost(@S, D, min<C>) :- link(@S, D, C).")
    assert set_deletion_problem(agg) == "minCost is an aggregate (rule m)"
    stated = psn.parse("near(@a, b).\na near(@S, D) :- link(@S, D).")
    assert set_deletion_problem(stated) == \
        "near has facts in the program and rule a deriving it"


def _random_bursts(rng: random.Random, preds: dict[str, int], steps: int):
    """Bursts of insertions of absent facts and deletions of present ones (no fact both
    deleted and inserted in one burst), over 5 nodes."""
    live: dict[str, set] = {p: set() for p in preds}
    for step in range(steps):
        burst, touched = [], set()
        for pred, arity in preds.items():
            if step:
                for t in rng.sample(sorted(live[pred]), min(len(live[pred]),
                                                             rng.randint(0, 3))):
                    live[pred].discard(t)
                    touched.add((pred, t))
                    burst.append((-1, pred, t))
            for _ in range(rng.randint(1, 6)):
                t = tuple(rng.sample(range(5), 2)) + tuple(rng.randint(0, 2)
                                                          for _ in range(arity - 2))
                if t not in live[pred] and (pred, t) not in touched:
                    live[pred].add(t)
                    touched.add((pred, t))
                    burst.append((1, pred, t))
        rng.shuffle(burst)
        yield burst, {p: sorted(v) for p, v in live.items()}


@pytest.mark.parametrize("delivery", ["random", "adversarial"])
@pytest.mark.parametrize("name", sorted(EXACT))
def test_accepted_programs_match_the_reference_under_deletions(name, delivery):
    program = psn.parse(EXACT[name])
    base = {p: a for p, a in program.arities().items() if p in program.edb}
    for seed in range(4):
        net = Network(program, annotation="set", delivery=delivery, seed=seed)
        for burst, live in _random_bursts(random.Random(f"{name}-{seed}"), base, 5):
            net.apply(burst).run()
            ref = psn.evaluate(program, live, aggsel=False)
            got = net.relations()
            for pred, rows in ref.items():
                assert got.get(pred, set()) == rows, (seed, pred)


def test_refusal_points_at_the_rule_and_names_the_fix():
    program = psn.parse(REACH, filename="reach.ndl")
    with pytest.raises(UnsafeAnnotationError) as info:
        check_set_deletions(program, because="the workload deletes links")
    err = info.value
    assert isinstance(err, InputError)
    text = err.render()
    assert text.startswith("reach.ndl:3:")
    assert "reachable is recursive (rule r2)" in text
    assert "the workload deletes links" in text
    assert "--annotation absorption" in text and "--unsafe" in text
    assert "r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D)." in text


def test_implicit_deletions_of_soft_state_and_keyed_tables():
    assert implicit_deletions(psn.parse(REACH)) is None
    soft = psn.parse("materialize(link, 10, infinity, keys(1, 2)).\n" + REACH)
    assert implicit_deletions(soft) == "table link expires its facts after 10"
    keyed = psn.parse("materialize(route, infinity, infinity, keys(1, 2)).\n"
                      "b best(@S, D, C) :- route(@S, D, C).")
    assert "keyed on keys(1, 2)" in implicit_deletions(keyed)
    whole = psn.parse("materialize(link, infinity, infinity, keys(1, 2)).\n" + REACH)
    assert implicit_deletions(whole) is None


READERS = {
    # q(@S, 1) has two rules; cnt(@S, 1) becomes cnt(@S, 2) and its deletion takes q(@S, 1)
    "two_rules": ("r1 cnt(@S, count<*>) :- link(@S, D).\n"
                  "r2 q(@S, 1) :- link(@S, D).\n"
                  "r3 q(@S, V) :- cnt(@S, V).\n", "q has two rules deriving it (r2, r3)"),
    # q(@1) holds through D = 2 while cnt(@3, 1) becomes cnt(@3, 2)
    "projection": ("r1 cnt(@S, count<*>) :- link(@S, D).\n"
                   "r3 q(@S) :- link(@S, D), cnt(@D, V), V < 2.\n",
                   "rule r3 leaves variable D of its body out of its head"),
}


@pytest.mark.parametrize("name", sorted(READERS))
def test_set_semantics_is_refused_where_a_replaced_aggregate_deletes_a_derived_fact(name):
    """An aggregate's new result deletes the old one even on FIFO channels, and set
    semantics then deletes what was derived from the old result although another
    derivation holds it. Set with FIFO delivery was accepted on such programs without
    ``--unsafe`` and lost facts in an insertion-only run (found by a fuzz campaign of
    generated distributed programs)."""
    text, reason = READERS[name]
    program = psn.parse(text)
    facts = {"link": [(1, 2), (1, 3), (2, 6), (3, 4), (3, 5)]}
    want = psn.evaluate(program, facts)["q"]
    assert want == ({(1, 1), (2, 1), (3, 1), (1, 2), (3, 2)} if name == "two_rules"
                    else {(1,)})
    wrong = [s for s in range(6) if Network(program, facts, annotation="set",
                                            delivery="fifo", seed=s,
                                            unsafe=True).run().relations()["q"] != want]
    assert wrong                      # the refusal is needed
    with pytest.raises(UnsafeAnnotationError) as info:
        Network(program, facts, annotation="set", delivery="fifo")
    assert reason in str(info.value) and "rule r1 replaces a result" in str(info.value)
    assert "--annotation absorption" in info.value.hint


def test_set_semantics_still_runs_aggregates_whose_readers_are_exact():
    """Shortest path (``sp5`` leaves out ``L``, but every derivation of a cheapestPath fact
    reads the same minCost fact) and aggregates over aggregates with a join on the result
    (``largestRegions`` of Liu's region query) stay accepted with FIFO delivery."""
    from engine.guards import aggregate_reader_problem
    root = Path(__file__).resolve().parent
    for name in ("shortest_path", "region"):
        program = psn.load(root / "programs" / name / "program.ndl")
        assert aggregate_reader_problem(program) is None, name


# -- derivation-set budget ---------------------------------------------------------------

def _grid(rows: int, cols: int) -> list[tuple[int, int]]:
    """A bidirectional grid: both directions of every horizontal and vertical link."""
    out = []
    for i in range(rows):
        for j in range(cols):
            n = i * cols + j
            if j + 1 < cols:
                out += [(n, n + 1), (n + 1, n)]
            if i + 1 < rows:
                out += [(n, n + cols), (n + cols, n)]
    return out


def test_grid_past_the_budget_stops_naming_a_fact_absorption_finishes():
    links = _grid(3, 3)
    scheme = get_scheme("derivation").with_budget(max_per_fact=100)
    with pytest.raises(AnnotationBudgetError) as info:
        Network(REACH, {"link": links}, annotation=scheme, seed=0).run()
    err = info.value
    assert isinstance(err, EvaluationError)
    assert re.search(r"the derivation sets of reachable\(@\d, \d\) reached 101 derivations, "
                     r"over the budget of 100 per fact", err.message), err.message
    assert "--annotation absorption" in err.message
    assert "--derivation-budget" in err.message
    net = Network(REACH, {"link": links}, annotation="absorption", seed=0).run()
    ref = psn.evaluate(psn.parse(REACH), {"link": links})
    assert net.relations()["reachable"] == ref["reachable"] == {
        (a, b) for a in range(9) for b in range(9)}


def test_total_budget_counts_entries_across_facts():
    # link, link_rev and reachable twice each, r2_aux(@1, 2, 3) and reachable(@1, 3)
    scheme = DerivationScheme(max_per_fact=None, max_total=8)
    net = Network(REACH, {"link": [(1, 2), (2, 3)]}, annotation=scheme).run()
    assert scheme.entries == 8 == sum(len(v) for n in net.nodes.values()
                                      for t in n.state.values() for v in t.values())
    with pytest.raises(AnnotationBudgetError) as info:
        net.apply(["+link(@3, 4)"]).run()
    assert "in total" in info.value.message and "--derivation-total" in info.value.message


PROJECTED = """
r1 p(@S, X) :- a(@S, Z), e(@Z, X, Y).
c1 t(@S, count<X>) :- p(@S, X).
"""


def test_budget_error_on_a_fact_the_engine_made_names_the_rule_it_serves():
    # r1 runs at node 2 through r1_aux(@S, Z, X), which projects Y away: its one fact
    # r1_aux(@1, 2, 0) has a derivation per e fact and passes the budget before p(@1, 0)
    facts = {"a": [(1, 2)], "e": [(2, 0, y) for y in range(5)]}
    for seed in range(3):
        with pytest.raises(AnnotationBudgetError) as info:
            Network(PROJECTED, facts, annotation=DerivationScheme(max_per_fact=3),
                    seed=seed).run()
        assert info.value.message.startswith(
            "the derivation sets of r1_aux(@1, 2, 0), an intermediate fact of rule r1 "
            "(line 2), reached 4 derivations, over the budget of 3 per fact;"), \
            info.value.message
    prog = prepare(psn.parse(PROJECTED))
    assert prog.made_for("p") == prog.made_for("a") == ""
    assert prog.made_for("a_rev") == ", an intermediate fact of rule r1 (line 2)"
    made = [p for p in prog.hidden if p in prog.aggregates]
    assert [prog.made_for(p) for p in made] == [
        ", a contribution to the aggregate of rule c1 (line 3)"]


def test_budget_bookkeeping_in_pick():
    scheme = DerivationScheme(max_per_fact=2, max_total=10)
    fact = ("p", (1,))
    occs = [(frozenset({("q", (i,))}), frozenset()) for i in range(3)]
    stored = None
    for occ in occs[:2]:
        stored, _ = scheme.pick(None, fact, stored, 1, occ)
    stored, _ = scheme.pick(None, fact, stored, 1, occs[0])   # a repeat: no new entry
    assert scheme.entries == 2 and scheme.count(stored) == 3
    with pytest.raises(AnnotationBudgetExceeded) as info:
        scheme.pick(None, fact, stored, 1, occs[2])
    exc = info.value
    assert (exc.fact, exc.size, exc.budget, exc.scope) == (fact, 3, 2, "fact")
    stored, _ = scheme.pick(None, fact, stored, -1, occs[1])
    assert scheme.entries == 2            # the failed pick counted its entry, this frees one


def test_budget_bounds_one_firing():
    scheme = DerivationScheme(max_per_fact=5)
    many = {(frozenset({("q", (i,))}), frozenset()): 1 for i in range(3)}
    parts = [["a", (1,), (frozenset(), frozenset())], ["b", (1,), many], ["c", (1,), many]]
    with pytest.raises(AnnotationBudgetExceeded) as info:
        scheme.derive(None, 1, ("h", (1,)), parts, 0)
    assert (info.value.fact, info.value.size) == (("h", (1,)), 9)
    assert len(DerivationScheme(max_per_fact=9).derive(None, 1, ("h", (1,)), parts, 0)) == 9


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10", True])
def test_budget_must_be_a_positive_integer(bad):
    with pytest.raises(InputError, match="positive integer"):
        DerivationScheme(max_per_fact=bad)
    with pytest.raises(InputError, match="positive integer"):
        DerivationScheme().with_budget(max_total=bad)


def test_with_budget_keeps_what_is_not_given():
    scheme = DerivationScheme(max_per_fact=7, max_total=None)
    assert scheme.budget == (7, None)
    assert scheme.with_budget(max_total=9).budget == (7, 9)
    assert scheme.with_budget(max_per_fact=None).budget == (None, None)
    assert get_scheme("derivation").budget == (10_000, 200_000)


# -- memory ceiling ----------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("4G", 4 << 30), ("4g", 4 << 30), ("4GiB", 4 << 30), ("4 GB", 4 << 30),
    ("512M", 512 << 20), ("1.5G", 3 << 29), ("65536K", 64 << 20), ("1T", 1 << 40),
    ("67108864B", 64 << 20), ("off", 0), ("None", 0),
])
def test_parse_memory_sizes(text, expected):
    assert parse_memory(text) == expected


def test_parse_memory_fractions_of_physical_memory():
    physical = physical_memory()
    assert physical and physical > 1 << 20
    assert parse_memory("0.5") == int(physical * 0.5)
    assert parse_memory("50%") == int(physical * 0.5)
    assert parse_memory("1") == physical


@pytest.mark.parametrize("text", ["", "abc", "4", "1.5", "0", "0G", "-1G", "150%", "4X",
                                  "G", "1e9", "0.5.5", "nan", "inf", "1e400",
                                  "1" + "0" * 400 + "G"])
def test_parse_memory_rejects_bad_values(text):
    with pytest.raises(InputError, match="--max-memory"):
        parse_memory(text)


@pytest.mark.parametrize("text", ["1K", "1B", "2048K", "63M", "0.0000001"])
def test_parse_memory_refuses_a_ceiling_below_what_the_process_already_uses(text):
    """Below MIN_MEMORY every run would stop at its first check, having done nothing."""
    with pytest.raises(InputError, match=r"--max-memory '.*' is below the minimum of "
                                         r"64\.0 MiB") as info:
        parse_memory(text)
    assert "64M" in info.value.hint
    assert parse_memory("64M") == MIN_MEMORY == check_memory_limit(MIN_MEMORY)
    assert check_memory_limit(0) == 0
    with pytest.raises(InputError, match="--limit 1,024 bytes is below the minimum"):
        check_memory_limit(1024, "--limit")


def test_run_refuses_a_max_memory_below_the_minimum(capsys):
    from psn.cli import main
    program = Path(__file__).resolve().parents[1] / "examples" / "reachable.ndl"
    assert main(["run", str(program), "--topology", "liu100",
                 "--max-memory", "1K"]) == 2
    err = capsys.readouterr().err
    assert "--max-memory '1K' is below the minimum of 64.0 MiB" in err
    assert "Traceback" not in err


def test_parse_memory_names_the_option():
    with pytest.raises(InputError, match="--limit 'lots'"):
        parse_memory("lots", option="--limit")


def test_default_memory_limit_is_a_share_of_the_machine():
    limit = default_memory_limit()
    assert 0 < limit <= physical_memory() * 0.75
    assert default_memory_limit(0.5) < limit


def test_memory_guard_trips_after_an_allocation():
    guard = MemoryGuard(current_rss() + (100 << 20), every=1)
    guard.check()                                     # below the ceiling: nothing happens
    block = b"\x01" * (200 << 20)                     # written, so resident
    with pytest.raises(MemoryLimitError) as info:
        guard.check()
    assert len(block) == 200 << 20
    err = info.value
    assert isinstance(err, EvaluationError) and err.used > err.limit
    assert re.match(r"the run used \d+(\.\d+)? (GiB|MiB), over its --max-memory of "
                    r"\d+(\.\d+)? (GiB|MiB); ", err.message), err.message


def test_memory_guard_reads_only_every_n_calls():
    guard = MemoryGuard(1, every=3)                   # any process is over one byte
    guard.check()
    guard.check()
    with pytest.raises(MemoryLimitError):
        guard.check()
    guard.check()                                     # the count starts again
    unlimited = MemoryGuard(None, every=1)
    for _ in range(3):
        unlimited.check()
    assert unlimited.check_now() > 0


def test_memory_guard_check_soon_reads_once_the_interval_has_passed():
    """A loop that calls the guard seldom (a node's long step) is still checked."""
    with pytest.raises(MemoryLimitError):
        MemoryGuard(1, every=10 ** 9, interval=0.0).check_soon()
    patient = MemoryGuard(1, every=2, interval=3600.0)
    for _ in range(3):
        patient.check_soon()                          # the time has not come; no count
    with pytest.raises(MemoryLimitError):
        patient.check()
        patient.check()


def test_one_long_step_is_stopped_by_the_memory_ceiling_while_it_grows():
    """A node's step over a huge batch (a centralized program: every fact at one node)
    was checked only after it, at 681 MiB for a ceiling of 194 MiB; a derivation-set run
    on Ray grew to several GiB in one step past its ceiling."""
    n = 2000
    net = Network("c pair(X, Y) :- a(X), b(Y).",
                  {"a": [(i,) for i in range(n)], "b": [(i,) for i in range(n)]},
                  annotation="set", max_memory=current_rss() + (150 << 20))
    with pytest.raises(MemoryLimitError) as info:
        net.run()
    (node,) = net.host.nodes.values()
    assert node.metrics.steps == 1                    # stopped inside its first step
    assert info.value.limit < info.value.used < info.value.limit + (100 << 20)


def test_many_short_steps_are_checked_as_time_passes():
    """Steps of a few updates are not split into chunks, and the counting guard reads the
    ceiling once per 200 of them: the region query on a dense 200-sensor field (absorption,
    each step a few ORs of large BDDs taking about a second) reached 7.1 GiB in the
    simulator under a ceiling of 800 MiB, and a Ray worker 7.8 GiB for a share of 2 GiB.
    The time-based check now follows every node step. Here every step is small and the
    counting guard never reads, so only that check can stop the run."""
    net = Network(REACH, {"link": _grid(3, 3)}, annotation="set")
    net.guard = MemoryGuard(1, every=10 ** 9, interval=0.0)   # any process is over 1 byte
    with pytest.raises(MemoryLimitError):
        net.run()
    assert max(n.metrics.steps for n in net.host.nodes.values()) == 1


def test_errors_survive_pickling():
    """Errors raised in a Ray worker reach the driver pickled."""
    import pickle
    scheme = get_scheme("derivation").with_budget(max_per_fact=3)
    with pytest.raises(AnnotationBudgetError) as budget:
        Network(REACH, {"link": _grid(2, 2)}, annotation=scheme).run()
    with pytest.raises(MemoryLimitError) as memory:
        MemoryGuard(1, every=1).check()
    with pytest.raises(UnsafeAnnotationError) as unsafe:
        check_set_deletions(psn.parse(REACH))
    for err in (budget.value, memory.value, unsafe.value):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and back.render() == err.render()
    exceeded = AnnotationBudgetExceeded(("p", (1,)), 4, 3)
    assert pickle.loads(pickle.dumps(exceeded)).size == 4


def test_cgroup_limits_v2_and_v1(tmp_path):
    from engine.guards import _cgroup_limit

    def write(rel: str, text: str) -> None:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    write("v2/cgroup", "0::/user.slice/app\n")
    write("v2/fs/user.slice/app/memory.max", "max\n")
    write("v2/fs/user.slice/memory.max", "2147483648\n")
    assert _cgroup_limit(str(tmp_path / "v2/cgroup"), str(tmp_path / "v2/fs")) == 2 << 30
    write("v1/cgroup", "4:memory:/docker/abc\n3:cpu,cpuacct:/\n")
    write("v1/fs/memory/docker/abc/memory.limit_in_bytes", "1073741824\n")
    write("v1/fs/memory/memory.limit_in_bytes", "9223372036854771712\n")     # unlimited
    assert _cgroup_limit(str(tmp_path / "v1/cgroup"), str(tmp_path / "v1/fs")) == 1 << 30
    write("none/cgroup", "0::/\n")
    assert _cgroup_limit(str(tmp_path / "none/cgroup"), str(tmp_path / "none/fs")) is None


# -- the centralized reference's memory ceiling ------------------------------------------

#: a program without a finite fixpoint: the path vectors around a 2-cycle grow forever
ENDLESS = """
p1 path(@S, D, P) :- link(@S, D), P := [S, D].
p2 path(@S, D, P) :- link(@S, Z), path(@Z, D, P2), P := f_prepend(S, P2).
"""


def _bounded(args: list[str], tmp_path) -> subprocess.CompletedProcess:
    """``args`` run in a child whose address space is capped at 4 GiB and whose time is
    capped at 120 s: a guard that did not stop the endless program cannot take the machine
    down with the test."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    return subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, preexec_fn=cap)


def test_evaluate_stops_a_program_without_a_finite_fixpoint(tmp_path):
    (tmp_path / "endless.ndl").write_text(ENDLESS)
    code = ("import psn\n"
            "from engine.guards import current_rss\n"
            "try:\n"
            "    psn.evaluate(open('endless.ndl').read(), {'link': [(1, 2), (2, 1)]},\n"
            "                 max_memory=current_rss() + (200 << 20))\n"
            "except psn.EvaluationError as exc:\n"
            "    print(type(exc).__name__, exc.used > exc.limit, exc.render())\n")
    done = _bounded(["-c", code], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("MemoryLimitError True error: the evaluation used ")
    assert re.search(r"over its max_memory of [\d.]+ MiB, in round [\d,]+ of the "
                     r"semi-naive evaluation of path;", done.stdout), done.stdout
    assert "raise max_memory (or 0 for none)" in done.stdout


@pytest.mark.parametrize("command", ["eval", "reference --engine python"])
def test_psn_eval_and_reference_stop_past_max_memory(tmp_path, command):
    (tmp_path / "endless.ndl").write_text(ENDLESS)
    (tmp_path / "links.ndl").write_text("link(@1, 2). link(@2, 1).\n")
    done = _bounded(["-m", "psn", *command.split(), "endless.ndl", "--facts", "links.ndl",
                     "--max-memory", "300M"], tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("error: the evaluation used "), done.stderr[-2000:]
    assert "over its --max-memory of 300.0 MiB, in round " in done.stderr
    assert "(or off for none)" in done.stderr and "Traceback" not in done.stderr


def test_the_default_ceiling_is_below_an_address_space_limit(tmp_path):
    # under `ulimit -v` an allocation past the limit fails first: a default ceiling of 75%
    # of the machine let `psn eval` of an endless program end in a MemoryError or abort
    code = ("import resource\n"
            "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
            "from engine.guards import default_memory_limit\n"
            "print(default_memory_limit(), default_memory_limit(0.5))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.split() == [str(3 << 28), str(1 << 29)], done.stderr[-2000:]


@pytest.mark.parametrize("command", ["eval", "run"])
def test_an_endless_program_stops_by_default_under_ulimit_v(tmp_path, command):
    (tmp_path / "endless.ndl").write_text(ENDLESS)
    (tmp_path / "links.ndl").write_text("link(@1, 2). link(@2, 1).\n")

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20))
    done = subprocess.run([sys.executable, "-m", "psn", command, "endless.ndl", "--facts",
                           "links.ndl"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, preexec_fn=cap)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "over its --max-memory of 450.0 MiB" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr


def test_the_reference_ceiling_is_checked_up_front(capsys):
    from psn.cli import main
    program = str(Path(__file__).resolve().parents[1] / "examples" / "reachable.ndl")
    assert main(["reference", program, "--engine", "spark", "--max-memory", "1G"]) == 2
    assert "--max-memory applies to --engine python" in capsys.readouterr().err
    assert main(["eval", program, "--max-memory", "1K"]) == 2
    assert "--max-memory '1K' is below the minimum" in capsys.readouterr().err
    for bad in ("4G", -1, True, 1.5e9):
        with pytest.raises(InputError, match="max_memory is a memory ceiling in bytes"):
            psn.evaluate(REACH, {"link": [(1, 2)]}, max_memory=bad)
    assert psn.evaluate(REACH, {"link": [(1, 2)]}, max_memory=0)["reachable"] == {(1, 2)}


def test_the_reference_guard_sees_every_round_of_each_stratum():
    from ndlog.reference import evaluate
    seen = []
    line = [(i, i + 1) for i in range(6)]
    result = evaluate(psn.parse(REACH), {"link": line},
                      guard=lambda rounds, preds: seen.append((rounds, preds)))
    assert len(result["reachable"]) == 21
    assert {preds for _, preds in seen} == {frozenset({"reachable"})}
    rounds = [r for r, _ in seen]
    assert rounds == sorted(rounds) and rounds[0] == 0 and max(rounds) >= 5


def test_a_shared_guard_names_its_share_and_the_whole_ceiling():
    guard = MemoryGuard(MIN_MEMORY * 2, every=1, share=2)
    assert guard.limit == MIN_MEMORY
    block = b"\x01" * (MIN_MEMORY + (16 << 20))      # written, so resident
    with pytest.raises(MemoryLimitError) as info:
        guard.check()
    del block
    assert re.match(r"a worker used [\d.]+ MiB, over its share \(1/2, 64\.0 MiB\) of the "
                    r"run's --max-memory of 128\.0 MiB; ", info.value.message), str(info.value)
    with pytest.raises(ValueError, match="share must be at least 1"):
        MemoryGuard(MIN_MEMORY, share=0)


@pytest.mark.parametrize("rule", [
    "c(@X, A, B) :- p(@X, A), q(@X, B).",                   # head values projected
    "c(@X, A, B) :- p(@X, A), q(@X, B), A != B.",           # one assignment at a time
])
def test_the_reference_ceiling_stops_one_huge_firing(tmp_path, rule):
    """The reference checked its ceiling only after each firing of a rule, so one firing
    of a cartesian product went on to its end: 'psn eval' of this rule on 5,000 p and
    5,000 q facts used 5.01 GiB past a --max-memory of 1G (16 million tuples here need
    about 3 GiB, over the child's 2 GiB of address space: a MemoryError)."""
    code = ("import psn\n"
            "from engine.guards import current_rss\n"
            "facts = {'p': [('a', i) for i in range(4000)], 'q': [('a', i) for i in "
            "range(4000)]}\n"
            "limit = current_rss() + (100 << 20)\n"
            "try:\n"
            f"    psn.evaluate({rule!r}, facts, max_memory=limit)\n"
            "except psn.EvaluationError as exc:\n"
            "    print(type(exc).__name__, exc.used - limit < (60 << 20), exc.render())\n")

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, preexec_fn=cap)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("MemoryLimitError True error: the evaluation used "), \
        done.stdout
    assert "evaluating c;" in done.stdout
