"""What every experiment is made of: its size, series, metrics, panels, runs and claims.

Role: the vocabulary of :mod:`psn.experiment.figures`. :class:`Config` is an experiment's
size (scale, repetitions, seeds, per-run budgets; Liu et al. 2009 Sec. 7 average 10 runs);
:class:`Series` a line of a figure with its run options; :class:`Metric` and
:class:`Panel` what is drawn; :class:`Item` one planned run; :class:`Claim` a published
finding with PSN's verdict. :class:`Experiment` is the base class of the figures (it plans
runs, turns records into rows, and states claims), with the helpers they share: the
topologies of Liu Sec. 7.1 and 7.3 per scale, comparisons of series, and verdicts. A run
stopped by a guard is evidence for a claim only where that stop is what the claim is about
(:func:`over_budget`, :func:`out_of_time`); a claim nothing measured decides is "not
tested".

Deliberately not here: the figures themselves (:mod:`~psn.experiment.liu`,
:mod:`~psn.experiment.nigam`), running, drawing, writing.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from ndlog.errors import InputError

from .runs import STATUS_DNF, STATUS_OK, RunSpec
from .table import STOP_DERIVATIONS, STOP_MEMORY, STOP_TIME, SummaryTable

__all__ = ["Config", "Series", "Metric", "Panel", "Item", "Claim", "Experiment", "SCALES",
           "make_config", "check_time_budget", "MAX_TIME_BUDGET", "fmt", "REPRODUCED",
           "PARTIAL", "NOT_REPRODUCED", "NOT_TESTED",
           "MB", "KB", "optional_series", "compare", "dearer", "verdict", "conjunction",
           "over_budget", "out_of_time", "why_not", "COST_STOPS", "PAPER_TIME_LIMIT",
           "step_state",
           "sums", "topology_size", "reach_topology", "density_topology", "sensor_topology",
           "DRED", "RELATIVE_EAGER", "RELATIVE_LAZY", "SET", "LAZY", "EAGER", "DERIVATION"]

REPRODUCED = "reproduced"
PARTIAL = "partially reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_TESTED = "not tested"

MB = 1e6
KB = 1e3


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Config:
    """The size of an experiment: scale, repetitions, seeds and per-run budgets.

    ``scale`` is ``full`` (the paper's sizes, 10 repetitions; Liu Sec. 7: "averaged across
    10 runs"), ``quick`` (smaller sizes, 3 repetitions) or ``tiny`` (toy graphs, for
    tests). Repetition ``r`` runs with seed ``seed + r`` (delivery order and the links a
    workload picks); topologies are generated with ``topology_seed``.
    """

    scale: str = "quick"
    runs: int = 3
    seed: int = 0
    time_budget: float = 60.0
    memory_budget: int = 4 << 30
    topology_seed: int = 0

    def describe(self) -> dict:
        return {"scale": self.scale, "runs": self.runs, "seed": self.seed,
                "time_budget_s": self.time_budget,
                "memory_budget_gib": round(self.memory_budget / 2**30, 2),
                "topology_seed": self.topology_seed}


#: defaults per scale: repetitions and the time budget of one run (seconds; Liu Sec. 7
#: calls a run that did not converge within 5 minutes "did not complete")
SCALES = {"full": {"runs": 10, "time_budget": 300.0},
          "quick": {"runs": 3, "time_budget": 60.0},
          "tiny": {"runs": 2, "time_budget": 10.0}}

#: the longest time budget per run (seconds, about 11.6 days): a run's alarm
#: (``setitimer``) cannot be set much further ahead
MAX_TIME_BUDGET = 1e6


def make_config(scale: str = "quick", runs: int | None = None, seed: int = 0,
                time_budget: float | None = None, memory_budget: int | None = None,
                topology_seed: int = 0) -> Config:
    """A :class:`Config` with the scale's defaults for what is not given.

    Raises
    ------
    InputError
        For an unknown scale, runs that are not a whole number >= 1, a seed that is not an
        integer, or a time or memory budget out of range, naming it and the value.
    """
    if not isinstance(scale, str) or scale not in SCALES:
        raise InputError(f"unknown scale {scale!r:.80}; one of {', '.join(SCALES)}")
    d = SCALES[scale]
    runs = d["runs"] if runs is None else runs
    from engine.options import require_whole
    if isinstance(runs, int) and not isinstance(runs, bool) and runs < 1:
        raise InputError(f"runs (--runs) must be at least 1, not {runs}")
    require_whole(runs, "runs (--runs)")
    for name, value in (("seed", seed), ("topology_seed", topology_seed)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"{name} is an integer, got {type(value).__name__} "
                             f"{value!r:.80}")
    tb = d["time_budget"] if time_budget is None else time_budget
    check_time_budget(tb)
    from engine.guards import check_memory_limit
    mem = Config.memory_budget if memory_budget is None else memory_budget
    require_whole(mem, "the memory budget per run in bytes (memory_budget)")
    check_memory_limit(mem, "the memory budget per run (--max-memory)")
    return Config(scale, runs, seed, tb, mem, topology_seed)


def check_time_budget(seconds, shown: str | None = None) -> float:
    """``seconds`` if it is a usable time budget per run: a finite number above 0 and at
    most :data:`MAX_TIME_BUDGET`. ``shown`` is how the user wrote it, for the message.

    Raises
    ------
    InputError
        Otherwise, naming ``--time-budget`` and the value (a run given NaN, infinity or a
        huge budget could not set its alarm, and failed inside the worker).
    """
    number = isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
    if not (number and math.isfinite(seconds) and 0 < seconds <= MAX_TIME_BUDGET):
        raise InputError(f"the time budget per run (--time-budget) must be a finite number "
                         f"of seconds above 0 and at most {MAX_TIME_BUDGET:g} (about "
                         f"{MAX_TIME_BUDGET / 86400:.1f} days), not "
                         f"{shown if shown is not None else repr(seconds)}",
                         hint=f"e.g. --time-budget {SCALES['full']['time_budget']:g} (the "
                              f"paper's 5 minutes)")
    return float(seconds)


@dataclass(frozen=True)
class Series:
    """A line of a figure: its label (as the paper names it) and its run options."""

    label: str
    annotation: str
    ship: str | None = None
    aggsel: str = "auto"
    delivery: str = "random"
    unsafe: bool = False
    minship_at: str = "node"


@dataclass(frozen=True)
class Metric:
    """A column of the rows: ``name`` (with its unit) and the axis label."""

    name: str
    label: str


@dataclass(frozen=True)
class Panel:
    """One figure file: a metric drawn as ``line`` (numeric x), ``bar`` (categorical x),
    ``box`` (distribution of the rows) or ``stacked`` (shares of outcomes), over the
    rows of ``phase``."""

    name: str
    metric: str
    title: str
    kind: str = "line"
    phase: str = ""
    xlabel: str = ""
    logy: bool = False
    stack: tuple = ()


@dataclass
class Item:
    """One planned run and where its rows go."""

    spec: RunSpec
    series: str
    rep: int
    info: dict = field(default_factory=dict)


@dataclass
class Claim:
    """A published finding beside PSN's measurement."""

    figure: str
    claim: str
    verdict: str
    evidence: str


