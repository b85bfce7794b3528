"""The statistics of a verdict, floats in and numbers out: no result sets, no verdict words.

Figures are compared on the log scale (a change is a ratio, and run-to-run noise is multiplicative):
``shift`` is the difference of mean log run values, ``sd`` a between-run SD of log values.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence


def relative_change(base: float, cur: float) -> float:
    """cur / base - 1; 0 where both are 0, an infinity of cur's sign where only base is."""
    if base == 0:
        return 0.0 if cur == 0 else math.copysign(math.inf, cur)
    return cur / base - 1.0


def log_shift(base: Sequence[float], cur: Sequence[float]) -> float:
    """Mean log of the current runs minus mean log of the baseline runs (all positive)."""
    return statistics.fmean(math.log(v) for v in cur) - statistics.fmean(math.log(v) for v in base)


def variance_components(groups: Sequence[Sequence[float]]) -> tuple[float, float] | None:
    """The between-group variance component of a one-way random-effects model (ANOVA estimator, unfloored:
    an average over many figures must keep the negative estimates to stay unbiased) and the within-group
    mean square; None where there are fewer than two groups or no group holds two values (between and
    within cannot be told apart)."""
    groups = [g for g in groups if g]
    total = sum(len(g) for g in groups)
    within_df = total - len(groups)
    if len(groups) < 2 or within_df < 1:
        return None
    grand = statistics.fmean(v for g in groups for v in g)
    between_ms = sum(len(g) * (statistics.fmean(g) - grand) ** 2 for g in groups) / (len(groups) - 1)
    within_ms = sum((v - statistics.fmean(g)) ** 2 for g in groups for v in g) / within_df
    n0 = (total - sum(len(g) ** 2 for g in groups) / total) / (len(groups) - 1)
    return (between_ms - within_ms) / n0, within_ms


def spread_over_groups(counts: Sequence[int], ratio: float) -> tuple[float, float]:
    """The sample variance of runs from groups of ``counts`` runs each, whose group effects vary ``ratio``
    times the within-group variance: how many times the within-group variance it expects (1 + ratio·c, c =
    (n - Σnᵢ²/n)/(n - 1)) and the degrees of freedom it is worth (Satterthwaite's tr(M)²/tr(M²), M = (I -
    J/n)(I + ratio·ZZᵀ): n - 1 where every run has a group of its own or all share one, nearer k - 1 for k
    groups of several runs, whose shifts it holds only k of). (1, 0) for fewer than two runs."""
    n = sum(counts)
    if n < 2:
        return 1.0, 0.0
    squares, cubes = sum(c * c for c in counts), sum(c**3 for c in counts)
    between, shifts = n - squares / n, squares - 2 * cubes / n + squares**2 / n**2
    trace = (n - 1) + ratio * between
    if shifts <= 0 or ratio > 1e6:  # one group; or the groups' shifts alone (a ratio off a near-zero within)
        return trace / (n - 1), between**2 / shifts if shifts > 0 else n - 1
    return trace / (n - 1), trace**2 / ((n - 1) + 2 * ratio * between + ratio**2 * shifts)


def two_sided_p(t: float, df: float) -> float:
    # scipy.special's t distribution, not scipy.stats': the same numbers, ~25x faster a call (the A/B's
    # simulations make millions) and a third of the import time, paid only when a figure is tested
    from scipy.special import stdtr

    return float(2.0 * stdtr(df, -abs(t)))


def t_quantile(upper_tail: float, df: float) -> float:
    """The t value with ``upper_tail`` probability above it."""
    from scipy.special import stdtrit

    return float(-stdtrit(df, upper_tail))


def f_quantile(q: float, dfn: float, dfd: float) -> float:
    """F(dfn, dfd)'s ``q`` quantile, 0 < q < 1: what scipy.stats.f.ppf computes (the same scipy.special
    function), without importing scipy.stats (most of a second)."""
    from scipy.special import fdtri

    return float(fdtri(dfn, dfd, q))


def f_upper_tail(x: float, dfn: float, dfd: float) -> float:
    """P(F(dfn, dfd) > x), as scipy.stats.f.sf gives it (1 at and below 0, 0 at infinity)."""
    from scipy.special import fdtrc

    return _upper_tail(x, lambda: float(fdtrc(dfn, dfd, x)))


def chi2_upper_tail(x: float, df: float) -> float:
    """P(chi2(df) > x), as scipy.stats.chi2.sf gives it (1 at and below 0, 0 at infinity)."""
    from scipy.special import chdtrc

    return _upper_tail(x, lambda: float(chdtrc(df, x)))


def _upper_tail(x: float, inside: Callable[[], float]) -> float:
    """scipy.stats' survival function on a support of (0, inf): NaN stays NaN, 1 at and below its start, 0 at
    infinity, ``inside()`` between."""
    if math.isnan(x):
        return math.nan
    if x <= 0:
        return 1.0
    return 0.0 if math.isinf(x) else inside()


def theil_sen_slope(y: Sequence[float], x: Sequence[float]) -> float:
    """The median of the slopes between every two points of distinct x (Theil-Sen), computed as
    scipy.stats.theilslopes computes its slope, without importing scipy.stats (most of a second); NaN where
    a value is NaN, as there."""
    import numpy as np

    ys, xs = np.array(y, dtype=float).ravel(), np.array(x, dtype=float).ravel()
    if np.isnan(ys).any() or np.isnan(xs).any():
        return math.nan
    dx, dy = xs[:, np.newaxis] - xs, ys[:, np.newaxis] - ys
    slopes = dy[dx > 0] / dx[dx > 0]
    slopes.sort()
    return float(np.median(slopes))


