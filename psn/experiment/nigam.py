"""Nigam et al. 2012's worked examples under many delivery orders, as an experiment.

Role: the ``nigam`` experiment runs the examples of :data:`psn.experiment.programs.
NIGAM_EXAMPLES` (Fig. 6, the Sec. 6 conflicting updates, the Sec. 5 cycles, Fig. 1) with
the safe maintenance algorithms (derivation sets, Sec. 5; absorption provenance) and the
unsafe ones when registered (set semantics, the original PSN, base-fact annotations under
FIFO channels, counting), under FIFO, random and adversarial delivery, and reports the share
of trials that end correct, wrong, or without terminating, beside the paper's claims.

Deliberately not here: the schemes (:mod:`provenance`), running, drawing, writing.
"""

from __future__ import annotations

from .base import (NOT_REPRODUCED, NOT_TESTED, PARTIAL, REPRODUCED, Claim, Experiment, Item,
                   Metric, Panel, fmt, verdict)
from .runs import STATUS_OK, RunSpec

__all__ = ["Nigam"]


class Nigam(Experiment):
    """Nigam et al. 2012's worked examples under many delivery orders."""

    name = "nigam"
    figure = "Nigam et al. 2012"
    title = "maintenance algorithms under many delivery orders"
    source = "Nigam et al. 2012"
    section = "Sec. 5-6"
    xlabel = "Delivery order"
    setting = ("the Sec. 3.2, 5 and 6 examples; the original PSN, PSN with base-fact "
               "annotations under FIFO channels, counting, and derivation sets")
    metrics = (Metric("correct_pct", "Trials equal to the reference (%)"),
               Metric("wrong_pct", "Trials ending with a wrong answer (%)"),
               Metric("noterm_pct", "Trials that did not terminate (%)"),
               Metric("refused_pct", "Trials refused (%)"))
    safe = ("absorption", "derivation")
    unsafe = ("set", "original", "fifo-base", "counting")
    deliveries = ("fifo", "random", "adversarial")
    labels = {"absorption": "Absorption provenance", "derivation": "Derivation sets",
              "set": "Set (no annotation)", "original": "Original PSN",
              "fifo-base": "Base-fact annotations (FIFO)", "counting": "Counting"}

    @property
    def panels(self):
        from .programs import NIGAM_EXAMPLES
        return tuple(Panel(f"outcomes-{e.name}", "correct_pct", f"{e.title}", kind="stacked",
                           phase=e.name, stack=("correct_pct", "wrong_pct", "noterm_pct",
                                                "refused_pct"))
                     for e in NIGAM_EXAMPLES.values())

    def trials(self, cfg) -> int:
        return {"tiny": 1, "quick": 10}.get(cfg.scale, 50)

    def max_deliveries(self, cfg) -> int:
        """Deliveries after which a burst counts as not terminating (every example
        quiesces within a few dozen with a safe scheme)."""
        return {"tiny": 300, "quick": 2_000}.get(cfg.scale, 20_000)

    def schemes(self) -> tuple[list[str], list[tuple[str, str]]]:
        from provenance import scheme_names
        names = set(scheme_names())
        have = [s for s in (*self.safe, *self.unsafe) if s in names]
        missing = [(self.labels[s], f"no annotation scheme '{s}' is registered in this "
                                    f"version of PSN") for s in (*self.safe, *self.unsafe)
                   if s not in names]
        return have, missing

    def missing(self):
        return self.schemes()[1]

    def plan(self, cfg):
        from .programs import NIGAM_EXAMPLES
        t = self.trials(cfg)
        items = []
        for ex in NIGAM_EXAMPLES:
            for scheme in self.schemes()[0]:
                for d in self.deliveries:
                    for r in range(cfg.runs):
                        spec = RunSpec(kind="nigam", program=ex, topology=None,
                                       workload="", annotation=scheme, delivery=d,
                                       seed=cfg.seed + r * t, trials=t, unsafe=True,
                                       max_deliveries=self.max_deliveries(cfg),
                                       time_budget=cfg.time_budget,
                                       memory_budget=cfg.memory_budget, check="every")
                        items.append(Item(spec, self.labels[scheme], r,
                                          {"x": d, "example": ex}))
        return items

    def rows(self, item, record):
        row = self.base_row(item, record, item.info["x"], item.info["example"])
        trials = record.get("trials", [])
        if not trials:
            return [self.unfinished(row, record)]
        n = len(trials)
        count = {o: sum(1 for t in trials if t["outcome"] == o)
                 for o in ("correct", "wrong", "no termination", "refused")}
        row.update(correct_pct=100 * count["correct"] / n, wrong_pct=100 * count["wrong"] / n,
                   noterm_pct=100 * count["no termination"] / n,
                   refused_pct=100 * count["refused"] / n, trials=n)
        if record["status"] != STATUS_OK:
            # the run stopped partway: its row holds the trials it finished, and the
            # report lists it among the runs that did not finish
            row["reason"] = record.get("reason") or record["status"]
            row["trials_planned"] = item.spec.trials
        return [row]

    def claims(self, table, cfg):
        from .programs import NIGAM_EXAMPLES
        out = []
        exs = list(NIGAM_EXAMPLES)

        def share(scheme, ex, d, metric):
            p = table.get(self.labels[scheme], d, metric, ex)
            return p.mean if p and p.finished else None

        have = self.schemes()[0]
        every = [(s, e, d, share(s, e, d, "correct_pct")) for s in self.safe if s in have
                 for e in exs for d in self.deliveries]
        # a combination none of whose runs got through a trial decides nothing
        safe_vals = [v for v in every if v[3] is not None]
        perfect = [v for v in safe_vals if v[3] == 100.0]
        undecided = len(every) - len(safe_vals)
        out.append(Claim(self.figure, "Derivation sets (Nigam Sec. 5) and absorption "
                         "provenance give the reference answer and terminate under every "
                         "delivery order, on every example.",
                         verdict(len(perfect), len(safe_vals)),
                         f"{len(perfect)} of {len(safe_vals)} (scheme, example, order) "
                         f"combinations correct in every trial"
                         + ("; not: " + ", ".join(f"{s}/{e}/{d} {fmt(v)}%" for s, e, d, v in
                                                  safe_vals if v != 100.0)
                            if len(perfect) < len(safe_vals) else "")
                         + (f"; {undecided} not determined (no trial finished)"
                            if undecided else "")))
        out.append(self._unsafe_claim(
            table, have, "original", "fig6",
            "The original PSN (state updated when an update is queued) ends Fig. 6's run "
            "with p, which no derivation supports.", ("wrong_pct",), self.deliveries,
            any_order=True))
        out.append(self._unsafe_claim(
            table, have, "fifo-base", "conflict",
            "Annotating with base facts only is unsound without FIFO channels: with "
            "conflicting +a and -a, a deletion that overtakes its insertion is discarded.",
            ("wrong_pct", "noterm_pct"), ("random", "adversarial"),
            fifo_ok=True, any_order=True))
        out.append(self._unsafe_claim(
            table, have, "counting", "cycle",
            "Counting derivations does not terminate on recursive programs (the a/p/q "
            "cycle, Sec. 5).", ("noterm_pct",), self.deliveries))
        out.append(self._unsafe_claim(
            table, have, "counting", "fig1",
            "Counting is exact on a non-recursive program (Fig. 1's two- and three-hop "
            "links).", ("correct_pct",), self.deliveries, all_of=True))
        return out

    def _unsafe_claim(self, table, have, scheme, ex, claim, metrics, deliveries,
                      fifo_ok: bool = False, all_of: bool = False,
                      any_order: bool = False) -> Claim:
        """The claim about one unsafe scheme on one example: the outcome in ``metrics``
        happens in every order of ``deliveries`` (``any_order``: in at least one; a
        counterexample needs only one run), in every trial if ``all_of``; with
        ``fifo_ok`` the scheme must also be correct in every FIFO trial. An order in which
        no trial finished (every run stopped first) decides nothing either way."""
        if scheme not in have:
            return Claim(self.figure, claim, NOT_TESTED,
                         f"annotation scheme '{scheme}' is not registered")
        label = self.labels[scheme]
        seen = []
        shown = []
        for d in deliveries:
            vals = [p for p in (table.get(label, d, m, ex) for m in metrics)
                    if p and p.finished]
            if not vals:            # no trial of this order finished: it decides nothing
                shown.append(f"{d}: not determined (no trial finished)")
                continue
            v = sum(p.mean for p in vals)
            seen.append((d, v))
            shown.append(f"{d}: {fmt(v)}% of trials")
        hits = sum(1 for _, v in seen if (v == 100.0 if all_of else v > 0))
        ev = f"{label} on '{ex}', {' + '.join(metrics)}: {'; '.join(shown)}"
        if not seen:
            return Claim(self.figure, claim, NOT_TESTED, ev)
        # an order no trial of which finished counts neither way
        complete = len(seen) == len(deliveries)
        if any_order:
            result = REPRODUCED if hits else NOT_REPRODUCED if complete else NOT_TESTED
        else:
            result = (REPRODUCED if hits == len(deliveries) else PARTIAL if hits else
                      NOT_REPRODUCED)
        if fifo_ok:
            p = table.get(label, "fifo", "correct_pct", ex)
            fifo = p.mean if p and p.finished else None
            ev += f"; under FIFO {fmt(fifo)}% correct"
            if fifo != 100.0 and result == REPRODUCED:
                result = PARTIAL
        return Claim(self.figure, claim, result, ev)

    def notes(self, cfg):
        return [
            f"Each run tries {self.trials(cfg)} delivery seeds of one (example, scheme, "
            "delivery order); the rows give the share of those trials that ended equal to "
            "the reference (psn.evaluate on the final base facts), with a wrong answer, "
            "without quiescence (more than the run's delivery bound), or refused. The "
            "intervals are over the repetitions (blocks of seeds).",
            "Unsafe schemes run with RunOptions(unsafe=True). 'fifo' delivery keeps each "
            "channel in order; 'random' lets any update overtake any other; 'adversarial' "
            "delays deletions behind insertions and reorders bursts.",
        ]


