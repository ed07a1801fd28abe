"""The failure modes of earlier algorithms (Nigam et al. 2012, Sec. 5-6), run on the paper's
own examples.

Each scheme of ``provenance.failure_modes`` runs only when the run is unsafe, and fails on
its example under the paper's schedule, reproduced poll by poll with
``engine.transport.ScriptedTransport``; ``derivation`` and ``absorption`` give the right
answer on the same schedule:

- ``counting`` (derivation counts): the a/p/q program of Sec. 5 never converges, the count
  of ``p`` growing with every delivery, and a deletion in the same burst does not stop it;
  without a cycle of derivations (Fig. 1's hops, Fig. 6) the counts are exact;
- ``original`` (state changed on arrival): Fig. 6 ends with ``p`` derived and unsupported;
  ``counting``, which differs only in committing at pick, is right on the same schedule;
- ``fifo-base`` (base-fact annotations that discard a deletion of an absent derivation):
  right on the a/p/q example of Sec. 6 when the deletion of ``a`` comes after its insertion
  has settled; ``<+,a>, <-,a>`` with the deletion delivered first ends with ``a, p, q``
  instead of nothing, and the same burst in send order never ends.
"""

from __future__ import annotations

import pytest

import psn
from engine import Network, RunOptions, prepare
from engine.guards import UnsafeAnnotationError
from engine.network import NotConvergedError
from engine.options import DEFAULT_MAX_UPDATES
from engine.transport import ScriptedTransport
from ndlog.errors import EvaluationError, InputError
from provenance import NO_FIRE, get_scheme
from psn.cli import main

FAILURE_MODES = ("counting", "original", "fifo-base")
EXACT = ("derivation", "absorption")

APQ = """
p(@1) :- a(@0).
q(@2) :- p(@1).
p(@1) :- q(@2).
"""

FIG6 = """
p(@1) :- s(@2), t(@2), r(@2).
s(@2) :- q(@3).
t(@2) :- u(@4).
"""
FIG6_FACTS = {"q": [(3,)], "u": [(4,)]}
FIG6_BURST = ["+r(@2)", "-q(@3)", "-u(@4)"]
#: Fig. 6: the burst reaches nodes 2, 3 and 4 at once; then everything in flight arrives
#: together, so node 2 receives the deletions of s and t before it processes either.
FIG6_SCHEDULE = [FIG6_BURST, "*"]

HOPS = """
h1 hop(X, Y) :- link(X, Z), link(Z, Y).
h2 tri_hop(X, Y) :- hop(X, Z), link(Z, Y).
"""
FIG1_LINKS = [("a", "b"), ("a", "d"), ("d", "c"), ("b", "c"), ("c", "h"), ("f", "g")]


def _present(net) -> dict:
    return {pred: rows for pred, rows in net.relations().items() if rows}


def _reference(program: str, facts: dict) -> dict:
    ref = psn.evaluate(psn.parse(program), facts)
    return {pred: rows for pred, rows in ref.items() if rows}


def _fig6_after(annotation: str, batch: bool) -> Network:
    """Fig. 6: settle the initial facts, then run the burst on the paper's schedule."""
    transport = ScriptedTransport()
    net = Network(FIG6, FIG6_FACTS, annotation=annotation, unsafe=True, batch=batch,
                  transport=transport).run()
    assert _present(net) == _reference(FIG6, FIG6_FACTS)
    transport.follow(FIG6_SCHEDULE)
    return net.apply(FIG6_BURST).run()


def _apq_conflicting(annotation: str, batch: bool, schedule, bound: int = 2_000) -> Network:
    """Sec. 6: the burst <+,a>, <-,a> on the a/p/q program, delivered as ``schedule``."""
    net = Network(APQ, annotation=annotation, unsafe=True, batch=batch,
                  transport=ScriptedTransport(schedule), max_updates=bound)
    return net.apply(["+a(@0)", "-a(@0)"]).run()


# -- refused unless unsafe ----------------------------------------------------------------

@pytest.mark.parametrize("annotation", FAILURE_MODES)
def test_refused_unless_unsafe(annotation):
    with pytest.raises(UnsafeAnnotationError) as err:
        Network(APQ, annotation=annotation)
    text = str(err.value)
    assert f"annotation '{annotation}'" in text and "Nigam et al. 2012, Sec." in text
    assert "--unsafe" in text and "--annotation absorption" in text
    with pytest.raises(UnsafeAnnotationError):
        RunOptions(annotation=annotation).resolve(prepare(psn.parse(APQ)))
    resolved = RunOptions(annotation=annotation, unsafe=True).resolve(prepare(psn.parse(APQ)))
    assert resolved.scheme.name == annotation


@pytest.mark.parametrize("annotation", FAILURE_MODES + EXACT + ("set",))
def test_update_bound_defaults(annotation):
    program = prepare(psn.parse(APQ))
    scheme = get_scheme(annotation)
    bound = RunOptions(annotation=annotation, unsafe=True).resolve(program).max_updates
    assert bound == (DEFAULT_MAX_UPDATES if scheme.may_not_terminate else None)
    assert (scheme.unsafe_reason is None) == (annotation not in FAILURE_MODES)
    unbounded = RunOptions(annotation=annotation, unsafe=True, max_updates=0)
    assert unbounded.resolve(program).max_updates is None
    assert RunOptions(annotation=annotation, unsafe=True,
                      max_updates=7).resolve(program).max_updates == 7


