"""Workloads: sequences of bursts of base-fact updates (Liu et al. Sec. 7.1-7.4).

Role: describe what happens to the network's base facts, as data, and parse the small SPEC
language of ``psn run --workload``. A workload is a list of *phases*; each phase expands,
against the live set of base facts and the run's seeded ``random.Random``, into *steps*; each
step is one burst (Nigam Sec. 3.1, the bursty model) that the simulator injects at once and
runs to quiescence before the next.

Phases (SPEC syntax in brackets; phases are joined with ``;``):

- :class:`InsertLinks` [``insert:0.25,0.5,0.75,1.0``]: insert the topology's links in a seeded
  random order, up to each fraction of all links (both directions of a link together);
- :class:`DeleteLinks` [``delete-links:20``]: delete ``n`` present links one at a time, each
  its own step (Liu Sec. 7.2, "Insertions-followed-by-deletions"); more deletions than the
  topology has links (less those deleted since they were last loaded) are refused before
  the first step, and a phase that finds no present link left (links that expired) stops
  the run with an error rather than ending early;
- :class:`Flap` [``flap:3-7:5``, ``flap:random:5``]: delete and re-insert one link ``n`` times;
- :class:`Sensors` [``sensors:trigger=0.5,untrigger``]: load the sensor grid with its seeds
  triggered, trigger a fraction of the other sensors in one burst, then un-trigger them one
  at a time in random order (``untrigger=K``: only ``K`` of them) (Liu Sec. 7.1, workload 2);
- :class:`LoadAll` [``all``]: every base fact of the topology in one burst;
- :class:`Wait` [``wait:10s``]: let simulated time pass with no burst (soft state expires).

A workload whose first phase does not load the links (e.g. ``delete-links:20`` alone) gets
``insert:1.0`` in front.

Every engine (in memory, the simulator, Ray) expands a workload here with
:meth:`WorkloadContext.for_run`, so the same workload and seed give the same steps (the same
links, in the same order) everywhere.

Deliberately not here: running steps (the engines), the meaning of facts, topologies
themselves (a topology is read only through its ``links``, ``link``, ``n`` and sensor
attributes).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Iterator

from ndlog.errors import InputError

from .delivery import MAX_DURATION, parse_duration

__all__ = ["Step", "Phase", "InsertLinks", "DeleteLinks", "Flap", "Sensors", "LoadAll",
           "Wait", "Workload", "WorkloadContext", "parse_workload", "workload_rng", "SPEC_HELP",
           "TooManyDeletions"]

SPEC_HELP = ("phases joined by ';': insert[:F1,F2,...] | delete-links:N | "
             "flap:U-V|random:N | sensors[:trigger=F,untrigger[=K]] | all | wait:DURATION")


@dataclass
class Step:
    """One burst: facts to insert and delete (``pred -> list of tuples``), injected
    together after ``advance`` simulated seconds of waiting: the deletions first, then the
    insertions, unless ``ordered`` gives the burst's ``(sign, pred, tuple)`` updates in
    their own order (a burst file's)."""

    label: str
    insert: dict = field(default_factory=dict)
    delete: dict = field(default_factory=dict)
    advance: float = 0.0
    ordered: list | None = None

    def updates(self) -> list[tuple[int, str, tuple]]:
        """The burst's ``(sign, pred, tuple)`` updates in the order they are applied."""
        if self.ordered is not None:
            return list(self.ordered)
        return [(-1, p, t) for p, rows in self.delete.items() for t in rows] + \
            [(1, p, t) for p, rows in self.insert.items() for t in rows]

    @property
    def inserted(self) -> int:
        return sum(1 for sign, _, _ in self.updates() if sign > 0)

    @property
    def deleted(self) -> int:
        return sum(1 for sign, _, _ in self.updates() if sign < 0)


def workload_rng(seed: int) -> random.Random:
    """The random generator that picks a run's links and sensors: the same ``seed`` picks
    the same ones on every engine, whatever the delivery model or placement (delivery draws
    from a generator of its own)."""
    return random.Random(f"{seed}/workload")


class WorkloadContext:
    """What phases read while expanding: the topology, the program's link arity and cost,
    the live base facts (``pred -> set``) and the seeded ``rng``."""

    @classmethod
    def for_run(cls, topology, program, seed: int, cost: str = "latency",
                base: dict | None = None) -> "WorkloadContext":
        """The context every engine builds for ``program`` on ``topology`` with ``seed``
        (:func:`workload_rng`), so that a workload expands to the same steps everywhere."""
        return cls(topology, dict(base or {}), workload_rng(seed),
                   program.arities().get("link"), cost, frozenset(program.predicates))

    def __init__(self, topology, base: dict, rng: random.Random, link_arity: int | None = 3,
                 cost: str = "latency", uses: frozenset = frozenset()):
        self.topology = topology
        self.base = base
        self.rng = rng
        self.link_arity = link_arity
        self.cost = cost
        self.uses = uses

    # -- links -----------------------------------------------------------------------------
    def link_tuples(self, u: int, v: int) -> list[tuple]:
        """``link`` tuples of the undirected link ``u-v``, both directions."""
        if self.link_arity is None:
            raise InputError("this workload changes links, but the program has no "
                             "link predicate")
        if self.link_arity == 2:
            return [(u, v), (v, u)]
        link = self.topology.link(u, v)
        c = {"hops": 1}.get(self.cost, link.latency)
        if self.cost == "length" and link.length is not None:
            c = link.length
        return [(u, v, c), (v, u, c)]

    def all_links(self) -> list[tuple[int, int]]:
        return [l.key for l in self.topology.links]


class Phase:
    """A part of a workload; :meth:`steps` yields :class:`Step` lazily (it may read the base
    facts as they are after the previous step)."""

    #: True if the phase deletes base facts (set semantics refuses such workloads up
    #: front on programs where it cannot delete exactly).
    deletes = False

    loads_links = False

    #: True if the phase inserts or deletes ``link`` facts
    changes_links = False

    def check(self, topology) -> None:
        """Refuse, before the first step of the workload runs, what ``topology`` cannot run
        (the checks that need the live base facts come when the phase's steps do)."""
        if self.changes_links and getattr(topology, "kind", "") == "sensor-grid":
            raise InputError("this workload changes links, but a sensor grid gives no link "
                             "facts: its links are nbr facts, which 'all' and 'sensors' load",
                             hint="drop the link phases, or run the program on a network "
                                  "topology (ts100, dense, ring, ...)")

    def steps(self, ctx: WorkloadContext) -> Iterator[Step]:
        raise NotImplementedError

    def count(self, topology) -> int | None:
        """Number of steps, if known in advance (for the progress bar)."""
        return None


@dataclass
class InsertLinks(Phase):
    """Insert links up to each fraction of all of them (Liu Sec. 7.2, Fig. 7); link tuples
    already present are not inserted again."""

    fractions: tuple = (1.0,)
    loads_links = True
    changes_links = True

    def steps(self, ctx):
        order = ctx.all_links()
        ctx.rng.shuffle(order)
        m, done = len(order), 0
        for f in self.fractions:
            upto = max(done, min(m, round(f * m)))
            batch = order[done:upto]
            done = upto
            present = ctx.base.get("link", ())
            tuples = [t for u, v in batch for t in ctx.link_tuples(u, v) if t not in present]
            yield Step(f"insert {f:g}", insert={"link": tuples})

    def count(self, topology):
        return len(self.fractions)


@dataclass
class DeleteLinks(Phase):
    """Delete ``n`` present links, one per step, chosen at random (Liu Sec. 7.2, Fig. 8)."""

    deletes = True
    changes_links = True

    n: int = 20

    def steps(self, ctx):
        for i in range(self.n):
            present = _present_links(ctx)
            if not present:
                raise TooManyDeletions(
                    f"delete-links:{self.n}: no present link is left to delete after "
                    f"{i} deletions", self.n, i)
            u, v = ctx.rng.choice(present)
            yield Step(f"delete {u}-{v}", delete={"link": ctx.link_tuples(u, v)})

    def count(self, topology):
        return self.n


class TooManyDeletions(InputError):
    """A ``delete-links:N`` phase asks for more deletions than there are links to delete;
    ``asked`` is ``N`` and ``most`` the number it could make."""

    def __init__(self, message: str, asked: int, most: int):
        super().__init__(message, hint=f"ask for at most {most}: delete-links:{most}")
        self.asked = asked
        self.most = most


@dataclass
class Flap(Phase):
    """Delete and re-insert one link ``n`` times (``link=None``: a random present link)."""

    deletes = True
    changes_links = True

    link: tuple | None = None
    n: int = 1

    def check(self, topology) -> None:
        super().check(topology)
        if self.link is None:
            return
        u, v = sorted(self.link)
        if not topology.has_link(u, v):
            raise InputError(f"flap: the topology has no link {u}-{v}",
                             hint="flap a link of the topology, or flap:random:N")

    def steps(self, ctx):
        if self.link is None:
            present = _present_links(ctx)
            if not present:
                return
            u, v = ctx.rng.choice(present)
        else:
            u, v = sorted(self.link)
        tuples = ctx.link_tuples(u, v)
        if self.link is not None and not all(t in ctx.base.get("link", ()) for t in tuples):
            raise InputError(f"flap: link {u}-{v} is not a base fact now (not inserted yet, "
                             f"or expired), so it cannot go down",
                             hint="flap a link after the phase that inserts it (e.g. 'all; "
                             f"flap:{u}-{v}:1'), or flap:random:N (a present link)")
        for i in range(self.n):
            yield Step(f"flap {u}-{v} down", delete={"link": tuples})
            yield Step(f"flap {u}-{v} up", insert={"link": tuples})

    def count(self, topology):
        return 2 * self.n


@dataclass
class Sensors(Phase):
    """The region-query workload (Liu Sec. 7.1, workload 2: the sensor grid).

    Step 1 loads ``sensor``, ``nbr``, ``seed``, ``sink`` and triggers every seed; step 2
    triggers ``trigger`` of the other sensors at once; then each of them is un-triggered in
    its own step, in random order (``untrigger``: ``None`` none, ``-1`` all, ``K`` the
    first ``K``).
    """

    trigger: float = 0.5
    untrigger: int | None = -1

    @property
    def deletes(self) -> bool:
        return self.untrigger is not None

    def check(self, topology) -> None:
        super().check(topology)
        if getattr(topology, "kind", "") != "sensor-grid":
            raise InputError(f"the sensors workload needs a sensor-grid topology, "
                             f"not {getattr(topology, 'kind', None)!r}")

    def steps(self, ctx):
        topo = ctx.topology
        facts = {p: list(ts) for p, ts in topo.facts().items()
                 if not ctx.uses or p in ctx.uses}
        seeds = sorted(topo.seeds)
        facts["isTriggered"] = [(x,) for x in seeds]
        yield Step("load sensors, trigger seeds", insert=facts)
        others = [x for x in range(topo.n) if x not in set(seeds)]
        k = round(self.trigger * len(others))
        chosen = sorted(ctx.rng.sample(others, k))
        yield Step(f"trigger {k}", insert={"isTriggered": [(x,) for x in chosen]})
        if self.untrigger is None:
            return
        order = list(chosen)
        ctx.rng.shuffle(order)
        if self.untrigger >= 0:
            order = order[: self.untrigger]
        for x in order:
            yield Step(f"untrigger {x}", delete={"isTriggered": [(x,)]})

    def count(self, topology):
        others = topology.n - len(topology.seeds)
        k = round(self.trigger * others)
        u = 0 if self.untrigger is None else (k if self.untrigger < 0 else
                                               min(k, self.untrigger))
        return 2 + u


@dataclass
class LoadAll(Phase):
    """Every base fact of the topology in one burst."""

    loads_links = True

    def steps(self, ctx):
        topo = ctx.topology
        if topo.kind == "sensor-grid":
            facts = {p: list(ts) for p, ts in topo.facts().items()
                     if not ctx.uses or p in ctx.uses}
            if not facts:
                raise InputError(
                    f"the program reads none of the sensor grid's facts "
                    f"({', '.join(topo.facts())})", hint="a sensor grid's links are "
                    "nbr(@X, Y) facts, not link; write the program over them, or run it "
                    "on a network topology (ts100, dense, ring, ...)")
        else:
            facts = {"link": [t for u, v in ctx.all_links() for t in ctx.link_tuples(u, v)]}
        yield Step("load all", insert=facts)

    def count(self, topology):
        return 1


@dataclass
class Wait(Phase):
    """Let ``seconds`` of simulated time pass (soft-state tuples may expire meanwhile)."""

    seconds: float = 1.0

    def steps(self, ctx):
        yield Step(f"wait {self.seconds:g}s", advance=self.seconds)

    def count(self, topology):
        return 1


def _present_links(ctx: WorkloadContext) -> list[tuple[int, int]]:
    present = ctx.base.get("link", set())
    return [(u, v) for u, v in ctx.all_links()
            if all(t in present for t in ctx.link_tuples(u, v))]


@dataclass
class Workload:
    """A list of phases, with the SPEC it came from."""

    phases: list
    spec: str = ""

    def check(self, topology) -> None:
        """Refuse what ``topology`` cannot run, before the first step (:meth:`Phase.check`),
        and deletions past the links it has (:class:`TooManyDeletions`): a run that asked for
        1,000 deletions on a 6-link ring made 6 and said nothing."""
        for phase in self.phases:
            phase.check(topology)
        links = len(getattr(topology, "links", ()))
        left = links                # at most this many links are present
        for phase in self.phases:
            if phase.loads_links:
                left = links
            elif isinstance(phase, DeleteLinks):
                if phase.n > left:
                    since = "" if left == links else \
                        f" ({links - left} of them deleted by the phases before)"
                    raise TooManyDeletions(
                        f"delete-links:{phase.n} asks for more deletions than there are "
                        f"links to delete: the topology has {links} links{since}, so at "
                        f"most {left}", phase.n, left)
                left -= phase.n

    def steps(self, ctx: WorkloadContext) -> Iterator[Step]:
        for phase in self.phases:
            yield from phase.steps(ctx)

    @property
    def deletes(self) -> bool:
        """True if some phase deletes base facts."""
        return any(p.deletes for p in self.phases)

    def count(self, topology) -> int | None:
        total = 0
        for p in self.phases:
            c = p.count(topology)
            if c is None:
                return None
            total += c
        return total


def parse_workload(spec: str | Workload | None, topology=None) -> Workload:
    """Parse a workload SPEC (see :data:`SPEC_HELP` and the module docstring).

    ``None`` or ``""`` is ``sensors`` on a sensor grid and ``insert:1.0`` otherwise. A
    workload whose first phase does not load links (and is not ``sensors``) gets
    ``insert:1.0`` in front.

    Raises
    ------
    ndlog.errors.InputError
        Naming the offending phase; with ``topology``, also for what it cannot run (a flap
        of a link it lacks, link phases on a sensor grid, a ``sensors`` phase elsewhere),
        before any step: every engine expands its workload through this function, so the
        phases' steps need not check again; for a ``spec`` of another type.
    """
    if spec is not None and not isinstance(spec, (str, Workload)):
        raise InputError(f"a workload is a SPEC string or a Workload, got "
                         f"{type(spec).__name__} {spec!r}", hint=SPEC_HELP)
    if isinstance(spec, Workload):
        if topology is not None:
            spec.check(topology)
        return spec
    is_sensor = topology is not None and getattr(topology, "kind", "") == "sensor-grid"
    text = (spec or "").strip() or ("sensors" if is_sensor else "insert:1.0")
    phases = [_parse_phase(p.strip(), text) for p in text.split(";") if p.strip()]
    if not phases:
        raise InputError(f"empty workload {spec!r}", hint=SPEC_HELP)
    first = phases[0]
    if not (first.loads_links or isinstance(first, Sensors)) and not is_sensor:
        phases.insert(0, InsertLinks((1.0,)))
    workload = Workload(phases, text)
    if topology is not None:
        workload.check(topology)
    return workload


#: Phases that may be written alone, without ``:`` (not with ``:`` and nothing after it).
_BARE = frozenset({"insert", "insert-links", "delete-links", "delete", "flap", "sensors",
                   "all", "load"})


def _parse_phase(text: str, spec: str) -> Phase:
    name, colon, rest = text.partition(":")
    name = name.strip().lower()
    args = [a.strip() for a in rest.split(",")] if rest.strip() else []
    try:
        if colon and not rest.strip() and name in _BARE:
            raise ValueError(f"nothing after ':' (write {name!r} alone)")
        if name in ("insert", "insert-links"):
            fr = tuple(_number(float, a) for a in args) or (1.0,)
            if any(not 0 < f <= 1 for f in fr) or list(fr) != sorted(set(fr)):
                raise ValueError("fractions must increase within (0, 1]")
            return InsertLinks(fr)
        if name in ("delete-links", "delete"):
            if len(args) > 1:
                raise ValueError(f"{name} takes one number of deletions, e.g. {name}:5")
            n = _number(int, args[0]) if args else 20
            if n < 0:
                raise ValueError("the number of deletions must be >= 0")
            return DeleteLinks(n)
        if name == "flap":
            return _parse_flap(rest)
        if name == "sensors":
            return _parse_sensors(args)
        if name in ("all", "load"):
            if args:
                raise ValueError(f"{name} takes no arguments")
            return LoadAll()
        if name == "wait":
            if len(args) != 1:
                raise ValueError("wait takes one duration, e.g. wait:10s")
            seconds = parse_duration(args[0])
            if not math.isfinite(seconds) or seconds < 0:
                raise ValueError(f"a wait is a duration >= 0, not {args[0]!r}")
            if seconds > MAX_DURATION:
                raise ValueError(f"a wait is at most {MAX_DURATION:g} s (about "
                                 f"{MAX_DURATION / 86400:.1f} days), not {args[0]!r}")
            return Wait(seconds)
    except (ValueError, IndexError) as exc:
        raise InputError(f"bad workload phase {text!r} in {spec!r}: {exc}",
                         hint=SPEC_HELP) from None
    raise InputError(f"unknown workload phase {name!r} in {spec!r}", hint=SPEC_HELP)


def _parse_flap(rest: str) -> Flap:
    parts = [p.strip() for p in rest.split(":")] if rest.strip() else []
    if not parts:
        return Flap(None, 1)
    if len(parts) == 1:
        if "-" in parts[0].lstrip("-"):
            return Flap(_link(parts[0]), 1)
        link, n = None, _number(int, parts[0])
    elif len(parts) == 2:
        link = None if parts[0] in ("random", "") else _link(parts[0])
        n = _number(int, parts[1])
    else:
        raise ValueError("flap takes LINK:N, e.g. flap:3-7:5 or flap:random:5")
    if n < 1:
        raise ValueError("the number of flaps must be >= 1")
    return Flap(link, n)


def _number(conv, text: str):
    """``conv(text)`` (``int`` or ``float``), or a ValueError that names the text."""
    try:
        return conv(text)
    except ValueError:
        kind = "a whole number" if conv is int else "a number"
        raise ValueError(f"{text.strip()!r} is not {kind}") from None


def _link(text: str) -> tuple[int, int]:
    a, sep, b = text.partition("-")
    if not sep:
        raise ValueError(f"a link is U-V, not {text!r}")
    u, v = _number(int, a), _number(int, b)
    if u == v:
        raise ValueError(f"a link joins two different nodes, not {text!r}")
    return (u, v)


def _parse_sensors(args: list[str]) -> Sensors:
    trigger, untrigger = 0.5, None
    for a in args:
        key, eq, value = a.partition("=")
        key = key.strip()
        if key == "trigger":
            trigger = _number(float, value) if eq else 0.5
            if not 0 <= trigger <= 1:
                raise ValueError("trigger is a fraction in [0, 1]")
        elif key == "untrigger":
            counted = eq and value.strip() not in ("", "all")
            untrigger = _number(int, value) if counted else -1
            if counted and untrigger < 0:
                raise ValueError("untrigger=K takes a number of sensors K >= 0 (or 'all')")
        else:
            raise ValueError(f"unknown sensors option {key!r} (trigger=F, untrigger[=K])")
    if not args:
        untrigger = -1
    return Sensors(trigger, untrigger)
