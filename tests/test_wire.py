"""The msgpack wire format of updates (engine/wire.py) and bytes accounting of the transport."""

from __future__ import annotations

import random

import msgpack
import pytest

import psn
from provenance import get_scheme, scheme_names
from ndlog.errors import InputError
from engine.transport import InMemoryTransport, Placement
from engine.wire import (Codec, decode_updates, encode_updates, encoded_size,
                         packed_items_size)

REACHABLE = """
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
"""

VALUES = [0, -7, 2**40, 2**64, -2**63 - 1, 10**40, 3.25, float("inf"), float("-inf"), "a",
          "", "node 7", (), (1, 2), ("x", (3, ("y",))), (float("inf"), "z")]


def _random_updates(rng: random.Random, scheme, n: int = 30):
    out = []
    for _ in range(n):
        tup = tuple(rng.choice(VALUES) for _ in range(rng.randint(0, 4)))
        out.append((rng.choice((1, -1)), rng.choice(("link", "path", "__agg_r")), tup,
                    scheme.sample_update(None, rng)))
    return out


@pytest.mark.parametrize("name", ["set", "derivation"])
def test_round_trip_keeps_values_and_annotations(name):
    scheme = get_scheme(name)
    rng = random.Random(name)
    ups = _random_updates(rng, scheme)
    back = decode_updates(encode_updates(ups, scheme), scheme)
    assert back == ups
    for (_, _, t, _), (_, _, t2, _) in zip(ups, back):
        assert type(t2) is tuple and t2 == t


def test_plain_msgpack_no_pickle():
    data = encode_updates([(1, "link", ("a", ("b", 1)), None)])
    assert msgpack.unpackb(data, use_list=False) == ((1, "link", ("a", ("b", 1))),)


def test_derivation_h_is_shipped_as_indices():
    scheme = get_scheme("derivation")
    s = frozenset({("link", ("a", "b")), ("reachable", ("b", "c"))})
    full = encoded_size([(1, "reachable", ("a", "c"), (s, s))], scheme)
    none = encoded_size([(1, "reachable", ("a", "c"), (s, frozenset()))], scheme)
    assert full - none == 2  # two small integers, not two facts


def test_unencodable_value_is_an_input_error_naming_it():
    with pytest.raises(InputError, match=r"cannot encode <object object at .*> \(object\)"):
        encode_updates([(1, "p", (object(),), None)])


def test_integers_beyond_64_bits_cross_every_wire():
    """NDlog integers have arbitrary precision: psn eval took them, while psn run and
    psn verify failed with 'cannot encode int on the wire'."""
    from ndlog.packing import packb, unpackb
    from psn.distributed.shard import pack, unpack
    big = (2**64, -2**63 - 1, -(10**30), (2**100, "x"), 10**5000, -(2**20000))
    assert unpackb(packb(big)) == big and unpack(pack([[7, big]])) == ((7, big),)
    assert decode_updates(encode_updates([(1, "p", big, None)])) == [(1, "p", big, None)]


def test_a_run_on_integers_beyond_64_bits_agrees_with_the_reference():
    import psn
    from engine import Network
    program = psn.parse("r1 reachable(@S, D) :- link(@S, D).\n"
                        "r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).\n")
    nodes = [1, 2**64, -2**70, 3]
    links = [(a, b) for a, b in zip(nodes, nodes[1:])]
    net = Network(program, {"link": links}, annotation="absorption", delivery="random",
                  seed=1)
    net.run()
    assert net.relations()["reachable"] == psn.evaluate(program, {"link": links})["reachable"]
    assert (1, 3) in net.relations()["reachable"] and net.metrics["bytes_sent"] > 0


