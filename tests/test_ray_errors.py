"""Ray fails clearly and fast: bad or unreachable cluster addresses give a one-line
InputError within the connect timeout (in the API and in ``psn run``), and Ray's runtime
failures become one-line EvaluationErrors naming a fix.

Real local Ray throughout (one runtime for the module, shut down at the end if this module
started it); every address probed is on loopback. Ray's exceptions come from real Ray calls
where a test can provoke them (a killed actor, a timed-out call, errors raised inside an
actor) and are built with Ray's own constructors otherwise (out of memory, full object
store, system errors: provoking those would starve the shared machine).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import ray

from ndlog.errors import EvaluationError, InputError, PSNError
from psn.distributed.runtime import (DEFAULT_CONNECT_TIMEOUT, ray_errors,
                                     resolve_ray_address, start_ray, stop_ray,
                                     translate_ray_error)

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parent.parent
#: slack on top of a connect timeout: Python and Ray start-up on a loaded 2-core machine
MARGIN = 8.0


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local runtime on loopback for the module (so Ray keeps loopback addresses)."""
    was_up = ray.is_initialized()
    start_ray()
    yield
    if not was_up:
        stop_ray()


@pytest.fixture()
def tiny():
    """A tiny real actor, killed afterwards."""
    actor = _Tiny.remote()
    ray.get(actor.ping.remote(), timeout=60)
    yield actor
    ray.kill(actor, no_restart=True)


@ray.remote(num_cpus=0, max_restarts=0)
class _Tiny:
    def ping(self) -> int:
        return os.getpid()

    def nap(self, seconds: float) -> None:
        time.sleep(seconds)

    def fail(self) -> None:
        raise EvaluationError("division by zero in rule r1")

    def bug(self) -> None:
        raise ValueError("an internal bug")


def _one_line_input_error(call, *args, **kwargs) -> tuple[InputError, float]:
    t0 = time.monotonic()
    with pytest.raises(InputError) as info:
        call(*args, **kwargs)
    elapsed = time.monotonic() - t0
    text = info.value.render()
    assert "\n" not in text and text.startswith("error: ")
    return info.value, elapsed


# --------------------------------------------------------------------------- addresses

@pytest.mark.parametrize("address, named", [
    ("nonsense", "'nonsense'"),
    ("host:notaport", "'notaport'"),
    ("127.0.0.1:99999", "'99999'"),
    ("127.0.0.1:", "'127.0.0.1:'"),
    ("a:b:c", "'a:b:c'"),
    ("http://127.0.0.1:6379", "'http://'"),
    ("bad host!:6379", "'bad host!:6379'"),
])
def test_malformed_address_fails_at_once(address, named):
    err, elapsed = _one_line_input_error(start_ray, address)
    assert named in err.message
    assert elapsed < 2.0


def test_address_with_nothing_listening_fails_within_the_timeout():
    err, elapsed = _one_line_input_error(start_ray, "127.0.0.1:1", connect_timeout=2)
    assert "connection refused" in err.message and "127.0.0.1:1" in err.message
    assert elapsed < 2 + MARGIN


@pytest.mark.parametrize("timeout", [0, -1, "abc", float("nan"), float("inf"), "5", True])
def test_connect_timeout_must_be_a_positive_number(timeout):
    """"5" and True were converted by float() (True: a timeout of 1 s)."""
    err, _ = _one_line_input_error(start_ray, "127.0.0.1:1", connect_timeout=timeout)
    assert "connect timeout" in err.message


@pytest.mark.parametrize("workers", [True, False, 1.0, "2"])
def test_a_worker_pool_of_a_number_of_workers_that_is_not_one_is_refused(workers):
    """WorkerPool(True) started one actor (a bool is an int to Python), as RayNetwork
    refuses workers=True; nothing starts for a refused pool."""
    from psn.distributed.network import WorkerPool
    with pytest.raises(InputError, match="the number of workers must be a positive "
                                         f"integer, got {workers!r}"):
        WorkerPool(workers)


def test_auto_without_a_cluster(monkeypatch, tmp_path):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))       # no address recorded there
    err, elapsed = _one_line_input_error(start_ray, "auto")
    assert "no running Ray cluster" in err.message
    assert elapsed < 2.0


def test_auto_uses_the_address_ray_start_recorded(monkeypatch, tmp_path):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text("127.0.0.1:1\n")
    err, elapsed = _one_line_input_error(start_ray, "auto", connect_timeout=2)
    assert "ray_current_cluster" in err.message and "connection refused" in err.message
    assert elapsed < 2 + MARGIN


