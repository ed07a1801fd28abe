"""Output files are written whole or not at all (ndlog.files): an interrupted writer
leaves the previous file and no temporary file beside it; a directory claimed by one
process is refused to another."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ndlog.errors import InputError
from ndlog.files import CLAIM_FILE, atomic_open, claimed_dir, write_atomic
from sim.metrics import StepResult, write_csv


def _steps(n: int, fail_at: int | None = None):
    for i in range(n):
        if i == fail_at:
            raise KeyboardInterrupt            # what Ctrl-C raises in the middle of a write
        yield StepResult(index=i, label=f"step {i}", inserted=1, deleted=0, start=0.0,
                         sim_time=0.1, wall_time=0.1, events=1, traffic={"bytes_sent": 1},
                         per_node={0: {"bytes_sent": 1}})


def test_an_interrupted_metrics_file_leaves_the_previous_one(tmp_path):
    path = tmp_path / "m.csv"
    write_csv(path, _steps(3))
    whole = path.read_text()
    assert whole.count("\n") == 1 + 3 * 2          # header, then a total and a node row
    with pytest.raises(KeyboardInterrupt):
        write_csv(path, _steps(5, fail_at=2))       # it wrote rows in place before
    assert path.read_text() == whole
    assert [p.name for p in tmp_path.iterdir()] == ["m.csv"]
    with pytest.raises(KeyboardInterrupt):
        write_csv(tmp_path / "new.csv", _steps(5, fail_at=1))
    assert [p.name for p in tmp_path.iterdir()] == ["m.csv"]


def test_a_path_of_the_wrong_kind_is_an_input_error_naming_it():
    """Simulation.write_metrics(3) and topologies.load(None) were TypeErrors from
    pathlib."""
    from ndlog.parser import read_text
    from sim import Simulation
    sim = Simulation("r1 reachable(@S, D) :- link(@S, D).", "ring")
    for call, what in [(lambda: sim.write_metrics(3), "metrics file"),
                       (lambda: write_atomic(None, "{}", "report"), "report"),
                       (lambda: read_text(3.5, "facts file"), "facts file")]:
        with pytest.raises(InputError, match=f"the {what} must be a path \\(a str or a "
                                             f"pathlib.Path\\), got "):
            call()


@pytest.mark.parametrize("path, what", [
    ("", "must be a path, got an empty one"),
    ("\0", "'\\x00' holds a NUL byte, which no file name can"),
    ("out\0.json", "'out\\x00.json' holds a NUL byte")])
def test_an_empty_path_or_one_holding_a_nul_byte_is_an_input_error(tmp_path, path, what):
    """A NUL byte in a path was 'ValueError: embedded null byte' from the system call
    (psn.load, topologies.read_json, save, write_metrics), and an empty path was
    'PosixPath('.') has an empty name' when written (the current directory when read)."""
    import psn
    import topologies
    from sim import Simulation
    sim = Simulation("r1 reachable(@S, D) :- link(@S, D).", "ring")
    for call, kind in [(lambda: psn.load(path), "program file"),
                       (lambda: topologies.read_json(path), "topology file"),
                       (lambda: topologies.save(topologies.ring(4), path), "topology file"),
                       (lambda: topologies.write_json(topologies.ring(4), path),
                        "topology file"),
                       (lambda: sim.write_metrics(path), "metrics file")]:
        with pytest.raises(InputError, match=re.escape(f"the {kind} {what}")):
            call()


def test_a_name_too_long_for_the_file_system_is_an_input_error(tmp_path):
    """A file name over the file system's limit raised OSError 'File name too long' from
    pathlib's checks before any write: in Simulation.write_metrics and topologies.save
    (is_symlink), in Simulation(program, topology=NAME) (the test for a topology file) and
    in every output directory's parent check (require_parent)."""
    import topologies
    from ndlog.files import require_parent
    from sim import Simulation
    long = "a" * 300
    sim = Simulation("r1 reachable(@S, D) :- link(@S, D).", "ring")
    for call in (lambda: sim.write_metrics(tmp_path / long),
                 lambda: topologies.save(topologies.ring(4), tmp_path / f"{long}.json"),
                 lambda: require_parent(tmp_path / long / "out", "the run cache")):
        with pytest.raises(InputError, match="^error: cannot write .*: File name too long"):
            call()
    with pytest.raises(InputError, match="unknown topology 'aaaa"):
        Simulation("r1 reachable(@S, D) :- link(@S, D).", long)
    assert not list(tmp_path.iterdir())


