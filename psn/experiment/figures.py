"""The experiments by name: Liu et al. 2009 Figs. 7-14 and Nigam et al. 2012's examples.

Role: the registry :data:`EXPERIMENTS` (``fig7`` ... ``fig14``, ``nigam``) and
:func:`get_experiment`. Each experiment (:class:`~psn.experiment.base.Experiment`) plans the
runs that reproduce one figure at a scale, turns their records into rows, names its panels
and states the paper's claims with verdicts: :mod:`~psn.experiment.liu` for Liu et al.
Sec. 7, :mod:`~psn.experiment.nigam` for Nigam et al. Fig. 6 and Sec. 5-6.

Deliberately not here: executing runs (:mod:`~psn.experiment.executor`), statistics
(:mod:`~psn.experiment.table`), drawing and writing (:mod:`~psn.experiment.plots`,
:mod:`~psn.experiment.report`).
"""

from __future__ import annotations

from ndlog.errors import InputError

from .base import (NOT_REPRODUCED, NOT_TESTED, PARTIAL, REPRODUCED, SCALES, Claim, Config,
                   Experiment, Item, Metric, Panel, Series, fmt, make_config)
from .liu import LIU_EXPERIMENTS
from .nigam import Nigam

__all__ = ["EXPERIMENTS", "get_experiment", "Config", "Series", "Metric", "Panel", "Item",
           "Claim", "Experiment", "SCALES", "make_config", "fmt", "REPRODUCED", "PARTIAL",
           "NOT_REPRODUCED", "NOT_TESTED"]

#: experiment name -> experiment, in the papers' order
EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (*LIU_EXPERIMENTS, Nigam())}


def get_experiment(name: str) -> Experiment:
    """The experiment called ``name``.

    Raises
    ------
    InputError
        For an unknown name, listing the known ones.
    """
    exp = EXPERIMENTS.get(name) if isinstance(name, str) else None
    if exp is None:
        raise InputError(f"unknown experiment {name!r:.80}",
                         hint=f"one of {', '.join(EXPERIMENTS)}, or 'list', 'all'")
    return exp
