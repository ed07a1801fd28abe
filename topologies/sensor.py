"""Sensor grids for the region query (Liu et al. Sec. 7.1, workload 2, and Query 3).

Role: place ``N`` sensors on a ``W x W`` metre area (a regular grid by default, seeded
uniform random placement as an option), link every pair within ``k`` metres (the ``nbr``
relation, both directions), choose the seed sensors (each seed group starts as a single
device, and its region id is the seed's own node id) and the sink node that collects the
global answer. The facts come from :meth:`topologies.graph.Topology.facts`.

Deliberately not here: triggering sensors (a workload of the simulator) and the query.
"""

from __future__ import annotations

import math
import random

from ndlog.errors import InputError

from .checks import checked
from .graph import SENSOR, Link, Node, Topology

__all__ = ["sensor_grid", "grid_positions"]


def grid_positions(count: int, size: float) -> list[tuple[float, float]]:
    """``count`` positions on a regular grid over a ``size x size`` square.

    ``cols = ceil(sqrt(count))`` columns and ``rows = ceil(count / cols)`` rows, each
    sensor at the centre of its cell (100 sensors on 100 m: a 10 x 10 grid, 10 m apart,
    from 5 m to 95 m), filled row by row from ``(x, y)`` near the origin.
    """
    cols = math.ceil(math.sqrt(count))
    rows = math.ceil(count / cols) if cols else 0
    dx, dy = size / max(cols, 1), size / max(rows, 1)
    return [(round((c + 0.5) * dx, 6), round((r + 0.5) * dy, 6))
            for i in range(count) for r, c in [divmod(i, cols)]]


@checked("sensor-grid")
def sensor_grid(sensors: int = 100, size: float = 100.0, radius: float = 20.0,
                seeds: int = 5, seed: int = 0, *, placement: str = "grid",
                sink: int | None = None, latency: float = 1,
                connected: bool = True) -> Topology:
    """A sensor field for the region query.

    Parameters
    ----------
    sensors:
        Number of sensors ``N`` (node ids ``0..N-1``).
    size:
        Side ``W`` of the square area, metres.
    radius:
        Neighbour radius ``k``: ``nbr(@X, Y)`` holds when X and Y are at most ``k`` metres
        apart (Euclidean, inclusive).
    seeds:
        Number of seed groups; each starts as one sensor, chosen at random without
        replacement, and names its region after itself (``seed(@X, X)``).
    seed:
        Seed of the ``random.Random`` that draws the seeds and (``placement="random"``) the
        positions.
    placement:
        ``"grid"`` (regular grid, :func:`grid_positions`) or ``"random"`` (uniform, rounded
        to centimetres).
    sink:
        The sink node ``K`` of ``sink(@R, K)``; default: the sensor nearest the centre of the
        area (lowest id on ties), the natural place for a base station.
    latency:
        Latency (ms) of every radio link (class ``LL``).
    connected:
        With random placement, redraw positions (up to 1,000 times) until the neighbour
        graph is connected, so that every region can reach the sink.

    Returns
    -------
    Topology
        ``kind="sensor-grid"``, links = neighbour pairs, ``seeds``, ``sink``, ``radius``.
    """
    if sensors < 1:
        raise InputError(f"need at least one sensor, not {sensors}")
    if size <= 0 or radius <= 0:
        raise InputError(f"area size and radius must be positive (got {size}, {radius})")
    if not 0 <= seeds <= sensors:
        raise InputError(f"cannot pick {seeds} seeds among {sensors} sensors")
    if placement not in ("grid", "random"):
        raise InputError(f"placement must be 'grid' or 'random', not {placement!r}")
    if sink is not None and not 0 <= sink < sensors:
        raise InputError(f"sink {sink} is not a sensor (0..{sensors - 1})")
    rng = random.Random(seed)
    for _ in range(1000):
        if placement == "grid":
            pos = grid_positions(sensors, size)
        else:
            pos = [(round(rng.uniform(0, size), 2), round(rng.uniform(0, size), 2))
                   for _ in range(sensors)]
        nodes = tuple(Node(i, str(i), SENSOR, p) for i, p in enumerate(pos))
        links = tuple(Link(i, j, latency, "LL")
                      for i in range(sensors) for j in range(i + 1, sensors)
                      if math.dist(pos[i], pos[j]) <= radius)
        topo = Topology(nodes, links, kind="sensor-grid")
        if placement == "grid" or not connected or topo.is_connected():
            break
    else:
        raise InputError(f"no connected random placement of {sensors} sensors on "
                         f"{size:g} m with radius {radius:g} m in 1000 tries")
    if sink is None:
        c = size / 2
        sink = min(range(sensors), key=lambda i: (math.dist(pos[i], (c, c)), i))
    chosen = tuple(sorted(rng.sample(range(sensors), seeds)))
    meta = {"generator": "sensor_grid", "sensors": sensors, "size": size,
            "radius": radius, "placement": placement, "seed": seed}
    return Topology(nodes, links, kind="sensor-grid",
                    name=f"sensor-grid({sensors},{size:g},{radius:g},{seeds},{seed})",
                    meta=meta, seeds=chosen, sink=sink, radius=radius)
