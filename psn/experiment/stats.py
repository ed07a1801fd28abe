"""Means and Student-t confidence intervals over an experiment's repetitions.

Role: Liu et al. 2009 Sec. 7 report every point "averaged across 10 runs with 95%
confidence intervals included". :func:`summarize` gives the mean, the sample standard
deviation and the two-sided t interval of a list of per-repetition values;
:func:`t_quantile` is the Student-t quantile it uses, computed from the regularized
incomplete beta function (no SciPy).

Deliberately not here: deciding which values are repetitions of one point (the experiments
do), bootstrap or non-parametric intervals.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Iterable, Mapping

from ndlog.errors import InputError

__all__ = ["Summary", "summarize", "t_quantile", "t_cdf"]


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < eps:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
          + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(ln)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection on
    :func:`t_cdf`; accurate to about 1e-10). ``t_quantile(0.975, 9)`` is 2.2622.

    Raises
    ------
    InputError
        For a ``p`` that is not a number in (0, 1), or ``df`` not a finite number > 0.
    """
    if not (_number(p) and 0.0 < p < 1.0):
        raise InputError(f"p must be a number in (0, 1), not {p!r:.80}")
    if not (_number(df) and 0 < df < math.inf):
        raise InputError(f"degrees of freedom must be a finite number above 0, not "
                         f"{df!r:.80}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class Summary:
    """Mean and confidence interval of ``n`` repetitions.

    ``low``/``high`` are ``mean -+ t * sd / sqrt(n)``; with one repetition they equal the
    mean and ``half`` is NaN (no interval can be drawn from one value).
    """

    n: int
    mean: float
    sd: float
    half: float
    low: float
    high: float
    level: float = 0.95


def summarize(values: Iterable[float], level: float = 0.95) -> Summary | None:
    """Mean, sample standard deviation and the two-sided Student-t interval of ``values``
    at ``level`` (Liu Sec. 7: 95%); ``None`` for no values.

    Raises
    ------
    InputError
        For ``values`` that are not an iterable of numbers (a string is not one: its
        characters would be read as values), or a ``level`` that is not a number in
        (0, 1).
    """
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise InputError(f"values are a list of numbers, got {type(values).__name__} "
                         f"{values!r:.80}")
    if not (_number(level) and 0.0 < level < 1.0):
        raise InputError(f"level must be a number in (0, 1), not {level!r:.80}")
    xs = list(values)
    for v in xs:
        if not isinstance(v, numbers.Real):
            raise InputError(f"values are numbers, got {type(v).__name__} {v!r:.80}")
    xs = [float(v) for v in xs]
    n = len(xs)
    if n == 0:
        return None
    mean = math.fsum(xs) / n
    if n == 1:
        return Summary(1, mean, float("nan"), float("nan"), mean, mean, level)
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    sd = math.sqrt(var)
    half = t_quantile(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    return Summary(n, mean, sd, half, mean - half, mean + half, level)


def _number(value) -> bool:
    """Whether ``value`` is an int or a float (a bool is not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)
