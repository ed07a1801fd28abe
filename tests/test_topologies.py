"""The Topology value, small test graphs, sensor grids, JSON files, make/load and the CLI.

networkx is used here only to cross-check connectivity and shortest paths.
"""

from __future__ import annotations

import re
import json
import math
import random

import networkx as nx
import pytest

import topologies
from psn.cli import main as psn_main
from ndlog.errors import InputError
from topologies import Link, Node, Topology


def to_nx(topo):
    g = nx.Graph()
    g.add_nodes_from(range(topo.n))
    for l in topo.links:
        g.add_edge(l.u, l.v, weight=l.latency)
    return g


# ---------------------------------------------------------------------- Topology

def test_link_facts_both_directions_and_arity():
    topo = topologies.line(3, latency=4)
    assert topo.link_facts() == [(0, 1, 4), (1, 0, 4), (1, 2, 4), (2, 1, 4)]
    assert topo.link_facts(2) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    assert topo.link_facts(cost="hops") == [(0, 1, 1), (1, 0, 1), (1, 2, 1), (2, 1, 1)]
    assert topo.facts() == {"link": topo.link_facts()}
    assert topo.facts(link_arity=2) == {"link": topo.link_facts(2)}
    with pytest.raises(InputError):
        topo.link_facts(4)


def test_link_facts_of_gtitm_cover_every_link_twice():
    topo = topologies.generate(seed=4)
    facts = topo.link_facts()
    assert len(facts) == 2 * topo.num_links == len(set(facts))
    assert all((d, s, c) in set(facts) for s, d, c in facts)
    assert {c for _, _, c in facts} == {50, 10, 2}


def test_latency_neighbours_use_link_others_shortest_path():
    # triangle where the direct link is slower than the detour
    nodes = tuple(Node(i, str(i)) for i in range(4))
    topo = Topology(nodes, (Link(0, 1, 10), Link(0, 2, 1), Link(1, 2, 1)))
    assert topo.latency(0, 1) == 10                 # neighbours: the link's own latency
    assert topo.shortest_latencies(0)[1] == 2
    assert topo.latency(0, 0) == 0
    assert topo.latency(0, 3) == math.inf           # node 3 is isolated
    assert not topo.is_connected() and topo.components() == [[0, 1, 2], [3]]


@pytest.mark.parametrize("seed", range(3))
def test_shortest_paths_match_networkx(seed):
    topo = topologies.generate(topologies.ts_variant(200, "sparse"), seed)
    g = to_nx(topo)
    rng = random.Random(seed)
    for src in rng.sample(range(topo.n), 5):
        ref = nx.single_source_dijkstra_path_length(g, src)
        mine = topo.shortest_latencies(src)
        assert all(mine[v] == ref[v] for v in range(topo.n))
        hops = nx.single_source_shortest_path_length(g, src)
        assert topo.hops_from(src) == [hops[v] for v in range(topo.n)]
        for v in rng.sample(range(topo.n), 10):
            want = topo.link(src, v).latency if topo.has_link(src, v) else ref[v]
            assert topo.latency(src, v) == (0 if v == src else want)
    assert topo.is_connected() == nx.is_connected(g)


def test_topology_rejects_bad_shapes():
    nodes = tuple(Node(i, str(i)) for i in range(3))
    with pytest.raises(InputError, match="ids"):
        Topology((Node(1, "a"),), ())
    with pytest.raises(InputError, match="bad link"):
        Topology(nodes, (Link(2, 1, 1),))
    with pytest.raises(InputError, match="duplicate"):
        Topology(nodes, (Link(0, 1, 1), Link(0, 1, 2)))
    with pytest.raises(InputError, match="seed or sink"):
        Topology(nodes, (), seeds=(5,))
    for latency in (-1, float("nan"), float("inf"), "fast", True):
        with pytest.raises(InputError, match=r"link 0-1 \(LL\) has latency"):
            Topology(nodes, (Link(0, 1, latency),))
    assert Topology(nodes, (Link(0, 1, 0), Link(1, 2, 2.5))).latency(0, 2) == 2.5


def test_a_topology_file_or_generator_with_a_negative_latency_is_refused(tmp_path):
    path = tmp_path / "t.json"
    topologies.save(topologies.make("gtitm", seed=1), path)
    path.write_text(path.read_text().replace('"latency": 50', '"latency": -50', 1))
    with pytest.raises(InputError, match=r"t\.json: link \d+-\d+ \(TT\) has latency -50"):
        topologies.load(path)
    with pytest.raises(InputError, match="has latency -5"):
        topologies.make("gtitm", seed=1, latencies={"TT": -5})


def test_link_class_by_name_prefix():
    assert topologies.link_class("T:0.1", "T:1.0") == "TT"
    assert topologies.link_class("S:0.1/2.3", "T:1.0") == "TS"
    assert topologies.link_class("S:0.1/2.3", "S:0.0/0.0") == "SS"
    assert topologies.link_class("7", "T:1.0") == "LL"


# ---------------------------------------------------------------------- simple graphs

