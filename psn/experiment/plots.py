"""The figures: one PNG and one SVG per panel, drawn with matplotlib's Agg backend.

Role: draw an experiment's :class:`~psn.experiment.table.SummaryTable` the way Liu et al.
2009 Sec. 7 draw theirs: one panel per metric, series named as in the paper, the mean of
the repetitions with its 95% confidence interval as error bars. A point where no
repetition finished within its budget is drawn as a cross at the top of the axes ("did
not finish"), a point where some did not is annotated ``k/n DNF``, and series the paper
has but PSN cannot run are named under the plot.

Deliberately not here: computing anything (the table does), choosing panels (the
experiments do), the report text.
"""

from __future__ import annotations

import math
from pathlib import Path

from .table import SummaryTable, is_number

__all__ = ["draw_panel", "series_style"]

_PALETTE = {
    "Set (no provenance)": ("#7f7f7f", "s"),
    "DRed": ("#8c564b", "v"),
    "Relative Eager": ("#e377c2", "^"),
    "Relative Lazy": ("#bcbd22", "<"),
    "Absorption Eager": ("#d62728", "D"),
    "Absorption Lazy": ("#1f77b4", "o"),
    "Derivation sets": ("#2ca02c", "P"),
    "Lazy Dense": ("#1f77b4", "o"),
    "Eager Dense": ("#d62728", "D"),
    "Lazy Sparse": ("#17becf", "o"),
    "Eager Sparse": ("#ff7f0e", "D"),
    "No AggSel": ("#7f7f7f", "s"),
    "Single AggSel": ("#ff7f0e", "^"),
    "Multi AggSel": ("#1f77b4", "o"),
}
_OTHER = ["#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf"]

_OUTCOMES = (("correct_pct", "correct", "#2ca02c"), ("wrong_pct", "wrong answer", "#d62728"),
             ("noterm_pct", "did not terminate", "#ff7f0e"),
             ("refused_pct", "refused", "#7f7f7f"))


def series_style(label: str, i: int = 0) -> tuple[str, str]:
    """``(colour, marker)`` of a series, the same in every figure."""
    return _PALETTE.get(label, (_OTHER[i % len(_OTHER)], "o"))


def _pyplot():
    import matplotlib
    matplotlib.use("Agg", force=True)
    matplotlib.rcParams["svg.hashsalt"] = "psn"        # stable element ids in SVG files
    import matplotlib.pyplot as plt
    return plt


def draw_panel(exp, panel, table: SummaryTable, stem: Path, subtitle: str = "",
               footnote: str = "") -> list[Path]:
    """Draw one panel; writes ``stem.png`` and ``stem.svg`` and returns their paths.

    ``subtitle`` (the scale and repetitions) is completed with what the marks show."""
    subtitle += {"line": ", mean and 95% CI", "bar": ", mean and 95% CI",
                 "box": ", every value pooled", "stacked": ", mean share"}[panel.kind]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    try:
        draw = {"line": _line, "bar": _bar, "box": _box, "stacked": _stacked}[panel.kind]
        draw(ax, exp, panel, table)
        ax.set_title(f"{exp.figure}: {panel.title}" + (f"\n{subtitle}" if subtitle else ""),
                     fontsize=10)
        ax.grid(True, alpha=0.3)
        if footnote:
            fig.text(0.01, 0.01, footnote, fontsize=7, color="#555555", ha="left",
                     va="bottom")
        # fixed margins: tight_layout would draw every figure once more
        bottom = {"stacked": 0.3, "box": 0.22}.get(panel.kind, 0.15)
        fig.subplots_adjust(left=0.12, right=0.97, top=0.88, bottom=bottom)
        paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
        fig.savefig(paths[0], dpi=120)
        fig.savefig(paths[1], metadata={"Date": None})     # no date: same plot, same file
    finally:
        plt.close(fig)
    return paths


def _plotted(table: SummaryTable) -> list[str]:
    return [s for s in table.series() if not s.startswith("ref:")]


