"""GT-ITM transit-stub topologies: a port of ``geog.c`` ``geo()`` and ``ts.c`` ``transtub()``.

Role: generate transit-stub graphs the way GT-ITM's ``itm`` does (Zegura, Calvert,
Bhattacharjee, "How to Model an Internetwork", INFOCOM 1996; docs/topologies.md), from the
same spec file, seeded with an explicit ``random.Random``. Liu et al. Sec. 7 use GT-ITM's own
``ts100`` (1 transit domain of 4 nodes, 3 stubs per transit node, 8 nodes per stub: 100
nodes); :data:`TS100` is that spec, and :func:`ts_variant` gives the dense and sparse
variants at larger sizes.

What the port keeps from GT-ITM's C code, including its quirks (each visible in the
``ts100``/``ts600`` sample graphs GT-ITM ships):

- node placement on distinct integer grid points, the six edge-probability methods, the
  scales GT-ITM overrides (global ``rint(sqrt(total*80))``, transit ``0.5*global`` rounded
  up to even, stub ``rint(sqrt(maxstubnodes*16))``), ``randomize()`` (counts start at the
  mean and units move between random entries, so totals never change and nothing drops
  below 1), retries until each graph is connected, the node numbering and names, the
  stubs of a transit node named in reverse order of creation, and the Euclidean length and
  policy weight of every edge;
- every top-level edge is visited from both of its endpoints, so it becomes *two*
  inter-domain edges between random transit nodes of the two domains;
- transit domains after the first are built with the *stub* domain's parameters (``ts.c``
  overwrites its working copy of the transit parameters inside the loop); pass
  ``quirks=False`` to build every transit domain with the transit parameters.

Where it deliberately differs: GT-ITM's random numbers (``gb_next_rand``) are replaced by
``random.Random``; an edge GT-ITM would add twice (a parallel edge) is kept once, and the
extra transit-stub and stub-stub edges are drawn among pairs not yet linked (GT-ITM could
draw a parallel edge, and its stub-stub loop has a swap bug that makes a self-loop); the
stub graph retry loop, unbounded in GT-ITM, gives up after 10,000 tries.

Deliberately not here: file formats (``alt``), latencies beyond classing links (the
:class:`~topologies.graph.Topology` does that), and GT-ITM's ``geo``/``hier`` methods other
than as building blocks.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from ndlog.errors import InputError, Span
from ndlog.parser import read_text

from .checks import checked
from .graph import Topology, gtitm_node, make_links

__all__ = [
    "GeoParams", "TSParams", "TS100", "parse_spec", "format_spec", "read_spec",
    "geo", "randomize", "transtub", "generate", "generate_many", "ts_variant",
    "EDGE_METHODS",
]

#: GT-ITM's edge-probability methods, as ``geog.h`` numbers them
EDGE_METHODS = {1: "Waxman RG2", 2: "Waxman RG1", 3: "pure random", 4: "exponential",
                5: "Doar-Leslie", 6: "locality"}

RANDMULT = 3                    # ts.c: multiplier for randomize() iterations
OVERALL_DENSITY_FACTOR = 80.0   # ts.c
STUB_DENSITY_FACTOR = 16.0      # ts.c
TRANSIT_SPREAD = 0.5            # ts.c
MAX_TRIES = 100                 # ts.c: top-level and transit domain graphs
MAX_STUB_TRIES = 10_000         # unbounded in ts.c


def _require_number(value, what: str, at: str, whole: bool = False) -> None:
    """Refuse ``value`` unless it is a whole number (``whole``) or a finite number (a bool
    is neither): a parameter of :class:`GeoParams` or :class:`TSParams` built in Python."""
    kinds = int if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or \
            isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"bad {what} {value!r:.80}{at}: need a "
                         f"{'whole' if whole else 'finite'} number")


@dataclass(frozen=True)
class GeoParams:
    """One ``<n> <scale> <edgemethod> <alpha> [<beta>] [<gamma>]`` line (``geo_parms``).

    Missing ``beta`` and ``gamma`` are 0.0, as in ``itm.c``.
    """

    n: int
    scale: int
    method: int
    alpha: float
    beta: float = 0.0
    gamma: float = 0.0

    def check(self, where: str = "") -> None:
        """Raise :class:`InputError` unless the values pass ``itm.c``'s and ``geo()``'s checks."""
        at = f" ({where})" if where else ""
        for name in ("n", "scale", "method"):
            _require_number(getattr(self, name), f"{name} parameter", at, whole=True)
        for name in ("alpha", "beta", "gamma"):
            _require_number(getattr(self, name), f"{name} parameter", at)
        if self.n <= 0:
            raise InputError(f"bad n parameter {self.n}{at}: need n > 0")
        if self.scale <= 0:
            raise InputError(f"bad scale parameter {self.scale}{at}: need scale > 0")
        if self.method not in EDGE_METHODS:
            raise InputError(f"bad edge method {self.method}{at}: need 1..6")
        if not 0.0 < self.alpha <= 1.0:
            raise InputError(f"bad alpha parameter {self.alpha}{at}: need 0 < alpha <= 1")
        if self.beta < 0.0:
            raise InputError(f"bad beta parameter {self.beta}{at}: need beta >= 0")
        if self.gamma < 0.0:
            raise InputError(f"bad gamma parameter {self.gamma}{at}: need gamma >= 0")

    def text(self) -> str:
        """The spec line, e.g. ``"8 10 3 0.42"`` (beta and gamma only when non-zero)."""
        parts = [str(self.n), str(self.scale), str(self.method), f"{self.alpha:g}"]
        if self.beta or self.gamma:
            parts.append(f"{self.beta:g}")
        if self.gamma:
            parts.append(f"{self.gamma:g}")
        return " ".join(parts)

    def printparms(self) -> str:
        """GT-ITM's ``printparms()`` form, ``{n,scale,method,alpha,beta,gamma}``."""
        return (f"{{{self.n},{self.scale},{self.method},{self.alpha:.3f},"
                f"{self.beta:.3f},{self.gamma:.3f}}}")


