"""The annotation protocol: what an update carries and how annotations combine.

Role: one strategy object per annotation scheme, handed to the PSN engine
(:mod:`engine`). The engine's loop (pick / fire / commit, Nigam et al. 2012, Fig. 2-3) never
looks inside an annotation; it asks the scheme. A scheme is an *algebra* plus a few *state
transitions*:

Algebra (Green et al.'s annotated relations; Liu et al. ICDE 2009, Fig. 6)
    ``one``/``zero``, ``join`` (AND: a rule body), ``combine`` (OR: alternative derivations),
    ``lift`` (what a body fact contributes to a join), ``is_zero``. The engine relies on these
    laws, which ``tests/test_provenance_laws.py`` checks on random samples of every scheme:

    * ``join`` and ``combine`` are commutative and associative (the engine joins body atoms in
      whatever order its join plan chooses, and derivations arrive in any order);
    * ``one`` is the identity of ``join``, ``zero`` of ``combine`` (an empty body / no
      derivation yet);
    * ``zero`` annihilates ``join`` (a body fact with no support supports nothing);
    * ``join`` distributes over ``combine`` (firing per occurrence equals firing the sum);
    * absorption ``a OR (a AND b) == a`` *where the scheme declares it* (``absorptive``):
      ``set`` and ``absorption`` have it, ``derivation`` (a multiset) does not;
    * ``deserialize(serialize(a)) == a`` (annotations cross nodes and workers as msgpack).

State transitions (what a node stores per fact, and what an update does to it)
    ``pick`` decides whether an update can be picked now (a deletion whose occurrence is not
    yet in the state waits), returns the new stored value and the *delta* to fire with, or
    :data:`NO_FIRE` when the update is not news (set semantics: already present; absorption:
    ``new AND NOT old`` is false). ``derive`` builds the annotations of a derived head from
    the body's annotations, or drops it (derivation sets: the head is in its own ``H``).
    Stored values are ``None`` when a fact is absent; the engine keeps only present facts.

Contexts
    ``shared_context()`` is made once per worker, or once per process when the driver
    shares it among its in-process workers (e.g. one BDD manager), ``context(node, shared)``
    once per node (e.g. the variables a node has seen zeroed). Every method receives the
    node's context; the set and derivation schemes ignore it. :meth:`must_rebuild` tells a
    transport whether an annotation must be rebuilt from its wire form between two nodes.

Negation
    A scheme with :attr:`~AnnotationScheme.negation` annotates *absences*: while ``q(t)`` is
    absent from its node, the engine treats ``!q(t)`` like a fact stored there, which
    begins (``absence``: a fresh annotation, as for a base insertion) when ``q(t)``
    disappears or is first read absent, and ends (``absence_ends``: the delta of its
    deletion, as for a base deletion) when ``q(t)`` appears. Facts derived through ``not
    q(t)`` carry that annotation, so they are retracted exactly when it ends, and a later
    absence is a new annotation that no late message about the old one can revive.

Budgets
    A scheme whose annotations can grow without bound (derivation sets) raises
    :class:`AnnotationBudgetExceeded` from ``pick`` or ``derive`` when one grows past the
    budget it was made with. The scheme names the fact as a raw ``(pred, tuple)``; the
    engine turns the exception into a user-facing error that shows the fact as NDlog.

Deliberately not here: joins, indexes, routing, delivery order (the engine and transports),
any particular scheme (``set_scheme``, ``derivation``, ``absorption``), and user-facing
errors (the engine raises those).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

__all__ = ["AnnotationScheme", "AnnotationBudgetExceeded", "NO_FIRE", "Fact",
           "SHIP_ABSORBED", "SHIP_NOW", "SHIP_BUFFER"]

#: A fact as the engine names it: ``(predicate, tuple of values)``.
Fact = tuple

#: Returned as the delta of :meth:`AnnotationScheme.pick` when the update is not news.
NO_FIRE = type("NoFire", (), {"__repr__": lambda self: "NO_FIRE"})()

#: The answers of a shipping scheme's ``ship_verdict`` (the algebra MinShip works with, see
#: :mod:`engine.minship`): a new derivation of a fact already shipped towards a destination
#: is absorbed by what was produced there, shipped now, or buffered as an alternative.
SHIP_ABSORBED, SHIP_NOW, SHIP_BUFFER = 0, 1, 2


class AnnotationBudgetExceeded(Exception):
    """An annotation grew past the budget its scheme was made with.

    Raised by a scheme's ``pick`` or ``derive``; the engine catches it around one step of a
    node and raises a user-facing error naming the fact (the scheme does not know how the
    engine shows facts).

    Parameters
    ----------
    fact:
        ``(pred, tuple)`` whose annotation grew too large, or was about to.
    size:
        The size reached (in the scheme's unit, see ``unit``).
    budget:
        The budget that ``size`` exceeds.
    scope:
        ``"fact"`` for a budget per fact, ``"total"`` for one over every fact the scheme
        object annotates.
    unit:
        What ``size`` counts, in words (e.g. ``"derivations"``).
    workers:
        For a total budget, the processes that share it (the workers of a Ray run):
        ``budget`` is then one process's share.
    """

    def __init__(self, fact: Fact, size: int, budget: int, scope: str = "fact",
                 unit: str = "entries", workers: int = 1):
        super().__init__(fact, size, budget, scope, unit, workers)
        self.fact = fact
        self.size = size
        self.budget = budget
        self.scope = scope
        self.unit = unit
        self.workers = workers

    def __str__(self) -> str:
        pred, tup = self.fact
        per = "per fact" if self.scope == "fact" else "in total"
        return (f"{pred}{tup!r}: {self.size} {self.unit}, over the budget of "
                f"{self.budget} {per}")


class AnnotationScheme:
    """Base class and protocol of annotation schemes (a strategy object, not flags).

    Subclasses implement the algebra and may override the transitions; the defaults below
    implement them generically from the algebra, for a scheme whose stored value is a
    single annotation (``combine`` of all derivations) and that is present iff not zero.

    Attributes
    ----------
    name:
        Registry name (``get_scheme(name)``).
    absorptive:
        True if ``combine(a, join(a, b)) == a`` holds (checked by the law tests).
    idempotent:
        True if re-sending an identical update changes nothing (``combine(a, a) == a``); the
        engine then drops duplicate outputs of one step.
    fixed_annotation:
        Not None if :meth:`derive` always returns ``[fixed_annotation]``.
    presence_only:
        True if a present fact's stored value is always ``fixed_annotation`` and
        :meth:`pick` of an insertion returns ``(fixed_annotation, fixed_annotation)`` for
        an absent fact and ``(fixed_annotation, NO_FIRE)`` for a present one (set
        semantics): the engine then picks insertions without calling :meth:`pick`. A
        subclass that overrides :meth:`pick` must not inherit it (``set``'s is False for
        such a subclass).
    ships_annotations:
        False if :meth:`serialize` always returns None.
    uses_parts:
        False if :meth:`derive` ignores the body's facts and annotations (the engine then
        skips collecting them).
    exact_deletions:
        True if a deletion must find its occurrence (the engine raises on deletions left
        waiting at quiescence); False drops them (set semantics).
    tracks_derivations:
        True if a fact's annotation keeps enough of its derivations that deleting one
        keeps the fact while another remains (derivation sets, provenance). False when a
        fact is only present or not (set semantics): deletions are then exact only on
        programs where no fact has two derivations, and the engine refuses them elsewhere
        (:func:`engine.guards.set_deletion_problem`).
    context_bound:
        True if annotations are objects of a per-worker context (BDD managers) and must be
        rebuilt from their wire form whenever they cross into another context
        (:meth:`must_rebuild`), even in memory.
    unsafe_reason:
        ``None`` for a scheme that is exact under any delivery order. Otherwise why it is
        not, as a phrase that reads after "annotation 'NAME' " (the failure modes of
        earlier algorithms, :mod:`provenance.failure_modes`): runs refuse the scheme unless
        they are unsafe (:meth:`engine.options.RunOptions.resolve`).
    may_not_terminate:
        True if a run may never reach quiescence (derivation counts on cyclic derivations,
        Nigam et al. 2012, Sec. 5): runs then stop after a finite number of updates sent by
        default (``RunOptions.max_updates``).
    commit_on_arrival:
        True if an update changes its node's state when it arrives, before it is picked
        and its delta rules fire (the original PSN, Nigam et al. 2012, Sec. 6, Fig. 6). The
        node reads it once, when it is made (:class:`engine.node.Node`).
    negation:
        True if :meth:`absence` and :meth:`absence_ends` are implemented and make negated
        atoms exact under any delivery order (``docs/provenance.md``, "Negation"); the
        engine refuses programs with negation under the other schemes.
    prunable:
        False if aggregate selection (Liu et al. 2009, Sec. 6) must not run with this
        scheme (``--aggsel auto`` then turns it off, an explicit mode is an error).
    phased:
        True if the scheme runs in phases separated by global barriers
        (:meth:`quiescence_phases`, e.g. DRed's over-delete and re-derive, Liu Sec. 3.2).
        Engines without a barrier between phases refuse such a scheme.
    ship_modes:
        The ``--ship`` modes (``"eager"``, ``"lazy"``) a scheme without MinShip's shipping
        algebra runs by itself; such a scheme has ``send_stage(mode)``, which returns a
        node's send stage for the mode or None (relative provenance's lazy shipping,
        :mod:`provenance.relative`). Empty for every other scheme.
    uses_places:
        True if the engines call :meth:`place` for every base insertion.
    """

    name = "abstract"
    absorptive = False
    idempotent = False
    uses_parts = True
    exact_deletions = True
    tracks_derivations = True
    context_bound = False
    #: If not None, every derivation's annotation (``derive`` always returns exactly this
    #: one value): the engine then skips calling ``derive`` (set semantics).
    fixed_annotation = None
    #: True if an insertion is news iff its fact is absent, and the stored value is always
    #: ``fixed_annotation``: the engine then picks insertions itself (set semantics).
    presence_only = False
    #: False if ``serialize`` always returns None (nothing to ship per tuple).
    ships_annotations = True
    unsafe_reason: str | None = None
    may_not_terminate = False
    commit_on_arrival = False
    negation = False
    prunable = True
    phased = False
    ship_modes: tuple = ()
    uses_places = False

    # -- contexts ------------------------------------------------------------------------
    def shared_context(self) -> Any:
        """Per-worker state (e.g. a BDD manager). Default: none."""
        return None

    def context(self, node: Any, shared: Any) -> Any:
        """Per-node state (e.g. zeroed variables). Default: the shared context."""
        return shared

    def must_rebuild(self, src_ctx: Any, dst_ctx: Any) -> bool:
        """True if an annotation of node context ``src_ctx`` cannot be used as it is in
        ``dst_ctx`` and must be rebuilt there from its wire form. Default: whenever the
        scheme is :attr:`context_bound` (schemes that know their contexts refine this)."""
        return self.context_bound

    def quiescence_phases(self) -> Any:
        """The phase coordinator of one run, or ``None`` (default: the scheme has no
        phases).

        A coordinator has ``at_quiescence(host) -> bool``, which the hosting loop
        (:class:`engine.host.Host`) calls each time nothing is in flight and no node has
        work: it may read the nodes (``host.nodes``; a node's ``ctx``, ``state`` and
        ``rederive(heads)``), requeue held updates (``host.wake``), send updates
        (``host.send``) and count its own messages on ``host.transport.metrics``, and
        answers True when it started more work. ``report() -> dict[str, int]`` gives
        counters the host adds to its totals. Used by :mod:`provenance.dred`; another
        baseline whose check runs at quiescence can plug in the same way.
        """
        return None

    # -- algebra -------------------------------------------------------------------------
    def one(self, ctx) -> Any:
        raise NotImplementedError

    def zero(self, ctx) -> Any:
        raise NotImplementedError

    def join(self, ctx, a, b) -> Any:
        """AND: both annotations support a derivation together (a rule body)."""
        raise NotImplementedError

    def combine(self, ctx, a, b) -> Any:
        """OR: alternative derivations of the same fact."""
        raise NotImplementedError

    def is_zero(self, ctx, a) -> bool:
        raise NotImplementedError

    def lift(self, ctx, fact: Fact, a) -> Any:
        """The annotation a body fact with annotation ``a`` contributes to a join.
        Identity by default; derivation sets add the fact itself to ``S``."""
        return a

    def singleton(self, elem) -> Any:
        """The algebra value of the annotation one update carries (identity unless the
        scheme's values are multisets of occurrences)."""
        return elem

    def equal(self, ctx, a, b) -> bool:
        """Equality of annotations (the law tests use it)."""
        return a == b

    def sample(self, ctx, rng) -> Any:
        """A random algebra value for the law tests (``rng`` is a ``random.Random``)."""
        raise NotImplementedError

    def sample_update(self, ctx, rng) -> Any:
        """A random annotation as one update carries it (default: :meth:`sample`)."""
        return self.sample(ctx, rng)

    # -- base facts ----------------------------------------------------------------------
    def base(self, ctx, fact: Fact, seq: int) -> Any:
        """Annotation of the base insertion number ``seq`` of ``fact``; a deletion of that
        insertion carries the same annotation. Default: ``one``."""
        return self.one(ctx)

    def place(self, seq: int, node: Any) -> None:
        """Base insertion ``seq`` is a fact of ``node``. Called by every engine, in every
        process of a run, for a scheme with :attr:`uses_places`, before an annotation
        naming the insertion reaches that process (on Ray: as a rule, not a guarantee):
        a hint for speed or memory (absorption orders its BDD variables by it), never for
        a result. Default: nothing."""

    def absence(self, ctx, fact: Fact) -> Any:
        """The annotation of a new absence of a fact (``fact = ("!q", t)``: ``q(t)`` is
        absent from the node), as an insertion carries it; the engine stores
        ``singleton(absence(...))`` and fires the delta rules of ``not q(...)`` with it.
        Every call begins a *new* absence: schemes that name annotations give it a name no
        earlier absence had. Only schemes with :attr:`negation`."""
        raise NotImplementedError(f"annotation '{self.name}' does not annotate absences")

    def absence_ends(self, ctx, fact: Fact, stored) -> Any:
        """The delta to fire with when the absence ``fact`` stored as ``stored`` ends
        (``q(t)`` appeared): what a deletion of that absence carries. Only schemes with
        :attr:`negation`."""
        raise NotImplementedError(f"annotation '{self.name}' does not annotate absences")

    def aggregate(self, ctx, fact: Fact) -> Any:
        """Annotation of a tuple produced by an aggregate operator.
        Default: ``one`` (the result is maintained by the operator, not by provenance)."""
        return self.one(ctx)

    # -- stored values -------------------------------------------------------------------
    def occurrences(self, stored) -> Iterable:
        """The annotations one stored value contributes to joins, one per derivation the
        engine must fire separately (a multiset lists repeats). Default: the value itself."""
        return (stored,)

    def count(self, stored) -> int:
        """Multiplicity of a stored fact (number of occurrences); 0 if absent."""
        return 0 if stored is None else 1

    # -- transitions ---------------------------------------------------------------------
    def fresh_type(self, ctx) -> type | None:
        """The type of the annotations that :meth:`pick` stores and fires as they came
        when inserted for an absent fact (``pick(ctx, fact, None, 1, ann) == (ann, ann)``
        for every ``ann`` of that type, with ``ctx`` as it is now), or None. The engine
        then picks such insertions without calling :meth:`pick`; it asks once per batch
        (the answer may change as the node zeroes variables). Default None."""
        return None

    def pick(self, ctx, fact: Fact, stored, sign: int, ann, owned: bool = False):
        """Pick an update ``<sign, fact, ann>`` against the fact's current ν value.

        ``owned`` is True when ``stored`` is already the engine's private ν copy (picked
        earlier in the same batch) and may be mutated in place; otherwise ``stored`` is the
        committed value and must not be mutated.

        Returns ``None`` if the update cannot be picked now (it waits in the queue), else
        ``(new_stored, delta)`` where ``new_stored`` is ``None`` for an absent fact and
        ``delta`` the annotation to fire delta rules with, or :data:`NO_FIRE`.

        Default (absorptive single-value schemes): insertion stores ``old OR ann`` and fires
        with ``ann`` when that changed the value; deletion waits until the fact is present.
        """
        if sign > 0:
            if stored is None:
                return ann, ann
            new = self.combine(ctx, stored, ann)
            return (new, ann) if not self.equal(ctx, new, stored) else (stored, NO_FIRE)
        if stored is None:
            return None
        return None, stored

    def derive(self, ctx, sign: int, head: Fact, parts: list, delta_pos: int) -> Iterable:
        """Annotations of the derived head, one per update to send.

        ``parts[j]`` is ``[pred, tuple, value]`` for body atom ``j``: the delta annotation at
        ``delta_pos``, a stored value elsewhere. Default: the join, over every choice of one
        occurrence per body atom, of the lifted annotations; zero results are dropped.
        """
        anns = [self.one(ctx)]
        for j, (pred, tup, value) in enumerate(parts):
            occ = (value,) if j == delta_pos else tuple(self.occurrences(value))
            fact = (pred, tup)
            anns = [self.join(ctx, a, self.lift(ctx, fact, o)) for a in anns for o in occ]
        return [a for a in anns if not self.is_zero(ctx, a)]

    def derive_pair(self, ctx) -> Callable[[Any, Any], Any] | None:
        """A fast form of :meth:`derive` for the insertions of a rule with two body atoms,
        or None (the default: the engine calls :meth:`derive`).

        Returns
        -------
        callable or None
            ``pair(a, b)``, given the annotations of the two body facts in body order (the
            delta's and the other's stored value), returns the one annotation
            ``derive(ctx, 1, head, parts, delta_pos)`` would return, or None where
            :meth:`derive` must be asked (the engine then calls it). It may not depend
            on the head, the facts or ``delta_pos``.

        Notes
        -----
        A generated delta rule (:mod:`engine.codegen`) calls it once per derivation
        instead of :meth:`derive`, which takes the body's parts, builds a head fact and
        returns a sequence.
        """
        return None

    # -- wire ----------------------------------------------------------------------------
    def serialize(self, ctx, ann) -> Any:
        """A msgpack-able form of ``ann`` (``None`` means: nothing to ship)."""
        raise NotImplementedError

    def deserialize(self, ctx, data) -> Any:
        """Inverse of :meth:`serialize`, building the annotation in ``ctx``."""
        raise NotImplementedError

    def wire_size(self, ctx, anns: list, packed_size: Callable[[list], int]) -> int:
        """Bytes of the msgpack encodings of ``serialize(ctx, a)`` for every ``a`` in
        ``anns`` (``None`` counts 0).

        Parameters
        ----------
        ctx:
            The annotations' context.
        anns:
            Annotations as updates carry them.
        packed_size:
            ``values -> int``: the summed encoded sizes of a list of wire values
            (:func:`engine.wire.packed_items_size`).

        Returns
        -------
        int
            Default: every annotation serialized, then measured in one call. A scheme may
            count its common forms without building them (the state ``psn run`` measures
            after every step).
        """
        ser = self.serialize
        return packed_size([d for a in anns if (d := ser(ctx, a)) is not None])

    def __repr__(self) -> str:
        return f"<annotation scheme {self.name!r}>"
