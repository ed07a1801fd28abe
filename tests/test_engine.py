"""The PSN engine's API and loop: pick / fire / commit, ν reads, waiting deletions,
aggregates under deletions, keys, errors, metrics.

Every result is compared with the centralized reference (psn.evaluate) on the same final
base facts, or with a property the paper states; nothing is hard-coded from a run.
"""

from __future__ import annotations

import gc
import random
import weakref
from pathlib import Path

import pytest

import psn
import topologies
from engine.placement import Placement
from engine import CENTRAL, Network, Node, prepare, split_aggregates
from engine.guards import UnsafeAnnotationError
from ndlog.errors import InputError, LocalizationError
from ndlog.output import read_facts_file

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

REACH = """
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
"""
# Localized by hand (Nigam et al. 2012, Sec. 2.1): every body at one location.
REACH_LOCAL = """
#hidden(link_rev, aux).
r2a link_rev(@Z, S) :- link(@S, Z).
r2b aux(@S, Z, D) :- reachable(@Z, D), link_rev(@Z, S).
r1 reachable(@S, D) :- link(@S, D).
r2c reachable(@S, D) :- link(@S, Z), aux(@S, Z, D).
"""
CLOSURE = """
t1 tc(X, Y) :- edge(X, Y).
t2 tc(X, Y) :- tc(X, Z), edge(Z, Y).
"""
# Non-linear: both body atoms on tc. Derivation sets enumerate derivation *trees*, which
# explode on cyclic graphs for non-linear rules (a 3-cycle does not finish in minutes), so
# the non-linear case runs on DAGs with derivation sets.
NONLINEAR = """
t1 tc(X, Y) :- edge(X, Y).
t2 tc(X, Y) :- tc(X, Z), tc(Z, Y).
"""


def _same(net: Network, program, facts) -> None:
    ref = psn.evaluate(program if not isinstance(program, str) else psn.parse(program), facts,
                       aggsel=False)
    got = net.relations()
    for name in set(ref) | set(got):
        assert got.get(name, set()) == ref.get(name, set()), name


def _links(rng: random.Random, n: int, m: int) -> list[tuple]:
    out: set[tuple] = set()
    while len(out) < m:
        a, b = rng.sample(range(n), 2)
        out.add((a, b))
    return sorted(out)


@pytest.mark.parametrize("annotation", ["set", "derivation"])
@pytest.mark.parametrize("program", [REACH, REACH_LOCAL, CLOSURE.replace("edge", "link")
                                     .replace("tc", "reachable")], ids=["reach", "local", "tc"])
def test_insert_only_matches_reference(annotation, program):
    links = _links(random.Random(7), 8, 11)
    net = Network(program, {"link": links}, annotation=annotation, seed=3).run()
    _same(net, program, {"link": links})


def test_hand_localized_hides_auxiliaries():
    net = Network(REACH_LOCAL, {"link": [(1, 2), (2, 3)]}).run()
    assert "aux" not in net.relations() and "link_rev" not in net.relations()
    assert net.relations(hidden=True)["aux"]


def test_centralized_program_runs_on_one_node():
    net = Network(CLOSURE, {"edge": [(1, 2), (2, 3), (3, 1)]}).run()
    assert list(net.nodes) == [CENTRAL]
    assert net.metrics["messages_sent"] == 0
    _same(net, CLOSURE, {"edge": [(1, 2), (2, 3), (3, 1)]})


def _dag(rng: random.Random, n: int, m: int) -> list[tuple]:
    return sorted({tuple(sorted(rng.sample(range(n), 2))) for _ in range(m)})


@pytest.mark.parametrize("delivery", ["fifo", "random", "adversarial"])
def test_nonlinear_self_join_uses_nu_view(delivery):
    # tc :- tc, tc: both body atoms on the picked predicate (ν before Δ, committed after).
    # With multiset semantics each derivation tree is counted once: the count of tc(X, Y)
    # equals the number of binary bracketings of all X->Y paths, computed here directly.
    rng = random.Random(3)
    edges = _dag(rng, 7, 11)
    for batch in (True, False):
        net = Network(NONLINEAR, {"edge": edges}, annotation="derivation", batch=batch,
                      seed=5, delivery=delivery).run()
        _same(net, NONLINEAR, {"edge": edges})
        assert net.multiset("tc") == _tree_counts(edges)
        set_net = Network(NONLINEAR, {"edge": edges}, annotation="set", batch=batch,
                          delivery=delivery).run()
        _same(set_net, NONLINEAR, {"edge": edges})
        for e in edges[::2]:
            net.delete("edge", e)
        net.run()
        _same(net, NONLINEAR, {"edge": edges[1::2]})


