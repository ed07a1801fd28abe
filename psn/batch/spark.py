"""The Spark reference: synchronous semi-naive evaluation of NDlog as Spark DataFrame jobs.

Role: compute the result relations of an (unlocalized) program from its base facts as batch
jobs on Spark, with exactly the semantics of the Python reference
:func:`ndlog.reference.evaluate`: set semantics, strata in the order of
:func:`ndlog.analysis.strata`, aggregates over the distinct satisfying assignments of a rule
body, recursion to a fixpoint by semi-naive evaluation (Nigam et al. 2012, Algorithm 2),
stratified negation, and aggregate selection (Liu et al., ICDE 2009, Sec. 6) where
:func:`ndlog.analysis.aggsel_candidates` finds it.

How a program becomes Spark jobs:

- A relation is a set of *sub-relations*, one DataFrame (columns ``c0..cN``) per signature
  of argument kinds (:mod:`psn.batch.kinds`), so a column may hold integers in one tuple and
  symbols in another, as in Python.
- A rule is compiled, for each combination of its body atoms' signatures, into equi-joins on
  shared variables, filters (constants, comparisons) and projections (assignments, head
  arguments) built from :mod:`psn.batch.columns`. A negated atom ``not q(...)`` is a left
  anti-join of the bindings with each sub-relation of ``q`` once its arguments are bound
  (``q`` is complete: the strata put it before every rule that reads it). The only Python
  UDFs serve ``sum<...>`` and ``avg<...>``, the exactly rounded float sum
  (:func:`math.fsum`) and the correctly rounded integer average, which Spark's own ``sum``
  and division do not give (a float sum there depends on the order of the rows), and
  ``f_dist`` of lists of integers (exact, :mod:`psn.batch.columns`).
- A value keeps the kind Python gives it, row by row: where a term's kind depends on the
  row (``f_min(X, 4.5)``), a frame is split by the condition that decides it
  (:class:`~psn.batch.columns.Split`); an aggregate over integers and floats flags each
  row's kind and splits its result by the flags; a variable that two atoms bind keeps
  the first one's value, and an integer equals a float only where they are equal as
  numbers (:func:`~psn.batch.columns.equal`).
- A recursive stratum iterates: every rule with a delta on each of its recursive atoms, union,
  ``distinct``, minus the relation, then the lineage is cut with ``localCheckpoint`` (eager)
  every round (caching alone lets the plan grow without bound). A pruned
  predicate keeps, per group, only tuples best for at least one of its min/max aggregates
  (ties kept), computed with window aggregates over the group key.

Deliberately not here: session management (:mod:`psn.batch.session`), incremental
maintenance and location semantics (the ``@`` only names an argument), comparison of results
(:mod:`ndlog.check`).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from ndlog import ast as A
from ndlog.analysis import AggSelSpec, aggsel_candidates, aggsel_mode, monotone_span, strata
from ndlog.builtins import NOT_A_NUMBER
from ndlog.errors import EvaluationError, InputError, NDlogSemanticError
from ndlog.reference import base_facts
from ndlog.rewrite import project_negated_wildcards
from . import kinds as K
from .columns import (ErrorTable, Split, cast, compile_compare, compile_term, equal,
                      may_equal, order, sign, var_column, within_64_bits)

__all__ = ["evaluate_spark", "SparkStats"]


@dataclass
class SparkStats:
    """What one evaluation did: rounds per recursive stratum, tuples, seconds."""

    rounds: dict[str, int] = field(default_factory=dict)
    tuples: int = 0
    seconds: float = 0.0


def evaluate_spark(program: A.Program, facts: Mapping[str, Iterable] | None = None, *,
                   aggsel: bool | str = True, hidden: bool = False, session=None,
                   master: str | None = None, stats: SparkStats | None = None,
                   progress: Callable[[str, int, int], object] | None = None
                   ) -> dict[str, set[tuple]]:
    """Evaluate ``program`` on Spark to its least fixpoint (same result as ``psn.evaluate``).

    Parameters
    ----------
    program:
        A parsed program (``@`` is ignored: the program is evaluated as if centralized).
    facts:
        ``predicate -> iterable of tuples``, added to the program's own facts (``materialize``
        keys applied as in :func:`ndlog.reference.base_facts`).
    aggsel:
        Apply aggregate selection where :func:`ndlog.analysis.aggsel_candidates` finds it:
        True or any mode but ``"off"`` (:func:`ndlog.analysis.aggsel_mode`).
    hidden:
        Also return auxiliary predicates introduced by rewrites.
    session:
        A :class:`pyspark.sql.SparkSession`; default :func:`psn.batch.session.get_session`.
        Its SQL setting ``spark.sql.constraintPropagation.enabled`` is turned off (Spark's
        constraint propagation failed on some recursive programs).
    master:
        Spark master URL used when ``session`` is not given (default local).
    stats:
        If given, filled with rounds per recursive stratum, result size and wall time.
    progress:
        If given, called after every semi-naive round of a recursive stratum as
        ``progress(predicates, round, added)``: the stratum's predicates joined by ``/``,
        the round (from 1) and the tuples that round added. A program without a finite
        fixpoint runs round after round until interrupted; this is how a caller sees it.

    Returns
    -------
    dict[str, set[tuple]]
        Every relation of the program and of ``facts``; lists as tuples, integers as ``int``.

    Raises
    ------
    InputError
        For a ``session``, ``stats`` or ``progress`` of the wrong kind, or a ``master`` that
        is not a master URL, before any Spark session starts.
    EvaluationError
        For a value the program cannot handle (as the Python reference would), a list the
        Spark reference cannot type (mixed element kinds), or a failed Spark job.

    Notes
    -----
    Synchronous semi-naive evaluation (Nigam et al. 2012, Algorithm 2) stratum by stratum,
    as batch jobs; aggregate selection after Liu et al. (ICDE 2009), Sec. 6.
    """
    from engine.options import require_callable
    require_callable(progress, "progress", "a function (predicates, round, added)",
                     3)
    if stats is not None and not isinstance(stats, SparkStats):
        raise InputError(f"stats is a psn.batch.SparkStats, got {type(stats).__name__} "
                         f"{stats!r:.80}")
    if session is None:
        from .session import get_session
        session = get_session(master)
    else:
        from pyspark.sql import SparkSession
        if not isinstance(session, SparkSession):
            raise InputError(f"session is a pyspark.sql.SparkSession, got "
                             f"{type(session).__name__} {session!r:.80}",
                             hint="leave it out for the process's own (get_session)")
    started = time.perf_counter()
    program = project_negated_wildcards(program)
    run = _Run(session, program, aggsel, progress)
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException
    try:
        out = run.evaluate(facts)
    except (PySparkException, Py4JError) as exc:  # a Spark job failed: the user's terms
        known = run.errors.translate(exc)
        if known is not None:
            raise known from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EvaluationError(f"Spark failed while evaluating the program: {first}") from exc
    if not hidden:
        for p in program.hidden:
            out.pop(p, None)
    if stats is not None:
        stats.rounds = dict(run.rounds)
        stats.tuples = sum(len(v) for v in out.values())
        stats.seconds = time.perf_counter() - started
    return out


# ---------------------------------------------------------------------------------------
# relations: predicate -> {signature -> DataFrame with columns c0..cN}

Rel = dict  # signature -> DataFrame


def _cols(arity: int) -> list[str]:
    return [f"c{i}" for i in range(arity)] or ["c_unit"]


class _Run:
    """One evaluation: the session, the program, the relations, the error table."""

    def __init__(self, session, program: A.Program, aggsel: bool, progress=None):
        from pyspark.sql import functions as F
        self.F = F
        self.spark = session
        # Catalyst's constraint propagation through a union failed ("key not found:
        # c0#10L") on a recursive rule with a constant head beside one with a join:
        # p(N) :- link(1, N).  p(1) :- p(0).  p(N) :- p(N), link(N, 0).
        session.conf.set("spark.sql.constraintPropagation.enabled", "false")
        self.program = program
        self.errors = ErrorTable(program.source)
        self.specs: dict[str, AggSelSpec] = (aggsel_candidates(program)
                                             if aggsel_mode(aggsel) != "off" else {})
        self.rels: dict[str, Rel] = {}
        self.rounds: dict[str, int] = {}
        self.progress = progress
        self.added = 0          # tuples the rounds of the current stratum have added
        self.derived: set[str] = set()
        self.consumed = {a.pred for r in program.rules
                         for a in (*r.body_atoms, *r.negated_atoms)}
        self.cached: list = []
        self.facts: dict[str, set[tuple]] = {}
        self._fsum = None  # Python UDFs, made on first use
        self._ratio = None

    # -- facts and results ---------------------------------------------------------------
    def evaluate(self, facts) -> dict[str, set[tuple]]:
        for pred, rows in base_facts(self.program, facts).items():
            self.facts[pred] = set(rows)
            self.rels[pred] = self._load(pred, rows)
        by_head: dict[str, list[A.Rule]] = {}
        for r in self.program.rules:
            by_head.setdefault(r.head.pred, []).append(r)
        for comp in strata(self.program):
            rules = [r for p in comp for r in by_head.get(p, [])]
            if rules:
                self._stratum(set(comp), rules)
        try:
            out = self._collect_all(sorted(self.derived))
            for p in self.rels:
                if p not in out:
                    out[p] = set(self.facts.get(p, ()))
        finally:
            for df in self.cached:
                df.unpersist()
        for p in self.program.predicates:
            out.setdefault(p, set())
        return out

    def _load(self, pred: str, rows: list[tuple]) -> Rel:
        from pyspark.sql import types as T
        groups: dict[tuple, list] = {}
        for row in rows:
            sig = K.signature_of(row)
            groups.setdefault(sig, []).append(
                [K.to_storage(v, k) for v, k in zip(row, sig)] or [0])
        out: Rel = {}
        for sig, data in groups.items():
            schema = T.StructType([T.StructField(c, K.storage(k) if sig else T.LongType())
                                   for c, k in zip(_cols(len(sig)), sig or (K.LONG,))])
            out[sig] = self.spark.createDataFrame(data, schema)
        return out

    def _collect_all(self, preds: list[str]) -> dict[str, set[tuple]]:
        """Every derived relation in one Spark job: each row as JSON text of its struct.

        JSON keeps every value exactly: integers as digits, doubles as Java's round-trip
        text (``Infinity``, ``NaN`` included, which :func:`json.loads` accepts)."""
        import json
        F = self.F
        parts, sigs = [], []
        for pred in preds:
            for sig, df in self.rels.get(pred, {}).items():
                cols = _cols(len(sig))
                parts.append(df.select(F.lit(len(sigs)).alias("r"),
                                       F.to_json(F.struct(*cols)).alias("j")))
                sigs.append((pred, sig, cols))
        out: dict[str, set[tuple]] = {p: set() for p in preds}
        if not parts:
            return out
        for row in _union(parts).collect():
            pred, sig, cols = sigs[row["r"]]
            data = json.loads(row["j"])
            out[pred].add(tuple(K.from_json(data.get(c), k) for c, k in zip(cols, sig)))
        return out

    # -- strata --------------------------------------------------------------------------
    def _stratum(self, comp: set[str], rules: list[A.Rule]) -> None:
        for r in rules:
            if r.is_aggregate:
                if any(a.pred in comp for a in r.body_atoms):
                    raise NDlogSemanticError(
                        f"rule {r.name}: the aggregate depends recursively on its own result",
                        r.span, self.program.source)
                self._add(r.head.pred, self._aggregate(r))
        plain = [r for r in rules if not r.is_aggregate]
        pending: dict[str, dict[tuple, list]] = {}
        for r in plain:
            if not any(a.pred in comp for a in r.body_atoms):
                self._derive(r, None, pending)
        recursive = [r for r in plain if any(a.pred in comp for a in r.body_atoms)]
        if not recursive and not any(p in self.specs for p in comp):
            for pred, frames in pending.items():  # no fixpoint: stay lazy, no job
                self._add(pred, frames)
            return
        delta = self._merge(comp, pending, first=True)
        rounds, name = 0, "/".join(sorted(comp))
        while recursive and any(delta.values()):
            rounds += 1
            pending = {}
            for r in recursive:
                for i, lit in enumerate(r.body):
                    if isinstance(lit, A.Atom) and lit.pred in comp and delta.get(lit.pred):
                        self._derive(r, (i, delta[lit.pred]), pending)
            self.added = 0
            delta = self._merge(comp, pending, first=False)
            if self.progress is not None:
                self.progress(name, rounds, self.added)
        if recursive:
            self.rounds[name] = rounds

    def _add(self, pred: str, frames: dict[tuple, list]) -> None:
        """Non-recursive results stay lazy (no job now). A relation that rules read is made
        distinct and cached, so later strata and the final collect compute it once; one
        that only the result reads is left as is (the collect removes duplicates)."""
        rel = self.rels.setdefault(pred, {})
        for sig, dfs in frames.items():
            df = _union(dfs + ([rel[sig]] if sig in rel else []))
            rel[sig] = df.distinct() if pred in self.consumed else df
        if pred in self.consumed:
            added = {sig: rel[sig] for sig in frames}
            if len(rel) > 1:
                added = _held_once({o: df for o, df in rel.items() if o not in frames}, added)
            for sig, df in added.items():
                rel[sig] = self._cache(df)
        self.derived.add(pred)

    def _cache(self, df):
        self.cached.append(df.cache())
        return df

    def _materialize(self, df):
        """Cut the lineage and count the rows, in one Spark job."""
        df = df.localCheckpoint(eager=False)
        return df, df.count()

    def _merge(self, comp: set[str], pending: dict, first: bool) -> dict[str, Rel]:
        """Add derived tuples to their relations; return the delta (new surviving tuples).

        On the first round the delta also holds the tuples already present (facts, and
        aggregate results of this stratum), as in the Python reference."""
        delta: dict[str, Rel] = {}
        for pred in comp:
            rel = self.rels.setdefault(pred, {})
            frames = pending.get(pred, {})
            if frames:
                self.derived.add(pred)
            if first and pred in self.specs:  # existing tuples are offered to the selection
                new = {sig: _union(frames.get(sig, []) + ([rel[sig]] if sig in rel else []))
                       .distinct() for sig in set(frames) | set(rel)}
                rel.clear()
                delta[pred] = self._select(pred, rel, new)
                continue
            new = {}
            for sig, dfs in frames.items():
                cand = _union(dfs).distinct()
                new[sig] = cand.subtract(rel[sig]) if sig in rel else cand
            if len(set(new) | set(rel)) > 1:
                new = _held_once(rel, new)
            if pred in self.specs:
                delta[pred] = self._select(pred, rel, new)
            else:
                delta[pred] = self._extend(rel, new)
                if first:
                    delta[pred] = dict(rel)
        return delta

    def _extend(self, rel: Rel, new: Rel) -> Rel:
        """Add the new tuples; the relation is a union of checkpointed deltas, so its plan
        grows in width only, one leaf per round."""
        delta: Rel = {}
        for sig, df in new.items():
            df, n = self._materialize(df)
            self.added += n
            if n == 0:
                continue
            delta[sig] = df
            rel[sig] = df if sig not in rel else rel[sig].unionByName(df)
        return delta

    def _select(self, pred: str, rel: Rel, new: Rel) -> Rel:
        """Aggregate selection: keep per group the tuples best for some aggregate
        (Liu et al. Sec. 6), ties kept; the delta is the new tuples that survive."""
        F = self.F
        from pyspark.sql import Window
        spec = self.specs[pred]
        sigs = set(rel) | set(new)
        if len(sigs) > 1:
            return self._select_kinds(pred, rel, new)
        if not sigs:
            return {}
        sig = sigs.pop()
        parts = []
        if sig in rel:
            parts.append(rel[sig].withColumn("_new", F.lit(False)))
        if sig in new:
            parts.append(new[sig].withColumn("_new", F.lit(True)))
        merged = _union(parts)
        window = Window.partitionBy(*[f"c{p}" for p in spec.group])
        keep = F.lit(False)
        for k, (pos, func) in enumerate(spec.aggregates):
            agg = F.min if func == "min" else F.max
            merged = merged.withColumn(f"_best{k}", agg(f"c{pos}").over(window))
            keep = keep | (F.col(f"c{pos}") == F.col(f"_best{k}"))
        best = [f"_best{k}" for k in range(len(spec.aggregates))]
        pruned = merged.filter(keep).drop(*best).localCheckpoint(eager=False)
        counts = pruned.groupBy().agg(F.count(F.when(F.col("_new"), 1)).alias("n")).first()
        rel[sig] = pruned.drop("_new")
        if not counts or not counts["n"]:
            return {}
        self.added += counts["n"]
        return {sig: pruned.filter(F.col("_new")).drop("_new")}

    def _select_kinds(self, pred: str, rel: Rel, new: Rel) -> Rel:
        """:meth:`_select` on tuples of several signatures (integer and float costs, or
        nodes of several kinds). Signatures whose group keys can be equal (their kinds
        unify: ``1`` and ``1.0``) compete: per group, the best values among all of them
        (compared in the unified kinds) decide which tuples stay, as in Python. Group keys
        of kinds that do not unify are never equal, so their signatures compete apart.

        Raises
        ------
        EvaluationError
            When an aggregated argument mixes kinds that cannot be ordered together
            (numbers and strings), as Python cannot compare them either.
        """
        F = self.F
        spec = self.specs[pred]
        group, aggs = list(spec.group), list(spec.aggregates)
        classes = _unifiable(sorted(set(rel) | set(new), key=repr),
                             lambda sig: {p: sig[p] for p in group})
        pruned: dict[tuple, object] = {}
        for kinds, members in classes:
            for p in group:
                _unify_all([sig[p] for sig in members], _refuse_selected_lists(pred, p),
                           K.unify_held)
            for p, func in aggs:
                def refuse(k, other, func=func, p=p):
                    if K.unify(k, other) is not None:
                        _refuse_selected_lists(pred, p)(k, other)
                    raise EvaluationError(
                        f"aggregate selection on '{pred}': {func}<...> over values of "
                        f"different kinds ({K.describe(k)} and {K.describe(other)})")
                kinds[p] = _unify_all([sig[p] for sig in members], refuse, K.unify_held)
            mixed = {p for p in group + [p for p, _ in aggs]
                     if _mixes({sig[p] for sig in members})}
            on = [f"_g{p}" for p in group] + [f"_gf{p}" for p in group if p in mixed]
            parts = {}
            for sig in members:
                frames = [(rel[sig], False)] if sig in rel else []
                frames += [(new[sig], True)] if sig in new else []
                parts[sig] = _union([df.withColumn("_new", F.lit(flag))
                                     for df, flag in frames]).select(
                    "*", *_exact_keys(sig, group, kinds, mixed),
                    *[_exact_rank(F.col(f"c{p}"), sig[p], kinds[p], p in mixed)
                      .alias(f"_a{j}") for j, (p, _) in enumerate(aggs)])
            best = _union([df.select(*on, *[f"_a{j}" for j in range(len(aggs))])
                           for df in parts.values()])
            best = best.groupBy(*on).agg(
                *[(F.min if func == "min" else F.max)(f"_a{j}").alias(f"_best{j}")
                  for j, (_, func) in enumerate(aggs)])
            for sig, df in parts.items():
                joined = _join_keys(df, best, on, null_safe=bool(mixed & set(group)))
                keep = F.lit(False)
                for j in range(len(aggs)):
                    keep = keep | (F.col(f"_a{j}") == F.col(f"_best{j}"))
                cols = _cols(len(sig))
                pruned[sig] = joined.filter(keep).select(*cols, "_new") \
                    .localCheckpoint(eager=False)
        # one job counts the new survivors of every signature (and checkpoints them all)
        listed = list(pruned)
        counts = _union([df.filter(F.col("_new")).select(F.lit(i).alias("_s"))
                         for i, df in enumerate(pruned.values())]).groupBy("_s").count()
        added = {listed[row["_s"]]: row["count"] for row in counts.collect()}
        delta: Rel = {}
        for sig, df in pruned.items():
            rel[sig] = df.drop("_new")
            if added.get(sig):
                self.added += added[sig]
                delta[sig] = df.filter(F.col("_new")).drop("_new")
        return delta

    # -- rules ---------------------------------------------------------------------------
    def _derive(self, rule: A.Rule, delta, pending: dict) -> None:
        """Add the head tuples of ``rule`` (with ``delta = (body index, Rel)`` read at that
        atom, full relations elsewhere) to ``pending[pred][signature]``."""
        guard = self._guard(rule)
        for frame in self._frames(rule, delta):
            if guard is not None:
                frame = guard(frame)
            if frame is None:
                continue
            for part in _settled(frame, rule.head.args, self.errors):
                sig, df = self._head(rule, part)
                pending.setdefault(rule.head.pred, {}).setdefault(sig, []).append(df)

    def _sources(self, rule: A.Rule, delta):
        """Per body atom, the list of (signature, DataFrame) it reads."""
        out = {}
        for i, lit in enumerate(rule.body):
            if isinstance(lit, A.Atom):
                rel = delta[1] if delta is not None and delta[0] == i else \
                    self.rels.get(lit.pred, {})
                out[i] = list(rel.items())
        return out

    def _frames(self, rule: A.Rule, delta):
        """Binding frames of ``rule``'s body, one per combination of atom signatures."""
        sources = self._sources(rule, delta)
        indexes = sorted(sources)
        first = delta[0] if delta is not None else None
        for combo in itertools.product(*[sources[i] for i in indexes]):
            yield from _Planner(self, rule, dict(zip(indexes, combo))).plan(first)

    def _head(self, rule: A.Rule, frame: "_Frame"):
        cols, sig = [], []
        for i, t in enumerate(rule.head.args):
            c, k = compile_term(t, frame.kinds, self.errors, frame.subst)
            cols.append(cast(c, k).alias(f"c{i}"))
            sig.append(k)
        if not cols:
            cols = [self.F.lit(0).cast("long").alias("c_unit")]
        return tuple(sig), frame.df.select(*cols)

    def _guard(self, rule: A.Rule):
        """Aggregate selection is exact only if recursive rules strictly worsen the
        aggregated values (positive costs); fail like the Python reference otherwise."""
        spec = self.specs.get(rule.head.pred)
        checks = [(h, b, f) for (name, h, b, f) in spec.monotone if name == rule.name] \
            if spec else []
        if not checks:
            return None
        F = self.F

        def guard(frame):
            df = frame.df
            for h, b, func in checks:
                direction = "increase" if func == "min" else "decrease"
                fail = self.errors.fail(
                    f"aggregate selection on '{spec.pred}' needs {h} to strictly {direction} "
                    f"along rule {rule.name}, but a derivation does not",
                    monotone_span(rule, h))
                kh, kb = frame.kinds[h], frame.kinds[b]
                if K.unify(kh, kb) is None:
                    continue
                # exactly, as Python compares them (an integer cost and a float one)
                s = sign(F.col(var_column(h)), kh, F.col(var_column(b)), kb)
                ok = (s > 0) if func == "min" else (s < 0)
                df = df.filter(F.when(ok, F.lit(True)).otherwise(fail.isNull()))
            return _Frame(df, frame.kinds, frame.subst)
        return guard

    def _aggregate(self, rule: A.Rule) -> dict[tuple, list]:
        """Head tuples of an aggregate rule: group the distinct assignments of the body's
        variables by the non-aggregate head arguments (ndlog.reference semantics).

        Assignments whose group keys can be equal (their kinds unify: ``1`` and ``1.0``)
        are grouped together (:meth:`_group`)."""
        F = self.F
        names = rule.body_var_names
        parts = []
        key_terms = [t for t in rule.head.args if not isinstance(t, A.Aggregate)]
        for frame in (part for whole in self._assignments(rule, names)
                      for part in _settled(whole, key_terms, self.errors)):
            keys, key_kinds, aggs = [], {}, []
            for i, t in enumerate(rule.head.args):
                if isinstance(t, A.Aggregate):  # count reads no value
                    counted = t.var is None or t.func == "count"
                    k = K.LONG if counted else frame.kinds[t.var.name]
                    c = F.lit(1).cast("long") if counted else F.col(var_column(t.var.name))
                    aggs.append((c, k))
                else:
                    c, k = compile_term(t, frame.kinds, self.errors, frame.subst)
                    keys.append(cast(c, k).alias(f"c{i}"))
                    key_kinds[i] = k
            cols = keys + [c.alias(f"a{j}") for j, (c, _) in enumerate(aggs)]
            parts.append((frame.df.select(*cols), key_kinds, [k for _, k in aggs]))
        out: dict[tuple, list] = {}
        for _, members in _unifiable(parts, lambda part: part[1]):
            for sig, df in self._group(rule, members):
                out.setdefault(sig, []).append(df)
        return out

    def _assignments(self, rule: A.Rule, names: tuple[str, ...]) -> list["_Frame"]:
        """The distinct satisfying assignments of the body's variables ``names``, as
        frames of one column per variable, each value of the kind Python gives it.

        The body's frames (one per combination of its atoms' signatures) can hold equal
        assignments: ``1`` in one and ``1.0`` in another, and without variables, the one
        empty assignment in each. Python counts them once, so among frames whose
        variables' kinds unify (the others hold no equal assignment), a frame keeps only
        the assignments that no frame before it holds (integers before floats: which of
        two equal assignments Python keeps depends on its order of work); a body without
        variables has one assignment however many frames match."""
        F = self.F
        clusters = _unifiable(self._frames(rule, None),
                              lambda frame: {n: frame.kinds[n] for n in names})
        if not names:
            if not clusters:
                return []
            unit = [f.df.select(F.lit(0).alias("_unit")) for f in clusters[0][1]]
            return [_Frame(_union(unit).limit(1), {})]
        out: list[_Frame] = []
        for kinds, members in clusters:
            for n in names:
                _unify_all([f.kinds[n] for f in members],
                           self._refuse_lists(rule, f"variable {n}"), K.unify_held)
            mixed = [n for n in names if _mixes({f.kinds[n] for f in members})]
            if not mixed:
                dfs = [f.df.select(*[cast(F.col(var_column(n)), kinds[n]).alias(var_column(n))
                                     for n in names]) for f in members]
                out.append(_Frame(_union(dfs).distinct(), kinds))
                continue
            out += self._distinct_by_kind(members, names, kinds, mixed)
        return out

    def _distinct_by_kind(self, members: list, names, kinds: dict, mixed: list):
        """The distinct assignments of frames ``members`` whose variables ``mixed`` are
        integers in some and floats in others, each kept with the kinds of one of its
        equal assignments (``(1, 2.0)`` or ``(1.0, 2)``, integers first): the frames are
        grouped by exact number keys (:func:`_number_key`) and split by kind."""
        F = self.F
        dfs = []
        for f in members:
            cols = []
            for n in names:
                c = F.col(var_column(n))
                if n not in mixed:
                    cols.append(cast(c, kinds[n]).alias(var_column(n)))
                    continue
                whole, fraction, flag = _number_key(c, f.kinds[n])
                cols += [whole.alias(f"_ki_{var_column(n)}"),
                         fraction.alias(f"_kd_{var_column(n)}"),
                         flag.alias(f"_kf_{var_column(n)}")]
            dfs.append(f.df.select(*cols))
        by = [var_column(n) for n in names if n not in mixed]
        by += [f"_k{x}_{var_column(n)}" for n in mixed for x in "id"]
        pick = F.min(F.struct(*[F.col(f"_kf_{var_column(n)}").alias(f"f{i}")
                                for i, n in enumerate(mixed)])).alias("_pick")
        df = _union(dfs).groupBy(*by).agg(pick)
        choices = []
        for n in names:
            c = var_column(n)
            choices.append((kinds[n], F.col(c)) if n not in mixed else _number_choice(
                F.col("_pick")[f"f{mixed.index(n)}"], f"_ki_{c}", f"_kd_{c}"))
        return [_Frame(part, dict(zip(names, sig)))
                for sig, part in self._by_flags(df, choices, [var_column(n) for n in names])]

    def _sum_or_avg(self, rule: A.Rule, agg: A.Aggregate, c, k, when=None):
        """``(Column, kind)`` of ``sum<...>`` or ``avg<...>`` over the numbers ``c`` of kind
        ``k``, exactly as :func:`ndlog.builtins.aggregate_value` computes them, whatever
        order Spark meets the rows in. An integer sum beyond 64 bits fails only in groups
        where ``when`` holds (all of them by default).

        Integers are summed exactly as ``decimal(38, 0)`` (a sum beyond 64 bits is an error:
        the Spark reference holds 64-bit integers) and their average is Python's correctly
        rounded ``total / count``; floats are summed by :func:`math.fsum` over the group's
        values (a Python UDF), so the sum is the exactly rounded sum of the multiset and the
        average is that sum divided by the count. Spark's own ``sum`` of doubles depends on
        the order of the rows (``0.1 + 0.2 + 0.3`` is ``0.6000000000000001`` in one order
        and ``0.6`` in another) and is not used.
        """
        F = self.F
        count = F.count(F.lit(1))
        if k == K.DOUBLE:
            total = self._float_sum()(F.collect_list(c))
            nan = self.errors.fail(f"{agg.func}<...> in rule {rule.name}: the sum of infinity "
                                   f"and -infinity {NOT_A_NUMBER}", agg.span)
            total = F.when(F.isnan(total), nan.cast("double")).otherwise(total)
            if agg.func == "sum":
                return total, K.DOUBLE
            return total / count.cast("double"), K.DOUBLE
        total = F.sum(c.cast(_EXACT_INT))
        if agg.func == "avg":
            return self._int_ratio()(total, count), K.DOUBLE
        fits = total.between(F.lit(-K.LONG_LIMIT).cast(_EXACT_INT),
                             F.lit(K.LONG_LIMIT - 1).cast(_EXACT_INT))
        too_large = self.errors.fail(
            f"sum<...> in rule {rule.name} exceeds 64 bits; the Spark reference holds "
            "64-bit integers (use --engine python)", agg.span)
        if when is not None:
            fits = fits | ~when
        return F.when(fits, total.cast("long")).otherwise(too_large.cast("long")), K.LONG

    def _float_sum(self):
        if self._fsum is None:
            self._fsum = _float_sum_udf()
        return self._fsum

    def _int_ratio(self):
        if self._ratio is None:
            self._ratio = _int_ratio_udf()
        return self._ratio

    def _group(self, rule: A.Rule, parts: list) -> list[tuple[tuple, object]]:
        """Aggregate ``parts`` (``(DataFrame, key kinds, aggregate kinds)`` whose key kinds
        unify) into ``(signature, DataFrame)`` sub-relations.

        Where one position holds integers in some parts and floats in others, a group's
        value there has the kind Python gives it: a key is an integer if some assignment of
        the group has it as one (``1`` and ``1.0`` are one group; which Python keeps depends
        on its order of work), ``min``/``max`` take the kind of the value they pick
        (integers first among equal ones), ``sum`` is an integer unless a float is summed.
        Such positions carry a flag per row (0 for an integer), and the result is split by
        the flags into sub-relations."""
        F = self.F
        aggs = rule.head.aggregates
        keys = {i: [kinds[i] for _, kinds, _ in parts] for i in parts[0][1]}
        values = [[kinds[j] for _, _, kinds in parts] for j in range(len(aggs))]
        unified = {i: _unify_all(ks, self._refuse_lists(rule, f"argument {i + 1} of the head"),
                                 K.unify_held) for i, ks in keys.items()}
        value_kinds = [self._aggregated_kind(rule, agg, ks)
                       for (_, agg), ks in zip(aggs, values)]
        mixed_keys = [i for i, ks in keys.items() if _mixes(ks)]
        mixed = [j for j, ks in enumerate(values) if _mixes(ks)]
        df = _union([self._group_columns(part, unified, mixed_keys, value_kinds, mixed)
                     for part in parts])
        by = [f"c{i}" for i in keys if i not in mixed_keys]
        by += [c for i in mixed_keys for c in (f"_ki{i}", f"_kd{i}")]
        grouped = df.groupBy(*by) if by else df.withColumn("_g", F.lit(0)).groupBy("_g")
        exprs = [F.min(f"_kf{i}").alias(f"_kf{i}") for i in mixed_keys]
        choices = {}  # position -> (kind, column) or (flag, integer column, float column)
        for i in keys:
            choices[i] = (unified[i], F.col(f"c{i}")) if i not in mixed_keys else \
                _number_choice(F.col(f"_kf{i}"), f"_ki{i}", f"_kd{i}")
        for j, ((i, agg), k) in enumerate(zip(aggs, value_kinds)):
            made, choices[i] = self._aggregated(rule, agg, j, k, j in mixed)
            exprs += made
        result = grouped.agg(*exprs)
        arity = rule.head.arity
        return self._by_flags(result, [choices[i] for i in range(arity)], _cols(arity))

    def _by_flags(self, df, choices: list, names: list) -> list[tuple[tuple, object]]:
        """:func:`_parts_by_flags` over the combinations of flags that ``df`` holds. Where a
        position has a flag, ``df`` is checkpointed first (one job), so that its parts
        share one computation and later plans stay small, and a second job lists the
        combinations."""
        flags = [choice[0].alias(f"_b{i}") for i, choice in enumerate(choices)
                 if len(choice) == 3]
        if not flags:
            return _parts_by_flags(df, choices, names, [()])
        df = df.localCheckpoint(eager=True)
        seen = sorted(tuple(row) for row in df.select(*flags).distinct().collect())
        return _parts_by_flags(df, choices, names, seen)

    def _aggregated_kind(self, rule: A.Rule, agg: A.Aggregate, kinds: list):
        """The kind that holds every aggregated value, or the error of values that mix
        kinds no column holds."""
        def refuse(k, other):
            if K.unify(k, other) is not None:   # lists of integers and of floats
                self._refuse_lists(rule, f"{agg.func}<...>")(k, other)
            raise EvaluationError(
                f"{agg.func}<...> in rule {rule.name} over values of different kinds "
                f"({K.describe(k)} and {K.describe(other)})", agg.span, self.program.source)
        return _unify_all(kinds, refuse, K.unify_held)

    def _refuse_lists(self, rule: A.Rule, what: str):
        """:func:`_refuse_mixed_lists` for one column of ``rule`` (``what``: a group key, a
        variable of an aggregate's body, an aggregate's value), at the rule."""
        return _refuse_mixed_lists(f"rule {rule.name}", what, rule.span, self.program.source)

    def _group_columns(self, part, unified: dict, mixed_keys: list, value_kinds: list,
                       mixed: list):
        """One part's columns for :meth:`_group`: keys and values cast to their unified
        kinds, and where a position mixes integers and floats, the value as an integer
        and as a float and a flag (0 for an integer); a key is grouped by ``_ki`` (the
        integer, or the float where it is a whole number within 64 bits) and ``_kd`` (the
        other floats), so equal keys meet exactly (:func:`_number_key`)."""
        F = self.F
        df, key_kinds, agg_kinds = part
        cols = []
        for i, k in key_kinds.items():
            c = F.col(f"c{i}")
            if i not in mixed_keys:
                cols.append(cast(c, unified[i]).alias(f"c{i}"))
                continue
            whole, fraction, flag = _number_key(c, k)
            cols += [whole.alias(f"_ki{i}"), fraction.alias(f"_kd{i}"), flag.alias(f"_kf{i}")]
        for j, (k, u) in enumerate(zip(agg_kinds, value_kinds)):
            c = F.col(f"a{j}")
            if j not in mixed:
                cols.append(cast(c, u).alias(f"a{j}"))
                continue
            integer = c if k == K.LONG else F.lit(None).cast("long")
            cols += [c.cast("double").alias(f"a{j}"), integer.alias(f"_al{j}"),
                     F.lit(int(k != K.LONG)).alias(f"_af{j}")]
        return df.select(*cols)

    def _aggregated(self, rule: A.Rule, agg: A.Aggregate, j: int, k, mixed: bool):
        """The aggregate expressions of value ``j`` and how to read its result: ``(kind,
        column)``, or where integers and floats mix, ``(flag, integer, float)``."""
        F = self.F
        c = F.col(f"a{j}")
        if agg.func == "count":
            return [F.count(F.lit(1)).alias(f"_v{j}")], (K.LONG, F.col(f"_v{j}"))
        if agg.func in ("min", "max") and mixed:
            # the least (greatest) value, integers first among equals, exactly: by the value
            # as a float, then by the sign of an integer's rounding to it (2**53 + 1 is
            # 2.0**53 as a float, and above it), then by the integer itself
            flag = F.col(f"_af{j}") if agg.func == "min" else 1 - F.col(f"_af{j}")
            whole = F.col(f"_al{j}")
            rounded = F.when(whole.isNotNull(), order(whole, c)).otherwise(F.lit(0))
            best = F.struct(c.alias("d"), rounded.alias("r"), flag.alias("f"),
                            whole.alias("l"))
            s = F.col(f"_s{j}")
            read = s["f"] if agg.func == "min" else 1 - s["f"]
            return [(F.min if agg.func == "min" else F.max)(best).alias(f"_s{j}")], \
                (read, s["l"], s["d"])
        if agg.func in ("min", "max"):
            return [(F.min(c) if agg.func == "min" else F.max(c)).alias(f"_v{j}")], \
                (k, F.col(f"_v{j}"))
        if not K.is_number(k):
            e = self.errors.fail(f"{agg.func}<...> in rule {rule.name} over values that "
                                 f"cannot be added: {K.describe(k)}s", agg.span)
            return [F.first(e.cast("long")).alias(f"_v{j}")], (K.LONG, F.col(f"_v{j}"))
        if not mixed:
            e, ok = self._sum_or_avg(rule, agg, c, k)
            return [cast(e, ok).alias(f"_v{j}")], (ok, F.col(f"_v{j}"))
        # integers and floats: an integer sum where no float is summed (Python's rule)
        floats = F.max(f"_af{j}")
        whole, _ = self._sum_or_avg(rule, agg, F.col(f"_al{j}"), K.LONG, when=floats == 0)
        fractional, _ = self._sum_or_avg(rule, agg, c, K.DOUBLE)
        if agg.func == "avg":
            return [F.when(floats == 0, whole).otherwise(fractional).alias(f"_v{j}")], \
                (K.DOUBLE, F.col(f"_v{j}"))
        return [floats.alias(f"_f{j}"), whole.alias(f"_i{j}"), fractional.alias(f"_d{j}")], \
            (F.col(f"_f{j}"), F.col(f"_i{j}"), F.col(f"_d{j}"))


