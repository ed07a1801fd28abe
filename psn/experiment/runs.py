"""One run of an experiment: its parameters, its budget, and the figures it measures.

Role: a :class:`RunSpec` names everything a run depends on (program, topology and its seed,
workload SPEC, :class:`engine.RunOptions` fields, budgets); :func:`execute_run` runs it in
the current process and returns a JSON-able record: the parameters, the code version, the
machine, and one row per workload step from the simulator's
:class:`sim.metrics.StepResult` (Liu et al. 2009 Sec. 7.1: per-tuple provenance bytes,
communication, operator state, convergence time), or, for Nigam et al. 2012's worked
examples, one outcome per delivery order tried.

Every run has a budget: wall-clock seconds and resident memory
(:attr:`RunSpec.time_budget`, :attr:`RunSpec.memory_budget`, the latter passed to the
engine as ``RunOptions.max_memory``). A run over budget, or stopped by the engine's own
guards (the derivation-set budget, no quiescence within a delivery bound), is recorded with
status ``dnf`` ("did not finish") and the steps it completed; it is data, not an error.

Deliberately not here: choosing runs (:mod:`psn.experiment.figures`), running many of them
and caching (:mod:`psn.experiment.executor`), statistics, plots, reports.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ndlog.errors import EvaluationError, InputError, PSNError
from ndlog.text import json_kind

__all__ = ["RunSpec", "TimeBudgetExceeded", "Budget", "alarm", "execute_run", "code_version",
           "RUN_CODE", "source_description", "machine_info", "STEP_FIELDS", "STATUS_OK",
           "STATUS_DNF", "STATUS_REFUSED", "record_problem"]

STATUS_OK = "ok"
#: the run stopped on a budget (time, memory, derivation sets, deliveries)
STATUS_DNF = "dnf"
#: the engine refused the run before it started (e.g. set semantics with deletions)
STATUS_REFUSED = "refused"

#: the per-step figures of a simulated run (see :func:`_step_row`)
STEP_FIELDS = ("index", "label", "inserted", "deleted", "sim_time", "wall_time", "events",
               "msgs_sent", "updates_sent", "bytes_sent", "processed", "tuples",
               "provenance_bytes", "state_bytes", "provenance_per_tuple",
               "node_state_bytes_max", "node_bytes_sent_max", "workers",
               "worker_bytes_sent_mean", "worker_bytes_sent_max", "worker_state_bytes_mean",
               "worker_state_bytes_max", "check", "diff")


#: a record's fields other than its steps and trials, with the JSON types each may hold
#: (None: the field may be null)
_RECORD_FIELDS = {"key": (str,), "status": (str,), "reason": (str, None),
                  "topology": (dict, None), "steps": (list,), "trials": (list,),
                  "example": (str,), "started": (str,), "finished": (str,),
                  "code_version": (str,), "key_version": (str,),
                  "git_describe": (str, None), "wall_s": (float,), "machine": (dict,),
                  "dnf_step": (int, None), "pid": (int, None)}

#: the fields of a step that are no number
_STEP_KINDS = {"label": (str,), "check": (bool, None)}

#: the fields of a trial of a Nigam run
_TRIAL_FIELDS = {"seed": (int,), "outcome": (str,), "detail": (str,)}


def record_problem(record) -> str | None:
    """What is wrong with ``record``, a run record read from a file (a cache file or an
    experiment's ``runs.json``), as one phrase; None for a record as :func:`execute_run`
    writes it. A damaged or hand-edited file would otherwise fail deep in the report (a
    string where a number goes) with a traceback."""
    if not isinstance(record, dict):
        return f"it is a JSON {json_kind(record)}, not an object"
    for field, kinds in _RECORD_FIELDS.items():
        if field in record and not _is(record[field], kinds):
            return f"its {field!r} is {_shown(record[field])}"
    if "key" not in record or "status" not in record:
        return "it has no 'key' or no 'status'"
    if record["status"] not in (STATUS_OK, STATUS_DNF, STATUS_REFUSED):
        return f"its status {record['status']!r} is not ok, dnf or refused"
    for i, step in enumerate(record.get("steps", ())):
        if not isinstance(step, dict) or set(STEP_FIELDS) - set(step):
            return f"its step {i} is not a step's figures ({', '.join(STEP_FIELDS[:3])}, ...)"
        for field in STEP_FIELDS:
            if not _is(step[field], _STEP_KINDS.get(field, (float,))):
                return f"the {field!r} of its step {i} is {_shown(step[field])}"
    for i, trial in enumerate(record.get("trials", ())):
        if not isinstance(trial, dict) or any(f not in trial or not _is(trial[f], kinds)
                                              for f, kinds in _TRIAL_FIELDS.items()):
            return f"its trial {i} is not a trial (seed, outcome, detail)"
        if trial["outcome"] not in OUTCOMES:
            return f"its trial {i} has the outcome {trial['outcome']!r}"
    topo = record.get("topology") or {}
    nodes, links = topo.get("nodes"), topo.get("links")
    if (not _is(nodes, (int, None)) or not _is(links, (int, None))
            or not _is(topo.get("summary"), (str, None))
            or (nodes is not None and nodes < 1) or (links is not None and links < 0)):
        return "its 'topology' has no whole number of nodes or of links, or no summary"
    return None


#: the largest figure a record holds (a count, a size in bytes, seconds): far beyond any
#: run, and far enough below float's range that a summary's squares do not overflow
_MOST = 1e18


def _is(value, kinds: tuple) -> bool:
    """``value`` is of one of ``kinds`` (``float``: a number from 0 to :data:`_MOST`, not
    a boolean; ``None``: null)."""
    if value is None:
        return None in kinds
    if isinstance(value, bool):
        return bool in kinds
    if float in kinds and isinstance(value, (int, float)):
        return 0 <= value <= _MOST
    return any(k is not None and k not in (float, bool) and isinstance(value, k)
               for k in kinds)


def _shown(value) -> str:
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return f"a JSON {json_kind(value)} {text[:40]}{'...' if len(text) > 40 else ''}"


@dataclass(frozen=True)
class RunSpec:
    """Everything one run depends on; its :meth:`key` names its cache file.

    Attributes
    ----------
    kind:
        ``sim`` (a workload on a topology in the simulator) or ``nigam`` (a worked example
        of Nigam et al. 2012 on in-memory nodes, ``trials`` delivery seeds).
    program:
        A name of :data:`psn.experiment.programs.PROGRAMS` or ``NIGAM_EXAMPLES``.
    topology, topology_options, topology_seed:
        :func:`topologies.make` arguments (``topology_options``: sorted ``(key, value)``
        pairs).
    workload:
        A workload SPEC (:func:`engine.workloads.parse_workload`).
    cost:
        Link cost of ``link/3`` facts (``latency``, ``hops``).
    annotation, ship, aggsel, delivery, seed, workers, unsafe, minship_at:
        :class:`engine.RunOptions` fields.
    check:
        Compare with ``psn.evaluate`` after ``every`` step, the ``last`` one, or ``none``.
    time_budget:
        Wall-clock seconds for the whole run.
    memory_budget:
        Resident-memory ceiling in bytes (``RunOptions.max_memory``; 0: none).
    trials, max_deliveries:
        ``nigam`` runs: delivery seeds ``seed .. seed + trials - 1`` and the deliveries
        after which a burst counts as not terminating.
    """

    kind: str = "sim"
    program: str = "reachable"
    topology: str | None = "liu100"
    topology_options: tuple = ()
    topology_seed: int = 0
    workload: str = "all"
    cost: str = "latency"
    annotation: str = "absorption"
    ship: str | None = None
    aggsel: str = "auto"
    delivery: str = "random"
    seed: int = 0
    workers: int | None = None
    unsafe: bool = False
    minship_at: str = "node"
    check: str = "every"
    time_budget: float = 300.0
    memory_budget: int = 0
    trials: int = 1
    max_deliveries: int = 20_000

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["topology_options"] = [list(kv) for kv in self.topology_options]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunSpec":
        d = dict(d)
        d["topology_options"] = tuple(tuple(kv) for kv in d.get("topology_options", ()))
        return cls(**d)

    def key(self, version: str) -> str:
        """A hash of the parameters and ``version`` (the code version): the cache key."""
        text = json.dumps({"spec": self.to_dict(), "code": version}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def options(self):
        """The :class:`engine.RunOptions` of this run."""
        from engine import RunOptions
        return RunOptions(annotation=self.annotation, ship=self.ship, aggsel=self.aggsel,
                          delivery=self.delivery, seed=self.seed, workers=self.workers,
                          unsafe=self.unsafe, max_memory=self.memory_budget,
                          minship_at=self.minship_at)

    def make_topology(self):
        import topologies
        return topologies.make(self.topology, seed=self.topology_seed,
                               **dict(self.topology_options))


class TimeBudgetExceeded(EvaluationError):
    """A run went past its wall-clock budget (:attr:`RunSpec.time_budget`)."""


#: Delay before :func:`alarm` rings again when its exception could not be raised
REFIRE_SECONDS = 0.01


@contextmanager
def alarm(seconds: float):
    """Raise :class:`TimeBudgetExceeded` in this thread after ``seconds`` (``SIGALRM``),
    wherever the run is: a single step of the engine (one node's batch, the end-of-stream
    flush of eager MinShip) can last far longer than the budget, and :class:`Budget` is
    only consulted between them. An alarm that lands where an exception cannot propagate
    (a destructor) is not reported as an ignored
    exception: it rings again :data:`REFIRE_SECONDS` later. Outside the main thread (Ray
    tasks) or without ``setitimer`` this does nothing and :class:`Budget` alone keeps the
    time."""
    usable = (threading.current_thread() is threading.main_thread()
              and hasattr(signal, "setitimer"))
    if not usable:
        yield
        return

    def fire(signum, frame):
        raise TimeBudgetExceeded(f"over the time budget of {seconds:g} s")

    previous_hook = sys.unraisablehook

    def swallowed(unraisable):
        # The alarm landed where Python cannot raise (a destructor, a C extension's
        # callback): say nothing, and ring again shortly, where the
        # exception can stop the run.
        if isinstance(unraisable.exc_value, TimeBudgetExceeded):
            signal.setitimer(signal.ITIMER_REAL, REFIRE_SECONDS)
            return
        previous_hook(unraisable)

    old = signal.signal(signal.SIGALRM, fire)
    sys.unraisablehook = swallowed
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        sys.unraisablehook = previous_hook


class Budget:
    """The guard a run's hosting loop calls (``Network.guard``): the engine's memory
    ceiling, plus a wall-clock deadline checked every ``every`` calls of :meth:`check`
    (between deliveries and steps) and at every call of :meth:`check_soon` (within a
    node's long step).

    Parameters
    ----------
    seconds:
        The time budget, counted from construction.
    memory:
        The engine's :class:`engine.guards.MemoryGuard` (or anything with ``check()`` and
        ``check_soon()``).
    """

    __slots__ = ("deadline", "seconds", "memory", "every", "_left")

    def __init__(self, seconds: float, memory=None, every: int = 32):
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.memory = memory
        self.every = every
        self._left = every

    def check(self) -> None:
        """Raise :class:`TimeBudgetExceeded` past the deadline (and whatever the memory
        guard raises)."""
        if self.memory is not None:
            self.memory.check()
        self._left -= 1
        if self._left:
            return
        self._left = self.every
        self.check_now()

    def check_soon(self) -> None:
        """Within a node's long step: the memory guard's ``check_soon``, and the
        deadline."""
        if self.memory is not None:
            self.memory.check_soon()
        self.check_now()

    def check_now(self) -> None:
        if time.monotonic() > self.deadline:
            raise TimeBudgetExceeded(f"over the time budget of {self.seconds:g} s")


# --------------------------------------------------------------------------- provenance


#: the source a run's figures depend on (what :func:`code_version` versions): the
#: language, the engine, the annotation schemes, the simulator, the topologies, and this
#: module with the programs; not the plots or the reports
RUN_CODE = ("ndlog", "localize", "engine", "provenance", "sim", "topologies",
            "psn/experiment/runs.py", "psn/experiment/programs.py")


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """The version of the code that computes a run, part of every cache key.

    In a git checkout: the last commit that touched :data:`RUN_CODE` and, if those files
    have uncommitted changes (or untracked ``.py`` files), ``+`` a hash of them, so a
    cached run is never reused for different engine code, while a change to the plots,
    the reports or the documentation does not invalidate it. Elsewhere (an unpacked
    archive, an installed package): the package version and a hash of that source, so
    that there too an edit to the engine is a new version.
    """
    root = Path(__file__).resolve().parents[2]
    if (root / ".git").exists():
        commit = _git(root, "log", "-1", "--format=%h", "--", *RUN_CODE)
        if commit and commit.strip():
            text = "git " + commit.decode().strip()
            changes = _changes_hash(root)
            return text + (f"+{changes}" if changes else "")
    from importlib.metadata import PackageNotFoundError, version
    try:
        text = "psn " + version("psn")
    except PackageNotFoundError:
        text = "psn (unknown version)"
    return f"{text}, source {_source_hash(root)}"


def _source_hash(root: Path) -> str:
    """A short hash of the ``.py`` and ``.lark`` files of :data:`RUN_CODE` under ``root``
    (their paths and contents)."""
    h = hashlib.sha256()
    for part in RUN_CODE:
        path = root / part
        files = sorted(f for pattern in ("*.py", "*.lark") for f in path.rglob(pattern)
                       if "__pycache__" not in f.parts) if path.is_dir() else [path]
        for f in files:
            try:
                data = f.read_bytes()
            except OSError:
                continue
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + data + b"\0")
    return h.hexdigest()[:8]


@functools.lru_cache(maxsize=1)
def source_description() -> str | None:
    """``git describe --always --dirty --tags`` of the whole tree (recorded with every run
    beside :func:`code_version`), or None outside a git checkout."""
    root = Path(__file__).resolve().parents[2]
    out = _git(root, "describe", "--always", "--dirty", "--tags") \
        if (root / ".git").exists() else None
    return out.decode().strip() if out else None


def _git(root: Path, *args: str) -> bytes | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                             timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _changes_hash(root: Path) -> str:
    """A short hash of the uncommitted changes to :data:`RUN_CODE` (the diff and the
    untracked ``.py``/``.lark`` files), or ``""`` if there are none."""
    diff = _git(root, "diff", "HEAD", "--", *RUN_CODE) or b""
    others = [n for n in (_git(root, "ls-files", "--others", "--exclude-standard", "--",
                               *RUN_CODE) or b"").decode().split()
              if n.endswith((".py", ".lark"))]
    if not diff and not others:
        return ""
    h = hashlib.sha256(diff)
    for name in sorted(others):
        try:
            h.update(name.encode() + b"\0" + (root / name).read_bytes())
        except OSError:
            continue
    return h.hexdigest()[:8]


@functools.lru_cache(maxsize=1)
def machine_info() -> dict:
    """Host name, OS, CPU model, logical CPUs, physical memory and Python version."""
    from engine.guards import physical_memory
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = physical_memory()
    return {"host": platform.node(), "os": platform.platform(), "cpu": cpu,
            "cpus": os.cpu_count(), "memory_gib": round(mem / 2**30, 1) if mem else None,
            "python": platform.python_version()}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- one run


def execute_run(spec: dict, version: str | None = None) -> dict:
    """Run ``spec`` (a :meth:`RunSpec.to_dict`) here and return its record.

    The record has ``spec``, ``key``, ``status`` (``ok``, ``dnf``, ``refused``),
    ``reason``, ``steps`` (``sim``: one dict of :data:`STEP_FIELDS` per completed step;
    the step that ran out of budget is not among them, its index is ``dnf_step``) or
    ``trials`` (``nigam``), ``topology`` (nodes, links, summary), ``wall_s``, ``started``,
    ``finished``, ``key_version`` (the code version of the cache key), ``code_version``
    (of the code this process runs), ``git_describe``, ``machine`` and ``pid``.

    Raises
    ------
    InputError
        For a ``spec`` that is not a mapping of RunSpec fields, or a ``version`` that is not
        a string, naming what it got.
    """
    if not isinstance(spec, dict):
        raise InputError(f"spec is a dict of RunSpec fields (RunSpec.to_dict()), got "
                         f"{type(spec).__name__} {spec!r:.80}")
    fields = [f.name for f in dataclasses.fields(RunSpec)]
    unknown = [key for key in spec if key not in fields]
    if unknown:
        raise InputError(f"a run spec has no field {unknown[0]!r}",
                         hint=f"its fields are {', '.join(fields)}")
    if version is not None and not isinstance(version, str):
        raise InputError(f"version is a string, got {type(version).__name__} {version!r:.80}")
    rs = RunSpec.from_dict(spec)
    version = version or code_version()
    # the code this process runs: a sweep's later runs start in fresh processes and read
    # the source again, which may have changed since the sweep computed its keys
    record = {"key": rs.key(version), "spec": rs.to_dict(), "key_version": version,
              "code_version": code_version(), "git_describe": source_description(),
              "machine": machine_info(),
              "pid": os.getpid(), "started": _now(),
              "status": STATUS_OK, "reason": None}
    t0 = time.perf_counter()
    if rs.kind not in ("sim", "nigam"):
        raise InputError(f"unknown run kind {rs.kind!r}")
    record.update(_nigam_run(rs) if rs.kind == "nigam" else _sim_run(rs))
    record["wall_s"] = time.perf_counter() - t0
    record["finished"] = _now()
    return record


def _stop_reason(exc: PSNError) -> tuple[str, str]:
    """``(status, reason)`` for an error that ends a run."""
    from engine.guards import (AnnotationBudgetError, MemoryLimitError,
                               UnsafeAnnotationError)
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    first = first.removeprefix("error: ")
    if isinstance(exc, TimeBudgetExceeded):
        return STATUS_DNF, f"time budget: {first}"
    if isinstance(exc, MemoryLimitError):
        return STATUS_DNF, f"memory budget: {first}"
    if isinstance(exc, AnnotationBudgetError):
        return STATUS_DNF, f"derivation budget: {first}"
    if isinstance(exc, UnsafeAnnotationError):
        return STATUS_REFUSED, first
    if _not_converged(exc):
        return STATUS_DNF, f"no quiescence: {first}"
    raise exc


def _not_converged(exc: PSNError) -> bool:
    """The engine's "no quiescence within the delivery bound" errors: a
    ``NotConvergedError``, or the hosting loop's "no quiescence after N deliveries" (not
    any error that mentions quiescence: an engine invariant violated at quiescence is a
    fault, not a run that did not finish)."""
    from engine import network
    cls = getattr(network, "NotConvergedError", None)
    if cls is not None and isinstance(exc, cls):
        return True
    return isinstance(exc, EvaluationError) and exc.message.startswith("no quiescence")


def _sim_run(rs: RunSpec) -> dict:
    from ndlog.parser import parse
    from sim import Simulation
    from .programs import program_text
    budget = Budget(rs.time_budget)
    topo = rs.make_topology()
    out: dict = {"topology": {"name": rs.topology, "nodes": topo.n,
                              "links": topo.num_links, "summary": topo.summary()},
                 "steps": []}
    steps = out["steps"]
    program = parse(program_text(rs.program))
    nodes = topo.n
    workers = rs.workers or nodes

    def collect(result, sim) -> None:
        steps.append(_step_row(result, workers))
        budget.check_now()

    try:
        with alarm(rs.time_budget):
            sim = Simulation(program, topo, options=rs.options(), cost=rs.cost)
            budget.memory = sim.net.guard
            sim.net.guard = budget
            sim.run_workload(rs.workload, check=(rs.check == "every"), callback=collect)
            if rs.check == "last" and steps:
                ok, diff = sim.check()
                steps[-1]["check"], steps[-1]["diff"] = ok, len(diff)
    except PSNError as exc:
        out["status"], out["reason"] = _stop_reason(exc)
        out["dnf_step"] = len(steps)
    return out


def _step_row(s, workers: int) -> dict:
    """One step's figures (:data:`STEP_FIELDS`) from a :class:`sim.metrics.StepResult`."""
    t, st = s.traffic, s.state
    node_state = [v.get("state_bytes", 0) for v in s.per_node.values()]
    node_sent = [v.get("bytes_sent", 0) for v in s.per_node.values()]
    w_sent = [v.get("bytes_sent", 0) for v in s.per_worker.values()]
    w_state = [v.get("state_bytes", 0) for v in s.per_worker.values()]
    return {
        "index": s.index, "label": s.label, "inserted": s.inserted, "deleted": s.deleted,
        "sim_time": s.sim_time, "wall_time": s.wall_time, "events": s.events,
        "msgs_sent": t.get("msgs_sent", 0), "updates_sent": t.get("updates_sent", 0),
        "bytes_sent": t.get("bytes_sent", 0), "processed": t.get("processed", 0),
        "tuples": st.get("tuples", 0), "provenance_bytes": st.get("provenance_bytes", 0),
        "state_bytes": st.get("state_bytes", 0),
        "provenance_per_tuple": s.provenance_per_tuple,
        "node_state_bytes_max": max(node_state, default=0),
        "node_bytes_sent_max": max(node_sent, default=0),
        "workers": workers,
        "worker_bytes_sent_mean": sum(w_sent) / workers,
        "worker_bytes_sent_max": max(w_sent, default=0),
        "worker_state_bytes_mean": sum(w_state) / workers,
        "worker_state_bytes_max": max(w_state, default=0),
        "check": s.check, "diff": len(s.diff),
    }


