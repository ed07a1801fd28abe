"""Unit tests of the simulator's parts: virtual time, latency, delivery models, placement,
traffic accounting, processing time, workload SPECs, metrics files.

The transport is exercised on its own here with plain update tuples; the engine runs over it
in ``tests/test_sim_e2e.py``.
"""

from __future__ import annotations

import csv
import json
import random
import re

import pytest

from ndlog.errors import InputError
from engine.wire import Codec
from provenance import get_scheme
from sim import (Placement, ProcessingModel, SimTransport, VirtualClock, make_delivery,
                 parse_placement, parse_workload)
from sim.events import EventQueue
from sim.metrics import StepResult, write_csv, write_json
from sim.network import LatencyModel, _shuffle
from engine.workloads import DeleteLinks, Flap, InsertLinks, Sensors, Wait, WorkloadContext
from topologies import Link, Node, Topology, make


def upd(i, sign=1):
    return (sign, "m", (i,), None)


def drain(tr: SimTransport) -> list[tuple[float, object, tuple]]:
    """Poll until nothing is in flight; ``[(time, dst, update)]`` in delivery order."""
    out = []
    while True:
        got = tr.poll()
        if not got:
            return out
        out.extend((tr.clock.now(), dst, u) for dst, u in got)


def inversions(seq: list[int]) -> int:
    return sum(1 for i in range(len(seq)) for j in range(i + 1, len(seq)) if seq[i] > seq[j])


def diamond() -> Topology:
    """0-1 (5 ms), 1-2 (7 ms), 0-3 (1 ms), 3-2 (20 ms): 0->2 is 12 ms via 1."""
    nodes = tuple(Node(i, str(i)) for i in range(4))
    links = (Link(0, 1, 5), Link(1, 2, 7), Link(0, 3, 1), Link(2, 3, 20))
    return Topology(nodes, links, kind="test")


# ---------------------------------------------------------------- virtual time


def test_event_queue_orders_by_time_then_sequence():
    q = EventQueue()
    seen = []
    for t, label in [(3.0, "c"), (1.0, "a"), (3.0, "d"), (2.0, "b"), (1.0, "a2")]:
        q.push(t, seen.append, (label,))
    dead = q.push(2.5, seen.append, ("never",))
    dead.cancel()
    assert len(q) == 5
    while q:
        ev = q.pop()
        ev.fn(*ev.args)
    assert seen == ["a", "a2", "b", "c", "d"]
    assert q.peek_time() == float("inf")


def test_virtual_clock_advances_only_through_events():
    clock = VirtualClock()
    stamps = []
    clock.call_later(0.25, lambda: stamps.append(clock.now()))
    clock.call_at(1.5, lambda: stamps.append(clock.now()))
    clock.call_later(0.25, lambda: clock.call_later(0.5, lambda: stamps.append(clock.now())))
    assert clock.now() == 0.0
    assert clock.run(until=1.0) == 3
    assert stamps == [0.25, 0.75]
    assert clock.now() == 1.0               # stopped by ``until``: moved to it
    assert clock.run() == 1
    assert stamps == [0.25, 0.75, 1.5] and clock.now() == 1.5 and clock.idle
    with pytest.raises(ValueError):
        clock.call_at(1.0, print)           # the past
    with pytest.raises(ValueError):
        clock.call_later(-1, print)


def test_cancelled_event_does_not_run():
    clock = VirtualClock()
    ran = []
    ev = clock.call_later(1.0, ran.append, 1)
    clock.call_later(2.0, ran.append, 2)
    clock.cancel(ev)
    clock.run()
    assert ran == [2] and clock.now() == 2.0


# ---------------------------------------------------------------- latency