def _unify_all(kinds, refuse=None, unify=K.unify):
    """The kind holding values of every kind of ``kinds`` (by ``unify``); where two kinds
    do not unify, ``refuse(kind so far, kind)`` raises (without it, ``kinds`` are known to
    unify)."""
    out = K.NULL
    for k in kinds:
        u = unify(out, k)
        if u is None and refuse is not None:
            refuse(out, k)
        out = u
    return out


def _mixes(kinds) -> bool:
    """Whether a position holds integers in some parts and floats in others."""
    return K.LONG in kinds and K.DOUBLE in kinds


def _held_once(rel: Rel, new: Rel) -> Rel:
    """``new`` without the tuples equal to one held under another signature of the
    relation: in ``rel``, or new under a signature before it (integers before floats). A
    relation holds a value once, as in Python, though ``1`` and ``1.0`` (or ``[]`` in
    columns of two kinds) have different signatures; which of them stays depends on the
    order of work, as in Python."""
    from pyspark.sql import functions as F
    out: Rel = {}
    for sig in sorted(new, key=lambda sig: (repr(sig).count(K.DOUBLE), repr(sig))):
        df = new[sig]
        others = [(o, d) for o, d in rel.items() if o != sig] + list(out.items())
        for other, held in others:
            if len(other) != len(sig) or not all(map(may_equal, sig, other)):
                continue
            cond = F.lit(True)
            for i, (k, ko) in enumerate(zip(sig, other)):
                cond = cond & equal(F.col(f"l.c{i}"), k, F.col(f"r.c{i}"), ko)
            df = df.alias("l").join(held.alias("r"), on=cond, how="left_anti")
        out[sig] = df
    return out


