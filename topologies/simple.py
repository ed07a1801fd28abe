"""Small graphs for tests: ring, line, grid and seeded random graphs.

Role: topologies with a known shape (node ids ``0..n-1``, every link of class ``LL`` with a
latency of 1 ms unless told otherwise), so tests of the engine and the simulator can run on
something smaller and more predictable than a transit-stub graph.

Deliberately not here: anything GT-ITM-specific, file formats.
"""

from __future__ import annotations

import random

from ndlog.errors import InputError

from .checks import checked
from .graph import Link, Node, Topology

__all__ = ["ring", "line", "grid", "random_graph"]


def _plain(n: int, pairs, kind: str, latency: float, pos=None, meta=None) -> Topology:
    nodes = tuple(Node(i, str(i), pos=pos[i] if pos else None) for i in range(n))
    links = tuple(Link(min(u, v), max(u, v), latency, "LL") for u, v in pairs)
    return Topology(nodes, links, kind=kind, name=f"{kind}({n})", meta=meta or {})


@checked("ring")
def ring(n: int = 10, latency: float = 1) -> Topology:
    """A cycle ``0 - 1 - ... - (n-1) - 0`` (``n >= 3``)."""
    if n < 3:
        raise InputError(f"a ring needs at least 3 nodes, not {n}")
    return _plain(n, [(i, (i + 1) % n) for i in range(n)], "ring", latency)


@checked("line")
def line(n: int = 10, latency: float = 1) -> Topology:
    """A path ``0 - 1 - ... - (n-1)`` (``n >= 1``)."""
    if n < 1:
        raise InputError(f"a line needs at least 1 node, not {n}")
    return _plain(n, [(i, i + 1) for i in range(n - 1)], "line", latency)


@checked("grid")
def grid(rows: int = 5, cols: int = 5, latency: float = 1) -> Topology:
    """A ``rows x cols`` 4-neighbour mesh; node ``r * cols + c`` sits at ``(c, r)``."""
    if rows < 1 or cols < 1:
        raise InputError(f"a grid needs positive dimensions, not {rows}x{cols}")
    pairs = [(r * cols + c, r * cols + c + 1) for r in range(rows) for c in range(cols - 1)]
    pairs += [(r * cols + c, (r + 1) * cols + c) for r in range(rows - 1) for c in range(cols)]
    pos = [(c, r) for r in range(rows) for c in range(cols)]
    topo = _plain(rows * cols, pairs, "grid", latency, pos)
    return Topology(topo.nodes, topo.links, kind="grid", name=f"grid({rows}x{cols})")


@checked("random")
def random_graph(n: int = 20, m: int | None = None, p: float | None = None, seed: int = 0, *,
                 connected: bool = False, latency: float = 1) -> Topology:
    """A seeded random graph: ``G(n, m)`` (exactly ``m`` links) or ``G(n, p)``.

    Parameters
    ----------
    n:
        Number of nodes.
    m, p:
        Exactly one: the number of links (uniform among all ``m``-subsets of pairs), or the
        probability of each pair.
    seed:
        Seed of the ``random.Random`` used.
    connected:
        ``G(n, m)``: first a random spanning tree (each node of a random order joins a
        uniformly chosen earlier node), then ``m - (n - 1)`` more links uniform among the
        remaining pairs; this is not ``G(n, m)`` conditioned on connectivity, but it always
        succeeds. ``G(n, p)``: redraw (up to 1,000 times) until connected.
    latency:
        Latency (ms) of every link.
    """
    if (m is None) == (p is None):
        raise InputError("give exactly one of m (number of links) and p (link probability)")
    if n < 1:
        raise InputError(f"a random graph needs at least 1 node, not {n}")
    rng = random.Random(seed)
    all_pairs = n * (n - 1) // 2
    meta = {"generator": "random_graph", "n": n, "m": m, "p": p, "seed": seed,
            "connected": connected}
    if m is not None:
        if not 0 <= m <= all_pairs:
            raise InputError(f"cannot place {m} links among {n} nodes (max {all_pairs})")
        if connected and m < n - 1:
            raise InputError(f"a connected graph on {n} nodes needs at least {n - 1} links")
        chosen: set[tuple[int, int]] = set()
        if connected:
            order = list(range(n))
            rng.shuffle(order)
            for i in range(1, n):
                u, v = order[i], order[rng.randrange(i)]
                chosen.add((min(u, v), max(u, v)))
        rest = [(u, v) for u in range(n) for v in range(u + 1, n) if (u, v) not in chosen]
        chosen.update(rng.sample(rest, m - len(chosen)))
        return _plain(n, sorted(chosen), "random", latency, meta=meta)
    if not 0.0 <= p <= 1.0:
        raise InputError(f"link probability must be in [0, 1], not {p}")
    for _ in range(1000 if connected else 1):
        pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < p]
        topo = _plain(n, pairs, "random", latency, meta=meta)
        if not connected or topo.is_connected():
            return topo
    raise InputError(f"no connected G({n}, {p}) in 1000 tries; raise p")