def _line(ax, exp, panel, table) -> None:
    dnf_marks = []
    positive = True
    for i, series in enumerate(_plotted(table)):
        pts = table.line(series, panel.metric, panel.phase)
        pts = [p for p in pts if is_number(p.x)]
        if not pts:
            continue
        color, marker = series_style(series, i)
        done = [p for p in pts if p.finished]
        if done:
            xs = [p.x for p in done]
            ys = [p.mean for p in done]
            err = [0.0 if math.isnan(p.half) else p.half for p in done]
            positive &= all(y > 0 for y in ys)
            ax.errorbar(xs, ys, yerr=err, color=color, marker=marker, markersize=5,
                        capsize=3, linewidth=1.4, label=series)
            for p in done:
                if p.n_dnf:
                    ax.annotate(f"{p.n_dnf}/{p.n_runs} DNF", (p.x, p.mean), fontsize=7,
                                color=color, xytext=(4, 4), textcoords="offset points")
        else:
            ax.plot([], [], color=color, marker=marker, label=series)
        dnf_marks += [(p.x, color) for p in pts if not p.finished]
    _scale(ax, panel, positive, [p.mean for s in _plotted(table)
                                 for p in table.line(s, panel.metric, panel.phase)
                                 if p.finished])
    _dnf_crosses(ax, dnf_marks)
    xs = {p.x for s in _plotted(table) for p in table.line(s, panel.metric, panel.phase)}
    if xs and all(isinstance(x, int) for x in xs):
        from matplotlib.ticker import MaxNLocator
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(panel.xlabel or exp.xlabel)
    ax.set_ylabel(exp.metric_label(panel.metric))
    ax.legend(fontsize=8, loc="best")


def _scale(ax, panel, positive: bool, values: list) -> None:
    """Logarithmic y for ``logy`` panels; symmetric-log when some values are 0 (set
    semantics has no provenance), linear below the smallest positive value."""
    if not panel.logy:
        return
    if positive:
        ax.set_yscale("log")
        return
    pos = [v for v in values if v > 0]
    if pos and all(v >= 0 for v in values):
        ax.set_yscale("symlog", linthresh=min(pos))
        ax.set_ylim(bottom=0)         # intervals may reach below 0; the values cannot


def _dnf_crosses(ax, marks) -> None:
    """Crosses at the top of the axes for points no repetition finished."""
    if not marks:
        return
    lo, hi = ax.get_ylim()         # headroom above the data for the crosses
    if ax.get_yscale() == "log" and lo > 0:
        ax.set_ylim(lo, hi * (hi / lo) ** 0.3)
    else:
        ax.set_ylim(lo, hi + 0.3 * (hi - lo))
    from matplotlib.transforms import blended_transform_factory
    trans = blended_transform_factory(ax.transData, ax.transAxes)
    rows = list(dict.fromkeys(color for _, color in marks))     # one height per series
    for x, color in marks:
        y = 0.96 - 0.06 * rows.index(color)
        ax.plot([x], [y], marker="X", markersize=9, color=color, transform=trans,
                clip_on=False, linestyle="none")
    ax.plot([], [], marker="X", color="black", linestyle="none",
            label="did not finish (over budget)")


def _bar(ax, exp, panel, table) -> None:
    series = _plotted(table)
    cats = [x for x in table.xs(phase=panel.phase)]
    width = 0.8 / max(1, len(series))
    positive = True
    dnf = []
    for i, s in enumerate(series):
        color, _ = series_style(s, i)
        for j, x in enumerate(cats):
            p = table.get(s, x, panel.metric, panel.phase)
            pos = j - 0.4 + width * (i + 0.5)
            if p is None:
                continue
            if p.finished:
                err = 0.0 if math.isnan(p.half) else p.half
                ax.bar(pos, p.mean, width, yerr=err, color=color, capsize=3,
                       label=s if j == 0 or not ax.get_legend_handles_labels()[1].count(s)
                       else None)
                positive &= p.mean > 0
                if p.n_dnf:
                    ax.annotate(f"{p.n_dnf}/{p.n_runs} DNF", (pos, p.mean), fontsize=7,
                                ha="center", xytext=(0, 3), textcoords="offset points")
            else:
                dnf.append((pos, color, s))
    if panel.logy and positive:
        ax.set_yscale("log")
    if dnf:
        from matplotlib.transforms import blended_transform_factory
        trans = blended_transform_factory(ax.transData, ax.transAxes)
        for pos, color, s in dnf:
            ax.bar(pos, 0.9, width, bottom=0.0, transform=trans, fill=False, hatch="//",
                   edgecolor=color, label=None)
            ax.text(pos, 0.45, "did not finish", rotation=90, ha="center", va="center",
                    fontsize=7, transform=trans, color=color)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    for i, s in enumerate(series):
        if s not in uniq:
            color, _ = series_style(s, i)
            from matplotlib.patches import Patch
            uniq[s] = Patch(facecolor="none", edgecolor=color, hatch="//")
    ax.legend([uniq[s] for s in series], series, fontsize=8, loc="best")
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels([str(c) for c in cats])
    ax.set_xlabel(panel.xlabel or exp.xlabel)
    ax.set_ylabel(exp.metric_label(panel.metric))