def _refuse_mixed_lists(where: str, what: str, span=None, source=None):
    """A ``refuse`` for :func:`_unify_all` with :func:`psn.batch.kinds.unify_held`: the
    error of lists of integers and lists of floats that one column (``what``) would hold,
    turning the integers into floats; ``where`` names the rule or the aggregate
    selection."""
    def refuse(k, other):
        raise EvaluationError(
            f"{where}: the Spark reference cannot hold {K.describe(k)} and "
            f"{K.describe(other)} in one column ({what}): the integers would become "
            "floats; use --engine python", span, source)
    return refuse


def _refuse_selected_lists(pred: str, p: int):
    """:func:`_refuse_mixed_lists` for argument ``p`` of ``pred`` under aggregate
    selection."""
    return _refuse_mixed_lists(f"aggregate selection on '{pred}'", f"argument {p + 1}")


def _join_keys(df, best, on: list, null_safe: bool):
    """``df`` joined with ``best`` on the columns ``on`` (both have them; every row of
    ``best`` when there are none), null equal to null where ``null_safe`` (the exact pairs
    of :func:`_number_key` hold a null on one side)."""
    if not on:
        return df.crossJoin(best)
    if not null_safe:
        return df.join(best, on=on, how="inner")
    from pyspark.sql import functions as F
    right = best.select(*[F.col(c).alias(f"_r{c}") for c in on],
                        *[c for c in best.columns if c not in on])
    cond = F.col(on[0]).eqNullSafe(F.col(f"_r{on[0]}"))
    for c in on[1:]:
        cond = cond & F.col(c).eqNullSafe(F.col(f"_r{c}"))
    return df.join(right, on=cond, how="inner")


