"""Generated delta rules against the closure chain they replace.

A plain join's delta rule is one generated function (``engine.codegen``); every other rule
keeps the chain of closures (``engine.compile``), which serves here as the reference. Two
nodes get the same seeded stream of insertions and deletions, batches of several updates
at once (so atoms read from ν see tuples picked in the same step), and must derive the same
updates in the same order at every step, for every shape the generator writes: index and
full-key lookups, scans, three-atom bodies, a variable repeated inside an atom, anonymous
arguments, assignments and comparisons, constants and expressions as arguments of the body
and the head, and each kind of scheme (constant annotation, body parts).
"""

from __future__ import annotations

import random

import pytest

import psn
from engine import Node, prepare
from engine.compile import compile_delta_rules
from provenance import get_scheme

PROGRAMS = {
    "linear": """
t1 tc(X, Y) :- edge(X, Y).
t2 tc(X, Y) :- tc(X, Z), edge(Z, Y).
""",
    "nonlinear": """
t1 tc(X, Y) :- edge(X, Y).
t2 tc(X, Y) :- tc(X, Z), tc(Z, Y).
""",
    "three atoms": "p(X, W) :- edge(X, Y), edge(Y, Z), link(Z, W).",
    "repeated": "loop(X) :- edge(X, Y), pair(Y, Z, Z).\nself(X, Y) :- pair(X, Y, Y).",
    "scan": "cross(X, Y) :- mark(X), mark(Y).",
    "full key": "both(X, Y) :- edge(X, Y), link(Y, X).",
    "anonymous": "src(X) :- edge(X, _), mark(X).",
    "literals": "far(X, W, C) :- edge(X, Y), link(Y, W), X != W, C := X + W, C > 1.",
    "constants": "one(X) :- link(X, 1), mark(X).\nnext(X) :- mark(X), link(X, X + 1).",
    "expressions": "succ(X, Y + 1) :- edge(X, Y), pair(X, Z, Z).",
}
BASE = {"edge": 2, "link": 2, "pair": 3, "mark": 1}
DOMAIN = 4


def _fact(rng: random.Random) -> tuple:
    pred = rng.choice(sorted(BASE))
    if pred == "edge":             # acyclic: counting and derivation sets stay finite
        a, b = sorted(rng.sample(range(DOMAIN), 2))
        return pred, (a, b)
    return pred, tuple(rng.randrange(DOMAIN) for _ in range(BASE[pred]))


def _nodes(text: str, scheme_name: str):
    program = prepare(psn.parse(text))
    scheme = get_scheme(scheme_name)
    shared = scheme.shared_context()
    made = [Node("n", program, scheme, scheme.context("n", shared)) for _ in range(2)]
    made[1].fire_table = compile_delta_rules(made[1], program.rules, program,
                                             generate=False)
    return scheme, made


def _generated(node) -> bool:
    return all(f.__code__.co_filename.startswith("<delta rule")
               for fires in node.fire_table.values() for f in fires)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("scheme_name", ["set", "absorption", "counting"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_generated_rule_derives_what_the_closure_chain_derives(name, scheme_name, seed):
    scheme, (fast, ref) = _nodes(PROGRAMS[name], scheme_name)
    assert _generated(fast) and not _generated(ref)
    rng = random.Random(seed)
    present: dict = {}              # base fact -> annotation of its insertion
    seq = 0
    fired = 0
    for _ in range(40):
        batch = []
        for _ in range(rng.randint(1, 4)):
            fact = _fact(rng)
            if fact in present and scheme_name != "set":
                batch.append((-1, *fact, present.pop(fact)))
            elif fact not in present:
                seq += 1
                present[fact] = scheme.base(fast.ctx, fact, seq)
                batch.append((1, *fact, present[fact]))
        for _ in range(8):                         # run the batch's consequences
            for node in (fast, ref):
                for upd in batch:
                    node.receive(upd)
            got, want = fast.step(), ref.step()
            assert got == want
            fired += len(got)
            batch = [upd for _, upd in got]
            rng.shuffle(batch)
            if not batch:
                break
    assert fired and fast.state == ref.state


def test_a_rule_with_a_negated_atom_keeps_the_closure_chain():
    program = prepare(psn.parse("p(X) :- q(X, Y), not r(Y).\nr(1)."))
    scheme = get_scheme("absorption")
    node = Node("n", program, scheme, scheme.context("n", scheme.shared_context()))
    assert node.fire_table["q"] and node.fire_table["!r"]
    assert not any(f.__code__.co_filename.startswith("<delta rule")
                   for fires in node.fire_table.values() for f in fires)
