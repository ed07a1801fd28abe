"""One schedule of a problem: the in-memory engine driven delivery by delivery, then checked.

Role: :class:`Execution` builds a fresh :class:`engine.network.Network` on an
:class:`engine.schedule.ScheduledTransport` and runs the problem's phases (the initial facts,
then each burst, or all bursts at once), each to quiescence. At every delivery of an
explored phase it lists the possible next deliveries (:class:`Transition`) and asks a
*policy* (the exhaustive search, a seeded random walk, a replay) which one to take; an
unexplored phase (the initial facts, by default) is delivered in FIFO order. After every
phase it compares every node's state with the synchronous semi-naive result on the current
base facts (:class:`Reference`; Nigam et al. 2012, Definition 1). A schedule is re-run
from the start whenever it is needed again: the engine keeps BDDs in a CUDD manager that
cannot be copied, so a prefix is replayed, never restored.

A schedule ends as one :class:`RunResult`: ``ok``, ``pruned`` (the policy stopped it at a
state explored before), or a failure: ``wrong-state`` (some node differs from the
reference after a phase), ``no-quiescence`` (more deliveries in one phase than the scope's
bound), ``cycle`` (the policy found the schedule back in a state it had been in: it can go
on forever) or ``error`` (the engine stopped with an evaluation error, e.g. a deletion that
never found its occurrence).

Deliberately not here: the search strategies (:mod:`psn.verify.search`), shrinking and
files (:mod:`psn.verify.counterexample`), canonical forms (:mod:`psn.verify.fingerprint`).
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from itertools import combinations, product
from typing import Any

from engine.guards import AnnotationBudgetError, MemoryLimitError
from engine.network import Network, NotConvergedError
from engine.node import EVERY_FACT, format_fact
from engine.schedule import Message, ScheduledTransport
from ndlog.analysis import aggsel_candidates
from ndlog.builtins import format_value
from ndlog.errors import EvaluationError

from .fingerprint import Canon, digest, node_form, update_form
from .scope import UNEXPLORED_FACTOR, Problem

__all__ = ["Execution", "OutOfTime", "Transition", "Decision", "RunResult", "Step", "Reference",
           "Prune", "Violation", "FAILURES", "tag_of", "node_text"]

#: The kinds of a failing schedule.
FAILURES = ("wrong-state", "no-quiescence", "cycle", "error")


class Prune(Exception):
    """Raised by a policy: this schedule reached a state already explored; stop it."""


class Violation(Exception):
    """Raised by a policy or the execution: the schedule fails (``kind``, ``message``)."""

    def __init__(self, kind: str, message: str):
        super().__init__(kind, message)
        self.kind = kind
        self.message = message


class Transition:
    """One possible next delivery: messages for one node (usually one message).

    Attributes
    ----------
    dst:
        The receiving node.
    messages:
        The :class:`engine.schedule.Message` objects, in send order.
    key:
        ``(receiver, message digests)``: equal for deliveries of equal content, in any
        schedule (what sleep sets and replays identify a delivery by).
    """

    __slots__ = ("dst", "messages", "key")

    def __init__(self, dst: Any, messages: tuple, key: tuple):
        self.dst = dst
        self.messages = messages
        self.key = key

    @property
    def seqs(self) -> tuple:
        return tuple(m.seq for m in self.messages)

    def tag(self) -> str:
        """A short hex tag of :attr:`key` (written in counterexample files)."""
        return tag_of(self.key)


def tag_of(key: tuple) -> str:
    """The short hex tag of a transition key (:meth:`Transition.tag`)."""
    return digest(key).hex()[:16]


@dataclass
class Step:
    """One delivery of a traced schedule, for printing.

    Attributes
    ----------
    number, phase:
        Delivery number (from 1) and the phase's label.
    src, dst:
        Sender(s) (``None``: injected) and receiver.
    updates:
        The delivered updates in burst syntax.
    choice:
        Index of the delivery among the possible ones (0: the oldest message, FIFO).
    overtakes:
        Earlier messages of the same channel still in flight (0: in order).
    added, removed, changed:
        The receiver's facts that appeared, disappeared, or changed annotation.
    sent:
        ``[(destination, [update, ...])]`` the receiver's step sent.
    """

    number: int
    phase: str
    src: list
    dst: Any
    updates: list[str]
    choice: Any
    overtakes: int
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    sent: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"number": self.number, "phase": self.phase,
                "from": [None if s is None else node_text(s) for s in self.src],
                "to": node_text(self.dst),
                "updates": self.updates, "choice": self.choice,
                "overtakes": self.overtakes, "added": self.added, "removed": self.removed,
                "changed": self.changed,
                "sent": [[node_text(d), ups] for d, ups in self.sent]}

    def render(self) -> str:
        srcs = ", ".join("environment" if s is None else f"node {node_text(s)}"
                         for s in self.src)
        order = "in order" if not self.overtakes else \
            f"OUT OF ORDER: overtakes {self.overtakes} earlier message(s) on its channel"
        lines = [f"{self.number:>4}. [{self.phase}] node {node_text(self.dst)} <- {srcs}: "
                 f"{'  '.join(self.updates)}   ({order}; choice {self.choice})"]
        change = [f"+ {f}" for f in self.added] + [f"- {f}" for f in self.removed] + \
                 [f"~ {f}" for f in self.changed]
        lines.append("        state: " + ("  ".join(change) if change else "unchanged"))
        for d, ups in self.sent:
            lines.append(f"        sends to node {node_text(d)}: {'  '.join(ups)}")
        return "\n".join(lines)


def node_text(node: Any) -> str:
    """A node id as NDlog prints it (a string as it is)."""
    return node if isinstance(node, str) else format_value(node)


@dataclass
class RunResult:
    """How one schedule ended (see the module docstring for ``kind``)."""

    kind: str
    phase: int = -1
    label: str = ""
    choices: list = field(default_factory=list)
    tags: list = field(default_factory=list)
    deliveries: int = 0
    reordered: int = 0
    diff: list = field(default_factory=list)
    message: str = ""
    steps: list = field(default_factory=list)
    rounds: dict = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.kind in FAILURES

    @property
    def deviations(self) -> int:
        """Choices that are not the FIFO choice (0)."""
        return sum(1 for c in self.choices if c != 0)


class Decision:
    """What a policy sees at one delivery of an explored phase.

    Attributes
    ----------
    phase:
        Index of the phase.
    index:
        Number of decisions taken before this one in the schedule.
    depth:
        Deliveries so far in this phase.
    deviations:
        Non-FIFO choices taken so far in the schedule.
    transitions:
        The possible deliveries, oldest first (``transitions[0]`` is the FIFO choice).
    """

    def __init__(self, execution: "Execution", transitions: list[Transition]):
        self.execution = execution
        self.phase = execution.phase
        self.index = len(execution.choices)
        self.depth = execution.depth
        self.deviations = execution.deviations
        self.transitions = transitions
        self._state: bytes | None = None

    def state(self) -> bytes:
        """The digest of the network state (nodes, in-flight messages, phase)."""
        if self._state is None:
            self._state = self.execution.state_digest()
        return self._state


class Reference:
    """The synchronous semi-naive result per phase, placed at its nodes (Definition 1).

    Relations pruned by aggregate selection (:func:`ndlog.analysis.aggsel_candidates`) are
    compared through the aggregates computed from them, not themselves: the engine and the
    reference may keep different non-best tuples there. When the run prunes nothing
    (:attr:`engine.options.Resolved.prunes`), neither does the reference, and every
    relation is compared.
    """

    def __init__(self, problem: Problem):
        # the ledger's base facts hold the program's own facts while they live: evaluated
        # with the program's text too, a deleted one would still be in the reference
        self.program = problem.program.with_(facts=())
        self.pruned = set(aggsel_candidates(problem.program))
        self._cache: dict[int, tuple] = {}

    def expected(self, net: Network, phase: int) -> tuple[list, dict]:
        """``(compared relations, {node: {rel: set}})`` after ``phase``."""
        hit = self._cache.get(phase)
        if hit is None:
            from ndlog.reference import evaluate
            aggsel = net.resolved.prunes
            ref = evaluate(self.program, net.base_facts(), aggsel=aggsel)
            pruned = self.pruned if aggsel else set()
            rels = sorted(r for r in ref if r not in pruned)
            where: dict = {}
            location = net.program.location
            for rel in rels:
                for t in ref[rel]:
                    where.setdefault(location(rel, t), {}).setdefault(rel, set()).add(t)
            hit = self._cache[phase] = (rels, where)
        return hit

    def diff(self, net: Network, phase: int) -> list[tuple]:
        """``[(node, relation, sign, tuple)]``: ``+`` a tuple the node has and should not,
        ``-`` one it lacks; empty when every node agrees."""
        rels, where = self.expected(net, phase)
        out = []
        for nid in sorted(set(net.nodes) | set(where), key=_sort_key):
            node = net.nodes.get(nid)
            want = where.get(nid, {})
            for rel in rels:
                got = set(node.state.get(rel, ())) if node is not None else set()
                exp = want.get(rel, set())
                out += [(nid, rel, 1, t) for t in sorted(got - exp, key=_sort_key)]
                out += [(nid, rel, -1, t) for t in sorted(exp - got, key=_sort_key)]
        return out


#: Schedules between two explicit garbage collections (:func:`_collect_now_and_then`).
COLLECT_EVERY = 100
_runs = 0


def _collect_now_and_then() -> None:
    """Collect garbage every :data:`COLLECT_EVERY` schedules. A schedule's network holds a
    few reference cycles and runs with the cyclic collector paused
    (:func:`ndlog.gcpause.relaxed_gc`, which leaves what it made to full collections), so
    thousands of schedules would otherwise pile up unreached (reachable on 4 nodes, before
    the transport's callbacks were cut after each schedule and without this: 2.2 GB after
    3,000 schedules)."""
    global _runs
    _runs += 1
    if _runs % COLLECT_EVERY == 0:
        gc.collect()


def _NEW(node: Any) -> bytes:
    """The history of a node nothing has happened to yet."""
    return digest(("new", repr(node)))


def _sort_key(value: Any):
    return (type(value).__name__, repr(value))


#: deliveries of a schedule between two readings of the clock against its deadline
DEADLINE_EVERY = 16


class OutOfTime(Exception):
    """A schedule stopped at its deadline (:attr:`Execution.deadline`): no verdict on it,
    the search's budget is spent."""