def _exact_keys(sig: tuple, group: list, kinds: dict, mixed: set) -> list:
    """The group-key columns of aggregate selection for tuples of signature ``sig``: each
    position in its unified kind, or where integers and floats meet (``mixed``), as
    :func:`_number_key`'s exact pair (an integer and a float are one group only if they
    are equal, as in Python; ``2**53 + 1`` and ``2.0**53`` are two)."""
    from pyspark.sql import functions as F
    cols = []
    for p in group:
        c = F.col(f"c{p}")
        if p not in mixed:
            cols.append(c.cast(K.storage(kinds[p])).alias(f"_g{p}"))
            continue
        whole, fraction, _ = _number_key(c, sig[p])
        cols += [whole.alias(f"_g{p}"), fraction.alias(f"_gf{p}")]
    return cols


def _exact_rank(c, k, unified, mixed: bool):
    """The column aggregate selection ranks a value ``c`` of kind ``k`` by: ``c`` in the
    ``unified`` kind, or where integers and floats meet (``mixed``), a triple that orders
    them exactly and keeps equal values tied: the value as a float, the sign of an
    integer's rounding to it (:func:`~psn.batch.columns.order`; 0 for a float), and an
    integer that the float does not hold exactly (``2**54 + 1`` and ``2**54 + 2`` are both
    ``2.0**54`` and above it; null otherwise, so that ``5`` ties with ``5.0``)."""
    from pyspark.sql import functions as F
    if not mixed:
        return c.cast(K.storage(unified))
    d = c.cast("double")
    if k != K.LONG:
        return F.struct(d.alias("d"), F.lit(0).alias("r"), F.lit(None).cast("long").alias("l"))
    r = order(c, d)
    return F.struct(d.alias("d"), r.alias("r"), F.when(r != 0, c).alias("l"))


