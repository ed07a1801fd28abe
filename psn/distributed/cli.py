"""``psn run ... --engine ray --workers N [--address ADDR]``: options and runner.

Role: the command-line face of :class:`~psn.distributed.RayNetwork`. :func:`cli_options` adds
``--workers`` and ``--address`` (each only if the parser does not have it yet, so the
simulator and Ray share ``--workers``); :func:`run_from_args` runs the same steps as
``psn run --engine sim`` (``sim.cli``) when the parser has the simulator's flags: the
``--facts`` as a first step, then the ``--workload`` on the ``--topology`` (expanded by
:mod:`sim.workloads`, the one workload language), then each ``--burst`` file; with plain
``psn run`` flags it runs the facts and bursts as ``psn run`` does. Every step runs to
quiescence on Ray; ``--check`` compares with ``psn.evaluate`` on the current base facts after
every step and exits with status 1 on a difference. The table has one row per step (wall
seconds, messages and bytes between nodes and between workers, Ray calls, updates, check) and
a summary line with Ray start-up time, printed separately from evaluation; ``--format json``
prints ``{"run", "summary", "steps", "metrics"}`` and ``"relations"`` for ``--relation``.
A Ray runtime the runner started is shut down at the end. Virtual time does not exist on Ray:
a workload's ``wait`` phases only run the network to quiescence (no soft-state expiry).

Deliberately not here: the ``--engine`` switch itself (``psn/cli/run_cmd.py`` owns it).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

__all__ = ["cli_options", "run_from_args", "DEFAULT_WORKERS"]

#: Workers when ``--workers`` is not given: one per core of the 2-core machines.
DEFAULT_WORKERS = 2


def cli_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--workers N`` and ``--address ADDR`` unless already present."""
    have = parser._option_string_actions
    if "--workers" not in have:
        parser.add_argument("--workers", default=None, metavar="N",
                            help=f"workers (Ray actors) hosting the nodes "
                            f"(default {DEFAULT_WORKERS} for --engine ray)")
    if "--address" not in have:
        parser.add_argument("--address", default=None, metavar="ADDR",
                            help="--engine ray: join the Ray cluster at ADDR (HOST:6379 or "
                            "'auto'); default: a private local Ray runtime on loopback")


def _workers(args) -> int:
    from ndlog.errors import InputError
    n = getattr(args, "workers", None)
    if n is None:
        return DEFAULT_WORKERS
    try:
        n = int(n)
    except (TypeError, ValueError):
        n = 0
    if n < 1:
        raise InputError(f"--workers must be a positive integer, got "
                         f"{getattr(args, 'workers')!r}")
    return n


def _annotation(args) -> str:
    name = getattr(args, "annotation", None) or "derivation"
    if name == "best":
        from provenance import scheme_names
        name = "absorption" if "absorption" in scheme_names() else "derivation"
    return name


def _aggsel(args, program, annotation):
    """Aggregate selection as the other engines choose it: ``auto`` (the simulator's
    default) is ``multi`` where it applies; never with derivation sets (multiplicities)."""
    mode = getattr(args, "aggsel", None)
    if annotation == "derivation":
        return "off"
    if mode == "auto":
        try:
            from ndlog.analysis import aggsel_candidates
            return "multi" if aggsel_candidates(program) else None
        except Exception:  # noqa: BLE001 - analysis unavailable
            return None
    return mode


def _steps(args, program):
    """``[(label, burst)]``: facts, workload on the topology (simulator flags), bursts."""
    from engine.bursts import read_burst_file
    from ndlog.output import read_facts_files

    facts = read_facts_files(getattr(args, "facts", []) or [])
    steps = []
    if facts:
        steps.append(("facts", [(1, p, t) for p, rows in facts.items() for t in rows]))
    if hasattr(args, "topology"):
        steps += _workload_steps(args, program)
    for path in getattr(args, "burst", []) or []:
        steps.append((f"burst {path}", read_burst_file(path)))
    return steps


