"""The statistics of a verdict, floats in and numbers out: no result sets, no verdict words.

Figures are compared on the log scale (a change is a ratio, and run-to-run noise is multiplicative):
``shift`` is the difference of mean log run values, ``sd`` a between-run SD of log values.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def relative_change(base: float, cur: float) -> float:
    """cur / base - 1; 0 where both are 0, an infinity of cur's sign where only base is."""
    if base == 0:
        return 0.0 if cur == 0 else math.copysign(math.inf, cur)
    return cur / base - 1.0


def log_shift(base: Sequence[float], cur: Sequence[float]) -> float:
    """Mean log of the current runs minus mean log of the baseline runs (all positive)."""
    return statistics.fmean(math.log(v) for v in cur) - statistics.fmean(math.log(v) for v in base)


def pooled_sd(sides: Sequence[Sequence[float]]) -> tuple[float | None, int]:
    """Between-run SD of log values pooled over the sides that hold several positive runs, and its degrees of
    freedom; (None, 0) where no side does."""
    logs = [[math.log(v) for v in side] for side in sides if len(side) > 1 and min(side) > 0]
    df = sum(len(side) - 1 for side in logs)
    if not df:
        return None, 0
    return math.sqrt(sum(statistics.variance(side) * (len(side) - 1) for side in logs) / df), df


def band(sd: float | None, threshold: float, k: float) -> float:
    """How far (in log) a figure may move and still be unchanged: ``max(log(1 + threshold), k × sd)``."""
    floor = math.log1p(threshold)
    return floor if sd is None else max(floor, k * sd)


def standard_error(sd: float, n_base: int, n_cur: int) -> float:
    """Of the difference of two means of ``n_base`` and ``n_cur`` runs."""
    return sd * math.sqrt(1 / n_base + 1 / n_cur)


def two_sided_p(t: float, df: float) -> float:
    from scipy.stats import t as student  # ~1 s to import: only when a figure moved beyond its band

    return float(2.0 * student.sf(abs(t), df))


def t_quantile(upper_tail: float, df: float) -> float:
    """The t value with ``upper_tail`` probability above it."""
    from scipy.stats import t as student

    return float(student.isf(upper_tail, df))


def minimum_detectable(band_log: float, se: float, df: float, alpha: float, tests: int) -> float:
    """The smallest relative change the band and a two-sided t-test at ``alpha`` over ``tests`` figures
    (Bonferroni's level, Holm's first step) would call significant."""
    return max(math.expm1(band_log), math.expm1(t_quantile(alpha / (2 * tests), df) * se))


def holm(p_values: Sequence[float], alpha: float, tests: int) -> list[bool]:
    """Holm's step-down correction: which of ``p_values`` are significant at family-wise level ``alpha`` when
    ``tests`` hypotheses were tested in all (the others had no p-value: inside their band)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    significant = [False] * len(p_values)
    for rank, i in enumerate(order):
        if p_values[i] > alpha / (tests - rank):
            break
        significant[i] = True
    return significant


def geometric_mean(ratios: Sequence[float]) -> float | None:
    positive = [r for r in ratios if 0 < r < math.inf]
    return math.exp(statistics.fmean(math.log(r) for r in positive)) if positive else None
