"""Metrics of a simulated run, as in Liu et al. Sec. 7.1, per node and per worker.

Role: count what the network carries and what the engine stores, and write it out.

- communication: messages, updates and bytes (as serialized on the wire) sent and received
  between workers; messages between two nodes of one worker are counted apart (``local_*``)
  and cost no traffic (a worker hosts many nodes, as in Liu Sec. 7);
- updates processed (pick/fire/commit, Nigam Sec. 3) and batches per node and worker;
- per-tuple provenance bytes and operator state bytes, from the engine's own measurement of
  its stored state at the end of each step (Liu Sec. 7.1 "per-tuple provenance overhead",
  "per-node states of operators");
- convergence time per step in simulated seconds (from the injection of the burst to the last
  batch processed, Liu's "until every node has finished") and in wall-clock seconds.

:class:`Counters` is the live tally the network updates; :class:`StepResult` is one step's
figures; :func:`write_json` and :func:`write_csv` write a run.

Deliberately not here: measuring the engine's state (the engine host reports it) and timing
anything in tests.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from operator import attrgetter, sub
from pathlib import Path
from typing import Hashable, Iterable, Mapping, NamedTuple

from ndlog.files import atomic_open, file_path, write_atomic

__all__ = ["Counters", "Tally", "Snapshot", "StepResult", "Row", "RowTable", "write_json",
           "write_csv", "write_metrics", "TALLY_FIELDS", "STATE_FIELDS"]

#: traffic/processing fields of a :class:`Tally`
TALLY_FIELDS = ("msgs_sent", "updates_sent", "bytes_sent", "msgs_recv", "updates_recv",
                "bytes_recv", "local_msgs", "local_updates", "local_bytes", "processed",
                "batches")

#: a tally's counters as a tuple, in :data:`TALLY_FIELDS` order
_values = attrgetter(*TALLY_FIELDS)

#: state fields measured per node (see :func:`sim.simulation.state_figures`)
STATE_FIELDS = ("tuples", "provenance_bytes", "state_bytes")


#: longest step label :meth:`StepResult.__repr__` shows in full
_REPR_LABEL = 60


class Tally:
    """Counters of one node or one worker (see :data:`TALLY_FIELDS`)."""

    __slots__ = TALLY_FIELDS

    def __init__(self):
        for f in TALLY_FIELDS:
            setattr(self, f, 0)

    def as_dict(self) -> dict:
        return dict(zip(TALLY_FIELDS, _values(self)))

    def minus(self, before: tuple | None) -> dict:
        """This tally less ``before``, its counters in :data:`TALLY_FIELDS` order at a
        :meth:`Counters.snapshot` (None: nothing before)."""
        if before is None:
            return self.as_dict()
        return dict(zip(TALLY_FIELDS, map(sub, _values(self), before)))


class Row(Mapping):
    """The figures of one node or worker in one step: a read-only mapping, its values in
    a tuple beside a key index shared by every row with the same keys.

    A run keeps a row per node and per step (:attr:`StepResult.per_node`): as dicts they
    took 464 bytes each (46 KiB per step on a 100-node network, so a long run of link
    flaps grew by that much per step); a row takes about 200.

    Parameters
    ----------
    figures:
        ``field -> value``, in the order the row keeps.
    """

    __slots__ = ("_index", "_values")

    #: key tuple -> the shared ``field -> position`` index
    _layouts: dict[tuple, dict] = {}

    def __init__(self, figures: Mapping):
        keys = tuple(figures)
        index = Row._layouts.get(keys)
        if index is None:
            index = Row._layouts[keys] = {k: i for i, k in enumerate(keys)}
        self._index = index
        self._values = tuple(figures.values())

    def __getitem__(self, key):
        return self._values[self._index[key]]

    def __iter__(self):
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return repr(dict(self))

    def __reduce__(self):
        return (Row, (dict(self),))

    def __deepcopy__(self, memo) -> "Row":
        return self                     # read-only: a copy is itself


class RowTable(Mapping):
    """One step's ``node (or worker) -> Row`` table, read-only: its rows in a tuple beside a
    key index, shared with the previous step's table when the keys are the same.

    As a dict, the table cost a step about 4.6 KiB on a 100-node network even when every
    row repeated from the step before; this way a step adds a tuple of pointers.

    Parameters
    ----------
    keys:
        The nodes (workers), in order.
    rows:
        Their rows, in the same order.
    previous:
        The previous step's table, whose key index is reused when its keys are ``keys``.
    """

    __slots__ = ("_keys", "_index", "_rows")

    def __init__(self, keys: Iterable, rows: Iterable, previous: "RowTable | None" = None):
        keys = tuple(keys)
        if type(previous) is RowTable and previous._keys == keys:
            self._keys, self._index = previous._keys, previous._index
        else:
            self._keys, self._index = keys, {k: i for i, k in enumerate(keys)}
        self._rows = tuple(rows)
        if len(self._rows) != len(self._keys):
            raise ValueError(f"{len(self._keys)} keys but {len(self._rows)} rows")

    def __getitem__(self, key):
        return self._rows[self._index[key]]

    def get(self, key, default=None):
        i = self._index.get(key)
        return default if i is None else self._rows[i]

    def __contains__(self, key) -> bool:
        return key in self._index

    def __iter__(self):
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return repr(dict(self))

    def __reduce__(self):
        return (RowTable, (self._keys, self._rows))

    def __deepcopy__(self, memo) -> "RowTable":
        return self                     # read-only, its rows too: a copy is itself


def row_table(table: dict, previous: Mapping | None = None) -> RowTable:
    """The :class:`RowTable` of a ``key -> dict`` table (the same keys, in order).

    A row equal to ``previous``'s row of the same key (the same fields, in the same order,
    with the same values) is that row: rows are read-only, so steps share them. In a long
    run of link flaps most nodes see no traffic in a step and keep their state, and their
    rows repeat from step to step (98 of 100 nodes per flap step on ``ts100``).
    """
    get = previous.get if type(previous) is RowTable else None
    rows = []
    for k, v in table.items():
        row = Row(v)
        if get is not None:
            old = get(k)
            if type(old) is Row and old._index is row._index and old._values == row._values:
                row = old
        rows.append(row)
    return RowTable(table, rows, previous if get is not None else None)


class Counters:
    """Live traffic and processing tallies, per node and per worker, plus totals."""

    def __init__(self):
        self.nodes: dict[Hashable, Tally] = {}
        self.workers: dict[Hashable, Tally] = {}
        self.total = Tally()
        self.injected = 0

    def _get(self, table: dict, key) -> Tally:
        t = table.get(key)
        if t is None:
            t = table[key] = Tally()
        return t

    def record_send(self, src, dst, wsrc, wdst, updates: int, nbytes: int,
                    local: bool) -> None:
        """One message ``src -> dst`` (workers ``wsrc -> wdst``)."""
        tallies = (self._get(self.nodes, src), self._get(self.workers, wsrc), self.total)
        if local:
            for t in tallies:
                t.local_msgs += 1
                t.local_updates += updates
                t.local_bytes += nbytes
            return
        for t in tallies:
            t.msgs_sent += 1
            t.updates_sent += updates
            t.bytes_sent += nbytes
        for t in (self._get(self.nodes, dst), self._get(self.workers, wdst), self.total):
            t.msgs_recv += 1
            t.updates_recv += updates
            t.bytes_recv += nbytes

    def record_processed(self, node, worker, updates: int) -> None:
        for t in (self._get(self.nodes, node), self._get(self.workers, worker), self.total):
            t.processed += updates
            t.batches += 1

    def snapshot(self) -> "Snapshot":
        """The counters now, as tuples (a step's figures are the counters at its end
        less these; taken and read once per step, for every node and worker)."""
        return Snapshot({k: _values(v) for k, v in self.nodes.items()},
                        {k: _values(v) for k, v in self.workers.items()},
                        _values(self.total))


class Snapshot(NamedTuple):
    """:meth:`Counters.snapshot`: ``node -> values``, ``worker -> values``, totals."""

    nodes: dict
    workers: dict
    total: tuple


@dataclass
class StepResult:
    """Figures of one workload step (one burst run to quiescence).

    ``traffic`` holds this step's deltas of the totals (:data:`TALLY_FIELDS`); ``per_node``
    and ``per_worker`` hold this step's deltas per node/worker merged with the engine's state
    figures at the end of the step (:data:`STATE_FIELDS`), a read-only :class:`Row` each;
    ``state`` holds the totals of the state figures and ``provenance_per_tuple`` their
    ratio. ``check`` is ``None`` (not checked), ``True`` or ``False``; ``diff`` lists up
    to a few differing tuples as
    ``(relation, "+"/"-", tuple)`` (``+``: the engine has it, the reference does not).
    When every node is its own worker, of the same id, ``per_worker`` is ``per_node``
    itself (the same rows, kept once).
    """

    index: int
    label: str
    inserted: int
    deleted: int
    start: float
    sim_time: float
    wall_time: float
    events: int
    traffic: dict
    state: dict = field(default_factory=dict)
    provenance_per_tuple: float = 0.0
    per_node: Mapping = field(default_factory=dict)
    per_worker: Mapping = field(default_factory=dict)
    check: bool | None = None
    diff: list = field(default_factory=list)
    converged: bool = True

    def __repr__(self) -> str:
        """One short line: the per-node and per-worker tables (kilobytes on a 100-node
        network) are left out; :meth:`summary` and :func:`write_json` have every figure."""
        label = self.label if len(self.label) <= _REPR_LABEL else \
            self.label[:_REPR_LABEL - 3] + "..."
        t = self.traffic
        parts = [f"index={self.index}", f"label={label!r}",
                 f"sim_time={self.sim_time:.6g}", f"wall_time={self.wall_time:.3g}",
                 f"traffic=<{t.get('msgs_sent', 0)} messages, {t.get('bytes_sent', 0)} "
                 f"bytes sent, {t.get('processed', 0)} updates processed>",
                 f"check={self.check}"]
        if self.diff:
            n = len(self.diff)
            parts.append(f"diff=<{n} tuple{'' if n == 1 else 's'}>")
        if not self.converged:
            parts.append("converged=False")
        return f"StepResult({', '.join(parts)})"

    def summary(self) -> dict:
        """The step's one-line figures (no per-node tables)."""
        d = asdict(self)
        d.pop("per_node")
        d.pop("per_worker")
        d["diff"] = [list(map(str, x)) for x in self.diff]
        return d