# --------------------------------------------------------------------------- Nigam et al.

#: outcomes of one trial of a worked example
OUTCOMES = ("correct", "wrong", "no termination", "refused")


class DeliveryBudgetExceeded(EvaluationError):
    """A burst did not reach quiescence within :attr:`RunSpec.max_deliveries`."""


def _nigam_run(rs: RunSpec) -> dict:
    """``trials`` runs of a worked example, one per delivery seed (Nigam et al. 2012)."""
    from .programs import NIGAM_EXAMPLES
    example = NIGAM_EXAMPLES[rs.program]
    budget = Budget(rs.time_budget)
    trials: list = []
    out = {"trials": trials, "example": example.name}
    try:
        with alarm(rs.time_budget):
            for i in range(rs.trials):
                budget.check_now()
                trials.append(_nigam_trial(rs, example, rs.seed + i, budget))
    except TimeBudgetExceeded as exc:
        out["status"], out["reason"] = _stop_reason(exc)
    return out


def _nigam_trial(rs: RunSpec, example, seed: int, budget: Budget) -> dict:
    import ndlog
    from engine import Network
    from ndlog.reference import evaluate
    bound = rs.max_deliveries

    def beat(deliveries: int, in_flight: int) -> None:
        if deliveries > bound:
            raise DeliveryBudgetExceeded(f"no quiescence after {bound:,} deliveries")
        budget.check()

    program = ndlog.parse(example.program)
    trial = {"seed": seed, "outcome": "correct", "detail": ""}
    try:
        net = Network(program, options=rs.options().replace(seed=seed))
        for burst in (example.facts, *example.bursts):
            net.apply(list(burst)).run(heartbeat=beat)
            want = evaluate(program.with_(facts=()), net.base_facts())
            got = net.relations()
            bad = sorted(p for p, rows in want.items() if got.get(p, set()) != rows)
            if bad:
                trial["outcome"] = "wrong"
                trial["detail"] = "differs in " + ", ".join(bad)
                break
    except DeliveryBudgetExceeded as exc:
        trial["outcome"], trial["detail"] = "no termination", str(exc)
    except PSNError as exc:
        if isinstance(exc, TimeBudgetExceeded):
            raise
        status, reason = _stop_reason(exc)
        trial["outcome"] = "refused" if status == STATUS_REFUSED else "no termination"
        trial["detail"] = reason
    return trial
