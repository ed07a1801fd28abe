"""Network topologies for PSN's experiments (Liu et al. Sec. 7; docs/topologies.md).

Role: the :class:`Topology` value and everything that makes one: a port of GT-ITM's
transit-stub generator (``gtitm``), GT-ITM's ``alt`` file format (``alt``), sensor grids for
the region query (``sensor``), ring/line/grid/random graphs for tests (``simple``), and a
JSON format for any topology (``jsonfmt``). :func:`make` builds a topology by name and
:func:`load` reads one from a file, for ``psn run --topology NAME|FILE``.

Deliberately not here: simulation (``sim``), evaluation, and any third-party graph library.
"""

from __future__ import annotations

import math
from pathlib import Path

from ndlog.errors import InputError
from ndlog.files import file_path
from ndlog.parser import read_text
from ndlog.text import format_bytes

from .alt import format_alt, parse_alt, read_alt, write_alt
from .checks import check_option, check_options
from .graph import DEFAULT_LATENCIES, Link, Node, Topology, link_class, require_topology
from .gtitm import (TS100, GeoParams, TSParams, format_spec, generate, generate_many,
                    parse_spec, read_spec, ts_variant)
from .jsonfmt import from_json, read_json, to_json, write_json
from .presets import LIU_PRESETS, liu_params, liu_topology
from .sensor import sensor_grid
from .simple import grid, line, random_graph, ring

__all__ = [
    "Topology", "Node", "Link", "DEFAULT_LATENCIES", "link_class",
    "TSParams", "GeoParams", "TS100", "generate", "generate_many", "ts_variant",
    "parse_spec", "format_spec", "read_spec",
    "read_alt", "parse_alt", "write_alt", "format_alt",
    "read_json", "write_json", "to_json", "from_json",
    "sensor_grid", "ring", "line", "grid", "random_graph",
    "make", "names_file", "load", "save", "NAMES", "options_of", "check_options",
    "estimate_bytes", "check_size",
    "BYTES_PER_ELEMENT", "LIU_PRESETS", "liu_params", "liu_topology",
]

#: names :func:`make` accepts
NAMES = ("ts100", "gtitm", "dense", "sparse", "liu100", "liu-dense", "liu-sparse",
         "sensor-grid", "ring", "line", "grid", "random")


def _parameters(fn, *drop: str) -> tuple[str, ...]:
    """The keyword parameters of ``fn`` but ``drop``, in their order."""
    import inspect
    return tuple(p for p in inspect.signature(fn).parameters if p not in drop)


def options_of(name: str) -> tuple[str, ...]:
    """The options :func:`make` takes for the topology ``name`` (its generator's
    parameters but the seed), e.g. ``("n", "latency")`` for ``ring``.

    Raises
    ------
    InputError
        For an unknown name, or one that is not a string.
    """
    if not isinstance(name, str):
        raise InputError(f"a topology is named by a string, got {type(name).__name__} "
                         f"{name!r:.80}", hint=f"one of {', '.join(NAMES)}")
    if name in ("ts100", "gtitm"):
        return ("params", "spec") + _parameters(generate, "params", "seed")
    if name in ("dense", "sparse"):
        return ("nodes",) + _parameters(generate, "params", "seed")
    if name in LIU_PRESETS:
        return _parameters(liu_topology, "name", "seed")
    builders = {"sensor-grid": sensor_grid, "random": random_graph, "ring": ring,
                "line": line, "grid": grid}
    if name in builders:
        return _parameters(builders[name], "seed")
    raise InputError(f"unknown topology {name!r}", hint=f"one of {', '.join(NAMES)}, "
                     f"or a .alt/.json file")


#: resident bytes a built topology takes per node and per link (measured: about 300 for
#: line(200000) and grid(300, 300); rounded up for the lists a generator builds on the way)
BYTES_PER_ELEMENT = 400

#: resident bytes per candidate pair that ``random`` with ``m`` lists before it samples
_BYTES_PER_PAIR = 80


