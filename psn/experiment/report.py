"""Writing an experiment's results: raw rows, summary, figures and ``report.md``.

Role: given an experiment, its planned runs and their records, write into one directory

- ``rows.csv`` / ``rows.json``: one row per point per repetition (:data:`ROW_FIELDS` and
  the metric columns; ``status`` ``dnf`` for points a run did not reach within its budget);
- ``runs.json``: every run's record (parameters, seed, code version, machine, per-step
  figures);
- ``summary.csv``: per series, point and metric, the mean and 95% Student-t interval over
  the repetitions (:data:`SUMMARY_FIELDS`);
- ``<name>-<panel>.png`` and ``.svg``: one figure per panel;
- ``report.md``: each figure beside the paper's claims, with verdicts and numbers, the
  series the paper has and PSN does not, the runs that did not finish, and the
  correctness checks;

and, for a sweep over several experiments, ``index.md``.

Deliberately not here: running anything, deciding verdicts (the experiments do).
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import math
from pathlib import Path

from ndlog.files import atomic_open, write_atomic
from ndlog.text import count_noun

from .figures import NOT_TESTED, Config, Experiment, Item, fmt
from .plots import draw_panel
from .runs import STATUS_OK, code_version, machine_info
from .table import ROW_FIELDS, SUMMARY_FIELDS, SummaryTable, is_number, stop_kind

__all__ = ["ExperimentResult", "write_experiment", "write_index"]


class ExperimentResult:
    """What :func:`write_experiment` wrote: the directory, files, table and claims."""

    def __init__(self, exp: Experiment, outdir: Path, table: SummaryTable, claims: list,
                 files: list[Path], records: list[dict]):
        self.experiment = exp
        self.outdir = outdir
        self.table = table
        self.claims = claims
        self.files = files
        self.records = records

    @property
    def report(self) -> Path:
        return self.outdir / "report.md"

    def verdicts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.claims:
            out[c.verdict] = out.get(c.verdict, 0) + 1
        return out

    @property
    def measured(self) -> int:
        """How many points (rows) some run got to: 0 when every run stopped before its
        first measurement, so that no claim could be judged."""
        return sum(1 for r in self.table.rows if r["status"] == STATUS_OK)

    def stopped_by(self) -> str:
        """What stopped the runs that did not finish: ``"the memory budget in 7"``."""
        counts: dict[str, int] = {}
        for r in self.records:
            if r.get("status") != STATUS_OK:
                kind = stop_kind(r)
                counts[kind] = counts.get(kind, 0) + 1
        return ", ".join(f"the {k} in {n}" for k, n in sorted(counts.items()))


def _write(path: Path, text: str) -> None:
    write_atomic(path, text)


def _csv(path: Path, fields: list[str], rows: list[dict]) -> None:
    with atomic_open(path, newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in fields})


def write_experiment(exp: Experiment, cfg: Config, items: list[Item], records: dict,
                     outdir: Path, command: str = "", elapsed: float | None = None,
                     runs_file: bool = True, rebuilt: str = "") -> ExperimentResult:
    """Write every file of one experiment (see the module docstring) into ``outdir``.

    ``records`` maps each item's spec to its run record. ``runs_file`` False leaves
    ``runs.json`` as it is: a report rebuilt from it (``--report-only``) may use some of
    its runs (fewer repetitions), and the others are kept. ``command`` is the command
    that made the runs, ``rebuilt`` the other one that rebuilt the report, if any.
    """
    outdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for item in items:
        rows.extend(exp.rows(item, records[item.spec]))
    metrics = exp.metric_names()
    extra = sorted({k for r in rows for k in r} - set(ROW_FIELDS) - set(metrics))
    fields = [*ROW_FIELDS, *metrics, *extra]
    _csv(outdir / "rows.csv", fields, rows)
    _write(outdir / "rows.json", json.dumps(rows, indent=1, default=str) + "\n")
    run_list = list({r["key"]: r for r in records.values()}.values())
    if runs_file:
        _write(outdir / "runs.json", json.dumps(run_list, indent=1, default=str) + "\n")
    table = SummaryTable(rows, metrics)
    _csv(outdir / "summary.csv", list(SUMMARY_FIELDS), table.summary_rows(exp.name))
    files = [outdir / n for n in ("rows.csv", "rows.json", "runs.json", "summary.csv")]
    missing = exp.missing()
    foot = ("Not run (not in PSN): " + ", ".join(m for m, _ in missing)) if missing else ""
    sub = f"{cfg.scale} scale, {count_noun(cfg.runs, 'repetition')}"
    figures = []
    for panel in exp.panels:
        stem = outdir / f"{exp.name}-{panel.name}"
        paths = draw_panel(exp, panel, table, stem, sub, foot)
        files += paths
        figures.append((panel, paths[0].name))
    claims = exp.claims(table, cfg)
    text = _report(exp, cfg, table, claims, figures, run_list, command, elapsed, rebuilt)
    _write(outdir / "report.md", text)
    files.append(outdir / "report.md")
    return ExperimentResult(exp, outdir, table, claims, files, run_list)


# --------------------------------------------------------------------------- report.md


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _run_dates(records: list[dict]) -> str:
    """When the runs ran (UTC), from their records."""
    starts = sorted(r["started"] for r in records if r.get("started"))
    ends = sorted(r["finished"] for r in records if r.get("finished"))
    if not starts:
        return "no runs"
    a = starts[0].replace("T", " ")[:16]
    b = (ends[-1] if ends else starts[-1]).replace("T", " ")[:16]
    return f"runs {a} to {b} UTC" if a != b else f"runs {a} UTC"


def _machine_line(records: list[dict]) -> str:
    """The machine the runs ran on (this one when no record names one); every machine,
    with its number of runs, when they ran on several."""
    counts: dict[str, int] = {}
    for r in records:
        if r.get("machine"):
            text = _machine(r["machine"])
            counts[text] = counts.get(text, 0) + 1
    if len(counts) <= 1:
        return next(iter(counts), None) or _machine(machine_info())
    return "; ".join(f"{text} ({count_noun(n, 'run')})" for text, n in counts.items())


def _machine(m: dict) -> str:
    return (f"{m.get('cpu') or 'unknown CPU'}, {m.get('cpus')} logical CPUs, "
            f"{m.get('memory_gib')} GiB, {m.get('os')}, Python {m.get('python')} "
            f"(host {m.get('host')})")


def _report(exp, cfg, table, claims, figures, records, command, elapsed,
            rebuilt: str = "") -> str:
    versions = sorted({r.get("code_version", "?") for r in records}) or [code_version()]
    trees = sorted({r["git_describe"] for r in records if r.get("git_describe")})
    lines = [f"# {exp.figure}: {exp.title}", "",
             f"Reproduces {exp.source}, {exp.section}, {exp.figure}.", ""]
    lines += [f"- Command: `{command or 'psn experiment ' + exp.name}`",
              *([f"- Report rebuilt from these runs' records by `{rebuilt}`"]
                if rebuilt else []),
              f"- Date: {_run_dates(records)}; report written {_now()}",
              f"- Machine: {_machine_line(records)}",
              f"- Code version: {', '.join(versions)} (of the code that computes runs"
              + (f"; tree: {', '.join(trees)}" if trees else "")
              + ("; the code changed while the runs were made" if len(versions) > 1
                 else "; the tree changed while the runs were made" if len(trees) > 1
                 else "") + ")" + _other_code(records),
              f"- Scale: {cfg.scale}: {cfg.runs} repetitions (seeds {_seeds(records)}), "
              f"budget per run {fmt(cfg.time_budget)} s and "
              f"{fmt(cfg.memory_budget / 2**30)} GiB; topology seed {cfg.topology_seed}",
              f"- Runs: {len(records)}, {fmt(sum(r.get('wall_s', 0) for r in records))} s "
              f"of run time in all"
              + (f"; this command took {fmt(elapsed)} s (cached runs are not rerun)"
                 if elapsed is not None else ""), ""]
    lines += ["## Setting", "", f"- Paper: {exp.setting}.",
              *(f"- PSN: {t}" for t in _settings(records)), ""]
    for n in exp.notes(cfg):
        lines.append(f"- {n}")
    lines += ["", "## The paper's claims and what PSN measures", ""]
    if not any(r["status"] == STATUS_OK for r in table.rows):
        lines += ["**Nothing was measured**: every run stopped before its first point (see "
                  "\"Runs that did not finish\"), so no claim could be judged; a run stopped "
                  "by a budget is evidence only where that stop is what a claim is about.", ""]
    lines += ["| # | Claim (paraphrase) | Verdict | Measured |", "|---|---|---|---|"]
    for i, c in enumerate(claims, 1):
        lines.append(f"| {i} | {_cell(c.claim)} ({c.figure}) | **{c.verdict}** | "
                     f"{_cell(c.evidence)} |")
    lines.append("")
    missing = exp.missing()
    if missing:
        lines += ["## Series the paper has and PSN does not", ""]
        lines += [f"- **{s}**: {why}; the claims that need it are '{NOT_TESTED}'."
                  for s, why in missing]
        lines.append("")
    lines += ["## Figures", ""]
    for panel, png in figures:
        lines += [f"### {panel.title}", "", f"![{exp.figure}: {panel.title}]({png})", "",
                  f"[SVG]({Path(png).with_suffix('.svg').name})", ""]
        if panel.kind in ("line", "bar"):
            lines += _panel_table(exp, panel, table)
        elif panel.kind == "stacked":
            lines += _stacked_table(exp, panel, table)
    lines += _dnf_section(table)
    lines += _correctness_section(table)
    lines += ["## Files", "",
              "- `rows.csv`, `rows.json`: one row per point and repetition (`status` `dnf`: "
              "the run did not get there within its budget, `reason` says why);",
              "- `summary.csv`: mean, 95% Student-t interval (`ci_low`, `ci_high`, "
              "`ci_half`) and standard deviation over the repetitions, with `n_ok` and "
              "`n_dnf`;",
              "- `runs.json`: every run's parameters, seed, code version, machine and "
              "per-step figures;",
              "- one PNG and one SVG per panel.", ""]
    return "\n".join(lines)


def _seeds(records: list[dict]) -> str:
    """The seeds the runs used: each run's seed, and every delivery seed of a worked
    example's run (repetition r of ``nigam`` tries T seeds from ``--seed + r * T`` on)."""
    seeds: set[int] = set()
    for r in records:
        spec = r["spec"]
        first = spec.get("seed")
        if not isinstance(first, int):
            continue
        trials = spec.get("trials") if spec.get("kind") == "nigam" else 1
        seeds.update(range(first, first + (trials if isinstance(trials, int) else 1)))
    if not seeds:
        return "none"
    low, high = min(seeds), max(seeds)
    if len(seeds) == high - low + 1:
        return f"{low}..{high}" if high > low else f"{low}"
    shown = sorted(seeds)
    return ", ".join(map(str, shown[:12])) + (" ..." if len(shown) > 12 else "")