def _number_key(c, k):
    """``(integer, float, flag)`` columns of a number ``c`` of kind ``k`` that group equal
    integers and floats together exactly: the integer, or the float where it is a whole
    number within 64 bits (else null); the other floats (else null); 0 for an integer,
    1 for a float."""
    from pyspark.sql import functions as F
    if k == K.LONG:
        return c, F.lit(None).cast("double"), F.lit(0)
    c = c.cast("double")
    whole = F.when(within_64_bits(c), c.cast("long").cast("double") == c) \
        .otherwise(F.lit(False))
    return F.when(whole, c.cast("long")), F.when(~whole, c), F.lit(1)


def _number_choice(flag, whole: str, fraction: str) -> tuple:
    """How :func:`_parts_by_flags` reads a number grouped by :func:`_number_key` columns
    ``whole`` and ``fraction``: the integer where ``flag`` is 0, else the float."""
    from pyspark.sql import functions as F
    return flag, F.col(whole), F.coalesce(F.col(fraction), F.col(whole).cast("double"))


def _parts_by_flags(df, choices: list, names: list,
                    combinations) -> list[tuple[tuple, object]]:
    """``df`` as ``(signature, DataFrame)`` parts of columns ``names``, one per
    combination of the flags in ``choices`` (a position's ``(kind, column)``, or
    ``(flag, integer column, float column)`` with flag 0 for an integer) that
    ``combinations`` lists (tuples of the flags, in position order)."""
    flagged = [i for i, choice in enumerate(choices) if len(choice) == 3]
    out = []
    for bits in combinations:
        rows = df
        picked = dict(zip(flagged, bits))
        cols, sig = [], []
        for i, choice in enumerate(choices):
            if i in picked:
                rows = rows.filter(choice[0] == picked[i])
                k, c = (K.DOUBLE, choice[2]) if picked[i] else (K.LONG, choice[1])
            else:
                k, c = choice
            cols.append(cast(c, k).alias(names[i]))
            sig.append(k)
        out.append((tuple(sig), rows.select(*cols)))
    return out