def _tree_counts(edges) -> dict:
    """Derivation trees of tc(X, Y) for t1/t2 on a DAG: T(x,y) = [edge] + sum_z T(x,z)T(z,y)."""
    nodes = sorted({v for e in edges for v in e})
    t: dict = {}
    for span in range(1, len(nodes)):
        for i, x in enumerate(nodes):
            if i + span >= len(nodes):
                break
            y = nodes[i + span]
            c = int((x, y) in edges)
            c += sum(t.get((x, z), 0) * t.get((z, y), 0) for z in nodes[i + 1:i + span])
            if c:
                t[(x, y)] = c
    return t


@pytest.mark.parametrize("delivery", ["fifo", "random", "adversarial"])
def test_deletions_and_reinsertions(delivery):
    rng = random.Random(11)
    links = _links(rng, 9, 14)
    net = Network(REACH, {"link": links}, delivery=delivery, seed=2).run()
    live = set(links)
    for _ in range(3):
        gone = rng.sample(sorted(live), 3)
        for link in gone:
            net.delete("link", link)
            live.discard(link)
        net.insert("link", gone[0])
        live.add(gone[0])
        net.run()
        _same(net, REACH, {"link": sorted(live)})


def test_deletion_before_insertion_waits_then_cancels():
    net = Network(REACH, annotation="derivation", delivery="adversarial")
    net.apply(["-link(@a, b)", "+link(@a, b)", "+link(@b, c)"])
    net.run()
    _same(net, REACH, {"link": [("b", "c")]})


def test_deleting_missing_base_fact_is_an_input_error():
    net = Network(REACH, {"link": [("a", "b")]}).run()
    net.delete("link", ("x", "y"))
    with pytest.raises(InputError, match=r"link\(@x, y\)"):
        net.run()


def test_base_multiset_needs_two_deletions():
    net = Network(REACH, annotation="derivation").apply(["+link(@a,b)", "+link(@a,b)"]).run()
    assert net.multiset("link")[("a", "b")] == 2
    net.delete("link", ("a", "b")).run()
    assert ("a", "b") in net.relations()["reachable"]
    net.delete("link", ("a", "b")).run()
    assert not net.relations()["reachable"]


def test_single_pick_equals_batched():
    links = _links(random.Random(5), 8, 12)
    a = Network(REACH, {"link": links}, batch=False, seed=1).run()
    b = Network(REACH, {"link": links}, batch=True, seed=1).run()
    assert a.relations() == b.relations()
    assert a.metrics["steps"] > b.metrics["steps"]


AGG = """
a1 stats(@S, min<C>, max<C>, count<D>, sum<C>) :- link(@S, D, C).
a2 total(@S, count<*>) :- link(@S, D, C), link(@D, E, C2).
a3 cheapest(@S, D) :- link(@S, D, C), stats(@S, C, M, N, T).
"""


@pytest.mark.parametrize("annotation", ["derivation", "set"])
def test_aggregates_follow_deletions(annotation):
    rng = random.Random(4)
    links = [(a, b, rng.randint(1, 5)) for a, b in _links(rng, 6, 14)]
    delivery = "fifo" if annotation == "set" else "random"
    net = Network(AGG, {"link": links}, annotation=annotation, seed=9,
                  delivery=delivery).run()
    if annotation == "set":
        # An aggregate retracts its old result, so what depends on it (a3) sees deletions,
        # which set semantics cannot handle; the aggregates themselves are exact when the
        # node's own channel is FIFO (a result that flips back and forth is retracted
        # before it is re-inserted).
        ref = psn.evaluate(psn.parse(AGG), {"link": links})
        got = net.relations()
        assert got["stats"] == ref["stats"] and got["total"] == ref["total"]
        return
    _same(net, AGG, {"link": links})
    assert net.metrics["operator_state"] >= len(links)  # a1 holds one contribution per link
    live = list(links)
    for link in live[:6]:
        net.delete("link", link)
        net.run()
        live.remove(link)
        _same(net, AGG, {"link": live})


