"""GT-ITM's ``alt`` text format (written by its ``sgb2alt``): reader and writer.

Role: load topologies produced by GT-ITM itself, unchanged, and write PSN's own transit-stub
graphs in the same layout (docs/topologies.md, "The alt format")::

    GRAPH (#nodes #edges id uu vv ww xx yy zz):
    <n> <m> <id-string> <integer fields>

    VERTICES (index name u v w x y z):
    <i> <name> <integer fields: x y ...>

    EDGES (from-node to-node length a b):
    <from> <to> <length> [<a>] [<b>]

``#edges`` counts arcs (twice the undirected edges); each undirected edge is listed once.
The reader classes every edge by its endpoints' name prefixes (``T:``/``S:``) and gives it
the latency of its class; it takes the first two vertex integers as ``(x, y)``.

Tolerated, as GT-ITM's own files need: trailing blanks, any number of blank lines, an
``#edges`` that disagrees with the edge lines (GT-ITM counts arcs it never prints, such as
the self-loops its extra stub-stub edges can make), repeated edges (kept once) and
self-loops (dropped); both are counted in ``meta["dropped"]``. Anything else malformed
raises :class:`~ndlog.errors.InputError` naming ``file:line``.

Deliberately not here: GT-ITM's binary ``.gb`` format, generation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ndlog.errors import InputError, Span
from ndlog.files import write_atomic
from ndlog.parser import read_text

from .graph import Topology, gtitm_node, make_links, require_topology

__all__ = ["read_alt", "parse_alt", "write_alt", "format_alt"]

GRAPH_HEAD = "GRAPH (#nodes #edges id uu vv ww xx yy zz):"
VERTEX_HEAD = "VERTICES (index name u v w x y z):"
EDGE_HEAD = "EDGES (from-node to-node length a b):"


def parse_alt(text: str, filename: str | None = None,
              latencies: Mapping[str, float] | None = None) -> Topology:
    """Parse ``alt`` text into a :class:`~topologies.graph.Topology` (``kind="gtitm"``).

    Parameters
    ----------
    text:
        The file's contents.
    filename:
        For error messages (``file:line:column``).
    latencies:
        Latency per link class overriding the defaults (``TT`` 50, ``TS`` 10, ``SS`` 2 ms,
        ``LL`` 1 for nodes without GT-ITM names).

    Raises
    ------
    InputError
        On a missing section, a bad number, a vertex out of order or an edge naming a node
        that does not exist.
    """
    if not isinstance(text, str):
        raise InputError(f"parse_alt takes the text of an alt file (a str), got "
                         f"{type(text).__name__} {text!r:.80}",
                         hint="for a file, use topologies.read_alt(path)")
    lines = text.splitlines()

    def err(no, msg, col=1, hint=None):
        return InputError(msg, Span(no, col, filename), text, hint)

    def col_of(no, tok):
        return lines[no - 1].find(tok) + 1 or 1

    def to_int(no, tok, what):
        try:
            return int(tok)
        except ValueError:
            raise err(no, f"bad {what} {tok!r}: expected an integer", col_of(no, tok)) \
                from None

    rows = [(no, line.split()) for no, line in enumerate(lines, 1) if line.strip()]
    i = 0

    def expect_header(word, layout):
        nonlocal i
        if i >= len(rows):
            raise err(len(lines) or 1, f"file ended before the {word} section",
                      hint=f"an alt file has a line '{layout}'")
        no, toks = rows[i]
        if toks[0] != word:
            raise err(no, f"expected the {word} section header, got {' '.join(toks)!r}",
                      hint=f"an alt file has a line '{layout}'")
        i += 1

    expect_header("GRAPH", GRAPH_HEAD)
    if i >= len(rows) or rows[i][1][0] in ("VERTICES", "EDGES"):
        raise err(rows[i - 1][0] + 1, "missing the graph line '<#nodes> <#edges> <id> ...'")
    no, toks = rows[i]
    if len(toks) < 2:
        raise err(no, "the graph line needs '<#nodes> <#edges> <id>'")
    n = to_int(no, toks[0], "#nodes")
    m = to_int(no, toks[1], "#edges")
    gid = toks[2] if len(toks) > 2 else ""
    header_ints = [to_int(no, t, "graph field") for t in toks[3:]]
    if n < 0:
        raise err(no, f"bad #nodes {n}")
    i += 1

    expect_header("VERTICES", VERTEX_HEAD)
    nodes = []
    while i < len(rows) and rows[i][1][0] != "EDGES":
        no, toks = rows[i]
        if len(toks) < 2:
            raise err(no, "a vertex line needs '<index> <name> [<x> <y> ...]'")
        idx = to_int(no, toks[0], "vertex index")
        if idx != len(nodes):
            raise err(no, f"vertex index {idx} out of order: expected {len(nodes)}")
        fields = [to_int(no, t, "vertex field") for t in toks[2:]]
        pos = (fields[0], fields[1]) if len(fields) >= 2 else None
        nodes.append(gtitm_node(idx, toks[1], pos))
        i += 1
    if len(nodes) != n:
        no = rows[i][0] if i < len(rows) else len(lines)
        raise err(no, f"the graph line says {n} nodes but {len(nodes)} vertices are listed")

    expect_header("EDGES", EDGE_HEAD)
    pairs: dict[tuple[int, int], tuple] = {}
    repeated = loops = 0
    while i < len(rows):
        no, toks = rows[i]
        if len(toks) < 2:
            raise err(no, "an edge line needs '<from> <to> [<length> [<a> ...]]'")
        u = to_int(no, toks[0], "from-node")
        v = to_int(no, toks[1], "to-node")
        for x, tok in ((u, toks[0]), (v, toks[1])):
            if not 0 <= x < n:
                raise err(no, f"edge endpoint {x} is not a vertex (0..{n - 1})",
                          col_of(no, tok))
        fields = [to_int(no, t, "edge field") for t in toks[2:]]
        i += 1
        if u == v:
            loops += 1
            continue
        key = (min(u, v), max(u, v))
        if key in pairs:
            repeated += 1
            continue
        pairs[key] = (key[0], key[1], fields[0] if fields else None,
                      fields[1] if len(fields) > 1 else None)
    nodes = tuple(nodes)
    links = make_links(pairs.values(), nodes, latencies)
    meta = {"format": "alt", "declared_arcs": m, "header_ints": header_ints,
            "dropped": {"repeated": repeated, "self_loops": loops}}
    if filename:
        meta["file"] = filename
    return Topology(nodes, tuple(links), kind="gtitm", name=gid, meta=meta)


def read_alt(path: str | Path, latencies: Mapping[str, float] | None = None) -> Topology:
    """Read a GT-ITM ``alt`` file (see :func:`parse_alt`)."""
    return parse_alt(read_text(path, "topology file"), str(path), latencies)


def format_alt(topo: Topology) -> str:
    """The ``alt`` text of ``topo``, in ``sgb2alt``'s exact layout.

    Vertex lines carry the node's ``x y`` when known; edge lines carry the Euclidean length
    (the rounded distance of the endpoints when not known, else 0) and, when known, the
    policy weight. Graph-level integers come from ``meta["header_ints"]``. Nodes without a
    name are written under their id.
    """
    require_topology(topo, "format_alt")
    gid = topo.name.replace(" ", "_") or topo.kind
    head = " ".join(str(x) for x in topo.meta.get("header_ints", []))
    out = [GRAPH_HEAD, f"{topo.n} {2 * topo.num_links} {gid} {head + ' ' if head else ''}",
           "", VERTEX_HEAD]
    for node in topo.nodes:
        name = (node.name or str(node.id)).replace(" ", "_")
        xy = ""
        if node.pos is not None:
            xy = f"{round(node.pos[0])} {round(node.pos[1])} "
        out.append(f"{node.id} {name} {xy}")
    out += ["", EDGE_HEAD]
    for link in topo.links:
        length = link.length
        if length is None:
            pu, pv = topo.nodes[link.u].pos, topo.nodes[link.v].pos
            length = (round(((pu[0] - pv[0]) ** 2 + (pu[1] - pv[1]) ** 2) ** 0.5)
                      if pu is not None and pv is not None else 0)
        extra = f"{link.weight} " if link.weight is not None else ""
        out.append(f"{link.u} {link.v} {length} {extra}")
    return "\n".join(out) + "\n"


def write_alt(topo: Topology, path: str | Path) -> None:
    """Write ``topo`` as a GT-ITM ``alt`` file (see :func:`format_alt`)."""
    require_topology(topo, "write_alt")
    write_atomic(path, format_alt(topo), "topology file")