#: The power at which a minimum detectable effect is stated: a true change of that size is flagged this often.
POWER = 0.8


def interval(shift: float, se: float, df: float, alpha: float) -> tuple[float, float]:
    """The relative change's ``1 - 2·alpha`` interval (log scale, back-transformed): lying inside the minimum
    effect, it is an equivalence test at ``alpha`` (Schuirmann's two one-sided tests)."""
    if se == 0:
        return math.expm1(shift), math.expm1(shift)
    reach = t_quantile(alpha, df) * se
    return math.expm1(max(-50.0, shift - reach)), math.expm1(min(50.0, shift + reach))


def geometric(values: Sequence[float]) -> float:
    """The geometric mean of positive values, exact where they are all equal (a count that never moved), the
    arithmetic mean where one is zero or negative (no log scale)."""
    if len(set(values)) == 1:
        return values[0]
    if min(values) <= 0:
        return statistics.fmean(values)
    return math.exp(statistics.fmean(math.log(v) for v in values))


def detectable_at_power(floor_log: float, se: float, df: float, level: float, power: float = POWER) -> float:
    """The relative change that a two-sided t-test at ``level`` flags beyond the minimum effect
    (``floor_log``, log scale) with probability ``power`` (the bare reach ``crit·se`` is flagged half the
    time). The estimate is flagged once it clears W, the larger of the minimum effect and the critical value
    times the estimated SE; the change must sit ``power``'s normal quantile of the spread of (estimate - W)
    above W's mean. The SE's own spread is the noncentral t's (Abramowitz and Stegun 26.7.10): with many
    degrees of freedom this is max(floor, crit SE) + z_power SE; with few and a small level (an A/B's look:
    10 pairs, critical t 4.7) that plain sum gives 77% power, not 80%. ``se`` > 0: runs that never varied
    flag no change of any size (a tie, never p = 0), so they have no MDE; the callers say so."""
    w_mean, spread = _clearance(floor_log, se, df, level)
    reach = (w_mean + statistics.NormalDist().inv_cdf(power) * spread) * se
    return math.expm1(min(reach, 50.0))  # past e^50 the digits say nothing more


def power_at(shift_log: float, floor_log: float, se: float, df: float, level: float) -> float:
    """How often the test of :func:`detectable_at_power` flags a true change of ``shift_log``: its
    inverse (``se`` > 0)."""
    w_mean, spread = _clearance(floor_log, se, df, level)
    return statistics.NormalDist().cdf((abs(shift_log) / se - w_mean) / spread)


def detectable_in_two_looks(first: tuple[float, float, float], second: tuple[float, float, float],
                            level: float, power: float = POWER) -> float:
    """The slowdown that a confirmation flags with probability ``power``: its first look (``first``: the
    least move it re-runs, SE and degrees of freedom, all log) picks a figure whose estimate lies that far
    the worse way (perfkit.confirm.suspects: beyond its minimum effect, significant or not, where runs of
    this code could show it), and its second look (``second``: minimum effect, SE, degrees of freedom)
    confirms it, a test at ``level`` on runs of its own. Found where the product of the two chances reaches
    ``power`` (their shared baseline makes the looks agree more often, so this is the cautious side)."""
    from scipy.special import stdtr

    floor, se, df = first
    w_mean, spread = _clearance(*second, level)  # what the second look's test must clear, whatever the shift
    unit = statistics.NormalDist()

    def both(shift: float) -> float:
        picked = float(shift > floor) if se == 0 else float(stdtr(df, (shift - floor) / se))
        return picked * unit.cdf((abs(shift) / second[1] - w_mean) / spread)  # power_at's

    low = math.log1p(detectable_at_power(*second, level, power))
    high = max(floor + t_quantile(1 - math.sqrt(power), df) * se,
               math.log1p(detectable_at_power(*second, level, math.sqrt(power))))
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if both(middle) < power else (low, middle)
    return math.expm1(min(high, 50.0))


def _clearance(floor_log: float, se: float, df: float, level: float) -> tuple[float, float]:
    """The mean of W (in SEs), the larger of the minimum effect and the critical value times the estimated
    SE, and the SD of (estimate - W) in SEs: what a change must clear to be flagged
    (:func:`detectable_at_power`)."""
    unit = statistics.NormalDist()
    crit = t_quantile(level / 2, df)
    mean, sd = crit * (1 - 1 / (4 * df)), crit / math.sqrt(2 * df)  # crit times the estimated SE, in SEs
    floor = floor_log / se
    if sd == 0:  # a known SE (infinite degrees of freedom): W is a number
        return max(floor, mean), 1.0
    cut = (floor - mean) / sd
    below, density = unit.cdf(cut), unit.pdf(cut)
    w_mean = floor * below + mean * (1 - below) + sd * density  # W = max(floor, crit SE estimated)
    w_square = floor**2 * below + (mean**2 + sd**2) * (1 - below) + (mean + floor) * sd * density
    return w_mean, math.sqrt(1 + max(0.0, w_square - w_mean**2))


def obrien_fleming_spent(alpha: float, fraction: float) -> float:
    """How much of a two-sided ``alpha`` Lan and DeMets' O'Brien-Fleming-type spending function lets the
    looks up to ``fraction`` of the planned information spend: 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)), ``alpha``
    at t = 1. It keeps almost all of it for the end, so a test looked at after every pair still has close
    to the power of a single test at the last look."""
    if fraction <= 0:
        return 0.0
    z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
    return math.erfc(z / math.sqrt(2 * min(fraction, 1.0)))  # 2 - 2 Phi(x) = erfc(x / sqrt 2)


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
