"""Raw rows and their summary: one mean and confidence interval per series, point, metric.

Role: an experiment turns each run's record into *rows* (one per plotted point of one
repetition: ``series``, ``x``, ``rep``, ``status`` and the metric columns).
:class:`SummaryTable` groups the rows of the repetitions of each point and summarizes every
metric with :func:`psn.experiment.stats.summarize` (mean and 95% Student-t interval over the
repetitions, Liu et al. 2009 Sec. 7), counting the repetitions that did not finish; it is
what the plots, the claims and ``summary.csv`` read.

Deliberately not here: making rows (the experiments), drawing, writing files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

from .runs import STATUS_OK, STATUS_REFUSED
from .stats import summarize

__all__ = ["Point", "SummaryTable", "SUMMARY_FIELDS", "ROW_FIELDS", "is_number", "stop_kind",
           "STOP_TIME", "STOP_MEMORY", "STOP_DERIVATIONS", "STOP_QUIESCENCE", "STOP_REFUSED",
           "STOP_UNKNOWN"]

#: what stopped a run that did not finish: the start of the reason
#: :mod:`psn.experiment.runs` records, before its colon ...
STOP_TIME = "time budget"
STOP_MEMORY = "memory budget"
STOP_DERIVATIONS = "derivation budget"
STOP_QUIESCENCE = "no quiescence"
#: ... or the engine refused the run, or the row does not say (a run that ended without
#: an error before the point)
STOP_REFUSED = "refused"
STOP_UNKNOWN = "unknown"
_STOPS = (STOP_TIME, STOP_MEMORY, STOP_DERIVATIONS, STOP_QUIESCENCE)

#: the identifying columns of every raw row, before the metric columns
ROW_FIELDS = ("experiment", "series", "x", "phase", "rep", "seed", "status", "reason",
              "run_key", "topology", "nodes", "link_tuples")

#: the columns of ``summary.csv``
SUMMARY_FIELDS = ("experiment", "series", "x", "phase", "metric", "n_runs", "n_ok", "n_dnf",
                  "mean", "ci_low", "ci_high", "ci_half", "sd", "status")


def stop_kind(row: dict) -> str:
    """What stopped the repetition of an unfinished ``row``: one of the ``STOP_*`` names."""
    if row.get("status") == STATUS_REFUSED:
        return STOP_REFUSED
    kind = str(row.get("reason") or "").split(":", 1)[0].strip()
    return kind if kind in _STOPS else STOP_UNKNOWN


def is_number(v) -> bool:
    """True if ``v`` is a finite int or float (not a bool): a value a summary can take."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass
class Point:
    """One series' point for one metric: the repetitions' summary.

    ``values`` are the finished repetitions' values; ``n_dnf`` counts the repetitions that
    did not finish (or were refused) at this point; ``reasons`` says why, one per such
    repetition, and ``stops`` what stopped each (:func:`stop_kind`).
    """

    series: str
    x: object
    phase: str
    metric: str
    values: list
    n_runs: int
    n_dnf: int
    reasons: list
    stops: list = field(default_factory=list)

    def __post_init__(self):
        self.summary = summarize(self.values)

    @property
    def n_ok(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float | None:
        return self.summary.mean if self.summary else None

    @property
    def half(self) -> float:
        return self.summary.half if self.summary else float("nan")

    @property
    def finished(self) -> bool:
        """At least one repetition finished here."""
        return bool(self.values)

    @property
    def stopped_by(self) -> str:
        """Why the unfinished repetitions stopped, by budget: ``"the time budget in 3, the
        memory budget in 7"`` (the part of each reason before its colon)."""
        counts: dict[str, int] = {}
        for r in self.reasons:
            kind = str(r).split(":", 1)[0].strip() or "unknown"
            counts[kind] = counts.get(kind, 0) + 1
        return ", ".join(f"the {k} in {n}" for k, n in sorted(counts.items()))

    @property
    def status(self) -> str:
        if not self.n_dnf:
            return "ok"
        if not self.values:
            return "did not finish"
        return f"partly: {self.n_dnf} of {self.n_runs} did not finish"

    def row(self, experiment: str) -> dict:
        s = self.summary
        return {"experiment": experiment, "series": self.series, "x": self.x,
                "phase": self.phase, "metric": self.metric, "n_runs": self.n_runs,
                "n_ok": self.n_ok, "n_dnf": self.n_dnf,
                "mean": s.mean if s else None, "ci_low": s.low if s else None,
                "ci_high": s.high if s else None,
                "ci_half": None if not s or math.isnan(s.half) else s.half,
                "sd": None if not s or math.isnan(s.sd) else s.sd, "status": self.status}


class SummaryTable:
    """Every (series, x, phase, metric) point of an experiment's rows.

    Parameters
    ----------
    rows:
        Raw rows (:data:`ROW_FIELDS` plus metric columns).
    metrics:
        The metric columns to summarize.
    """

    def __init__(self, rows: Iterable[dict], metrics: Iterable[str]):
        self.rows = list(rows)
        self.metrics = list(metrics)
        groups: dict = {}
        for r in self.rows:
            groups.setdefault((r["series"], r["x"], r.get("phase", "")), []).append(r)
        self.points: dict = {}
        for (series, x, phase), rs in groups.items():
            for m in self.metrics:
                ok = [r[m] for r in rs if r["status"] == STATUS_OK and is_number(r.get(m))]
                dnf = [r for r in rs if r["status"] != STATUS_OK]
                if not ok and not dnf:
                    continue        # a metric this point does not have
                self.points[(series, x, phase, m)] = Point(
                    series, x, phase, m, ok, len(rs), len(dnf),
                    sorted(r.get("reason") or r["status"] for r in dnf),
                    sorted(stop_kind(r) for r in dnf))

    def get(self, series: str, x, metric: str, phase: str = "") -> Point | None:
        return self.points.get((series, x, phase, metric))

    def mean(self, series: str, x, metric: str, phase: str = "") -> float | None:
        p = self.get(series, x, metric, phase)
        return p.mean if p else None

    def series(self) -> list[str]:
        return list(dict.fromkeys(k[0] for k in self.points))

    def xs(self, series: str | None = None, phase: str = "") -> list:
        return list(dict.fromkeys(k[1] for k in self.points
                                  if (series is None or k[0] == series) and k[2] == phase))

    def line(self, series: str, metric: str, phase: str = "") -> list[Point]:
        """The points of one series and metric, in x order."""
        pts = [p for (s, x, ph, m), p in self.points.items()
               if s == series and m == metric and ph == phase]
        return sorted(pts, key=lambda p: _order(p.x))

    def summary_rows(self, experiment: str) -> list[dict]:
        return [p.row(experiment) for p in self.points.values()]


def _order(x):
    return (0, x, "") if is_number(x) else (1, 0, str(x))