def test_latency_neighbour_vs_multihop():
    topo = diamond()
    lat = LatencyModel(topo)
    assert lat(0, 1) == pytest.approx(0.005)          # the link itself
    assert lat(3, 2) == pytest.approx(0.020)          # a link, even if a path is shorter
    assert lat(0, 2) == pytest.approx(0.012)          # shortest path 0-1-2
    assert lat(1, 3) == pytest.approx(0.006)          # 1-0-3
    assert lat(2, 2) == 0.0
    assert lat("x", 1) == lat.default and lat.fallbacks == 1


def test_transport_delivers_after_topology_latency():
    topo = diamond()
    tr = SimTransport(topo, delivery="fifo", processing=ProcessingModel(0, 0))
    tr.send(0, 1, [upd(1)])
    tr.send(0, 2, [upd(2)])
    got = drain(tr)
    assert [(round(t, 9), d) for t, d, _ in got] == [(0.005, 1), (0.012, 2)]


def test_messages_leave_when_the_batch_is_processed():
    tr = SimTransport(diamond(), delivery="fifo", processing=ProcessingModel(1e-3, 2e-3))
    tr.send(None, 0, [upd(1), upd(2), upd(3)])          # injected at node 0, t = 0
    assert [d for d, _ in tr.poll()] == [0, 0, 0] and tr.clock.now() == 0.0
    tr.send(0, 1, [upd(4)])                             # sent while node 0 works
    (t, dst, _), = drain(tr)
    assert dst == 1
    assert t == pytest.approx(2e-3 + 3 * 1e-3 + 0.005)  # batch cost, then latency


def test_poll_batches_hands_out_whole_messages_and_poll_flattens_them():
    """The engine's fast path: one ``(destination, updates)`` per message that arrived at
    the instant, in arrival order; ``poll`` is the same updates one pair each."""
    def run(method):
        tr = SimTransport(diamond(), delivery="fifo")
        tr.send(None, 0, [upd(1), upd(2)])
        tr.send(None, 3, [upd(3)])
        tr.send(None, 0, [upd(4)])
        got = getattr(tr, method)()
        return got, tr.in_flight()
    batches, left = run("poll_batches")
    assert batches == [(0, [upd(1), upd(2)]), (3, [upd(3)]), (0, [upd(4)])] and left == 0
    flat, left = run("poll")
    assert flat == [(d, u) for d, us in batches for u in us] and left == 0


def test_a_worker_processes_its_nodes_one_after_another():
    place = Placement(mapping={0: "w", 1: "w", 2: "v", 3: "v"})
    tr = SimTransport(diamond(), delivery="fifo", placement=place,
                      processing=ProcessingModel(1e-3, 0))
    tr.send(None, 0, [upd(1)])
    tr.send(None, 1, [upd(2), upd(3)])
    tr.poll()
    tr.send(0, 2, [upd(4)])
    tr.send(1, 2, [upd(5)])
    arrivals = {u[2][0]: t for t, _, u in drain(tr)}
    assert arrivals[4] == pytest.approx(1e-3 + 0.012)            # node 0 first: 1 update
    assert arrivals[5] == pytest.approx(1e-3 + 2e-3 + 0.007)     # node 1 waits for node 0


# ---------------------------------------------------------------- delivery models


def _channel_order(delivery: str, seed: int = 3, n: int = 60) -> list[int]:
    topo = make("line", n=2, latency=10)
    tr = SimTransport(topo, delivery=delivery, seed=seed, processing=ProcessingModel(0, 0))
    rng = random.Random(seed)
    for i in range(n):                       # sends spread over 30 ms, one channel
        tr.clock.run(until=tr.clock.now() + rng.uniform(0, 0.001))
        tr.send(0, 1, [upd(i)])
    return [u[2][0] for _, _, u in drain(tr)]


def test_fifo_keeps_channel_order_even_with_jitter():
    for spec in ("fifo", "fifo:jitter=2,abs=5ms"):
        order = _channel_order(spec)
        assert sorted(order) == list(range(60))
        assert inversions(order) == 0