def test_ring_line_grid_shapes():
    r, l, g = topologies.ring(6), topologies.line(6), topologies.grid(3, 4)
    assert (r.n, r.num_links) == (6, 6) and all(r.degree(i) == 2 for i in range(6))
    assert (l.n, l.num_links) == (6, 5) and [l.degree(i) for i in (0, 3, 5)] == [1, 2, 1]
    assert (g.n, g.num_links) == (12, 3 * 3 + 2 * 4) and g.nodes[5].pos == (1, 1)
    for t in (r, l, g):
        assert t.is_connected() and nx.is_connected(to_nx(t))
        assert {k.cls for k in t.links} == {"LL"}
    assert topologies.line(1).num_links == 0
    with pytest.raises(InputError):
        topologies.ring(2)


@pytest.mark.parametrize("seed", range(5))
def test_random_graphs(seed):
    gnm = topologies.random_graph(30, m=40, seed=seed)
    assert gnm.num_links == 40
    conn = topologies.random_graph(30, m=29, seed=seed, connected=True)
    assert conn.num_links == 29 and nx.is_connected(to_nx(conn)) and conn.is_connected()
    gnp = topologies.random_graph(40, p=0.2, seed=seed, connected=True)
    assert gnp.is_connected() and nx.is_connected(to_nx(gnp))
    assert topologies.random_graph(30, m=40, seed=seed) == gnm
    g = to_nx(topologies.random_graph(25, p=0.05, seed=seed))
    assert topologies.random_graph(25, p=0.05, seed=seed).is_connected() == nx.is_connected(g)


def test_random_graph_bad_arguments():
    with pytest.raises(InputError, match="exactly one"):
        topologies.random_graph(5)
    with pytest.raises(InputError, match="cannot place"):
        topologies.random_graph(4, m=7)
    with pytest.raises(InputError, match="at least 4 links"):
        topologies.random_graph(5, m=3, connected=True)


# ---------------------------------------------------------------------- sensor grids

def test_default_sensor_grid():
    topo = topologies.sensor_grid()
    assert topo.n == 100 and topo.kind == "sensor-grid" and topo.radius == 20
    assert topo.nodes[0].pos == (5.0, 5.0) and topo.nodes[99].pos == (95.0, 95.0)
    assert len(topo.seeds) == 5 == len(set(topo.seeds))
    assert topo.sink == 44                              # nearest the centre, lowest id
    assert topo.is_connected()
    facts = topo.facts()
    assert set(facts) == {"sensor", "nbr", "seed", "sink"}
    assert facts["sensor"][0] == (0, (5.0, 5.0)) and len(facts["sensor"]) == 100
    assert facts["seed"] == [(x, x) for x in sorted(topo.seeds)]
    assert facts["sink"] == [(r, topo.sink) for r in sorted(topo.seeds)]
    # interior sensors: 4 at 10 m, 4 at 14.1 m, 4 at 20 m
    assert topo.degree(topo.id_of("55")) == 12


@pytest.mark.parametrize("placement,seed", [("grid", 0), ("grid", 3), ("random", 1),
                                            ("random", 7)])
def test_sensor_neighbours_symmetric_and_within_radius(placement, seed):
    topo = topologies.sensor_grid(80, 100, 25, 4, seed, placement=placement)
    nbr = set(topo.facts()["nbr"])
    pos = {x: p for x, p in topo.facts()["sensor"]}
    assert all((y, x) in nbr for x, y in nbr)
    expect = {(x, y) for x in pos for y in pos
              if x != y and math.dist(pos[x], pos[y]) <= 25}
    assert nbr == expect
    assert all(0 <= c <= 100 for p in pos.values() for c in p)
    assert topo.is_connected()
    assert topologies.sensor_grid(80, 100, 25, 4, seed, placement=placement) == topo


def test_sensor_grid_options_and_errors():
    t = topologies.sensor_grid(10, 50, 30, 2, 0, sink=3)
    assert t.sink == 3 and len(t.seeds) == 2
    assert topologies.sensor_grid(7, 10, 5, 0).seeds == ()
    with pytest.raises(InputError):
        topologies.sensor_grid(5, 100, 20, 6)
    with pytest.raises(InputError):
        topologies.sensor_grid(5, 100, 20, 1, sink=9)
    with pytest.raises(InputError, match="connected"):
        topologies.sensor_grid(20, 1000, 1, 1, placement="random")


# ---------------------------------------------------------------------- files, make, load

def test_json_round_trip(tmp_path):
    for topo in (topologies.sensor_grid(seed=2), topologies.generate(seed=1),
                 topologies.grid(2, 3), topologies.sensor_grid(30, placement="random")):
        path = tmp_path / "t.json"
        topologies.write_json(topo, path)
        json.loads(path.read_text())
        back = topologies.load(path)
        assert back == topo and back.facts() == topo.facts()