@pytest.mark.parametrize("bad", [-1, 2.5, True, "10"])
def test_update_bound_must_be_a_count(bad):
    with pytest.raises(InputError, match="bound on updates sent"):
        RunOptions(max_updates=bad)


# -- counting -----------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("delivery", ["fifo", "random", "adversarial"])
def test_counting_never_converges_on_the_cycle(delivery, batch):
    """Sec. 5: inserting a(@0), every derivation of p round the p/q cycle derives another."""
    net = Network(APQ, {"a": [(0,)]}, annotation="counting", unsafe=True, delivery=delivery,
                  batch=batch, seed=3, max_updates=300)
    with pytest.raises(NotConvergedError) as err:
        net.run()
    assert isinstance(err.value, EvaluationError) and err.value.updates == 300
    text = str(err.value)
    assert "did not converge after 300 updates" in text
    assert "cycle of derivations" in text and "(Nigam et al. 2012, Sec. 5)" in text
    assert "--annotation absorption" in text
    # the counts keep growing: one more derivation of p per trip round the cycle
    assert net.multiset("p")[(1,)] > 100 and net.multiset("q")[(2,)] > 100


@pytest.mark.parametrize("annotation", EXACT)
def test_exact_schemes_converge_on_the_cycle(annotation):
    net = Network(APQ, {"a": [(0,)]}, annotation=annotation, max_updates=300).run()
    assert _present(net) == _reference(APQ, {"a": [(0,)]})
    net.delete("a", (0,)).run()
    assert _present(net) == {}


@pytest.mark.parametrize("batch", [True, False])
def test_counting_deletion_chases_the_insertion(batch):
    """<+,a>, <-,a> in one burst, the deletion first: it waits for the insertion, then both
    go round the cycle for ever; derivation sets and absorption end with nothing."""
    with pytest.raises(NotConvergedError):
        _apq_conflicting("counting", batch, ["-a(@0)", "+a(@0)"], bound=300)
    for annotation in EXACT:
        net = _apq_conflicting(annotation, batch, ["-a(@0)", "+a(@0)"])
        assert _present(net) == {}


@pytest.mark.parametrize("delivery", ["fifo", "random", "adversarial"])
def test_counting_is_exact_without_cycles(delivery):
    """Nigam Sec. 3.2 and Corollary 19: on a non-recursive program the counts are the
    numbers of derivations (the same multiset as derivation sets), under any order."""
    updates = ["+link(d, f)", "+link(a, f)", "-link(a, b)"]
    nets = {}
    for annotation in ("counting", "derivation"):
        net = Network(HOPS, {"link": FIG1_LINKS}, annotation=annotation, unsafe=True,
                      delivery=delivery, seed=2).run()
        assert net.multiset("hop") == {("a", "c"): 2, ("d", "h"): 1, ("b", "h"): 1}
        nets[annotation] = net.apply(updates).run()
    for pred in ("hop", "tri_hop"):
        assert nets["counting"].multiset(pred) == nets["derivation"].multiset(pred)


# -- original -----------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [True, False])
def test_original_fig6_leaves_p_unsupported(batch):
    net = _fig6_after("original", batch)
    want = _reference(FIG6, {"r": [(2,)]})
    assert want == {"r": {(2,)}}
    assert _present(net) == {"r": {(2,)}, "p": {(1,)}}


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("annotation", ("counting",) + EXACT)
def test_fig6_schedule_is_right_when_state_changes_at_pick(annotation, batch):
    """The same schedule with the commit at pick (counting is original without the
    arrival commit): no p."""
    assert _present(_fig6_after(annotation, batch)) == {"r": {(2,)}}


def _node2_with_r(annotation: str, batch: bool):
    """Node 2 of Fig. 6 holding s, t and r, having sent <+,p>."""
    net = Network(FIG6, FIG6_FACTS, annotation=annotation, unsafe=True, batch=batch).run()
    node = net.node(2)
    node.receive((1, "r", (2,), 1))
    assert node.step() == [(1, (1, "p", (1,), 1))]
    node.receive((-1, "s", (2,), 1))
    node.receive((-1, "t", (2,), 1))
    assert node.has_work()
    return node


def test_original_commits_on_arrival():
    """Both deletions are in the state before either fires: neither delta rule finds the
    other fact, so no <-,p> (counting, which commits at pick, sends it)."""
    node = _node2_with_r("original", True)
    assert node.step() == []
    assert not node.relation("s") and not node.relation("t") and node.relation("r")
    assert not node.has_work()
    node = _node2_with_r("counting", True)
    assert node.step() == [(1, (-1, "p", (1,), 1))]


