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
  UDFs serve ``sum<...>``
  and ``avg<...>``: the exactly rounded float sum (:func:`math.fsum`) and the correctly
  rounded integer average, which Spark's own ``sum`` and division do not give (a float sum
  there depends on the order of the rows).
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
from ndlog.errors import EvaluationError, NDlogSemanticError
from ndlog.reference import base_facts
from ndlog.rewrite import project_negated_wildcards
from . import kinds as K
from .columns import ErrorTable, cast, compile_compare, compile_term, var_column

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
    EvaluationError
        For a value the program cannot handle (as the Python reference would), a list the
        Spark reference cannot type (mixed element kinds), or a failed Spark job.

    Notes
    -----
    Synchronous semi-naive evaluation (Nigam et al. 2012, Algorithm 2) stratum by stratum,
    as batch jobs; aggregate selection after Liu et al. (ICDE 2009), Sec. 6.
    """
    if session is None:
        from .session import get_session
        session = get_session(master)
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
            rel[sig] = self._cache(df.distinct()) if pred in self.consumed else df
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
            for p, func in aggs:
                k = K.NULL
                for sig in members:
                    u = K.unify(k, sig[p])
                    if u is None:
                        raise EvaluationError(
                            f"aggregate selection on '{pred}': {func}<...> over values of "
                            f"different kinds ({K.describe(k)} and {K.describe(sig[p])})")
                    k = u
                kinds[p] = k
            keys = [F.col(f"c{p}").cast(K.storage(kinds[p])).alias(f"_g{p}") for p in group]
            ranked = [F.col(f"c{p}").cast(K.storage(kinds[p])).alias(f"_a{j}")
                      for j, (p, _) in enumerate(aggs)]
            parts = {}
            for sig in members:
                frames = [(rel[sig], False)] if sig in rel else []
                frames += [(new[sig], True)] if sig in new else []
                parts[sig] = _union([df.withColumn("_new", F.lit(flag))
                                     for df, flag in frames]).select("*", *keys, *ranked)
            best = _union([df.select(*[f"_g{p}" for p in group],
                                     *[f"_a{j}" for j in range(len(aggs))])
                           for df in parts.values()])
            best = best.groupBy(*[f"_g{p}" for p in group]).agg(
                *[(F.min if func == "min" else F.max)(f"_a{j}").alias(f"_best{j}")
                  for j, (_, func) in enumerate(aggs)])
            for sig, df in parts.items():
                on = [f"_g{p}" for p in group]
                joined = df.join(best, on=on, how="inner") if on else df.crossJoin(best)
                keep = F.lit(False)
                for j in range(len(aggs)):
                    keep = keep | (F.col(f"_a{j}") == F.col(f"_best{j}"))
                cols = _cols(len(sig))
                pruned[sig] = joined.filter(keep).select(*cols, "_new") \
                    .localCheckpoint(eager=False)
        # one job counts the new survivors of every signature (and checkpoints them all)
        order = list(pruned)
        counts = _union([df.filter(F.col("_new")).select(F.lit(i).alias("_s"))
                         for i, df in enumerate(pruned.values())]).groupBy("_s").count()
        added = {order[row["_s"]]: row["count"] for row in counts.collect()}
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
            sig, df = self._head(rule, frame)
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
            frame = _Planner(self, rule, dict(zip(indexes, combo))).plan(first)
            if frame is not None:
                yield frame

    def _head(self, rule: A.Rule, frame: "_Frame"):
        cols, sig = [], []
        for i, t in enumerate(rule.head.args):
            c, k = compile_term(t, frame.kinds, self.errors)
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
                k = K.unify(frame.kinds[h], frame.kinds[b])
                if k is None:
                    continue
                new, old = cast(F.col(var_column(h)), k), cast(F.col(var_column(b)), k)
                ok = (new > old) if func == "min" else (new < old)
                df = df.filter(F.when(ok, F.lit(True)).otherwise(fail.isNull()))
            return _Frame(df, frame.kinds)
        return guard

    def _aggregate(self, rule: A.Rule) -> dict[tuple, list]:
        """Head tuples of an aggregate rule: group the distinct assignments of the body's
        variables by the non-aggregate head arguments (ndlog.reference semantics)."""
        F = self.F
        names = rule.body_var_names
        by_group: dict[tuple, list] = {}
        for frame in self._assignments(rule, names):
            df = frame.df
            keys, group_sig, aggs = [], [], []
            for i, t in enumerate(rule.head.args):
                if isinstance(t, A.Aggregate):
                    k = K.LONG if t.var is None else frame.kinds[t.var.name]
                    c = F.lit(1).cast("long") if t.var is None else F.col(var_column(t.var.name))
                    aggs.append((i, t, c, k))
                else:
                    c, k = compile_term(t, frame.kinds, self.errors)
                    keys.append(cast(c, k).alias(f"c{i}"))
                    group_sig.append((i, k))
            agg_kinds = [k for (_, _, _, k) in aggs]
            cols = keys + [c.alias(f"a{j}") for j, (_, _, c, _) in enumerate(aggs)]
            by_group.setdefault(tuple(group_sig), []).append((df.select(*cols), agg_kinds))
        out: dict[tuple, list] = {}
        for group_sig, parts in by_group.items():
            sig, df = self._group(rule, group_sig, parts)
            out.setdefault(sig, []).append(df)
        return out

    def _assignments(self, rule: A.Rule, names: tuple[str, ...]) -> list["_Frame"]:
        """The distinct satisfying assignments of the body's variables ``names``, as
        frames of one column per variable.

        The body's frames (one per combination of its atoms' signatures) can hold equal
        assignments: ``1`` in one and ``1.0`` in another, and without variables, the one
        empty assignment in each. Python counts them once, so the frames whose variables'
        kinds unify are cast to the unified kinds and made distinct together (frames
        whose kinds do not unify hold no equal assignment); a body without variables has
        one assignment however many frames match."""
        F = self.F
        clusters = _unifiable(self._frames(rule, None),
                              lambda frame: {n: frame.kinds[n] for n in names})
        if not names:
            if not clusters:
                return []
            unit = [f.df.select(F.lit(0).alias("_unit")) for f in clusters[0][1]]
            return [_Frame(_union(unit).limit(1), {})]
        out = []
        for kinds, members in clusters:
            cols = [var_column(n) for n in names]
            dfs = [f.df.select(*[cast(F.col(c), kinds[n]).alias(c)
                                 for n, c in zip(names, cols)]) for f in members]
            out.append(_Frame(_union(dfs).distinct(), kinds))
        return out

    def _sum_or_avg(self, rule: A.Rule, agg: A.Aggregate, c, k):
        """``(Column, kind)`` of ``sum<...>`` or ``avg<...>`` over the numbers ``c`` of kind
        ``k``, exactly as :func:`ndlog.builtins.aggregate_value` computes them, whatever
        order Spark meets the rows in.

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
            if agg.func == "sum":
                return total, K.DOUBLE
            return total / count.cast("double"), K.DOUBLE
        total = F.sum(c.cast(_EXACT_INT))
        if agg.func == "avg":
            return self._int_ratio()(total, count), K.DOUBLE
        fits = total.between(F.lit(-_LONG_LIMIT).cast(_EXACT_INT),
                             F.lit(_LONG_LIMIT - 1).cast(_EXACT_INT))
        too_large = self.errors.fail(
            f"sum<...> in rule {rule.name} exceeds 64 bits; the Spark reference holds "
            "64-bit integers (use --engine python)", agg.span)
        return F.when(fits, total.cast("long")).otherwise(too_large.cast("long")), K.LONG

    def _float_sum(self):
        if self._fsum is None:
            self._fsum = _float_sum_udf()
        return self._fsum

    def _int_ratio(self):
        if self._ratio is None:
            self._ratio = _int_ratio_udf()
        return self._ratio

    def _group(self, rule: A.Rule, group_sig: tuple, parts: list):
        F = self.F
        aggs = rule.head.aggregates
        kinds = []
        for j, (_, agg) in enumerate(aggs):
            k = K.NULL
            for _, agg_kinds in parts:
                u = K.unify(k, agg_kinds[j])
                if u is None:
                    raise EvaluationError(
                        f"{agg.func}<...> in rule {rule.name} over values of different kinds "
                        f"({K.describe(k)} and {K.describe(agg_kinds[j])})", agg.span,
                        self.program.source)
                k = u
            kinds.append(k)
        key_cols = [f"c{i}" for i, _ in group_sig]
        dfs = [df.select(*key_cols, *[cast(F.col(f"a{j}"), k).alias(f"a{j}")
                                      for j, k in enumerate(kinds)]) for df, _ in parts]
        df = _union(dfs)
        exprs, out_kinds = [], {}
        for j, ((i, agg), k) in enumerate(zip(aggs, kinds)):
            c = F.col(f"a{j}")
            if agg.func in ("min", "max"):
                e, ok = (F.min(c) if agg.func == "min" else F.max(c)), k
            elif agg.func == "count":
                e, ok = F.count(F.lit(1)).cast("long"), K.LONG
            elif not K.is_number(k):
                e = self.errors.fail(f"{agg.func}<...> in rule {rule.name} over values that "
                                     f"cannot be added: {K.describe(k)}s", agg.span)
                e, ok = F.first(e.cast("long")), K.LONG
            else:
                e, ok = self._sum_or_avg(rule, agg, c, k)
            exprs.append(cast(e, ok).alias(f"c{i}"))
            out_kinds[i] = ok
        grouped = df.groupBy(*key_cols) if key_cols else \
            df.withColumn("_g", F.lit(0)).groupBy("_g")
        result = grouped.agg(*exprs)
        arity = rule.head.arity
        sig_of = dict(group_sig) | out_kinds
        sig = tuple(sig_of[i] for i in range(arity))
        return sig, result.select(*_cols(arity))


