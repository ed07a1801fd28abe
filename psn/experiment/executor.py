"""Running many independent runs: a cache, local processes or Ray, and a progress bar.

Role: :func:`run_all` takes :class:`~psn.experiment.runs.RunSpec` values and returns their
records. A finished run is cached as one JSON file named by its key (a hash of its
parameters and the code version, :meth:`RunSpec.key`), so an interrupted sweep resumes
where it stopped and a run shared by two experiments is computed once. The rest run

- ``inline``: one after the other in this process (tests, debugging);
- ``local``: in ``jobs`` local processes (``concurrent.futures.ProcessPoolExecutor``,
  ``spawn``, one fresh process per run so that each run's memory budget measures that run
  alone);
- ``ray``: as Ray tasks on a cluster (``address``) or a local Ray runtime, one CPU and
  one fresh worker process each.

A tqdm bar on stderr shows runs done and the time left.

Deliberately not here: what a run does (:func:`~psn.experiment.runs.execute_run`),
choosing runs, statistics.
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import signal
import sys
from contextlib import contextmanager, nullcontext
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Callable, Iterable, Mapping

from engine.options import require_callable, require_flag, require_whole
from ndlog.errors import EvaluationError, InputError
from ndlog.files import file_path, write_atomic
from ndlog.signals import held
from ndlog.text import shows_progress

from .runs import RunSpec, code_version, execute_run, record_problem

__all__ = ["Cache", "run_all", "EXECUTORS"]

#: values of ``executor``
EXECUTORS = ("local", "inline", "ray")


class Cache:
    """Finished runs, one JSON file per run in ``directory`` (``<key>.json``).

    Parameters
    ----------
    directory:
        Where the files go (created on first write).
    version:
        The code version part of every key (default :func:`code_version`).
    """

    def __init__(self, directory: str | Path, version: str | None = None):
        self.dir = file_path(directory, "run cache")
        if version is not None and not isinstance(version, str):
            raise InputError(f"the run cache's version is a string, got "
                             f"{type(version).__name__} {version!r:.80}")
        self.version = version or code_version()

    def path(self, spec: RunSpec) -> Path:
        return self.dir / f"{spec.key(self.version)}.json"

    def get(self, spec: RunSpec) -> dict | None:
        """The cached record of ``spec``, or None: a damaged file counts as missing, and so
        does a record whose process ran other code than the version its key names (the
        source changed while its sweep ran: the code that made it is no longer that
        version's)."""
        p = self.path(spec)
        try:
            record = json.loads(p.read_text())
        except (OSError, ValueError):
            return None
        if record_problem(record) or record.get("spec") != spec.to_dict():
            return None
        if record.get("code_version", self.version) != self.version:
            return None
        return record

    def put(self, spec: RunSpec, record: dict) -> None:
        """Write ``record`` atomically (a temporary file renamed into place)."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot write the run cache in {self.dir}: "
                             f"{exc.strerror}") from None
        write_atomic(self.path(spec), json.dumps(record, indent=1, default=str) + "\n",
                     "the run cache file")


def check_run_settings(executor, jobs, fresh, progress) -> None:
    """Refuse the settings of :func:`run_all` that are not what it takes (an unknown
    executor, ``jobs`` not a whole number >= 1, ``fresh`` or ``progress`` not a yes/no);
    :func:`psn.experiment.run_experiment` checks them before it claims its output.

    Raises
    ------
    InputError
        Naming the setting and the value.
    """
    if not isinstance(executor, str) or executor not in EXECUTORS:
        raise InputError(f"unknown executor {executor!r:.80}; one of {', '.join(EXECUTORS)}")
    if isinstance(jobs, int) and not isinstance(jobs, bool) and jobs < 1:
        raise InputError(f"jobs (--jobs) must be at least 1, not {jobs}")
    require_whole(jobs, "jobs (--jobs)")
    require_flag(fresh, "fresh")
    require_flag(progress, "progress", optional=True)


def run_all(specs: Iterable[RunSpec], cache: Cache, *, executor: str = "local",
            jobs: int = 1, address: str | None = None, fresh: bool = False,
            progress: bool | None = None, label: str = "runs",
            on_record: Callable[[RunSpec, dict], None] | None = None) -> dict[RunSpec, dict]:
    """Records of every spec (duplicates run once), from the cache or freshly run.

    Parameters
    ----------
    specs:
        The runs.
    cache:
        Where finished runs are kept; each new record is written as soon as it arrives.
    executor:
        ``local``, ``inline`` or ``ray`` (see the module docstring).
    jobs:
        Concurrent local processes (``local``).
    address:
        Ray cluster address (``ray``; ``None``: a local Ray runtime).
    fresh:
        Ignore cached records (they are overwritten).
    progress:
        Show a tqdm bar (``None``: when stderr is a terminal).
    on_record:
        Called with every record as it arrives (cached ones included).
    """
    check_run_settings(executor, jobs, fresh, progress)
    if not isinstance(cache, Cache):
        raise InputError(f"cache is a psn.experiment.Cache, got {type(cache).__name__}")
    require_callable(on_record, "on_record", "a function (spec, record)", 2)
    if isinstance(specs, (str, bytes, Mapping)) or not isinstance(specs, Iterable):
        raise InputError(f"specs are a list of RunSpec, got {type(specs).__name__} "
                         f"{specs!r:.80}")
    unique = list(dict.fromkeys(specs))
    for spec in unique:
        if not isinstance(spec, RunSpec):
            raise InputError(f"specs are a list of RunSpec, got {type(spec).__name__} "
                             f"{spec!r:.80} in it")
    out: dict[RunSpec, dict] = {}
    todo = []
    for spec in unique:
        record = None if fresh else cache.get(spec)
        if record is None:
            todo.append(spec)
        else:
            out[spec] = record
            if on_record:
                on_record(spec, record)
    bar = _bar(len(unique), len(unique) - len(todo), progress, label)

    def done(spec: RunSpec, record: dict) -> None:
        cache.put(spec, record)
        out[spec] = record
        if on_record:
            on_record(spec, record)
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(_describe(spec, record))

    try:
        if not todo:
            pass
        elif executor == "inline":
            for spec in todo:
                done(spec, execute_run(spec.to_dict(), cache.version))
        elif executor == "local":
            _local(todo, jobs, cache.version, done)
        else:
            _ray(todo, address, cache.version, done)
    finally:
        if bar is not None:
            bar.close()
    return out


def _local(todo: list[RunSpec], jobs: int, version: str, done) -> None:
    """The runs in local processes. Ctrl-C or SIGTERM stops the running ones and drops
    the queued ones at once (a pool's own exit would finish every queued run first, and
    its results would be lost), then acts as it would have: the signal is held while the
    pool is in use, since one arriving inside the pool's own code left it unable to shut
    down. A process that dies is an error naming the cause."""
    ctx = multiprocessing.get_context("spawn")
    with held() as asked:
        with _deaf_to_interrupts():
            pool = ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=ctx,
                                       max_tasks_per_child=1)
        finished = False
        try:
            with _deaf_to_interrupts():
                futures = {pool.submit(_execute_in_pool, spec.to_dict(), version): spec
                           for spec in todo}
            pending = set(futures)
            while pending and not asked:
                ready, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for fut in ready:
                    done(futures[fut], fut.result())
            finished = not pending
        except BrokenProcessPool:
            raise EvaluationError(
                "a run's process died (killed from outside, or by the system when memory "
                "ran out)", hint="the runs that finished are cached: the same command goes "
                "on from there; --jobs 1 gives each run more of the machine's memory"
            ) from None
        finally:
            if not finished:
                _stop_workers(pool)
            pool.shutdown(wait=True)
        if asked:       # the runs were stopped: even a handler that lets the program go on
            raise KeyboardInterrupt


@contextmanager
def _deaf_to_interrupts():
    """Ctrl-C (SIGINT) blocked in this thread during the block, so that the pool's
    processes, and its manager thread, which starts a process after each run, are made
    with it blocked: a terminal sends Ctrl-C to every process of its foreground group,
    and a run's process that was still importing the engine printed a traceback
    ("Process SpawnProcess-4: Traceback ... KeyboardInterrupt"). This process acts on
    it (:func:`_local` stops the runs); a signal that comes during the block is acted on
    when it ends. multiprocessing's resource tracker, which unblocks the signal when it
    starts, is started first."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    from multiprocessing import resource_tracker
    resource_tracker.ensure_running()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _execute_in_pool(spec: dict, version: str) -> dict:
    """:func:`execute_run` in a process of :func:`_local`'s pool, which exits after its one
    run: everything the run left is then frozen (``gc.freeze``), so that the interpreter's
    last garbage collection does not traverse it on the way out. A dense 300-node run of
    reachable with absorption (8.5 s) took 2.1 s more until its process had exited, and a
    process that is exiting still holds a core and the run's memory."""
    try:
        return execute_run(spec, version)
    finally:
        gc.freeze()


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's processes, so that its manager finds them dead, fails the
    queued runs and exits (``terminate_workers`` from Python 3.14 on). Before 3.14 the
    processes are taken from the pool's table under its lock, which its manager holds to
    start a replacement process; ``shutdown(wait=False)`` is not called first, since the
    manager can still read that table after it drops it (a TypeError in the manager)."""
    stop = getattr(pool, "terminate_workers", None)
    if stop is not None:
        stop()
        return
    with getattr(pool, "_shutdown_lock", nullcontext()):
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.terminate()


def _ray(todo: list[RunSpec], address: str | None, version: str, done) -> None:
    """The runs as Ray tasks, each in a worker process of its own (``max_calls=1``), as
    :func:`_local` runs them: a run's memory ceiling is the resident size of its process,
    and a worker reused after another run still held what that run left."""
    from psn.distributed.runtime import ray_errors, start_ray, stop_ray
    start_ray(address)
    import ray
    try:
        task = ray.remote(num_cpus=1, max_retries=0, max_calls=1)(_execute_in_pool)
        with ray_errors():
            pending = {task.remote(spec.to_dict(), version): spec for spec in todo}
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    done(pending.pop(ref), ray.get(ref))
    finally:
        stop_ray()


def _describe(spec: RunSpec, record: dict) -> str:
    status = record.get("status")
    what = f"{spec.program} {spec.annotation}" + (f" {spec.ship}" if spec.ship else "")
    return f"{what}: {status} in {record.get('wall_s', 0):.1f}s"


def _bar(total: int, initial: int, progress: bool | None, label: str):
    if not shows_progress(progress) or total == 0:
        return None
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=label, unit="run", file=sys.stderr,
                dynamic_ncols=True)
