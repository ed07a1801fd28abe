"""The PSN engine: pipelined semi-naive evaluation with pluggable annotations.

Role: Nigam et al. 2012 (Algorithm 1, Fig. 2-3) as a library. :class:`Node` holds one node's
state and queue and runs pick / fire / commit; :func:`prepare` localizes a program and splits
head aggregates into contribution rules plus an incremental operator; :class:`Ledger` keeps
the live base insertions and :class:`Injector` turns bursts into updates; :class:`Host` is
the one loop that drives nodes over a :class:`engine.transport.Transport` (in memory, the
simulator, a Ray worker); :class:`RunOptions` holds every setting with its default;
:class:`Network` is the public API of an in-process run::

    net = Network(program, {"link": links}, delivery="random", seed=1)
    net.run()
    net.delete("link", ("a", "b")).run()
    net.relations()["reachable"], net.metrics["bytes_sent"]

Deliberately not here: annotation semantics (``provenance``), delivery order and traffic
(``engine.transport``), the wire format (``engine.wire``), simulators and Ray. The node and the
compiler import no transport; only :class:`Network` uses the in-memory one as its default.
"""

from __future__ import annotations

from .host import Host
from .ledger import Injector, Ledger
from .network import Network, NotConvergedError, parse_update
from .node import Node, PickStage, SendStage, format_fact
from .options import RunOptions
from .placement import Placement
from .program import CENTRAL, EngineProgram, prepare, split_aggregates

__all__ = ["Network", "NotConvergedError", "Node", "Host", "Ledger", "Injector", "RunOptions", "Placement",
           "prepare", "split_aggregates", "EngineProgram", "CENTRAL", "PickStage",
           "SendStage", "parse_update", "format_fact"]