# --------------------------------------------------------------------------- helpers


def fmt(v, unit: str = "") -> str:
    """A number with 3 significant digits (``"-"`` for None)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}{unit}"
    if v == 0:
        return f"0{unit}"
    digits = max(0, 2 - int(math.floor(math.log10(abs(v)))))
    return f"{v:,.{digits}f}{unit}"


def verdict(wins: int, total: int) -> str:
    """"reproduced" if the claimed relation held at all ``total`` points compared,
    "partially reproduced" at some, "not reproduced" at none, "not tested" if none could
    be compared (nothing was measured that decides it)."""
    if total == 0:
        return NOT_TESTED
    if wins == total:
        return REPRODUCED
    return PARTIAL if wins else NOT_REPRODUCED


def conjunction(parts) -> str:
    """The verdict of a claim made of several parts, each True (held), False (did not) or
    None (not determined: nothing measured decides it). "reproduced" only if every part
    held; "not tested" if no part could be decided."""
    known = [p for p in parts if p is not None]
    if not known:
        return NOT_TESTED
    if all(known):
        return REPRODUCED if len(known) == len(parts) else PARTIAL
    return PARTIAL if any(known) else NOT_REPRODUCED


#: the stops that measure what a run costs: a series stopped by one of them, where another
#: finished under the same budgets, costs more than that one. A refused run, one without
#: quiescence (a correctness matter) or one that ended without saying why measures nothing.
COST_STOPS = (STOP_TIME, STOP_MEMORY, STOP_DERIVATIONS)

#: Liu et al. Sec. 7: a run that did not converge within 5 minutes "did not complete"
PAPER_TIME_LIMIT = 300.0


def over_budget(p) -> bool:
    """``p`` (a :class:`~psn.experiment.table.Point`) did not finish, and every repetition
    stopped on a budget of cost (:data:`COST_STOPS`): evidence that the series costs more
    than one that finished there under the same budgets, and of nothing else."""
    return (p is not None and not p.finished and bool(p.stops)
            and all(k in COST_STOPS for k in p.stops))


def out_of_time(p, cfg: Config, limit: float = PAPER_TIME_LIMIT) -> int:
    """How many repetitions at ``p`` ran out of a time budget of at least ``limit``
    seconds: evidence that the run does not finish within ``limit``. A stop on memory, on
    another guard, or on a shorter time budget is not (the run may have finished within
    ``limit``)."""
    if p is None or cfg.time_budget < limit:
        return 0
    return sum(1 for k in p.stops if k == STOP_TIME)


def why_not(p, cfg: Config | None = None, limit: float = PAPER_TIME_LIMIT) -> str:
    """Why the unfinished point ``p`` decides nothing: what stopped it, and the time
    budget when that was shorter than ``limit``."""
    text = f"stopped by {p.stopped_by}" if p.stopped_by else "did not finish"
    if cfg is not None and STOP_TIME in p.stops and cfg.time_budget < limit:
        text += (f" (a time budget of {fmt(cfg.time_budget)} s, shorter than the paper's "
                 f"{fmt(limit)} s)")
    return text


def compare(table: SummaryTable, cheap: str, dear: str, metrics, xs, phase: str = ""
             ) -> tuple[int, int, list[str]]:
    """How often ``cheap`` is below ``dear``; returns ``(wins, compared, evidence)``.

    A point where ``cheap`` finished and ``dear`` ran out of a budget of cost under the
    same budgets (:func:`over_budget`) counts as below; one where ``dear`` stopped
    otherwise (refused, no quiescence) decides nothing and is not compared.
    """
    wins = total = 0
    notes = []
    for m in metrics:
        for x in xs:
            a, b = table.get(cheap, x, m, phase), table.get(dear, x, m, phase)
            if a is None or b is None or not a.finished:
                continue
            if not b.finished:
                if over_budget(b):
                    total += 1
                    wins += 1
                    notes.append(f"{m} at {x}: {fmt(a.mean)} vs did not finish "
                                 f"({b.stopped_by})")
                else:
                    notes.append(f"{m} at {x}: {fmt(a.mean)} vs not compared ({why_not(b)})")
                continue
            total += 1
            if a.mean < b.mean:
                wins += 1
            notes.append(f"{m} at {x}: {fmt(a.mean)} vs {fmt(b.mean)}")
    return wins, total, notes


def optional_series(candidates) -> tuple[list[Series], list[tuple[str, str]]]:
    """The series whose scheme is registered, and ``(label, why)`` of the others."""
    from provenance import scheme_names
    names = set(scheme_names())
    have, missing = [], []
    for s in candidates:
        if s.annotation in names:
            have.append(s)
        else:
            missing.append((s.label, f"no annotation scheme '{s.annotation}' is registered "
                                     f"in this version of PSN"))
    return have, missing


#: series built on schemes PSN does not have yet (run when registered under these names)
DRED = Series("DRed", "dred")
RELATIVE_EAGER = Series("Relative Eager", "relative", "eager")
RELATIVE_LAZY = Series("Relative Lazy", "relative", "lazy")

SET = Series("Set (no provenance)", "set")
LAZY = Series("Absorption Lazy", "absorption", "lazy")
EAGER = Series("Absorption Eager", "absorption", "eager")
DERIVATION = Series("Derivation sets", "derivation")


@functools.lru_cache(maxsize=64)
def topology_size(name: str, options: tuple, seed: int) -> tuple[int, int]:
    """``(nodes, undirected links)`` of a generated topology."""
    import topologies
    t = topologies.make(name, seed=seed, **dict(options))
    return t.n, t.num_links


def step_state(step: dict, nodes: int) -> dict:
    """The state metrics after a step (Liu Sec. 7.1): per-tuple provenance, per-node
    operator state, stored tuples, and whether the step equalled the reference."""
    chk = step.get("check")
    return {"provenance_B": step["provenance_per_tuple"],
            "state_MB_per_node": step["state_bytes"] / nodes / MB,
            "tuples": step["tuples"],
            "correct": None if chk is None else int(bool(chk))}


def sums(steps: list[dict]) -> dict:
    """Bytes, updates, simulated and wall-clock seconds summed over ``steps``."""
    return {"bytes": sum(s["bytes_sent"] for s in steps),
            "updates": sum(s["updates_sent"] for s in steps),
            "sim": sum(s["sim_time"] for s in steps),
            "wall": sum(s["wall_time"] for s in steps)}


# --------------------------------------------------------------------------- base class


class Experiment:
    """One figure (see the module docstring). Subclasses set the class attributes and
    implement :meth:`plan`, :meth:`rows` and :meth:`claims`."""

    name = ""
    figure = ""
    title = ""
    source = "Liu et al. 2009"
    section = ""
    xlabel = ""
    metrics: tuple = ()
    panels: tuple = ()
    #: the paper's setting, one line
    setting = ""

    def plan(self, cfg: Config) -> list[Item]:
        raise NotImplementedError

    def rows(self, item: Item, record: dict) -> list[dict]:
        raise NotImplementedError

    def claims(self, table: SummaryTable, cfg: Config) -> list[Claim]:
        return []

    def missing(self) -> list[tuple[str, str]]:
        """``(series, why)`` of the series the paper draws that PSN cannot run."""
        return []

    def notes(self, cfg: Config) -> list[str]:
        """How PSN's setting differs from the paper's, for the report."""
        return []

    # -- helpers for subclasses --------------------------------------------------------
    def spec(self, cfg: Config, series: Series, rep: int, **kw) -> RunSpec:
        base = dict(annotation=series.annotation, ship=series.ship, aggsel=series.aggsel,
                    delivery=series.delivery, unsafe=series.unsafe,
                    minship_at=series.minship_at, seed=cfg.seed + rep,
                    time_budget=cfg.time_budget, memory_budget=cfg.memory_budget,
                    topology_seed=cfg.topology_seed)
        base.update(kw)
        return RunSpec(**base)

    def base_row(self, item: Item, record: dict, x, phase: str = "") -> dict:
        topo = record.get("topology") or {}
        links = topo.get("links")
        return {"experiment": self.name, "series": item.series, "x": x, "phase": phase,
                "rep": item.rep, "seed": item.spec.seed, "status": STATUS_OK,
                "reason": "", "run_key": record.get("key", ""),
                "topology": item.spec.topology or "", "nodes": topo.get("nodes"),
                "link_tuples": 2 * links if links is not None else None}

    def unfinished(self, row: dict, record: dict) -> dict:
        """Mark ``row`` as not finished, with the run's reason."""
        row["status"] = record["status"] if record["status"] != STATUS_OK else STATUS_DNF
        row["reason"] = record.get("reason") or ""
        return row

    def metric_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def metric_label(self, name: str) -> str:
        for m in self.metrics:
            if m.name == name:
                return m.label
        return name