@dataclass(frozen=True)
class TSParams:
    """The parameters of a transit-stub spec file (``itm``'s ``ts`` method).

    Attributes mirror the spec: mean stubs per transit node, the number of extra
    transit-stub and stub-stub edges, and three :class:`GeoParams` lines for the top level
    (``n`` = transit domains), each transit domain (``n`` = mean nodes) and each stub domain
    (``n`` = mean nodes). ``count`` and ``seed`` are the spec's first line
    (``ts <count> [<seed>]``).
    """

    stubs_per_transit: int = 3
    extra_ts: int = 0
    extra_ss: int = 0
    top: GeoParams = GeoParams(1, 20, 3, 1.0)
    transit: GeoParams = GeoParams(4, 20, 3, 0.6)
    stub: GeoParams = GeoParams(8, 10, 3, 0.42)
    count: int = 1
    seed: int | None = None

    @property
    def total_nodes(self) -> int:
        """``T * N_T * (1 + S * N_S)``: exact, because ``randomize()`` keeps totals."""
        return self.top.n * self.transit.n * (1 + self.stubs_per_transit * self.stub.n)

    def check(self) -> None:
        """Raise :class:`InputError` on values ``itm`` would reject (and on values of the
        wrong kind: a count that is not a whole number, a level that is no GeoParams)."""
        for name, what in (("stubs_per_transit", "stubs/transit parameter"),
                           ("extra_ts", "transit-stub edge parameter"),
                           ("extra_ss", "stub-stub edge parameter"), ("count", "count")):
            _require_number(getattr(self, name), what, "", whole=True)
        if self.seed is not None:
            _require_number(self.seed, "seed", "", whole=True)
        for name in ("top", "transit", "stub"):
            if not isinstance(getattr(self, name), GeoParams):
                raise InputError(f"bad {name} parameters {getattr(self, name)!r:.80}: need a "
                                 f"topologies.GeoParams")
        if self.stubs_per_transit < 0:
            raise InputError(f"bad stubs/transit parameter {self.stubs_per_transit}")
        if self.extra_ts < 0:
            raise InputError(f"bad transit-stub edge parameter {self.extra_ts}")
        if self.extra_ss < 0:
            raise InputError(f"bad stub-stub edge parameter {self.extra_ss}")
        for p, where in ((self.top, "top level"), (self.transit, "transit domains"),
                         (self.stub, "stub domains")):
            p.check(where)


#: GT-ITM's sample ``ts100``, Liu et al.'s default topology (100 nodes)
TS100 = TSParams(3, 0, 0, GeoParams(1, 20, 3, 1.0), GeoParams(4, 20, 3, 0.6),
                 GeoParams(8, 10, 3, 0.42), count=10, seed=47)


