"""Run options: every setting of a PSN run, with its default decided in one place.

Role: :class:`RunOptions` is what the in-memory :class:`~engine.network.Network`, the
simulator (``sim.Simulation``), the Ray runtime (``psn.distributed.RayNetwork``) and the
command line all take. :meth:`RunOptions.resolve` turns it into concrete choices for one
program (:class:`Resolved`): the annotation scheme object, the MinShip mode and the
aggregate-selection mode. Every engine resolves the same way, so the same options mean the
same run everywhere, and an option that cannot apply is an error that names the fix instead
of being ignored.

Defaults (the safe, fast choice):

- ``annotation="absorption"``: absorption provenance (Liu et al. 2009, Sec. 4), exact under
  any delivery order, insertions and deletions alike, and compact on cyclic graphs;
- ``ship=None``: lazy MinShip (Liu Sec. 5) when the scheme has the shipping algebra, else
  none;
- ``aggsel="auto"``: aggregate selection (Liu Sec. 6) wherever the program has a prunable
  aggregate and the scheme is idempotent (not for derivation sets, which count
  multiplicities), else off; ``"single"`` runs the program split into one query per
  aggregate (:attr:`Resolved.program`, Liu Sec. 7.4);
- ``delivery="random"``: any update may overtake any other;
- ``max_updates=None``: no bound on the updates the nodes of a run send, except for a
  scheme that may never reach quiescence (``may_not_terminate``: derivation counts on
  cyclic derivations), which stops after :data:`DEFAULT_MAX_UPDATES` with
  :class:`engine.network.NotConvergedError`.

A scheme that is not exact under every delivery order (``unsafe_reason``: the failure modes
of :mod:`provenance.failure_modes`) runs only when ``unsafe`` is set.

Deliberately not here: running anything, reading files, the command line's spelling of the
options (``psn.cli``), the transports' own settings (topology, processing time).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from dataclasses import dataclass
from typing import Any, Mapping

from ndlog.analysis import AGGSEL_CHOICES, aggsel_mode
from ndlog.errors import InputError, require_flag

__all__ = ["RunOptions", "Resolved", "DEFAULT_ANNOTATION", "AGGSEL_CHOICES", "CONTEXTS",
           "DEFAULT_MAX_UPDATES", "aggsel_mode", "require_flag", "require_callable",
           "require_whole"]

#: The annotation scheme of every engine when none is named.
DEFAULT_ANNOTATION = "absorption"

#: Values of ``contexts``.
CONTEXTS = ("process", "worker")

#: Updates sent by the nodes after which a run of a scheme that may not terminate
#: (``may_not_terminate``) stops, unless ``max_updates`` says otherwise: the order of the
#: derivation-set budget (``provenance.derivation.DEFAULT_MAX_TOTAL``). Derivation counts on
#: Nigam's a/p/q cycle reach it in about 2 CPU seconds.
DEFAULT_MAX_UPDATES = 200_000


@dataclass(frozen=True)
class RunOptions:
    """The settings of a run (see the module docstring for the defaults).

    Parameters
    ----------
    annotation:
        Scheme name (``absorption``, ``derivation``, ``set``) or scheme object.
    ship:
        MinShip: ``lazy``, ``eager``, ``eager:W``, ``off``; ``None`` is the default.
    aggsel:
        Aggregate selection: ``auto``, ``multi`` (a pruned predicate keeps the tuples
        best for at least one of its aggregates), ``single`` (one query per aggregate,
        each pruned by its own: :func:`localize.passes.one_query_per_aggregate`) or
        ``off``; ``True`` and ``False`` (what ``psn.evaluate`` takes) are ``auto`` and
        ``off``.
    delivery:
        Delivery model (``fifo``, ``random``, ``adversarial`` with options, see
        :func:`engine.delivery.make_delivery`).
    seed:
        Seeds the delivery order and, through :func:`engine.workloads.workload_rng`, the
        links and sensors a workload picks.
    batch:
        Nodes pick every pickable update per iteration (Nigam et al. 2012, end of Sec. 4)
        or one.
    roundtrip:
        Rebuild every message between two nodes from its wire bytes.
    contexts:
        ``process``: the nodes of one process share one annotation context (one CUDD
        manager); ``worker``: one context per worker.
    workers:
        ``None``: every node its own worker; ``N``: nodes placed on N workers by a stable
        hash (:class:`engine.placement.Placement`).
    placement:
        Explicit ``node -> worker`` assignments (the rest by hash with ``workers``).
    unsafe:
        Run an annotation scheme where it may give wrong answers (set semantics with
        deletions on a program where a fact can have two derivations, or a scheme with an
        ``unsafe_reason``: ``counting``, ``original``, ``fifo-base``) instead of refusing;
        the run is then unchecked.
    max_memory:
        Ceiling on the process's resident memory in bytes; past it the run stops with
        :class:`engine.guards.MemoryLimitError`. ``None``: 75% of the machine's (or
        the container's, or ``ulimit -v``'s when lower) memory
        (:func:`engine.guards.default_memory_limit`); ``0``: none.
    derivation_budget, derivation_total:
        Derivation sets stored per fact and in all (``--annotation derivation``); past
        either the run stops with :class:`engine.guards.AnnotationBudgetError`. ``None``:
        the scheme's defaults.
    max_updates:
        Stop a run (:class:`engine.network.NotConvergedError`) once its nodes have sent
        more than this many updates (to other nodes or themselves) without reaching
        quiescence; counted per :meth:`engine.Network.run`, checked after every delivery.
        ``None``: unbounded, or :data:`DEFAULT_MAX_UPDATES` for a scheme that may not
        terminate; ``0``: unbounded for every scheme.
    minship_at:
        Where MinShip decides what to ship (:data:`engine.minship.AT`): ``node``, one
        stage per node (the default); ``worker``, one per worker, shared by the nodes it
        hosts, so that alternative derivations are buffered and absorbed per (destination,
        fact) for the whole worker (Liu et al. 2009, Sec. 3 and 7.3). The same as ``node``
        when every node is its own worker. Needs MinShip (not ``ship="off"``).
    """

    annotation: Any = DEFAULT_ANNOTATION
    ship: str | None = None
    aggsel: str = "auto"
    delivery: str = "random"
    seed: int = 0
    batch: bool = True
    roundtrip: bool = False
    contexts: str = "process"
    workers: int | None = None
    placement: Mapping | None = None
    unsafe: bool = False
    max_memory: int | None = None
    derivation_budget: int | None = None
    derivation_total: int | None = None
    max_updates: int | None = None
    minship_at: str = "node"

    def __post_init__(self):
        object.__setattr__(self, "aggsel", aggsel_mode(self.aggsel))
        if self.contexts not in CONTEXTS:
            raise InputError(f"unknown contexts policy {self.contexts!r}; choose one of "
                             f"{', '.join(CONTEXTS)}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise InputError(f"the seed must be an integer, not {self.seed!r}")
        for name in ("batch", "roundtrip", "unsafe"):
            require_flag(getattr(self, name), name)
        _count(self.max_updates, "the bound on updates sent (max_updates)", "0: none")
        _count(self.max_memory, "the memory ceiling in bytes (max_memory)", "0: none")
        _count(self.derivation_budget, "the derivation budget per fact "
               "(derivation_budget)", positive=True)
        _count(self.derivation_total, "the derivation budget in all (derivation_total)",
               positive=True)
        from .delivery import make_delivery
        make_delivery(self.delivery)             # an InputError naming a bad model now
        from .minship import AT
        if self.minship_at not in AT:
            raise InputError(f"minship_at (--minship-at) must be one of "
                             f"{', '.join(AT)}, not {self.minship_at!r}")

    def replace(self, **changes) -> "RunOptions":
        """A copy with some fields changed (``None`` values are ignored)."""
        changes = {k: v for k, v in changes.items() if v is not None}
        return dataclasses.replace(self, **changes)

    @classmethod
    def of(cls, options: "RunOptions | None" = None, **changes) -> "RunOptions":
        """``options`` (default: the defaults) with the given fields changed; ``None``
        leaves a field at its value."""
        if options is not None and not isinstance(options, RunOptions):
            raise InputError(f"options is a RunOptions, got {type(options).__name__}",
                             hint="pass the settings as keyword arguments, or "
                                  "RunOptions(...)")
        return (options or cls()).replace(**changes)

    def placement_map(self):
        """The :class:`~engine.placement.Placement` of ``workers`` and ``placement``."""
        from .placement import Placement
        if isinstance(self.placement, Placement):
            return self.placement
        return Placement(self.workers, self.placement)

    def resolve(self, program, fixed_order: bool = False) -> "Resolved":
        """Concrete choices for ``program`` (an :class:`~engine.program.EngineProgram`).

        ``fixed_order``: the transport's order cannot be chosen (Ray), so a refusal does
        not suggest a delivery model.

        Raises
        ------
        InputError
            For an unknown scheme, MinShip with a scheme that has no shipping algebra, or
            aggregate selection with a scheme that counts multiplicities.
        engine.guards.UnsafeAnnotationError
            For a scheme with an ``unsafe_reason`` when the run is not ``unsafe``.
        """
        from provenance import get_scheme
        scheme = _budgeted(get_scheme(self.annotation), self)
        _refuse_unsafe_scheme(scheme, self.unsafe)
        if program.negated:
            from .node import check_negation
            check_negation(scheme, program)
        problem = None
        if not scheme.tracks_derivations and not self.unsafe:
            from .guards import set_deletion_problem
            problem = set_deletion_problem(program.source)
            _refuse_reordered_aggregates(scheme, program, self.delivery, fixed_order)
            _refuse_aggregate_readers(scheme, program)
        aggsel = _aggsel(self.aggsel, scheme, program)
        ship = _ship(self.ship, scheme)
        from .minship import supports
        if self.minship_at != "node" and (ship is None or not supports(scheme)):
            raise InputError(f"--minship-at {self.minship_at} places MinShip, but this run "
                             f"has none (annotation '{scheme.name}', --ship "
                             f"{self.ship or 'default'})",
                             hint="use --annotation absorption with --ship lazy or eager, "
                             "or leave out --minship-at")
        return Resolved(self, scheme, ship, aggsel, problem,
                        _max_updates(self.max_updates, scheme),
                        _aggsel_program(program, aggsel))

    def memory_guard(self, share: int = 1):
        """The :class:`engine.guards.MemoryGuard` of ``max_memory``, divided among
        ``share`` processes (the workers of a Ray run)."""
        from .guards import MemoryGuard, default_memory_limit
        limit = default_memory_limit() if self.max_memory is None else self.max_memory
        return MemoryGuard(limit, every=200, share=share)

    def describe(self) -> dict:
        """The options as JSON-able values (the ``run`` part of a report)."""
        out = dataclasses.asdict(self)
        out["annotation"] = getattr(self.annotation, "name", self.annotation)
        if self.placement is not None:
            out["placement"] = {repr(k): v for k, v in dict(self.placement).items()}
        return out


@dataclass(frozen=True)
class Resolved:
    """A :class:`RunOptions` resolved for one program: what the engine runs with.

    Attributes
    ----------
    options:
        What was asked.
    scheme:
        The annotation scheme object.
    ship:
        ``(mode, window)`` of MinShip, or ``None`` (off).
    aggsel:
        ``multi``, ``single`` or ``off``.
    deletion_problem:
        Why deletions would give wrong answers with this scheme on this program (set
        semantics where a fact can have two derivations), or ``None``: the engine then
        refuses any deletion before it runs (:meth:`check_deletions`).
    max_updates:
        Updates sent after which the run stops without quiescence, or ``None``
        (unbounded).
    program:
        The :class:`~engine.program.EngineProgram` every engine runs: the one resolved,
        or with ``aggsel="single"`` the same program split into one query per aggregate
        (:func:`localize.passes.one_query_per_aggregate`, Liu Sec. 7.4), prepared.
        Resolving that split program again gives it back unchanged.
    """

    options: RunOptions
    scheme: Any
    ship: tuple | None
    aggsel: str
    deletion_problem: str | None = None
    max_updates: int | None = None
    program: Any = None

    def check_deletions(self, program, because: str) -> None:
        """Refuse deletions (``because`` says what deletes) when this scheme cannot make
        them exact on ``program`` (:class:`engine.guards.UnsafeAnnotationError`)."""
        if self.deletion_problem is not None:
            from .guards import check_set_deletions
            check_set_deletions(program.source, because)

    @functools.cached_property
    def prunes(self) -> bool:
        """True if aggregate selection prunes some relation in this run: its selectors on
        :attr:`program` are not empty (``single`` prunes nothing on a predicate it cannot
        split). A run that prunes nothing is checked against a reference that prunes
        nothing either."""
        from .aggsel import selectors
        return self.aggsel != "off" and bool(selectors(self.program, self.aggsel)[0])

    @property
    def ship_text(self) -> str:
        """MinShip as the command line spells it (``lazy``, ``eager:100``, ``eager:1s``,
        ``off``)."""
        return "off" if self.ship is None else str(self.ship)

    @property
    def flush_period(self) -> float | None:
        """How often the host flushes MinShip's buffers (eager on a timer), or ``None``."""
        return None if self.ship is None else self.ship.period

    def stages(self, program, placement=None):
        """The ``on_node`` callback installing aggregate selection and MinShip on every
        node (:func:`engine.minship.node_stages`), and the send stage of a scheme that
        ships by itself (``scheme.send_stage(mode)``, for its ``ship_modes``), or
        ``None``. ``placement`` (default: the options') groups the nodes of a worker under
        one MinShip stage with ``minship_at="worker"``."""
        from .minship import node_stages
        if placement is None and self.options.minship_at == "worker":
            placement = self.options.placement_map()
        stages = node_stages(program, self.scheme, self.ship, self.aggsel,
                             self.options.minship_at, placement)
        own = getattr(self.scheme, "send_stage", None)   # a scheme that ships by itself
        if own is None or self.ship is None:
            return stages

        def on_node(node) -> None:
            if stages is not None:
                stages(node)
            stage = own(self.ship.mode)
            if stage is not None:
                node.send_stages.append(stage)
        return on_node

    def describe(self) -> dict:
        """The resolved choices, JSON-able (``max_memory``: the ceiling in bytes that
        applies, the default's too; ``0`` or ``None``: none; ``prunes``: :attr:`prunes`)."""
        from .guards import default_memory_limit
        out = self.options.describe()
        out.update(annotation=self.scheme.name, ship=self.ship_text, aggsel=self.aggsel,
                   prunes=self.prunes, max_updates=self.max_updates,
                   max_memory=default_memory_limit() if self.options.max_memory is None
                   else self.options.max_memory)
        return out