def _other_code(records: list[dict]) -> str:
    """What the report says of the runs whose process ran other code than the version their
    cache keys name (the source changed after the sweep computed its keys): the cache does
    not reuse them."""
    keys = sorted({r["key_version"] for r in records if r.get("key_version")
                   and r.get("code_version") and r["code_version"] != r["key_version"]})
    if not keys:
        return ""
    n = sum(1 for r in records if r.get("key_version") in keys
            and r.get("code_version") != r["key_version"])
    return (f"; **{count_noun(n, 'run')} ran other code than the version "
            f"{', '.join(keys)} of {'its' if n == 1 else 'their'} cache "
            f"{'key' if n == 1 else 'keys'}**: the source changed during the sweep (the run "
            f"cache does not reuse such a run; the same command runs it again)")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _settings(records: list[dict]) -> list[str]:
    """One line per distinct (program, topology, workload) among the runs."""
    seen = {}
    for r in records:
        s = r["spec"]
        topo = (r.get("topology") or {}).get("summary") or s.get("topology") or "in memory"
        key = (s["program"], topo, s.get("workload", ""))
        seen.setdefault(key, set()).add(
            f"{s['annotation']}" + (f"/{s['ship']}" if s.get("ship") else "")
            + (f"/aggsel {s['aggsel']}" if s.get("aggsel") not in (None, "auto") else "")
            + (f"/{s['delivery']}" if s.get("delivery") != "random" else "")
            + (f"/{s['workers']} workers" if s.get("workers") else ""))
    out = []
    for (prog, topo, wl), opts in list(seen.items())[:12]:
        out.append(f"`{prog}` on {topo}" + (f", workload `{wl}`" if wl else "")
                   + f" ({', '.join(sorted(opts))})")
    if len(seen) > 12:
        out.append(f"... and {len(seen) - 12} more settings (see runs.json)")
    return out


