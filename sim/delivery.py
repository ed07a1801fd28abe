"""The simulator's processing-time model: how long a worker is busy with a batch.

Role: charge virtual time for the work a worker does: ``per_batch + per_update * n`` for a
batch of ``n`` updates. The delivery models (when messages arrive) are shared by every
transport and live in :mod:`engine.delivery`; they are re-exported here for the simulator's
users.

Deliberately not here: the event loop (:mod:`sim.clock`), traffic and placement
(:mod:`sim.network`).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.delivery import (DELIVERY_MODELS, Adversarial, Delivery, Fifo, RandomJitter,
                             make_delivery, parse_duration, require_at_least)
from ndlog.errors import InputError

__all__ = ["Delivery", "Fifo", "RandomJitter", "Adversarial", "ProcessingModel",
           "make_delivery", "DELIVERY_MODELS", "parse_duration", "require_at_least"]


@dataclass(frozen=True)
class ProcessingModel:
    """How long a worker is busy with one batch: ``per_batch + per_update * n``.

    Defaults: 20 µs per update processed (pick, fire, commit of one update), 50 µs fixed
    cost per batch. Messages a batch produces leave when the batch is done.
    """

    per_update: float = 20e-6
    per_batch: float = 50e-6

    def __post_init__(self):
        require_at_least("processing time per update", self.per_update, 0, duration=True)
        require_at_least("processing time per batch", self.per_batch, 0, duration=True)

    def cost(self, updates: int) -> float:
        """Busy time (seconds) for a batch of ``updates`` updates."""
        return self.per_batch + self.per_update * updates if updates else 0.0

    @classmethod
    def parse(cls, text: str) -> "ProcessingModel":
        """``"20us"`` (per update) or ``"20us+50us"`` (per update + per batch)."""
        try:
            per_update, plus, per_batch = text.partition("+")
            return cls(parse_duration(per_update),
                       parse_duration(per_batch) if plus else cls.per_batch)
        except ValueError as exc:
            raise InputError(f"bad processing-time model {text!r}: {exc}") from None
        except InputError as exc:
            raise InputError(f"bad processing-time model {text!r}: {exc.message}",
                             hint=exc.hint) from None

    def describe(self) -> str:
        return f"{self.per_update * 1e6:g} us/update + {self.per_batch * 1e6:g} us/batch"