def require_callable(value, name: str, what: str, nargs: int | None = None,
                     keywords: tuple[str, ...] = ()) -> None:
    """Refuse ``value`` unless it is None or callable, and, given ``nargs``, callable with
    ``nargs`` positional arguments and the ``keywords`` (it would fail mid-run, after the
    work done so far); ``what`` says what it should be (``"a function (result,
    simulation)"``). A callable whose signature Python cannot tell (some builtins) is
    taken as it is.

    Raises
    ------
    InputError
        Naming the parameter ``name``, what it should be, and the value.
    """
    if value is None:
        return
    if not callable(value):
        raise InputError(f"{name} is {what}, got {type(value).__name__} {value!r:.80}")
    if nargs is None:
        return
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):     # no signature to read: the call will tell
        return
    try:
        signature.bind(*range(nargs), **dict.fromkeys(keywords))
    except TypeError as exc:
        label = getattr(value, "__qualname__", None) or f"{value!r:.80}"
        raise InputError(f"{name} is {what}, called as {_call_shape(nargs, keywords)}: "
                         f"{label} cannot take that call ({exc})") from None


def _call_shape(nargs: int, keywords: tuple[str, ...]) -> str:
    """``f(a1, a2, aggsel=...)``: how a callback is called, for messages."""
    return "f(" + ", ".join([f"a{i + 1}" for i in range(nargs)]
                            + [f"{k}=..." for k in keywords]) + ")"