#: Spark type that sums 64-bit integers exactly (2^63 rows of 2^63 stay below 10^38)
_EXACT_INT = "decimal(38,0)"


def _float_sum_udf():
    """A Spark UDF: the exactly rounded sum of an array of doubles (order-independent).

    The function is defined in here so that Spark ships it by value: executors need only
    the standard library, not this project. Non-finite values decide the sum as in IEEE
    arithmetic (NaN for both infinities, which the caller refuses; else the infinity);
    finite values are summed by :func:`math.fsum`, which rounds the exact sum once, and
    when a partial sum overflows, by exact rational arithmetic (an exact sum beyond the
    float range rounds to an infinity, as in IEEE arithmetic).
    """
    from pyspark.sql import functions as F, types as T

    def exact_sum(values):
        import math
        from fractions import Fraction
        special = [v for v in values if not math.isfinite(v)]
        if special:
            return sum(special)
        try:
            return math.fsum(values)
        except OverflowError:
            exact = sum(map(Fraction, values), Fraction(0))
            try:
                return float(exact)
            except OverflowError:
                return math.copysign(math.inf, exact)

    return F.udf(exact_sum, T.DoubleType(), useArrow=False)


def _int_ratio_udf():
    """A Spark UDF: ``total / count`` of an exact integer total (a ``decimal(38,0)``) as
    Python's correctly rounded integer division; shipped by value like
    :func:`_float_sum_udf`."""
    from pyspark.sql import functions as F, types as T

    def ratio(total, count):
        return None if total is None else int(total) / count

    return F.udf(ratio, T.DoubleType(), useArrow=False)