#: Spark type that sums 64-bit integers exactly (2^63 rows of 2^63 stay below 10^38)
_EXACT_INT = "decimal(38,0)"
_LONG_LIMIT = 1 << 63


def _float_sum_udf():
    """A Spark UDF: the exactly rounded sum of an array of doubles (order-independent).

    The function is defined in here so that Spark ships it by value: executors need only
    the standard library, not this project. Non-finite values decide the sum as in IEEE
    arithmetic (NaN if there is a NaN or both infinities, else the infinity); finite values
    are summed by :func:`math.fsum`, which rounds the exact sum once, and when a partial
    sum overflows, by exact rational arithmetic (an exact sum beyond the float range
    rounds to an infinity, as in IEEE arithmetic).
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
        return int(total) / count

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
            classes.append((mine, [item]))
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
    """A DataFrame of variable bindings (columns ``v_<name>``) and each variable's kind."""

    df: object
    kinds: dict


class _Planner:
    """Order one rule body for one combination of atom signatures and build its frame.

    Like :func:`ndlog.reference.compile_body`: start from the delta atom (if any), run every
    comparison and assignment as soon as its variables are bound, and join next the atom
    sharing the most bound variables (ties: body order). Returns ``None`` when the
    combination cannot match (a constant or shared variable of an incompatible kind)."""

    def __init__(self, run: _Run, rule: A.Rule, combo: dict):
        self.run = run
        self.F = run.F
        self.rule = rule
        self.combo = combo
        self.synthetic = 0

    def plan(self, first: int | None):
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
                return None
        while True:
            frame, remaining, extra = self._literals(frame, remaining, extra)
            atoms = [i for i in remaining if isinstance(rule.body[i], A.Atom)]
            if not atoms:
                break
            bound = set(frame.kinds) if frame else set()
            best = max(atoms, key=lambda i: (_shared(rule.body[i], bound), -i))
            frame = self._join(frame, best, extra)
            remaining.remove(best)
            if frame is None:
                return None
        if remaining or extra:
            lit = rule.body[remaining[0]] if remaining else extra[0]
            raise NDlogSemanticError(
                f"rule {rule.name}: this literal uses variables that nothing binds",
                lit.span, self.run.program.source)
        return frame

    def _literals(self, frame, remaining, extra):
        """Apply every ready comparison or assignment, repeatedly."""
        if frame is None:
            return frame, remaining, extra
        progressed = True
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
        return frame, remaining, extra

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
                c, tk = compile_term(t, frame.kinds, self.run.errors)
                u = K.unify(tk, k)
                if u is None:
                    break
                cond = cond & (cast(c, u) == cast(F.col(f"c{i}"), u))
            else:
                df = df.join(rel, on=cond, how="left_anti")
        return _Frame(df, frame.kinds)

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
        c, k = compile_term(expr, frame.kinds, self.run.errors)
        col = var_column(name)
        df = frame.df.withColumn(col, cast(c, k))
        if self._unread(name, lit):
            seen = F.length(F.to_json(F.struct(F.col(col).alias("v"))))
            df = df.filter(F.rand(0) < F.lit(2) + seen * 0)
        return _Frame(df, {**frame.kinds, name: k})

    def _unread(self, name: str, lit) -> bool:
        """Whether no literal of the rule but ``lit``, nor its head, has variable ``name``."""
        others = [self.rule.head, *(o for o in self.rule.body if o is not lit)]
        return not any(v.name == name for o in others for v in A.literal_vars(o))

    def _filter(self, frame: _Frame, lit: A.Compare) -> _Frame:
        test = compile_compare(lit, frame.kinds, self.run.errors)
        return _Frame(frame.df.filter(test), frame.kinds)

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
                    u = K.unify(kinds[t.name], k)
                    if u is None:
                        return None
                    conds.append(cast(col, u) == cast(F.col(first_col[t.name]), u))
                    continue
                first_col[t.name] = f"c{i}"
                kinds[t.name] = k
                select.append(col.alias(var_column(t.name)))
            elif isinstance(t, A.Const):
                ck = K.kind_of(t.value)
                u = K.unify(ck, k)
                if u is None:
                    return None
                value, _ = compile_term(t, {}, self.run.errors)
                conds.append(cast(col, u) == cast(value, u))
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
        left_df, right_df, kinds = frame.df, right.df, {**right.kinds, **frame.kinds}
        for n in shared:
            lk, rk = frame.kinds[n], right.kinds[n]
            if lk == rk:
                continue
            u = K.unify(lk, rk)
            if u is None:
                return None
            col = var_column(n)
            left_df = left_df.withColumn(col, cast(self.F.col(col), u))
            right_df = right_df.withColumn(col, cast(self.F.col(col), u))
            kinds[n] = u
        on = [var_column(n) for n in shared]
        df = left_df.join(right_df, on=on, how="inner") if on else left_df.crossJoin(right_df)
        return _Frame(df, kinds)


def _ready(term: A.Term, kinds: dict) -> bool:
    return all(v.name in kinds for v in A.term_vars(term))


def _shared(atom: A.Atom, bound: set[str]) -> int:
    return sum(1 for v in A.literal_vars(atom) if v.name in bound)