def require_whole(value, name: str, optional: bool = False) -> None:
    """Refuse ``value`` unless it is a whole number ``>= 0`` (or None when ``optional``).

    Raises
    ------
    InputError
        Naming the parameter ``name`` and the value.
    """
    if optional and value is None:
        return
    if not _is_whole(value):
        raise InputError(f"{name} is a whole number >= 0{' or None' if optional else ''}, "
                         f"got {value!r}")


def _is_whole(value) -> bool:
    """Whether ``value`` is an ``int`` ``>= 0`` (a bool is not)."""
    return not isinstance(value, bool) and isinstance(value, int) and value >= 0


def _count(value, what: str, zero: str = "", positive: bool = False) -> None:
    """Refuse ``value`` unless it is None or a non-negative integer (a positive one if
    ``positive``: a derivation budget of 0 stores nothing)."""
    if value is not None and not (_is_whole(value) and (value > 0 or not positive)):
        raise InputError(f"{what} must be a {'positive' if positive else 'non-negative'} "
                         f"integer{f' ({zero})' if zero else ''}, not {value!r}")


def _refuse_reordered_aggregates(scheme, program, delivery: str, fixed_order: bool) -> None:
    """An aggregate replaces its result with a deletion and an insertion; a scheme that does
    not track derivations is exact only if they arrive in order (FIFO channels), which a
    transport of ``fixed_order`` (Ray) does not promise."""
    from .delivery import make_delivery
    if not program.aggregates or make_delivery(delivery).fifo:
        return
    from .guards import UnsafeAnnotationError
    rule = next(r for r in program.source.rules if r.is_aggregate)
    raise UnsafeAnnotationError(
        f"annotation '{scheme.name}' keeps no derivations, so the aggregate of rule "
        f"{rule.name} (which replaces a result by deleting the old one) is exact only when "
        f"channels are FIFO, not "
        f"{'on Ray' if fixed_order else f'with delivery {delivery!r}'}",
        rule.span, program.source.source,
        hint=f"use --annotation absorption, {'' if fixed_order else '--delivery fifo, '}or "
             f"--unsafe to run it unchecked")