# --------------------------------------------------------------------------- topologies


def reach_topology(cfg: Config) -> tuple[str, tuple]:
    """Liu Sec. 7.1's default network: 100 nodes, about 200 links (``liu100``)."""
    if cfg.scale == "tiny":
        return "random", (("connected", True), ("m", 6), ("n", 5))
    return "liu100", ()


def density_topology(cfg: Config, density: str, nodes: int) -> tuple[str, tuple]:
    """Liu Sec. 7.3's dense (4 links per node) and sparse (half as many) networks."""
    if cfg.scale == "tiny":
        m = (3 * nodes) // 2 if density == "dense" else nodes
        return "random", (("connected", True), ("m", m), ("n", nodes))
    return f"liu-{density}", (("nodes", nodes),)


def sensor_topology(cfg: Config) -> tuple[str, tuple]:
    """Liu Sec. 7.1 workload 2: 100 sensors on 100 m x 100 m, k = 20 m, 5 seeds."""
    if cfg.scale == "tiny":
        return "sensor-grid", (("radius", 25.0), ("seeds", 2), ("sensors", 9),
                               ("size", 60.0))
    return "sensor-grid", (("radius", 20.0), ("seeds", 5), ("sensors", 100),
                           ("size", 100.0))


def dearer(table, a: str, b: str, metric: str, x, phase: str = "") -> bool | None:
    """Whether ``a`` costs more than ``b`` at ``x``: True if it does, or ran out of a
    budget of cost where ``b`` finished (:func:`over_budget`); None if that is not
    determined (either point is missing, ``b`` did not finish, or ``a`` stopped for
    another reason)."""
    pa, pb = table.get(a, x, metric, phase), table.get(b, x, metric, phase)
    if pa is None or pb is None or not pb.finished:
        return None
    if not pa.finished:
        return True if over_budget(pa) else None
    return pa.mean > pb.mean