# ---------------------------------------------------------------------- spec files

def _spec_lines(text: str):
    """Non-blank, non-comment lines as ``(lineno, raw line, tokens)``, the way ``itm.c``
    skips them; a ``#`` also ends a line's fields (a trailing comment), as ``itm.c``'s
    ``sscanf`` stops at it."""
    for no, raw in enumerate(text.splitlines(), 1):
        toks = raw.split("#", 1)[0].split()
        if toks:
            yield no, raw, toks


def parse_spec(text: str, filename: str | None = None) -> TSParams:
    """Parse an ``itm`` transit-stub spec (GT-ITM's layout, see docs/topologies.md).

    Parameters
    ----------
    text:
        ``ts <count> [<seed>]``, then ``<stubs/transit> <extra T-S> <extra S-S>``, then three
        ``<n> <scale> <edgemethod> <alpha> [<beta>] [<gamma>]`` lines; blank lines and
        ``#`` comments (whole lines, or the end of a line) are skipped, as ``itm.c``
        does.
    filename:
        For error messages.

    Raises
    ------
    InputError
        Naming ``file:line`` of the first bad line.
    """
    if not isinstance(text, str):
        raise InputError(f"parse_spec takes the text of a spec (a str), got "
                         f"{type(text).__name__} {text!r:.80}",
                         hint="for a file, use topologies.read_spec(path)")
    lines = list(_spec_lines(text))

    def err(msg, i=None):
        if i is None or i >= len(lines):
            last = len(text.splitlines()) or 1
            return InputError(msg, Span(last, 1, filename), text)
        return InputError(msg, Span(lines[i][0], 1, filename), text)

    def ints(i, toks, what):
        try:
            return [int(t) for t in toks]
        except ValueError:
            raise err(f"bad {what}: expected integers, got {' '.join(toks)!r}", i) from None

    if not lines:
        raise err("empty spec file: expected 'ts <count> [<seed>]'")
    _, _, head = lines[0]
    if head[0] != "ts":
        raise err(f"unsupported generation method {head[0]!r}: only 'ts' "
                  f"(transit-stub) is supported", 0)
    if len(head) < 2:
        raise err("missing <number of graphs>", 0)
    nums = ints(0, head[1:3], "'ts' line")
    count, seed = nums[0], (nums[1] if len(nums) > 1 else None)
    if count < 1:
        raise err(f"bad number of graphs {count}", 0)
    if len(lines) < 5:
        raise err(f"file ended unexpectedly: a 'ts' spec has 5 lines, found {len(lines)}")
    toks = lines[1][2]
    if len(toks) < 3:
        raise err("expected '<stubs/transit node> <#extra t-s edges> <#extra s-s edges>'", 1)
    spx, ets, ess = ints(1, toks[:3], "stubs/edges line")
    geos = []
    for i in (2, 3, 4):
        toks = lines[i][2]
        if len(toks) < 4:
            raise err("expected '<n> <scale> <edgemethod> <alpha> [<beta>] [<gamma>]'", i)
        n, scale, method = ints(i, toks[:3], "geo parameters")
        try:
            reals = [float(t) for t in toks[3:6]]
        except ValueError:
            raise err(f"bad alpha/beta/gamma in {' '.join(toks[3:6])!r}", i) from None
        p = GeoParams(n, scale, method, *reals)
        try:
            p.check()
        except InputError as exc:
            raise err(exc.message, i) from None
        geos.append(p)
    params = TSParams(spx, ets, ess, *geos, count=count, seed=seed)
    try:
        params.check()
    except InputError as exc:
        raise err(exc.message, 1) from None
    return params


def read_spec(path: str | Path) -> TSParams:
    """Read and parse an ``itm`` spec file (see :func:`parse_spec`)."""
    return parse_spec(read_text(path, "spec file"), str(path))


def format_spec(params: TSParams) -> str:
    """The ``itm`` spec text of ``params`` (inverse of :func:`parse_spec`)."""
    _require_params(params)
    head = f"ts {params.count}" + (f" {params.seed}" if params.seed is not None else "")
    return "\n".join([
        head,
        f"{params.stubs_per_transit} {params.extra_ts} {params.extra_ss}",
        params.top.text(), params.transit.text(), params.stub.text(),
    ]) + "\n"


# ---------------------------------------------------------------------- geo()