def test_aggregate_rewrite_keeps_body_assignments():
    prog = psn.parse("a stats(C, count<S>) :- grade(S, C, G).")
    rewritten, specs = split_aggregates(prog)
    (pred, spec), = specs.items()
    assert pred in rewritten.hidden and spec.head_pred == "stats"
    assert [a.pred for a in rewritten.rules[0].body_atoms] == ["grade"]


def test_keyed_table_replaces_by_key():
    prog = """
    materialize(route, infinity, infinity, keys(1, 2)).
    best(@S, D, C) :- route(@S, D, C).
    """
    net = Network(prog, annotation="derivation").apply(["route(@a, b, 5)"]).run()
    net.apply(["route(@a, b, 3)"]).run()
    assert net.relations()["best"] == {("a", "b", 3)}
    assert net.base_facts()["route"] == {("a", "b", 3)}


def test_the_same_tuple_again_replaces_nothing_in_a_keyed_table():
    """A re-insertion of the stored tuple counts as one more insertion, as in an undeclared
    table (keys on every column are the undeclared default), not as a deletion and an
    insertion: set semantics, which has no deletions to make here, gave two = {} (the
    deletion overtook the first insertion's derivations) under some delivery orders."""
    two = "r1 two(@X, Y) :- link(@X, Z), link(@Z, Y).\n"
    for declare in ("", "materialize(link, infinity, infinity, keys(1, 2)).\n",
                    "materialize(link, infinity, infinity, keys(1)).\n"):
        for seed in range(6):
            net = Network(declare + two, {"link": [(3, 4), (4, 3)]}, annotation="set",
                          delivery="random", seed=seed)
            net.apply([(1, "link", (3, 4))]).run()
            assert net.relations()["two"] == {(3, 3), (4, 4)}, (declare, seed)
        net = Network(declare + two, annotation="absorption")
        net.apply([(1, "link", (0, 1)), (1, "link", (0, 1))]).run()
        net.apply([(-1, "link", (0, 1))]).run()
        assert net.base_facts() == {"link": {(0, 1)}}, declare


def test_set_semantics_refuses_a_keyed_replacement_it_cannot_make_exact():
    """Replacing a keyed tuple deletes it: under set semantics, on a program where a
    deletion is not exact, the burst is refused as an explicit deletion is (it used to
    lose r(1, 2) although m(1, 2) still derives it)."""
    prog = ("materialize(w, infinity, infinity, keys(1, 3)).\n"
            "r1 r(@X, Y) :- w(@X, Y, _).\nr2 r(@X, Y) :- m(@X, Y).\n")
    net = Network(prog, {"w": [(1, 2, 5)], "m": [(1, 2)]}, annotation="set").run()
    with pytest.raises(UnsafeAnnotationError, match=r"w\(@1, 3, 5\) replaces w\(@1, 2, 5\)"):
        net.apply([(1, "w", (1, 3, 5))])
    assert net.base_facts()["w"] == {(1, 2, 5)}
    net.apply([(1, "w", (1, 2, 5)), (1, "w", (1, 4, 6))]).run()   # no replacement: runs
    assert net.relations()["r"] == {(1, 2), (1, 4)}
    exact = Network(prog, {"w": [(1, 2, 5)], "m": [(1, 2)]}, annotation="absorption").run()
    exact.apply([(1, "w", (1, 3, 5))]).run()
    assert exact.relations()["r"] == {(1, 2), (1, 3)}


def test_a_deletion_of_no_base_fact_is_refused_and_forgotten():
    """The run that finds it unmatched raises; the deletion deleted nothing, so the next
    run goes on and a later insertion of the fact is not cancelled by it."""
    net = Network(REACH, {"link": [("a", "b")]}).run()
    net.apply([(-1, "link", ("b", "c"))])
    with pytest.raises(InputError, match=r"cannot delete link\(@b, c\)"):
        net.run()
    net.apply([(1, "link", ("b", "c"))]).run()
    assert net.base_facts() == {"link": {("a", "b"), ("b", "c")}}
    assert net.relations()["reachable"] == {("a", "b"), ("b", "c"), ("a", "c")}


def test_wrong_arity_is_an_input_error():
    with pytest.raises(InputError, match="arity"):
        Network(REACH, {"link": [("a", "b", "c")]})