class Execution:
    """One schedule of ``problem`` under ``policy`` (see the module docstring).

    Parameters
    ----------
    problem:
        The :class:`~psn.verify.scope.Problem`.
    policy:
        ``policy.choose(decision) -> Transition``; may raise :class:`Prune` or
        :class:`Violation`.
    reference:
        A shared :class:`Reference` (its results are cached per phase).
    trace:
        Record every delivery as a :class:`Step` (for printing a counterexample).
    forms:
        A cache of node forms by node history shared by the schedules of one search
        (:meth:`_node_digest`).
    deadline:
        ``time.monotonic()`` value past which the schedule stops with :class:`OutOfTime`
        (read every :data:`DEADLINE_EVERY` deliveries), or None: a search's time budget,
        which one long schedule could otherwise outlast.
    """

    def __init__(self, problem: Problem, policy, reference: Reference | None = None,
                 trace: bool = False, forms: dict | None = None,
                 deadline: float | None = None):
        self.problem = problem
        self.deadline = deadline
        self.scope = problem.scope
        self.policy = policy
        self.reference = reference or Reference(problem)
        self.trace = trace
        self.phases = problem.phases()
        self.phase = 0
        self.depth = 0
        self.deviations = 0
        self.reordered = 0
        self.deliveries = 0
        self.choices: list = []
        self.tags: list[str] = []
        self.steps: list[Step] = []
        self.net: Network | None = None
        self.scheme = None
        self._open: tuple | None = None         # (step, node, before) of a traced delivery
        self.rounds: dict[int, int] = {}        # unexplored phase -> deliveries
        #: ``policy.fixed(i) -> (message seqs, index, tag) or None``: decision ``i`` is
        #: already known (a replayed prefix), so the possible deliveries are not listed
        self._fixed = getattr(policy, "fixed", None)
        #: node -> digest of the events that made its state (:meth:`_node_digest`)
        self.history: dict = {}
        #: node history -> digest of the node's form, shared by the schedules of a search
        self.forms: dict = forms if forms is not None else {}
        self._idles = 0

    # -- running -------------------------------------------------------------------------
    def run(self) -> RunResult:
        """Run every phase to quiescence under the policy and check it; the result says
        how the schedule ended."""
        transport = ScheduledTransport(self._choose, on_idle=self._idle)
        self.net = net = Network(self.problem.program, options=self.problem.run_options(),
                                 transport=transport)
        self.scheme = net.scheme
        try:
            return self._phases(net)
        finally:
            # the transport calls back into this object: without that cycle, the network
            # is freed as soon as the schedule is forgotten, not by the cyclic collector
            transport.choose = transport.on_idle = None
            _collect_now_and_then()

    def _phases(self, net: Network) -> RunResult:
        try:
            for i, phase in enumerate(self.phases):
                self.phase, self.depth = i, 0
                net.apply(phase.updates)
                try:
                    net.run()
                except (AnnotationBudgetError, MemoryLimitError):
                    raise
                except NotConvergedError as exc:
                    raise Violation("no-quiescence", str(exc)) from None
                except EvaluationError as exc:
                    raise Violation("error", str(exc)) from None
                self._close_step()
                self._event(("end", i))
                diff = self.reference.diff(net, i)
                if diff:
                    raise Violation("wrong-state", f"after {phase.label}, "
                                    f"{len(diff)} tuple(s) differ from the reference")
        except Prune:
            return self._result("pruned")
        except Violation as v:
            self._close_step()
            return self._result(v.kind, v.message,
                                self.reference.diff(net, self.phase)
                                if v.kind == "wrong-state" else [])
        return self._result("ok")

    def _result(self, kind: str, message: str = "", diff=()) -> RunResult:
        return RunResult(kind, self.phase, self.phases[self.phase].label, list(self.choices),
                         list(self.tags), self.deliveries, self.reordered, list(diff),
                         message, self.steps, dict(self.rounds))

    def _choose(self, transport: ScheduledTransport) -> list[Message]:
        self.depth += 1
        if self.deadline is not None and not self.depth % DEADLINE_EVERY \
                and time.monotonic() >= self.deadline:
            raise OutOfTime(f"{self.phases[self.phase].label}: the time budget ran out "
                            f"after {self.depth:,} deliveries of this schedule")
        phase = self.phases[self.phase]
        bound = self.scope.bound if phase.explored else self.scope.bound * UNEXPLORED_FACTOR
        if self.depth > bound:
            raise Violation("no-quiescence",
                            f"{phase.label} did not reach quiescence within {bound:,} "
                            f"deliveries" + ("" if phase.explored else " in FIFO order"))
        self._close_step()
        if not phase.explored:                      # FIFO: the oldest message
            self.rounds[self.phase] = self.rounds.get(self.phase, 0) + 1
            m = transport.pending[0]
            # the same deliveries open every schedule: the send number names the message
            self._delivered(m.dst, ("fifo", self.phase, m.seq))
            return [m]
        fixed = self._fixed(len(self.choices)) if self._fixed is not None else None
        if fixed is not None:                       # a replayed prefix: no listing needed
            seqs, index, tag = fixed
            messages = tuple(m for m in transport.pending if m.seq in seqs)
            if len(messages) != len(seqs):
                raise RuntimeError("a replayed schedule diverged: the engine is not "
                                   "deterministic for this program and annotation")
            t = Transition(messages[0].dst, messages, ())
        else:
            transitions = self.transitions(transport)
            t = self.policy.choose(Decision(self, transitions))
            index = next(i for i, c in enumerate(transitions) if c is t)
            tag = t.tag()
        self._delivered(t.dst, tuple(self._key(m) for m in t.messages))
        overtakes = self._overtakes(transport, t)
        self.reordered += 1 if overtakes else 0
        self.deviations += 1 if index else 0
        self.deliveries += 1
        self.choices.append(index)
        self.tags.append(tag)
        if self.trace:
            self._open_step(t, index, overtakes)
        return list(t.messages)

    @staticmethod
    def _overtakes(transport: ScheduledTransport, t: Transition) -> int:
        chosen = {id(m) for m in t.messages}
        channels = {m.channel: m.seq for m in t.messages}
        return sum(1 for m in transport.pending
                   if id(m) not in chosen and m.channel in channels
                   and m.seq < channels[m.channel])

    # -- the possible deliveries -----------------------------------------------------------
    def transitions(self, transport: ScheduledTransport) -> list[Transition]:
        """The possible next deliveries, oldest first: every in-flight message (with FIFO
        channels, the oldest of each channel), deduplicated by content, and with
        ``scope.batch > 1`` the sets of up to that many messages for one node."""
        for m in transport.pending:
            if m.key is None:
                m.key = self._message_key(m)
        fifo = self.scope.fifo
        seen: set = set()
        out: list[Transition] = []
        for m in transport.enabled(fifo):
            key = (repr(m.dst), (m.key,))
            if key not in seen:
                seen.add(key)
                out.append(Transition(m.dst, (m,), key))
        if self.scope.batch > 1:
            for group in self._batches(transport.pending, fifo):
                key = (repr(group[0].dst), tuple(sorted(m.key for m in group)))
                if key not in seen:
                    seen.add(key)
                    out.append(Transition(group[0].dst, group, key))
        out.sort(key=lambda t: t.seqs)
        return out

    def _batches(self, pending: list[Message], fifo: bool):
        """Message sets of size 2..batch for one node (with FIFO channels, unions of
        channel prefixes)."""
        k = self.scope.batch
        by_dst: dict = {}
        for m in pending:
            by_dst.setdefault(m.dst, []).append(m)
        for msgs in by_dst.values():
            if len(msgs) < 2:
                continue
            if not fifo:
                for n in range(2, min(k, len(msgs)) + 1):
                    yield from combinations(msgs, n)
                continue
            chans: dict = {}
            for m in msgs:
                chans.setdefault(m.channel, []).append(m)
            lists = list(chans.values())
            for cut in product(*[range(len(c) + 1) for c in lists]):
                n = sum(cut)
                if 2 <= n <= k:
                    group = [m for c, j in zip(lists, cut) for m in c[:j]]
                    yield tuple(sorted(group, key=lambda m: m.seq))

    def _key(self, m: Message) -> bytes:
        if m.key is None:
            m.key = self._message_key(m)
        return m.key

    def _message_key(self, m: Message) -> bytes:
        canon = Canon(getattr(self.net.context_of(m.dst), "bdd", None))
        return digest((repr(canon(m.src)), tuple(update_form(canon, u) for u in m.updates)))

    # -- state digests ---------------------------------------------------------------------
    def state_digest(self) -> bytes:
        """Digest of the network state: phase, every node's canonical form
        (:func:`psn.verify.fingerprint.node_form`), the in-flight messages (a multiset; per
        channel sequences with FIFO channels)."""
        net, transport = self.net, self.net.transport
        nodes = tuple(sorted(self._node_digest(n) for n in net.nodes.values()))
        for m in transport.pending:
            if m.key is None:
                m.key = self._message_key(m)
        if self.scope.fifo:
            chans: dict = {}
            for m in transport.pending:
                chans.setdefault((repr(m.src), repr(m.dst)), []).append(m.key)
            flight: tuple = tuple(sorted((c, tuple(ks)) for c, ks in chans.items()))
        else:
            flight = tuple(sorted((repr(m.dst), m.key) for m in transport.pending))
        return digest((self.phase, nodes, flight))

    def _node_digest(self, node) -> bytes:
        """The digest of a node's canonical form, computed once per node *history*.

        A node is deterministic: its state is a function of what happened to it, in
        order: the messages delivered to it (by content), the points of quiescence (where
        the host flushes its send stages) and the ends of phases (where waiting deletions
        may be dropped). :attr:`history` chains those events per node, and the forms are
        cached by history across every schedule of the search, so the nodes a schedule
        has not touched since the shared opening are not canonicalized again."""
        history = self.history.get(node.id)
        if history is None:
            history = self.history[node.id] = _NEW(node.id)
        d = self.forms.get(history)
        if d is None:
            d = self.forms[history] = digest(node_form(node))
        return d

    def _delivered(self, node, what: tuple) -> None:
        """Chain a delivery into the node's history."""
        before = self.history.get(node)
        self.history[node] = digest((_NEW(node) if before is None else before, what))

    def _event(self, what: tuple) -> None:
        """Chain an event of every node (quiescence, end of a phase) into its history."""
        history = self.history
        for node, before in history.items():
            history[node] = digest((before, what))

    def _idle(self) -> None:
        self._idles += 1
        self._event(("idle", self.phase, self._idles))

    # -- tracing ---------------------------------------------------------------------------
    def _open_step(self, t: Transition, choice, overtakes: int) -> None:
        node = self.net.nodes.get(t.dst)
        before = self._facts(node) if node is not None else {}
        loc = self._loc
        step = Step(len(self.steps) + 1, self.phases[self.phase].label,
                    [m.src for m in t.messages], t.dst,
                    [_update_text(u, loc) for m in t.messages for u in m.updates],
                    0 if choice is None else choice, overtakes)
        self.steps.append(step)
        self._open = (step, t.dst, before, self.net.transport.sent)

    def _close_step(self) -> None:
        if self._open is None:
            return
        step, nid, before, sent_before = self._open
        self._open = None
        node = self.net.nodes.get(nid)
        after = self._facts(node) if node is not None else {}
        step.added = sorted(f for f in after if f not in before)
        step.removed = sorted(f for f in before if f not in after)
        step.changed = sorted(f for f in after if f in before and after[f] != before[f])
        transport, loc = self.net.transport, self._loc
        for m in transport.pending:
            if m.seq >= sent_before and m.src == nid:
                step.sent.append((m.dst, [_update_text(u, loc) for u in m.updates]))

    def _loc(self, pred: str) -> int | None:
        return self.net.program.loc.get(pred) if self.net.program.distributed else None

    def _facts(self, node) -> dict[str, str]:
        canon = Canon(getattr(node.ctx, "bdd", None))
        return {format_fact(p, t, self._loc(p)): repr(canon.stored(s))
                for p, table in node.state.items() for t, s in table.items()}


def _update_text(update: tuple, loc) -> str:
    sign, pred, tup, ann = update
    mark = "+" if sign > 0 else "-"
    if pred == EVERY_FACT:
        return f"{mark}every fact{_annotation_text(ann)}"
    return mark + format_fact(pred, tup, loc(pred)) + _annotation_text(ann)


def _annotation_text(ann: Any) -> str:
    """A short annotation, when it has one: a zeroing's variables, a single derivation's
    conjunction."""
    names = getattr(ann, "names", None)
    if isinstance(names, frozenset):
        return " [zero " + ", ".join(sorted(map(str, names))) + "]"
    if type(ann) is tuple and ann and all(type(i) is int for i in ann):
        return " [" + " ∧ ".join(f"x{i}" for i in ann) + "]"
    return ""