def test_random_jitter_reorders():
    order = _channel_order("random:jitter=1,abs=2ms")
    assert sorted(order) == list(range(60))
    assert inversions(order) > 0
    assert _channel_order("random:jitter=1,abs=2ms") == order       # seeded
    assert _channel_order("random:jitter=1,abs=2ms", seed=4) != order


def test_message_shuffle_is_random_shuffle():
    """The random delivery model's in-message shuffle makes the permutation
    ``random.Random.shuffle`` makes for the same seed (so seeded figures stay as they
    were), and leaves the generator in the same state."""
    for seed in range(20):
        ours, theirs = random.Random(seed), random.Random(seed)
        for n in (0, 1, 2, 3, 7, 20, 64, 257):
            x, y = list(range(n)), list(range(n))
            _shuffle(ours, x)
            theirs.shuffle(y)
            assert x == y
            assert sorted(x) == list(range(n))
        assert ours.getstate() == theirs.getstate()


def test_adversarial_reverses_a_burst_and_lets_deletions_overtake():
    tr = SimTransport(make("line", n=2), delivery="adversarial:period=8,spread=10ms",
                      processing=ProcessingModel(0, 0))
    for i in range(8):
        tr.send(0, 1, [upd(i)])
    assert [u[2][0] for _, _, u in drain(tr)] == list(range(7, -1, -1))
    tr.send(0, 1, [upd(100)])
    tr.send(0, 1, [upd(100, -1)])
    assert [u[0] for _, _, u in drain(tr)] == [-1, 1]


def test_delivery_spec_errors():
    with pytest.raises(InputError):
        make_delivery("teleport")
    with pytest.raises(InputError):
        make_delivery("random:color=red")
    with pytest.raises(InputError):
        make_delivery("random:jitter=lots")
    for spec, what in [("random:abs=-5ms", "abs must be a finite number >= 0, got -5 ms"),
                       ("random:jitter=-1", "jitter must be"),
                       ("fifo:jitter=nan", "jitter must be"),
                       ("adversarial:period=0", "period must be a whole number >= 1"),
                       ("adversarial:spread=-1s", "spread must be"),
                       # Python's words before: "invalid literal for int() with base 10"
                       ("adversarial:period=1.5", "period must be a whole number, not '1.5'"),
                       ("random:jitter=", "jitter must be a number, not ''"),
                       # the last one won
                       ("random:jitter=0.5,jitter=0.7", "option 'jitter' is given twice")]:
        with pytest.raises(InputError, match=f"bad delivery model '{re.escape(spec)}': .*{what}"):
            make_delivery(spec)
    with pytest.raises(InputError, match="per batch must be a finite number >= 0, got -2 ms"):
        ProcessingModel.parse("20us+-2ms")
    with pytest.raises(InputError, match="not a duration: ''"):     # ran with 50us per batch
        ProcessingModel.parse("20us+")
    with pytest.raises(InputError, match="local latency"):
        LatencyModel(make("line", n=2), local=-0.001)


# ---------------------------------------------------------------- placement and traffic


def test_placement_by_node_hash_and_map(tmp_path):
    assert Placement().worker(5) == 5
    p = Placement(4)
    workers = [p.worker(n) for n in range(200)]
    assert set(workers) == {0, 1, 2, 3}
    assert workers == [Placement(4).worker(n) for n in range(200)]     # stable
    m = Placement(mapping={1: "a", 2: "a", 3: "b"})
    assert m.same_worker(1, 2) and not m.same_worker(2, 3)
    with pytest.raises(InputError):
        m.worker(9)
    mixed = Placement(3, {7: 2})
    assert mixed.worker(7) == 2 and mixed.worker(8) in (0, 1, 2)
    assert mixed.describe() == "3 workers by hash (1 mapped explicitly)"
    for worker in ("big", 3, -1, True):     # with N workers a map names 0..N-1, as on Ray
        with pytest.raises(InputError, match=f"placed on worker {worker!r}, but 3 workers"):
            Placement(3, {7: worker})
    f = tmp_path / "place.txt"
    f.write_text("# node worker\n0 w1\n1 w1\n2, w2\n")
    q = parse_placement(None, str(f))
    assert q.groups([0, 1, 2]) == {"w1": [0, 1], "w2": [2]}
    with pytest.raises(InputError, match=re.escape(f"node 3 is not in the placement map {f}")):
        q.worker_of(3)              # the message names the map's file
    import pickle
    with pytest.raises(InputError, match=re.escape(f"not in the placement map {f}")):
        pickle.loads(pickle.dumps(q)).worker_of(3)
    with pytest.raises(InputError):
        parse_placement("many")