def test_unlocalizable_rule_is_reported():
    prog = "r p(@S, D) :- q(@S, X), q(@D, X)."
    with pytest.raises(psn.PSNError):
        Network(prog)


def test_metrics_count_traffic_per_node_and_worker():
    links = [("a", "b"), ("b", "c"), ("c", "a")]
    net = Network(REACH, {"link": links}, placement={"a": 0, "b": 0, "c": 1}).run()
    m = net.metrics
    for key in ("updates_processed", "messages_sent", "tuples_sent", "bytes_sent"):
        assert m[key] > 0
    assert sum(row["tuples_sent"] for row in m["nodes"].values()) == m["tuples_sent"]
    assert set(m["workers"]) <= {0, 1, "0", "1"}
    assert 0 < m["worker_bytes_sent"] < m["bytes_sent"]
    single = Network(REACH, {"link": links}, placement=Placement.single()).run().metrics
    assert single["worker_bytes_sent"] == 0 and single["bytes_sent"] > 0


def test_roundtrip_through_wire_gives_same_result():
    links = _links(random.Random(8), 7, 10)
    plain = Network(REACH, {"link": links}, seed=4).run()
    wired = Network(REACH, {"link": links}, seed=4, roundtrip=True).run()
    assert plain.relations() == wired.relations()
    assert plain.metrics["bytes_sent"] == wired.metrics["bytes_sent"]


def test_node_is_deterministic():
    prog = prepare(psn.parse(REACH_LOCAL))
    from provenance import get_scheme
    outs = []
    for _ in range(2):
        scheme = get_scheme("derivation")
        node = Node("a", prog, scheme)
        for t in [("a", "b"), ("a", "c")]:
            node.receive((1, "link", t, scheme.base(None, ("link", t), 0)))
        node.receive((1, "aux", ("a", "b", "d"), scheme.base(None, None, 0)))
        outs.append(node.step())
    assert outs[0] == outs[1] and outs[0]


@pytest.mark.parametrize("generate", [True, False])
def test_a_fired_rule_lets_go_of_the_output_list(generate):
    """The derivations a rule fires into belong to the caller: the compiled rule, generated
    or a chain of closures, keeps no reference to the list once it has fired (a kept one
    holds a node's last derivations alive until the rule fires again)."""
    from engine.compile import compile_delta_rules
    from provenance import get_scheme
    scheme = get_scheme("set")
    program = prepare(psn.parse(REACH_LOCAL))
    node = Node("a", program, scheme)
    fires = compile_delta_rules(node, program.rules, program, generate=generate)["link"]
    out: list = []
    for t in [("a", "b"), ("a", "c")]:
        for fire in fires:
            fire(1, t, scheme.one(None), out)
    assert out
    assert not [r for r in gc.get_referrers(out) if type(r) is list]


def test_a_join_lookup_keeps_an_index_only_once_it_finds_tuples():
    """A lookup on the location argument alone reads the node's table; any other lookup
    makes its index the first time it finds the table non-empty, and the index follows
    every later commit."""
    from provenance import get_scheme
    scheme = get_scheme("set")
    node = Node("a", prepare(psn.parse(REACH_LOCAL)), scheme)
    one = scheme.one(None)
    located = node.index_probe("reachable", (0,))
    by_link = node.index_probe("aux", (0, 1))
    assert located[0](("a",)) is node.state["reachable"] and located[0](("b",)) is None
    node.receive((1, "link", ("a", "b"), one))
    node.step()                                  # r2c looks aux up by (a, b): empty
    assert by_link[0](("a", "b")) is None and "aux" not in node._index_specs
    node.receive((1, "aux", ("a", "b", "d"), one))
    node.step()
    assert "aux" not in node._index_specs        # nothing looked aux up since
    node.receive((1, "link", ("a", "c"), one))
    node.receive((1, "aux", ("a", "c", "e"), one))
    out = node.step()                            # aux(a, c, e) is new: found in ν
    assert (1, "reachable", ("a", "e"), one) in [u for _, u in out]
    assert "aux" in node._index_specs            # the lookup by (a, c) found aux(a, b, d)
    assert by_link[0](("a", "b")) == {("a", "b", "d"): None}
    node.receive((-1, "aux", ("a", "b", "d"), one))
    node.step()
    assert by_link[0](("a", "b")) is None and by_link[0](("a", "c")) == {("a", "c", "e"): None}
    node.receive((1, "reachable", ("a", "e"), one))
    node.step()
    assert located[0](("a",)) is node.state["reachable"] and ("a", "e") in located[0](("a",))