def _key(x) -> str:
    return x if isinstance(x, str) else repr(x)


def _jsonable(value):
    if isinstance(value, Mapping):
        return {_key(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return str(value)
    return value


def write_json(path: str | Path, run: dict, steps: Iterable[StepResult]) -> None:
    """Write ``{"run": run, "steps": [...]}``; each step with its per-node/worker tables."""
    doc = {"run": run, "steps": [asdict(s) for s in steps]}
    for s in doc["steps"]:
        s["diff"] = [list(map(str, x)) for x in s["diff"]]
    write_atomic(path, json.dumps(_jsonable(doc), indent=1, sort_keys=False) + "\n",
                 "metrics file")


CSV_STEP_FIELDS = ("step", "label", "scope", "id", "inserted", "deleted", "sim_time",
                   "wall_time", "events", *TALLY_FIELDS, *STATE_FIELDS,
                   "provenance_per_tuple", "check")


def write_csv(path: str | Path, steps: Iterable[StepResult]) -> None:
    """Write one row per step (scope ``total``), per node (``node``) and per worker
    (``worker``): long format, columns :data:`CSV_STEP_FIELDS`."""
    with atomic_open(path, "metrics file", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_STEP_FIELDS)
        for s in steps:
            head = [s.index, s.label]
            common = [s.inserted, s.deleted, s.sim_time, s.wall_time, s.events]
            chk = "" if s.check is None else str(s.check).lower()
            total = {**s.traffic, **s.state}
            w.writerow(head + ["total", ""] + common + _cols(total)
                       + [s.provenance_per_tuple, chk])
            for scope, table in (("node", s.per_node), ("worker", s.per_worker)):
                for ident, row in table.items():
                    tuples = row.get("tuples", 0)
                    ppt = row.get("provenance_bytes", 0) / tuples if tuples else 0.0
                    w.writerow(head + [scope, _key(ident)] + ["", "", "", "", ""]
                               + _cols(row) + [ppt, ""])


def _cols(row: dict) -> list:
    return [row.get(f, 0) for f in TALLY_FIELDS + STATE_FIELDS]


def write_metrics(path: str | Path, run: dict, steps: list[StepResult]) -> None:
    """Write ``path`` as CSV if it ends in ``.csv`` (in any case, as facts files are read),
    else JSON."""
    if file_path(path, "metrics file").suffix.lower() == ".csv":
        write_csv(path, steps)
    else:
        write_json(path, run, steps)
