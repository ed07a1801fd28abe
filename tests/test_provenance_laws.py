"""Algebraic laws of every annotation scheme, on seeded random samples.

The engine relies on them (see provenance/base.py): join and combine commutative and
associative, one and zero identities, zero annihilating join, join distributing over combine,
absorption where the scheme declares it, idempotent combine where declared, serialization
round trips, insertion then deletion of one annotation restoring the stored value,
``derive`` agreeing with the algebra (the join of the lifted body annotations), and a
scheme's fast form of ``derive`` for two body atoms (``derive_pair``) agreeing with
``derive``. Every registered scheme (``set``, ``derivation``, ``absorption``, ``dred``,
``relative``, and the failure modes ``counting``, ``original``, ``fifo-base``) is checked by
the same tests; the insertion-then-deletion law is skipped for the schemes without exact
deletions (``set``, ``absorption``, whose deletions never wait, ``original`` and
``fifo-base``, which drop unmatched ones).
"""

from __future__ import annotations

import random

import msgpack
import pytest

from provenance import AnnotationScheme, NO_FIRE, get_scheme, scheme_names

SAMPLES = 60


def _schemes():
    return scheme_names()


@pytest.fixture(params=_schemes())
def env(request):
    scheme = get_scheme(request.param)
    ctx = scheme.context("n0", scheme.shared_context())
    return scheme, ctx, random.Random(f"laws-{request.param}")


def _triples(scheme, ctx, rng):
    for _ in range(SAMPLES):
        yield (scheme.sample(ctx, rng), scheme.sample(ctx, rng), scheme.sample(ctx, rng))


def test_join_and_combine_commutative_associative(env):
    s, ctx, rng = env
    eq = s.equal
    for a, b, c in _triples(s, ctx, rng):
        for op in (s.join, s.combine):
            assert eq(ctx, op(ctx, a, b), op(ctx, b, a))
            assert eq(ctx, op(ctx, op(ctx, a, b), c), op(ctx, a, op(ctx, b, c)))


def test_identities_and_annihilation(env):
    s, ctx, rng = env
    one, zero = s.one(ctx), s.zero(ctx)
    assert s.is_zero(ctx, zero) and not s.is_zero(ctx, one)
    for a, _, _ in _triples(s, ctx, rng):
        assert s.equal(ctx, s.join(ctx, a, one), a)
        assert s.equal(ctx, s.combine(ctx, a, zero), a)
        assert s.is_zero(ctx, s.join(ctx, a, zero))


def test_join_distributes_over_combine(env):
    s, ctx, rng = env
    for a, b, c in _triples(s, ctx, rng):
        left = s.join(ctx, a, s.combine(ctx, b, c))
        right = s.combine(ctx, s.join(ctx, a, b), s.join(ctx, a, c))
        assert s.equal(ctx, left, right)


def test_absorption_and_idempotence_where_declared(env):
    s, ctx, rng = env
    holds_abs = holds_idem = True
    for a, b, _ in _triples(s, ctx, rng):
        holds_abs &= s.equal(ctx, s.combine(ctx, a, s.join(ctx, a, b)), a)
        holds_idem &= s.equal(ctx, s.combine(ctx, a, a), a)
    if s.absorptive:
        assert holds_abs
    if s.idempotent:
        assert holds_idem
    if not s.absorptive and not s.idempotent:
        # a multiset scheme counts every derivation: the laws must actually fail somewhere
        assert not holds_abs and not holds_idem


def test_serialization_round_trip(env):
    s, ctx, rng = env
    for _ in range(SAMPLES):
        a = s.sample_update(ctx, rng)
        data = s.serialize(ctx, a)
        wire = msgpack.unpackb(msgpack.packb(data, use_bin_type=True), use_list=False)
        assert s.equal(ctx, s.singleton(s.deserialize(ctx, wire)), s.singleton(a))