def _workload_steps(args, program):
    """The steps of ``--workload`` on ``--topology``, expanded lazily (they read the live
    base facts), as the simulator builds them."""
    from sim.cli import topology_from_args
    from sim.workloads import WorkloadContext, parse_workload

    seed = getattr(args, "seed", 0) or 0
    topo = topology_from_args(args)
    workload = parse_workload(getattr(args, "workload", None), topo)
    ctx = WorkloadContext(topo, {}, random.Random(seed), program.arities().get("link"),
                          getattr(args, "cost", "latency"), frozenset(program.predicates))
    return [_LazySteps(workload, ctx, topo)]


class _LazySteps:
    """Marker: the workload's steps, expanded against the network's live base facts."""

    def __init__(self, workload, ctx, topology):
        self.workload, self.ctx, self.topology = workload, ctx, topology


def run_from_args(args: argparse.Namespace, program=None) -> int:
    """Run ``psn run --engine ray`` from parsed arguments; returns the exit status
    (1 if ``--check`` found a difference from ``psn.evaluate``)."""
    import ray

    from ndlog.parser import load
    from .network import RayNetwork, WorkerPool
    from .runtime import stop_ray

    if program is None:
        program = load(args.program)
    steps = _steps(args, program)
    was_up = ray.is_initialized()
    pool = WorkerPool(_workers(args), getattr(args, "address", None))
    try:
        annotation = _annotation(args)
        net = RayNetwork(program, annotation=annotation, pool=pool,
                         seed=getattr(args, "seed", 0) or 0,
                         batch=getattr(args, "pick", "all") == "all",
                         ship=getattr(args, "ship", None),
                         aggsel=_aggsel(args, program, annotation))
        net._spark_master = getattr(args, "spark_master", None)
        check = getattr(args, "check", None) or False
        rows = []
        if getattr(args, "overlap", False) and not any(isinstance(s, _LazySteps)
                                                        for s in steps):
            steps = [("all bursts", [u for _, b in steps for u in b])]
        for label, burst in _expand(steps, net):
            rows.append(_run_step(net, program, label, burst, check))
        if not rows:
            rows.append(_run_step(net, program, "program facts", [], check))
        return _report(args, net, rows, pool)
    finally:
        pool.close()
        if not was_up:
            stop_ray()


def _expand(steps, net):
    for item in steps:
        if not isinstance(item, _LazySteps):
            yield item
            continue
        item.ctx.base = net.base_facts()
        for step in item.workload.steps(item.ctx):
            burst = [(1, p, t) for p, ts in step.insert.items() for t in ts]
            burst += [(-1, p, t) for p, ts in step.delete.items() for t in ts]
            yield step.label, burst
            item.ctx.base = net.base_facts()


_TRAFFIC = ("messages_sent", "bytes_sent", "worker_messages_sent", "worker_bytes_sent",
            "batches_sent", "updates_processed")


def _run_step(net, program, label, burst, check) -> dict:
    before = getattr(net, "_cli_totals", dict.fromkeys(_TRAFFIC, 0))
    t0 = time.perf_counter()
    net.apply(burst).run()
    wall = time.perf_counter() - t0
    m = net.metrics
    net._cli_totals = {k: m[k] for k in _TRAFFIC}
    row = {"label": label, "wall_time": wall, "recoveries": m["recoveries"],
           **{k: m[k] - before.get(k, 0) for k in _TRAFFIC}}
    if check:
        ok, diff = _check(net, program, check)
        row["check"], row["diff"] = ok, diff
    else:
        row["check"], row["diff"] = None, []
    return row