def _unifiable(items, kinds_of) -> list[tuple[dict, list]]:
    """``items`` in classes whose kinds unify (:func:`psn.batch.kinds.unify`), each as
    ``(kinds, members)``: ``kinds_of(item)`` gives an item's ``name -> kind``, and a class
    holds the unified kinds of its members. Values of items in different classes are never
    equal (``1`` and ``1.0`` are in one class; a number and a string are not)."""
    classes: list[tuple[dict, list]] = []
    for item in items:
        mine = kinds_of(item)
        for kinds, members in classes:
            merged = {n: K.unify(kinds[n], k) for n, k in mine.items()}
            if None not in merged.values():
                kinds.update(merged)
                members.append(item)
                break
        else:
            classes.append((dict(mine), [item]))
    return classes


def _union(dfs: list):
    dfs = [d for d in dfs if d is not None]
    if not dfs:
        return None
    out = dfs[0]
    for d in dfs[1:]:
        out = out.unionByName(d)
    return out


# ---------------------------------------------------------------------------------------
# join planning


@dataclass
class _Frame:
    """A DataFrame of variable bindings (columns ``v_<name>``), each variable's kind, and
    the argument that each term whose kind depends on the row is in these rows
    (``id(term) -> argument``, see :class:`~psn.batch.columns.Split`)."""

    df: object
    kinds: dict
    subst: dict = field(default_factory=dict)


def _settled(frame: _Frame, terms, errors: ErrorTable) -> list[_Frame]:
    """``frame`` split into parts in each of which every one of ``terms`` has one kind."""
    try:
        for t in terms:
            compile_term(t, frame.kinds, errors, frame.subst)
    except Split as split:
        return [p for part in _split(frame, split) for p in _settled(part, terms, errors)]
    return [frame]


def _split(frame: _Frame, split: Split) -> list[_Frame]:
    """The rows of ``frame`` where ``split.node`` is its first argument, and the others."""
    return [_Frame(frame.df.filter(cond), frame.kinds, {**frame.subst, id(split.node): arg})
            for cond, arg in ((split.cond, split.first), (~split.cond, split.second))]


