"""provenance.bdd on real CUDD: algebraic laws, zeroing, the wire form across managers with
different variable orders, order-insensitive zeroing, minimal SOP, variable naming."""

from __future__ import annotations

import itertools
import random
import sys

import msgpack
import pytest

from provenance.bdd import (BDDContext, InsertionRegistry, NotMonotoneError, WireError,
                            ZeroSet, chain_ids, format_fact, insertion_id, node_key,
                            node_var_id, var_name)
from provenance.posbool import minimize

POOL = [var_name(i) for i in range(8)]


def rand_sets(rng: random.Random, pool=POOL, max_terms=4, max_len=3):
    return [frozenset(rng.sample(pool, rng.randint(1, max_len)))
            for _ in range(rng.randint(0, max_terms))]


def rand_monotone(ctx: BDDContext, rng: random.Random, pool=POOL):
    return ctx.from_sets(rand_sets(rng, pool))


def rand_any(ctx: BDDContext, rng: random.Random, depth: int = 4, pool=POOL):
    """A random Boolean function, negations included (like in-flight differences)."""
    if depth == 0 or rng.random() < 0.2:
        return ctx.var(rng.choice(pool))
    a, b = rand_any(ctx, rng, depth - 1, pool), rand_any(ctx, rng, depth - 1, pool)
    op = rng.choice("&|-^")
    return {"&": a & b, "|": a | b, "-": ctx.diff(a, b), "^": (a & ~b) | (~a & b)}[op]


def truth_table(ctx: BDDContext, f, pool=POOL) -> tuple:
    """Evaluate f on every assignment of ``pool`` (independent of BDD structure)."""
    out = []
    for bits in itertools.product((False, True), repeat=len(pool)):
        out.append(ctx.bdd.let(dict(zip(pool, bits)), f) == ctx.true)
    return tuple(out)


# ---------------------------------------------------------------------------------------
# algebra


@pytest.mark.parametrize("seed", range(3))
def test_algebraic_laws_on_random_samples(seed):
    rng = random.Random(seed)
    ctx = BDDContext()
    T, F = ctx.true, ctx.false
    for _ in range(60):
        a, b, c = (rand_monotone(ctx, rng) if rng.random() < 0.5 else rand_any(ctx, rng)
                   for _ in range(3))
        assert ctx.and_(a, b) == ctx.and_(b, a)
        assert ctx.or_(a, b) == ctx.or_(b, a)
        assert ctx.and_(a, ctx.and_(b, c)) == ctx.and_(ctx.and_(a, b), c)
        assert ctx.or_(a, ctx.or_(b, c)) == ctx.or_(ctx.or_(a, b), c)
        assert ctx.and_(a, ctx.or_(a, b)) == a                     # absorption
        assert ctx.or_(a, ctx.and_(a, b)) == a
        assert ctx.and_(a, ctx.or_(b, c)) == ctx.or_(ctx.and_(a, b), ctx.and_(a, c))
        assert ctx.and_(a, T) == a and ctx.or_(a, F) == a           # identities
        assert ctx.is_false(ctx.and_(a, F)) and ctx.is_true(ctx.or_(a, T))
        assert ctx.or_(a, a) == a and ctx.and_(a, a) == a           # idempotence
        # the difference is exactly what b adds to a
        d = ctx.diff(b, a)
        assert ctx.or_(a, d) == ctx.or_(a, b)
        assert ctx.is_false(ctx.and_(a, d))
        assert ctx.is_false(ctx.diff(a, ctx.or_(a, b)))
        # zeroing commutes with AND and OR and is idempotent
        z = set(rng.sample(POOL, rng.randint(1, 3)))
        assert ctx.zero(ctx.and_(a, b), z) == ctx.and_(ctx.zero(a, z), ctx.zero(b, z))
        assert ctx.zero(ctx.or_(a, b), z) == ctx.or_(ctx.zero(a, z), ctx.zero(b, z))
        assert ctx.zero(ctx.zero(a, z), z) == ctx.zero(a, z)
        assert not (ctx.support(ctx.zero(a, z)) & z)


