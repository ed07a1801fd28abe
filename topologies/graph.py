"""The :class:`Topology` value: nodes, undirected links with latencies, and the facts they give.

Role: one immutable description of a network that every generator returns and every reader
builds: nodes with integer ids ``0..n-1`` (plus a name such as GT-ITM's ``T:0.1`` or
``S:0.1/2.3``, a kind, a domain and coordinates), undirected links with a latency in ms and a
link class (``TT``, ``TS``, ``SS`` for transit-stub graphs, ``LL`` for any other link), and for
sensor grids the seeds, the sink and the neighbour radius. From it come the base facts of
Liu et al. Sec. 7 (``link(@S, D, Cost)`` in both directions, and ``sensor``, ``nbr``,
``seed``, ``sink`` for sensor grids) and the message latency the simulator charges between
any two nodes (the link's own latency between neighbours, the shortest-path latency
otherwise), computed with a hand-written Dijkstra cached per source.

Deliberately not here: generating graphs (``gtitm``, ``sensor``, ``simple``), file formats
(``alt``, ``jsonfmt``), and any simulation. No networkx: it is a test-only dependency.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Iterable, Mapping

from ndlog.errors import InputError
from ndlog.text import count_noun

__all__ = [
    "Node", "Link", "Topology", "DEFAULT_LATENCIES", "link_class",
    "TRANSIT", "STUB", "SENSOR", "PLAIN", "parse_gtitm_name", "gtitm_node", "make_links",
    "require_topology",
]

#: node kinds
TRANSIT, STUB, SENSOR, PLAIN = "transit", "stub", "sensor", "node"

#: default latency (ms) per link class: transit-transit, transit-stub, stub-stub (intra-stub
#: and GT-ITM's extra stub-stub edges alike), and any other link (rings, grids, sensors)
DEFAULT_LATENCIES: Mapping[str, int] = {"TT": 50, "TS": 10, "SS": 2, "LL": 1}


def check_latencies(latencies) -> Mapping[str, float]:
    """``latencies``, a per-class override of :data:`DEFAULT_LATENCIES`, once its classes
    are known ones (the values are checked on the links they make).

    Raises
    ------
    InputError
        For a value that is not a mapping, or a class that is not TT, TS, SS or LL.
    """
    if not isinstance(latencies, Mapping):
        raise InputError(f"latencies map link classes to milliseconds, got "
                         f"{type(latencies).__name__} {latencies!r:.80}",
                         hint='e.g. latencies={"TT": 20}')
    for cls in latencies:
        if cls not in DEFAULT_LATENCIES:
            raise InputError(f"latencies: unknown link class {cls!r}",
                             hint=f"the classes are {', '.join(DEFAULT_LATENCIES)}")
    return latencies


def link_class(name_u: str, name_v: str) -> str:
    """Class of a link from its endpoints' GT-ITM name prefixes (``T:`` transit, ``S:`` stub).

    Parameters
    ----------
    name_u, name_v:
        Node names; GT-ITM's ``ts.c`` names transit nodes ``T:d.k`` and stub nodes
        ``S:d.k/s.j`` (docs/topologies.md, "GT-ITM transit-stub graphs").

    Returns
    -------
    str
        ``"TT"``, ``"TS"`` or ``"SS"``; ``"LL"`` when either name has neither prefix.

    Raises
    ------
    InputError
        For a name that is not a string.
    """
    for name in (name_u, name_v):
        if not isinstance(name, str):
            raise InputError(f"a node name is a string, got {type(name).__name__} "
                             f"{name!r:.80}")
    a, b = name_u[:2], name_v[:2]
    if a not in ("T:", "S:") or b not in ("T:", "S:"):
        return "LL"
    if a == b:
        return "TT" if a == "T:" else "SS"
    return "TS"


@dataclass(frozen=True)
class Node:
    """One node.

    ``domain`` is the transit domain number ``d`` of a GT-ITM node; ``stub`` is ``(d, k, s)``
    for a stub node (stub ``s`` of transit node ``T:d.k``); ``pos`` is ``(x, y)`` (GT-ITM grid
    units, or metres for sensors) or ``None``.
    """

    id: int
    name: str
    kind: str = PLAIN
    pos: tuple | None = None
    domain: int | None = None
    stub: tuple | None = None

    @property
    def transit(self) -> tuple | None:
        """``(d, k)``: the transit node this node is (``T:d.k``) or hangs off (``S:d.k/..``)."""
        if self.stub is not None:
            return self.stub[:2]
        if self.kind == TRANSIT:
            return parse_gtitm_name(self.name)[1]
        return None


@dataclass(frozen=True)
class Link:
    """An undirected link ``u < v`` with latency (ms) and class.

    ``length`` and ``weight`` keep GT-ITM's Euclidean length and policy weight (the ``alt``
    file's third and fourth edge fields) when known.
    """

    u: int
    v: int
    latency: float
    cls: str = "LL"
    length: int | None = None
    weight: int | None = None

    @property
    def key(self) -> tuple[int, int]:
        return (self.u, self.v)


def parse_gtitm_name(name: str) -> tuple[str, tuple | None]:
    """Split a GT-ITM node name into ``(kind, numbers)``.

    ``"T:2.5"`` gives ``("transit", (2, 5))``; ``"S:2.5/1.7"`` gives ``("stub", (2, 5, 1, 7))``;
    any other name gives ``("node", None)``.
    """
    try:
        if name.startswith("T:"):
            d, k = name[2:].split(".")
            return TRANSIT, (int(d), int(k))
        if name.startswith("S:"):
            head, tail = name[2:].split("/")
            d, k = head.split(".")
            s, j = tail.split(".")
            return STUB, (int(d), int(k), int(s), int(j))
    except ValueError:
        pass
    return PLAIN, None


def gtitm_node(id: int, name: str, pos: tuple | None = None) -> Node:
    """A :class:`Node` whose kind, domain and stub come from its GT-ITM name."""
    kind, nums = parse_gtitm_name(name)
    if kind == TRANSIT:
        return Node(id, name, TRANSIT, pos, domain=nums[0])
    if kind == STUB:
        return Node(id, name, STUB, pos, domain=nums[0], stub=nums[:3])
    return Node(id, name, PLAIN, pos)


@dataclass(frozen=True)
class Topology:
    """A network: nodes ``0..n-1``, undirected links, and (for sensor grids) seeds and sink.

    Parameters
    ----------
    nodes:
        Nodes in id order; ``nodes[i].id == i``.
    links:
        Undirected links, each once with ``u < v``; no self-loops, no duplicates.
    kind:
        Which generator or reader made it (``"gtitm"``, ``"sensor-grid"``, ``"ring"`` ...).
    name:
        A label (GT-ITM's graph id string for transit-stub graphs).
    meta:
        Free-form, JSON-able details (generator parameters, GT-ITM header fields).
    seeds:
        Sensor grids: the seed sensors, each starting region ``R`` = its own id.
    sink:
        Sensor grids: the node ``K`` that collects the region query's answer.
    radius:
        Sensor grids: the neighbour radius ``k`` in metres.
    """

    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    kind: str = "graph"
    name: str = ""
    meta: dict = field(default_factory=dict, compare=False)
    seeds: tuple[int, ...] = ()
    sink: int | None = None
    radius: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "links", tuple(sorted(self.links, key=lambda l: l.key)))
        n = len(self.nodes)
        for i, node in enumerate(self.nodes):
            if node.id != i:
                raise InputError(f"node ids must be 0..{n - 1} in order; "
                                 f"position {i} holds id {node.id}")
        seen = set()
        for link in self.links:
            if not (0 <= link.u < link.v < n):
                raise InputError(f"bad link {link.u}-{link.v} in a {n}-node topology "
                                 f"(need 0 <= u < v < n)")
            if link.key in seen:
                raise InputError(f"duplicate link {link.u}-{link.v}")
            seen.add(link.key)
            lat = link.latency
            if isinstance(lat, bool) or not isinstance(lat, (int, float)) \
                    or not math.isfinite(lat) or lat < 0:
                raise InputError(f"link {link.u}-{link.v} ({link.cls}) has latency {lat!r}: "
                                 f"a latency is a finite number of ms >= 0")
        for x in self.seeds + ((self.sink,) if self.sink is not None else ()):
            if not 0 <= x < n:
                raise InputError(f"seed or sink {x} is not a node of a {n}-node topology")

    # ------------------------------------------------------------------ structure

    @property
    def n(self) -> int:
        """Number of nodes."""
        return len(self.nodes)

    @property
    def num_links(self) -> int:
        """Number of undirected links."""
        return len(self.links)

    @cached_property
    def _adj(self) -> tuple[dict[int, Link], ...]:
        adj: list[dict[int, Link]] = [dict() for _ in self.nodes]
        for link in self.links:
            adj[link.u][link.v] = link
            adj[link.v][link.u] = link
        return tuple(adj)

    @cached_property
    def _by_name(self) -> dict[str, int]:
        return {node.name: node.id for node in self.nodes}

    def _node(self, u) -> int:
        """``u`` once it is the id of one of the nodes (a negative index would count from
        the end)."""
        if isinstance(u, bool) or not isinstance(u, int) or not 0 <= u < self.n:
            raise InputError(f"{u!r} is not a node of this topology",
                             hint=f"node ids are 0..{self.n - 1}; topo.id_of(name) maps a "
                                  f"name to its id")
        return u

    def neighbors(self, u: int) -> list[int]:
        """Ids of ``u``'s neighbours, ascending."""
        return sorted(self._adj[self._node(u)])

    def degree(self, u: int) -> int:
        return len(self._adj[u])

    def has_link(self, u: int, v: int) -> bool:
        """True if ``u`` and ``v`` are nodes joined by a link (False for a node id the
        topology does not have)."""
        return 0 <= u < len(self._adj) and v in self._adj[u]

    def link(self, u: int, v: int) -> Link:
        """The link between ``u`` and ``v`` (either order); ``KeyError`` if there is none."""
        return self._adj[u][v]

    def id_of(self, name: str) -> int:
        """Id of the node called ``name``."""
        try:
            return self._by_name[name]
        except KeyError:
            raise InputError(f"no node named {name!r}") from None

    def class_counts(self) -> dict[str, int]:
        """Number of links per class, e.g. ``{"TT": 5, "TS": 12, "SS": 164}``."""
        out: dict[str, int] = {}
        for link in self.links:
            out[link.cls] = out.get(link.cls, 0) + 1
        return dict(sorted(out.items()))

    def components(self) -> list[list[int]]:
        """Connected components (breadth-first), each sorted, ordered by smallest id."""
        seen = [False] * self.n
        comps = []
        for s in range(self.n):
            if seen[s]:
                continue
            seen[s] = True
            comp, frontier = [s], [s]
            while frontier:
                nxt = []
                for u in frontier:
                    for v in self._adj[u]:
                        if not seen[v]:
                            seen[v] = True
                            comp.append(v)
                            nxt.append(v)
                frontier = nxt
            comps.append(sorted(comp))
        return comps

    def is_connected(self) -> bool:
        return self.n <= 1 or len(self.components()) == 1

    def hops_from(self, src: int) -> list[float]:
        """Hop counts from ``src`` to every node (breadth-first; ``inf`` if unreachable)."""
        self._node(src)
        dist = [math.inf] * self.n
        dist[src] = 0
        frontier = [src]
        while frontier:
            nxt = []
            for u in frontier:
                for v in self._adj[u]:
                    if dist[v] == math.inf:
                        dist[v] = dist[u] + 1
                        nxt.append(v)
            frontier = nxt
        return dist

    # ------------------------------------------------------------------ latency

    def shortest_latencies(self, src: int) -> tuple[float, ...]:
        """Shortest-path latency (ms) from ``src`` to every node; ``inf`` if unreachable.

        Dijkstra with a binary heap, cached per source.
        """
        cache = self.__dict__.setdefault("_sp_cache", {})
        hit = cache.get(src)
        if hit is not None:
            return hit
        self._node(src)
        dist = [math.inf] * self.n
        dist[src] = 0
        heap = [(0, src)]
        adj = self._adj
        while heap:
            d, u = heapq.heappop(heap)
            if d > dist[u]:
                continue
            for v, link in adj[u].items():
                nd = d + link.latency
                if nd < dist[v]:
                    dist[v] = nd
                    heapq.heappush(heap, (nd, v))
        out = tuple(dist)
        cache[src] = out
        return out

    def latency(self, u: int, v: int) -> float:
        """Message latency (ms) from ``u`` to ``v`` as the simulator charges it.

        The link's own latency when ``u`` and ``v`` are neighbours, the shortest-path latency
        otherwise, 0 from a node to itself, ``inf`` between disconnected nodes.
        """
        self._node(u)
        self._node(v)
        if u == v:
            return 0
        link = self._adj[u].get(v)
        if link is not None:
            return link.latency
        return self.shortest_latencies(u)[v]

    # ------------------------------------------------------------------ facts

    def link_facts(self, arity: int = 3, cost: str = "latency") -> list[tuple]:
        """``link(@S, D, Cost)`` tuples, each link in both directions (Liu et al. Sec. 7).

        Parameters
        ----------
        arity:
            3 gives ``(S, D, Cost)``; 2 gives ``(S, D)`` for programs that use ``link/2``.
        cost:
            ``"latency"`` (ms, the default), ``"hops"`` (1 per link) or ``"length"``
            (GT-ITM's Euclidean length; the latency where it is unknown).

        Returns
        -------
        list[tuple]
            Sorted by ``(S, D)``.
        """
        if arity not in (2, 3):
            raise InputError(f"link facts have arity 2 or 3, not {arity}")
        if cost not in ("latency", "hops", "length"):
            raise InputError(f"unknown link cost {cost!r} (latency, hops or length)")
        out = []
        for link in self.links:
            if arity == 2:
                out += [(link.u, link.v), (link.v, link.u)]
                continue
            if cost == "hops":
                c = 1
            elif cost == "length" and link.length is not None:
                c = link.length
            else:
                c = link.latency
            out += [(link.u, link.v, c), (link.v, link.u, c)]
        out.sort()
        return out

    def facts(self, link_arity: int | None = 3, cost: str = "latency") -> dict[str, list]:
        """Base facts of this topology, ``predicate -> list of tuples``.

        A sensor grid (``kind == "sensor-grid"``) gives Liu et al.'s Query 3 inputs
        (docs/language.md, section 10): ``sensor(@X, Pos)`` with ``Pos = (x, y)`` in
        metres, ``nbr(@X, Y)`` in both directions for sensors within ``radius`` metres,
        ``seed(@X, R)`` with the region id ``R = X`` (the seed's own id, so that
        ``regionSize(@R, N)`` lives at the seed) and ``sink(@R, K)`` for every region ``R``,
        ``K`` the sink node that collects ``largestRegion``. Any other topology gives
        ``link`` facts (see :meth:`link_facts`); ``link_arity=None`` leaves them out.
        """
        if self.kind == "sensor-grid":
            out = {
                "sensor": [(node.id, tuple(node.pos)) for node in self.nodes],
                "nbr": self.link_facts(2),
                "seed": [(x, x) for x in sorted(self.seeds)],
                "sink": ([(r, self.sink) for r in sorted(self.seeds)]
                         if self.sink is not None else []),
            }
            return out
        if link_arity is None:
            return {}
        return {"link": self.link_facts(link_arity, cost)}

    # ------------------------------------------------------------------ variants

    def with_latencies(self, latencies: Mapping[str, float]) -> "Topology":
        """A copy whose links take their latency from ``latencies[link.cls]``.

        Classes missing from ``latencies`` keep their latency.
        """
        check_latencies(latencies)
        links = [replace(l, latency=latencies[l.cls]) if l.cls in latencies else l
                 for l in self.links]
        return replace(self, links=tuple(links), meta=dict(self.meta))

    def summary(self) -> str:
        """One line: kind, node and link counts, links per class, connectivity."""
        classes = ", ".join(f"{k} {v}" for k, v in self.class_counts().items())
        comps = len(self.components())
        conn = "connected" if comps <= 1 else f"{comps} components"
        line = (f"{self.kind}: {count_noun(self.n, 'node')}, "
                f"{count_noun(self.num_links, 'link')}"
                f"{' (' + classes + ')' if classes else ''}, {conn}")
        if self.kind == "sensor-grid":
            line += (f"; radius {self.radius:g} m, {count_noun(len(self.seeds), 'seed')}, "
                     f"sink {self.sink}")
        return line


def make_links(pairs: Iterable[tuple], nodes: tuple[Node, ...],
               latencies: Mapping[str, float] | None = None) -> list[Link]:
    """Links for ``(u, v[, length[, weight]])`` pairs, classed by endpoint names.

    Each pair is normalised to ``u < v``; the latency comes from ``latencies`` (default
    :data:`DEFAULT_LATENCIES`) by class.
    """
    lat = dict(DEFAULT_LATENCIES)
    if latencies is not None:
        lat.update(check_latencies(latencies))
    out = []
    for pair in pairs:
        u, v = pair[0], pair[1]
        if u > v:
            u, v = v, u
        cls = link_class(nodes[u].name, nodes[v].name)
        length = pair[2] if len(pair) > 2 else None
        weight = pair[3] if len(pair) > 3 else None
        out.append(Link(u, v, lat[cls], cls, length, weight))
    return out


def require_topology(topo, where: str) -> None:
    """Refuse ``topo`` unless it is a :class:`Topology` (a writer would fail on its first
    attribute), naming the function ``where`` and what it got.

    Raises
    ------
    InputError
        Naming ``where``, the type and the value.
    """
    if not isinstance(topo, Topology):
        raise InputError(f"{where} takes a topologies.Topology, got {type(topo).__name__} "
                         f"{topo!r:.80}", hint="e.g. topologies.make('ring', n=10), or "
                                               "topologies.load(path)")
