"""Seeded random graphs for tests (a connected-ish directed graph with positive costs).

Role: test-data generators shared by the test modules. Deliberately not here: the
topologies a user runs experiments on (that is the ``topologies`` package).
"""

from __future__ import annotations

import random

__all__ = ["random_links", "symmetric_links"]


def random_links(n: int, m: int, rng: random.Random, max_cost: int = 10,
                 nodes=None) -> list[tuple]:
    """``m`` distinct directed links ``(src, dst, cost)`` among ``n`` nodes, no self loops."""
    names = list(nodes) if nodes is not None else list(range(n))
    pairs = set()
    limit = n * (n - 1)
    m = min(m, limit)
    while len(pairs) < m:
        a, b = rng.sample(names, 2)
        pairs.add((a, b))
    return [(a, b, rng.randint(1, max_cost)) for a, b in sorted(pairs)]


def symmetric_links(n: int, m_undirected: int, rng: random.Random,
                    max_cost: int = 10) -> list[tuple]:
    """Links in both directions with the same cost, as network topologies give them."""
    pairs = set()
    m = min(m_undirected, n * (n - 1) // 2)
    while len(pairs) < m:
        a, b = sorted(rng.sample(range(n), 2))
        pairs.add((a, b))
    out = []
    for a, b in sorted(pairs):
        c = rng.randint(1, max_cost)
        out += [(a, b, c), (b, a, c)]
    return out
