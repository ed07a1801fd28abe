"""Liu et al. (ICDE 2009) Fig. 2 at the provenance level: 3 nodes, links p1..p4.

The expected table is the paper's "derivation step 4" (the fixpoint), transcribed by hand:
p1 = link(A,B), p2 = link(B,C), p3 = link(C,A), p4 = link(C,B). Deleting link(C,B) zeroes p4
and, as the paper says (Sec. 4), removes no reachable tuple.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import psn
from provenance.bdd import BDDContext, InsertionRegistry
from provenance.posbool import BDDSemiring, evaluate_annotated, posbool_provenance

REACH = psn.load(Path(__file__).resolve().parent.parent / "examples" / "reachable.ndl")
LINKS = {"p1": ("A", "B"), "p2": ("B", "C"), "p3": ("C", "A"), "p4": ("C", "B")}

# Fig. 2, reachable(src,dst), derivation step 4: tuple -> pv as a sum of products
STEP4 = {
    ("A", "A"): [{"p1", "p2", "p3"}],
    ("A", "B"): [{"p1"}],
    ("A", "C"): [{"p1", "p2"}],
    ("B", "A"): [{"p2", "p3"}],
    ("B", "B"): [{"p2", "p4"}, {"p1", "p2", "p3"}],
    ("B", "C"): [{"p2"}],
    ("C", "A"): [{"p3"}],
    ("C", "B"): [{"p4"}, {"p1", "p3"}],
    ("C", "C"): [{"p2", "p4"}, {"p1", "p2", "p3"}],
}


@pytest.fixture()
def fig2():
    reg = InsertionRegistry(start=1)
    var = {p: reg.insert("link", t, loc=0) for p, t in LINKS.items()}
    ctx = BDDContext()
    base = {"link": {LINKS[p]: ctx.var(v) for p, v in var.items()}}
    prov = evaluate_annotated(REACH, base, BDDSemiring(ctx))["reachable"]
    return reg, var, ctx, prov


def _expected(var):
    return {t: frozenset(frozenset(var[p] for p in s) for s in sop)
            for t, sop in STEP4.items()}


def test_provenance_equals_table_of_step_4(fig2):
    reg, var, ctx, prov = fig2
    expected = _expected(var)
    assert set(prov) == set(expected)
    for t, f in prov.items():
        assert frozenset(ctx.minimal_sop(f)) == expected[t], t
    assert posbool_provenance(REACH, {"link": {LINKS[p]: v for p, v in var.items()}})[
        "reachable"] == expected


def test_zeroing_link_c_b_removes_no_reachable_tuple(fig2):
    reg, var, ctx, prov = fig2
    gone = reg.delete("link", LINKS["p4"])
    assert gone == [var["p4"]]
    after = {t: ctx.zero(f, gone) for t, f in prov.items()}
    assert not any(ctx.is_false(f) for f in after.values())
    without = posbool_provenance(
        REACH, {"link": {LINKS[p]: v for p, v in var.items() if p != "p4"}})["reachable"]
    assert {t: frozenset(ctx.minimal_sop(f)) for t, f in after.items()} == without
    # exactly the tuples whose provenance mentioned p4 change
    changed = {t for t in prov if after[t] != prov[t]}
    assert changed == {t for t, sop in STEP4.items() if any("p4" in s for s in sop)}


def test_why_formatting_of_fig2(fig2):
    # upper-case symbols are quoted so that the output is valid NDlog (else: variables)
    reg, var, ctx, prov = fig2
    assert ctx.format(prov[("C", "B")], reg.describe) == \
        ('link(@"C","B") ∨ link(@"A","B") ∧ link(@"C","A")')
    assert ctx.format(prov[("A", "A")], reg.describe) == \
        ('link(@"A","B") ∧ link(@"B","C") ∧ link(@"C","A")')


def test_fig2_provenance_survives_the_wire(fig2):
    """Every tuple's provenance rebuilt in a fresh manager (another worker) is unchanged."""
    reg, var, ctx, prov = fig2
    other = BDDContext(reorder=True)
    for v in reversed(sorted(var.values())):
        other.var(v)
    for t, f in prov.items():
        g = other.deserialize(ctx.serialize(f))
        assert other.minimal_sop(g) == ctx.minimal_sop(f)