def test_set_insertions_picked_without_the_scheme_as_the_scheme_picks_them():
    """Under set semantics a node picks an insertion itself (``presence_only``): news iff
    the fact is absent. On a seeded stream of batches with repeated insertions, deletions
    and deletions that arrive before their fact (they wait), it steps exactly as a node
    that asks the scheme (a subclass overriding ``pick`` is always asked): the same
    updates out, state, waiting deletions and counts."""
    from provenance.set_scheme import SetScheme

    class AskingSet(SetScheme):
        def pick(self, *args, **kwargs):     # the same answers, but asked of the scheme
            return super().pick(*args, **kwargs)

    assert SetScheme().presence_only and not AskingSet().presence_only
    program = prepare(psn.parse("t1 tc(X, Y) :- edge(X, Y).\n"
                                "t2 tc(X, Y) :- tc(X, Z), edge(Z, Y)."))
    fast, ref = (Node("n", program, scheme) for scheme in (SetScheme(), AskingSet()))
    rng = random.Random(3)
    waited = derived = 0
    for _ in range(60):
        batch = [(rng.choice((1, 1, -1)), "edge", tuple(rng.sample(range(5), 2)), True)
                 for _ in range(rng.randint(1, 5))]
        for _ in range(6):
            for node in (fast, ref):
                for upd in batch:
                    node.receive(upd)
            got, want = fast.step(), ref.step()
            assert got == want
            waited = max(waited, len(fast.waiting))
            derived = max(derived, len(fast.state.get("tc", ())))
            batch = [upd for _, upd in got]
            if not batch:
                break
        assert fast.state == ref.state and fast.waiting == ref.waiting
        assert fast.metrics.updates_processed == ref.metrics.updates_processed
    assert waited and derived > 5


def test_absorption_insertions_picked_without_the_scheme_as_the_scheme_picks_them():
    """Under absorption a node stores and fires a single derivation of an absent fact
    itself (the scheme's ``fresh_type``) until a deletion zeroes variables at the node.
    On a seeded stream of batches of base insertions and deletions (one batch can delete
    a link and insert a derivation through it), it steps exactly as a node that asks the
    scheme for every pick: the same updates out, state and counts."""
    from provenance.absorption import AbsorptionScheme

    class AskingAbsorption(AbsorptionScheme):
        def fresh_type(self, ctx):              # every pick asked of the scheme
            return None

    program = prepare(psn.parse("t1 tc(X, Y) :- edge(X, Y).\n"
                                "t2 tc(X, Y) :- tc(X, Z), edge(Z, Y)."))
    schemes = (AbsorptionScheme(), AskingAbsorption())
    fast, ref = (Node("n", program, s, s.context("n", s.shared_context())) for s in schemes)

    def wire(node, updates):
        return [(dst, (sign, pred, tup, node.scheme.serialize(node.ctx, ann)))
                for dst, (sign, pred, tup, ann) in updates]

    # a link's deletion, then a derivation through it in the same batch: not stored
    for node in (fast, ref):
        node.receive((1, "edge", (0, 1), (1,)))
        node.step()
        node.receive((-1, "edge", (0, 1), (1,)))
        node.receive((1, "tc", (0, 2), (1, 2)))
        node.step()
        assert node.state["tc"] == {}
    rng = random.Random(5)
    live: dict = {}
    seq = 1
    pending: list = [[], []]        # each node's own derivations, delivered late at random
    for step in range(80):
        base = []
        for _ in range(rng.randint(0, 3) if step < 60 else 0):
            edge = tuple(rng.sample(range(5), 2))
            if edge in live and rng.random() < 0.4:
                base.insert(0, (-1, "edge", edge, (live.pop(edge),)))   # deletions first
            elif edge not in live:
                seq += 1
                live[edge] = seq
                base.append((1, "edge", edge, (seq,)))
        late = pending[0]
        chosen = set(rng.sample(range(len(late)), rng.randint(0, len(late))) if step < 60
                     else range(len(late)))
        outs = []
        for i, node in enumerate((fast, ref)):
            for upd in base + [u for j, u in enumerate(pending[i]) if j in chosen]:
                node.receive(upd)
            pending[i] = [u for j, u in enumerate(pending[i]) if j not in chosen]
            outs.append(node.step())
            pending[i] += [upd for _, upd in outs[-1]]
        assert wire(fast, outs[0]) == wire(ref, outs[1])
    assert not pending[0]
    for node in (fast, ref):
        node.tables = {p: {t: node.scheme.serialize(node.ctx, a) for t, a in rows.items()}
                       for p, rows in node.state.items()}
    assert fast.tables == ref.tables and fast.tables["tc"]
    assert fast.metrics.updates_processed == ref.metrics.updates_processed
    assert fast.ctx.zids