def test_messages_inside_a_worker_cost_no_traffic():
    place = Placement(mapping={0: "w", 1: "w", 2: "v", 3: "v"})
    tr = SimTransport(diamond(), placement=place, processing=ProcessingModel(0, 0))
    tr.connect(Codec(get_scheme("set")), lambda node: None)
    batch = [(1, "link", (0, i), True) for i in range(5)]
    tr.send(0, 1, batch)            # same worker
    tr.send(0, 2, batch)            # across workers
    tr.send(0, 0, batch)            # to itself
    drain(tr)
    c = tr.counters
    assert c.total.local_msgs == 2 and c.total.local_updates == 10
    assert c.total.msgs_sent == 1 and c.total.updates_sent == 5
    size = len(Codec(get_scheme("set")).encode(batch))
    assert c.total.bytes_sent == size and c.total.local_bytes == size
    assert c.workers["w"].bytes_sent == size and c.workers["v"].bytes_recv == size
    assert c.nodes[2].msgs_recv == 1 and c.nodes[1].msgs_recv == 0
    m = tr.metrics.totals
    assert m["worker_bytes_sent"] == size and m["bytes_sent"] == 2 * size


# ---------------------------------------------------------------- workloads


def test_workload_specs_parse():
    ring = make("ring", n=6)
    w = parse_workload("insert:0.25,0.5,1.0;delete-links:3;flap:2-3:2;wait:1.5s", ring)
    assert [type(p) for p in w.phases] == [InsertLinks, DeleteLinks, Flap, Wait]
    assert w.phases[0].fractions == (0.25, 0.5, 1.0)
    assert w.phases[2].link == (2, 3) and w.phases[2].n == 2
    assert w.phases[3].seconds == 1.5
    assert w.count(ring) == 3 + 3 + 4 + 1
    assert type(parse_workload("delete-links:4", ring).phases[0]) is InsertLinks
    assert type(parse_workload(None, ring).phases[0]) is InsertLinks
    s = parse_workload("sensors:trigger=0.4,untrigger=7").phases[0]
    assert isinstance(s, Sensors) and s.trigger == 0.4 and s.untrigger == 7
    assert parse_workload("sensors:trigger=0.5,untrigger").phases[0].untrigger == -1
    assert parse_workload("flap:random:3").phases[-1].link is None
    for bad in ("insert:0.5,0.2", "explode:3", "flap:1-1:2", "delete-links:x", "wait",
                "sensors:color=1"):
        with pytest.raises(InputError):
            parse_workload(bad, ring)
    for bad, what in (("wait:-5s", "a wait is a duration >= 0"), ("wait:nan", "duration"),
                      ("sensors:trigger=0.5,untrigger=-1", "untrigger=K takes")):
        with pytest.raises(InputError, match=what):     # they ran: -1 un-triggered all
            parse_workload(bad, ring)
    for bad, what in (("insert:", "nothing after ':'"), ("delete-links: ", "nothing after"),
                      ("flap:", "write 'flap' alone"), ("all:", "nothing after"),
                      ("all:3", "all takes no arguments")):
        with pytest.raises(InputError, match=what):     # they ran as 'insert', 'all', ...
            parse_workload(bad, ring)
    for bad, what in (("flap:0", "number of flaps must be >= 1"),     # they ran no flap
                      ("flap:-3", "number of flaps must be >= 1"),    # named '' before
                      ("delete-links:1,2", "takes one number"),       # 2 was ignored
                      ("delete-links:1,x", "takes one number"),
                      ("insert:0.5,0.5", "must increase")):           # an empty step
        with pytest.raises(InputError, match=what):
            parse_workload(bad, ring)
    assert parse_workload("sensors:untrigger=0").phases[-1].untrigger == 0
    assert parse_workload("sensors:untrigger=all").phases[-1].untrigger == -1


