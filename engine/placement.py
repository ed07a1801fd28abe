"""Placement of nodes on workers: the one map every transport uses.

Role: decide which worker (a process, a Ray actor, a simulated query processor) hosts each
node. Nodes and workers are distinct: Liu et al. (2009, Sec. 7.3) ran the 100-node topology
on 12-24 query processors, each hosting many nodes; a message between two nodes of the same
worker costs no network traffic. Three policies: every node its own worker (the default),
``N`` workers by a stable hash of the node, or an explicit map (the rest by hash).

The in-memory transport, the simulator and the Ray runtime all place nodes with
:class:`Placement`, so the same options put the same node on the same worker everywhere.

Deliberately not here: anything about time or messages (the transports). The hash is CRC-32
of the node's ``repr``, never Python's ``hash`` (salted per process for strings), so a
placement is the same in every process and every run; equal nodes hash alike (``2.0`` as
``2``), since every process keeps one entry for both.
"""

from __future__ import annotations

import zlib
from typing import Hashable, Iterable, Mapping

from ndlog.errors import InputError
from ndlog.parser import read_text

__all__ = ["Placement", "stable_hash", "parse_placement"]


def stable_hash(node: Hashable) -> int:
    """A process-independent 32-bit hash of a node value (CRC-32 of its ``repr``), equal
    for equal values: a float equal to an integer is hashed as that integer, in lists
    too (``2.0`` and ``2`` are one node, as ``1 == 1.0`` in NDlog)."""
    return zlib.crc32(repr(_canonical(node)).encode())


def _canonical(value):
    """``value`` with every float that equals an integer written as that integer."""
    if type(value) is float and value.is_integer():
        return int(value)
    if type(value) is tuple:
        return tuple(_canonical(v) for v in value)
    return value


class Placement:
    """Maps nodes to workers.

    Parameters
    ----------
    workers:
        ``None`` (each node its own worker, named by the node itself) or the number of
        workers ``N``; nodes then go to worker ``stable_hash(node) % N`` unless ``mapping``
        names their worker.
    mapping:
        Explicit ``node -> worker`` assignments. With ``workers=None`` and a mapping, the
        workers are the names it gives and nodes missing from it are an error; with
        ``workers=N`` every mapped worker is a number ``0..N-1`` (else an InputError, as on
        Ray) and unmapped nodes are placed by hash.

    Examples
    --------
    >>> p = Placement(4)
    >>> p.worker_of(7) == stable_hash(7) % 4
    True
    >>> Placement(mapping={1: "a", 2: "a"}).same_worker(1, 2)
    True
    >>> Placement().worker_of("n3")
    'n3'
    """

    def __init__(self, workers: int | None = None, mapping: Mapping | None = None,
                 source: str | None = None):
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                    or workers < 1):
            raise InputError(f"the number of workers must be a positive integer, "
                             f"not {workers!r}")
        if mapping is not None and not isinstance(mapping, Mapping):
            raise InputError(f"a placement map is a mapping node -> worker, got "
                             f"{type(mapping).__name__}")
        self.workers = workers
        self.mapping = dict(mapping or {})
        self.source = source            # the map's file, for messages
        self._cache: dict = {}
        if workers is not None:
            for node, w in self.mapping.items():
                if isinstance(w, bool) or not isinstance(w, int) or not 0 <= w < workers:
                    raise InputError(f"node {node!r} is placed on worker {w!r}, but "
                                     f"{workers} workers are numbered 0..{workers - 1}",
                                     hint="map nodes to worker numbers below --workers, "
                                          "or leave --workers out to name workers freely")

    @property
    def kind(self) -> str:
        """``"node"`` (a worker per node), ``"hash"`` (``workers`` workers, nodes placed by
        hash unless mapped) or ``"map"`` (the workers the mapping names)."""
        if self.workers is not None:
            return "hash"
        return "map" if self.mapping else "node"

    def worker_of(self, node: Hashable) -> Hashable:
        """The worker hosting ``node``."""
        hit = self._cache.get(node, _MISSING)
        if hit is not _MISSING:
            return hit
        if node in self.mapping:
            w = self.mapping[node]
        elif self.workers is not None:
            w = stable_hash(node) % self.workers
        elif self.mapping:
            where = f" {self.source}" if self.source else ""
            raise InputError(f"node {node!r} is not in the placement map{where}",
                             hint="map every node, or give a number of workers to place "
                             "the rest by hash")
        else:
            w = node
        self._cache[node] = w
        return w

    worker = worker_of
    __call__ = worker_of

    def __getstate__(self):
        return {"workers": self.workers, "mapping": self.mapping, "source": self.source}

    def __setstate__(self, state):
        self.workers, self.mapping, self._cache = state["workers"], state["mapping"], {}
        self.source = state.get("source")

    @classmethod
    def single(cls) -> "Placement":
        """Every node on worker 0 (one process)."""
        return cls(1)

    @classmethod
    def round_robin(cls, nodes: Iterable[Hashable], workers: int) -> "Placement":
        """Nodes (in the given order) dealt to ``workers`` workers."""
        return cls(workers, {n: i % workers for i, n in enumerate(nodes)})

    def same_worker(self, a: Hashable, b: Hashable) -> bool:
        """True if ``a`` and ``b`` are hosted by one worker (their messages are free)."""
        return a == b or self.worker_of(a) == self.worker_of(b)

    def groups(self, nodes: Iterable[Hashable]) -> dict:
        """``worker -> sorted list of nodes`` for ``nodes``."""
        out: dict = {}
        for n in nodes:
            out.setdefault(self.worker_of(n), []).append(n)
        return {w: sorted(ns, key=repr) for w, ns in out.items()}

    def describe(self) -> str:
        if self.kind == "node":
            return "one worker per node"
        if self.kind == "hash":
            extra = f" ({len(self.mapping)} mapped explicitly)" if self.mapping else ""
            return f"{self.workers} workers by hash{extra}"
        return f"{len(set(self.mapping.values()))} workers by map"