def test_zero_is_let_false_not_generalized_cofactor():
    ctx = BDDContext()
    x, y = ctx.var("x0"), ctx.var("x1")
    f = (x & y) | ctx.var("x2")
    assert ctx.zero(f, {"x0"}) == ctx.var("x2")
    assert ctx.zero(x | y, ["x0", "x1"]) == ctx.false
    assert ctx.zero(f, {"x7"}) == f                 # a variable never declared is a no-op
    assert not ctx.declared("x7")
    assert ctx.zero(ctx.true, {"x0"}) == ctx.true


def test_zero_set_records_fresh_names_only():
    z = ZeroSet(["x1"])
    assert z.add(["x1", "x2", "x3"]) == {"x2", "x3"}
    assert "x2" in z and "x9" not in z and len(z) == 3
    assert z.frozen() == frozenset({"x1", "x2", "x3"})


@pytest.mark.parametrize("seed", range(4))
def test_zeroed_set_makes_state_independent_of_delivery_order(seed):
    """A node receiving insertions (provenance) and zeroings of one fact in any order ends
    in the same state when it restricts every incoming provenance by what it saw zeroed."""
    rng = random.Random(seed)
    ctx = BDDContext()
    msgs = [("ins", rand_monotone(ctx, rng)) for _ in range(6)]
    msgs += [("zero", {v}) for v in rng.sample(POOL, 3)]
    dead = set().union(*(m for k, m in msgs if k == "zero"))
    expect = ctx.zero(ctx.disj(m for k, m in msgs if k == "ins"), dead)
    for _ in range(30):
        order = msgs[:]
        rng.shuffle(order)
        seen, stored = ZeroSet(), ctx.false
        for kind, m in order:
            if kind == "zero":
                seen.add(m)
                stored = ctx.zero(stored, seen)
            else:
                stored = ctx.or_(stored, ctx.zero(m, seen))
        assert stored == expect


# ---------------------------------------------------------------------------------------
# wire form


def _shuffled_context(rng: random.Random) -> BDDContext:
    """A manager whose variable order is a random permutation (CUDD reordered by hand)."""
    ctx = BDDContext(reorder=True)
    names = POOL[:]
    rng.shuffle(names)
    for v in names:
        ctx.var(v)
    perm = names[:]
    rng.shuffle(perm)
    ctx.bdd.reorder({v: i for i, v in enumerate(perm)})
    return ctx


@pytest.mark.parametrize("seed", range(4))
def test_round_trip_between_managers_with_different_orders(seed):
    rng = random.Random(seed)
    a = BDDContext()
    for v in reversed(POOL):
        a.var(v)
    b = _shuffled_context(rng)
    order = [b.bdd.var_at_level(i) for i in range(len(POOL))]
    assert order != [a.bdd.var_at_level(i) for i in range(len(POOL))]
    assert [a.bdd.var_levels[v] for v in POOL if a.declared(v)] == \
        sorted(a.bdd.var_levels[v] for v in POOL if a.declared(v))
    for _ in range(40):
        f = rand_any(a, rng) if rng.random() < 0.5 else rand_monotone(a, rng)
        wire = msgpack.unpackb(msgpack.packb(a.serialize(f)), use_list=False)
        g = b.deserialize(wire)
        assert truth_table(b, g) == truth_table(a, f)
        assert g.dag_size == b.deserialize(b.serialize(g)).dag_size
        back = a.deserialize(b.serialize(g))
        assert back == f
        assert a.size_bytes(f) == len(msgpack.packb(a.serialize(f)))


def test_wire_form_is_ints_and_names_table():
    ctx = BDDContext()
    f = ctx.from_sets([{"x3", "x10"}, {"x5"}, {"custom"}])
    names, nodes, root = ctx.serialize(f)
    assert sorted(names, key=str) == sorted([3, 10, 5, "custom"], key=str)
    assert all(isinstance(n, int) for n in nodes) and isinstance(root, int)
    assert len(nodes) == 3 * (f.dag_size - 1)      # one triple per non-constant node
    assert ctx.serialize(ctx.true) == [[], [], 0]
    assert ctx.serialize(ctx.false) == [[], [], 1]
    other = BDDContext()
    assert other.deserialize(ctx.serialize(f)) == other.from_sets(
        [{"x3", "x10"}, {"x5"}, {"custom"}])


@pytest.mark.parametrize("seed", range(3))
def test_deserialize_applies_zeroed_variables(seed):
    rng = random.Random(seed)
    a, b = BDDContext(), BDDContext()
    for _ in range(30):
        f = rand_any(a, rng)
        z = ZeroSet(rng.sample(POOL, rng.randint(1, 4)))
        got = b.deserialize(a.serialize(f), zeroed=z)
        assert got == b.zero(b.deserialize(a.serialize(f)), z)
        assert not (b.support(got) & z.frozen())