def test_insert_then_delete_restores(env):
    s, ctx, rng = env
    if not s.exact_deletions:
        pytest.skip("scheme does not maintain deletions exactly")
    fact = ("reachable", ("a", "b"))
    stored = None
    history = []
    for _ in range(SAMPLES // 3):
        a = s.sample_update(ctx, rng)
        res = s.pick(ctx, fact, stored, 1, a)
        assert res is not None
        # a deletion carries what was fired, or what the insertion carried when it was
        # stored without firing (relative provenance: an edge added to a present fact)
        history.append((stored, a if res[1] is NO_FIRE else res[1]))
        stored = res[0]
    for before, delta in reversed(history):
        res = s.pick(ctx, fact, stored, -1, delta)
        assert res is not None, "a deletion of a present occurrence must be pickable"
        stored = res[0]
        assert (stored is None and before is None) or s.count(stored) == s.count(before)
    assert stored is None
    assert s.pick(ctx, fact, None, -1, s.sample_update(ctx, rng)) is None


def _stored(s, ctx, rng, fact):
    """The stored value of ``fact`` after one or two random insertions (None if absent)."""
    stored = None
    for _ in range(rng.randint(1, 2)):
        res = s.pick(ctx, fact, stored, 1, s.sample_update(ctx, rng))
        stored = res[0] if res[1] is not NO_FIRE or stored is None else stored
    return stored


def test_derive_is_the_join_of_lifted_body(env):
    s, ctx, rng = env
    head = ("h", ("never in any S",))
    checked = 0
    for _ in range(SAMPLES):
        parts, values = [], []
        for j in range(rng.randint(1, 3)):
            fact = ("b", (j,))
            if j == 0:
                ann = s.sample_update(ctx, rng)
                parts.append(["b", (j,), ann])
                values.append(s.lift(ctx, fact, s.singleton(ann)))
            else:
                stored = _stored(s, ctx, rng, fact)
                if stored is None:
                    break
                parts.append(["b", (j,), stored])
                occ = s.zero(ctx)
                for o in s.occurrences(stored):
                    occ = s.combine(ctx, occ, s.singleton(o))
                values.append(s.lift(ctx, fact, occ))
        if len(parts) != len(values) or not parts:
            continue
        checked += 1
        expect = s.one(ctx)
        for v in values:
            expect = s.join(ctx, expect, v)
        got = s.zero(ctx)
        for a in s.derive(ctx, 1, head, parts, 0):
            got = s.combine(ctx, got, s.singleton(a))
        assert s.equal(ctx, got, expect) or (s.is_zero(ctx, expect) and s.is_zero(ctx, got))
    assert checked >= SAMPLES // 4


def _paired_schemes() -> list[str]:
    return [n for n in scheme_names()
            if type(get_scheme(n)).derive_pair is not AnnotationScheme.derive_pair]


@pytest.mark.parametrize("name", _paired_schemes())
def test_derive_pair_answers_as_derive(name):
    """A scheme's fast form of ``derive`` for two body atoms gives, where it answers,
    the one annotation ``derive`` gives for an insertion, whichever atom is the delta."""
    s = get_scheme(name)
    ctx = s.context("n0", s.shared_context())
    rng = random.Random(f"pair-{name}")
    pair = s.derive_pair(ctx)
    head = ("h", ("never in any S",))
    answered = 0
    for _ in range(10 * SAMPLES):      # a scheme may answer for few kinds of annotation
        pos = rng.randrange(2)
        parts = [["b", (j,), s.sample_update(ctx, rng) if j == pos
                  else _stored(s, ctx, rng, ("b", (j,)))] for j in range(2)]
        if parts[1 - pos][2] is None:
            continue
        got = pair(parts[0][2], parts[1][2])
        if got is None:
            continue
        answered += 1
        want = list(s.derive(ctx, 1, head, parts, pos))
        assert len(want) == 1 and s.equal(ctx, got, want[0])
    assert answered >= SAMPLES


def _presence_schemes() -> list[str]:
    return [n for n in scheme_names() if get_scheme(n).presence_only]


@pytest.mark.parametrize("name", _presence_schemes())
def test_presence_only_insertions_pick_as_declared(name):
    """A scheme that lets the engine pick its insertions (``presence_only``) picks them
    as the engine then does: news iff absent, the stored value its fixed annotation."""
    s = get_scheme(name)
    ctx = s.context("n0", s.shared_context())
    rng = random.Random(f"presence-{name}")
    one = s.fixed_annotation
    assert one is not None
    for j in range(SAMPLES):
        fact = ("b", (j,))
        assert s.pick(ctx, fact, None, 1, s.sample_update(ctx, rng)) == (one, one)
        assert s.pick(ctx, fact, one, 1, s.sample_update(ctx, rng)) == (one, NO_FIRE)


def _fresh_typed_schemes() -> list[str]:
    return [n for n in scheme_names()
            if type(get_scheme(n)).fresh_type is not AnnotationScheme.fresh_type]


@pytest.mark.parametrize("name", _fresh_typed_schemes())
def test_fresh_type_insertions_pick_as_they_came(name):
    """An insertion of an absent fact whose annotation is of the scheme's ``fresh_type``
    is stored and fired as it came, which the engine then does without calling ``pick``,
    also after deletions have zeroed variables at the node (the type is asked again)."""
    s = get_scheme(name)
    rng = random.Random(f"fresh-{name}")
    checked = zeroed = 0
    for _ in range(SAMPLES // 3):              # a node: insertions, a deletion, insertions
        ctx = s.context("n0", s.shared_context())
        for j in range(30):
            ann = s.sample_update(ctx, rng)
            if j == 15:                         # a deletion zeroes what it names
                stored = _stored(s, ctx, rng, ("b", (j,)))
                if stored is not None:
                    s.pick(ctx, ("b", (j,)), stored, -1, ann)
                    zeroed += 1
                continue
            if type(ann) is not s.fresh_type(ctx):
                continue
            new, delta = s.pick(ctx, ("b", (j,)), None, 1, ann)
            assert new is ann and delta is ann
            checked += 1
    assert checked >= SAMPLES and zeroed > 0


def test_registry():
    assert "absorption" in _paired_schemes()
    assert _presence_schemes() == ["set"]
    assert _fresh_typed_schemes() == ["absorption"]

    assert {"set", "derivation"} <= set(scheme_names())
    assert isinstance(get_scheme("set"), AnnotationScheme)
    from ndlog.errors import InputError
    with pytest.raises(InputError, match="unknown annotation scheme"):
        get_scheme("nope")
