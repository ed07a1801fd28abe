"""Relaxed garbage collection around the engine's inner loops.

Role: a context manager, :func:`relaxed_gc`, that the drivers (``Network.run``, the Ray
shard's local loop) wrap around their delivery loops. The engine allocates millions of
objects, short-lived or part of the growing node state, and almost none of them in
cycles; CPython's cyclic collector still traverses every container that survives a
collection, so on a large run it spends a third of the time finding nothing. Inside the
block, the objects that existed before it are frozen (``gc.freeze``: never scanned) and
the collector is paused; on leaving, it runs again and the block's objects join the old
generation unscanned, so cycles made inside are collected by a later full collection.
If something else has frozen objects already, the block leaves them frozen.

Measured on the 2-core Xeon of the issue notes, 2026-11-26:

* reachable, 300-node dense transit-stub, absorption lazy, building and running the
  simulation: the collector took 2.5 s of 12.5 s and freed 36 objects; 9.5 s with the
  collector paused in the run;
* the same on 1,000 nodes (``bench/bench_sim.py``'s third row): 162 s with the young
  threshold raised to 100,000 (the previous policy), 161 s with full collections
  suspended as well, 112 s with the collector off for the whole process, 103 s with this
  block; peak memory the same (4.6 GiB) in all four, so the run makes no garbage worth
  collecting;
* earlier, raising the young threshold alone (100 nodes, 400 links, before the
  absorption fast paths): ``set`` 0.88 s -> 0.51 s, ``absorption`` lazy 5.9 s -> 4.2 s.

Deliberately not here: anything that changes results. Collection timing is invisible to
the engine (its state has no finalizers or weak references; the one finalizer nearby,
:mod:`provenance.bdd`'s, only keeps a CUDD manager alive longer), so runs stay
deterministic.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

__all__ = ["relaxed_gc"]

_depth = 0


@contextmanager
def relaxed_gc():
    """Freeze the existing heap and pause the cyclic collector for the block.

    On leaving, the collector is enabled again and the objects made inside join the old
    generation without being scanned (``gc.freeze`` then ``gc.unfreeze``), where a later
    full collection examines them like any other long-lived object: cycles made inside are
    collected then, not lost. Re-entrant: only the outermost block acts. If something else
    has frozen objects already, the block leaves them frozen and only pauses the collector
    (the next young collection then scans what the block made, once).
    """
    global _depth
    if _depth or not gc.isenabled():
        _depth += 1
        try:
            yield
        finally:
            _depth -= 1
        return
    # objects someone else froze (e.g. before forking workers) stay as they were: the
    # block then only pauses the collector, since unfreezing would undo their freeze
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    gc.disable()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if freeze:
            gc.freeze()
            gc.unfreeze()
        gc.enable()