def _refuse_aggregate_readers(scheme, program) -> None:
    """An aggregate's replaced result is a deletion even on FIFO channels: a scheme that
    does not track derivations deletes what was derived from it, wrongly where another
    derivation holds (:func:`engine.guards.aggregate_reader_problem`)."""
    if not program.aggregates:
        return
    from .guards import UnsafeAnnotationError, aggregate_reader_problem
    found = aggregate_reader_problem(program.source)
    if found is None:
        return
    reason, rule, span = found
    raise UnsafeAnnotationError(
        f"annotation '{scheme.name}' keeps no derivations, so when the aggregate of rule "
        f"{rule.name} replaces a result by deleting the old one, it deletes what was derived "
        f"from it although another derivation may hold it: {reason}",
        span, program.source.source,
        hint="use --annotation absorption, or --unsafe to run it unchecked")


def _refuse_unsafe_scheme(scheme, unsafe: bool) -> None:
    """Refuse a scheme that is not exact under every delivery order unless ``unsafe``."""
    reason = getattr(scheme, "unsafe_reason", None)
    if reason is None or unsafe:
        return
    from .guards import UnsafeAnnotationError
    raise UnsafeAnnotationError(
        f"annotation '{scheme.name}' {reason}",
        hint="use --annotation absorption, or --unsafe to run it unchecked")