@pytest.mark.parametrize("bad", [
    [[0], [0, 4, 0], 2],            # refers forward to node 2
    [[0], [0, 0, 1], 6],            # root beyond the nodes
    [[0], [3, 0, 1], 2],            # variable index out of range
    [[1.5], [0, 0, 1], 2],          # a name that is neither int nor str
    [[True], [0, 1, 0], 2],         # a bool is not an insertion id
    [[0], [0, 0], 2],               # truncated triple
    "nonsense",
])
def test_malformed_wire_raises(bad):
    with pytest.raises(WireError):
        BDDContext().deserialize(bad)


# ---------------------------------------------------------------------------------------
# minimal sum of products


def _is_minimal_sop(ctx, f, sets) -> bool:
    if ctx.from_sets(sets) != f:
        return False
    for s in sets:
        if any(t < s for t in sets):
            return False
        for v in s:           # dropping any literal leaves something that is not an implicant
            if ctx.diff(ctx.conj(ctx.var(w) for w in s - {v}), f) == ctx.false:
                return False
    return True


@pytest.mark.parametrize("seed", range(4))
def test_minimal_sop_is_the_antichain_of_minimal_sets(seed):
    rng = random.Random(seed)
    ctx = BDDContext()
    for _ in range(50):
        sets = rand_sets(rng, max_terms=6, max_len=4)
        f = ctx.from_sets(sets)
        sop = ctx.minimal_sop(f)
        assert set(sop) == set(minimize(sets))
        assert _is_minimal_sop(ctx, f, sop)
        assert [len(s) for s in sop] == sorted(len(s) for s in sop)


def test_minimal_sop_constants_and_non_monotone():
    ctx = BDDContext()
    assert ctx.minimal_sop(ctx.true) == [frozenset()]
    assert ctx.minimal_sop(ctx.false) == []
    assert ctx.format(ctx.true) == "true" and ctx.format(ctx.false) == "false"
    with pytest.raises(NotMonotoneError):
        ctx.minimal_sop(ctx.diff(ctx.var("x1"), ctx.var("x2")))
    with pytest.raises(NotMonotoneError):
        ctx.minimal_sop(~ctx.var("x1"))


def test_format_over_base_tuples():
    reg = InsertionRegistry()
    ab = reg.insert("link", ("a", "b"), loc=0)
    bc = reg.insert("link", ("b", "c"), loc=0)
    ac = reg.insert("link", ("a", "c"), loc=0)
    ctx = BDDContext()
    f = (ctx.var(ab) & ctx.var(bc)) | ctx.var(ac) | (ctx.var(ab) & ctx.var(bc) & ctx.var(ac))
    assert ctx.format(f, reg.describe) == "link(@a,c) ∨ link(@a,b) ∧ link(@b,c)"
    assert ctx.format(f) == "x2 ∨ x0 ∧ x1"


# ---------------------------------------------------------------------------------------
# naming and the registry


def test_registry_gives_every_insertion_a_fresh_variable():
    reg = InsertionRegistry(start=5)
    x = reg.insert("link", ("a", "b"), loc=0)
    y = reg.insert("link", ("a", "b"), loc=0)            # inserted again while live
    assert (x, y) == ("x5", "x6")
    assert reg.live("link", ("a", "b")) == [x, y]
    assert reg.delete("link", ("a", "b")) == [x, y]
    assert reg.delete("link", ("a", "b")) == []
    z = reg.insert("link", ("a", "b"), loc=0)            # re-inserted after the deletion
    assert z == "x7" and z not in (x, y)
    assert reg.fact(x) == ("link", ("a", "b"))
    assert reg.describe(z) == "link(@a,b)" and reg.describe("x99") == "x99"
    assert len(reg) == 3 and reg.next_id == 8 and x in reg


