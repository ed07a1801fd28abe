"""PSN's JSON topology format (any topology; the format of sensor grids).

Role: write and read every field of a :class:`~topologies.graph.Topology` losslessly::

    {"format": "psn-topology", "version": 1, "kind": "sensor-grid", "name": "...",
     "nodes": [{"id": 0, "name": "0", "kind": "sensor", "pos": [5.0, 5.0]}, ...],
     "links": [{"u": 0, "v": 1, "latency": 1, "cls": "LL"}, ...],
     "seeds": [3, 17, ...], "sink": 44, "radius": 20.0, "meta": {...}}

Node entries may also carry ``domain`` and ``stub`` (GT-ITM), link entries ``length`` and
``weight``. Reading checks the shape and raises :class:`~ndlog.errors.InputError` naming the
file (and the line of a JSON syntax error).

Deliberately not here: GT-ITM's ``alt`` format (``topologies.alt``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ndlog.errors import InputError, Span
from ndlog.files import file_path, write_atomic
from ndlog.parser import read_text
from ndlog.text import json_kind

from .graph import (DEFAULT_LATENCIES, PLAIN, SENSOR, STUB, TRANSIT, Link, Node,
                    Topology, require_topology)

#: the kinds of node a topology holds
_NODE_KINDS = (PLAIN, TRANSIT, STUB, SENSOR)

__all__ = ["to_json", "from_json", "write_json", "read_json", "FORMAT"]

FORMAT = "psn-topology"
#: the version of the format :func:`to_json` writes and :func:`from_json` reads
VERSION = 1


def to_json(topo: Topology) -> dict:
    """The JSON-able dict of ``topo``."""
    require_topology(topo, "to_json")
    nodes = []
    for n in topo.nodes:
        d = {"id": n.id, "name": n.name, "kind": n.kind}
        if n.pos is not None:
            d["pos"] = list(n.pos)
        if n.domain is not None:
            d["domain"] = n.domain
        if n.stub is not None:
            d["stub"] = list(n.stub)
        nodes.append(d)
    links = []
    for l in topo.links:
        d = {"u": l.u, "v": l.v, "latency": l.latency, "cls": l.cls}
        if l.length is not None:
            d["length"] = l.length
        if l.weight is not None:
            d["weight"] = l.weight
        links.append(d)
    out = {"format": FORMAT, "version": VERSION, "kind": topo.kind, "name": topo.name,
           "nodes": nodes, "links": links}
    if topo.seeds:
        out["seeds"] = list(topo.seeds)
    if topo.sink is not None:
        out["sink"] = topo.sink
    if topo.radius is not None:
        out["radius"] = topo.radius
    out["meta"] = topo.meta
    return out


def from_json(data: dict, filename: str | None = None) -> Topology:
    """A :class:`Topology` from :func:`to_json`'s dict."""
    where = f"{filename}: " if filename else ""
    if not isinstance(data, dict):
        raise InputError(f"{where}not a PSN topology: the file holds a JSON "
                         f"{json_kind(data)}, a topology is an object "
                         f"{{\"format\": \"{FORMAT}\", \"nodes\": [...], \"links\": [...]}}",
                         hint="write one with psn topology ... --output FILE.json")
    if data.get("format") != FORMAT:
        raise InputError(f"{where}not a PSN topology (expected \"format\": \"{FORMAT}\")")
    if data.get("version", VERSION) != VERSION:
        raise InputError(f"{where}\"version\" {data['version']!r} of the topology format is "
                         f"not one this PSN reads ({VERSION})",
                         hint="write the file again with psn topology ... --output FILE.json")
    try:
        nodes = tuple(_node(d, f'entry {i} of "nodes"')
                      for i, d in enumerate(_entries(data, "nodes", ("id",))))
        links = tuple(_link(d, f'entry {i} of "links"')
                      for i, d in enumerate(_entries(data, "links", ("u", "v", "latency"))))
        kind = _typed(data, "kind", str, "the topology", "graph")
        seeds = _typed(data, "seeds", list, "the topology", [])
        for i, seed in enumerate(seeds):
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise InputError(f'entry {i} of "seeds" is not a node id, but {seed!r:.60}')
        sink = _typed(data, "sink", int, "the topology")
        radius = _number(data, "radius", "the topology")
        if kind == "sensor-grid":
            _sensor_grid(nodes, radius)
        name = _typed(data, "name", str, "the topology", "")
        return Topology(nodes, links, kind=kind, name=name,
                        meta=_typed(data, "meta", dict, "the topology", {}),
                        seeds=tuple(seeds), sink=sink, radius=radius)
    except InputError as exc:
        raise InputError(f"{where}{exc.message}", hint=exc.hint) from None
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{where}malformed topology entry ({type(exc).__name__}: {exc})") \
            from None


#: what each field of an entry may hold (a node id is checked by :func:`_whole`)
_KINDS = {int: "a whole number", str: "a string", list: "a list", dict: "an object"}


