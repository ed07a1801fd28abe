"""The NDlog programs the experiments run, by name.

Role: the three queries of Liu et al. 2009 Sec. 2 (Query 1 ``reachable``, Query 2
``shortest_path``, Query 3 ``region``), as ``examples/`` and the golden corpus hold them,
and the worked examples of Nigam et al. 2012 Sec. 3.2, 5 and 6 with their bursts, so that a
run's parameters name its program and the experiment package works without the source tree.

Deliberately not here: running anything, topologies, expected answers (the reference
evaluator ``psn.evaluate`` decides correctness).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PROGRAMS", "NIGAM_EXAMPLES", "NigamExample", "program_text"]

#: Liu et al. Query 1 (examples/reachable.ndl)
REACHABLE = """\
// Reachability (Nigam et al. 2012, Sec. 2.1; Liu et al. 2009, Query 1).
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
"""

#: Query 1 planned as Liu et al. Fig. 4 plan it (examples/reachable_liu.ndl): the join runs
#: at the link's destination, which ships reachable itself, so nodes of one worker can ship
#: the same fact (what MinShip per worker absorbs)
REACHABLE_LIU = """\
// Reachability planned as Liu et al. 2009 (Sec. 3, Fig. 4) plan it.
#hidden(link_rev).
r1 reachable(@S, D) :- link(@S, D).
r2a link_rev(@Z, S) :- link(@S, Z).
r2 reachable(@S, D) :- link_rev(@Z, S), reachable(@Z, D).
"""

#: Liu et al. Query 2 (examples/shortest_path.ndl)
SHORTEST_PATH = """\
// Shortest path by cost and by hop count (Liu et al., ICDE 2009, Query 2).
sp1 path(@S, D, P, C, L) :- link(@S, D, C), P := f_concat(S, D), L := 1.
sp2 path(@S, D, P, C, L) :- link(@S, Z, C1), path(@Z, D, P2, C2, L2),
                            f_member(P2, S) == 0,
                            P := f_prepend(S, P2), C := C1 + C2, L := L2 + 1.
sp3 minCost(@S, D, min<C>) :- path(@S, D, P, C, L).
sp4 minHops(@S, D, min<L>) :- path(@S, D, P, C, L).
sp5 cheapestPath(@S, D, P, C) :- path(@S, D, P, C, L), minCost(@S, D, C).
sp6 fewestHops(@S, D, P, L) :- path(@S, D, P, C, L), minHops(@S, D, L).
sp7 shortestCheapestPath(@S, D, P1, C, P2, L) :- cheapestPath(@S, D, P1, C),
                                                 fewestHops(@S, D, P2, L).
"""

#: Liu et al. Query 3 (examples/region.ndl, tests/programs/region/program.ndl)
REGION = """\
// Largest region of triggered sensors (Liu et al., ICDE 2009, Query 3).
g1 activeRegion(@X, R) :- seed(@X, R), isTriggered(@X).
g2 activeRegion(@Y, R) :- activeRegion(@X, R), isTriggered(@X), nbr(@X, Y).
g3 regionSize(@R, count<X>) :- activeRegion(@X, R).
g4 largestRegion(@K, max<N>) :- regionSize(@R, N), sink(@R, K).
g5 largestRegions(@K, R) :- regionSize(@R, N), sink(@R, K), largestRegion(@K, N).
"""

#: program name -> NDlog text
PROGRAMS = {"reachable": REACHABLE, "reachable_liu": REACHABLE_LIU,
            "shortest_path": SHORTEST_PATH, "region": REGION}


@dataclass(frozen=True)
class NigamExample:
    """A worked example of Nigam et al. 2012: a program, the facts loaded first, and the
    bursts that follow (each run to quiescence, then checked against ``psn.evaluate``).

    ``bursts`` hold fact strings with ``+``/``-`` signs; one burst may both insert and
    delete a fact (the updates then race on the network).
    """

    name: str
    title: str
    section: str
    program: str
    facts: tuple = ()
    bursts: tuple = ()
    claim: str = ""


_FIG6 = """\
p(@1) :- s(@2), t(@2), r(@2).
s(@2) :- q(@3).
t(@2) :- u(@4).
"""

_APQ = """\
p(@1) :- a(@0).
q(@2) :- p(@1).
p(@1) :- q(@2).
"""

_FIVE = """\
p() :- s().
q() :- p().
r() :- q().
p() :- r().
q() :- r().
"""

_HOPS = """\
h1 hop(@X, Y) :- link(@X, Z), link(@Z, Y).
h2 tri_hop(@X, Y) :- hop(@X, Z), link(@Z, Y).
"""

#: example name -> :class:`NigamExample`
NIGAM_EXAMPLES = {e.name: e for e in (
    NigamExample(
        "fig6", "Fig. 6: insert r, delete q and u in one burst", "Sec. 6, Fig. 6", _FIG6,
        ("q(@3)", "u(@4)"), (("+r(@2)", "-q(@3)", "-u(@4)"),),
        "the original PSN, which updates a node's state when an update is queued, ends "
        "with p although no derivation supports it"),
    NigamExample(
        "conflict", "Sec. 6: conflicting +a and -a on the a/p/q cycle", "Sec. 6", _APQ,
        (), (("+a(@0)", "-a(@0)"),),
        "annotating with base facts only, under FIFO channels (Liu et al.'s earlier PSN), "
        "discards a deletion that arrives before its insertion: p and q stay although a "
        "is gone"),
    NigamExample(
        "cycle", "Sec. 5: insert then delete a on the a/p/q cycle", "Sec. 5", _APQ,
        ("a(@0)",), (("-a(@0)",),),
        "counting derivations does not terminate on a recursive program: p and q derive "
        "each other forever"),
    NigamExample(
        "five-rules", "Sec. 5, Figs. 4-5: the five-rule cycle, insert then delete s",
        "Sec. 5, Figs. 4-5", _FIVE, ("s()",), (("-s()",),),
        "derivation sets detect the cycle (infinite count) and terminate on insertion and "
        "deletion; counting does not"),
    NigamExample(
        "fig1", "Sec. 3.2, Fig. 1: two/three-hop links, +link(d,f), +link(a,f), -link(a,b)",
        "Sec. 3.2, Fig. 1", _HOPS,
        ("link(@a, b)", "link(@a, d)", "link(@d, c)", "link(@b, c)", "link(@c, h)",
         "link(@f, g)"),
        (("+link(@d, f)", "+link(@a, f)", "-link(@a, b)"),),
        "a non-recursive program: counting is exact; set semantics is not (a hop has two "
        "derivations)"),
)}


def program_text(name: str) -> str:
    """The NDlog text of program ``name`` (a key of :data:`PROGRAMS` or
    :data:`NIGAM_EXAMPLES`)."""
    if name in PROGRAMS:
        return PROGRAMS[name]
    if name in NIGAM_EXAMPLES:
        return NIGAM_EXAMPLES[name].program
    from ndlog.errors import InputError
    raise InputError(f"unknown experiment program {name!r}; one of "
                     f"{', '.join([*PROGRAMS, *NIGAM_EXAMPLES])}")
