"""``psn run``: flags, burst files, JSON output, errors with file:line:col."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import psn
from ndlog.errors import InputError
from psn.cli import main

PROGRAM = """
r1 reachable(@S, D) :- link(@S, D).
r2 reachable(@S, D) :- link(@S, Z), reachable(@Z, D).
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "p.ndl").write_text(PROGRAM)
    (tmp_path / "f.ndl").write_text("link(@a, b).\nlink(@b, c).\n")
    (tmp_path / "b1.ndl").write_text("// close the cycle, cut a-b\n+link(@c, a).\n"
                                     "-link(@a, b).\nlink(@c, d).\n")
    (tmp_path / "b2.ndl").write_text("+link(@a, b).\n")
    return tmp_path


def _json(capsys):
    return json.loads(capsys.readouterr().out)


def _expected(links):
    return psn.evaluate(psn.parse(PROGRAM), {"link": links})


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("annotation", ["derivation", "set"])
@pytest.mark.parametrize("delivery", ["fifo", "random", "adversarial"])
def test_run_bursts_json(files, capsys, delivery, annotation, overlap):
    argv = ["run", str(files / "p.ndl"), "--facts", str(files / "f.ndl"),
            "--burst", str(files / "b1.ndl"), "--burst", str(files / "b2.ndl"),
            "--annotation", annotation, "--delivery", delivery, "--seed", "5",
            "--format", "json"] + (["--overlap"] if overlap else [])
    if annotation == "set":
        argv[argv.index(str(files / "b1.ndl"))] = str(files / "b2.ndl")  # insert-only
    assert main(argv) == 0
    out = _json(capsys)
    links = [("b", "c"), ("a", "b")] if annotation == "set" else \
        [("b", "c"), ("c", "a"), ("c", "d"), ("a", "b")]
    want = _expected(links)
    got = {k: {tuple(r) for r in v} for k, v in out["relations"].items()}
    assert got == want
    for key in ("updates_processed", "messages_sent", "tuples_sent", "bytes_sent"):
        assert out["metrics"][key] > 0
    assert out["relations"]["reachable"] == sorted(out["relations"]["reachable"])


def test_table_output_and_metrics_line(files, capsys):
    assert main(["run", str(files / "p.ndl"), "--facts", str(files / "f.ndl")]) == 0
    out = capsys.readouterr().out
    assert "reachable(a, c)" in out
    head = next(line for line in out.splitlines() if line.startswith("step "))
    assert head.split() == ["step", "label", "wall", "s", "msgs", "KB", "sent", "worker",
                            "msgs", "worker", "KB", "updates", "tuples", "check"]
    assert "-- 1 step: " in out and "between workers; check: not checked" in out


def test_the_table_counts_kilobytes_of_1000_bytes(capsys):
    """KB and MB are 10^3 and 10^6 bytes, as in psn experiment's reports (the table
    divided by 1,024: 4.2 KB for 4,266 bytes)."""
    program = Path(__file__).resolve().parent.parent / "examples" / "reachable.ndl"
    args = ["run", str(program), "--topology", "ring", "--topology-option", "n=8",
            "--relation", "link"]
    assert main([*args, "--format", "json"]) == 0
    sent = json.loads(capsys.readouterr().out)["steps"][0]["bytes_sent"]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("step "))
    kb = lines[head].index("KB sent") + len("KB sent")       # cells end under their name
    assert f"{sent / 1000:.1f}" != f"{sent / 1024:.1f}"
    assert lines[head + 1][:kb].split()[-1] == f"{sent / 1000:.1f}"


def test_bad_burst_line_names_file_line_col(files, capsys):
    (files / "bad.ndl").write_text("+link(@a, b).\n-link(@b c).\n")
    assert main(["run", str(files / "p.ndl"), "--burst", str(files / "bad.ndl")]) == 2
    err = capsys.readouterr().err
    assert f"{files / 'bad.ndl'}:2:" in err and "^" in err