def _max_updates(bound: int | None, scheme) -> int | None:
    """The bound on the updates a run sends: the options', else a finite default for a
    scheme that may not terminate; ``0`` means none."""
    if bound is None:
        return DEFAULT_MAX_UPDATES if getattr(scheme, "may_not_terminate", False) else None
    return bound or None


def _budgeted(scheme, options: RunOptions):
    """The scheme with the options' derivation budgets, where it has budgets."""
    budgets = {k: v for k, v in (("max_per_fact", options.derivation_budget),
                                 ("max_total", options.derivation_total)) if v is not None}
    if not budgets:
        return scheme
    with_budget = getattr(scheme, "with_budget", None)
    if with_budget is None:
        raise InputError(f"annotation '{scheme.name}' has no derivation budget",
                         hint="--derivation-budget and --derivation-total go with "
                         "--annotation derivation")
    return with_budget(**budgets)


def _ship(text: str | None, scheme) -> tuple | None:
    from .minship import parse_ship, supports
    able = supports(scheme)
    #: modes a scheme without MinShip's algebra ships in by itself (its ``send_stage``)
    own = getattr(scheme, "ship_modes", ())
    if text is None:
        return parse_ship(getattr(scheme, "default_ship", None)) if able or own else None
    parsed = parse_ship(text)
    if parsed is not None and not able:
        if parsed.mode in own:
            return parsed
        if own:
            raise InputError(f"annotation '{scheme.name}' ships {' or '.join(own)}, not "
                             f"--ship {text}", hint="use --ship " + " or --ship ".join(own))
        raise InputError(f"MinShip ships alternative derivations as provenance, which "
                         f"annotation '{scheme.name}' does not keep in a form MinShip can "
                         f"ship", hint="use --annotation absorption, or --ship off")
    return parsed


def _aggsel_program(program, aggsel: str):
    """The program the engines run: with single-aggregate selection, one query per
    aggregate (the one place that rewrite is applied; every engine runs
    :attr:`Resolved.program`)."""
    if aggsel != "single":
        return program
    from localize.passes import one_query_per_aggregate
    from .program import prepare
    split = one_query_per_aggregate(program.source)
    return program if split is program.source else prepare(split)


def _aggsel(mode: str, scheme, program) -> str:
    from .aggsel import selectors
    if mode == "off":
        return "off"
    if not getattr(scheme, "prunable", True):
        if mode == "auto":
            return "off"
        raise InputError(f"aggregate selection prunes tuples, which annotation "
                         f"'{scheme.name}' does not support",
                         hint="use --aggsel off, or --annotation absorption")
    if not scheme.idempotent:
        if mode == "auto":
            return "off"
        raise InputError(f"aggregate selection prunes tuples, but annotation "
                         f"'{scheme.name}' counts their derivations",
                         hint="use --aggsel off, or --annotation absorption")
    if mode == "auto":
        receive, _ = selectors(program, "multi")
        return "multi" if receive else "off"
    return mode