def _expand(spec, topo, seed=1, arity=2):
    ctx = WorkloadContext(topo, {}, random.Random(seed), arity)
    base: dict = {}
    steps = []
    for st in parse_workload(spec, topo).steps(ctx):
        for p, ts in st.insert.items():
            base.setdefault(p, set()).update(ts)
        for p, ts in st.delete.items():
            assert set(ts) <= base[p]
            base[p] -= set(ts)
        ctx.base = base
        steps.append(st)
    return steps, base


def test_insert_then_delete_links_one_at_a_time():
    topo = make("random", n=10, m=18, seed=2)
    steps, base = _expand("insert:0.5,1.0;delete-links:5", topo)
    assert [s.inserted for s in steps[:2]] == [18, 18]          # 9 links, both directions
    assert all(s.deleted == 2 and s.inserted == 0 for s in steps[2:])
    assert len(steps) == 7 and len(base["link"]) == 2 * (18 - 5)
    assert len({s.label for s in steps[2:]}) == 5                # five different links


def test_flap_and_sensor_workloads():
    steps, base = _expand("flap:0-1:2", make("ring", n=4), arity=3)
    assert [s.label for s in steps[1:]] == ["flap 0-1 down", "flap 0-1 up"] * 2
    assert steps[1].delete["link"] == [(0, 1, 1), (1, 0, 1)]
    grid = make("sensor-grid", sensors=25, size=50, seeds=2, seed=3)
    steps, base = _expand("sensors:trigger=0.5,untrigger", grid)
    seeds = set(grid.seeds)
    assert {x for (x,) in steps[0].insert["isTriggered"]} == seeds
    triggered = {x for (x,) in steps[1].insert["isTriggered"]}
    assert len(triggered) == round(0.5 * 23) and not triggered & seeds
    assert [s.deleted for s in steps[2:]] == [1] * len(triggered)
    assert base["isTriggered"] == {(x,) for x in seeds}


# ---------------------------------------------------------------- metrics files


def test_step_rows_are_compact_read_only_mappings(tmp_path):
    """A step's per-node figures are :class:`sim.metrics.Row` objects: the mapping a dict
    would be (equal to it, JSON and CSV the same, pickled and copied), read-only, with the
    key index shared by every row of the same keys, and smaller than the dict."""
    import copy
    import pickle
    import sys
    import psn
    from sim import Simulation
    from sim.metrics import Row
    ring = make("ring", n=5)
    sim = Simulation(psn.parse("r1 reachable(@S, D) :- link(@S, D).\n"
                               "r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).\n"),
                     ring, seed=1)
    r = sim.step(insert={"link": sorted(ring.facts(2)["link"])})
    assert all(type(row) is Row for row in r.per_node.values())
    a, b = r.per_node[0], r.per_node[1]
    assert a._index is b._index and list(a) == list(a._index)
    as_dicts = {n: dict(row) for n, row in r.per_node.items()}
    assert r.per_node == as_dicts and as_dicts[0]["tuples"] == a["tuples"] > 0
    assert pickle.loads(pickle.dumps(a)) == a and copy.deepcopy(a) is a
    with pytest.raises(TypeError):
        a["tuples"] = 0
    assert sys.getsizeof(a) + sys.getsizeof(a._values) < sys.getsizeof(as_dicts[0])
    plain = StepResult(**{**r.__dict__, "per_node": as_dicts, "per_worker": as_dicts})
    for writer, name in ((lambda p, s: write_json(p, {}, s), "m.json"), (write_csv, "m.csv")):
        writer(tmp_path / name, [r])
        writer(tmp_path / ("plain-" + name), [plain])
        assert (tmp_path / name).read_text() == (tmp_path / ("plain-" + name)).read_text()