def _value(p) -> str:
    if p is None:
        return ""
    if not p.finished:
        return "did not finish"
    s = fmt(p.mean)
    if not math.isnan(p.half):
        s += f" ± {fmt(p.half)}"
    if p.n_dnf:
        s += f" ({p.n_dnf}/{p.n_runs} DNF)"
    return s


def _panel_table(exp, panel, table) -> list[str]:
    series = [s for s in table.series() if not s.startswith("ref:")]
    xs = sorted({x for s in series for x in table.xs(s, panel.phase)}, key=_x_order)
    if len(xs) > 12:
        return _overview_table(exp, panel, table, series, len(xs))
    head = f"| {exp.metric_label(panel.metric)} | " + " | ".join(str(x) for x in xs) + " |"
    out = [head, "|---" * (len(xs) + 1) + "|"]
    for s in series:
        cells = [_value(table.get(s, x, panel.metric, panel.phase)) for x in xs]
        if any(cells):
            out.append(f"| {s} | " + " | ".join(cells) + " |")
    return out + [""]


def _overview_table(exp, panel, table, series, points: int) -> list[str]:
    """For a panel with many points (one per deletion): the insertion and the mean
    deletion (each repetition's deletions averaged, then the interval over repetitions)."""
    cols = [(c, x, ph) for c, x, ph in (("insertion (all links, one burst)", 0, "insert"),
                                        ("mean per deletion", "mean", "delete-mean"))
            if any(table.get(s, x, panel.metric, ph) for s in series)]
    out = [f"{points} points per series: every value is in summary.csv.", ""]
    if not cols:
        return out
    out += [f"| {exp.metric_label(panel.metric)} | " + " | ".join(c for c, _, _ in cols)
            + " |", "|---" * (len(cols) + 1) + "|"]
    for s in series:
        cells = [_value(table.get(s, x, panel.metric, ph)) for _, x, ph in cols]
        if any(cells):
            out.append(f"| {s} | " + " | ".join(cells) + " |")
    return out + [""]