def test_bad_json(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"format": "psn-topology",\n "nodes": [}')
    with pytest.raises(InputError) as exc:
        topologies.read_json(path)
    assert exc.value.filename == str(path) and exc.value.line == 2
    path.write_text('{"format": "other"}')
    with pytest.raises(InputError, match="not a PSN topology"):
        topologies.read_json(path)
    path.write_text('{"format": "psn-topology", "nodes": [{"id": 0}], "links": [{"u": 0}]}')
    with pytest.raises(InputError, match='entry 0 of "links" has no "v" field'):
        topologies.read_json(path)


@pytest.mark.parametrize("body, what", [
    ('"nodes": [{"id": 0}, {"id": 1}], "links": [{"u": 0, "v": 1}]',
     'entry 0 of "links" has no "latency" field'),
    ('"nodes": [{"id": 0}, {"name": "x"}], "links": []', 'entry 1 of "nodes" has no "id" field'),
    ('"nodes": [{"id": 0}, {"id": 1}], "links": [{"u": 0, "v": "b", "latency": 1}]',
     'entry 0 of "links": field "v" is not a node id, but \'b\''),
    ('"nodes": 3, "links": []', '"nodes" must be a list, not a JSON number'),
    ('"nodes": [{"id": 0}, 7], "links": []', 'entry 1 of "nodes" must be an object'),
    ('"nodes": [{"id": 0}]', 'the topology has no "links" list'),
    ('"nodes": [{"id": 0, "pos": 5}], "links": []',
     'entry 0 of "nodes": field "pos" is not a position, but 5'),
    ('"nodes": [{"id": 0, "pos": "ab"}], "links": []',
     'entry 0 of "nodes": field "pos" is not a position, but \'ab\''),
    ('"nodes": [{"id": 0, "pos": [1, NaN]}], "links": []',
     'entry 0 of "nodes": field "pos" is not a position, but [1, nan]'),
    # each of these was a traceback (TypeError in summary), a "malformed topology entry
    # (TypeError: ...)", or was read as it was and made garbage (a string cost of link/3)
    ('"nodes": [{"id": 0}, {"id": 1}], "links": [{"u": 0, "v": 1, "latency": 1, "cls": null}'
     ', {"u": 0, "v": 1, "latency": 1, "cls": {}}]',
     'entry 1 of "links": field "cls" must be a string, not a JSON object {}'),
    ('"nodes": [{"id": 0}, {"id": 1}], "links": [{"u": 0, "v": 1, "latency": 1, "cls": "XX"}]',
     'entry 0 of "links": field "cls" is \'XX\', not a class of link'),
    ('"nodes": [{"id": 0}, {"id": 1}], "links": [{"u": 0, "v": 1, "latency": 1, '
     '"length": "x"}]', 'entry 0 of "links": field "length" must be a finite number >= 0'),
    ('"nodes": [{"id": 0, "stub": 5}], "links": []',
     'entry 0 of "nodes": field "stub" must be a list, not a JSON number 5'),
    ('"nodes": [{"id": 0, "kind": "router"}], "links": []',
     'entry 0 of "nodes": field "kind" is \'router\', not a kind of node'),
    ('"nodes": [{"id": 0}], "links": [], "seeds": [0, "x"]',
     'entry 1 of "seeds" is not a node id, but \'x\''),
    ('"nodes": [{"id": 0}], "links": [], "sink": "0"',
     'the topology: field "sink" must be a whole number, not a JSON string \'0\''),
    ('"nodes": [{"id": 0}], "links": [], "meta": [1]',
     'the topology: field "meta" must be an object, not a JSON list [1]'),
    ('"nodes": [{"id": 0}], "links": [], "kind": 5',
     'the topology: field "kind" must be a string, not a JSON number 5'),
    ('"nodes": [{"id": 0}], "links": [], "version": 2',
     '"version" 2 of the topology format is not one this PSN reads (1)'),
    ('"nodes": [{"id": 0}], "links": [], "kind": "sensor-grid"',
     'a sensor grid needs its "radius"'),
    ('"nodes": [{"id": 0}], "links": [], "kind": "sensor-grid", "radius": 2',
     'node 0 of a sensor grid has no "pos"'),
])
def test_a_json_topology_entry_with_a_missing_field_names_the_entry_and_field(
        tmp_path, capsys, body, what):
    """A link without a latency was "malformed topology entry (KeyError: 'latency')"."""
    path = tmp_path / "t.json"
    path.write_text('{"format": "psn-topology", ' + body + '}')
    assert psn_main(["topology", "info", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"error: {path}: {what}" in err and "KeyError" not in err


@pytest.mark.parametrize("text, what", [
    ("", "the JSON topology file is empty"), ("  \n", "the JSON topology file is empty"),
    ("[]", "not a PSN topology: the file holds a JSON list"),
    ('"x"', "not a PSN topology: the file holds a JSON string")])
def test_a_json_topology_that_is_not_one_says_so(tmp_path, capsys, text, what):
    """An empty ``.json`` file, or one holding ``[]``, was read as GT-ITM alt and the
    error asked for the GRAPH section header."""
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(InputError, match=what) as exc:
        topologies.load(path)
    assert str(path) in exc.value.message and "GRAPH" not in exc.value.message
    assert psn_main(["topology", "info", str(path)]) == 2
    err = capsys.readouterr().err
    assert what in err and "GRAPH" not in err and "Traceback" not in err


def test_make_and_load(tmp_path):
    assert topologies.make().n == 100
    assert topologies.make("dense", nodes=200, seed=1).n == 200
    assert topologies.make("sensor-grid", sensors=25).n == 25
    assert topologies.make("ring", n=4).num_links == 4
    assert topologies.make("grid", rows=2, cols=2).num_links == 4
    assert topologies.make("random", n=10, m=12, seed=3).num_links == 12
    with pytest.raises(InputError, match="unknown topology"):
        topologies.make("torus")
    topo = topologies.make("ts100", seed=9)
    topologies.save(topo, tmp_path / "x.alt")
    topologies.save(topo, tmp_path / "x.json")
    assert topologies.load(tmp_path / "x.alt") == topo == topologies.load(tmp_path / "x.json")
    with pytest.raises(InputError, match="cannot read"):
        topologies.load(tmp_path / "missing.alt")


# ---------------------------------------------------------------------- CLI

def test_cli_gtitm_writes_alt(tmp_path, capsys):
    out = tmp_path / "g.alt"
    assert psn_main(["topology", "gtitm", "--seed", "5", "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "gtitm: 100 nodes" in text and "connected" in text and f"wrote {out}" in text
    assert topologies.read_alt(out) == topologies.generate(seed=5)
    assert psn_main(["topology", "info", str(out)]) == 0
    assert "100 nodes" in capsys.readouterr().out


def test_cli_gtitm_options(tmp_path, capsys):
    assert psn_main(["topology", "gtitm", "--domains", "2", "--stub-nodes", "5",
                     "--latency-tt", "20"]) == 0
    assert "gtitm: 128 nodes" in capsys.readouterr().out
    assert psn_main(["topology", "gtitm", "--nodes", "300", "--density", "dense"]) == 0
    assert "300 nodes" in capsys.readouterr().out
    spec = tmp_path / "ts"
    spec.write_text("ts 2 47\n3 0 0\n1 20 3 1.0\n4 20 3 0.6\n8 10 3 0.42\n")
    assert psn_main(["topology", "gtitm", "--spec", str(spec), "-o",
                     str(tmp_path / "ts.alt")]) == 0
    assert (tmp_path / "ts-0.alt").exists() and (tmp_path / "ts-1.alt").exists()
    capsys.readouterr()
    # refused, not ignored: --density without --nodes printed ts100, --count 0 one graph
    for argv, what in ((["--density", "dense"], "--density dense applies to the variant"),
                       (["--count", "0"], "--count takes a number of graphs >= 1"),
                       (["--latency-tt", "-5"], "--latency-tt (ms) must be a finite number")):
        assert psn_main(["topology", "gtitm", *argv]) == 2
        out = capsys.readouterr()
        assert what in out.err and out.out == ""


def test_cli_sensor_grid_and_small_graphs(tmp_path, capsys):
    out = tmp_path / "s.json"
    assert psn_main(["topology", "sensor-grid", "--sensors", "100", "--size", "100",
                     "--radius", "20", "--seeds", "5", "--output", str(out)]) == 0
    assert "sensor-grid: 100 nodes, 502 links" in capsys.readouterr().out
    assert topologies.load(out) == topologies.sensor_grid()
    for argv in (["ring", "-n", "5"], ["line", "-n", "3"], ["grid"],
                 ["random", "-n", "8", "--p", "0.5", "--connected"]):
        assert psn_main(["topology", *argv]) == 0
    assert "ring: 5 nodes, 5 links" in capsys.readouterr().out


def test_cli_bad_input_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.alt"
    bad.write_text("GRAPH (#nodes #edges id uu vv ww xx yy zz):\n2 2 g\n\nVERTICES\n0 a\n"
                   "1 b\n\nEDGES\n0 5 3\n")
    assert psn_main(["topology", "info", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:9:" in err and "not a vertex" in err and "^" in err
    assert psn_main(["topology", "gtitm", "--spec", str(tmp_path / "none")]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("topology, option, message, hint", [
    ("ring", "foo=3", "--topology ring has no option 'foo'",
     "the options of ring are n, latency"),
    ("ts100", "nodes=5", "--topology ts100 has no option 'nodes'",
     "the options of ts100 are spec, quirks"),
    ("grid", "n=5", "--topology grid has no option 'n'",
     "the options of grid are rows, cols, latency")])
def test_an_unknown_topology_option_is_named_with_the_valid_ones(capsys, topology, option,
                                                                 message, hint):
    """An unknown option printed Python's 'ring() got an unexpected keyword argument'."""
    assert psn_main(["run", "examples/reachable.ndl", "--topology", topology,
                     "--topology-option", option]) == 2
    err = capsys.readouterr().err
    assert message in err and hint in err
    assert "unexpected keyword" not in err and "Traceback" not in err


def test_make_names_an_option_its_topology_does_not_take():
    assert topologies.options_of("ring") == ("n", "latency")
    with pytest.raises(InputError, match="topology 'ring' has no option 'foo'") as exc:
        topologies.make("ring", foo=3)
    assert exc.value.hint == "the options of ring are n, latency"
    for name in topologies.NAMES:                   # every name knows its options
        assert topologies.options_of(name)


@pytest.mark.parametrize("call, what, hint", [
    (lambda: topologies.ring(4, bogus=1), "topology 'ring' has no option 'bogus'",
     "the options of ring are n, latency"),
    (lambda: topologies.ring(4, 1, 2), "topology 'ring': ring() too many positional",
     "the options of ring are n, latency"),
    (lambda: topologies.grid(2, rows=3), "topology 'grid': grid() multiple values for "
                                         "argument 'rows'", "of grid are rows, cols, latency"),
    (lambda: topologies.make(["ring"]), "a topology is named by a string, got list",
     "one of ts100"),
    (lambda: topologies.options_of({"ring": 1}), "a topology is named by a string, got dict",
     "one of ts100")])
def test_a_generator_called_from_python_names_a_wrong_call(call, what, hint):
    """topologies.ring(4, bogus=1) or ring(4, 1, 2) was a TypeError from inspect's bind in
    the generators' check, and make(["ring"]) 'unhashable type: list' from the presets'
    lookup."""
    with pytest.raises(InputError, match=re.escape(what)) as exc:
        call()
    assert hint in exc.value.hint


@pytest.mark.parametrize("suffix", [".alt", ".json"])
def test_a_topology_option_with_a_topology_file_is_refused(tmp_path, capsys, suffix):
    """With an .alt file the option ended in a TypeError traceback (exit 1); with a .json
    file it was silently ignored."""
    path = tmp_path / f"t{suffix}"
    topologies.save(topologies.make("ring", n=4), path)
    assert psn_main(["run", "examples/reachable.ndl", "--topology", str(path),
                     "--topology-option", "latency_tt=20"]) == 2
    err = capsys.readouterr().err
    assert (f"--topology-option latency_tt=20 does not apply to the topology file "
            f"'{path}'") in err
    assert "leave out --topology-option" in err and "Traceback" not in err


def test_gtitm_nodes_says_when_it_rounds(capsys):
    """--nodes 50 --density dense made 100 nodes without a word (the variant grows by
    100-node transit domains)."""
    assert psn_main(["topology", "gtitm", "--nodes", "50", "--density", "dense"]) == 0
    out = capsys.readouterr().out
    assert "note: --nodes 50 made 100 nodes" in out and "gtitm: 100 nodes" in out
    assert psn_main(["topology", "gtitm", "--nodes", "200"]) == 0
    out = capsys.readouterr().out
    assert "note:" not in out and "gtitm: 200 nodes" in out


def test_a_topology_too_big_for_the_memory_limit_is_refused_before_it_is_built(capsys):
    """line n=100000000 with --max-memory 2G grew to 18.8 GB and was killed by the system;
    the estimate refuses it at once (these sizes would take minutes and gigabytes)."""
    assert psn_main(["run", "examples/reachable.ndl", "--topology", "line",
                     "--topology-option", "n=100000000", "--max-memory", "2G"]) == 2
    err = capsys.readouterr().err
    assert ("topology line with n=100000000 would take about 74.51 GiB to build, over the "
            "memory limit of 2.00 GiB") in err and "--max-memory" in err
    assert psn_main(["topology", "line", "-n", "1000000000"]) == 2
    assert "topology line with n=1000000000 would take about 745.06 GiB" in \
        capsys.readouterr().err
    assert psn_main(["topology", "random", "-n", "10000000", "-m", "5"]) == 2
    assert "topology random with n=10000000, m=5" in capsys.readouterr().err
    topologies.check_size("line", 1 << 20, n=1000)            # 0.8 MB: fits
    with pytest.raises(InputError, match="over the memory limit of 1.0 MiB"):
        topologies.check_size("line", 1 << 20, n=10000)


@pytest.mark.parametrize("call", [
    lambda: topologies.ring(10 ** 12),
    lambda: topologies.make("line", n=10 ** 12),
    lambda: topologies.random_graph(10 ** 6, m=10),
    lambda: topologies.grid(10 ** 6, 10 ** 6)])
def test_a_generator_called_from_python_refuses_a_graph_beyond_the_machine_s_memory(call):
    """topologies.ring(10**12) from Python (no --max-memory there) built until the memory
    ran out; the generators refuse what their estimate puts beyond this machine's memory,
    before building anything."""
    from topologies.checks import machine_memory
    with pytest.raises(InputError, match="to build, over the memory limit of") as info:
        call()
    assert "this machine has" in info.value.hint and machine_memory() > 1 << 30


def test_a_transit_stub_graph_too_big_for_the_memory_limit_is_refused_before_it_is_built(
        tmp_path, capsys):
    """psn topology gtitm --domains 100000, --stub-nodes 100000 or a spec file of that size
    (also as psn run --topology gtitm --topology-option spec=FILE) ran for minutes on the
    top level's billions of candidate links: only --nodes was estimated."""
    for option in (["--domains", "100000"], ["--stub-nodes", "100000"]):
        assert psn_main(["topology", "gtitm", *option]) == 2
        err = capsys.readouterr().err
        assert re.search(r"error: topology gtitm with [\d,]+ nodes in [\d,]+ transit "
                         r"domains? would take about [\d.]+ GiB to build, over the memory "
                         r"limit of", err), err
    spec = tmp_path / "big.spec"
    spec.write_text("ts 1 0\n3 0 0\n100000 20 3 1.0\n4 20 3 0.6\n8 10 3 0.42\n")
    assert psn_main(["topology", "gtitm", "--spec", str(spec)]) == 2
    assert "with 10,000,000 nodes in 100,000 transit domains would take about 1872.19 GiB" \
        in capsys.readouterr().err
    assert psn_main(["run", "examples/reachable.ndl", "--topology", "gtitm",
                     "--topology-option", f"spec={spec}", "--max-memory", "8G"]) == 2
    assert f"topology gtitm with 10,000,000 nodes in 100,000 transit domains, spec={spec} " \
        "would take about 1872.19 GiB to build, over the memory limit of 8.00 GiB" in \
        capsys.readouterr().err
    assert round(topologies.ts_links(topologies.TS100)) == 157     # ts100 has 156 or so
    assert psn_main(["topology", "gtitm", "--domains", "3"]) == 0
    assert "gtitm: 300 nodes" in capsys.readouterr().out


def test_a_topology_option_given_twice_is_refused(capsys):
    """n=3 then n=4 ran on n=4 without a word."""
    assert psn_main(["run", "examples/reachable.ndl", "--topology", "ring",
                     "--topology-option", "n=3", "--topology-option", "n=4"]) == 2
    err = capsys.readouterr().err
    assert "error: --topology-option n is given twice (n=3, then n=4)" in err
    assert "hint: give each option once" in err


@pytest.mark.parametrize("topology,value", [("ring", "n=inf"), ("ring", "n=nan"),
                                            ("ring", "n=1e400"), ("ring", f"n={10**400}"),
                                            ("dense", f"nodes={10**400}")])
def test_non_finite_or_huge_sizes_are_clear_errors(capsys, topology, value):
    """The size estimate turned them into OverflowError and ValueError tracebacks."""
    assert psn_main(["run", "examples/reachable.ndl", "--topology", topology,
                     "--topology-option", value]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err and len(err) < 400


def test_a_topology_latency_past_the_bound_is_refused_before_the_run(capsys):
    """It ran until virtual time passed its ceiling."""
    assert psn_main(["run", "examples/reachable.ndl", "--topology", "ring",
                     "--topology-option", "latency=1e308"]) == 2
    assert "--topology-option latency (ms) must be at most 1e+09, got 1e+308" in \
        capsys.readouterr().err


# ---------------------------------------------------------------------- option checks

@pytest.mark.parametrize("name, option, what", [
    ("dense", "nodes=nan", "option nodes must be a finite whole number, not nan"),
    ("dense", "nodes=1e400", "option nodes must be a finite whole number, not inf"),
    ("sensor-grid", "sensors=1e400", "option sensors must be a finite whole number, not inf"),
    ("dense", "nodes=150.7", "option nodes must be a whole number, not 150.7"),
    ("ring", "n=3.5", "option n must be a whole number, not 3.5"),
    ("liu-dense", "nodes=inf", "option nodes must be a finite whole number, not inf"),
    ("random", "p=nan", "option p must be a finite number, not nan"),
    ("sensor-grid", "radius=nan", "option radius must be a finite number, not nan"),
    ("dense", "quirks=maybe", "option quirks is yes or no, not 'maybe'"),
])
def test_a_bad_topology_option_value_is_refused_naming_it(capsys, name, option, what):
    """nan and 1e400 ended in a ValueError or OverflowError traceback, 150.7 was truncated,
    3.5 failed with "'float' object cannot be interpreted as an integer", and
    quirks=maybe was taken as true."""
    assert psn_main(["run", "examples/reachable.ndl", "--topology", name,
                     "--topology-option", option]) == 2
    out = capsys.readouterr()
    assert f"error: topology {name}: {what}" in out.err
    assert "Traceback" not in out.err and out.out == ""


def test_topology_options_are_normalized_once_for_every_generator():
    """A whole float is a count (nodes=1e3), yes/no words are booleans; make() checks the
    options of every generator with the one helper."""
    assert topologies.make("ring", n=6.0) == topologies.ring(6)
    assert topologies.check_options("dense", {"nodes": 1e3, "quirks": "No"}) == \
        {"nodes": 1000, "quirks": False}
    for name, options in (("line", {"n": 2.5}), ("grid", {"rows": float("inf")}),
                          ("random", {"n": 5, "m": 2.5}), ("sensor-grid", {"size": 0}),
                          ("sensor-grid", {"seeds": True}), ("random", {"n": 5, "p": 1.5}),
                          ("random", {"n": 5, "p": 0.5, "connected": "perhaps"})):
        with pytest.raises(InputError, match=f"topology {name}: option"):
            topologies.make(name, **options)


@pytest.mark.parametrize("argv, what", [
    (["--radius", "nan"], "option radius must be a finite number, not nan"),
    (["--size", "inf"], "option size must be a finite number, not inf"),
    (["--size", "-1"], "option size must be > 0, not -1.0"),
])
def test_sensor_grid_cli_refuses_a_non_finite_size_or_radius(capsys, argv, what):
    """--radius nan made a grid of 0 links ("radius nan m"), --size inf one of 0 links."""
    assert psn_main(["topology", "sensor-grid", *argv]) == 2
    out = capsys.readouterr()
    assert what in out.err and out.out == ""


def test_ring_hint_names_the_rings_own_options(capsys):
    """n=abc on a ring suggested --topology-option nodes=300, which a ring does not take."""
    assert psn_main(["run", "examples/reachable.ndl", "--topology", "ring",
                     "--topology-option", "n=abc"]) == 2
    err = capsys.readouterr().err
    assert "topology ring: option n must be a finite whole number, not 'abc'" in err
    assert "n=10" in err and "nodes=" not in err


@pytest.mark.parametrize("argv, what", [
    (["--nodes", "200", "--domains", "3"], "give --nodes or --domains, not both"),
    (["--nodes", "200", "--stub-nodes", "5"], "give --nodes or --stub-nodes, not both"),
    (["--nodes", "0"], "--nodes takes a number >= 1, not 0"),
    (["--nodes", "-3"], "--nodes takes a number >= 1, not -3"),
    (["--domains", "0"], "--domains takes a number >= 1, not 0"),
    (["--stub-nodes", "0"], "--stub-nodes takes a number >= 1, not 0"),
    (["--extra-ss", "-1"], "--extra-ss takes a number >= 0, not -1"),
])
def test_gtitm_cli_refuses_conflicting_or_non_positive_counts(capsys, argv, what):
    """--nodes 200 --domains 3 made 300 nodes without a word, --nodes 0 made ts100 without
    the note --nodes 50 prints, and --domains 0 was refused as "bad n parameter 0 (top
    level)", which names no option."""
    assert psn_main(["topology", "gtitm", *argv]) == 2
    out = capsys.readouterr()
    assert f"error: {what}" in out.err and out.out == ""


def test_a_sensor_grid_is_not_written_as_alt_which_would_drop_its_seeds(tmp_path, capsys):
    """-o sg.alt wrote alt, dropping the seeds and sink, and topology info then called the
    file 'gtitm: ...'."""
    out = tmp_path / "sg.alt"
    assert psn_main(["topology", "sensor-grid", "-o", str(out)]) == 2
    got = capsys.readouterr()
    assert "the alt format has no place for its seeds, sink and radius" in got.err
    assert f"hint: write it as JSON: {tmp_path / 'sg.json'}" in got.err
    assert got.out == "" and not out.exists()
    with pytest.raises(InputError, match="alt format has no place"):
        topologies.save(topologies.sensor_grid(), out)
    topologies.save(topologies.ring(4), out)            # a plain graph: alt holds it all
    assert topologies.load(out).n == 4


@pytest.mark.parametrize("call, what", [
    (lambda: topologies.sensor_grid(radius=math.nan), "option radius must be a finite number"),
    (lambda: topologies.ring(3.5), "option n must be a whole number, not 3.5"),
    (lambda: topologies.grid(2, math.inf), "option cols must be a finite whole number"),
    (lambda: topologies.random_graph(10, p=2.0), "option p must be at most 1"),
    (lambda: topologies.line(n=0), "option n must be >= 1"),
    (lambda: topologies.gtitm.generate(quirks="maybe"), "option quirks is yes or no"),
    (lambda: topologies.gtitm.ts_variant(3.5), "option nodes must be a whole number"),
    (lambda: topologies.liu_topology("liu-dense", nodes=math.nan),
     "option nodes must be a finite whole number"),
    (lambda: topologies.random_graph(6, m=7, seed=None),
     "option seed is None; leave it out for its default \\(0\\), which seeds"),
    (lambda: topologies.gtitm.generate(None), "option params is None; leave it out for its "
                                              "default$"),
    (lambda: topologies.ring(None), "option n is None")])
def test_generators_called_from_python_check_their_options_as_make_does(call, what):
    """Only make() checked: sensor_grid(radius=nan) made a grid without links."""
    with pytest.raises(InputError, match=what):
        call()
    assert topologies.ring(6.0).name == topologies.ring(n=6).name == "ring(6)"
    assert "n" in topologies.options_of("ring")


def test_load_and_save_name_a_path_or_topology_of_the_wrong_kind(tmp_path):
    """load(3) and save(topo, 3) were TypeErrors from pathlib, save({...}) an
    AttributeError."""
    ring = topologies.ring(4)
    for call in (lambda: topologies.load(3), lambda: topologies.save(ring, None)):
        with pytest.raises(InputError, match="the topology file must be a path .*, got"):
            call()
    with pytest.raises(InputError, match="save takes a topologies.Topology, got dict"):
        topologies.save({"nodes": 4}, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("call, what", [
    (lambda tmp: topologies.to_json(frozenset()), "to_json takes a topologies.Topology, got "
                                                  "frozenset"),
    (lambda tmp: topologies.format_alt(None), "format_alt takes a topologies.Topology, got "
                                              "NoneType"),
    (lambda tmp: topologies.write_json("ring", tmp / "t.json"), "write_json takes a "
                                                                "topologies.Topology, got str"),
    (lambda tmp: topologies.write_alt(2, tmp / "t.alt"), "write_alt takes a "
                                                         "topologies.Topology, got int"),
    (lambda tmp: topologies.parse_alt(False), "parse_alt takes the text of an alt file (a "
                                              "str), got bool"),
    (lambda tmp: topologies.parse_spec(b"ts 1"), "parse_spec takes the text of a spec (a "
                                                 "str), got bytes"),
    (lambda tmp: topologies.format_spec(-1.0), "GT-ITM parameters are a TSParams, got float")])
def test_the_readers_and_writers_name_an_argument_of_the_wrong_kind(tmp_path, call, what):
    """Only save checked what it was given: to_json, format_alt, write_json and write_alt
    ended in AttributeErrors on the first attribute of a value that is no Topology,
    parse_alt and parse_spec on text that is no str, and format_spec on params that are
    no TSParams."""
    with pytest.raises(InputError, match=re.escape(what)):
        call(tmp_path)
    assert not list(tmp_path.iterdir())


def test_a_sensor_grid_is_not_written_to_an_upper_case_alt_file_either(tmp_path):
    """save(grid, "sg.ALT") wrote JSON there; load() reads any case of .json as JSON."""
    with pytest.raises(InputError, match="alt format has no place"):
        topologies.save(topologies.sensor_grid(), tmp_path / "sg.ALT")


def test_load_applies_latencies_to_json_and_names_an_unknown_option(tmp_path):
    """load(x.json, latencies=...) ignored them, and a misspelt option was swallowed for
    JSON files (a TypeError for alt files)."""
    for suffix in (".json", ".alt"):
        path = tmp_path / f"ring{suffix}"
        topologies.save(topologies.ring(4), path)
        assert {l.latency for l in topologies.load(path, latencies={"LL": 7}).links} == {7}
        with pytest.raises(InputError, match="topologies.load has no option 'latncies'"):
            topologies.load(path, latncies={"LL": 7})


@pytest.mark.parametrize("latencies, what", [
    ({"XX": 3}, "latencies: unknown link class 'XX'"),
    ([1], "latencies map link classes to milliseconds, got list")])
def test_latencies_of_an_unknown_class_or_kind_are_refused(latencies, what):
    """latencies={"XX": 3} was ignored, latencies=[1] a TypeError."""
    for call in (lambda: topologies.make("ts100", latencies=latencies),
                 lambda: topologies.generate(latencies=latencies),
                 lambda: topologies.ring(4).with_latencies(latencies)):
        with pytest.raises(InputError, match=what):
            call()


@pytest.mark.parametrize("call, what", [
    (lambda: topologies.make("ts100", seed="1"), "option seed must be a finite whole"),
    (lambda: topologies.make("ring", seed=1.5), "option seed must be a whole number"),
    (lambda: topologies.generate(seed="x"), "option seed must be a finite whole"),
    (lambda: topologies.sensor_grid(seed=[1]), "option seed must be a finite whole"),
    (lambda: topologies.generate_many(topologies.TS100, count=-1), "count must be >= 1"),
    (lambda: topologies.generate(3), "GT-ITM parameters are a TSParams, got int 3"),
    (lambda: topologies.make("gtitm", params="ts100"), "are a TSParams, got str"),
    (lambda: topologies.generate_many(None), "are a TSParams, got NoneType"),
    (lambda: topologies.ring(4).latency(0, 9), "9 is not a node of this topology"),
    (lambda: topologies.ring(4).latency(0, -1), "-1 is not a node of this topology"),
    (lambda: topologies.ring(4).neighbors("a"), "'a' is not a node of this topology")])
def test_seeds_params_and_node_ids_of_the_wrong_kind_are_named(call, what):
    """A string seed seeded the generator with the string, params=3 was an AttributeError,
    latency(0, 9) an IndexError and latency(0, -1) the latency to the last node."""
    with pytest.raises(InputError, match=what):
        call()
    assert topologies.make("ts100", seed=-1).n == topologies.generate(seed=2.0).n == 100


@pytest.mark.parametrize("args, what", [
    ((None,), "topology liu: option nodes is None"),
    (("300",), "topology liu: option nodes must be a finite whole number, not '300'"),
    ((float("nan"),), "option nodes must be a finite whole number, not nan"),
    ((150.5,), "option nodes must be a whole number, not 150.5"),
    ((200, {"dense": 1}), "density must be 'dense' or 'sparse', not {'dense': 1}")])
def test_liu_params_checks_its_arguments_as_the_generators_do(args, what):
    """liu_params(None) and liu_params("300") ended in TypeErrors from a comparison,
    liu_params(nan) in 'cannot convert float NaN to integer', a density that is a dict in
    'unhashable type', and 150.5 nodes were rounded as if whole."""
    with pytest.raises(InputError, match=re.escape(what)):
        topologies.liu_params(*args)
    assert topologies.liu_params(200.0) == topologies.liu_params(200)


@pytest.mark.parametrize("call, what", [
    (lambda: topologies.make("dense", nodes=None), "topology gtitm: option nodes is None; it "
                                                   "has no default"),
    (lambda: topologies.ts_variant(None), "option nodes is None; it has no default")])
def test_none_for_an_option_without_a_default_is_refused(call, what):
    """make("dense", nodes=None) passed None on to ts_variant, whose nodes has no default,
    and ended in "TypeError: '<' not supported between NoneType and int"."""
    with pytest.raises(InputError, match=re.escape(what)):
        call()


@pytest.mark.parametrize("call, what", [
    (lambda: topologies.check_size("ring", "1G", n=10), "the memory limit is a whole number "
                                                       "of bytes >= 0 or None, got '1G'"),
    (lambda: topologies.check_size("ring", 1.5, n=10 ** 9), "the memory limit is a whole"),
    (lambda: topologies.link_class(2.0, "T:0.1"), "a node name is a string, got float 2.0"),
    (lambda: topologies.link_class("T:0.1", None), "a node name is a string, got NoneType")])
def test_check_size_and_link_class_name_an_argument_of_the_wrong_kind(call, what):
    """check_size("ring", "1G") was a TypeError from a comparison and check_size with a
    float limit an AttributeError formatting it; link_class(2.0, ...) a TypeError from a
    subscript."""
    with pytest.raises(InputError, match=re.escape(what)):
        call()