def test_rows_that_repeat_from_the_last_step_are_shared():
    """A node that saw no traffic in two steps and kept its state has the same row in both:
    the second step keeps the first's row object instead of a copy. The step's table is a
    read-only mapping whose key index is the previous step's."""
    import psn
    import copy
    import pickle
    from sim import Simulation
    from sim.metrics import RowTable
    ring = make("ring", n=5)
    sim = Simulation(psn.parse("r1 reachable(@S, D) :- link(@S, D).\n"
                               "r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).\n"
                               "r3 mark(@S) :- flag(@S).\n"), ring, seed=1)
    loaded = sim.step(insert={"link": sorted(ring.facts(2)["link"])})
    first = sim.step(insert={"flag": [(0,)]})
    second = sim.step(insert={"flag": [(1,)]})
    for n in (2, 3, 4):
        assert second.per_node[n] is first.per_node[n]
        assert second.per_node[n]["processed"] == 0
        assert second.per_node[n]["tuples"] == loaded.per_node[n]["tuples"] > 0
    assert first.per_node[0]["processed"] > 0 == second.per_node[0]["processed"]
    assert second.per_node[0] is not first.per_node[0]
    assert second.per_node[1]["processed"] > 0 == first.per_node[1]["processed"]
    assert second.per_node[1]["tuples"] == first.per_node[1]["tuples"] + 2
    assert second.per_worker is second.per_node
    table = second.per_node                   # the table itself: read-only, keys shared
    assert type(table) is RowTable and table._index is first.per_node._index
    assert table == {n: dict(row) for n, row in table.items()} and list(table) == [*range(5)]
    assert table.get(9) is None and 9 not in table and len(table) == 5
    with pytest.raises(TypeError):
        table[0] = {}
    assert pickle.loads(pickle.dumps(table)) == table and copy.deepcopy(table) is table


def test_metrics_json_and_csv(tmp_path):
    step = StepResult(index=0, label="insert 1", inserted=4, deleted=0, start=0.0,
                      sim_time=0.5, wall_time=0.01, events=9,
                      traffic={"bytes_sent": 100, "msgs_sent": 2},
                      state={"tuples": 4, "provenance_bytes": 40, "state_bytes": 90},
                      provenance_per_tuple=10.0,
                      per_node={0: {"bytes_sent": 60, "tuples": 3}, 1: {"bytes_sent": 40}},
                      per_worker={"w": {"bytes_sent": 100, "tuples": 4}},
                      check=False, diff=[("reachable", "+", (0, 1))])
    write_json(tmp_path / "m.json", {"seed": 1}, [step])
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["run"] == {"seed": 1}
    (s,) = doc["steps"]
    assert s["per_node"]["0"]["bytes_sent"] == 60 and s["diff"] == [["reachable", "+",
                                                                     "(0, 1)"]]
    write_csv(tmp_path / "m.csv", [step])
    rows = list(csv.DictReader(open(tmp_path / "m.csv")))
    assert [r["scope"] for r in rows] == ["total", "node", "node", "worker"]
    assert rows[0]["bytes_sent"] == "100" and rows[0]["check"] == "false"
    assert rows[1]["id"] == "0" and float(rows[1]["provenance_per_tuple"]) == 0.0