def test_a_file_that_cannot_be_written_is_an_input_error_naming_it(tmp_path):
    missing = tmp_path / "no" / "such" / "dir" / "out.json"
    with pytest.raises(InputError, match=r"cannot write metrics file '.*out\.json'"):
        write_atomic(missing, "{}", "metrics file")
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="cannot write '.*d'"):      # a directory
        with atomic_open(tmp_path / "d") as fh:
            fh.write("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
    write_atomic(tmp_path / "ok.txt", "é\n")
    assert (tmp_path / "ok.txt").read_text(encoding="utf-8") == "é\n"


def test_a_claimed_directory_refuses_a_second_claim_naming_the_holder(tmp_path):
    out = tmp_path / "out"
    with claimed_dir(out, "the experiment output", hint="write elsewhere"):
        with pytest.raises(InputError, match=rf"output {out} is in use by process "
                                             rf"{os.getpid()}") as err:
            with claimed_dir(out, "the experiment output", hint="write elsewhere"):
                pass
        assert "write elsewhere" in err.value.render()
    with claimed_dir(out) as again:           # released with the block
        assert again == out and (out / CLAIM_FILE).exists()


def test_a_claim_dies_with_its_process(tmp_path):
    """A killed run leaves no stale claim behind: the system drops the lock."""
    out = tmp_path / "out"
    code = ("import sys, time; from ndlog.files import claimed_dir\n"
            f"with claimed_dir({str(out)!r}):\n    print('held', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "held\n"
        with pytest.raises(InputError, match=f"in use by process {proc.pid}"):
            with claimed_dir(out):
                pass
    finally:
        proc.kill()
        proc.wait()
    with claimed_dir(out):
        pass


def test_two_experiments_into_one_directory_the_second_is_refused(tmp_path, capsys):
    """Both ran every run and wrote their files over each other's."""
    from psn.cli import main
    out = tmp_path / "fig7"
    with claimed_dir(out):
        status = main(["experiment", "fig7", "--quick", "--no-progress", "-o", str(out)])
    err = capsys.readouterr().err
    assert status == 2 and f"the experiment output {out} is in use by process" in err
    assert "--output" in err and not (out / "cache").exists()


def test_a_file_system_without_locks_leaves_the_directory_unclaimed(tmp_path, monkeypatch):
    """Refusing there would refuse every run; each file is still written whole."""
    import errno

    import ndlog.files

    class NoLocks:
        LOCK_EX = LOCK_NB = 0

        @staticmethod
        def flock(fd, op):
            raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(ndlog.files, "fcntl", NoLocks)
    with claimed_dir(tmp_path / "out") as out, claimed_dir(out):
        write_atomic(out / "report.md", "whole")
    assert (out / "report.md").read_text() == "whole"


_OUTPUTS = [(["eval", "{p}", "--output"], ""), (["reference", "{p}", "--output"], ""),
            (["localize", "{p}", "-o"], ""), (["topology", "ring", "-o"], ""),
            (["topology", "gtitm", "--count", "2", "-o"], ""),
            (["run", "{p}", "--topology", "ring", "--metrics"], "metrics file "),
            (["verify", "{p}", "--burst", "{b}", "--counterexample"], "counterexample file ")]


@pytest.mark.parametrize("command, what", _OUTPUTS)
def test_an_output_path_that_cannot_be_written_is_refused_before_any_work(
        tmp_path, capsys, monkeypatch, command, what):
    """Each command checked its output path only when it wrote it: psn reference --engine
    spark ran Spark for 16 s, psn verify could search for 10 minutes and then lose the
    counterexample it found, psn run lost the run behind a --metrics in a missing
    directory."""
    import psn.cli.run_cmd as run_cmd
    import psn.verify as verify
    from psn.cli import main

    def no_work(*args, **kwargs):
        raise AssertionError("the work started although its output cannot be written")
    monkeypatch.setattr(run_cmd, "_run_steps", no_work)
    monkeypatch.setattr(verify, "verify", no_work)
    program = tmp_path / "p.ndl"
    program.write_text("r1 reachable(@S, D) :- link(@S, D).\n")
    burst = tmp_path / "b.ndl"
    burst.write_text("+link(@1, 2).\n")
    args = [a.format(p=program, b=burst) for a in command]
    (tmp_path / "d").mkdir()
    for out, why in [(tmp_path / "no" / "x.json", "the directory '.*no' does not exist"),
                     (tmp_path / "d", "it is a directory")]:
        assert main([*args, str(out)]) == 2
        err = capsys.readouterr().err
        assert re.search(f"error: cannot write {what}'{re.escape(str(out))}': {why}", err), err
        assert "Traceback" not in err
    assert main([*args, ""]) == 2
    assert "is empty (an unset shell variable?)" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.ndl", "d", "p.ndl"]


def test_a_named_pipe_is_written_through_and_a_symlink_s_target_replaced(tmp_path):
    """Both were replaced by a regular file renamed over them: a pipe's reader got nothing,
    and so would /dev/null be replaced (as root, for every process of the machine)."""
    import threading
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    write_atomic(fifo, "{}\n", "metrics file")
    reader.join(10)
    assert got == ["{}\n"] and fifo.is_fifo()
    assert [p.name for p in tmp_path.iterdir()] == ["pipe.json"]
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_atomic(link, "new", "metrics file")
    assert link.is_symlink() and target.read_text() == "new"