def test_default_address_follows_ray_address(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    err, _ = _one_line_input_error(start_ray, connect_timeout=2)
    assert "RAY_ADDRESS=127.0.0.1:1" in err.message


def test_local_needs_no_check():
    assert resolve_ray_address("local") is None
    assert start_ray("local") == 0.0      # the module's runtime is already up


@pytest.fixture()
def silent_listener():
    """A loopback TCP server that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted = []

    def accept() -> None:
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:        # closed at teardown
                return

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
    for conn in accepted:
        conn.close()


def test_listening_port_that_is_not_ray_fails_within_the_timeout(silent_listener):
    address = f"127.0.0.1:{silent_listener}"
    err, elapsed = _one_line_input_error(start_ray, address, connect_timeout=3)
    assert "not a Ray head node" in err.message and address in err.message
    assert elapsed < 3 + MARGIN


def test_the_address_of_a_running_cluster_is_accepted():
    gcs = ray.get_runtime_context().gcs_address
    assert resolve_ray_address(gcs, connect_timeout=5) == gcs
    assert start_ray(gcs) == 0.0           # checked, then Ray is already up


def test_another_process_joins_the_cluster():
    gcs = ray.get_runtime_context().gcs_address
    code = ("import ray\n"
            "from psn.distributed.runtime import start_ray, stop_ray\n"
            f"start_ray({gcs!r}, connect_timeout=5)\n"
            "print(ray.get_runtime_context().gcs_address)\n"
            "stop_ray()\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == gcs


@pytest.mark.parametrize("address", ["127.0.0.1:1", "nonsense"])
def test_psn_run_with_a_bad_address_prints_one_line_and_exits_2(address):
    # single-machine mode keeps Ray from replacing 127.0.0.1 by the machine's address, so
    # only loopback is probed
    env = dict(os.environ, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "psn", "run", "examples/reachable.ndl",
                           "--engine", "ray", "--address", address],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - t0
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and address in lines[0]
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert elapsed < DEFAULT_CONNECT_TIMEOUT + MARGIN


# --------------------------------------------------------------------------- Ray's failures

def _raised(call) -> BaseException:
    try:
        call()
    except ray.exceptions.RayError as exc:
        return exc
    raise AssertionError("Ray raised nothing")


def _one_line(err: PSNError) -> str:
    text = err.render()
    assert "\n" not in text
    return err.message


def _until_dead(actor, seconds: float = 60.0) -> BaseException:
    """The error of the first call after ``actor`` died: ``ray.kill`` is asynchronous, so
    a call made right after it may still be answered (seen once on a loaded machine)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            ray.get(actor.ping.remote(), timeout=seconds)
        except ray.exceptions.RayError as exc:
            return exc
        time.sleep(0.2)
    raise AssertionError(f"the killed actor still answered after {seconds:g} s")


def test_dead_worker(tiny):
    ray.kill(tiny, no_restart=True)
    exc = _until_dead(tiny)
    assert isinstance(exc, ray.exceptions.RayActorError)
    err = translate_ray_error(exc)
    assert isinstance(err, EvaluationError) and err.__cause__ is exc
    assert "worker was lost beyond recovery" in _one_line(err)
    assert "--workers" in err.message


def test_timed_out_call(tiny):
    exc = _raised(lambda: ray.get(tiny.nap.remote(2.0), timeout=0.05))
    assert isinstance(exc, ray.exceptions.GetTimeoutError)
    err = translate_ray_error(exc)
    assert isinstance(err, EvaluationError)
    assert "did not answer in time" in _one_line(err)


def test_psn_error_inside_a_worker_comes_back_as_itself(tiny):
    exc = _raised(lambda: ray.get(tiny.fail.remote(), timeout=60))
    assert isinstance(exc, ray.exceptions.RayTaskError)
    err = translate_ray_error(exc)
    assert type(err) is EvaluationError
    assert err.render() == "error: division by zero in rule r1"


def test_bug_inside_a_worker_stays_a_traceback(tiny):
    exc = _raised(lambda: ray.get(tiny.bug.remote(), timeout=60))
    assert isinstance(exc, ray.exceptions.RayTaskError)
    assert translate_ray_error(exc) is None


def test_ray_errors_context(tiny):
    ray.kill(tiny, no_restart=True)
    _until_dead(tiny)                   # the kill is asynchronous; from now on calls fail
    with pytest.raises(EvaluationError) as info:
        with ray_errors():
            ray.get(tiny.ping.remote(), timeout=60)
    assert isinstance(info.value.__cause__, ray.exceptions.RayActorError)
    with pytest.raises(ValueError):
        with ray_errors():
            raise ValueError("not Ray's")


E = ray.exceptions


@pytest.mark.parametrize("exc, expected", [
    (E.OutOfMemoryError("Task was killed due to the node running low on memory.\n"
                        "Memory on the node was 7.5GB / 7.8GB (0.96)."), "out of memory"),
    (E.ObjectStoreFullError("Failed to put object in object store because it is full."),
     "object store is full"),
    (E.RayActorError(error_msg="The actor is dead because its worker process has died. "
                     "Worker exit type: NODE_OUT_OF_MEMORY"), "killed for lack of memory"),
    (E.RaySystemError("the raylet died"), "Ray itself failed (System error: the raylet died)"),
    (E.TaskUnschedulableError("no node has the resources"), "cannot place a worker"),
])
def test_ray_failures_name_a_fix(exc, expected):
    err = translate_ray_error(exc)
    assert isinstance(err, EvaluationError) and err.__cause__ is exc
    assert expected in _one_line(err)


@pytest.mark.parametrize("exc", [ValueError("x"), KeyboardInterrupt(), InputError("y")])
def test_other_exceptions_are_not_translated(exc):
    assert translate_ray_error(exc) is None


def test_a_local_runtime_keeps_token_authentication_without_rays_notice():
    """Ray enables token authentication for a new local cluster and says so on stderr;
    ``start_ray`` leaves it on and drops the notice."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    code = ("import os\n"
            "from psn.distributed.runtime import start_ray, stop_ray\n"
            "start_ray()\n"
            "print(os.environ.get('RAY_AUTH_MODE'))\n"
            "stop_ray()\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "token"
    assert "Token authentication" not in done.stderr, done.stderr