def _stacked_table(exp, panel, table) -> list[str]:
    series = [s for s in table.series()]
    xs = table.xs(phase=panel.phase)
    out = ["| scheme | " + " | ".join(f"{x}: correct / wrong / no term." for x in xs) + " |",
           "|---" * (len(xs) + 1) + "|"]
    for s in series:
        cells = []
        for x in xs:
            vals = [table.get(s, x, m, panel.phase) for m in ("correct_pct", "wrong_pct",
                                                             "noterm_pct")]
            if all(v is None for v in vals):
                cells.append("")
                continue
            cells.append(" / ".join(fmt(v.mean) + "%" if v and v.finished else "-"
                                    for v in vals))
        if any(cells):
            out.append(f"| {s} | " + " | ".join(cells) + " |")
    return out + [""]


#: the status shown for a row whose run stopped partway (a worked example's run that
#: finished some of its trials): the row counts those, and has the run's reason
_PARTLY = "partly"


def _dnf_section(table) -> list[str]:
    bad = {}
    for r in table.rows:
        if r["status"] != STATUS_OK:
            key = (r["series"], r["status"], _short_reason(r.get("reason") or ""))
        elif r.get("reason"):       # finished, from a run that stopped partway
            key = (r["series"], _PARTLY, _short_reason(r["reason"]))
        else:
            continue
        bad.setdefault(key, []).append(r)
    out = ["## Runs that did not finish", ""]
    if not bad:
        return out + ["Every run finished within its budget.", ""]
    out += ["| series | status | points (x) | repetitions | reason |", "|---|---|---|---|---|"]
    for (series, status, reason), rs in bad.items():
        xs = [str(x) for x in sorted({r["x"] for r in rs}, key=_x_order)]
        reps = sorted({r["rep"] for r in rs})
        shown = ", ".join(xs[:8]) + (" ..." if len(xs) > 8 else "")
        if status == _PARTLY:
            done = sorted({r.get("trials") for r in rs if is_number(r.get("trials"))})
            planned = sorted({r.get("trials_planned") for r in rs
                              if is_number(r.get("trials_planned"))})
            status = ("stopped partway, after "
                      + (f"{done[0]}-{done[-1]}" if len(done) > 1 else
                         f"{done[0]}" if done else "some")
                      + (f" of {planned[-1]}" if len(planned) == 1 else "")
                      + " trials (the point counts those)")
        out.append(f"| {series} | {'did not finish' if status == 'dnf' else status} | "
                   f"{shown} | {', '.join(map(str, reps))} | {_cell(reason)} |")
    return out + [""]


def _x_order(x):
    return (0, x, "") if is_number(x) else (1, 0, str(x))


def _short_reason(reason: str) -> str:
    """A reason without the run-specific details (which fact, the hint), so that the runs
    that stopped for the same reason share one line (``runs.json`` has the full text)."""
    return reason.split(" (the last")[0].split("; ")[0]


def _correctness_section(table) -> list[str]:
    checked = [r for r in table.rows if r["status"] == STATUS_OK
               and r.get("correct") is not None]
    out = ["## Correctness", ""]
    if not checked:
        return out + ["No step of these runs was compared with the reference.", ""]
    wrong = [r for r in checked if not r["correct"]]
    if not wrong:
        return out + [f"Every one of the {len(checked)} checked points equals the "
                      f"centralized reference (`psn.evaluate`).", ""]
    by = {}
    for r in wrong:
        by.setdefault(r["series"], []).append(r)
    out.append(f"{len(wrong)} of {len(checked)} checked points differ from the reference:")
    out.append("")
    for s, rs in by.items():
        out.append(f"- {s}: " + ", ".join(f"x={r['x']} rep {r['rep']}" for r in rs[:10])
                   + (" ..." if len(rs) > 10 else ""))
    return out + [""]


def write_index(results: list[ExperimentResult], outdir: Path, command: str = "") -> Path:
    """``index.md`` of a sweep: each experiment with its verdicts and its report."""
    records = list({r["key"]: r for x in results for r in x.records}.values())   # shared once
    versions = sorted({r["code_version"] for r in records if r.get("code_version")})
    lines = ["# PSN experiments", "", f"- Command: `{command or 'psn experiment all'}`",
             f"- Date: {_run_dates(records)}; index written {_now()}",
             f"- Machine: {_machine_line(records)}",
             f"- Code version: {', '.join(versions or [code_version()])} (of the code that "
             f"computed the runs; each report names its own)", "",
             "| experiment | figure | claims | reproduced | partially | not reproduced | "
             "not tested | report |", "|---|---|---|---|---|---|---|---|"]
    for res in results:
        v = res.verdicts()
        rel = res.report.relative_to(outdir)
        lines.append(f"| {res.experiment.name} | {res.experiment.figure}: "
                     f"{res.experiment.title} | {len(res.claims)} | "
                     f"{v.get('reproduced', 0)} | {v.get('partially reproduced', 0)} | "
                     f"{v.get('not reproduced', 0)} | {v.get('not tested', 0)} | "
                     f"[report]({rel}) |")
    lines.append("")
    path = outdir / "index.md"
    _write(path, "\n".join(lines))
    return path