def _report(args, net, rows, pool) -> int:
    from ndlog.errors import InputError
    from ndlog.output import relations_to_json, render_relations

    result = None
    wanted = getattr(args, "relation", []) or []
    plain = not hasattr(args, "topology")   # plain ``psn run`` prints every relation
    if wanted or plain:
        result = net.relations()
        unknown = [r for r in wanted if r not in result]
        if unknown:
            raise InputError(f"no relation named {', '.join(map(repr, unknown))}; "
                             f"the program has {', '.join(sorted(result))}")
        if wanted:
            result = {r: result[r] for r in wanted}
    metrics = net.metrics
    failed = [(i, r) for i, r in enumerate(rows) if r["check"] is False]
    checked = sum(r["check"] is not None for r in rows)
    summary = {"steps": len(rows), "workers": net.workers, "annotation": net.annotation,
               "wall_time": metrics["wall_seconds"],
               "ray_startup_seconds": pool.ray_startup_seconds,
               "actor_startup_seconds": pool.actor_startup_seconds,
               "recoveries": metrics["recoveries"],
               "check": None if not checked else not failed, "checked": checked,
               "traffic": {k: metrics[k] for k in _TRAFFIC}}
    if getattr(args, "format", "table") == "json":
        doc = {"run": {"engine": "ray", "workers": net.workers,
                       "annotation": net.annotation,
                       "address": getattr(args, "address", None) or "local"},
               "summary": summary, "steps": rows, "metrics": metrics}
        if result is not None:
            doc["relations"] = relations_to_json(result)
        print(json.dumps(doc, sort_keys=True, default=repr))
    else:
        _print_rows(rows, net)
        if result is not None:
            print(render_relations(result, "table"))
        verdict = {None: "not checked", True: f"ok ({checked} steps equal the reference)",
                   False: "FAILED"}[summary["check"]]
        print(f"-- {len(rows)} steps on {net.workers} Ray workers: {summary['wall_time']:.2f} s "
              f"wall (Ray start-up {pool.ray_startup_seconds:.2f} s and actors "
              f"{pool.actor_startup_seconds:.2f} s not included); traffic "
              f"{metrics['worker_bytes_sent'] / 2**20:.3f} MB in "
              f"{metrics['worker_messages_sent']} messages between workers "
              f"({metrics['batches_sent']} Ray calls); recoveries {metrics['recoveries']}; "
              f"check: {verdict}")
    for i, r in failed:
        print(f"check failed after step {i} ({r['label']}):", file=sys.stderr)
        for rel, sign, tup in r["diff"]:
            side = "only on Ray" if sign == "+" else "missing on Ray"
            print(f"  {rel}{tup} {side}", file=sys.stderr)
    return 1 if failed else 0


def _print_rows(rows, net) -> None:
    head = ["step", "label", "wall s", "msgs", "KB sent", "worker msgs", "worker KB",
            "ray calls", "updates", "check"]
    table = [[i, r["label"], f"{r['wall_time']:.3f}", r["messages_sent"],
              f"{r['bytes_sent'] / 1024:.1f}", r["worker_messages_sent"],
              f"{r['worker_bytes_sent'] / 1024:.1f}", r["batches_sent"],
              r["updates_processed"], {None: "-", True: "ok", False: "FAIL"}[r["check"]]]
             for i, r in enumerate(rows)]
    widths = [max(len(str(h)), *(len(str(t[i])) for t in table)) for i, h in enumerate(head)]
    print(f"# annotation {net.annotation}, {net.workers} Ray workers by hash")
    print("  ".join(str(h).ljust(w) for h, w in zip(head, widths)))
    for t in table:
        print("  ".join(str(c).ljust(w) if i == 1 else str(c).rjust(w)
                        for i, (c, w) in enumerate(zip(t, widths))))


def _check(net, program, kind="python") -> tuple[bool, list]:
    """Compare with the reference (``psn.evaluate``, or Spark for ``--check spark``) on the
    current base facts (relations pruned by aggregate selection are skipped, as the
    simulator does)."""
    from ndlog.analysis import aggsel_candidates
    from ndlog.check import verdict
    from psn.oracle import reference_evaluator
    reference = reference_evaluator(kind, getattr(net, "_spark_master", None))
    want = reference(program.with_(facts=()), net.base_facts())
    return verdict(net.relations(), want, skip=aggsel_candidates(program))