def test_deleting_a_missing_fact_with_overlap_names_its_file_and_line(files, capsys):
    """--overlap merges the bursts into one step; the error named the fact, not its line."""
    (files / "ins.ndl").write_text("+link(@c, d).\n")
    (files / "del.ndl").write_text("// first\n+link(@c, e).\n-link(@x, y).\n")
    assert main(["run", str(files / "p.ndl"), "--facts", str(files / "f.ndl"),
                 "--burst", str(files / "ins.ndl"), "--burst", str(files / "del.ndl"),
                 "--overlap"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{files / 'del.ndl'}:3:2: error: cannot delete link(@x, y)")
    assert "    -link(@x, y).\n     ^" in err


def test_a_second_deletion_of_a_fact_is_the_one_named(files, capsys):
    """The first deletion of link(@a, b) deletes it, the second has nothing to delete:
    the error pointed at the first, in another file once --overlap merged the bursts."""
    (files / "d1.ndl").write_text("+link(@c, d).\n-link(@a, b).\n")
    (files / "d2.ndl").write_text("+link(@d, e).\n-link(@a, b).\n")
    for extra in ([], ["--overlap"]):
        assert main(["run", str(files / "p.ndl"), "--facts", str(files / "f.ndl"),
                     "--burst", str(files / "d1.ndl"), "--burst", str(files / "d2.ndl"),
                     *extra]) == 2
        assert capsys.readouterr().err.startswith(
            f"{files / 'd2.ndl'}:2:2: error: cannot delete link(@a, b)"), extra


def test_two_updates_on_one_burst_line_are_named_as_such():
    """The error listed the program grammar's tokens ('#hidden', 'materialize', ...)."""
    from engine.bursts import parse_burst
    from ndlog.errors import NDlogSyntaxError
    with pytest.raises(NDlogSyntaxError) as err:
        parse_burst("+link(@1, 2). -link(@2, 3).\n", "b.ndl")
    assert err.value.render().startswith(
        "b.ndl:1:15: syntax error: a second update on this line: one update per line")
    assert "#hidden" not in err.value.render()


@pytest.mark.parametrize("text", ["-  // then\nlink(@1, 2).\n", "+\n", "-\n+link(@1, 2).\n"])
def test_a_sign_without_a_fact_on_its_line_is_refused(text):
    """The sign was dropped: '-' on a line of its own then link(@1, 2) inserted the fact."""
    from engine.bursts import parse_burst
    from ndlog.errors import NDlogSyntaxError
    with pytest.raises(NDlogSyntaxError, match="with no fact after it on its line") as err:
        parse_burst(text, "b.ndl")
    assert err.value.render().startswith("b.ndl:1:1: ")


def test_signs_in_block_comments_and_strings_are_no_updates():
    from engine.bursts import parse_burst
    text = '+link(@1, 2).\n/*\n-link(@1, 2).\n+ x\n*/\nlink(@1, "a\\"/*").\n-link(@1, 2).\n'
    assert [sign for sign, _, _ in parse_burst(text, "b.ndl")] == [1, 1, -1]


def test_deleting_a_missing_fact_names_the_burst_line(files, capsys):
    """The error named the fact but not where it was written."""
    burst = files / "del.ndl"
    burst.write_text("+link(@c, a).\n// then\n-link(@x, y).\n")
    assert main(["run", str(files / "p.ndl"), "--facts", str(files / "f.ndl"),
                 "--burst", str(burst)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{burst}:3:2: error: cannot delete link(@x, y)")
    assert "    -link(@x, y).\n     ^" in err


def test_deletion_before_insertion_across_overlapping_bursts(files, capsys):
    (files / "d.ndl").write_text("-link(@c, e).\n")
    (files / "i.ndl").write_text("+link(@c, e).\n")
    argv = ["run", str(files / "p.ndl"), "--facts", str(files / "f.ndl"), "--format", "json",
            "--burst", str(files / "d.ndl"), "--burst", str(files / "i.ndl")]
    assert main(argv + ["--overlap"]) == 0
    got = {tuple(r) for r in _json(capsys)["relations"]["link"]}
    assert got == {("a", "b"), ("b", "c")}
    assert main(argv) == 2  # one burst at a time: the deletion matches nothing yet


def test_unknown_annotation(files, capsys):
    assert main(["run", str(files / "p.ndl"), "--annotation", "nope"]) == 2
    assert "unknown annotation scheme" in capsys.readouterr().err


@pytest.mark.parametrize("options,what", [
    (["--topology", "ring", "--delivery", "random:abs=-5ms"], "abs must be a finite number"),
    (["--topology", "ring", "--delivery", "adversarial:period=0"], "period must be"),
    (["--facts", "f.ndl", "--delivery", "random:jitter=-1"], "jitter must be"),
    (["--topology", "ring", "--workers", "2", "--local-latency=-1s"],
     "--local-latency must be a finite number >= 0, got -1 s"),
    (["--topology", "ring", "--processing=-20us"], "per update must be"),
])
def test_negative_delays_are_refused_before_the_run(files, capsys, options, what):
    """A negative latency, jitter or processing time would schedule an event in the past
    (it ended in a traceback from the clock); a period of 0 divided by zero."""
    options = [str(files / o) if o.endswith(".ndl") else o for o in options]
    assert main(["run", str(files / "p.ndl"), *options]) == 2
    err = capsys.readouterr().err
    assert what in err and "Traceback" not in err


@pytest.mark.parametrize("options,what", [
    (["--delivery", "random:abs=1e308s"],
     "random delivery: abs must be at most 1e+06 s (about 11.6 days), got 1e+308 s"),
    (["--delivery", "random:jitter=1e308,abs=1ms"],
     "random delivery: jitter must be at most 1000, got 1e+308"),
    (["--delivery", "fifo:jitter=1001"], "fifo delivery: jitter must be at most 1000"),
    (["--delivery", "adversarial:spread=1e308s"],
     "adversarial delivery: spread must be at most 1e+06 s"),
    (["--processing", "1e308s"], "processing time per update must be at most 1e+06 s"),
    (["--processing", "1e300s"], "processing time per update must be at most 1e+06 s"),
    (["--processing", "20us+2e6s"], "processing time per batch must be at most 1e+06 s"),
    (["--local-latency", "1e308s", "--workers", "2"],
     "--local-latency must be at most 1e+06 s (about 11.6 days), got 1e+308 s"),
    (["--workload", "all; wait:1e308s; wait:1e308s"],
     "a wait is at most 1e+06 s (about 11.6 days), not '1e308s'"),
])
def test_durations_past_the_maximum_are_refused_before_the_run(files, capsys, options, what):
    """A delay of 1e308 s scheduled an event at time inf (a traceback from the clock),
    1e300 s ran and printed a 300-digit time, and two waits of 1e308 s never ended:
    every duration is at most MAX_DURATION (1e6 s), refused while the options are read,
    before any step runs."""
    assert main(["run", str(files / "p.ndl"), "--topology", "ring", *options]) == 2
    out, err = capsys.readouterr()
    assert what in err and "Traceback" not in err
    assert out == ""


def test_virtual_time_stops_at_its_ceiling_with_a_clear_error(files, capsys):
    """Waits each within the maximum still add up: the wait that would take virtual time
    past MAX_TIME (1e9 s) is refused, naming where it would end."""
    import re
    waits = ";".join(["wait:1e6s"] * 1000)
    assert main(["run", str(files / "p.ndl"), "--topology", "ring",
                 "--workload", f"all;{waits}"]) == 2
    err = capsys.readouterr().err
    end = re.search(r"error: simulated time would pass 1e\+09 s: the end of a 1e\+06 s "
                    r"wait at ([0-9.]+) s\n", err)
    assert end and 1e9 < float(end[1]) < 1e9 + 1 and "Traceback" not in err


def test_a_placement_map_outside_the_workers_is_refused_on_every_engine(files, capsys):
    """With ``--workers 2`` a map names workers 0 and 1 on every engine: Ray refused
    worker 5, the in-memory engine and the simulator ran it as a fourth worker."""
    from psn.distributed.network import _placement
    (files / "map.txt").write_text("a 5\nb x\n")
    message = "node 'a' is placed on worker 5, but 2 workers are numbered 0..1"
    for engine in (["--facts", str(files / "f.ndl")], ["--topology", "ring"]):
        assert main(["run", str(files / "p.ndl"), *engine, "--workers", "2",
                     "--placement-map", str(files / "map.txt")]) == 2
        assert message in capsys.readouterr().err
    with pytest.raises(InputError, match=message):
        _placement({"a": 5, "b": "x"}, 2)              # what Ray's driver checks


def test_a_node_placed_twice_in_a_placement_map_is_refused(files, capsys):
    """A placement map that names a node on two lines was accepted (the last line won)."""
    path = files / "map.txt"
    path.write_text("# node worker\n1 0\n2 1\n1 1\n")
    assert main(["run", str(files / "p.ndl"), "--topology", "ring", "--workers", "2",
                 "--placement-map", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:4: node 1 is placed twice (line 2: worker 0, line 4: worker 1)" in err
    assert "Traceback" not in err


def test_a_placement_map_that_places_no_node_is_refused(files, capsys):
    """An empty map (or comments only) was accepted as no map at all."""
    path = files / "map.txt"
    path.write_text("# node worker\n\n")
    assert main(["run", str(files / "p.ndl"), "--topology", "ring",
                 "--placement-map", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"placement map {path} places no node" in err and "Traceback" not in err


@pytest.mark.parametrize("text", ["", "// only a comment\n/* and another */\n"])
@pytest.mark.parametrize("command", ["eval", "run", "localize", "reference"])
def test_a_program_file_with_nothing_in_it_is_refused(files, capsys, command, text):
    """An empty program file ran and printed nothing, with status 0."""
    path = files / "empty.ndl"
    path.write_text(text)
    assert main([command, str(path)]) == 2
    err = capsys.readouterr().err
    assert f"program file '{path}' has no rules, facts or declarations" in err


@pytest.mark.parametrize("check", [[], ["--check"], ["--check", "python"]])
def test_spark_master_without_a_spark_check_is_refused(files, capsys, check):
    """``--spark-master`` was ignored unless the run checked against Spark."""
    assert main(["run", str(files / "p.ndl"), "--facts", str(files / "f.ndl"), *check,
                 "--spark-master", "local[1]"]) == 2
    assert "--spark-master names the Spark master of --check spark" in \
        capsys.readouterr().err


@pytest.mark.parametrize("workload", ["", "  "])
def test_an_empty_workload_is_refused(files, capsys, workload):
    """``--workload ""`` ran every fact of the topology, as no --workload does."""
    assert main(["run", str(files / "p.ndl"), "--topology", "ring",
                 "--workload", workload]) == 2
    assert "--workload is empty" in capsys.readouterr().err


def test_pick_one_and_relation_filter(files, capsys):
    assert main(["run", str(files / "p.ndl"), "--facts", str(files / "f.ndl"), "--pick",
                 "one", "--relation", "reachable", "--format", "json"]) == 0
    out = _json(capsys)
    assert list(out["relations"]) == ["reachable"]


def test_unknown_relation_is_refused_before_the_run(files, capsys, monkeypatch):
    import psn.cli.run_cmd as run_cmd

    def no_run(*args, **kwargs):
        raise AssertionError("the run started although --relation names no relation")
    monkeypatch.setattr(run_cmd, "_run_steps", no_run)
    assert main(["run", str(files / "p.ndl"), "--facts", str(files / "f.ndl"),
                 "--relation", "reachabel"]) == 2
    err = capsys.readouterr().err
    assert "no relation named 'reachabel'" in err and "link, reachable" in err


def test_relation_of_one_query_per_aggregate_is_known_before_the_run(capsys):
    """With --aggsel single each aggregate has its own query, whose relations
    (path_minHops) a user may ask for by name."""
    example = Path(__file__).resolve().parent.parent / "examples" / "shortest_path.ndl"
    assert main(["run", str(example), "--topology", "ring",
                 "--aggsel", "single", "--relation", "path_minHops",
                 "--format", "json"]) == 0
    out = _json(capsys)
    assert list(out["relations"]) == ["path_minHops"] and out["relations"]["path_minHops"]


def test_a_stopped_run_keeps_the_metrics_of_its_finished_steps(tmp_path, capsys):
    """A limit (here the bound on updates) or Ctrl-C that stops a later step: the steps
    before it are printed and --metrics has them (it was not written at all)."""
    program = Path(__file__).resolve().parent.parent / "examples" / "reachable.ndl"
    metrics = tmp_path / "m.json"
    # on ts100 the first step sends 654 updates, the second 45,250
    assert main(["run", str(program), "--topology", "ts100", "--workload",
                 "insert:0.2,1.0", "--max-updates", "20000", "--metrics", str(metrics)]) == 2
    out, err = capsys.readouterr()
    assert "did not converge after 20,000 updates" in err
    assert "stopped in step 1 (insert 1)" in out
    steps = json.loads(metrics.read_text())["steps"]
    assert [s["label"] for s in steps] == ["insert 0.2"] and steps[0]["inserted"] > 0


@pytest.mark.parametrize("name", ["m.json", "m.csv"])
def test_a_run_stopped_in_its_first_step_leaves_no_older_metrics(tmp_path, capsys, name):
    """A run stopped in its first step wrote no --metrics at all, so the file of an earlier
    run stayed, read as this run's: counting on a 2-cycle (no convergence) after a run
    that finished. The file now holds the steps this run completed: none."""
    program = Path(__file__).resolve().parent.parent / "examples" / "reachable.ndl"
    cycle, line = tmp_path / "cycle.ndl", tmp_path / "line.ndl"
    cycle.write_text("link(@1, 2).\nlink(@2, 1).\n")
    line.write_text("link(@1, 2).\n")
    metrics = tmp_path / name
    assert main(["run", str(program), "--facts", str(line), "--engine", "sim",
                 "--metrics", str(metrics)]) == 0
    assert "facts" in metrics.read_text()
    assert main(["run", str(program), "--facts", str(cycle), "--engine", "sim",
                 "--annotation", "counting", "--unsafe", "--max-updates", "1000",
                 "--metrics", str(metrics)]) == 2
    out, err = capsys.readouterr()
    assert "did not converge after 1,000 updates" in err
    assert "stopped in step 0 (facts)" in out
    if name.endswith(".json"):
        doc = json.loads(metrics.read_text())
        assert doc["steps"] == [] and doc["run"]["annotation"] == "counting"
    else:
        assert metrics.read_text().splitlines()[1:] == []


def test_output_into_a_closed_pipe_is_not_success(tmp_path):
    """``psn ... | true`` exited 0 even when the command would have failed (a check that
    found differences exits 1): now 141, as for a program SIGPIPE ended, and quietly."""
    import subprocess
    import sys
    facts = tmp_path / "ring.ndl"
    facts.write_text("".join(f"link(@{i}, {i % 300 + 1}).\n" for i in range(1, 301)))
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-m", "psn", "eval",
                             str(root / "examples" / "reachable.ndl"), "--facts", str(facts)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                        # the reader is gone before the first write
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == ""


def test_the_executable_exits_with_the_commands_status_and_its_objects_frozen(tmp_path):
    """``psn`` (and ``python -m psn``) freezes what the command made before the interpreter
    exits, so that its last garbage collection does not traverse a large run's state; the
    status and the output are the command's."""
    import subprocess
    import sys
    root = Path(__file__).resolve().parent.parent
    facts = tmp_path / "two.ndl"
    facts.write_text("link(@1, 2).\nlink(@2, 3).\n")
    probe = ("import atexit, gc, sys\n"
             "atexit.register(lambda: print('frozen', gc.get_freeze_count(), file=sys.stderr))\n"
             "from psn.cli import entry\n"
             "sys.argv = ['psn', *sys.argv[1:]]\n"
             "entry()\n")
    program = str(root / "examples" / "reachable.ndl")
    ok = subprocess.run([sys.executable, "-c", probe, "eval", program, "--facts", str(facts),
                         "--format", "csv"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "reachable,1,3" in ok.stdout
    assert int(ok.stderr.split("frozen")[-1]) > 0
    bad = subprocess.run([sys.executable, "-c", probe, "eval", str(tmp_path / "none.ndl")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "none.ndl" in bad.stderr


@pytest.mark.parametrize("option", [["--cost", "hops"], ["--topology-option", "n=5"],
                                    ["--topology-seed", "3"]])
def test_topology_options_without_a_topology_are_refused(files, capsys, option):
    """They were silently ignored."""
    code = main(["run", str(files / "p.ndl"), "--facts", str(files / "f.ndl"), *option])
    err = capsys.readouterr().err
    assert code == 2 and f"{option[0]} applies to a topology, and this run has none" in err


def test_an_unknown_option_shows_the_subcommands_usage(files, capsys):
    """It showed psn's top-level usage, which lists no option of the subcommand."""
    with pytest.raises(SystemExit) as stop:
        main(["run", str(files / "p.ndl"), "--bogus"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("usage: psn run ")
    assert err.rstrip().endswith("psn run: error: unrecognized arguments: --bogus")


class _Bar:
    """Records what a heartbeat shows (it only calls ``set_postfix_str``)."""

    def __init__(self):
        self.shown = []

    def set_postfix_str(self, text):
        self.shown.append(text)


def test_a_step_heartbeat_shows_the_counts_and_virtual_time():
    from ndlog.text import step_heartbeat
    from sim.clock import VirtualClock
    assert step_heartbeat(None, "load") is None
    bar, clock = _Bar(), VirtualClock()
    beat = step_heartbeat(bar, "load all", clock, every=0)
    beat(1, 2)
    beat(1_234, 1)
    assert bar.shown == ["load all: t=0.000s, 1 delivery, 2 updates in flight",
                         "load all: t=0.000s, 1,234 deliveries, 1 update in flight"]
    slow = step_heartbeat(bar, "x", every=3600)
    slow(5, 5)                         # within the hour: nothing shown
    assert len(bar.shown) == 2


@pytest.mark.parametrize("engine, shows", [
    ("sim", r"load all: t=\d+\.\d{3}s, [\d,]+ deliver"),
    ("memory", r"load all: [\d,]+ deliver(y|ies), [\d,]+ updates? in flight"),
    ("ray", r"load all: [\d,]+ batch(es)? received, [\d,]+ batch(es)? in flight")])
def test_psn_run_shows_a_long_steps_progress_on_its_bar(monkeypatch, capsys, engine, shows):
    """A single long step (every link of a large topology at once) left the bar at
    '0 steps' until it ended; now the step's deliveries and updates in flight show."""
    import functools
    import re

    from ndlog.text import step_heartbeat
    from psn.cli import runners
    monkeypatch.setattr(runners, "step_heartbeat", functools.partial(step_heartbeat,
                                                                    every=0))
    program = str(Path(__file__).resolve().parents[1] / "examples" / "reachable.ndl")
    extra = ["--workers", "2"] if engine == "ray" else []
    assert main(["run", program, "--topology", "ring", "--engine", engine, *extra,
                 "--relation", "link", "--progress"]) == 0
    assert re.search(shows, capsys.readouterr().err)


@pytest.mark.parametrize("engine", ["memory", "ray"])
def test_a_wait_on_soft_state_is_refused_on_an_engine_without_virtual_time(
        tmp_path, capsys, engine):
    """``--engine memory --workload "all;wait:3s"`` on a program whose links expire after
    2 s ran the wait, expired nothing and passed ``--check`` (which compares with the same
    base facts): a run that looked like the simulator's and was another. It is refused
    before any engine starts; a program without soft state may still wait."""
    soft = tmp_path / "soft.ndl"
    soft.write_text("materialize(link, 2, infinity, keys(1, 2)).\n"
                    "r1 reachable(@S, D) :- link(@S, D).\n")
    args = ["--engine", engine, "--topology", "ring", "--workload", "all;wait:3s", "--check"]
    assert main(["run", str(soft), *args]) == 2
    err = capsys.readouterr().err
    assert ("waits, but engine " + engine + " has no virtual time: table link expires its "
            "facts after 2") in err and "--engine sim" in err and "Traceback" not in err
    if engine == "memory":
        hard = tmp_path / "hard.ndl"
        hard.write_text("r1 reachable(@S, D) :- link(@S, D).\n")
        assert main(["run", str(hard), *args]) == 0
        assert main(["run", str(soft), *args[2:]]) == 0          # the simulator expires