@dataclass
class _Graph:
    """A flat graph under construction: integer positions and ``(i, j, length)`` edges."""

    pos: list[tuple[int, int]]
    edges: list[tuple[int, int, int]] = field(default_factory=list)
    x_off: int = 0
    y_off: int = 0

    @property
    def n(self) -> int:
        return len(self.pos)

    def adjacency(self) -> list[list[int]]:
        adj = [[] for _ in self.pos]
        for i, j, _ in self.edges:
            adj[i].append(j)
            adj[j].append(i)
        return adj

    def is_connected(self) -> bool:
        return self.n <= 1 or len(_bfs(self.adjacency(), 0)) == self.n

    def hop_diameter(self) -> int:
        """Largest finite hop distance (``fdiam()``, edges of unit weight)."""
        adj = self.adjacency()
        return max((max(_bfs(adj, s).values()) for s in range(self.n)), default=0)


def _bfs(adj: list[list[int]], src: int) -> dict[int, int]:
    dist = {src: 0}
    frontier = [src]
    while frontier:
        nxt = []
        for u in frontier:
            for v in adj[u]:
                if v not in dist:
                    dist[v] = dist[u] + 1
                    nxt.append(v)
        frontier = nxt
    return dist


def geo(params: GeoParams, rng: random.Random) -> _Graph:
    """One random geometric graph, as GT-ITM's ``geo()`` builds it (``geog.c``).

    ``params.n`` nodes go to distinct random points of the ``scale x scale`` integer grid;
    each pair ``i < j`` gets an edge with probability ``p`` by ``params.method``, with
    ``L = scale * sqrt(2)`` and ``d`` the Euclidean distance: 1 Waxman RG2
    ``alpha*exp(-e/(L*beta))``, ``e`` uniform in ``[0, L]``; 2 Waxman RG1
    ``alpha*exp(-d/(L*beta))``; 3 ``alpha``; 4 ``alpha*exp(-d/(L-d))``; 5 Doar-Leslie
    ``alpha*(gamma/n)*exp(-d/(L*beta))``; 6 ``alpha`` if ``d <= L*gamma`` else ``beta``.
    An edge's length is ``rint(d)`` (for method 1, ``rint(e)``, as in ``geog.c``).
    The result need not be connected.
    """
    params.check()
    n, scale = params.n, params.scale
    if n > scale * scale:
        raise InputError(f"{n} nodes do not fit on a {scale}x{scale} grid "
                         f"(GT-ITM needs n <= scale*scale)")
    L = math.sqrt(2.0) * scale
    radius = params.gamma * L
    occupied: set[tuple[int, int]] = set()
    pos = []
    for _ in range(n):
        while True:
            p = (rng.randrange(scale), rng.randrange(scale))
            if p not in occupied:
                break
        occupied.add(p)
        pos.append(p)
    g = _Graph(pos)
    method, alpha, beta, gamma = params.method, params.alpha, params.beta, params.gamma
    for i in range(n - 1):
        xi, yi = pos[i]
        for j in range(i + 1, n):
            xj, yj = pos[j]
            d = math.hypot(xi - xj, yi - yj)
            if method == 1:
                d = rng.random() * L
            if method in (1, 2):
                p = alpha * math.exp(-d / (L * beta)) if beta > 0 else 0.0
            elif method == 3:
                p = alpha
            elif method == 4:
                p = alpha * math.exp(-d / (L - d))
            elif method == 5:
                p = alpha * (gamma / n) * math.exp(-d / (L * beta)) if beta > 0 else 0.0
            else:
                p = alpha if d <= radius else beta
            if rng.random() < p:
                g.edges.append((i, j, round(d)))
    return g


def _connected_geo(params: GeoParams, rng: random.Random, tries: int, what: str) -> _Graph:
    for _ in range(tries):
        g = geo(params, rng)
        if g.is_connected():
            return g
    raise InputError(f"failed to get a connected {what} graph after {tries} tries "
                     f"(parameters {params.text()!r}); raise alpha")


def randomize(size: int, mean: int, iters: int, rng: random.Random) -> list[int]:
    """GT-ITM's ``randomize()``: ``size`` counts around ``mean`` with their sum kept.

    All start at ``mean``; ``iters`` times a random entry above 1 gives one unit to a
    random entry (possibly itself). No entry drops below 1 (``geog.c``).
    """
    a = [mean] * size
    if size < 2:
        return a
    for _ in range(iters):
        i = rng.randrange(size)
        if a[i] > 1:
            a[i] -= 1
            a[rng.randrange(size)] += 1
    return a


