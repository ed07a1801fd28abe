"""Stopping a command from outside: Ctrl-C (SIGINT) and SIGTERM stop its worker processes
with it, also while Ray or Spark starts, and a worker killed from outside is a clear error
(real processes, Linux /proc); and the signal helpers behind it (``ndlog.signals``)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import argparse
import threading

import pytest

from ndlog.signals import handling, held

ROOT = Path(__file__).resolve().parent.parent


# -- ndlog.signals, in this process ---------------------------------------------------------

class _Stop(Exception):
    pass


def _stop(signum, frame):
    raise _Stop(signum)


def test_held_acts_on_the_signal_once_the_block_ends():
    ran = []
    with pytest.raises(KeyboardInterrupt):
        with held() as asked:
            signal.raise_signal(signal.SIGINT)
            ran.append(list(asked))             # the block went on
    assert ran == [[signal.SIGINT]]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_held_puts_back_a_handler_the_block_replaced():
    """PySpark installs its own Ctrl-C handler while its session starts."""
    with handling(signal.SIGTERM, _stop):
        with pytest.raises(_Stop):
            with held():
                signal.raise_signal(signal.SIGTERM)
                signal.signal(signal.SIGTERM, lambda signum, frame: None)
        assert signal.getsignal(signal.SIGTERM) is _stop


def test_held_leaves_an_ignored_signal_ignored():
    with handling(signal.SIGINT, signal.SIG_IGN):
        with held() as asked:
            signal.raise_signal(signal.SIGINT)
            signal.signal(signal.SIGINT, _stop)
        assert asked == [] and signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_held_lets_a_handler_that_returns_go_on_and_says_why_once(capfd):
    seen = []
    with handling(signal.SIGUSR1, lambda signum, frame: seen.append(signum)):
        with held((signal.SIGUSR1,), note="waiting for the start") as asked:
            signal.raise_signal(signal.SIGUSR1)
            signal.raise_signal(signal.SIGUSR1)
            assert seen == []
    assert asked == [signal.SIGUSR1] * 2 and seen == [signal.SIGUSR1]
    assert capfd.readouterr().err == "waiting for the start\n"


def test_held_acts_at_once_on_a_second_signal_when_asked_to():
    """A way out of a start-up that hangs (a peer that accepts and never answers)."""
    after = []
    with pytest.raises(KeyboardInterrupt):
        with held(again_now=True) as asked:
            signal.raise_signal(signal.SIGINT)
            after.append(1)
            signal.raise_signal(signal.SIGINT)
            after.append(2)
    assert after == [1] and asked == [signal.SIGINT] * 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_held_signal_replaces_the_blocks_exception_and_keeps_it():
    with pytest.raises(KeyboardInterrupt) as caught:
        with held():
            signal.raise_signal(signal.SIGINT)
            raise ValueError("the block failed")
    assert isinstance(caught.value.__context__, ValueError)


@pytest.mark.parametrize("raising_call", [1, 2, 3, 4])
def test_held_puts_every_handler_back_when_a_signal_cuts_into_the_swap(monkeypatch,
                                                                      raising_call):
    """A signal whose handler raises between two swaps (calls 1-2 install the holding
    handler, 3-4 put the old ones back) left the holding handler installed for good, so
    Ctrl-C or SIGTERM was ignored from then on."""
    real, calls = signal.signal, []

    def cut_in(sig, handler):
        out = real(sig, handler)
        calls.append(sig)
        if len(calls) == raising_call:
            raise KeyboardInterrupt          # the handler just swapped in, acting
        return out
    with handling(signal.SIGTERM, _stop):
        monkeypatch.setattr(signal, "signal", cut_in)
        with pytest.raises(KeyboardInterrupt):
            with held():
                pass
        monkeypatch.undo()
        assert signal.getsignal(signal.SIGTERM) is _stop
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_signal_helpers_change_nothing_outside_the_main_thread():
    before = signal.getsignal(signal.SIGTERM)
    out = []

    def work():
        with handling(signal.SIGTERM, _stop), held() as asked:
            out.append((signal.getsignal(signal.SIGTERM), asked))
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert out == [(before, [])]


def test_sigterm_turned_into_ctrl_c_by_native_code_still_ends_as_terminated(monkeypatch,
                                                                           capsys):
    """Ray's ``ray.get`` turns any exception a signal handler raised into a plain
    KeyboardInterrupt; SIGTERM during a Ray run ended as 'interrupted', status 130."""
    import psn.cli
    from psn.cli import Terminated

    def func(args):
        try:
            signal.raise_signal(signal.SIGTERM)
        except Terminated:
            raise KeyboardInterrupt from None
    parser = argparse.ArgumentParser()
    parser.set_defaults(func=func)
    monkeypatch.setattr(psn.cli, "build_parser", lambda: parser)
    assert psn.cli.main([]) == 143
    assert capsys.readouterr().err == "psn: terminated\n"


# -- real commands, stopped from outside --------------------------------------------------

def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _start(args: list[str], tmp_path: Path, workers: int):
    """The command, once it has at least ``workers`` children running (their pids)."""
    proc = subprocess.Popen([sys.executable, "-m", "psn", *args], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for _ in range(600):                       # waits for the workers, at most a minute
        kids = [k for k in _children(proc.pid) if _alive(k)]
        if len(kids) >= workers or proc.poll() is not None:
            return proc, kids
        time.sleep(0.1)
    proc.kill()
    pytest.fail("the workers never started")


def _gone(pids: list[int]) -> bool:
    for _ in range(100):                       # a terminated worker exits within seconds
        if not any(map(_alive, pids)):
            return True
        time.sleep(0.1)
    return False


def _verify_args(tmp_path: Path) -> list[str]:
    (tmp_path / "ring.ndl").write_text("".join(f"link(@{i}, {i % 8 + 1}).\n"
                                               for i in range(1, 9)))
    (tmp_path / "b1.ndl").write_text("-link(@1, 2).\n+link(@2, 1).\n")
    (tmp_path / "b2.ndl").write_text("-link(@3, 4).\n+link(@4, 3).\n")
    return ["verify", str(ROOT / "examples" / "reachable.ndl"), "--facts", "ring.ndl",
            "--burst", "b1.ndl", "--burst", "b2.ndl", "--mode", "random", "--budget", "10m",
            "--jobs", "2"]


@pytest.mark.parametrize("sig,status,said", [(signal.SIGTERM, 143, "psn: terminated"),
                                             (signal.SIGINT, 130, "psn: interrupted")])
def test_a_stopped_verify_stops_its_workers(tmp_path, sig, status, said):
    """SIGTERM killed the command and left its two workers searching for the rest of the
    budget (ten minutes by default), on every core."""
    proc, workers = _start(_verify_args(tmp_path), tmp_path, 2)
    proc.send_signal(sig)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == status and said in err and "Traceback" not in err
    assert _gone(workers)


_FORKING = """
import os, signal
from psn.cli import Terminated, _OnSigterm
from psn.verify.search import _start_quiet

