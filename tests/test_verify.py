"""``psn verify``: reorder-tolerance checked over every delivery order of a scope.

Nigam et al. 2012, Definition 1: after every burst, once quiescent, every node's state equals
the synchronous semi-naive result. The verifier runs the in-memory engine under many
delivery schedules (engine.schedule.ScheduledTransport) and compares every node with the
reference after every burst.

- Reachable on every connected graph of 2 to 4 nodes (links both ways, inserted edge by
  edge; the most recently inserted link deleted in one burst): exhaustive and complete for
  absorption provenance (docs/verify.md lists the schedules and states);
- Liu et al. 2009, Fig. 2 with its deletion of link(C, B): exhaustive and complete;
- a seeded bug (a test-only scheme that drops a deletion arriving before its occurrence):
  found, shrunk (never longer, still failing), written, replayed from the file;
- non-termination: a scheme that re-fires present facts loops on the a/p/q cycle (Nigam
  Sec. 5), found as a cycle (or past the delivery bound without state hashing);
- FIFO channels, overlapping bursts, batches, random and adversarial search, parallel
  workers, the command line;
- the papers' failure modes (Nigam Sec. 6: Fig. 6 with the original PSN, a/p/q with FIFO
  base annotations, counting).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import networkx as nx
import pytest
from networkx.generators.atlas import graph_atlas_g

import psn
import provenance
from provenance.base import NO_FIRE
from provenance.derivation import DerivationScheme
from provenance.set_scheme import SetScheme
from psn.cli import main
from psn.verify import Budget, Counterexample, Problem, Scope, verify_problem
from psn.verify.model import Execution, Reference
from psn.verify.search import ExhaustivePolicy

ROOT = Path(__file__).resolve().parents[1]
REACH = psn.load(ROOT / "examples" / "reachable.ndl")
APQ = """
p(@1) :- a(@0).
q(@2) :- p(@1).
p(@1) :- q(@2).
"""


# -- test-only annotation schemes ------------------------------------------------------------
class DropEarlyDeletions(DerivationScheme):
    """Derivation sets with a seeded bug: a deletion that arrives before the occurrence it
    deletes is dropped instead of waiting for it."""

    name = "test-drop-early-deletions"

    def pick(self, ctx, fact, stored, sign, ann, owned=False):
        res = super().pick(ctx, fact, stored, sign, ann, owned)
        if res is None and sign < 0:
            return stored, NO_FIRE
        return res


class AlwaysFire(SetScheme):
    """Set semantics that fires an insertion even when the fact is present: on a cycle of
    rules the same insertions go round forever."""

    name = "test-always-fire"

    def pick(self, ctx, fact, stored, sign, ann, owned=False):
        if sign > 0:
            return True, True
        return super().pick(ctx, fact, stored, sign, ann, owned)


@pytest.fixture(autouse=True)
def _test_schemes(monkeypatch):
    """The two schemes above, registered for this module's tests only: registered at
    import, they joined every test that runs over all registered schemes when this
    module happened to be collected first."""
    for scheme in (DropEarlyDeletions, AlwaysFire):
        monkeypatch.setitem(provenance._REGISTRY, scheme.name, scheme)

BUGGY = dict(facts={"link": [(1, 2)]}, bursts=[["+link(@2, 3)", "-link(@2, 3)"]],
             annotation=DropEarlyDeletions.name)
CORRECT = dict(facts={"link": [(1, 2), (2, 3)]}, bursts=[["-link(@1, 2)", "+link(@3, 1)"]])


# -- reachable on every connected graph up to 4 nodes ----------------------------------------
def _graphs():
    out = []
    for g in graph_atlas_g():
        if 2 <= g.number_of_nodes() <= 4 and nx.is_connected(g):
            edges = [tuple(sorted(e)) for e in g.edges()]
            out.append((g.number_of_nodes(), edges))
    return out


GRAPHS = _graphs()


def test_there_are_nine_connected_graphs_of_two_to_four_nodes():
    assert [n for n, _ in GRAPHS] == [2, 3, 3, 4, 4, 4, 4, 4, 4]


@pytest.mark.parametrize("nodes,edges", GRAPHS,
                         ids=[f"{n}:{'-'.join(f'{u}{v}' for u, v in e)}" for n, e in GRAPHS])
def test_reachable_every_connected_graph_exhaustive(nodes, edges):
    links = [link for u, v in edges for link in ((u + 1, v + 1), (v + 1, u + 1))]
    last = links[-1]
    result = psn.verify(REACH, {"link": links}, [[f"-link(@{last[0]}, {last[1]})"]],
                        mode="exhaustive", budget=5000)
    assert result.ok, result.counterexample.render()
    assert result.complete
    assert result.finished >= 1 and result.states >= result.finished
    print(f"{nodes} nodes {edges}: {result.schedules} schedules, {result.finished} to the "
          f"end, {result.states} states")


# -- Liu et al. 2009, Fig. 2 ----------------------------------------------------------------
LIU_LINKS = [("A", "B"), ("B", "C"), ("C", "A"), ("C", "B")]   # p1..p4


@pytest.mark.parametrize("annotation", ["absorption", "derivation"])
def test_liu_fig2_deletion_is_reorder_tolerant(annotation):
    result = psn.verify.assert_reorder_tolerant(
        REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']], annotation=annotation,
        mode="exhaustive", complete=True)
    assert result.complete and result.mode == "exhaustive"
    assert result.schedules > 10 and result.states > 10


def test_a_deleted_fact_of_the_program_text_is_gone_from_the_reference(tmp_path, capsys):
    """The reference evaluated the program with its own facts beside the live base facts,
    so a burst deleting a fact written in the program left it in the reference, and a
    correct run was reported as a counterexample ('node 1: - link(@1, 2)')."""
    program = psn.parse("link(@1, 2). link(@2, 3).\n"
                        "r1 reachable(@S, D) :- link(@S, D).\n"
                        "r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).\n")
    for burst in (["-link(@1, 2)"], ["-link(@2, 3)", "+link(@2, 1)"]):
        psn.verify.assert_reorder_tolerant(program, None, [burst], mode="exhaustive",
                                           complete=True)
    (tmp_path / "p.ndl").write_text("link(@1, 2).\nr1 reachable(@S, D) :- link(@S, D).\n")
    (tmp_path / "b.ndl").write_text("-link(@1, 2).\n")
    assert main(["verify", str(tmp_path / "p.ndl"), "--burst", str(tmp_path / "b.ndl")]) == 0
    assert "counterexample" not in capsys.readouterr().out


def test_liu_fig2_with_fifo_channels_explores_fewer_states():
    any_order = psn.verify(REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']],
                           mode="exhaustive")
    fifo = psn.verify(REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']],
                      mode="exhaustive", fifo=True)
    assert any_order.ok and fifo.ok and any_order.complete and fifo.complete
    assert fifo.states < any_order.states


# -- a seeded bug ------------------------------------------------------------------------------
def test_seeded_bug_found_shrunk_written_replayed(tmp_path):
    found = psn.verify(REACH, mode="random", seed=3, budget=200, shrinking=False, **BUGGY)
    assert not found.ok and found.counterexample.kind == "wrong-state"
    shrunk = psn.verify(REACH, mode="random", seed=3, budget=200, **BUGGY)
    cex = shrunk.counterexample
    assert cex.kind == "wrong-state" and cex.found == found.counterexample.deviations
    assert cex.length <= found.counterexample.length
    assert cex.deviations <= found.counterexample.deviations
    assert cex.deviations >= 1                   # the bug needs a reordering
    assert cex.replay().failed                   # still fails
    # the trace names the delivery that overtook its channel
    assert any(step.overtakes for step in cex.steps)
    assert "OUT OF ORDER" in cex.render()
    path = cex.write(tmp_path / "cex.json")
    data = json.loads(path.read_text())
    assert data["format"] == "psn-verify-counterexample" and data["choices"] == cex.choices
    again = Counterexample.load(path).replay()
    assert again.kind == cex.kind and again.diff == cex.diff and not again.diverged
    assert again.render() == cex.render()


def test_seeded_bug_exhaustive_finds_a_one_reordering_counterexample():
    result = psn.verify(REACH, mode="exhaustive", **BUGGY)
    assert not result.ok and not result.complete
    cex = result.counterexample
    assert cex.deviations == 1 and cex.reordered == 1
    assert cex.diff and all(sign > 0 for _, _, sign, _ in cex.diff)   # a tuple survives


def test_seeded_bug_needs_reordering_fifo_channels_hide_it():
    result = psn.verify(REACH, mode="exhaustive", fifo=True, **BUGGY)
    assert result.ok and result.complete


def test_seeded_bug_assertion_helper_prints_the_counterexample():
    with pytest.raises(AssertionError, match="OUT OF ORDER"):
        psn.verify.assert_reorder_tolerant(REACH, mode="exhaustive", **BUGGY)


def test_seeded_bug_adversarial_search_finds_it():
    result = psn.verify(REACH, mode="adversarial", budget=50, **BUGGY)
    assert not result.ok and result.mode == "adversarial"


def test_seeded_bug_in_parallel():
    result = psn.verify(REACH, mode="exhaustive", jobs=2, **BUGGY)
    assert not result.ok and result.jobs == 2
    assert result.counterexample.replay().failed


@pytest.mark.parametrize("jobs", [1, 2])
def test_progress_shows_the_schedules_explored(capsys, jobs):
    """A search showed nothing until it ended (10 minutes by default)."""
    result = psn.verify(REACH, mode="random", budget=12, jobs=jobs, progress=True,
                        **CORRECT)
    err = capsys.readouterr().err
    shown = [int(n) for n in re.findall(r"(\d+)(?:/\d+)?(?: schedules)? \[", err)]
    assert result.ok and shown and max(shown) <= result.schedules
    assert ("verify (worker 1 of 2)" in err) == (jobs == 2)
    psn.verify(REACH, mode="random", budget=12, jobs=jobs, progress=False, **CORRECT)
    assert capsys.readouterr().err == ""


def test_more_jobs_than_the_machine_can_take_are_refused_before_any_fork():
    """``--jobs 10000`` forked 10,000 processes and printed nothing meanwhile."""
    import os

    from psn.verify.search import MAX_JOBS_PER_CPU
    most = MAX_JOBS_PER_CPU * (os.cpu_count() or 1)
    with pytest.raises(psn.InputError, match=f"at most {most} are allowed"):
        psn.verify(REACH, mode="exhaustive", jobs=most + 1, **BUGGY)


# -- the reductions keep the search complete --------------------------------------------------
class EveryInterleaving:
    """A policy that enumerates every delivery order, with no reduction at all."""

    def __init__(self):
        self.stack: list[list[int]] = []        # [choice, number of choices] per decision

    def choose(self, d):
        if d.index < len(self.stack):
            return d.transitions[self.stack[d.index][0]]
        self.stack.append([0, len(d.transitions)])
        return d.transitions[0]

    def backtrack(self) -> bool:
        while self.stack:
            self.stack[-1][0] += 1
            if self.stack[-1][0] < self.stack[-1][1]:
                return True
            self.stack.pop()
        return False


def _final_states(problem, policy) -> tuple[set, int]:
    """``{(how the schedule ended, digest of the final network state)}`` over every schedule
    the policy walks, and the number of schedules."""
    reference, forms, out, runs = Reference(problem), {}, set(), 0
    while True:
        execution = Execution(problem, policy, reference, forms=forms)
        result = execution.run()
        runs += 1
        if result.kind != "pruned":
            out.add((result.kind, execution.state_digest()))
        if not policy.backtrack():
            return out, runs


def test_the_state_form_keeps_a_dred_count():
    """DRed stores ``(count, derived)`` per fact and joins it as one occurrence whatever the
    count: a base fact inserted twice survives one deletion, one inserted once does not, so
    the two node states are not the same state. The forms took only the occurrences and
    merged them (state hashing would have skipped one as explored)."""
    from engine.network import Network
    from psn.verify.fingerprint import digest, node_form
    program = "r(@S, D) :- link(@S, D).\n"
    forms, left = [], []
    for times in (1, 2):
        net = Network(program, annotation="dred", delivery="fifo")
        net.apply(["+link(@1, 2)"] * times)
        net.run()
        forms.append(digest(node_form(net.nodes[1])))
        net.apply(["-link(@1, 2)"])
        net.run()
        left.append(net.relations()["r"])
    assert left == [set(), {(1, 2)}]            # they behave differently ...
    assert forms[0] != forms[1]                 # ... so their forms differ


REDUCTION_CASES = {
    "liu-fig2": lambda: Problem.make(REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']]),
    "overlap": lambda: Problem.make(REACH, {"link": [(1, 2), (2, 3)]},
                                    [["-link(@2, 3)"], ["+link(@2, 3)"]], scope="overlap"),
    "seeded-bug": lambda: Problem.make(REACH, BUGGY["facts"], BUGGY["bursts"],
                                       BUGGY["annotation"], scope="batch=2"),
}


@pytest.mark.parametrize("case", sorted(REDUCTION_CASES))
def test_sleep_sets_and_hashing_reach_every_final_state(case):
    """Partial-order reduction and state hashing visit far fewer schedules than every
    interleaving, and end in exactly the same final states (failures included)."""
    problem = REDUCTION_CASES[case]()
    every, brute_runs = _final_states(problem, EveryInterleaving())
    reduced, runs = _final_states(problem, ExhaustivePolicy(problem))
    assert reduced == every
    assert runs * 5 < brute_runs


# -- non-termination ---------------------------------------------------------------------------
def test_a_cycle_of_insertions_is_a_cycle_counterexample():
    result = psn.verify(APQ, bursts=[["+a(@0)"]], annotation=AlwaysFire.name,
                        mode="exhaustive", unsafe=True)
    assert not result.ok
    cex = result.counterexample
    assert cex.kind == "cycle" and "repeat forever" in cex.message
    assert cex.replay().kind == "cycle"


def test_past_the_bound_is_a_no_quiescence_counterexample():
    result = psn.verify(APQ, bursts=[["+a(@0)"]], annotation=AlwaysFire.name,
                        mode="exhaustive", unsafe=True, scope="nohash,bound=30")
    cex = result.counterexample
    assert cex.kind == "no-quiescence" and "within 30 deliveries" in cex.message


def test_without_state_hashing_the_verdict_counts_choices_not_distinct_states():
    """Without state hashing the exhaustive search counts the delivery choices it explored,
    and the verdict called them distinct states: 78 on this scope, where a walk that
    digests every choice meets 68 distinct states (the number the search with hashing
    reports)."""
    problem = Problem.make(REACH, {"link": [(1, 2), (2, 1), (2, 3), (3, 2)]},
                           [["-link(@2, 3)"]], scope="nohash")
    policy, seen, reference = ExhaustivePolicy(problem), set(), Reference(problem)
    choose = policy.choose

    def digesting(d):
        seen.add(d.state())
        return choose(d)
    policy.choose = digesting
    while True:
        Execution(problem, policy, reference).run()
        if not policy.backtrack():
            break
    hashed = verify_problem(problem.with_scope(hashing=True), "exhaustive")
    assert hashed.states == len(seen) and hashed.distinct_states
    assert "distinct states" in hashed.summary() and hashed.to_json()["states_distinct"]
    plain = verify_problem(problem, "exhaustive")
    assert plain.ok and plain.complete and plain.states > len(seen)
    assert not plain.distinct_states and not plain.to_json()["states_distinct"]
    assert "distinct state" not in plain.summary()
    assert f"{plain.states} delivery choices (no state hashing)" in plain.summary()


def test_a_long_load_of_the_facts_is_not_a_counterexample():
    """The initial facts loaded in FIFO order are one schedule that sets the scene: with
    derivation sets, reachable on a line of 3 nodes loads in 82 deliveries, and its burst
    takes at most 20 in any order. With a bound of 20 deliveries per phase the load was a
    no-quiescence counterexample ('NOT correct even in FIFO order') of a correct scheme
    whose load does end (so was the default bound on a 5-cycle: 3,600 deliveries); the
    bound counts the explored phases, and a FIFO load may take 100 times as many."""
    line = [(1, 2), (2, 1), (2, 3), (3, 2)]
    result = psn.verify(REACH, {"link": line}, [["-link(@1, 2)"]], annotation="derivation",
                        mode="exhaustive", scope="bound=20")
    assert result.ok and result.complete, result.summary()
    result = psn.verify(REACH, {"link": line}, [["-link(@1, 2)"]], annotation="derivation",
                        scope="bound=20", budget=20)        # auto: the FIFO schedule first
    assert result.ok and result.mode != "fifo", result.summary()
    # a load that never ends is still one
    result = psn.verify(APQ, {"a": [(0,)]}, [["-a(@0)"]], annotation=AlwaysFire.name,
                        scope="nohash,bound=5", unsafe=True)
    assert not result.ok and result.counterexample.kind == "no-quiescence"
    assert result.counterexample.label == "facts"
    assert "within 500 deliveries in FIFO order" in result.counterexample.message


def test_the_time_budget_stops_a_schedule_under_way():
    """The time budget was read only between schedules: reachable on a 4-clique with
    derivation sets loads its facts in 23,388 deliveries (about 200 s), and a search with a
    budget of 10 s ran the whole load before it noticed. A schedule now stops at the
    deadline; the verdict says the budget ran out within it, with no counterexample."""
    clique = [(a, b) for a in range(1, 5) for b in range(1, 5) if a != b]
    for mode, where in (("auto", "within the FIFO schedule that auto runs first"),
                        ("random", "before the random search ran a single schedule")):
        result = psn.verify(REACH, {"link": clique}, [["-link(@1, 2)"]],
                            annotation="derivation", mode=mode, budget="0.5s")
        assert result.ok and not result.complete and result.schedules == 0, result.summary()
        assert where in result.summary()


def test_a_failing_fifo_schedule_claims_no_estimate_of_the_orders():
    """``auto`` estimates the delivery orders from the FIFO schedule; when that schedule
    fails, no estimate was made (the verdict said 'about 0 delivery orders' after a load
    that never ended)."""
    result = psn.verify(APQ, {"a": [(0,)]}, [["-a(@0)"]], annotation=AlwaysFire.name,
                        scope="nohash,bound=5", unsafe=True)
    assert result.mode == "fifo" and not result.ok
    assert "delivery orders" not in result.summary()


# -- scopes, budgets, modes -------------------------------------------------------------------
@pytest.mark.parametrize("annotation", ["derivation", "absorption"])
def test_overlapping_bursts_and_batches(annotation):
    """A link deleted and inserted again, the two bursts racing (overlap) or not."""
    bursts = [["-link(@2, 3)"], ["+link(@2, 3)"]]
    one = {}
    for scope in ("overlap", "batch=2", ""):
        one[scope] = result = psn.verify(REACH, {"link": [(1, 2), (2, 3)]}, bursts,
                                         mode="exhaustive", scope=scope,
                                         annotation=annotation)
        assert result.ok and result.complete, scope
    assert one["overlap"].states > one[""].states


def test_batches_add_schedules():
    one = psn.verify(REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']], mode="exhaustive",
                     scope="nohash")
    two = psn.verify(REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']], mode="exhaustive",
                     scope="nohash,batch=2")
    assert one.complete and two.complete and two.schedules > one.schedules


def test_random_mode_is_seeded_and_never_complete():
    a = psn.verify(REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']], mode="random",
                   budget=20, seed=5)
    b = psn.verify(REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']], mode="random",
                   budget=20, seed=5)
    assert a.ok and not a.complete and a.schedules == 20
    assert (a.states, a.deliveries) == (b.states, b.deliveries)


def test_auto_picks_exhaustive_on_a_small_scope_and_random_past_the_budget():
    small = psn.verify(REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']])
    assert small.mode == "exhaustive" and small.complete and small.estimate >= 1
    tight = psn.verify(REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']], budget=2)
    assert tight.mode == "random" and not tight.complete and tight.schedules == 2


def test_a_search_cut_short_says_it_is_not_a_proof():
    args = (REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']])
    assert Budget.parse(1).describe() == "1 schedule"      # was "1 schedules"
    cut = psn.verify(*args, mode="exhaustive", budget=5)
    assert cut.ok and not cut.complete and cut.spent and cut.schedules == 5
    assert cut.summary().splitlines()[0] == (
        "no counterexample found, which is not a proof: the exhaustive search ran out of "
        "its budget (5 schedules) before it covered every delivery order")
    assert cut.to_json()["budget_spent"] is True
    sampled = psn.verify(*args, mode="random", budget=5)
    assert not sampled.spent and sampled.summary().splitlines()[0] == (
        "no counterexample found, which is not a proof: random search tries some delivery "
        "orders, never all of them")
    nothing = psn.verify(*args, mode="random", budget="0.001ms")     # gone before it starts
    assert nothing.schedules == 0 and nothing.summary().splitlines()[0] == (
        "no counterexample found, which is not a proof: the budget (1e-06 s) ran out "
        "before the random search ran a single schedule")
    whole = psn.verify(*args, mode="exhaustive")
    assert whole.complete and not whole.spent
    assert whole.summary().startswith("reorder-tolerant on this scope")


def test_exhaustive_in_parallel_covers_the_same_scope():
    one = psn.verify(REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']], mode="exhaustive")
    two = psn.verify(REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']], mode="exhaustive",
                     jobs=2)
    assert one.complete and two.complete and two.ok
    assert two.finished >= one.finished


def test_budget_and_scope_parsing():
    assert Budget.parse("30s").seconds == 30 and Budget.parse("30s").schedules is None
    assert Budget.parse("2m").seconds == 120 and Budget.parse(500).schedules == 500
    assert Scope.parse("overlap, batch=3,fifo").spec() == "overlap,fifo,batch=3"
    for bad in ("forever", "0", "-3s"):
        with pytest.raises(psn.InputError, match="--budget"):
            Budget.parse(bad)
    with pytest.raises(psn.InputError, match="unknown item 'sometimes'"):
        Scope.parse("sometimes")
    with pytest.raises(psn.InputError, match="batch"):
        Scope.parse("batch=0")
    # the last one was used without a word
    with pytest.raises(psn.InputError, match="sets bound twice, to 5 and to 6"):
        Scope.parse("bound=5,bound=6")
    with pytest.raises(psn.InputError, match="sets hashing twice"):
        Scope.parse("hash,nohash")
    assert Scope.parse("fifo,fifo,bound=7,bound=7").spec() == "fifo,bound=7"
    with pytest.raises(psn.InputError, match="unknown verify mode"):
        psn.verify(REACH, {"link": [(1, 2)]}, [["-link(@1, 2)"]], mode="thorough")


@pytest.mark.parametrize("fields, what", [
    (dict(schedules=-1), "schedules must be a positive integer"),
    (dict(schedules="x"), "schedules must be a positive integer"),
    (dict(seconds=float("nan")), "seconds must be a positive finite number"),
    (dict(seconds="1s"), "seconds must be a positive finite number")])
def test_a_budget_built_directly_is_checked(fields, what):
    """Budget(schedules=-1) ran no schedule and reported no counterexample, and
    Budget(schedules="x") was a TypeError inside the search."""
    with pytest.raises(psn.InputError, match=what):
        psn.verify(REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']], budget=Budget(**fields))


@pytest.mark.parametrize("schedules", [None, 10])
def test_an_infinite_time_budget_is_refused(schedules):
    """Budget(None, inf) passed the check that refuses an unbounded random search
    (Budget(None, None)), and such a search ran until interrupted."""
    with pytest.raises(psn.InputError, match="seconds must be a positive finite number or "
                                             r"None \(no time limit\), got inf"):
        Budget(schedules=schedules, seconds=float("inf"))


@pytest.mark.parametrize("mode", ["random", "adversarial"])
def test_a_random_search_without_a_bound_is_refused(mode):
    """Budget(None, None) is unbounded: an exhaustive search ends by itself, but a random
    or adversarial one ran until interrupted."""
    unbounded = Budget(schedules=None, seconds=None)
    with pytest.raises(psn.InputError, match=f"a {mode} search with an unbounded budget "
                                             "would never end") as err:
        psn.verify(REACH, {"link": LIU_LINKS}, [['-link(@"C", "B")']], mode=mode,
                   budget=unbounded)
    assert "budget=1000" in err.value.render()
    done = psn.verify(REACH, {"link": [(1, 2), (2, 3)]}, [["-link(@2, 3)"]],
                      mode="exhaustive", budget=unbounded)
    assert done.ok and done.complete and done.budget.describe() == "unbounded"


def test_nothing_to_verify_is_refused():
    """Without bursts, the facts are delivered in one order: the report said
    'reorder-tolerant ... every delivery order explored' after exploring nothing."""
    with pytest.raises(psn.InputError, match="nothing to verify") as err:
        psn.verify(REACH, {"link": [(1, 2), (2, 3)]})
    assert "--scope facts" in err.value.render()
    explored = psn.verify(REACH, {"link": [(1, 2), (2, 3)]}, scope="facts")
    assert explored.ok and explored.complete and explored.schedules > 1


def test_unknown_fact_in_a_burst_is_an_input_error():
    with pytest.raises(psn.PSNError, match="nosuch"):
        psn.verify(REACH, {"link": [(1, 2)]}, [["-nosuch(@1)"]])


@pytest.mark.parametrize("facts, bursts, what", [
    (3, [["-link(@1, 2)"]], "facts are {pred: [tuple, ...]} or a list of insertions, got int"),
    ("link(@1, 2)", [["-link(@1, 2)"]], "or a list of insertions, got str 'link"),
    ({"link": [5]}, [["-link(@1, 2)"]], "fact of 'link' must be a tuple, got 5"),
    ({"link": [(1, 2)]}, 3, "bursts must be a list of bursts, each a list of updates, got int"),
    ({"link": [(1, 2)]}, [3], "a burst is a list of updates, got int 3"),
    ({"link": [(1, 2)]}, [{"link": [(1, 2)]}], "a burst is a list of updates, got dict")])
def test_facts_and_bursts_of_the_wrong_kind_are_named(facts, bursts, what):
    """facts=3, a row 5 and bursts=3 were TypeErrors; facts given as one string and a burst
    given as a dict were read character by character into a syntax error."""
    with pytest.raises(psn.InputError, match=re.escape(what)):
        psn.verify(REACH, facts, bursts)


def test_counterexample_methods_refuse_arguments_of_the_wrong_kind(tmp_path):
    """write(5) and render(limit="x") were TypeErrors from deep inside, replay(trace="x")
    ran, verify_problem("x") was an AttributeError; render(limit=0) printed every step."""
    cex = psn.verify(APQ, None, [["+a(@0)", "-a(@0)"]], annotation="fifo-base",
                     unsafe=True, mode="adversarial").counterexample
    with pytest.raises(psn.InputError, match="counterexample file must be a path"):
        cex.write(5)
    with pytest.raises(psn.InputError, match="limit is a whole number"):
        cex.render(limit="x")
    with pytest.raises(psn.InputError, match="trace must be True or False"):
        cex.replay(trace="x")
    with pytest.raises(psn.InputError, match="problem is a psn.verify.Problem"):
        psn.verify.verify_problem("x")
    lines = cex.render(limit=0).splitlines()
    assert not any(re.match(r" +\d+\. \[", line) for line in lines)
    assert any("deliveries not shown" in line for line in lines)


# -- the command line ---------------------------------------------------------------------------
def _files(tmp_path):
    facts = tmp_path / "facts.ndl"
    facts.write_text('link(@"A", "B"). link(@"B", "C"). link(@"C", "A"). link(@"C", "B").\n')
    burst = tmp_path / "burst.ndl"
    burst.write_text('-link(@"C", "B").\n')
    return str(facts), str(burst)


def test_replay_of_a_file_with_a_malformed_update_names_the_file(tmp_path, capsys,
                                                                  monkeypatch):
    """Such an error was shown at '<input>:1:8'."""
    monkeypatch.chdir(tmp_path)
    facts, burst = _files(tmp_path)
    assert main(["verify", str(ROOT / "examples" / "reachable.ndl"), "--facts", facts,
                 "--burst", burst, "--annotation", "set", "--unsafe"]) == 1
    path = tmp_path / "reachable.counterexample.json"
    data = json.loads(path.read_text())
    data["problem"]["bursts"][0][0] = '-link(@"C" "B")'
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["verify", "--replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path} (an update):1:11: syntax error: unexpected" in err


def test_cli_success_exits_0(tmp_path, capsys):
    facts, burst = _files(tmp_path)
    code = main(["verify", str(ROOT / "examples" / "reachable.ndl"), "--facts", facts,
                 "--burst", burst, "--mode", "exhaustive"])
    out = capsys.readouterr().out
    assert code == 0 and "reorder-tolerant on this scope" in out and "complete" in out


def test_cli_failure_writes_and_replays(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    facts, burst = _files(tmp_path)
    code = main(["verify", str(ROOT / "examples" / "reachable.ndl"), "--facts", facts,
                 "--burst", burst, "--annotation", "set", "--unsafe"])
    out = capsys.readouterr().out
    # set semantics deletes wrongly on recursion in any order: the verdict says so
    assert code == 1 and out.startswith("NOT correct even in FIFO order (no reordering ")
    path = tmp_path / "reachable.counterexample.json"
    assert path.exists() and "psn verify --replay" in out
    code = main(["verify", "--replay", str(path)])
    replayed = capsys.readouterr().out
    assert code == 1 and "differences from the synchronous semi-naive result" in replayed
    assert replayed.split("\n", 1)[1].strip() in out
    # what the file fixes is named when given too (--mode was silently ignored)
    assert main(["verify", "--replay", str(path), "--mode", "random", "--jobs", "2"]) == 1
    assert capsys.readouterr().err.endswith("ignored: --mode, --jobs\n")
    # a damaged file is an error naming it and the field (exit 2), never a traceback
    # with exit 1, which means "the counterexample still fails"
    good = json.loads(path.read_text())
    for damage, what in [(lambda d: d["problem"].update(facts=5), "'facts' must be a list"),
                         (lambda d: d.update(phase="x"), "'phase' must be an integer"),
                         (lambda d: d.update(kind="cycl"), "'kind' must be one of"),
                         (lambda d: d["problem"].update(scope=3), "'scope' must be a string"),
                         (lambda d: d.pop("problem"), "'problem' must be an object"),
                         (lambda d: d["problem"].update(facts=[["?", "a", [0]]]),
                          "sign of a burst item")]:
        doc = json.loads(json.dumps(good))
        damage(doc)
        bad = tmp_path / "damaged.json"
        bad.write_text(json.dumps(doc))
        assert main(["verify", "--replay", str(bad)]) == 2
        err = capsys.readouterr().err
        assert f"{bad}: " in err and what in err and "Traceback" not in err
    doc = json.loads(json.dumps(good))
    doc["problem"]["facts"] = [""]          # an IndexError: '' was taken for a signed update
    bad.write_text(json.dumps(doc))
    assert main(["verify", "--replay", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"{bad} (an update):1:1: syntax error: "
                                              "unexpected end of input")


def test_cli_json(tmp_path, capsys):
    facts, burst = _files(tmp_path)
    code = main(["verify", str(ROOT / "examples" / "reachable.ndl"), "--facts", facts,
                 "--burst", burst, "--mode", "random", "--budget", "5", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["ok"] and doc["schedules"] == 5 and not doc["complete"]


@pytest.mark.parametrize("argv,message", [
    (["--scope", "never"], "unknown item 'never'"),
    (["--budget", "soon"], "--budget"),
    (["--annotation", "nosuch"], "unknown annotation scheme 'nosuch'"),
])
def test_cli_errors_exit_2(tmp_path, capsys, argv, message):
    facts, burst = _files(tmp_path)
    code = main(["verify", str(ROOT / "examples" / "reachable.ndl"), "--facts", facts,
                 "--burst", burst, *argv])
    assert code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["problem"].update(options=None), "'options' an object"),
    (lambda d: d["problem"].update(annotation="nope"), "unknown annotation scheme 'nope'"),
    (lambda d: d["problem"]["options"].update(ship="bogus"), "ship (--ship) must be"),
    (lambda d: d.update(found_deviations="x"), "'found_deviations' must be a non-negative")])
def test_replay_of_a_file_with_bad_settings_names_the_file(tmp_path, capsys, edit, message):
    """"options": null was read as no options (the file's --unsafe lost, and the run
    refused as unsafe), and a bad annotation or ship mode was refused without naming the
    file; found_deviations was printed as it came ("shrunk from x")."""
    cex = psn.verify(APQ, None, [["+a(@0)", "-a(@0)"]], annotation="fifo-base",
                     unsafe=True, mode="adversarial").counterexample
    data = cex.to_json()
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    assert main(["verify", "--replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"error: {path}: " in err and message in err


def test_a_passing_replay_that_left_the_recorded_schedule_says_so(tmp_path, capsys):
    """A file whose schedule no longer matched its problem (here: another annotation) was
    replayed along other deliveries and reported as "no longer fails" like a fix."""
    cex = psn.verify(APQ, None, [["+a(@0)", "-a(@0)"]], annotation="fifo-base",
                     unsafe=True, mode="adversarial").counterexample
    data = cex.to_json()
    assert data["diverged"] is False
    data["problem"]["annotation"], data["problem"]["options"]["unsafe"] = "absorption", False
    data["tags"] = ["0" * 16 for _ in data["tags"]]
    path = tmp_path / "other.json"
    path.write_text(json.dumps(data))
    again = Counterexample.load(path).replay()
    assert not again.failed and again.diverged and again.to_json()["diverged"] is True
    assert main(["verify", "--replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert "the schedule no longer fails" in out
    assert "note: the replay could not follow every recorded delivery" in out


def test_cli_replay_of_a_bad_file_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    assert main(["verify", "--replay", str(bad)]) == 2
    assert "not a psn verify counterexample" in capsys.readouterr().err


# -- the papers' failure modes (Nigam et al. 2012, Sec. 5-6) ---------------------------------
FIG6 = """
p(@1) :- s(@2), t(@2), r(@2).
s(@2) :- q(@3).
t(@2) :- u(@4).
"""
FIG6_FACTS = {"q": [(3,)], "u": [(4,)]}
FIG6_BURST = [["+r(@2)", "-q(@3)", "-u(@4)"]]
#: Out-of-order deliveries in Fig. 6's run: none. Every channel carries one update; the
#: fault is that the deletions of s and t, from nodes 3 and 4, both reach node 2 before it
#: processes either (one delivery of two messages: scope batch=2).
FIG6_OUT_OF_ORDER = 0


def test_fig6_original_psn_fails_as_in_the_paper():
    result = psn.verify(FIG6, FIG6_FACTS, FIG6_BURST, annotation="original", unsafe=True,
                        mode="exhaustive", scope="batch=2")
    assert not result.ok
    cex = result.counterexample
    assert cex.kind == "wrong-state" and cex.reordered <= FIG6_OUT_OF_ORDER
    assert [(n, rel, s) for n, rel, s, _ in cex.diff] == [(1, "p", 1)]  # p stays at node 1
    assert "node 2 <- node 3, node 4: -s(@2)  -t(@2)" in cex.render()


def test_fig6_original_psn_needs_two_updates_arriving_together():
    result = psn.verify(FIG6, FIG6_FACTS, FIG6_BURST, annotation="original", unsafe=True,
                        mode="exhaustive")
    assert result.ok and result.complete


@pytest.mark.parametrize("annotation", ["derivation", "absorption"])
def test_fig6_derivation_and_absorption_are_reorder_tolerant(annotation):
    result = psn.verify(FIG6, FIG6_FACTS, FIG6_BURST, annotation=annotation,
                        mode="exhaustive", scope="batch=2")
    assert result.ok and result.complete


def test_apq_fifo_base_fails_when_the_deletion_overtakes_the_insertion():
    """Nigam Sec. 6: <+,a> and <-,a>; the deletion, first at node 0, is discarded as a cyclic
    echo, and a, p and q end present. With FIFO channels that cannot happen; what remains
    is the insertion and the deletion chasing each other round the p/q cycle."""
    args = dict(bursts=[["+a(@0)", "-a(@0)"]], annotation="fifo-base", unsafe=True,
                mode="adversarial", budget=50)
    cex = psn.verify(APQ, **args).counterexample
    assert cex.kind == "wrong-state" and cex.reordered == 1
    assert sorted((rel, s) for _, rel, s, _ in cex.diff) == [("a", 1), ("p", 1), ("q", 1)]
    fifo = psn.verify(APQ, fifo=True, **args).counterexample
    assert fifo.kind == "cycle" and fifo.reordered == 0


@pytest.mark.parametrize("fifo", [True, False])
def test_apq_fifo_base_is_right_when_each_update_settles_first(fifo):
    """Nigam Sec. 6's own FIFO run: the insertion of a has settled when a is deleted (the
    coordinator Liu et al. assume, one update at a time: two bursts). The echo -p from the
    p/q cycle finds p absent and is discarded; nothing is left and the run ends."""
    result = psn.verify(APQ, bursts=[["+a(@0)"], ["-a(@0)"]], annotation="fifo-base",
                        unsafe=True, mode="exhaustive", fifo=fifo)
    assert result.ok and result.complete and result.states > 0


def test_fifo_base_is_right_on_fifo_channels_without_a_cycle():
    args = dict(facts={"link": [(1, 2)]}, bursts=[["+link(@2, 3)", "-link(@2, 3)"]],
                annotation="fifo-base", unsafe=True, mode="exhaustive")
    cex = psn.verify(REACH, **args).counterexample
    assert cex.kind == "wrong-state" and cex.reordered == 1
    fifo = psn.verify(REACH, fifo=True, **args)
    assert fifo.ok and fifo.complete


def test_counting_does_not_terminate_on_a_cycle():
    result = psn.verify(APQ, bursts=[["+a(@0)"]], annotation="counting", unsafe=True,
                        mode="exhaustive", scope="bound=200")
    cex = result.counterexample
    assert cex.kind == "no-quiescence" and "within 200 deliveries" in cex.message
    assert cex.deviations == 0          # every order: already the FIFO one


def test_cli_deletion_of_a_missing_fact_names_the_burst_line(tmp_path, capsys):
    facts, _ = _files(tmp_path)
    burst = tmp_path / "gone.ndl"
    burst.write_text('+link(@"A", "C").\n-link(@"X", "Y").\n')
    assert main(["verify", str(ROOT / "examples" / "reachable.ndl"), "--facts", facts,
                 "--burst", str(burst)]) == 2
    assert capsys.readouterr().err.startswith(f"{burst}:2:2: error: cannot delete")


@pytest.mark.parametrize("build, what", [
    (lambda: Scope(fifo="no"), "scope: fifo must be True or False, not 'no'"),
    (lambda: Scope(overlap=1), "scope: overlap must be True or False, not 1"),
    (lambda: Scope(facts={}), "scope: facts must be True or False"),
    (lambda: Scope(hashing="yes"), "scope: hashing must be True or False"),
    (lambda: Scope.parse("fifo", bound=3, bogus=1), "Scope.parse has no option 'bogus'"),
    (lambda: Problem.make(REACH, {"link": [(1, 2)]}, [["-link(@1, 2)"]], shp="lazy"),
     "Problem.make has no option 'shp'"),
    (lambda: Problem.make(REACH, {"link": [(1, 2)]}, [["-link(@1, 2)"]],
                          annotation=(s for s in ["set"])),
     "an annotation is a scheme name"),
    (lambda: Problem.make(REACH, {"link": [(1, 2)]}, [["-link(@1, 2)"]], annotation=3),
     "an annotation is a scheme name"),
    (lambda: Problem.make(REACH, {"link": [(1, 2)]}, [["-link(@1, 2)"]],
                          annotation="absorptin"),
     "unknown annotation scheme 'absorptin'")])
def test_scope_and_problem_arguments_are_checked(build, what):
    """Scope(fifo="no") was taken as FIFO channels (a non-empty string is true), and an
    unknown keyword of Scope.parse or Problem.make was a TypeError from the dataclass;
    Problem.make deep-copied any annotation (a generator: 'cannot pickle generator') and
    kept one that is no scheme (3, "absorptin") for the search to fail on."""
    with pytest.raises(psn.InputError, match=re.escape(what)):
        build()


@pytest.mark.parametrize("seed", ["nan", -1.5, False, {"a": 1}])
def test_verify_problem_checks_its_seed(seed):
    """verify checked its seed, but verify_problem passed any value on: "nan", False or a
    dict ran a search seeded with it."""
    problem = Problem.make(REACH, {"link": [(1, 2)]}, [["-link(@1, 2)"]])
    with pytest.raises(psn.InputError, match="seed is an integer"):
        verify_problem(problem, seed=seed)