def _box(ax, exp, panel, table) -> None:
    series = _plotted(table)
    data, labels, colors = [], [], []
    for i, s in enumerate(series):
        vals = [r[panel.metric] for r in table.rows
                if r["series"] == s and r.get("phase", "") == panel.phase
                and r["status"] == "ok" and is_number(r.get(panel.metric))]
        data.append(vals)
        labels.append(s)
        colors.append(series_style(s, i)[0])
    drawn = [(i, d) for i, d in enumerate(data) if d]
    if drawn:
        bp = ax.boxplot([d for _, d in drawn], positions=[i + 1 for i, _ in drawn],
                        widths=0.6, patch_artist=True, showfliers=True)
        for patch, (i, _) in zip(bp["boxes"], drawn):
            patch.set_facecolor(colors[i])
            patch.set_alpha(0.5)
        if panel.logy and all(v > 0 for _, d in drawn for v in d):
            ax.set_yscale("log")
    for i, d in enumerate(data):
        if not d:
            ax.text(i + 1, 0.5, "did not finish", rotation=90, ha="center", va="center",
                    color=colors[i], fontsize=8, transform=ax.get_xaxis_transform())
    ax.set_xticks(range(1, len(labels) + 1))
    ax.set_xticklabels([f"{lab}\n(n={len(d)})" for lab, d in zip(labels, data)], fontsize=8)
    ax.set_xlim(0.4, len(labels) + 0.6)
    ax.set_ylabel(exp.metric_label(panel.metric))
    ax.set_xlabel("Series (every deletion of every repetition)")


def _stacked(ax, exp, panel, table) -> None:
    series = _plotted(table)
    cats = [x for x in table.xs(phase=panel.phase)]
    n = max(1, len(series))
    width = 0.8 / n
    ticks, ticklabels = [], []
    for j, x in enumerate(cats):
        for i, s in enumerate(series):
            pos = j - 0.4 + width * (i + 0.5)
            bottom = 0.0
            for metric, name, color in _OUTCOMES:
                p = table.get(s, x, metric, panel.phase)
                v = p.mean if p and p.finished else 0.0
                if v:
                    ax.bar(pos, v, width * 0.95, bottom=bottom, color=color,
                           edgecolor="white", linewidth=0.5)
                bottom += v
            ticks.append(pos)
            ticklabels.append(_short(s))
    ax.set_xticks(ticks)
    ax.set_xticklabels(ticklabels, rotation=90, fontsize=7)
    for j, x in enumerate(cats):
        ax.text(j, 104, f"{x} delivery", ha="center", va="center", fontsize=9)
    from matplotlib.patches import Patch
    ax.legend([Patch(color=c) for _, _, c in _OUTCOMES], [n for _, n, _ in _OUTCOMES],
              fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=4,
              frameon=False)
    ax.set_ylim(0, 109)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("Share of trials (%)")
    ax.set_xlabel("")


def _short(label: str) -> str:
    return {"Absorption provenance": "absorption", "Derivation sets": "derivation",
            "Set (no annotation)": "set", "Original PSN": "original",
            "Base-fact annotations (FIFO)": "fifo-base", "Counting": "counting"}.get(label,
                                                                                   label)