def test_names_and_levels_follow_insertion_ids():
    assert var_name(12) == "x12" and insertion_id("x12") == 12
    assert var_name(-12) == "x-12" and insertion_id("x-12") == -12
    assert insertion_id("x012") is None and insertion_id("y1") is None
    assert insertion_id("x-0") is None and insertion_id("x-012") is None
    with pytest.raises(ValueError):
        var_name(True)
    ctx = BDDContext()
    rng = random.Random(7)
    ids = rng.sample(range(-1000, 1000), 40)
    for i in ids:
        ctx.var(var_name(i))
    levels = ctx.bdd.var_levels
    assert sorted(ids, key=lambda i: levels[var_name(i)]) == sorted(ids)
    assert ctx.num_vars == 40
    assert format_fact("cost", ("a", 3), loc=0) == "cost(@a,3)"
    assert format_fact("cost", ("a", 3)) == "cost(a,3)"


def test_placed_variables_take_their_nodes_levels_above_the_rest():
    """Variables of insertions placed at a node sit together, nodes in ``node_key`` order
    (numbers, then strings), then by id, above the unplaced ones (by id), whatever the
    order of declaration; two managers given one map share one order; a cube over them is
    still the conjunction of its variables."""
    rng = random.Random(11)
    nodes = [3, 1, "b", "a", 2.5]
    ids = rng.sample(range(1, 200), 40)
    where = {i: rng.choice(nodes) for i in ids[:30]}
    placed = {i: node_key(node) for i, node in where.items()}
    assert sorted(nodes, key=node_key) == [1, 2.5, 3, "a", "b"]
    want = sorted(ids[:30], key=lambda i: (node_key(where[i]), i)) + sorted(ids[30:])
    managers = [BDDContext(placed=placed), BDDContext(placed=placed)]
    for ctx in managers:
        for i in rng.sample(ids, len(ids)):
            ctx.var(var_name(i))
        levels = ctx.bdd.var_levels
        assert sorted(ids, key=lambda i: levels[var_name(i)]) == want
    a, b = managers
    some = ids[::3]
    cube = a.cube_function(some)
    assert cube == a.conj(a.var(var_name(i)) for i in some)
    assert b.cube_ids(b.conj(b.var(var_name(i)) for i in some)) == frozenset(some)


def test_a_cube_has_one_wire_form_whatever_the_order_and_the_caches():
    """A cube known by its ids and the same cube found by a walk (made by an OR here)
    serialize alike, in managers whose node order disagrees with the ids and in one
    without placements: ``psn verify`` compares states by these forms."""
    placed = {1: node_key("b"), 2: node_key("a"), 3: node_key("a")}
    known = BDDContext(placed=placed)
    f = known.cube_function([1, 2, 3])
    walked = BDDContext(placed=placed)
    x = walked.id_var
    g = walked.bdd.apply("or", x(1) & x(2) & x(3), x(1) & x(2) & x(3) & x(4))
    plain = BDDContext()
    h = plain.conj(plain.id_var(i) for i in (3, 1, 2))
    assert known.serialize(f) == walked.serialize(g) == plain.serialize(h)
    assert walked.serialize(g)[0] == [3, 2, 1]


def test_variables_past_the_cap_are_appended_as_unplaced(monkeypatch):
    """Placing a variable inside the order costs CUDD time in proportion to the variables
    below it: past ``PLACED_UP_TO`` declared variables, placed ones are appended."""
    monkeypatch.setattr(BDDContext, "PLACED_UP_TO", 4)
    placed = {i: node_key(10 - i) for i in range(1, 9)}      # node order reverses ids
    ctx = BDDContext(placed=placed)
    for i in range(1, 9):
        ctx.var(var_name(i))
    levels = ctx.bdd.var_levels
    assert sorted(range(1, 9), key=lambda i: levels[var_name(i)]) == [4, 3, 2, 1, 5, 6, 7, 8]
    assert ctx.cube_function(range(1, 9)) == ctx.conj(ctx.id_var(i) for i in range(1, 9))