def _node(d: dict, what: str) -> Node:
    """The node of the ``"nodes"`` entry ``d`` (``what`` names it in errors)."""
    name = d.get("name", d["id"])
    if isinstance(name, bool) or not isinstance(name, (str, int)):
        raise InputError(f'{what}: field "name" is not a name, but {name!r:.60}')
    kind = _typed(d, "kind", str, what, PLAIN)
    if kind not in _NODE_KINDS:
        raise InputError(f'{what}: field "kind" is {kind!r:.60}, not a kind of node',
                         hint=f"the kinds are {', '.join(_NODE_KINDS)}")
    stub = _typed(d, "stub", list, what)
    if stub is not None and (len(stub) != 3 or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in stub)):
        raise InputError(f'{what}: field "stub" is not three whole numbers, but {stub!r:.60}')
    return Node(_whole(d, "id", what), str(name), kind, _pos(d, what),
                _typed(d, "domain", int, what), None if stub is None else tuple(stub))


def _link(d: dict, what: str) -> Link:
    """The link of the ``"links"`` entry ``d`` (``what`` names it in errors)."""
    cls = _typed(d, "cls", str, what, "LL")
    if cls not in DEFAULT_LATENCIES:
        raise InputError(f'{what}: field "cls" is {cls!r:.60}, not a class of link',
                         hint=f"the classes are {', '.join(DEFAULT_LATENCIES)}")
    return Link(_whole(d, "u", what), _whole(d, "v", what), d["latency"], cls,
                _number(d, "length", what), _number(d, "weight", what))


def _typed(d: dict, field: str, kind: type, what: str, default=None):
    """``d[field]`` once it is of ``kind`` (``default`` when absent or null)."""
    value = d.get(field)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, kind):
        raise InputError(f'{what}: field "{field}" must be {_KINDS[kind]}, not a JSON '
                         f"{json_kind(value)} {value!r:.60}")
    return value


def _number(d: dict, field: str, what: str) -> float | None:
    """``d[field]`` once it is a finite number >= 0 (None when absent or null)."""
    value = d.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0:
        raise InputError(f'{what}: field "{field}" must be a finite number >= 0, not '
                         f"{value!r:.60}")
    return value


def _sensor_grid(nodes: tuple, radius) -> None:
    """Refuse a sensor grid that lacks what its facts are made of: every node's position
    and the radius."""
    if radius is None:
        raise InputError('a sensor grid needs its "radius"',
                         hint="write one with psn topology sensor-grid --output FILE.json")
    for node in nodes:
        if node.pos is None:
            raise InputError(f'node {node.id} of a sensor grid has no "pos"',
                             hint="write one with psn topology sensor-grid --output FILE.json")


def _entries(data: dict, key: str, required: tuple[str, ...]) -> list[dict]:
    """``data[key]``, a list of objects each holding the ``required`` fields.

    Raises
    ------
    InputError
        Naming the list, the entry's index and the missing field.
    """
    if key not in data:
        raise InputError(f'the topology has no "{key}" list',
                         hint="write one with psn topology ... --output FILE.json")
    entries = data[key]
    if not isinstance(entries, list):
        raise InputError(f'"{key}" must be a list, not a JSON {json_kind(entries)}')
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InputError(f'entry {i} of "{key}" must be an object, not a JSON '
                             f"{json_kind(entry)}")
        missing = [f for f in required if f not in entry]
        if missing:
            fields = ", ".join(f'"{f}"' for f in required)
            raise InputError(f'entry {i} of "{key}" has no "{missing[0]}" field',
                             hint=f'each entry of "{key}" needs {fields}')
    return entries


def _whole(entry: dict, field: str, what: str) -> int:
    """``entry[field]`` as a node id, or an :class:`InputError` naming ``what`` (the
    entry) and the field."""
    value = entry[field]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f'{what}: field "{field}" is not a node id, but {value!r}')
    return value


def _pos(entry: dict, what: str) -> tuple | None:
    """``entry["pos"]`` as an ``(x, y)`` pair of finite numbers (None if absent), or an
    :class:`InputError` naming ``what`` (the entry)."""
    value = entry.get("pos")
    if value is None:
        return None
    if isinstance(value, list) and len(value) == 2 and all(
            isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c)
            for c in value):
        return tuple(value)
    raise InputError(f'{what}: field "pos" is not a position, but {value!r}',
                     hint='a position is a list of two numbers, "pos": [x, y]')



def write_json(topo: Topology, path: str | Path) -> None:
    """Write ``topo`` as JSON (one node or link per line, for diffs)."""
    require_topology(topo, "write_json")
    data = to_json(topo)
    body = ",\n".join(
        [f'  "{k}": {json.dumps(v)}' for k, v in data.items() if k not in ("nodes", "links")]
        + ['  "nodes": [\n' + ",\n".join("    " + json.dumps(x) for x in data["nodes"])
           + "\n  ]",
           '  "links": [\n' + ",\n".join("    " + json.dumps(x) for x in data["links"])
           + "\n  ]"])
    write_atomic(path, "{\n" + body + "\n}\n", "topology file")


def read_json(path: str | Path) -> Topology:
    """Read a topology written by :func:`write_json`."""
    path = file_path(path, "topology file")
    text = read_text(path, "topology file")
    if not text.strip():
        raise InputError(f"{path}: the JSON topology file is empty",
                         hint="write one with psn topology ... --output FILE.json")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"bad JSON: {exc.msg}", Span(exc.lineno, exc.colno, str(path)),
                         text) from None
    return from_json(data, str(path))