def test_string_program_and_burst_strings():
    net = Network("p(@X, Y) :- q(@X, Y), Y > 2.", annotation="set")
    net.apply(["q(@n, 1)", "+q(@n, 3)", ("+", "q", ("m", 5))]).run()
    assert net.relations()["p"] == {("n", 3), ("m", 5)}
    with pytest.raises(InputError):
        net.apply([("*", "q", ("n", 1))])


def test_localization_error_when_rule_spans_unrelated_locations():
    with pytest.raises((LocalizationError, psn.NDlogSemanticError)):
        Network("r p(@S) :- q(@S), s(@T).")


class _HoldAll:
    """A send stage that ships nothing until the end of the stream (a degenerate MinShip):
    the flush at quiescence must still bring the network to the right result."""

    def __init__(self):
        self.buffer: list = []
        self.flushes = 0

    def send(self, node, out):
        self.buffer.extend(out)
        return []

    def flush(self, node):
        self.flushes += 1
        out, self.buffer = self.buffer, []
        return out


class _CountPicks:
    def __init__(self):
        self.seen = 0

    def picked(self, node, picked):
        self.seen += len(picked)
        return picked


def test_pick_and_send_stages_are_in_the_loop():
    links = _links(random.Random(12), 7, 10)
    stages = {}

    def install(node):
        stages[node.id] = (_CountPicks(), _HoldAll())
        node.pick_stages.append(stages[node.id][0])
        node.send_stages.append(stages[node.id][1])
    net = Network(REACH, {"link": links}, on_node=install, seed=2).run()
    _same(net, REACH, {"link": links})
    assert sum(p.seen for p, _ in stages.values()) > 0
    assert all(s.flushes >= 1 and not s.buffer for _, s in stages.values())


def test_runs_are_deterministic_across_hash_seeds():
    """Same inputs and seed, different PYTHONHASHSEED: identical metrics and results (the
    engine iterates dicts in insertion order, never sets)."""
    import json
    import os
    import subprocess
    import sys
    code = (
        "import json, psn\n"
        "from engine import Network\n"
        f"net = Network({REACH!r}, {{'link': [('a','b'),('b','c'),('c','a'),('c','d')]}},"
        " delivery='random', seed=3).run()\n"
        "net.delete('link', ('c', 'a')).run()\n"
        "m = net.metrics\n"
        "print(json.dumps([m['updates_processed'], m['messages_sent'], m['bytes_sent'],"
        " m['polls'], sorted(net.relations()['reachable'])]))\n")
    outs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True, cwd=os.path.dirname(os.path.dirname(
                                 os.path.abspath(__file__))))
        outs.append(json.loads(res.stdout))
    assert outs[0] == outs[1]


NEGATION = (Path(__file__).resolve().parent / "programs" / "negation_unreachable")


@pytest.mark.parametrize("case", ["reachable", "aggregates", "negation", "simulator",
                                  "soft state"])