class _Planner:
    """Order one rule body for one combination of atom signatures and build its frame.

    Like :func:`ndlog.reference.compile_body`: start from the delta atom (if any), run every
    comparison and assignment as soon as its variables are bound, and join next the atom
    sharing the most bound variables (ties: body order). :meth:`plan` returns the frames
    (more than one where a term's kind depends on the row, :func:`_split`), none when the
    combination cannot match (a constant or shared variable of an incompatible kind)."""

    def __init__(self, run: _Run, rule: A.Rule, combo: dict):
        self.run = run
        self.F = run.F
        self.rule = rule
        self.combo = combo
        self.synthetic = 0

    def plan(self, first: int | None) -> list[_Frame]:
        rule = self.rule
        remaining = list(range(len(rule.body)))
        extra: list[A.Compare] = []
        frame: _Frame | None = None
        if not rule.body_atoms:  # a body of comparisons and assignments only
            frame = _Frame(self.run.spark.range(1).select(self.F.lit(0).alias("_unit")), {})
        if first is not None:
            frame = self._join(frame, first, extra)
            remaining.remove(first)
            if frame is None:
                return []
        return self._complete(frame, remaining, extra)

    def _complete(self, frame, remaining: list, extra: list) -> list[_Frame]:
        rule = self.rule
        while True:
            frames, remaining, extra = self._literals(frame, remaining, extra)
            if len(frames) > 1:
                return [f for part in frames
                        for f in self._complete(part, list(remaining), list(extra))]
            frame = frames[0]
            atoms = [i for i in remaining if isinstance(rule.body[i], A.Atom)]
            if not atoms:
                break
            bound = set(frame.kinds) if frame else set()
            best = max(atoms, key=lambda i: (_shared(rule.body[i], bound), -i))
            frame = self._join(frame, best, extra)
            remaining.remove(best)
            if frame is None:
                return []
        if remaining or extra:
            lit = rule.body[remaining[0]] if remaining else extra[0]
            raise NDlogSemanticError(
                f"rule {rule.name}: this literal uses variables that nothing binds",
                lit.span, self.run.program.source)
        return [frame]

    def _literals(self, frame, remaining, extra):
        """Apply every ready comparison or assignment, repeatedly; at a literal with a term
        whose kind depends on the row, stop and return the frame's parts (:func:`_split`),
        with that literal still to apply."""
        if frame is None:
            return [frame], remaining, extra
        progressed = True
        try:
            while progressed:
                progressed = False
                for lit in list(extra):
                    if _ready(lit.left, frame.kinds) and _ready(lit.right, frame.kinds):
                        frame = self._filter(frame, lit)
                        extra.remove(lit)
                        progressed = True
                for idx in list(remaining):
                    lit = self.rule.body[idx]
                    if isinstance(lit, A.Atom):
                        continue
                    made = self._nonatom(frame, lit)
                    if made is not None:
                        frame = made
                        remaining.remove(idx)
                        progressed = True
        except Split as split:
            return _split(frame, split), remaining, extra
        return [frame], remaining, extra

    def _nonatom(self, frame: _Frame, lit):
        kinds = frame.kinds
        if isinstance(lit, A.Negated):
            return self._negate(frame, lit)
        if isinstance(lit, A.Assign):
            if not _ready(lit.expr, kinds):
                return None
            if lit.var.name in kinds:
                raise NDlogSemanticError(
                    f"variable '{lit.var.name}' is assigned with ':=' but is already bound",
                    lit.var.span or lit.span, self.run.program.source,
                    hint=f"':=' binds a new variable; to test a value, write "
                         f"{lit.var.name} == ...")
            return self._bind(frame, lit.var.name, lit.expr, lit)
        if lit.op == "=":
            # X = e never binds a variable that a ':=' of the rule binds: it tests it once
            # the ':=' has run (docs/language.md, section 5)
            assigned = {a.var.name for a in self.rule.body if isinstance(a, A.Assign)}
            for var, other in ((lit.left, lit.right), (lit.right, lit.left)):
                if (isinstance(var, A.Var) and not var.anonymous and var.name not in kinds
                        and var.name not in assigned and _ready(other, kinds)):
                    return self._bind(frame, var.name, other, lit)
        if _ready(lit.left, kinds) and _ready(lit.right, kinds):
            return self._filter(frame, lit)
        return None

    def _negate(self, frame: _Frame, lit: A.Negated) -> _Frame | None:
        """``not q(args)`` once its arguments are bound: the bindings that no tuple of any
        sub-relation of ``q`` equals (a left anti-join per signature; a signature whose
        kinds cannot equal the arguments' removes nothing)."""
        atom = lit.atom
        if not all(_ready(t, frame.kinds) for t in atom.args):
            return None
        F = self.F
        df = frame.df
        for sig, rel in self.run.rels.get(atom.pred, {}).items():
            if len(sig) != atom.arity:
                continue
            cond = F.lit(True)
            for i, (t, k) in enumerate(zip(atom.args, sig)):
                c, tk = compile_term(t, frame.kinds, self.run.errors, frame.subst)
                if not may_equal(tk, k):
                    break
                cond = cond & equal(c, tk, F.col(f"c{i}"), k)
            else:
                df = df.join(rel, on=cond, how="left_anti")
        return _Frame(df, frame.kinds, frame.subst)

    def _bind(self, frame: _Frame, name: str, expr: A.Term, lit) -> _Frame:
        """Bind ``name`` to ``expr`` (the assignment ``lit``). A variable that nothing else
        in the rule reads is still computed on every row, as Python computes it: Spark
        would drop the unread column, and with it an error the expression raises
        (``Y := X / 0``). A filter that reads the column and keeps every row keeps it: it
        is not deterministic (``rand``), so the optimizer can neither fold nor move it, and
        it reads the value through ``to_json``, which no rule simplifies (tests such as
        ``isnull`` over an error or a non-nullable column are folded away).
        """
        F = self.F
        c, k = compile_term(expr, frame.kinds, self.run.errors, frame.subst)
        col = var_column(name)
        df = frame.df.withColumn(col, cast(c, k))
        if self._unread(name, lit):
            seen = F.length(F.to_json(F.struct(F.col(col).alias("v"))))
            df = df.filter(F.rand(0) < F.lit(2) + seen * 0)
        return _Frame(df, {**frame.kinds, name: k}, frame.subst)

    def _unread(self, name: str, lit) -> bool:
        """Whether no literal of the rule but ``lit``, nor its head, has variable ``name``."""
        others = [self.rule.head, *(o for o in self.rule.body if o is not lit)]
        return not any(v.name == name for o in others for v in A.literal_vars(o))

    def _filter(self, frame: _Frame, lit: A.Compare) -> _Frame:
        test = compile_compare(lit, frame.kinds, self.run.errors, frame.subst)
        return _Frame(frame.df.filter(test), frame.kinds, frame.subst)

    def _atom(self, idx: int, extra: list):
        """The atom's tuples as a binding frame, or None if its signature cannot match."""
        F = self.F
        atom: A.Atom = self.rule.body[idx]
        sig, df = self.combo[idx]
        if len(sig) != atom.arity:
            return None
        kinds: dict = {}
        select, conds = [], []
        first_col: dict[str, str] = {}
        for i, (t, k) in enumerate(zip(atom.args, sig)):
            col = F.col(f"c{i}")
            if isinstance(t, A.Var) and t.anonymous:
                continue
            if isinstance(t, A.Var):
                if t.name in first_col:
                    if not may_equal(kinds[t.name], k):
                        return None
                    conds.append(equal(col, k, F.col(first_col[t.name]), kinds[t.name]))
                    continue
                first_col[t.name] = f"c{i}"
                kinds[t.name] = k
                select.append(col.alias(var_column(t.name)))
            elif isinstance(t, A.Const):
                value, ck = compile_term(t, {}, self.run.errors)
                if not may_equal(ck, k):
                    return None
                conds.append(equal(col, k, value, ck))
            else:  # an expression argument: compare once its variables are bound
                self.synthetic += 1
                name = f"%t{idx}_{self.synthetic}"
                kinds[name] = k
                select.append(col.alias(var_column(name)))
                extra.append(A.Compare("==", A.Var(name), t, t.span if hasattr(t, "span")
                                       else None))
        for cond in conds:
            df = df.filter(cond)
        if not select:  # nothing to bind: the atom only says "some tuple matches"
            select = [F.lit(0).alias(f"_unit{idx}")]
            df = df.limit(1)
        return _Frame(df.select(*select), kinds)

    def _join(self, frame: _Frame | None, idx: int, extra: list):
        right = self._atom(idx, extra)
        if right is None:
            return None
        if frame is None:
            return right
        shared = [n for n in right.kinds if n in frame.kinds]
        same = [n for n in shared if frame.kinds[n] == right.kinds[n]]
        right_df, cond = right.df, None
        for n in shared:  # a variable keeps the value (and kind) it was bound to first
            if n in same:
                continue
            if not may_equal(frame.kinds[n], right.kinds[n]):
                return None
            col = var_column(n)
            right_df = right_df.withColumnRenamed(col, "r_" + col)
            test = equal(self.F.col(col), frame.kinds[n], self.F.col("r_" + col),
                         right.kinds[n])
            cond = test if cond is None else cond & test
        if same:
            df = frame.df.join(right_df, on=[var_column(n) for n in same], how="inner")
            df = df if cond is None else df.filter(cond)
        else:
            df = frame.df.crossJoin(right_df) if cond is None else \
                frame.df.join(right_df, on=cond, how="inner")
        if cond is not None:
            df = df.drop(*["r_" + var_column(n) for n in shared if n not in same])
        return _Frame(df, {**right.kinds, **frame.kinds}, frame.subst)


def _ready(term: A.Term, kinds: dict) -> bool:
    return all(v.name in kinds for v in A.term_vars(term))


def _shared(atom: A.Atom, bound: set[str]) -> int:
    return sum(1 for v in A.literal_vars(atom) if v.name in bound)