def estimate_bytes(name: str, **options) -> int | None:
    """About how many bytes building the topology ``name`` with ``options`` takes, from
    its node and link counts, before it is built; None when the options are not numbers
    (the generator then refuses them)."""
    def num(key, default):
        v = options.get(key, default)
        ok = (isinstance(v, int) and not isinstance(v, bool)
              or isinstance(v, float) and math.isfinite(v))
        return v if ok else None     # not a number the generator takes: it refuses it
    extra = 0
    if name in ("ring", "line"):
        n = num("n", 10)
        if n is None:
            return None
        nodes = links = n
    elif name == "grid":
        rows, cols = num("rows", 5), num("cols", 5)
        if rows is None or cols is None:
            return None
        nodes, links = rows * cols, 2 * rows * cols
    elif name == "random":
        n, m, p = num("n", 20), num("m", None), num("p", None)
        if n is None:
            return None
        pairs = n * (n - 1) // 2
        nodes, links = n, (m if m is not None else pairs * min(max(p or 0, 0), 1))
        if m is not None:
            extra = pairs * _BYTES_PER_PAIR
    elif name == "sensor-grid":
        nodes = num("sensors", 100)
        if nodes is None:
            return None
        links = 4 * nodes
    elif name in ("dense", "sparse") or name in LIU_PRESETS:
        n = num("nodes", 100)
        if n is None:
            return None
        nodes = 100 * max(1, (n + 50) // 100)      # in ints: a huge count is no float
        links = 5 * nodes
    elif name in ("ts100", "gtitm"):
        params = options.get("params")
        if params is None and isinstance(options.get("spec"), (str, Path)):
            params = read_spec(options["spec"])
        if params is None:
            params = TS100
        if not isinstance(params, TSParams):
            return None                             # the generator refuses it
        params.check()                              # its counts are what is estimated
        count = num("count", 1) or 1                # graphs built at once (psn topology)
        nodes, links = params.total_nodes * count, ts_links(params) * count
    else:
        return None
    return int((max(nodes, 0) + max(links, 0)) * BYTES_PER_ELEMENT + extra)


def ts_links(params: TSParams) -> float:
    """About how many links a transit-stub graph of ``params`` has: each domain's pairs
    of nodes times the chance of an edge between them (``alpha``, or ``beta`` where edge
    method 6 takes it for distant pairs), at the mean domain sizes, plus one link from each
    stub to its transit node and the extra edges. The top level of a few thousand transit
    domains alone is millions of links (its default ``alpha`` is 1: a complete graph)."""
    def pairs(geo: GeoParams) -> float:
        chance = max(geo.alpha, min(geo.beta, 1.0)) if geo.method == 6 else geo.alpha
        return chance * geo.n * (geo.n - 1) / 2
    domains = params.top.n
    transit_nodes = domains * params.transit.n
    stubs = transit_nodes * params.stubs_per_transit
    return (pairs(params.top) + domains * pairs(params.transit) + stubs * pairs(params.stub)
            + stubs + params.extra_ts + params.extra_ss)


def check_size(name: str, limit: int | None, *,
               hint: str = "make it smaller, or raise the limit (--max-memory SIZE)",
               **options) -> None:
    """Refuse to build the topology ``name`` when :func:`estimate_bytes` is over
    ``limit`` bytes (None or 0: no limit); ``hint`` is the fix the error names.

    Raises
    ------
    InputError
        Naming the size, the estimate and the limit, with the fix; or for a ``limit`` that
        is not a whole number of bytes or None.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                              or limit < 0):
        raise InputError(f"the memory limit is a whole number of bytes >= 0 or None, got "
                         f"{limit!r:.80}")
    need = estimate_bytes(name, **options)
    if not limit or need is None or need <= limit:
        return
    shown = [f"{k}={_short(v)}" for k, v in options.items() if k != "params"]
    params = options.get("params")
    if params is None and isinstance(options.get("spec"), (str, Path)):
        params = read_spec(options["spec"])       # read once already: it is readable
    if isinstance(params, TSParams):
        domains = params.top.n
        shown.insert(0, f"{params.total_nodes:,} nodes in {domains:,} transit "
                        f"domain{'s' if domains != 1 else ''}")
    size = ", ".join(shown) or "its defaults"
    raise InputError(f"topology {name} with {size} would take about {format_bytes(need)} "
                     f"to build, over the memory limit of {format_bytes(limit)}",
                     hint=hint)


def _short(v) -> str:
    text = str(v)
    if not isinstance(v, int) or len(text) <= 24:
        return text
    return f"{text[:12]}... ({len(text)} digits)"


def make(name: str = "ts100", seed: int = 0, **options) -> Topology:
    """Build a topology by name.

    Parameters
    ----------
    name:
        ``ts100``/``gtitm`` (GT-ITM's ``ts100``, 100 nodes; ``params=TSParams`` or
        ``spec=PATH`` to change it), ``dense``/``sparse`` (``nodes=N``, default 100; see
        :func:`~topologies.gtitm.ts_variant`), ``liu100``/``liu-dense``/``liu-sparse``
        (Liu et al.'s link counts, ``nodes=N`` for the last two; see
        :mod:`topologies.presets`), ``sensor-grid`` (options of
        :func:`~topologies.sensor.sensor_grid`), ``ring``/``line`` (``n``), ``grid``
        (``rows``, ``cols``) or ``random`` (``n`` and ``m`` or ``p``, ``connected``).
    seed:
        Seed of the generator's ``random.Random``.
    options:
        Passed on; GT-ITM names also take ``latencies`` (per link class) and ``quirks``.
        :func:`options_of` lists them per name.

    Raises
    ------
    InputError
        For an unknown name, an option the name does not take (naming it and listing
        the ones it takes), or a value of the wrong kind or out of range
        (:func:`~topologies.checks.check_options`: ``n=3.5``, ``nodes=nan``,
        ``quirks=maybe``).
    """
    valid = options_of(name)
    unknown = [key for key in options if key not in valid]
    if unknown:
        raise InputError(f"topology {name!r} has no option {unknown[0]!r}",
                         hint=f"the options of {name} are {', '.join(valid)}")
    options = check_options(name, options)
    seed = check_option(name, "seed", seed)
    if name in ("ts100", "gtitm"):
        params = options.pop("params", None)
        spec = options.pop("spec", None)
        if params is None:
            params = read_spec(spec) if spec else TS100
        return generate(params, seed, **options)
    if name in ("dense", "sparse"):
        nodes = options.pop("nodes", 100)
        return generate(ts_variant(nodes, name), seed, **options)
    if name in LIU_PRESETS:
        return liu_topology(name, seed, **options)
    if name == "sensor-grid":
        return sensor_grid(seed=seed, **options)
    if name == "random":
        return random_graph(seed=seed, **options)
    builders = {"ring": ring, "line": line, "grid": grid}
    if name in builders:
        return builders[name](**options)
    raise InputError(f"unknown topology {name!r}", hint=f"one of {', '.join(NAMES)}, "
                     f"or a .alt/.json file")


def names_file(text: str | Path) -> bool:
    """Whether ``text`` (a ``--topology`` value) names a topology file rather than a
    generator: an existing path, or one ending in ``.alt`` or ``.json`` (which
    :func:`load` then reports missing)."""
    try:
        if Path(text).exists():
            return True
    except OSError:             # a name too long for the file system names no file
        pass
    return Path(text).suffix.lower() in (".alt", ".json")


def load(path: str | Path, **options) -> Topology:
    """Read a topology file: PSN JSON (a ``.json`` file, or one that starts with ``{`` or
    ``[``) or GT-ITM ``alt`` (anything else; it starts with ``GRAPH``).

    ``latencies`` (per link class, as for the generators) overrides the latencies of
    either format.

    Raises
    ------
    InputError
        For a file that cannot be read or parsed, or an option other than ``latencies``.
    """
    unknown = [key for key in options if key != "latencies"]
    if unknown:
        raise InputError(f"topologies.load has no option {unknown[0]!r}",
                         hint="its one option is latencies")
    path = file_path(path, "topology file")
    head = read_text(path, "topology file")[:64].lstrip()
    if path.suffix.lower() == ".json" or head.startswith(("{", "[")):
        topo = read_json(path)
        latencies = options.get("latencies")
        return topo if latencies is None else topo.with_latencies(latencies)
    return read_alt(path, **options)


def save(topo: Topology, path: str | Path) -> None:
    """Write ``topo``: ``alt`` for ``.alt`` files, JSON otherwise.

    Raises
    ------
    InputError
        For a sensor grid (seeds, sink, radius) to an ``.alt`` file: the format cannot
        hold them, and the grid read back would be a plain graph.
    """
    path = file_path(path, "topology file")
    require_topology(topo, "save")
    if path.suffix.lower() == ".alt":
        if topo.seeds or topo.sink is not None or topo.radius is not None:
            raise InputError(f"cannot write the {topo.kind} to {path}: the alt format has "
                             f"no place for its seeds, sink and radius",
                             hint=f"write it as JSON: {Path(path).with_suffix('.json')}")
        write_alt(topo, path)
    else:
        write_json(topo, path)