def test_a_dropped_network_is_freed_without_a_collection(case):
    """A network holds no reference cycle, so dropping it frees its state at once. The
    run loops pause the collector and leave what they made where only a full collection
    examines it, which CPython then hardly ever runs: a node's closures that held the node
    (a dormant index, an aggregate's guard, a negated atom's step) and the ledger's bound
    method made every finished network garbage that was never freed, about 0.35 MB per
    small network, until a run of the same tiny input stopped on its memory limit. A
    simulation's pending soft-state expiries held it through its clock the same way (found
    by a fuzz campaign of the engine's modes, which stopped on its memory limit)."""
    from sim import Simulation
    if case == "negation":
        program = psn.load(NEGATION / "program.ndl")
        facts = read_facts_file(NEGATION / "facts.ndl")
    elif case == "aggregates":
        program = psn.load(EXAMPLES / "shortest_path.ndl")
        facts = {"link": [(a, b, 1) for a, b in _links(random.Random(2), 6, 12)]}
    else:
        program, facts = REACH, {"link": _links(random.Random(2), 6, 12)}
    gc.collect()
    gc.disable()                                 # nothing may be freed by a collection
    try:
        if case in ("simulator", "soft state"):
            if case == "soft state":           # expiries still pending when it is dropped
                program = psn.parse("materialize(link, 5, infinity, keys(1, 2)).\n" + REACH)
            runner = Simulation(program, topologies.make("ring", n=6))
            runner.run_workload("all;delete-links:1")
            assert case == "simulator" or runner.clock.next_time() < float("inf")
            net = runner.net
        else:
            runner = net = Network(program, facts).run()
            pred = sorted(facts)[0]
            runner.apply([(-1, pred, tuple(facts[pred][0]))]).run()
        parts = [runner, next(iter(net.nodes.values())), net.injector.ledger]
        probes = [weakref.ref(p) for p in parts]
        del runner, net, parts
        assert [p() for p in probes] == [None, None, None]
    finally:
        gc.enable()


def test_relaxed_gc_restores_the_collector_and_nests():
    """The run loops' relaxed collection leaves the collector as it found it, also when
    blocks nest or raise, and keeps what the block made collectable afterwards."""
    import gc
    from ndlog.gcpause import relaxed_gc
    before = gc.get_threshold()
    with relaxed_gc():
        assert not gc.isenabled() and gc.get_freeze_count() > 0
        with relaxed_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_threshold() == before and gc.get_freeze_count() == 0
    with pytest.raises(ZeroDivisionError):
        with relaxed_gc():
            1 / 0
    assert gc.isenabled() and gc.get_freeze_count() == 0

    class Cycle:
        pass
    with relaxed_gc():                            # a cycle made inside the block ...
        c = Cycle()
        c.me = c
        probe = weakref.ref(c)
        del c
    assert probe() is not None                    # ... outlives it, unscanned ...
    gc.collect()
    assert probe() is None                        # ... and a full collection frees it
    gc.freeze()                                   # someone else's freeze is left alone
    try:
        frozen = gc.get_freeze_count()
        with relaxed_gc():
            assert not gc.isenabled()
        # left alone: not unfrozen (the count would be 0) and not frozen again (it would
        # grow); it may shrink, as frozen objects are freed by reference counting meanwhile
        assert 0 < gc.get_freeze_count() <= frozen and gc.isenabled()
    finally:
        gc.unfreeze()


def test_run_heartbeat_reports_deliveries_and_updates_in_flight():
    beats = []
    net = Network(REACH, annotation="set", delivery="adversarial", seed=3)
    net.apply([(1, "link", (i, (i + 1) % 40)) for i in range(40)])
    net.run(heartbeat=lambda d, f: beats.append((d, f)))
    assert [d for d, _ in beats] == list(range(1, net.polls + 1))
    assert all(f >= 0 for _, f in beats) and beats[-1][1] == 0


@pytest.mark.parametrize("annotation", ["absorption", "counting", "derivation", "dred",
                                        "fifo-base", "original", "relative", "set"])
def test_node_size_counts_every_stored_occurrence(annotation):
    """A node's (tuples, occurrences) equals a visit of its stored facts with the scheme's
    count, whether or not the scheme counts every fact once (which skips the visit)."""
    two = "t two(@S, D) :- link(@S, Z), link(@Z, D).\n"
    links = [(0, 1), (1, 2), (0, 2), (2, 3), (1, 3)]
    net = Network(psn.parse(two), {"link": links}, annotation=annotation,
                  delivery="fifo", unsafe=True).run()      # only sizes are checked
    net.delete("link", (1, 2)).run()          # two(0, 3) keeps two derivations
    for node in net.nodes.values():
        count = net.scheme.count
        facts = [s for t in node.state.values() for s in t.values()]
        assert node.size() == (len(facts), sum(count(s) for s in facts))
    if annotation == "counting":
        assert net.metrics["state_occurrences"] > net.metrics["state_tuples"]