def _halfup(x: int) -> int:
    return (x >> 1) + 1


# ---------------------------------------------------------------------- transtub()

def _require_params(params) -> None:
    """Refuse ``params`` unless it is a :class:`TSParams`, naming what it is."""
    if not isinstance(params, TSParams):
        raise InputError(f"GT-ITM parameters are a TSParams, got {type(params).__name__} "
                         f"{params!r:.80}",
                         hint="e.g. topologies.TS100, topologies.ts_variant(300), or "
                              "topologies.read_spec(path)")


def transtub(params: TSParams, rng: random.Random, *, quirks: bool = True,
             latencies: Mapping[str, float] | None = None, seed_label=None) -> Topology:
    """One transit-stub graph, GT-ITM's ``transtub()`` (``ts.c``) with ``rng``.

    Parameters
    ----------
    params:
        The spec; ``params.count``/``params.seed`` are ignored here.
    rng:
        The random source, passed explicitly (project rule 8).
    quirks:
        Keep GT-ITM's habit of building transit domains after the first with the stub
        domain's parameters (module docstring). Top-level edges always become two
        inter-domain edges, as in GT-ITM.
    latencies:
        Latency (ms) per link class, overriding :data:`~topologies.graph.DEFAULT_LATENCIES`
        (``TT`` 50, ``TS`` 10, ``SS`` 2).
    seed_label:
        Recorded in the graph id string (GT-ITM writes the seed it was called with).

    Returns
    -------
    Topology
        ``kind="gtitm"``, nodes numbered and named as GT-ITM numbers and names them,
        ``meta`` with the scales, hop diameters and policy weights.
    """
    _require_params(params)
    params.check()
    top, trans, stub = params.top, params.transit, params.stub
    spx = params.stubs_per_transit
    maxtnodes = trans.n + RANDMULT * top.n
    maxstubs = spx + RANDMULT * maxtnodes
    maxstubnodes = stub.n + RANDMULT * maxstubs
    total = params.total_nodes
    globscale = round(math.sqrt(total * OVERALL_DENSITY_FACTOR))
    tscale = round(globscale * TRANSIT_SPREAD)
    if tscale & 1:
        tscale += 1
    sscale = round(math.sqrt(maxstubnodes * STUB_DENSITY_FACTOR))
    if sscale >= globscale:
        raise InputError(
            f"stub domains of up to {maxstubnodes} nodes (scale {sscale}) would not fit in "
            f"the plane of a graph of {total} nodes (scale {globscale}): GT-ITM sizes the "
            f"plane by the whole graph",
            hint="more stubs per transit node or transit nodes, or fewer nodes per stub "
                 "(psn topology gtitm --stubs, --transit, --stub-nodes)")
    top = replace(top, scale=globscale)
    trans = replace(trans, scale=tscale)
    stub = replace(stub, scale=sscale)

    top_g = _connected_geo(top, rng, MAX_TRIES, "top-level")
    topdiam = top_g.hop_diameter()
    nnodes = randomize(top.n, trans.n, RANDMULT * top.n, rng)

    domains: list[_Graph] = []
    stubs: list[list[list[_Graph]]] = []      # stubs[dom][k] = stub graphs in name order
    transdiam = stubdiam = 0
    for i, (vx, vy) in enumerate(top_g.pos):
        xoff = min(max(vx - tscale // 2, 0), globscale - tscale)
        yoff = min(max(vy - tscale // 2, 0), globscale - tscale)
        work = trans if (i == 0 or not quirks) else stub
        dg = _connected_geo(replace(work, n=nnodes[i]), rng, MAX_TRIES + 1,
                            "transit domain")
        transdiam = max(transdiam, dg.hop_diameter())
        nstubs = randomize(dg.n, spx, RANDMULT * dg.n, rng)
        dom_stubs = []
        for k in range(dg.n):
            x, y = dg.pos[k]
            x, y = x + xoff, y + yoff
            dg.pos[k] = (x, y)
            minx, miny = max(x - sscale, 0), max(y - sscale, 0)
            maxx = x if x + sscale <= globscale else globscale - sscale
            maxy = y if y + sscale <= globscale else globscale - sscale
            xrange, yrange = maxx - minx, maxy - miny
            sizes = randomize(nstubs[k], stub.n, RANDMULT * nstubs[k], rng)
            made = []
            for size in sizes:
                sg = _connected_geo(replace(stub, n=size), rng, MAX_STUB_TRIES, "stub")
                sg.x_off = minx + rng.randrange(xrange) if xrange > 0 else minx
                sg.y_off = miny + rng.randrange(yrange) if yrange > 0 else miny
                stubdiam = max(stubdiam, sg.hop_diameter())
                made.append(sg)
            made.reverse()          # ts.c pushes each new stub on the front of a list
            dom_stubs.append(made)
        domains.append(dg)
        stubs.append(dom_stubs)

    tt = _halfup(transdiam)
    ts = _halfup(topdiam * tt) + _halfup((topdiam + 1) * transdiam)
    ss = stubdiam + 2 * ts

    names: list[str] = []
    pos: list[tuple[int, int]] = []
    edges: dict[tuple[int, int], tuple[int, int]] = {}     # (u, v) -> (length, weight)
    t_base: list[int] = []

    def add_edge(u, v, length, weight):
        key = (u, v) if u < v else (v, u)
        edges.setdefault(key, (length, weight))

    def idist(u, v):
        return round(math.hypot(pos[u][0] - pos[v][0], pos[u][1] - pos[v][1]))

    for dom, dg in enumerate(domains):
        base = len(names)
        t_base.append(base)
        for k in range(dg.n):
            names.append(f"T:{dom}.{k}")
            pos.append(dg.pos[k])
        for a, b, length in dg.edges:
            add_edge(base + a, base + b, length, 1)
        for k in range(dg.n):
            tnode = base + k
            for snum, sg in enumerate(stubs[dom][k]):
                sbase = len(names)
                for j, (x, y) in enumerate(sg.pos):
                    names.append(f"S:{dom}.{k}/{snum}.{j}")
                    pos.append((x + sg.x_off, y + sg.y_off))
                for a, b, length in sg.edges:
                    add_edge(sbase + a, sbase + b, length, 1)
                attach = sbase + rng.randrange(sg.n)
                add_edge(tnode, attach, idist(tnode, attach), ts)
    if len(names) != total:     # pragma: no cover - randomize() keeps totals
        raise AssertionError(f"incorrect node total {len(names)} != {total}")

    top_adj = top_g.adjacency()
    for dom in range(len(domains)):
        for other in top_adj[dom]:          # each top-level edge from both ends: 2 edges
            u = t_base[dom] + rng.randrange(domains[dom].n)
            v = t_base[other] + rng.randrange(domains[other].n)
            add_edge(u, v, idist(u, v), tt)

    _extra_transit_stub(params.extra_ts, domains, t_base, names, edges, rng,
                        lambda u, v: add_edge(u, v, idist(u, v), ts))
    _extra_stub_stub(params.extra_ss, names, edges, rng,
                     lambda u, v: add_edge(u, v, idist(u, v), ss))

    gid = (f"transtub({seed_label if seed_label is not None else 0},{spx},"
           f"{params.extra_ts},{params.extra_ss},{top.printparms()},"
           f"{trans.printparms()},{stub.printparms()})")
    nodes = tuple(gtitm_node(i, nm, pos[i]) for i, nm in enumerate(names))
    links = make_links(((u, v, length, w) for (u, v), (length, w) in edges.items()),
                       nodes, latencies)
    meta = {
        "generator": "transtub", "spec": format_spec(params), "quirks": quirks,
        "scales": {"global": globscale, "transit": tscale, "stub": sscale},
        "diameters": {"top": topdiam, "transit": transdiam, "stub": stubdiam},
        "policy_weights": {"tt": tt, "ts": ts, "ss": ss},
        # the integer header fields GT-ITM's sgb2alt writes: uu, xx, yy, zz
        "header_ints": [globscale, transdiam, stubdiam, topdiam],
    }
    return Topology(nodes, tuple(links), kind="gtitm", name=gid, meta=meta)


def _under(stub_name: str, transit_name: str) -> bool:
    """``td_OK``'s test: is the stub node administratively under the transit node?"""
    return stub_name[2:].split("/")[0] == transit_name[2:]


def _extra_transit_stub(count, domains, t_base, names, edges, rng, add):
    """``ts.c``: ``count`` edges from a random transit node to a random stub node that is
    not one of its own stubs (and, here, not already linked to it)."""
    if count <= 0:
        return
    stub_ids = [i for i, nm in enumerate(names) if nm.startswith("S:")]
    for _ in range(count):
        dom = rng.randrange(len(domains))
        t = t_base[dom] + rng.randrange(domains[dom].n)
        cands = [s for s in stub_ids if not _under(names[s], names[t])
                 and (min(s, t), max(s, t)) not in edges]
        if not cands:
            raise InputError(f"cannot add an extra transit-stub edge at {names[t]}: no stub "
                             f"node outside its own stubs is left unlinked")
        add(t, rng.choice(cands))


def _extra_stub_stub(count, names, edges, rng, add):
    """``ts.c``: ``count`` edges between random nodes of two different stubs (and, here,
    not already linked)."""
    if count <= 0:
        return
    n = len(names)
    stub_of = [nm.rsplit(".", 1)[0] if nm.startswith("S:") else None for nm in names]
    if len({s for s in stub_of if s is not None}) < 2:
        raise InputError("extra stub-stub edges need at least two stub domains")
    for _ in range(count):
        for _attempt in range(1_000_000):
            u, v = rng.randrange(n), rng.randrange(n)
            if (stub_of[u] is not None and stub_of[v] is not None
                    and stub_of[u] != stub_of[v] and (min(u, v), max(u, v)) not in edges):
                add(u, v)
                break
        else:
            raise InputError("cannot add another extra stub-stub edge: too few free pairs")


# ---------------------------------------------------------------------- front ends

@checked("gtitm")
def generate(params: TSParams = TS100, seed: int = 0, *, quirks: bool = True,
             latencies: Mapping[str, float] | None = None) -> Topology:
    """One transit-stub topology from ``params``, seeded with ``random.Random(seed)``.

    The default is GT-ITM's ``ts100``, Liu et al.'s 100-node topology (Sec. 7.1).
    """
    return transtub(params, random.Random(seed), quirks=quirks, latencies=latencies,
                    seed_label=seed)


@checked("gtitm")
def generate_many(params: TSParams, count: int | None = None, seed: int | None = None, *,
                  quirks: bool = True,
                  latencies: Mapping[str, float] | None = None) -> list[Topology]:
    """``count`` graphs from one random stream, as ``itm`` makes ``<spec>-0 .. <spec>-i``.

    ``count`` and ``seed`` default to the spec's own (``ts <count> [<seed>]``; seed 0 if the
    spec has none).
    """
    _require_params(params)
    count = params.count if count is None else count
    seed = (params.seed or 0) if seed is None else seed
    rng = random.Random(seed)
    return [transtub(params, rng, quirks=quirks, latencies=latencies, seed_label=seed)
            for _ in range(count)]


@checked("gtitm")
def ts_variant(nodes: int, density: str = "sparse") -> TSParams:
    """Transit-stub parameters for ``nodes`` nodes, ``"sparse"`` or ``"dense"``.

    Scaling grows the number of transit nodes (as in Liu et al. Sec. 7): every transit domain keeps
    ``ts100``'s shape (4 transit nodes, 3 stubs of 8 nodes per transit node, 100 nodes per
    domain), and there are ``round(nodes / 100)`` domains (at least 1), so the node count is
    the nearest multiple of 100. The top level uses pure random edges with probability
    ``min(1, 3 / (T - 1))`` (about three neighbour domains each).

    ``sparse`` is ``ts100`` scaled up: about 1.8 links per node (Liu et al.'s "about 200
    bidirectional links" at 100 nodes). ``dense`` makes stubs near-complete (alpha 0.9) and
    adds ``nodes/10`` extra transit-stub and ``nodes/2`` extra stub-stub edges, for about
    4 links per node (Liu et al.'s dense 800-link-tuple network at 100 nodes).
    """
    if density not in ("sparse", "dense"):
        raise InputError(f"density must be 'sparse' or 'dense', not {density!r}")
    if nodes < 1:
        raise InputError(f"need at least 1 node, not {nodes}")
    domains = max(1, round(nodes / 100))
    top_alpha = 1.0 if domains <= 4 else 3.0 / (domains - 1)
    top = GeoParams(domains, 20, 3, round(top_alpha, 3))
    transit = GeoParams(4, 20, 3, 0.6)
    total = domains * 100
    if density == "sparse":
        return TSParams(3, 0, 0, top, transit, GeoParams(8, 10, 3, 0.42))
    return TSParams(3, total // 10, total // 2, top, transit,
                    GeoParams(8, 10, 3, 0.9))