def test_a_busy_worker_keeps_channel_order():
    """A message queued at a busy worker is not overtaken by a later message of the same
    channel that arrives exactly when the worker becomes free."""
    tr = SimTransport(make("line", n=2, latency=10), delivery="fifo",
                      processing=ProcessingModel(0, 0.015))
    tr.send(None, 1, [upd(0)])
    tr.poll()                                   # node 1's worker is busy until 15 ms
    tr.send(0, 1, [upd(1)])                     # arrives at 10 ms: waits
    tr.clock.run(until=0.005)
    tr.send(0, 1, [upd(2)])                     # arrives at exactly 15 ms
    got = drain(tr)
    assert [u[2][0] for _, _, u in got] == [1, 2]
    assert all(t == pytest.approx(0.015) for t, _, _ in got)
    assert tr.deferred == 2


def test_a_program_that_reads_none_of_a_sensor_grids_facts_is_refused():
    """reachable on a sensor grid loaded nothing (its links are nbr facts, not link), ran
    zero messages and passed its checks."""
    from pathlib import Path

    import psn
    from sim import Simulation
    root = Path(__file__).resolve().parent.parent
    grid = make("sensor-grid")
    sim = Simulation(psn.parse((root / "examples" / "reachable.ndl").read_text()), grid)
    with pytest.raises(InputError, match=r"reads none of the sensor grid's facts "
                                         r"\(sensor, nbr, seed, sink\)") as err:
        sim.run_workload("all")
    assert "nbr(@X, Y)" in err.value.render() and sim.steps == []


def test_link_phases_on_a_sensor_grid_are_refused():
    from pathlib import Path

    import psn
    from sim import Simulation
    root = Path(__file__).resolve().parent.parent
    region = psn.parse((root / "tests" / "programs" / "region" / "program.ndl").read_text())
    sim = Simulation(region, make("sensor-grid"))
    with pytest.raises(InputError, match="a sensor grid gives no link facts"):
        sim.run_workload("all; delete-links:3")
    assert sim.steps == []                   # refused before the grid was loaded


@pytest.mark.parametrize("spec,refusal", [
    ("all; flap:3-99:2", "flap: the topology has no link 3-99"),
    ("all; sensors", "the sensors workload needs a sensor-grid")])
def test_a_phase_the_topology_cannot_run_is_refused_before_any_step(spec, refusal):
    """A flap of a link the ring lacks, and a sensors phase on it, were found after the
    earlier steps had run and printed their table."""
    from pathlib import Path

    import psn
    from sim import Simulation
    root = Path(__file__).resolve().parent.parent
    sim = Simulation(psn.parse((root / "examples" / "reachable.ndl").read_text()),
                     make("ring", n=8))
    with pytest.raises(InputError, match=refusal):
        sim.run_workload(spec)
    assert sim.steps == []


def test_virtual_time_has_a_ceiling_that_every_way_in_respects():
    """Past MAX_TIME (1e9 s) the clock refuses an event, a run's end and a wait with an
    InputError (an infinite time was a ValueError, a huge finite one lost the
    milliseconds); a soft-state lifetime that ends past it never expires, as virtual time
    never gets there, instead of failing the step that inserts the fact."""
    import psn
    from sim import Simulation
    from sim.clock import MAX_TIME
    clock = VirtualClock()
    with pytest.raises(InputError, match="simulated time would pass 1e\\+09 s: a wake "
                                         "event at 2000000000 s"):
        clock.call_later(2 * MAX_TIME, print, kind="wake")
    with pytest.raises(InputError, match="would pass"):
        clock.call_at(float("inf"), print)
    with pytest.raises(InputError, match="the end of a run at 1e\\+300 s"):
        clock.run(until=1e300)
    assert clock.now() == 0.0 and not clock.queue
    prog = psn.parse("materialize(link, 2000000000, infinity, keys(1, 2)).\n"
                     "r1 reach(@S, D) :- link(@S, D).\n")
    s = Simulation(prog, None, annotation="derivation", delivery="fifo", seed=1)
    assert s.step(insert={"link": [(1, 2)]}, check=True).check
    assert not s._expiry and not s.clock.queue
    with pytest.raises(InputError, match="the time to advance \\(s\\) must be at most "
                                         "1e\\+06 s \\(about 11.6 days\\), got 2e\\+06 s"):
        s.advance(2e6)
    with pytest.raises(InputError, match="advance \\(s\\) must be at most 1e\\+06 s"):
        s.step(advance=1e308)
    s.clock._now = MAX_TIME - 10
    with pytest.raises(InputError, match="the end of a 20 s wait at 1000000010 s"):
        s.advance(20)
    assert s.clock.now() == MAX_TIME - 10 and s.base_facts() == {"link": {(1, 2)}}