def test_original_one_pick_per_step_still_commits_every_arrival():
    node = _node2_with_r("original", False)
    assert node.step() == [] and not node.relation("s") and not node.relation("t")
    assert node.has_work()      # the second arrival has not fired yet
    assert node.step() == [] and not node.has_work()
    node = _node2_with_r("counting", False)
    assert node.step() == [(1, (-1, "p", (1,), 1))] and node.relation("t")
    assert node.step() == [] and not node.has_work()


# -- fifo-base ----------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_fifo_base_right_on_fifo_channels(seed, batch):
    """Sec. 6: after the insertion of a has settled, its deletion goes round the cycle and
    the second <-,(p,{a})> finds p absent and is discarded."""
    net = Network(APQ, {"a": [(0,)]}, annotation="fifo-base", unsafe=True, delivery="fifo",
                  seed=seed, batch=batch).run()
    a = ("a", (0,))
    assert net.node_state(1)["p"] == {(1,): frozenset({frozenset({a})})}
    received = net.node(1).metrics.updates_received
    net.delete("a", (0,)).run()
    assert _present(net) == {}
    # <-,(p,{a})> from a, and again from q round the cycle (then discarded)
    assert net.node(1).metrics.updates_received - received == 2


@pytest.mark.parametrize("batch", [True, False])
def test_fifo_base_conflicting_updates_reordered(batch):
    """Sec. 6: <+,a>, <-,a>, the deletion first: it is discarded, the insertion is not."""
    net = _apq_conflicting("fifo-base", batch, ["-a(@0)", "+a(@0)"])
    assert _reference(APQ, {}) == {}
    assert _present(net) == {"a": {(0,)}, "p": {(1,)}, "q": {(2,)}}
    for annotation in EXACT:
        assert _present(_apq_conflicting(annotation, batch, ["-a(@0)", "+a(@0)"])) == {}


@pytest.mark.parametrize("batch", [True, False])
def test_fifo_base_conflicting_updates_in_order_never_end(batch):
    """Not in the paper: the same burst delivered in send order (every channel FIFO) goes
    round the cycle for ever, each node inserting then deleting p or q and firing both."""
    with pytest.raises(NotConvergedError, match="fifo-base"):
        _apq_conflicting("fifo-base", batch, [], bound=300)
    for annotation in EXACT:
        assert _present(_apq_conflicting(annotation, batch, [])) == {}


def test_fifo_base_discards_a_deletion_of_an_absent_derivation():
    s = get_scheme("fifo-base")
    a = ("a", (0,))
    fact = ("p", (1,))
    derivation = frozenset({a})
    assert s.pick(None, fact, None, -1, derivation) == (None, NO_FIRE)  # never waits
    stored, delta = s.pick(None, fact, None, 1, derivation)
    assert delta == derivation
    assert s.pick(None, fact, stored, 1, derivation) == (stored, NO_FIRE)
    assert s.pick(None, fact, stored, -1, frozenset({("b", (0,))})) == (stored, NO_FIRE)
    assert s.pick(None, fact, stored, -1, derivation) == (None, derivation)


# -- the scripted transport ---------------------------------------------------------------

def test_scripted_transport_names_what_is_in_flight():
    net = Network(APQ, annotation="derivation",
                  transport=ScriptedTransport(["+p(@1)"]))
    net.insert("a", (0,))
    with pytest.raises(InputError, match=r"scripted poll 1: \+p\(1\) is not in flight; "
                       r"in flight: \+a\(0\)"):
        net.run()


@pytest.mark.parametrize("entry", ["p(@1)", ["+p(@1", "-q(@2)"], [(0, "p")]])
def test_scripted_transport_refuses_a_bad_entry(entry):
    with pytest.raises(InputError, match="scripted poll 1"):
        ScriptedTransport([entry])


def test_scripted_transport_delivers_in_the_order_named():
    transport = ScriptedTransport([["+a(@0)"], "*"])
    net = Network(APQ, annotation="derivation", transport=transport)
    net.apply(["+a(@0)"]).run()
    assert transport.polled >= 2 and transport.in_flight() == 0
    assert _present(net) == _reference(APQ, {"a": [(0,)]})


# -- command line -------------------------------------------------------------------------

@pytest.fixture
def fig6_files(tmp_path):
    (tmp_path / "p.ndl").write_text(FIG6)
    (tmp_path / "f.ndl").write_text("q(@3).\nu(@4).\n")
    (tmp_path / "b.ndl").write_text("\n".join(u + "." for u in FIG6_BURST) + "\n")
    return tmp_path


@pytest.mark.parametrize("annotation", FAILURE_MODES)
def test_cli_runs_a_failure_mode_only_with_unsafe(fig6_files, capsys, annotation):
    argv = ["run", str(fig6_files / "p.ndl"), "--facts", str(fig6_files / "f.ndl"),
            "--burst", str(fig6_files / "b.ndl"), "--annotation", annotation,
            "--delivery", "fifo"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"annotation '{annotation}'" in err and "--unsafe" in err
    assert "Traceback" not in err
    assert main(argv + ["--unsafe"]) == 0
    out = capsys.readouterr().out
    assert f"annotation {annotation}" in out and "unchecked" in out
