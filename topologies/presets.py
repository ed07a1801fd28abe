"""Transit-stub presets sized as Liu et al. 2009 describe their networks (Sec. 7.1, 7.3).

Role: GT-ITM parameters whose graphs have the link counts the paper states, for the
experiments (``psn experiment``, docs/experiments.md):

- ``liu100``: the default network, "100 nodes ... approximately 200 bidirectional links
  (hence 400 link tuples)" (Sec. 7.1): GT-ITM's ``ts100`` shape (1 transit domain of 4
  nodes, 3 stubs per transit node, 8 nodes per stub) with the stub edge probability raised
  from 0.42 to 0.5;
- ``liu-dense``: "each node in the dense topology has four links (as in our default
  setting)" (Sec. 7.3): ``liu100``'s shape per transit domain, grown by adding transit
  domains (about 2 undirected links per node, i.e. 4 link tuples per node);
- ``liu-sparse``: "half the number of links for a given network size" (Sec. 7.3): the same
  shape with stub edge probability 0.1, so stubs are near-trees (about 1.1 undirected links
  per node; a connected graph cannot have fewer than ``nodes - 1``).

How the edge probabilities were chosen (``topologies.generate(params, seed,
quirks=False)``, seeds 0..19, 100 nodes): stub alpha 0.42 (``ts100``) gives 156-192
undirected links, mean 173.9; 0.5 gives 188-220, mean 200.9 (the paper's "about 200");
0.1 gives 102-117, mean 108.8 (lower alphas make connected stubs too rare: 0.05 fails
GT-ITM's retry loop). More domains add two inter-domain links per top-level edge (the top
level is pure random with probability ``min(1, 3 / (T - 1))``, as in
:func:`~topologies.gtitm.ts_variant`). Every transit domain is built with the transit
parameters (``quirks=False``: GT-ITM would build domains after the first with the stub
parameters). Measured link counts per size are in docs/experiments.md.

Deliberately not here: the generator itself (:mod:`topologies.gtitm`), which these presets
only parameterize; GT-ITM's own ``ts100``, ``dense`` and ``sparse`` are unchanged.
"""

from __future__ import annotations

from typing import Mapping

from ndlog.errors import InputError

from .checks import checked
from .graph import Topology
from .gtitm import GeoParams, TSParams, generate

__all__ = ["LIU_PRESETS", "LIU_STUB_ALPHA", "liu_params", "liu_topology"]

#: stub-domain edge probability per density (see the module docstring for the measurement)
LIU_STUB_ALPHA = {"dense": 0.5, "sparse": 0.1}

#: preset names :func:`liu_topology` accepts
LIU_PRESETS = ("liu100", "liu-dense", "liu-sparse")


@checked("liu")
def liu_params(nodes: int = 100, density: str = "dense") -> TSParams:
    """GT-ITM transit-stub parameters for a Liu et al. network of about ``nodes`` nodes.

    Parameters
    ----------
    nodes:
        Rounded to a multiple of 100 (at least 100): one transit domain of ``ts100``'s
        shape per 100 nodes (Liu Sec. 7.3: "increasing the average number of transit
        nodes").
    density:
        ``"dense"`` (about 2 undirected links per node) or ``"sparse"`` (about 1.1).

    Raises
    ------
    InputError
        For an unknown density, or ``nodes`` that is not a whole number >= 1
        (:func:`~topologies.checks.checked`).
    """
    if not isinstance(density, str) or density not in LIU_STUB_ALPHA:
        raise InputError(f"density must be 'dense' or 'sparse', not {density!r:.80}")
    if nodes < 1:
        raise InputError(f"need at least 1 node, not {nodes}")
    domains = max(1, round(nodes / 100))
    top_alpha = 1.0 if domains <= 4 else round(3.0 / (domains - 1), 3)
    return TSParams(3, 0, 0, GeoParams(domains, 20, 3, top_alpha), GeoParams(4, 20, 3, 0.6),
                    GeoParams(8, 10, 3, LIU_STUB_ALPHA[density]))


@checked("liu")
def liu_topology(name: str, seed: int = 0, *, nodes: int = 100,
                 latencies: Mapping[str, float] | None = None) -> Topology:
    """The preset ``name`` (``liu100``, ``liu-dense``, ``liu-sparse``), seeded.

    ``nodes`` applies to ``liu-dense`` and ``liu-sparse`` (``liu100`` is ``liu-dense`` at
    100 nodes); ``latencies`` overrides the per-class latencies (Liu Sec. 7.1: 50, 10 and
    2 ms).
    """
    if name == "liu100":
        if nodes != 100:
            raise InputError("liu100 has 100 nodes; use liu-dense with nodes=N")
        density = "dense"
    elif name in ("liu-dense", "liu-sparse"):
        density = name.split("-", 1)[1]
    else:
        raise InputError(f"unknown Liu et al. preset {name!r}; one of {', '.join(LIU_PRESETS)}")
    topo = generate(liu_params(nodes, density), seed, quirks=False, latencies=latencies)
    return topo