@pytest.mark.parametrize("workers", [None, 3])
def test_worker_rows_sum_their_nodes_rows(workers):
    """A worker's row of a step is the sum of its nodes' rows; with every node its own
    worker (the default), the worker table is the node table itself, kept once."""
    import psn
    import topologies
    from sim import Simulation
    program = psn.parse("r1 reachable(@S, D) :- link(@S, D).\n"
                        "r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).\n")
    topo = topologies.make("ring", n=6)
    sim = Simulation(program, topo, annotation="absorption", seed=2, workers=workers)
    links = sorted(topo.facts(2)["link"])
    for r in (sim.step(insert={"link": links}), sim.step(delete={"link": links[:1]})):
        assert (r.per_worker is r.per_node) == (workers is None)
        sums: dict = {}
        for n, row in r.per_node.items():
            into = sums.setdefault(sim.placement.worker_of(n), dict.fromkeys(row, 0))
            for k, v in row.items():
                into[k] += v
        assert sums == r.per_worker
        assert r.per_node[0]["tuples"] > 0 and r.per_node[0]["msgs_sent"] > 0


def test_a_burst_refused_after_its_wait_leaves_the_wait_recorded():
    """A step's wait runs before its burst is judged: a deletion of a soft fact that
    expired during the wait is refused, but the clock has moved and the expiry's traffic
    was sent. That traffic was counted in no step; the wait is now a step of its own."""
    import psn
    program = ("materialize(link, 1, infinity, keys(1,2)).\n"
               "a1 reach(@S, D) :- link(@S, D).\n"
               "a2 reach(@S, D) :- link(@S, Z), reach(@Z, D).\n")
    sim = psn.Simulation(program, "ring", annotation="dred")
    sim.step(updates=[(1, "link", (0, 1)), (1, "link", (1, 2))])
    with pytest.raises(InputError, match="cannot delete link"):
        sim.step(updates=[(-1, "link", (0, 1))], advance=1.5)
    assert [s.label for s in sim.steps] == ["step", "wait 1.5s"]
    wait = sim.steps[-1]
    assert wait.start == 1.0 and wait.sim_time > 0 and sim.clock.now() > 1.5
    assert not sim.base_facts()
    sent = sum(s.traffic["bytes_sent"] + s.traffic["local_bytes"] for s in sim.steps)
    assert wait.traffic["bytes_sent"] + wait.traffic["local_bytes"] > 0
    assert sent == sim.net.metrics["bytes_sent"]


@pytest.mark.parametrize("label", [float("nan"), ["s"], 3, None])
def test_a_step_label_that_is_not_a_string_is_refused(tmp_path, label):
    """Simulation.step(label=nan) ran the step and kept the label: the StepResult's repr
    then failed ('object of type float has no len()'), and a list became the label of a
    metrics file's row. The step is refused before it runs, and the simulation steps on."""
    import psn
    sim = psn.Simulation("r1 reach(@S, D) :- link(@S, D, C).\n", make("ring", n=4))
    with pytest.raises(InputError, match=f"^error: label is a string, got "
                                         f"{type(label).__name__}"):
        sim.step(insert={"link": [(0, 1, 1.0)]}, label=label)
    assert sim.steps == [] and not sim.base_facts()
    done = sim.step(insert={"link": [(0, 1, 1.0)]}, label="s")
    assert repr(done).startswith("StepResult(index=0, label='s'")
    assert sim.relations()["reach"] == {(0, 1)}