class Forking:
    def start(self):                # SIGTERM comes while the command forks a worker
        os.kill(os.getpid(), signal.SIGTERM)

with _OnSigterm().installed():
    try:
        _start_quiet([Forking()])
    except Terminated:
        print("terminated")
"""


def test_sigterm_while_verify_forks_its_workers_reaches_the_command():
    """SIGTERM's default action was set around the fork of the workers, in the command
    too: a SIGTERM sent then ended the command at once, with no message, and left its
    workers searching for the rest of the budget (27 of 40 SIGTERMs sent as soon as the
    second worker appeared; the test above waits 0.1 s between looks and met it rarely).
    Here the signal comes inside the fork, every time."""
    done = subprocess.run([sys.executable, "-c", _FORKING], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "terminated\n"), done.stderr


def test_a_verify_worker_killed_from_outside_is_a_clear_error(tmp_path):
    proc, workers = _start(_verify_args(tmp_path), tmp_path, 2)
    os.kill(workers[0], signal.SIGKILL)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 2 and "a verify worker process died" in err
    assert "Traceback" not in err and _gone(workers)


def _experiment(tmp_path: Path) -> list[str]:
    return ["experiment", "fig7", "--quick", "--jobs", "2", "-o", str(tmp_path / "out")]


@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_experiment_stops_its_runs_and_keeps_the_finished_ones(tmp_path, sig,
                                                                         status):
    """The pool's own exit ran every queued run first (a minute and more) and cached none
    of them; SIGTERM left the running ones orphaned."""
    proc, kids = _start(_experiment(tmp_path), tmp_path, 2)
    proc.send_signal(sig)
    err = proc.communicate(timeout=300)[1]
    assert proc.returncode == status and "Traceback" not in err
    assert _gone(kids)
    cached = list((tmp_path / "out" / "cache").glob("*.json"))
    assert len(cached) < 21 and not (tmp_path / "out" / "report.md").exists()
    for f in cached:                           # each cached run is whole
        assert f.read_text().rstrip().endswith("}")


def _run_processes(proc, kids: list[int]) -> list[int]:
    """The pool's worker processes among ``kids``, waiting (at most a minute) until there
    is one: not multiprocessing's resource tracker, nor a short-lived ``git`` that the
    experiment runs to record the code's version (killing that one stops nothing)."""
    for _ in range(600):
        workers = []
        for k in kids:
            try:
                cmdline = Path(f"/proc/{k}/cmdline").read_text()
            except OSError:                    # it has exited
                continue
            if "resource_tracker" not in cmdline and cmdline.split("\0")[0] == sys.executable:
                workers.append(k)
        if workers or proc.poll() is not None:
            return workers
        time.sleep(0.1)
        kids = [k for k in _children(proc.pid) if _alive(k)]
    pytest.fail("no run process started")