def test_transport_counts_encoded_bytes_per_node_and_worker():
    scheme = get_scheme("derivation")
    tr = InMemoryTransport("fifo", 0, placement=Placement(mapping={"a": 0, "b": 0, "c": 1}))
    tr.connect(Codec(scheme), lambda node: None)
    ups = _random_updates(random.Random(1), scheme, 5)
    tr.send("a", "b", ups[:2])
    tr.send("a", "c", ups[2:])
    tr.send("a", "a", ups)
    m = tr.metrics
    expect = encoded_size(ups[:2], scheme) + encoded_size(ups[2:], scheme)
    assert m.totals["bytes_sent"] == expect
    assert m.totals["messages_sent"] == 2 and m.totals["tuples_sent"] == 5
    assert m.totals["worker_bytes_sent"] == encoded_size(ups[2:], scheme)
    assert m.totals["local_tuples"] == 5
    assert m.per_node["a"]["bytes_sent"] == expect and m.per_worker[0]["messages_sent"] == 2
    delivered = []
    while tr.in_flight():
        delivered += tr.poll()
    assert sorted(map(repr, (u for _, u in delivered))) == sorted(map(repr, ups + ups))


@pytest.mark.parametrize("delivery", ["fifo", "random", "adversarial"])
def test_delivery_orders(delivery):
    tr = InMemoryTransport(delivery, 3)
    sent = {}
    for src in ("a", "b"):
        ups = [(1 if i % 3 else -1, "p", (src, i), None) for i in range(12)]
        sent[src] = ups
        tr.send(src, "z", ups)
    got = []
    while tr.in_flight():
        got += [u for _, u in tr.poll()]
    assert sorted(got) == sorted(sent["a"] + sent["b"])
    if delivery == "fifo":
        for src in ("a", "b"):
            assert [u for u in got if u[2][0] == src] == sent[src]
    if delivery == "adversarial":
        dels = [u for u in got if u[0] < 0]
        assert got[:len(dels)] == dels  # every deletion before every insertion
        assert got[len(dels):] == sorted(got[len(dels):], key=lambda u: (u[2][0] == "a",
                                         -u[2][1]))


def test_random_delivery_overtakes():
    orders = set()
    for seed in range(5):
        tr = InMemoryTransport("random", seed)
        tr.send("a", "z", [(1, "p", (i,), None) for i in range(20)])
        got = []
        while tr.in_flight():
            got += [u[2][0] for _, u in tr.poll()]
        orders.add(tuple(got))
    assert len(orders) > 1 and tuple(range(20)) not in orders


@pytest.mark.parametrize("name", ["derivation", "absorption"])
def test_measured_annotation_bytes_are_the_sum_of_each_annotations_size(name):
    """encode_measured counts annotation bytes as a difference of two packings; it equals
    the sum of every annotation packed on its own (the per-tuple provenance of Liu 7.1)."""
    scheme = get_scheme(name)
    ctx = scheme.context("n", scheme.shared_context())
    rng = random.Random(name)
    codec = Codec(scheme)
    for _ in range(20):
        ups = [(rng.choice((1, -1)), "path", tuple(rng.choice(VALUES) for _ in range(3)),
                scheme.sample_update(ctx, rng)) for _ in range(rng.randint(1, 20))]
        data, ann = codec.encode_measured(ups, ctx)
        assert data == codec.encode(ups, ctx)
        assert ann == sum(codec.annotation_size(u[3], ctx) for u in ups)


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 65535, 65536, 70000])
def test_packed_items_size_is_the_sum_of_each_items_size(n):
    """One array less its header: exact at every msgpack array-header size boundary."""
    rng = random.Random(n)
    items = [rng.choice([(rng.randrange(1 << 40), "x" * rng.randrange(40)), -rng.random(),
                         [rng.randrange(300)] * rng.randrange(20)]) for _ in range(n)]
    assert packed_items_size(items) == sum(len(msgpack.packb(x, use_bin_type=True))
                                           for x in items)


@pytest.mark.parametrize("name", [n for n in scheme_names()
                                  if get_scheme(n).ships_annotations])
