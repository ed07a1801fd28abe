"""Nigam et al. 2012's worked examples on the PSN engine.

- Sec. 3.2 / Fig. 1: the two/three-hop program's multiset state, before (as printed in the
  paper) and after the updates <+link(d,f)>, <+link(a,f)>, <-link(a,b)> (counted by an
  independent derivation counter), and the first PSN iteration the text walks through;
- Sec. 5: the a/p/q program with the p/q cycle terminates with p in its own H;
- Sec. 5, Figs. 4-5: the five-rule propositional program terminates after inserting s (every
  fact of the cycle gets an infinite-count occurrence) and after deleting it;
- Sec. 6, Fig. 6: insert r, delete q and u on four nodes ends with no p, under every delivery
  order (the original PSN, which updated state on arrival, kept p).
"""

from __future__ import annotations

import itertools

import pytest

import psn
from engine import CENTRAL, Network

DELIVERIES = ("fifo", "random", "adversarial")

HOPS_DIST = """
h1 hop(@X, Y) :- link(@X, Z), link(@Z, Y).
h2 tri_hop(@X, Y) :- hop(@X, Z), link(@Z, Y).
"""
HOPS_CENTRAL = HOPS_DIST.replace("@", "")
FIG1_LINKS = [("a", "b"), ("a", "d"), ("d", "c"), ("b", "c"), ("c", "h"), ("f", "g")]
FIG1_UPDATES = ["+link(@d, f)", "+link(@a, f)", "-link(@a, b)"]


def _hop_counts(links):
    """Derivations per fact of h1/h2 (multiset semantics, Nigam Sec. 2.2), by brute force."""
    hop: dict = {}
    for (x, z), (z2, y) in itertools.product(links, links):
        if z == z2:
            hop[(x, y)] = hop.get((x, y), 0) + 1
    tri: dict = {}
    for (x, z), n in hop.items():
        for (z2, y) in links:
            if z == z2:
                tri[(x, y)] = tri.get((x, y), 0) + n
    return hop, tri


FIG1_FINAL = [link for link in FIG1_LINKS if link != ("a", "b")] + [("d", "f"), ("a", "f")]


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("delivery", DELIVERIES)
def test_fig1_multiset_state(delivery, batch):
    # As in the paper (its footnote 1), the multiset example uses the unlocalized program.
    net = Network(HOPS_CENTRAL, {"link": FIG1_LINKS}, annotation="derivation",
                  delivery=delivery, seed=2, batch=batch).run()
    # The state printed in Sec. 3.2 before the updates.
    assert net.multiset("hop") == {("a", "c"): 2, ("d", "h"): 1, ("b", "h"): 1}
    assert net.multiset("tri_hop") == {("a", "h"): 2}
    net.apply([u.replace("@", "") for u in FIG1_UPDATES]).run()
    hop, tri = _hop_counts(FIG1_FINAL)
    assert net.multiset("hop") == hop
    assert net.multiset("tri_hop") == tri


@pytest.mark.parametrize("delivery", DELIVERIES)
def test_fig1_distributed(delivery):
    """The localized program on nodes a..h: same relations (localization preserves the
    derivable facts, not their multiplicities: a link_rev copy doubles some counts)."""
    prog = psn.parse(HOPS_DIST)
    net = Network(prog, {"link": FIG1_LINKS}, annotation="derivation", delivery=delivery,
                  seed=3).run()
    ref = psn.evaluate(prog, {"link": FIG1_LINKS})
    assert net.relations() == ref
    net.apply(FIG1_UPDATES).run()
    assert net.relations() == psn.evaluate(prog, {"link": FIG1_FINAL})
    assert set(net.nodes) >= {"a", "b", "c", "d"}


def test_fig1_first_iteration_creates_one_update():
    """Sec. 3.2: picking <+link(a,f)> fires the single update <+hop(a,g)>."""
    net = Network(HOPS_CENTRAL, {"link": FIG1_LINKS}, annotation="set").run()
    node = net.nodes[CENTRAL]
    node.receive((1, "link", ("a", "f"), True))
    out = node.step()
    assert [(u[0], u[1], u[2]) for _, u in out] == [(1, "hop", ("a", "g"))]
    assert ("a", "f") in node.state["link"]


APQ = """
p(@1) :- a(@0).
q(@2) :- p(@1).
p(@1) :- q(@2).
"""


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("delivery", DELIVERIES)
def test_sec5_cycle_puts_p_in_H(delivery, batch):
    net = Network(APQ, {"a": [(0,)]}, annotation="derivation", delivery=delivery,
                  batch=batch, seed=1).run()
    a, p, q = ("a", (0,)), ("p", (1,)), ("q", (2,))
    occurrences = net.node_state(1)["p"][(1,)]
    # The text's state: (p, {a}, {}) and (p, {a, p, q}, {p}).
    assert (frozenset({a}), frozenset()) in occurrences
    assert (frozenset({a, p, q}), frozenset({p})) in occurrences
    net.delete("a", (0,)).run()
    assert not net.relations()["p"] and not net.relations()["q"]


FIVE = """
p() :- s().
q() :- p().
r() :- q().
p() :- r().
q() :- r().
"""


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("delivery", DELIVERIES)
def test_figs4_5_five_rules_terminate(delivery, batch):
    net = Network(FIVE, annotation="derivation", delivery=delivery, batch=batch, seed=4)
    net.insert("s", ()).run()
    state = net.node_state(CENTRAL)
    everything = frozenset({("s", ()), ("p", ()), ("q", ()), ("r", ())})
    for pred in "pqr":
        occ = state[pred][()]
        # Fig. 5: every fact of the cycle is detected to have infinite count, with S = P.
        assert any((pred, ()) in h and s == everything for (s, h) in occ), pred
    net.delete("s", ()).run()
    assert all(not net.relations()[x] for x in "pqr")


FIG6 = """
p(@1) :- s(@2), t(@2), r(@2).
s(@2) :- q(@3).
t(@2) :- u(@4).
"""


@pytest.mark.parametrize("annotation", ["derivation", "set"])
def test_sec6_fig6_no_p_under_every_order(annotation):
    runs = 0
    for delivery in DELIVERIES:
        for seed in range(20):
            for batch in (True, False):
                net = Network(FIG6, {"q": [(3,)], "u": [(4,)]}, annotation=annotation,
                              delivery=delivery, seed=seed, batch=batch).run()
                assert net.relations()["s"] == {(2,)} and net.relations()["t"] == {(2,)}
                net.apply(["+r(@2)", "-q(@3)", "-u(@4)"]).run()
                rel = net.relations()
                assert rel["p"] == set() and rel["s"] == set() and rel["t"] == set()
                assert rel["r"] == {(2,)}
                runs += 1
    assert runs == 120