def test_ctrl_c_at_a_terminal_stops_an_experiment_without_a_worker_traceback(tmp_path):
    """A terminal sends Ctrl-C to every process of its foreground group, the run
    processes too: one still importing the engine (a process starts for every run)
    printed "Process SpawnProcess-4: Traceback ... KeyboardInterrupt" (2 of 6 tries with
    `fig7 --tiny --jobs 2`). The run processes are made with SIGINT blocked; the command
    stops them itself."""
    proc = subprocess.Popen([sys.executable, "-m", "psn", *_experiment(tmp_path)],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        kids = []
        for _ in range(600):
            kids = [k for k in _children(proc.pid) if _alive(k)]
            if len(kids) >= 2 or proc.poll() is not None:
                break
            time.sleep(0.1)
        workers = _run_processes(proc, kids)
        assert workers
        for w in workers:
            blocked = int(re.search(r"SigBlk:\s*([0-9a-f]+)",
                                    Path(f"/proc/{w}/status").read_text()).group(1), 16)
            assert blocked & (1 << (signal.SIGINT - 1)), w
        os.killpg(proc.pid, signal.SIGINT)
        err = proc.communicate(timeout=300)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert _gone(kids)


def test_an_experiment_run_killed_from_outside_is_a_clear_error(tmp_path):
    proc, kids = _start(_experiment(tmp_path), tmp_path, 2)
    workers = _run_processes(proc, kids)
    os.kill(workers[0], signal.SIGKILL)
    err = proc.communicate(timeout=300)[1]
    assert proc.returncode == 2 and "a run's process died" in err and "Traceback" not in err
    assert _gone(kids)


# -- starting Ray or Spark: an interrupt is held until the runtime is up, then acted on ----

def _in_session(sid: int) -> list[tuple[int, str]]:
    """The processes of session ``sid`` (pid, command line), zombies left out."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            out.append((int(d.name), cmd))
    return out


def _runs(name: str):
    """``ready`` for :func:`_stop_when`: a process whose command line holds ``name`` runs
    in the session."""
    return lambda sid: any(name in cmd for _, cmd in _in_session(sid))


def _stop_when(args: list[str], tmp_path: Path, ready, sig: int):
    """Run ``python args`` in a session of its own; once ``ready(session id)``, send
    ``sig``. Returns (exit status, stderr, processes of the session still running 30 s
    after the command exited)."""
    proc = subprocess.Popen([sys.executable, *args], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        for _ in range(1200):
            if ready(proc.pid) or proc.poll() is not None:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the command never got ready to be stopped")
        proc.send_signal(sig)
        err = proc.communicate(timeout=120)[1]
        for _ in range(300):
            left = _in_session(proc.pid)
            if not left:
                break
            time.sleep(0.1)
        return proc.returncode, err, left
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.ray
@pytest.mark.parametrize("sig,status,said", [(signal.SIGINT, 130, "psn: interrupted"),
                                             (signal.SIGTERM, 143, "psn: terminated")])
def test_stopped_while_ray_starts_leaves_no_ray_process(tmp_path, sig, status, said):
    """Ctrl-C or SIGTERM inside ``ray.init`` left Ray's dashboard and runtime-env agents
    running, orphaned (and SIGTERM met Ray's own handler, which exited with status 15)."""
    args = ["-m", "psn", "run", str(ROOT / "examples" / "reachable.ndl"), "--topology",
            "ts100", "--engine", "ray", "--relation", "link"]
    status_, err, left = _stop_when(args, tmp_path, _runs("raylet"), sig)
    assert status_ == status and said in err and "Traceback" not in err
    assert "stopping once Ray has started" in err
    assert left == []


@pytest.mark.spark
def test_interrupted_while_spark_starts_leaves_no_jvm(tmp_path):
    """Ctrl-C while the Spark JVM started left it running, with a Java stack on stderr."""
    program = ROOT / "tests" / "programs" / "reachable"
    args = ["-m", "psn", "reference", str(program / "program.ndl"), "--facts",
            str(program / "facts.ndl")]
    status, err, left = _stop_when(args, tmp_path, _runs("java"), signal.SIGINT)
    assert status == 130 and "psn: interrupted" in err
    assert "stopping once the Spark session has started" in err
    assert "Traceback" not in err and "Exception" not in err
    assert left == []


_SCRIPT = """
import sys, time
from psn.distributed import start_ray
start_ray()
open("up", "w").close()
time.sleep(120)
"""


@pytest.mark.ray
@pytest.mark.parametrize("when", ["starting", "up"])
def test_sigterm_to_a_script_that_started_ray_leaves_no_ray_process(tmp_path, when):
    """A program of one's own (no psn command, SIGTERM at its default action): the
    default action ended it at once, with Ray's agents left running."""
    (tmp_path / "script.py").write_text(_SCRIPT)
    up = tmp_path / "up"
    ready = _runs("raylet") if when == "starting" else (lambda sid: up.exists())
    status, err, left = _stop_when(["script.py"], tmp_path, ready, signal.SIGTERM)
    assert status == 143 and left == [] and "Traceback" not in err
    assert up.exists() == (when == "up")        # held during ray.init, acted on after


def test_sigterm_inside_a_finalizer_still_stops_the_command(capfd):
    """A SIGTERM that arrived while a finalizer ran raised Terminated there, where Python
    prints an exception as ignored (a traceback) and goes on: the command did not stop.
    Afterwards the unraisable hook is the one before."""
    import os
    import time
    import weakref
    from psn.cli import Terminated, _OnSigterm

    class Resource:
        pass
    import sys
    hook = sys.unraisablehook
    handler = _OnSigterm()
    with handler.installed():
        held = Resource()
        weakref.finalize(held, os.kill, os.getpid(), signal.SIGTERM)
        with pytest.raises(Terminated):
            del held                # the finalizer sends the signal while it runs
            for _ in range(200):    # the retry comes within RETRY seconds
                time.sleep(0.01)
    assert handler.fired and sys.unraisablehook is hook
    assert "Exception ignored" not in capfd.readouterr().err