def test_annotations_size_in_bulk_is_the_sum_of_each_annotations_size(name):
    """What psn run measures after every step (``Codec.annotations_size``, the scheme's
    ``wire_size``) equals every annotation serialized and packed on its own; absorption's
    single derivations (sorted tuples of insertion ids) are counted without serializing."""
    scheme = get_scheme(name)
    ctx = scheme.context("n", scheme.shared_context())
    rng = random.Random(name)
    codec = Codec(scheme)
    lists = [[scheme.sample_update(ctx, rng) for _ in range(rng.randint(0, 40))]
             for _ in range(10)]
    if name == "absorption":            # single derivations only, then BDDs among them
        cubes = [tuple(sorted(rng.sample(range(1, 1 << 20), rng.randint(0, 20))))
                 for _ in range(300)]
        bdds = [a for a in (scheme.sample_update(ctx, rng) for _ in range(40))
                if type(a) is not tuple]
        assert bdds
        lists += [cubes, cubes[:150] + bdds + cubes[150:]]
    for anns in lists:
        assert codec.annotations_size(anns, ctx) == sum(codec.annotation_size(a, ctx)
                                                        for a in anns)


def _sampled_messages(name: str, ctx, rng: random.Random) -> list[list]:
    """Messages of random updates carrying the scheme's sampled annotations; for
    absorption also single derivations of every length up to 20 and longer ones, over
    insertion ids and node-made (negative) ones."""
    scheme = get_scheme(name)
    msgs = [[(rng.choice((1, -1)), rng.choice(("link", "path")),
              tuple(rng.choice(VALUES) for _ in range(rng.randint(0, 4))),
              scheme.sample_update(ctx, rng)) for _ in range(rng.randint(1, 20))]
            for _ in range(20)]
    if name == "absorption":     # aggregate results' ids are negative (node_var_id)
        msgs.append([(1, "path", (k,), tuple(sorted(rng.sample(range(-(1 << 40), 1 << 20),
                                                               k))))
                     for k in (*range(21), 63, 64, 100)])
    return msgs


@pytest.mark.parametrize("name", scheme_names())
def test_a_message_is_measured_as_it_encodes(name):
    """``Codec.measure`` (what a transport counts when the receiver takes the updates as
    objects) gives the encoded message's length and annotation bytes, without encoding."""
    scheme = get_scheme(name)
    ctx = scheme.context("n", scheme.shared_context())
    codec = Codec(scheme)
    for ups in _sampled_messages(name, ctx, random.Random(name)):
        data, ann = codec.encode_measured(ups, ctx)
        assert codec.measure(ups, ctx) == (len(data), ann)


#: the schemes that run reachable with deletions on a ring; the others run a two-hop
#: program unchecked (``unsafe``: what is compared here is two runs, not the reference)
_DELETING = {"absorption", "derivation", "dred", "relative"}
HOP2 = "h1 hop2(@S, D) :- link(@S, Z), link(@Z, D).\n"


@pytest.mark.parametrize("name", scheme_names())
def test_a_run_counts_the_same_bytes_whether_or_not_messages_are_decoded(name):
    """The simulator counts a message it hands over as objects by measuring it; with
    ``roundtrip`` every message is encoded and decoded: the same bytes, per node, and the
    same relations, with insertions and deletions."""
    import topologies
    from engine.options import RunOptions
    from sim import Simulation
    safe = name in _DELETING
    program = psn.parse(REACHABLE if safe else HOP2)
    runs = []
    for roundtrip in (False, True):
        s = Simulation(program, topologies.make("ring", n=6), annotation=name, seed=5,
                       options=RunOptions(unsafe=not safe), workers=2,
                       roundtrip=roundtrip, state_metrics=False)
        s.run_workload("insert:1.0;delete-links:2")
        runs.append((s.relations(), s.transport.metrics.per_node))
    assert runs[0] == runs[1]
    assert sum(row["bytes_sent"] for row in runs[0][1].values()) > 0
