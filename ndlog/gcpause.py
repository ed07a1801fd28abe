"""Relaxed garbage collection around the engine's inner loops and the reference's fixpoint.

Role: a context manager, :func:`relaxed_gc`, that the one hosting loop
(:meth:`engine.Host.run`, used in memory, in the simulator and by each Ray worker) wraps
around its delivery loop, a Ray worker around its whole epoch, and the centralized
reference (:func:`ndlog.reference.evaluate`) around its fixpoint. It lives with the
language so that the reference can use it too. The engine allocates millions of
objects, short-lived or part of the growing node state, and almost none of them in
cycles; CPython's cyclic collector still traverses every container that survives a
collection, so on a large run it spends much of the time finding nothing. Inside the
block, the objects that existed before it are frozen (``gc.freeze``: never scanned) and
the collector is paused; on leaving, it runs again and the block's objects join the old
generation unscanned. A cycle made inside is then freed only by a full collection, which
CPython seldom runs afterwards (every block resets the collector's counts), so the
engine's state holds no reference cycles: a network the program drops is freed at once by
reference counting, its whole state with it (tested in ``tests/test_engine.py``). If
something else has frozen objects already, the block leaves them frozen.

Why: on large runs (``bench/bench_sim.py``'s 1,000-node row) the collector spent about a
third of the wall time traversing the growing node state and freed almost nothing; pausing
it in the run loops removes that time without changing peak memory, so the runs make no
garbage worth collecting. Raising the young-generation threshold alone, or suspending only
full collections, recovered little of it. Figures: ``bench/RESULTS.md``. The reference's
fixpoint of reachable on the dense 1,000-node topology took 3.5-3.7 s with the collector
running and 2.8-3.0 s paused (two alternating runs each).

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
    generation without being scanned (``gc.freeze`` then ``gc.unfreeze``), where only a
    full collection examines them (``gc.collect()``; CPython's own seldom comes): what the
    block makes should hold no reference cycle (see the module docstring). Re-entrant: only
    the outermost block acts. If something else has frozen objects already, the block
    leaves them frozen and only pauses the collector (the next young collection then scans
    what the block made, once).
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