_MISSING = object()


def parse_placement(workers: int | str | None, map_file: str | None = None) -> Placement:
    """A :class:`Placement` from CLI-style options.

    ``workers`` is ``None``/``0``/``"node"`` (one per node) or a positive integer;
    ``map_file`` is a text file of ``node worker`` pairs (one per line, ``#`` comments;
    integer-looking names become ints). A node placed on two lines, or a map that places
    none, is an :class:`~ndlog.errors.InputError` naming the file (and both lines).
    """
    if workers in (None, 0, "node", "nodes"):
        n = None
    else:
        try:
            n = int(workers)
        except (TypeError, ValueError):
            raise InputError(f"workers (--workers) takes a number, "
                             f"not {workers!r}") from None
        if n < 1:
            raise InputError(f"workers (--workers) must be at least 1, not {n}")
    mapping = {}
    lines_of = {}                   # node -> the line that placed it, for a repeat
    if map_file:
        lines = read_text(map_file, "placement map").splitlines()
        for i, line in enumerate(lines, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.replace(",", " ").split()
            if len(parts) != 2:
                raise InputError(f"{map_file}:{i}: expected 'node worker', got {line!r}")
            node, worker = (_atom(p) for p in parts)
            if node in mapping:
                raise InputError(f"{map_file}:{i}: node {node!r} is placed twice (line "
                                 f"{lines_of[node]}: worker {mapping[node]!r}, line {i}: "
                                 f"worker {worker!r})",
                                 hint="give each node one line of the placement map")
            mapping[node] = worker
            lines_of[node] = i
        if not mapping:
            raise InputError(f"placement map {map_file} places no node",
                             hint="one 'node worker' pair per line, e.g. '1 w0'")
    return Placement(n, mapping, source=map_file or None)


def _atom(text: str):
    try:
        return int(text)
    except ValueError:
        return text
