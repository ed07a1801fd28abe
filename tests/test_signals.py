"""Stopping a command from outside: Ctrl-C (SIGINT) and SIGTERM stop its worker processes
with it, and a worker killed from outside is a clear error (real processes, Linux /proc)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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


def test_an_experiment_run_killed_from_outside_is_a_clear_error(tmp_path):
    proc, kids = _start(_experiment(tmp_path), tmp_path, 2)
    workers = [k for k in kids if "resource_tracker" not in
               Path(f"/proc/{k}/cmdline").read_text()]
    os.kill(workers[0], signal.SIGKILL)
    err = proc.communicate(timeout=300)[1]
    assert proc.returncode == 2 and "a run's process died" in err and "Traceback" not in err
    assert _gone(kids)