@pytest.mark.parametrize("seed", range(4))
def test_monotone_difference_keeps_the_unabsorbed_derivations(seed):
    """d = monotone_diff(new, old): old | d == old | new, d <= new, d is positive, and its
    minimal sets are exactly the minimal sets of new that old does not imply."""
    rng = random.Random(seed)
    ctx = BDDContext()
    for _ in range(60):
        new_sets, old_sets = rand_sets(rng, max_terms=5), rand_sets(rng, max_terms=5)
        if rng.random() < 0.2:
            old_sets = new_sets[: len(new_sets) // 2]
        new, old = ctx.from_sets(new_sets), ctx.from_sets(old_sets)
        d = ctx.monotone_diff(new, old)
        assert ctx.or_(old, d) == ctx.or_(old, new)
        assert ctx.is_false(ctx.diff(d, new))
        assert ctx.is_false(d) == ctx.is_false(ctx.diff(new, old))
        old_min = minimize(old_sets)
        expect = {p for p in minimize(new_sets) if not any(q <= p for q in old_min)}
        assert set(ctx.minimal_sop(d)) == expect
    assert ctx.monotone_diff(ctx.true, ctx.false) == ctx.true
    assert ctx.monotone_diff(ctx.var("x1"), ctx.true) == ctx.false


@pytest.mark.parametrize("seed", range(4))
def test_monotone_difference_in_one_pass_is_the_closure(seed):
    """The pass over both BDDs (monotone_diff) equals the upward closure of new & ~old
    (monotone_diff_closure) on random positive formulas: ORs of up to 12 products over 12
    variables, old sharing some products and variables with new, constants included."""
    rng = random.Random(seed)
    ctx = BDDContext()
    pool = [f"x{i}" for i in range(12)] + ["a1.2"]
    for new, old in _random_positive_pairs(ctx, rng, pool, 80):
        for n, o in ((new, old), (old, new), (new, ctx.false), (ctx.true, old),
                     (new, new | old)):
            assert ctx.monotone_diff(n, o) == ctx.monotone_diff_closure(n, o)


def _random_positive_pairs(ctx, rng, pool, count: int):
    """``count`` pairs ``(new, old)`` of random positive formulas over ``pool`` (ORs of up
    to 12 and 8 products), ``old`` holding a third of ``new``'s products half the time."""
    for _ in range(count):
        new_sets = rand_sets(rng, pool, max_terms=12, max_len=5)
        old_sets = rand_sets(rng, pool, max_terms=8, max_len=4)
        if rng.random() < 0.5:
            old_sets += rng.sample(new_sets, len(new_sets) // 3)
        yield ctx.from_sets(new_sets), ctx.from_sets(old_sets)


@pytest.mark.parametrize("seed", range(4))
def test_upward_closure_in_one_pass_is_the_closure_variable_by_variable(seed):
    """upward_closure (one pass over the nodes) equals the closure taken one variable at a
    time, d |= x & d[x := false] for every variable, on random functions with negations
    (an in-flight new & ~old among them); and the monotone difference taken through it
    (every difference, PASS_LIMIT 0) equals monotone_diff_closure on random positive
    formulas."""
    rng = random.Random(seed)
    ctx = BDDContext()
    pool = [f"x{i}" for i in range(12)] + ["a1.2"]

    def closure(f):
        for v in pool:
            f = f | ctx.var(v) & ctx.bdd.let({v: False}, f)
        return f
    for _ in range(60):
        f = rand_any(ctx, rng, depth=6, pool=pool)
        for g in (f, ~f, ctx.true, ctx.false):
            assert ctx.upward_closure(g) == closure(g)
    ctx.PASS_LIMIT = 0
    for new, old in _random_positive_pairs(ctx, rng, pool, 60):
        for n, o in ((new, old), (old, new), (new, ctx.false), (new, new | old)):
            assert ctx.monotone_diff(n, o) == ctx.monotone_diff_closure(n, o)


@pytest.mark.parametrize("seed", range(3))
def test_disj_pairwise_is_the_or(seed):
    """disj ORs pairwise: the same function as ORing one operand at a time."""
    rng = random.Random(seed)
    ctx = BDDContext()
    for k in (0, 1, 2, 3, 7, 16):
        fs = [rand_monotone(ctx, rng) for _ in range(k)]
        acc = ctx.false
        for f in fs:
            acc = acc | f
        assert ctx.disj(fs) == acc
        assert ctx.disj(iter(fs)) == acc


# ---------------------------------------------------------------------------------------
# fast paths (cubes, zeroing by a cube of zeroed variables)


def rand_cube(ctx: BDDContext, rng: random.Random, pool=POOL):
    return ctx.conj(ctx.var(v) for v in rng.sample(pool, rng.randint(1, 4)))


@pytest.mark.parametrize("seed", range(4))
def test_cube_wire_form_is_the_general_one(seed):
    """The one-pass wire form of a conjunction equals the general walk's, round-trips, and
    is refused (None) for anything that is not a positive conjunction."""
    rng = random.Random(seed)
    ctx = BDDContext()
    for _ in range(80):
        cube = rand_cube(ctx, rng)
        assert ctx._serialize_cube(cube) == ctx._serialize_dag(cube, int(cube))
        assert BDDContext().deserialize(ctx.serialize(cube)) is not None
        other = rand_monotone(ctx, rng)
        if len(ctx.minimal_sop(other)) > 1:
            assert ctx._serialize_cube(other) is None
        assert ctx._serialize_cube(~cube) is None


@pytest.mark.parametrize("seed", range(4))
def test_support_and_one_prime_agree_with_cudd(seed):
    """support(): the cube walk gives CUDD's support; one_prime(f) is one minimal set of a
    monotone f, f itself when f is a conjunction, and serializes like any BDD."""
    rng = random.Random(seed)
    ctx = BDDContext()
    for _ in range(80):
        f = rand_monotone(ctx, rng) if rng.random() < 0.7 else rand_cube(ctx, rng)
        assert ctx.support(f) == ctx.bdd.support(f)
        assert ctx.is_cube(f) == (len(ctx.minimal_sop(f)) == 1)
        p = ctx.one_prime(f)
        if ctx.is_false(f):
            assert ctx.is_false(p)
            continue
        assert frozenset(ctx.support(p)) in ctx.minimal_sop(f)
        if len(ctx.minimal_sop(f)) == 1:
            assert p == f
        ctx._ser_cache.clear()
        assert ctx.serialize(p) == ctx._serialize_dag(p, int(p)) or ctx.is_true(p)


@pytest.mark.parametrize("seed", range(4))
def test_zero_all_equals_zeroing_each_variable_on_monotone_functions(seed):
    """forall over the cube of zeroed variables is 'set them false' for positive formulas
    (and only for those: on a negative literal it differs)."""
    rng = random.Random(seed)
    ctx = BDDContext()
    for _ in range(80):
        f = rand_monotone(ctx, rng)
        names = set(rng.sample(POOL, rng.randint(1, 3)))
        cube = ctx.conj(ctx.var(v) for v in names)
        assert ctx.zero_all(f, cube) == ctx.zero(f, names)
    x = ctx.var(POOL[0])
    assert ctx.zero_all(~x, x) != ctx.zero(~x, {POOL[0]})


def test_a_manager_outlives_its_context_until_no_function_uses_it(monkeypatch):
    """Functions and their manager collected together as cyclic garbage: the manager is
    freed only once no Function refers to it (dd would otherwise report nodes still
    referenced on the manager's shutdown and dereference freed memory)."""
    import gc
    import provenance.bdd as B

    raised = []
    monkeypatch.setattr(sys, "unraisablehook", raised.append)

    class Holder:
        pass

    ids = set()
    for _ in range(3):
        ctx = BDDContext()
        made_first = [ctx.var(v) & ctx.var(POOL[1]) for v in POOL]
        h = Holder()                                # the GC clears in creation order, so
        h.self = h                                  # the Functions are cleared before
        h.ctx, h.fs = ctx, list(made_first)         # the list and holder that keep them
        ids.add(id(ctx.bdd))
        del made_first, ctx, h
    gc.collect()
    B._sweep()
    assert not raised
    assert not any(id(m) in ids for m in B._GRAVEYARD)
    kept = BDDContext()
    f = kept.var(POOL[0])
    del kept                                        # f keeps the manager alive
    gc.collect()
    B._sweep()
    assert any(m is f.bdd for m in B._GRAVEYARD)
    assert (f & f) == f                             # the manager still works
    manager = id(f.bdd)
    del f
    B._sweep()
    assert not any(id(m) == manager for m in B._GRAVEYARD)
    assert not raised


@pytest.mark.parametrize("seed", range(4))
def test_cube_ids_and_all_and_implies_agree_with_cudd(seed):
    """cube_ids(f) is f's variables exactly when f is a positive conjunction; and_all is
    the AND and records the union for conjunctions; implies is ``<=`` whether the operands
    are cubes (a subset test) or not; a known cube's wire form is the general walk's."""
    rng = random.Random(seed)
    ctx = BDDContext()
    for _ in range(80):
        fs = [rand_cube(ctx, rng) if rng.random() < 0.7 else rand_monotone(ctx, rng)
              for _ in range(rng.randint(1, 3))]
        g = ctx.and_all(fs)
        assert g == ctx.conj(fs)
        for f in (*fs, g, ~g):
            ids = ctx.cube_ids(f)
            # a positive conjunction is the AND of its support (checked by CUDD alone)
            cube = f == ctx.conj(ctx.var(v) for v in ctx.bdd.support(f))
            assert (ids is not None) == cube
            if cube:
                assert {var_name(i) for i in ids} == ctx.support(f)
                ctx._ser_cache.clear()
                assert ctx.serialize(f) == ctx._serialize_dag(f, int(f)) or ctx.is_true(f)
        h = rand_cube(ctx, rng) if rng.random() < 0.7 else rand_monotone(ctx, rng)
        assert ctx.implies(g, h) == (g <= h)
        assert ctx.implies(h, g) == (h <= g)
    ctx._csets.clear()                             # a forgotten cube is read again
    x = ctx.var(POOL[1]) & ctx.var(POOL[4])
    assert ctx.cube_ids(x) == {1, 4}
    assert ctx.cube_ids(ctx.var(POOL[1]) | ctx.var(POOL[4])) is None
    assert ctx.cube_ids(ctx.true) == frozenset()


def test_a_received_single_derivation_is_known_by_its_ids():
    """Rebuilding a cube's wire form in another manager records its insertion ids (no walk
    later); with a zeroed variable it is false; any other form is not recorded."""
    src, dst = BDDContext(), BDDContext()
    cube = src.and_all([src.var(POOL[2]), src.var(POOL[5]), src.var(POOL[7])])
    got = dst.deserialize(src.serialize(cube))
    assert dst.known_cube(got) == {2, 5, 7}
    assert dst.support(got) == {POOL[2], POOL[5], POOL[7]}
    assert dst.is_false(dst.deserialize(src.serialize(cube), zeroed=ZeroSet([POOL[5]])))
    other = src.var(POOL[1]) | src.var(POOL[3])
    assert dst.known_cube(dst.deserialize(src.serialize(other))) is None


def test_node_made_variable_ids_are_negative_and_never_shared():
    """Every node numbers its own variables (aggregate results) without asking anyone:
    distinct (node, number) pairs get distinct negative ids, for int, string, tuple and
    float nodes and a centralized run (None) alike."""
    rng = random.Random(3)
    nodes = [None, 0, 1, 7, 255, 256, 10**12, -1, "a", "node 7", "", (1, 2), ("a",), 2.5,
             True] + rng.sample(range(10**6), 30)
    seen: dict[int, tuple] = {}
    for node in nodes:
        for k in list(range(1, 40)) + [10**6, 2**40]:
            ident = node_var_id(node, k)
            assert ident < 0 and (node, k) == seen.setdefault(ident, (node, k))
    assert node_var_id(7, 1) == -242          # small nodes get small ids


def test_a_cube_over_node_made_variables_crosses_managers():
    """A single derivation holding a node-made (negative) id is a chain on the wire like
    any other, read back as the same ids by a manager that has never seen them."""
    a, b = BDDContext(), BDDContext()
    ids = frozenset({-242, -4, 3, 17})
    data = a.serialize(a.cube_function(ids))
    assert sorted(chain_ids(data)) == sorted(ids)
    got = b.deserialize(msgpack.unpackb(msgpack.packb(data), use_list=False))
    assert b.cube_ids(got) == ids and b.support(got) == {var_name(i) for i in ids}


def test_a_signal_during_cudds_constructor_waits_until_the_manager_is_made(capfd,
                                                                           monkeypatch):
    """A handler's exception inside ``dd.cudd.BDD``'s constructor (Ctrl-C, SIGTERM, an
    experiment's time budget) would leave a half-made manager whose destructor prints an
    error: the exception comes once the manager is made, and nothing is printed."""
    import signal
    import dd._utils
    from ndlog.signals import handling

    class Rang(Exception):
        pass

    def ring(signum, frame):
        raise Rang()

    real = dd._utils.total_memory

    def signalled():          # called by the constructor: the signal lands inside it
        signal.raise_signal(signal.SIGALRM)
        return real()
    monkeypatch.setattr(dd._utils, "total_memory", signalled)
    with handling(signal.SIGALRM, ring), pytest.raises(Rang):
        BDDContext()
    assert capfd.readouterr().err == ""
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL

