"""``psn experiment``: every experiment end to end at a tiny scale, and its parts.

- every experiment of Liu et al. 2009 Sec. 7 (Figs. 7-14) and Nigam et al. 2012's examples
  runs at the hidden ``tiny`` scale (toy graphs, 2 repetitions) in this process and writes
  its raw rows, summary, one decodable PNG (and an SVG) per panel and a report with the
  paper's claims and verdicts;
- the summary's intervals are the Student-t intervals of the repetitions' values;
- a cached run is read back, not recomputed; a run over its time budget is in the data
  as "did not finish" (and drawn);
- the Student-t quantiles, the Liu et al. topology presets, the embedded programs, and the
  command line.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
from pathlib import Path

import pytest

import psn
import topologies
from psn.cli import main as psn_main
from psn.experiment import (EXPERIMENTS, Cache, RunSpec, execute_run, get_experiment,
                            make_config, run_all, run_experiment, run_experiments,
                            summarize, t_quantile)
from psn.experiment.programs import NIGAM_EXAMPLES, PROGRAMS
from psn.experiment.runs import STEP_FIELDS
from psn.experiment.table import ROW_FIELDS, SUMMARY_FIELDS

ROOT = Path(__file__).resolve().parents[1]
TINY = make_config("tiny")


def _csv(path: Path) -> tuple[list[str], list[dict]]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """Every experiment at the tiny scale, in this process, with one shared cache."""
    out = tmp_path_factory.mktemp("experiments")
    results, index = run_experiments(list(EXPERIMENTS), TINY, out, executor="inline",
                                     progress=False, command="psn experiment all --tiny")
    return out, {r.experiment.name: r for r in results}, index


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("df,expected", [(1, 12.7062), (2, 4.3027), (4, 2.7764),
                                         (9, 2.2622), (30, 2.0423), (1000, 1.9623)])
def test_t_quantiles_match_the_tables(df, expected):
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)
    assert t_quantile(0.025, df) == pytest.approx(-expected, abs=1e-4)


def test_interval_is_student_t_over_repetitions():
    s = summarize([1.0, 2.0, 6.0])
    sd = math.sqrt(((1 - 3) ** 2 + (2 - 3) ** 2 + (6 - 3) ** 2) / 2)
    assert s.mean == 3.0 and s.sd == pytest.approx(sd)
    assert s.half == pytest.approx(4.3027 * sd / math.sqrt(3), rel=1e-4)
    assert (s.low, s.high) == pytest.approx((3.0 - s.half, 3.0 + s.half))
    one = summarize([5.0])
    assert one.n == 1 and math.isnan(one.half) and one.low == one.high == 5.0
    assert summarize([]) is None


# --------------------------------------------------------------------------- every experiment


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_experiment_writes_rows_summary_figures_and_report(swept, name):
    out, results, _ = swept
    res, exp = results[name], EXPERIMENTS[name]
    d = out / name
    fields, rows = _csv(d / "rows.csv")
    assert fields[: len(ROW_FIELDS)] == list(ROW_FIELDS)
    assert set(exp.metric_names()) <= set(fields)
    assert rows and {r["experiment"] for r in rows} == {name}
    assert {int(r["rep"]) for r in rows} == set(range(TINY.runs))
    assert json.loads((d / "rows.json").read_text())[0]["experiment"] == name
    sfields, summary = _csv(d / "summary.csv")
    assert sfields == list(SUMMARY_FIELDS) and summary
    for panel in exp.panels:
        png = d / f"{name}-{panel.name}.png"
        import matplotlib.image
        img = matplotlib.image.imread(png)
        assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 300
        assert (d / f"{name}-{panel.name}.svg").read_text().lstrip().startswith("<?xml")
    report = (d / "report.md").read_text()
    for section in ("## Setting", "## The paper's claims and what PSN measures",
                    "## Figures", "## Runs that did not finish", "## Correctness",
                    "- Machine:", "- Code version:"):
        assert section in report, section
    for panel in exp.panels:
        assert f"]({name}-{panel.name}.png)" in report
    assert res.claims and all(c.verdict in ("reproduced", "partially reproduced",
                                            "not reproduced", "not tested")
                              for c in res.claims)
    for c in res.claims:
        assert f"**{c.verdict}**" in report
    for series, _ in exp.missing():
        assert f"**{series}**" in report
    records = json.loads((d / "runs.json").read_text())
    for rec in records:
        assert rec["code_version"] and rec["machine"]["cpus"]
        assert rec["spec"]["seed"] in range(TINY.seed, TINY.seed + 100)


def test_index_lists_every_experiment(swept):
    out, _, index = swept
    text = index.read_text()
    for name in EXPERIMENTS:
        assert f"[report]({name}/report.md)" in text


def test_index_and_reports_name_the_code_and_machines_that_made_the_runs(swept, tmp_path):
    """index.md named the code version of the tree it was written from, and the machine
    of the first run: `psn experiment all --report-only` wrote "Code version: git
    fc46b12" into docs/experiments/quick/index.md, a version none of the runs was made
    with (the reports name c400014, aaca6e9 and 8436eff), and "Machine: AMD EPYC" where
    Fig. 9, 10 and 14 ran on an Intel Xeon. A report of runs made on two machines named
    the first run's alone."""
    out, _, _ = swept
    for name, version in (("fig13", "git 1111111"), ("fig14", "git 2222222")):
        runs = json.loads((out / name / "runs.json").read_text())
        for r in runs:
            r["code_version"] = r["key_version"] = version
            r["machine"] = {**r["machine"], "cpu": f"CPU of {name}"}
        runs[0]["machine"] = {**runs[0]["machine"], "cpu": "another CPU"}
        (tmp_path / name).mkdir()
        (tmp_path / name / "runs.json").write_text(json.dumps(runs))
    _, index = run_experiments(["fig13", "fig14"], TINY, tmp_path, report_only=True)
    text = index.read_text()
    assert ("- Code version: git 1111111, git 2222222 (of the code that computed the runs; "
            "each report names its own)") in text
    machines = re.search(r"- Machine: (.*)", text).group(1)
    assert re.fullmatch(r"another CPU, [^;]* \(2 runs\); CPU of fig13, [^;]* \(11 runs\); "
                        r"CPU of fig14, [^;]* \(11 runs\)", machines), machines
    report = (tmp_path / "fig13" / "report.md").read_text()
    assert re.search(r"- Machine: another CPU, .* \(1 run\); CPU of fig13, .* \(11 runs\)\n",
                     report)


def test_intervals_come_from_the_repetitions(swept):
    out, _, _ = swept
    _, rows = _csv(out / "fig7" / "rows.csv")
    _, summary = _csv(out / "fig7" / "summary.csv")
    point = [r for r in summary if r["series"] == "Absorption Lazy" and r["x"] == "1.0"
             and r["metric"] == "comm_MB"][0]
    values = [float(r["comm_MB"]) for r in rows
              if r["series"] == "Absorption Lazy" and r["x"] == "1.0" and r["status"] == "ok"]
    assert len(values) == TINY.runs == int(point["n_ok"])
    s = summarize(values)
    assert float(point["mean"]) == pytest.approx(s.mean)
    assert float(point["ci_half"]) == pytest.approx(
        t_quantile(0.975, TINY.runs - 1) * s.sd / math.sqrt(TINY.runs))
    assert float(point["ci_low"]) == pytest.approx(s.mean - s.half)


def test_checked_points_equal_the_reference(swept):
    _, results, _ = swept
    for name in ("fig7", "fig8", "fig11", "fig14"):
        rows = results[name].table.rows
        checked = [r for r in rows if r["status"] == "ok" and r.get("correct") is not None]
        assert checked and all(r["correct"] == 1 for r in checked
                               if not r["series"].startswith("Set")), name


def test_nigam_safe_schemes_always_correct(swept):
    _, results, _ = swept
    table = results["nigam"].table
    for ex in NIGAM_EXAMPLES:
        for d in ("fifo", "random", "adversarial"):
            for series in ("Derivation sets", "Absorption provenance"):
                assert table.mean(series, d, "correct_pct", ex) == 100.0, (series, ex, d)


# --------------------------------------------------------------------------- cache and budget


def test_a_cached_run_is_not_recomputed(swept, tmp_path):
    out, results, _ = swept
    before = {r["key"]: r for r in results["fig13"].records}
    again = run_experiment("fig13", TINY, tmp_path / "fig13", cache=out / "cache",
                           executor="inline", progress=False)
    after = {r["key"]: r for r in again.records}
    assert after.keys() == before.keys()
    for key, rec in after.items():
        assert (rec["started"], rec["pid"], rec["wall_s"]) == \
            (before[key]["started"], before[key]["pid"], before[key]["wall_s"])
    # a new seed is a new run
    spec = [i.spec for i in EXPERIMENTS["fig13"].plan(TINY)][0]
    cache = Cache(out / "cache")
    new = RunSpec.from_dict({**spec.to_dict(), "seed": 99})
    assert cache.get(spec) is not None and cache.get(new) is None
    record = run_all([new], cache, executor="inline", progress=False)[new]
    assert record["spec"]["seed"] == 99 and cache.get(new)["key"] == record["key"]


def test_a_run_made_by_other_code_than_its_key_names_is_not_reused(swept, tmp_path):
    """A sweep computes its keys with the code version at its start; a run's process reads
    the source again. A run made after an edit to the engine was cached under the key of
    the code before it, and reused once the edit was undone: a sweep of the clean tree
    reported a simulated convergence time 5 times the true one (per-update time edited
    during the sweep), the report naming only the edited version. Such a record is now
    rerun, and the report says which runs ran other code than their keys name."""
    spec = [i.spec for i in EXPERIMENTS["fig13"].plan(TINY)][0]
    cache = Cache(tmp_path / "cache", version="git 0000000")   # the version at the start
    made = run_all([spec], cache, executor="inline", progress=False)[spec]
    assert made["key_version"] == "git 0000000" != made["code_version"]
    assert cache.get(spec) is None
    stale = json.loads(cache.path(spec).read_text())
    cache.path(spec).write_text(json.dumps({**stale, "pid": 0}))
    again = run_all([spec], cache, executor="inline", progress=False)[spec]
    assert again["pid"] == os.getpid()                  # made again, not the cached one
    # the report names the runs that ran other code than their keys
    out, _, _ = swept
    runs = json.loads((out / "fig13" / "runs.json").read_text())
    for r in runs[:2]:
        r["key_version"] = "git 0000000"
    (tmp_path / "fig13").mkdir()
    (tmp_path / "fig13" / "runs.json").write_text(json.dumps(runs))
    report = run_experiment("fig13", TINY, tmp_path / "fig13", report_only=True).report
    assert ("**2 runs ran other code than the version git 0000000 of their cache keys**"
            in report.read_text())
    runs[0]["key_version"] = runs[0]["code_version"]
    (tmp_path / "fig13" / "runs.json").write_text(json.dumps(runs))
    report = run_experiment("fig13", TINY, tmp_path / "fig13", report_only=True).report
    assert "**1 run ran other code than the version git 0000000 of its cache key**" in \
        report.read_text()


def test_outside_git_an_edit_to_the_engine_is_a_new_code_version(tmp_path):
    """Outside a git checkout (an unpacked archive, an installed package) the code version
    was the package version alone ("psn 0.1.0"), so an edit to the engine reused every
    cached run of the code before it."""
    import shutil
    import subprocess
    import sys
    from psn.experiment.runs import RUN_CODE
    for part in {p.split("/")[0] for p in RUN_CODE}:
        shutil.copytree(ROOT / part, tmp_path / part,
                        ignore=shutil.ignore_patterns("__pycache__"))

    def version() -> str:
        return subprocess.run(
            [sys.executable, "-c", "from psn.experiment.runs import code_version; "
             "print(code_version())"], cwd=tmp_path, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(tmp_path)}, check=True).stdout.strip()

    before = version()
    assert before.startswith("psn ") and before == version()
    with open(tmp_path / "engine" / "options.py", "a") as f:
        f.write("# an edit\n")
    assert version() != before


def test_a_pool_process_freezes_what_its_run_left_and_records_the_same(swept, tmp_path):
    """The local executor's processes exit after one run each, and freeze what the run left
    first, so that the interpreter's last collection does not traverse it; the record is
    the one the run makes inline (all but the times)."""
    import gc
    from psn.experiment.executor import _execute_in_pool
    out, _, _ = swept
    spec = [i.spec for i in EXPERIMENTS["fig13"].plan(TINY)][0]
    inline = Cache(out / "cache").get(spec)
    was = gc.get_freeze_count()
    try:
        here = _execute_in_pool(spec.to_dict(), inline["key_version"])
        assert gc.get_freeze_count() > was
    finally:
        gc.unfreeze()
    pooled = run_all([spec], Cache(tmp_path / "cache", inline["key_version"]),
                     executor="local", jobs=1, progress=False)[spec]
    untimed = [f for f in STEP_FIELDS if f != "wall_time"]
    for rec in (here, pooled):
        assert rec["key"] == inline["key"] and rec["status"] == inline["status"] == "ok"
        assert [[s[f] for f in untimed] for s in rec["steps"]] == \
            [[s[f] for f in untimed] for s in inline["steps"]]
    assert pooled["pid"] != here["pid"] == os.getpid()


def test_ray_runs_each_run_in_a_process_of_its_own(tmp_path):
    """The local executor runs each run in a fresh process, so that its memory ceiling (the
    resident size of its process) measures that run alone; Ray reused its workers: the 12
    runs of `psn experiment fig14 --tiny --executor ray` ran in 2 processes, each run's
    memory holding what the runs before it left."""
    specs = [i.spec for i in EXPERIMENTS["fig14"].plan(TINY)][:4]
    records = run_all(specs, Cache(tmp_path / "cache"), executor="ray", progress=False)
    assert len({r["pid"] for r in records.values()}) == 4
    assert all(r["status"] == "ok" for r in records.values())


def test_report_only_rebuilds_from_runs_json(swept, tmp_path):
    out, results, _ = swept
    again = run_experiment("fig13", TINY, out / "fig13", report_only=True)
    assert [c.verdict for c in again.claims] == [c.verdict for c in results["fig13"].claims]
    assert "- Command: `psn experiment all --tiny`" in again.report.read_text()
    with pytest.raises(psn.PSNError, match="empty holds no runs.json: no run") as err:
        run_experiment("fig13", TINY, tmp_path / "empty", report_only=True)
    assert "Errno" not in err.value.render()
    for text in ('{"a": 1}', '[{"a": 1}]', '[{"spec": {"nonsense": 1}}]'):
        (tmp_path / "damaged").mkdir(exist_ok=True)
        (tmp_path / "damaged" / "runs.json").write_text(text)
        with pytest.raises(psn.PSNError, match="run 1 is not a run record"):
            run_experiment("fig13", TINY, tmp_path / "damaged", report_only=True)
    with pytest.raises(psn.PSNError, match="not in"):
        run_experiment("fig13", make_config("tiny", seed=5), out / "fig13", report_only=True)


def test_report_only_takes_the_memory_budget_of_the_runs(swept, tmp_path, capsys):
    """The default memory budget per run is a share of the machine's memory divided by
    --jobs, which --report-only refuses: a report made with `--jobs 4` here (2.94 GiB per
    run), or on a machine with less memory, could not be rebuilt ("12 of the experiment's
    12 runs are not in runs.json"), whose hint, to use the options of the run, asked for
    the --jobs it refuses. Without --max-memory it takes the runs' budget."""
    out, _, _ = swept
    runs = json.loads((out / "fig13" / "runs.json").read_text())
    for r in runs:
        r["spec"]["memory_budget"] = 3 << 30
    (tmp_path / "fig13").mkdir()
    (tmp_path / "fig13" / "runs.json").write_text(json.dumps(runs))
    argv = ["experiment", "fig13", "--tiny", "--report-only", "-o", str(tmp_path / "fig13")]
    assert psn_main(argv) == 0
    assert "budget per run 10.0 s and 3.00 GiB" in (tmp_path / "fig13" / "report.md").read_text()
    capsys.readouterr()
    # a budget given is the one looked for
    assert psn_main([*argv, "--max-memory", "2G"]) == 2
    assert "12 of the experiment's 12 runs are not in" in capsys.readouterr().err


def test_a_nigam_report_names_the_delivery_seeds_its_runs_tried(tmp_path, capsys):
    """Repetition r of nigam tries the delivery seeds from --seed + r * T on (T trials per
    run); the report said "seeds 0..2" for the quick scale's 3 repetitions, which tried
    seeds 0 to 29 (docs/experiments/quick/nigam/report.md)."""
    out = tmp_path / "nigam"
    out.mkdir()
    (out / "runs.json").write_bytes((ROOT / "docs/experiments/quick/nigam/runs.json")
                                    .read_bytes())
    assert psn_main(["experiment", "nigam", "--quick", "--report-only", "-o", str(out)]) == 0
    assert "- Scale: quick: 3 repetitions (seeds 0..29), budget per run 60.0 s" in \
        (out / "report.md").read_text()


def test_report_only_keeps_the_runs_it_does_not_use(tmp_path):
    """--report-only wrote runs.json anew from the runs it used: `psn experiment fig14
    --report-only --runs 3` over docs/experiments/full/fig14 (10 repetitions, no cache
    beside it) left 18 of its 60 run records, and the 10-repetition report could not be
    rebuilt again ("42 of the experiment's 60 runs are not in runs.json")."""
    out = tmp_path / "fig14"
    out.mkdir()
    published = (ROOT / "docs/experiments/full/fig14/runs.json").read_bytes()
    (out / "runs.json").write_bytes(published)
    argv = ["experiment", "fig14", "--report-only", "-o", str(out)]
    assert psn_main([*argv, "--runs", "3"]) == 0
    assert (out / "runs.json").read_bytes() == published
    assert "- Runs: 18," in (out / "report.md").read_text()
    assert psn_main(argv) == 0
    assert "- Runs: 60," in (out / "report.md").read_text()


def test_a_rebuilt_report_names_the_command_that_rebuilt_it(tmp_path):
    """--report-only kept the runs' command as the report's only command: a report rebuilt
    from 3 of the 10 repetitions named `psn experiment fig14 --jobs 2 ...`, which made 10,
    beside "Scale: full: 3 repetitions"."""
    out = tmp_path / "fig14"
    shutil.copytree(ROOT / "docs/experiments/full/fig14", out)
    runs_command = re.search(r"- Command: `(.*)`", (out / "report.md").read_text()).group(1)
    rebuild = "psn experiment fig14 --report-only --runs 3"
    report = run_experiment("fig14", make_config("full", runs=3), out, report_only=True,
                            command=rebuild).report.read_text()
    assert (f"- Command: `{runs_command}`\n- Report rebuilt from these runs' records by "
            f"`{rebuild}`\n") in report
    again = run_experiment("fig14", make_config("full"), out, report_only=True,
                           command=runs_command).report.read_text()
    assert f"- Command: `{runs_command}`\n- Date: " in again     # the runs' own command


def test_report_only_refuses_two_records_of_one_run(tmp_path, capsys):
    """Two runs.json put together held two records of the same run; --report-only used the
    last one without a word (the report's numbers then depended on the order)."""
    runs = json.loads((ROOT / "docs/experiments/quick/fig14/runs.json").read_text())
    other = json.loads(json.dumps(runs[4]))
    other["steps"][0]["bytes_sent"] += 1000
    out = tmp_path / "fig14"
    out.mkdir()
    (out / "runs.json").write_text(json.dumps([*runs, runs[4], other]))
    argv = ["experiment", "fig14", "--quick", "--report-only", "-o", str(out)]
    assert psn_main(argv) == 2
    assert capsys.readouterr().err.startswith(
        f"error: {out / 'runs.json'}: runs 5 and 20 are two different records of the same "
        f"run (same parameters)\nhint: keep one of them")
    (out / "runs.json").write_text(json.dumps([*runs, runs[4]]))     # the same twice: fine
    assert psn_main(argv) == 0


@pytest.mark.parametrize("damage, what", [
    (lambda r: r["steps"][0].update(bytes_sent="x"), "the 'bytes_sent' of its step 0 is a "
     "JSON string \"x\""),
    (lambda r: r["steps"][0].update(bytes_sent=-1e308), "is a JSON number -1e+308"),
    (lambda r: r["steps"][0].pop("tuples"), "its step 0 is not a step's figures"),
    (lambda r: r.update(steps=[5]), "its step 0 is not a step's figures"),
    (lambda r: r.update(status=None), "its 'status' is a JSON null"),
    (lambda r: r.update(status="done"), "its status 'done' is not ok, dnf or refused"),
    (lambda r: r.pop("key"), "it has no 'key'"),
    (lambda r: r.update(topology={"nodes": "100"}), "its 'topology' has no whole number"),
    (lambda r: r.update(wall_s=None), "its 'wall_s' is a JSON null"),
    (lambda r: r.update(code_version=None), "its 'code_version' is a JSON null"),
    (lambda r: r.update(started=None), "its 'started' is a JSON null"),
    (lambda r: r["topology"].update(links="193"), "its 'topology' has no whole number"),
    (lambda r: r["topology"].update(nodes=-100), "its 'topology' has no whole number")])
def test_report_only_refuses_a_damaged_run_record(tmp_path, capsys, damage, what):
    """Each was a traceback from deep in the report (KeyError, TypeError, an
    OverflowError in the summary's variance); the cache took such a record as a run. A
    null wall_s or code_version (which execute_run never writes) passed the check and
    ended in a TypeError of the report's sums and sorting; a topology's links of "193"
    made the rows' link_tuples "193193", and nodes of -100 a negative state per node."""
    runs = json.loads((ROOT / "docs/experiments/quick/fig7/runs.json").read_text())
    damage(runs[1])
    out = tmp_path / "fig7"
    out.mkdir()
    (out / "runs.json").write_text(json.dumps(runs))
    assert psn_main(["experiment", "fig7", "--quick", "--report-only", "--output", str(out),
                     "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {out / 'runs.json'}: run 2 is not a run record as psn "
                          f"experiment writes it: ") and what in err
    spec = RunSpec.from_dict(runs[1]["spec"])
    cache = Cache(tmp_path / "cache", runs[1]["key_version"])
    cache.put(spec, runs[1])
    assert cache.get(spec) is None          # a damaged file counts as missing


def test_every_published_run_record_is_one_the_report_reads():
    from psn.experiment.runs import record_problem
    for path in (ROOT / "docs/experiments").glob("*/*/runs.json"):
        for i, record in enumerate(json.loads(path.read_text())):
            assert record_problem(record) is None, (path, i)


def test_a_run_over_budget_is_in_the_data(tmp_path):
    cfg = make_config("tiny", runs=2, time_budget=0.001)
    res = run_experiment("fig7", cfg, tmp_path / "fig7", executor="inline", progress=False)
    _, rows = _csv(tmp_path / "fig7" / "rows.csv")
    dnf = [r for r in rows if r["status"] == "dnf"]
    assert dnf and all("time budget" in r["reason"] for r in dnf)
    assert {r["series"] for r in dnf} >= {"Derivation sets"}
    assert all(r["comm_MB"] == "" for r in dnf)
    _, summary = _csv(tmp_path / "fig7" / "summary.csv")
    assert any(r["status"] == "did not finish" and int(r["n_dnf"]) == 2 for r in summary)
    report = res.report.read_text()
    assert "| Derivation sets | did not finish |" in report
    import matplotlib.image
    assert matplotlib.image.imread(tmp_path / "fig7" / "fig7-communication.png").ndim == 3


def test_a_stopped_run_says_why_once_and_a_fault_is_no_stop():
    """A worked example's run over its time budget was recorded with the reason "time
    budget: error: over the time budget of 0.01 s" (the error's rendered text, not its
    message), unlike every other run. And any error of the engine that mentioned
    quiescence counted as a run without quiescence ("did not finish", data): the engine's
    "invariant violated: ... at quiescence" and an error whose hint said the word. They
    are faults, and stop the sweep."""
    from ndlog.errors import EvaluationError
    from engine.network import NotConvergedError
    from psn.experiment.runs import _stop_reason
    spec = RunSpec(kind="nigam", program="cycle", topology=None, workload="",
                   annotation="counting", unsafe=True, trials=50, time_budget=0.01)
    record = execute_run(spec.to_dict())
    assert record["status"] == "dnf"
    assert record["reason"] == "time budget: over the time budget of 0.01 s"
    assert _stop_reason(EvaluationError("no quiescence after 5 deliveries")) == \
        ("dnf", "no quiescence: no quiescence after 5 deliveries")
    assert _stop_reason(NotConvergedError(9, None))[0] == "dnf"
    for fault in (EvaluationError("engine invariant violated: relative provenance kept an "
                                  "edge of deleted fact p(1) at quiescence"),
                  EvaluationError("a deletion lost its occurrence", hint="at quiescence")):
        with pytest.raises(EvaluationError) as err:
            _stop_reason(fault)
        assert err.value is fault


def test_a_worked_example_run_stopped_partway_is_listed_as_not_finished():
    """A run of a worked example that stopped on its budget after some of its trials keeps
    them: its point counts them. The report's "Runs that did not finish" left it out and
    could say "Every run finished within its budget" (the nigam experiment at the quick
    scale with a 0.03 s budget: 31 runs stopped partway, 6 listed), while the command
    counted it as not finished."""
    from psn.experiment.report import _dnf_section
    from psn.experiment.table import SummaryTable
    exp = EXPERIMENTS["nigam"]
    item = exp.plan(make_config("quick", runs=1))[0]
    record = execute_run(item.spec.to_dict())
    assert record["status"] == "ok" and len(record["trials"]) == 10
    record.update(status="dnf", reason="time budget: over the time budget of 60 s",
                  trials=record["trials"][:3])
    rows = exp.rows(item, record)
    assert rows[0]["status"] == "ok" and rows[0]["trials"] == 3
    text = "\n".join(_dnf_section(SummaryTable(rows, exp.metric_names())))
    assert "Every run finished" not in text
    assert (f"| {item.series} | stopped partway, after 3 of 10 trials (the point counts "
            f"those) | {item.info['x']} | 0 | time budget: over the time budget of 60 s |"
            in text)


def test_an_alarm_that_lands_in_a_destructor_rings_again(capfd):
    """The time budget's alarm can land where Python cannot raise (a destructor): nothing
    is printed as an ignored exception, and the alarm rings again where it stops the run.
    Afterwards the unraisable hook is the one before. The alarm is blocked until the
    destructor runs: rung before it (the test stalled for its 0.02 s on a loaded machine),
    it stopped the block there, and the destructor never ran."""
    import signal
    import sys
    import time
    from psn.experiment.runs import TimeBudgetExceeded, alarm

    first = [True]

    class Slow:
        def __del__(self):
            if first:
                first.clear()
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
                while time.monotonic() < start + 60.0:   # until the alarm rings, here
                    pass

    hook = sys.unraisablehook
    start = time.monotonic()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    try:
        with pytest.raises(TimeBudgetExceeded, match="time budget of 0.02 s"):
            with alarm(0.02):
                Slow()                  # the alarm rings in its destructor
                while time.monotonic() < start + 60.0:   # and again here
                    pass
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
    assert not first
    assert "Exception ignored" not in capfd.readouterr().err
    assert sys.unraisablehook is hook


# --------------------------------------------------------------------------- parts


def test_liu_presets_have_the_papers_link_counts():
    t = topologies.make("liu100")
    assert t.n == 100 and t.is_connected() and 170 <= t.num_links <= 230
    dense = topologies.make("liu-dense", nodes=200, seed=1)
    sparse = topologies.make("liu-sparse", nodes=200, seed=1)
    assert dense.n == sparse.n == 200 and dense.is_connected() and sparse.is_connected()
    assert 1.8 <= dense.num_links / dense.n <= 2.3       # 4 link tuples per node
    assert 1.0 <= sparse.num_links / sparse.n <= 1.2     # about half as many
    assert topologies.make("ts100").num_links == topologies.generate(topologies.TS100).num_links


def test_embedded_programs_are_the_reference_programs():
    def rules(text: str) -> list[str]:
        from ndlog.printer import format_rule
        return [format_rule(r) for r in psn.parse(text).rules]
    assert rules(PROGRAMS["reachable"]) == rules((ROOT / "examples/reachable.ndl").read_text())
    assert rules(PROGRAMS["shortest_path"]) == \
        rules((ROOT / "examples/shortest_path.ndl").read_text())
    assert rules(PROGRAMS["region"]) == \
        rules((ROOT / "tests/programs/region/program.ndl").read_text()) == \
        rules((ROOT / "examples/region.ndl").read_text())


def test_cli_lists_runs_and_rejects(tmp_path, capsys):
    assert psn_main(["experiment", "list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in EXPERIMENTS)
    assert psn_main(["experiment", "fig99"]) == 2
    assert "unknown experiment 'fig99'" in capsys.readouterr().err
    assert psn_main(["experiment", "fig7", "--runs", "0", "--tiny"]) == 2
    out = tmp_path / "f13"
    assert psn_main(["experiment", "fig13", "--tiny", "--executor", "inline",
                     "--no-progress", "--output", str(out)]) == 0
    assert "fig13:" in capsys.readouterr().out
    assert (out / "report.md").exists() and (out / "fig13-communication.png").exists()


def test_unfinished_points_say_which_budget_stopped_them():
    from psn.experiment.table import Point
    p = Point("No AggSel", "dense", "", "comm_MB", [], 3, 3,
              ["memory budget: the run used 4.6 GiB, over its --max-memory of 4.00 GiB",
               "time budget: over the time budget of 300 s",
               "memory budget: the run used 4.5 GiB, over its --max-memory of 4.00 GiB"])
    assert p.stopped_by == "the memory budget in 2, the time budget in 1"
    assert not p.finished and p.status == "did not finish"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "0", "-5", "2e6", "soon"])
def test_cli_refuses_a_time_budget_that_is_not_a_finite_positive_number(tmp_path, capsys,
                                                                          value):
    """Such a budget used to reach every run, which failed setting its alarm inside the
    worker pool (ValueError: Invalid value NaN; OverflowError: timestamp out of range)."""
    out = tmp_path / "out"
    assert psn_main(["experiment", "fig7", "--tiny", "--executor", "inline",
                     "--no-progress", f"--time-budget={value}", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--time-budget" in err and value in err and "Traceback" not in err
    assert not out.exists()
    with pytest.raises(psn.PSNError, match="--time-budget"):
        make_config("tiny", time_budget=float("nan"))


def test_time_budget_takes_seconds_with_a_unit(tmp_path):
    from argparse import Namespace
    from psn.cli.experiment_cmd import _time_budget
    assert _time_budget(Namespace(time_budget="90s")) == 90.0
    assert _time_budget(Namespace(time_budget="2.5")) == 2.5
    assert _time_budget(Namespace(time_budget=None)) is None


@pytest.mark.parametrize("size", ["1K", "63M", "nan", "inf"])
def test_cli_refuses_a_max_memory_below_what_a_run_needs(tmp_path, capsys, size):
    """psn run's rule (engine.guards.parse_memory): a ceiling below what the process
    already uses would stop every run before it measured anything."""
    out = tmp_path / "out"
    assert psn_main(["experiment", "fig7", "--tiny", "--executor", "inline",
                     "--no-progress", "--max-memory", size, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--max-memory '{size}'" in err and "Traceback" not in err
    assert not out.exists()
    with pytest.raises(psn.PSNError, match="below the minimum of 64.0 MiB"):
        make_config("tiny", memory_budget=1024)


def test_cli_refuses_an_output_directory_in_a_missing_directory(tmp_path, capsys):
    """As every other command refuses an output file there: the output directory itself
    is created, its parent is not."""
    missing = tmp_path / "no" / "such"
    assert psn_main(["experiment", "fig7", "--tiny", "--executor", "inline",
                     "--no-progress", "-o", str(missing / "fig7")]) == 2
    err = capsys.readouterr().err
    assert f"'{missing / 'fig7'}'" in err and "does not exist" in err
    assert "Traceback" not in err and not (tmp_path / "no").exists()
    assert psn_main(["experiment", "all", "--tiny", "--executor", "inline",
                     "--no-progress", "-o", str(missing)]) == 2
    assert "does not exist" in capsys.readouterr().err and not (tmp_path / "no").exists()
    assert psn_main(["experiment", "fig7", "--tiny", "--executor", "inline",
                     "--no-progress", "-o", str(tmp_path / "out"),
                     "--cache", str(missing / "cache")]) == 2
    assert "the run cache" in capsys.readouterr().err
    assert not (tmp_path / "no").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("options, message", [
    (["-o", "afile"], "error: the experiment output 'afile' is a file, not a directory\n"
     "hint: give a directory (--output)"),
    (["-o", "afile", "--report-only"], "error: the experiment output 'afile' is a file, not "
     "a directory\n"),
    (["-o", "out", "--cache", "afile"], "error: the run cache 'afile' is a file, not a "
     "directory\nhint: give a directory (--cache)"),
    (["-o", ""], "error: the experiment output must be a path, got an empty one\n"),
    (["-o", "out", "--cache", ""], "error: the run cache must be a path, got an empty one\n"),
    (["-o", "out", "--jobs=-1"], "error: jobs (--jobs) must be at least 1, not -1\n"),
    (["-o", "out", "--runs=-1"], "error: runs (--runs) must be at least 1, not -1\n"),
    (["-o", "dir", "--report-only"], "error: cannot read dir/runs.json: Is a directory\n")])
def test_cli_names_a_wrong_output_or_count(tmp_path, capsys, monkeypatch, options, message):
    """A file given as --output or --cache was "cannot write the experiment output
    'afile': File exists", and with --report-only "cannot read afile/runs.json: [Errno 20]
    Not a directory: 'afile/runs.json'"; an empty --output or --cache was taken for the
    default (the message then named experiments/fig7); --jobs -1 and --runs -1 were "a
    whole number >= 0", where 0 is refused as well."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("")
    (tmp_path / "dir" / "runs.json").mkdir(parents=True)
    assert psn_main(["experiment", "fig7", "--tiny", "--no-progress", *options]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and "Errno" not in err and "Traceback" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "experiments").exists()


# --------------------------------------------------------------------------- verdicts


MEMORY_STOP = "memory budget: the run used 47.2 MiB, over its --max-memory of 0.0 MiB"
TIME_STOP = "time budget: over the time budget of {:g} s"


def _record(spec, status="ok", reason=None, steps=(), trials=()):
    """A run record as psn.experiment.runs.execute_run makes it (what the claims read)."""
    return {"key": spec.key("test"), "spec": spec.to_dict(), "status": status,
            "reason": reason, "steps": list(steps), "trials": list(trials),
            "topology": {"nodes": 5, "links": 6}}


def _step(i, scale=1.0):
    """A completed step of a simulated run; ``scale`` multiplies its costs."""
    return {"index": i, "bytes_sent": int(1e5 * scale), "updates_sent": int(100 * scale),
            "sim_time": 0.1 * scale, "wall_time": 0.01 * scale, "tuples": 20,
            "provenance_per_tuple": 10.0 * scale, "state_bytes": int(1e4 * scale),
            "check": True}


def _claims(name, cfg, record_of):
    """The claims of experiment ``name`` over the records ``record_of(item)`` makes."""
    from psn.experiment.table import SummaryTable
    exp = EXPERIMENTS[name]
    rows = [r for item in exp.plan(cfg) for r in exp.rows(item, record_of(item))]
    return {c.claim: c for c in exp.claims(SummaryTable(rows, exp.metric_names()), cfg)}


@pytest.mark.parametrize("name", list(EXPERIMENTS))
@pytest.mark.parametrize("reason", [MEMORY_STOP, "no quiescence: after 20,000 deliveries",
                                    "refused"])
def test_runs_stopped_by_a_guard_are_no_evidence_for_any_claim(name, reason):
    """Every run stopped on memory, without quiescence, or refused: nothing was measured,
    so no claim is judged either way (before, fig7's "Relative Eager did not converge
    within 5 minutes" was 'reproduced' by runs that stopped on memory at once)."""
    status = "refused" if reason == "refused" else "dnf"
    claims = _claims(name, TINY, lambda item: _record(item.spec, status, reason))
    assert claims and {c.verdict for c in claims.values()} == {"not tested"}, \
        [(c.claim, c.verdict, c.evidence) for c in claims.values()]


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_runs_out_of_a_short_time_budget_reproduce_no_claim(name):
    """Every run out of a 10 s budget: that can refute a claim that something is fast
    (Fig. 11's Lazy Dense under 5 s), but shows nothing that needs 5 minutes."""
    claims = _claims(name, TINY, lambda item: _record(item.spec, "dnf", TIME_STOP.format(10)))
    assert {c.verdict for c in claims.values()} <= {"not tested", "not reproduced"}, \
        [(c.claim, c.verdict, c.evidence) for c in claims.values()]


RELATIVE_EAGER_CLAIM = ("Relative Eager did not converge within 5 minutes for insertion "
                        "ratios of 0.75 or higher.")


@pytest.mark.parametrize("budget,reason,expected", [
    (300.0, TIME_STOP.format(300), "reproduced"),       # the stop the claim is about
    (60.0, TIME_STOP.format(60), "not tested"),         # might have finished in 5 minutes
    (300.0, MEMORY_STOP, "not tested"),                 # says nothing about time
    (300.0, None, "not reproduced"),                    # finished
])
def test_relative_eager_verdict_counts_only_a_five_minute_time_budget(budget, reason,
                                                                      expected):
    from psn.experiment.base import RELATIVE_EAGER, Config
    exp = EXPERIMENTS["fig7"]
    if RELATIVE_EAGER.label not in [s.label for s in exp.series()]:
        pytest.skip("relative provenance is not registered")
    cfg = Config("tiny", 2, 0, budget, 4 << 30)

    def record(item):
        if item.series == RELATIVE_EAGER.label and reason is not None:
            return _record(item.spec, "dnf", reason, [_step(0), _step(1)])
        return _record(item.spec, steps=[_step(i) for i in range(4)])
    claim = _claims("fig7", cfg, record)[RELATIVE_EAGER_CLAIM]
    assert claim.verdict == expected, claim.evidence
    if expected == "not tested":
        assert "not determined" in claim.evidence


def test_a_dearer_series_counts_only_when_a_cost_budget_stopped_it():
    """Absorption Eager stopped by memory where Absorption Lazy finished under the same
    budgets costs more; refused, it decides nothing."""
    from psn.experiment.base import EAGER
    claim = "Eager propagation of absorption provenance (Absorption Eager) is costly"

    def verdict_when(status, reason):
        def record(item):
            if item.series == EAGER.label:
                return _record(item.spec, status, reason)
            return _record(item.spec, steps=[_step(i) for i in range(4)])
        found = [c for t, c in _claims("fig7", TINY, record).items() if t.startswith(claim)]
        return found[0]
    assert verdict_when("dnf", MEMORY_STOP).verdict == "reproduced"
    refused = verdict_when("refused", "set semantics with deletions")
    assert refused.verdict == "not tested" and "not compared" in refused.evidence


@pytest.mark.parametrize("budget,reason,expected", [
    (300.0, TIME_STOP.format(300), "reproduced"),
    (60.0, TIME_STOP.format(60), "not tested"),
    (300.0, MEMORY_STOP, "not tested"),
    (300.0, None, "not reproduced"),
])
def test_no_aggsel_verdict_counts_only_a_five_minute_time_budget(budget, reason, expected):
    from psn.experiment.base import Config
    cfg = Config("tiny", 2, 0, budget, 4 << 30)

    def record(item):
        if item.series == "No AggSel" and reason is not None:
            return _record(item.spec, "dnf", reason)
        return _record(item.spec, steps=[_step(0)])
    claims = _claims("fig14", cfg, record)
    found = [c for t, c in claims.items() if t.startswith("Without aggregate selection")]
    assert found[0].verdict == expected, found[0].evidence


def test_cli_fails_when_every_run_stopped_before_measuring(tmp_path, capsys):
    """A real sweep whose every run runs out of its (tiny) time budget at once: the claims
    are 'not tested', the report says nothing was measured, and the command says so and
    exits 1, not 0."""
    out = tmp_path / "fig7"
    assert psn_main(["experiment", "fig7", "--tiny", "--runs", "1", "--time-budget", "1e-6",
                     "--executor", "inline", "--no-progress", "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert "claims: 4 not tested" in captured.out and "reproduced" not in captured.out
    assert "nothing was measured" in captured.err and "the time budget in 7" in captured.err
    report = (out / "report.md").read_text()
    assert "**Nothing was measured**" in report and "**reproduced**" not in report


@pytest.mark.parametrize("options, message, hint", [
    (["--executor", "inline", "--jobs", "2"],
     "--jobs 2 sets the local processes of --executor local, and --executor inline starts "
     "none", "leave out --jobs, or use --executor local"),
    (["--executor", "ray", "--jobs", "3"],
     "--jobs 3 sets the local processes of --executor local, and --executor ray starts none",
     "leave out --jobs, or use --executor local"),
    (["--report-only", "--fresh"],
     "--fresh does not apply to --report-only, which runs nothing", "leave out --fresh, or "
     "--report-only"),
    (["--report-only", "--jobs", "2", "--cache", "c"],
     "--jobs 2 does not apply to --report-only", "leave out --jobs 2 and --cache, or "
     "--report-only")])
def test_cli_refuses_options_that_would_have_no_effect(tmp_path, capsys, options, message,
                                                       hint):
    """--jobs beside --executor inline or ray, and the options of running beside
    --report-only, were ignored without a word (inline ran one run after another)."""
    out = tmp_path / "out"
    assert psn_main(["experiment", "fig7", "--tiny", "--no-progress", "-o", str(out),
                     *options]) == 2
    err = capsys.readouterr().err
    assert f"error: {message}" in err and f"hint: {hint}" in err
    assert not out.exists()


@pytest.mark.parametrize("call, what", [
    (lambda: make_config("tiny", runs="2"), r"runs \(--runs\) is a whole number >= 0, got '2'"),
    (lambda: make_config("tiny", runs=2.5), r"runs \(--runs\) is a whole number"),
    (lambda: make_config({"tiny": 1}), r"unknown scale \{'tiny': 1\}"),
    (lambda: make_config("tiny", seed="1"), "seed is an integer, got str '1'"),
    (lambda: make_config("tiny", seed=True), "seed is an integer, got bool True"),
    (lambda: make_config("tiny", topology_seed=0.5), "topology_seed is an integer, got float"),
    (lambda: get_experiment(["fig7"]), r"unknown experiment \['fig7'\]"),
    (lambda: make_config("tiny", memory_budget=(1, 2)), r"the memory budget per run in bytes "
                                                        r"\(memory_budget\) is a whole number"),
    (lambda: make_config("tiny", memory_budget=2.0 ** 31), "memory_budget.* is a whole number"),
    (lambda: Cache(["out"]), r"the run cache must be a path \(a str or a pathlib.Path\)"),
    (lambda: Cache("out", version=["v"]), "the run cache's version is a string, got list")])
def test_config_and_experiment_arguments_are_checked(call, what):
    """make_config(runs="2") and make_config({...}) ended in TypeErrors from a comparison
    and a dict lookup, get_experiment(["fig7"]) in 'unhashable type: list', and a seed of
    "1", True or 0.5 was kept in the Config (and passed to every run); a memory budget of
    (1, 2) was a TypeError in its range check, Cache(["out"]) one from pathlib, and
    Cache(version=["v"]) wrote the list's repr into every key."""
    with pytest.raises(psn.InputError, match=what):
        call()


@pytest.mark.parametrize("call, what", [
    (lambda: summarize("123"), "values are a list of numbers, got str '123'"),
    (lambda: summarize(None), "values are a list of numbers, got NoneType"),
    (lambda: summarize(["1.5", 2.0]), "values are numbers, got str '1.5'"),
    (lambda: summarize([1.0, 2.0], level=2), r"level must be a number in \(0, 1\), not 2"),
    (lambda: summarize([1.0, 2.0], level="0.9"), r"level must be a number in \(0, 1\)"),
    (lambda: t_quantile("0.975", 3), r"p must be a number in \(0, 1\), not '0.975'"),
    (lambda: t_quantile(0.975, False), "degrees of freedom must be a finite number above 0"),
    (lambda: t_quantile(1.5, 3), r"p must be a number in \(0, 1\), not 1.5")])
def test_the_statistics_name_an_argument_of_the_wrong_kind(call, what):
    """summarize("123") summarized the characters 1, 2 and 3, summarize(["1.5"]) took the
    string as a number, and the rest ended in TypeErrors from a comparison or ValueErrors
    ('p must be in (0, 1)') instead of the InputError of every other argument."""
    with pytest.raises(psn.InputError, match=what):
        call()


@pytest.mark.parametrize("call, what", [
    (lambda out: run_experiment("fig7", TINY, 3), "the experiment output must be a path"),
    (lambda out: run_experiment("fig7", {"scale": "tiny"}, out), "cfg is a psn.experiment."
                                                                 "Config"),
    (lambda out: run_experiment("fig7", TINY, out, executor="inline", jobs="2"),
     "jobs (--jobs) is a whole number >= 0, got '2'"),
    (lambda out: run_experiment("fig7", TINY, out, executor="inline", fresh="no"),
     "fresh must be True or False, not 'no'"),
    (lambda out: run_experiment("fig7", TINY, out, executor="inline", progress="no"),
     "progress must be True or False or None, not 'no'"),
    (lambda out: run_experiment("fig7", TINY, out, executor="bogus"), "unknown executor"),
    (lambda out: run_experiment("fig7", TINY, out, report_only="no"),
     "report_only must be True or False"),
    (lambda out: run_experiment("fig7", TINY, out, cache=3), "the run cache must be a path"),
    (lambda out: run_experiments(3, TINY, out), "names are a list of experiment names"),
    (lambda out: run_experiments("fig7", TINY, out), "names are a list of experiment names"),
    (lambda out: run_experiments(["fig7", "bogus"], TINY, out), "unknown experiment 'bogus'"),
    (lambda out: run_all("abc", Cache(out / "c")), "specs are a list of RunSpec, got str"),
    (lambda out: run_all([RunSpec()], "cache"), "cache is a psn.experiment.Cache, got str"),
    (lambda out: run_all([RunSpec()], Cache(out / "c"), on_record=3), "on_record is a "
                                                                      "function"),
    (lambda out: execute_run("sim"), "spec is a dict of RunSpec fields"),
    (lambda out: execute_run({"kind": "sim", "workers_": 2}), "a run spec has no field "
                                                              "'workers_'"),
    (lambda out: execute_run(RunSpec().to_dict(), version=3), "version is a string")])
def test_the_experiment_functions_refuse_a_wrong_argument_before_any_output(tmp_path, call,
                                                                            what):
    """run_experiment took fresh="no" as true (every run made again) and progress="no" as
    true (a bar), jobs="2" and an output, cache or cfg of the wrong kind ended in
    TypeErrors and AttributeErrors, some after the output directory was claimed (made, with
    its lock file); run_experiments(3) and run_all("abc") failed inside, execute_run("sim")
    in a ValueError from dict()."""
    out = tmp_path / "out"
    with pytest.raises(psn.InputError, match=re.escape(what)):
        call(out)
    assert not out.exists()
