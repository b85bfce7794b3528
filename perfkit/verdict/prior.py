"""The empirical-Bayes prior of a kind of figure's run-to-run variances (limma's, Smyth 2004, with
limma-trend's covariate and Phipson et al.'s robust fit): what each figure's own few runs borrow strength
from (perfkit.verdict.noise)."""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from perfkit.verdict import stats

#: Fewer figures than this of a kind and its prior is taken from all kinds of the machine together.
MIN_FIGURES = 5
#: The most degrees of freedom a prior is worth. Where the figures' variances scatter no more than sampling
#: explains, the moment fit gives an infinite d0, which drops each figure's own variance and gives every one
#: the prior's normal tails: heavy-tailed figures were 58-73% of the false alarms. A finite d0 keeps a tenth
#: or more of a figure's own variance in its estimate (at 3-8 runs) and a t tail to its test.
MAX_PRIOR_DF = 30.0
# : The SD of the covariates (log within-run dispersion) below which the figures are alike and the prior is
# flat.
MIN_COVARIATE_SPREAD = 0.1
#: A figure whose variance the prior would give less than this chance keeps its own (robust empirical Bayes).
OUTLIER_P = 0.001


@dataclass(frozen=True)
class Prior:
    """A kind of figure's prior: ``log s0² = intercept + slope·x`` at a figure's covariate ``x`` (the log of
    its within-run dispersion; ``mean_x`` where it has none), worth ``df`` degrees of freedom (at most
    :data:`MAX_PRIOR_DF`)."""

    intercept: float
    slope: float
    df: float
    figures: int
    mean_x: float = 0.0

    def s2(self, x: float | None) -> float:
        exponent = self.intercept + self.slope * ((self.mean_x if x is None else x) - self.mean_x)
        return math.exp(min(exponent, 700.0))  # a trend extrapolated far from its figures must not overflow



def fit_prior(
    variances: Sequence[float],
    dfs: Sequence[float],
    covariates: Sequence[float | None] | None = None,
    robust: bool = False,
) -> Prior | None:
    """The prior of figures' sample variances with their degrees of freedom: ``s²/s0²(x)`` is F(d, d0).

    ``s0²(x)`` is a trend in the covariates (Theil-Sen, robust to a few wild figures) where at least
    ``MIN_FIGURES`` have one, else flat (limma-trend). ``d0`` and the level come from Smyth's moments of the
    log variances, or with ``robust`` from their median and interquartile range, which a few hypervariable
    figures cannot inflate (:func:`fit_robust` finds those first); never above :data:`MAX_PRIOR_DF`. None
    for fewer than two variances, or where none is positive. Zero variances (a figure that never moved, such
    as an allocator peak) are taken as the smallest positive one: limma's offset of 1e-5 times the median
    jumped 3900-fold once more than half of a kind's variances were zero (the median then is zero, and limma
    falls back to 1).
    """
    xs = list(covariates) if covariates is not None else [None] * len(variances)
    rows = [(v, d, x) for v, d, x in zip(variances, dfs, xs) if d > 0 and math.isfinite(v) and v >= 0]
    if len(rows) < 2:
        return None
    from scipy.special import digamma, polygamma  # a fifth of a second to import: only with variances to fit
    positive = [v for v, _, _ in rows if v > 0]
    if not positive:
        return None
    smallest = min(positive)
    # e: an unbiased estimate of log s0² for each figure (Smyth's), so the trend and the level are of s0², not
    # s²
    e = [math.log(max(v, smallest)) - float(digamma(d / 2)) + math.log(d / 2) for v, d, _ in rows]
    known = [(x, y) for (_, _, x), y in zip(rows, e) if x is not None]
    slope, mean_x = 0.0, 0.0
    distinct = len({round(x, 9) for x, _ in known})
    if (len(known) >= MIN_FIGURES and distinct >= MIN_FIGURES
            and statistics.pstdev(x for x, _ in known) > MIN_COVARIATE_SPREAD):
        mean_x = statistics.fmean(x for x, _ in known)
        slope = stats.theil_sen_slope([y for _, y in known], [x for x, _ in known])
    residual = [y - slope * ((x if x is not None else mean_x) - mean_x) for (_, _, x), y in zip(rows, e)]
    if robust:
        return _quantile_prior(residual, statistics.median(d for _, d, _ in rows), slope, mean_x, len(rows))
    level = statistics.fmean(residual)
    excess = statistics.variance(residual) - statistics.fmean(float(polygamma(1, d / 2)) for _, d, _ in rows)
    d0 = MAX_PRIOR_DF if excess <= 0 else min(MAX_PRIOR_DF, 2 * _trigamma_inverse(excess))
    return Prior(level + float(digamma(d0 / 2)) - math.log(d0 / 2), slope, d0, len(rows), mean_x)


def _quantile_prior(residual: list[float], d: float, slope: float, mean_x: float, figures: int) -> Prior:
    """``d0`` whose log F(d, d0) has the residuals' interquartile range, and the level matching their
    median."""
    from scipy.optimize import brentq
    from scipy.special import digamma

    def spread(d0: float) -> float:
        return math.log(stats.f_quantile(0.75, d, d0) / stats.f_quantile(0.25, d, d0))

    q1, middle, q3 = statistics.quantiles(residual, n=4, method="inclusive")
    observed = q3 - q1
    if observed <= spread(MAX_PRIOR_DF):
        d0 = MAX_PRIOR_DF
    elif observed < spread(1e-3):
        d0 = float(brentq(lambda x: spread(x) - observed, 1e-3, MAX_PRIOR_DF))
    else:
        d0 = 1e-3
    # the residuals are log s² less Smyth's bias term; their median sits at log s0² + log median F(d, d0) +
    # bias
    centre = math.log(stats.f_quantile(0.5, d, d0)) - float(digamma(d / 2)) + math.log(d / 2)
    return Prior(middle - centre, slope, d0, figures, mean_x)


def _trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x (limma's Newton iteration)."""
    from scipy.special import polygamma

    if x > 1e7:
        return 1 / math.sqrt(x)
    if x < 1e-6:
        return 1 / x
    y = 0.5 + 1 / x
    for _ in range(50):
        tri = float(polygamma(1, y))
        step = tri * (1 - tri / x) / float(polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def moderate(s2: float, df: float, prior_s2: float, prior_df: float) -> tuple[float, float]:
    """The moderated variance and its degrees of freedom."""
    if math.isinf(prior_df):
        return prior_s2, math.inf
    return (prior_df * prior_s2 + df * s2) / (prior_df + df), prior_df + df



FigureVariance = tuple[tuple[str, str], float, float, "float | None"]  # figure, variance, df, covariate


def fit_robust(rows: Sequence[FigureVariance]) -> tuple[Prior | None, set[tuple[str, str]]]:
    """The prior of the figures that follow it, and the figures that do not: one whose variance is beyond the
    upper ``OUTLIER_P`` tail of a first, quantile-matched prior (a figure noisier than its within-run
    dispersion says, such as a kernel whose speed differs between physical GPUs) is left out of the moment fit
    and keeps its own variance, so it neither widens every other figure's interval nor borrows a precision it
    does not have (after Phipson et al. 2016, "Robust hyperparameter estimation protects against hypervariable
    genes")."""
    def fit(kept: Sequence[FigureVariance], robust: bool) -> Prior | None:
        return fit_prior(
            [v for _, v, _, _ in kept], [d for _, _, d, _ in kept], [x for _, _, _, x in kept], robust
        )

    def beyond(prior: Prior) -> set[tuple[str, str]]:
        return {key for key, v, d, x in rows if _upper_tail(v, d, prior.s2(x), prior.df) < OUTLIER_P}

    first = fit(rows, robust=True)
    if first is None:
        return None, set()
    outliers = beyond(first)
    prior = fit([row for row in rows if row[0] not in outliers], robust=False) or first
    return prior, outliers | beyond(prior)


def _upper_tail(s2: float, df: float, prior_s2: float, prior_df: float) -> float:
    """P(a variance at least ``s2``) for a figure that follows the prior: s²/s0² is F(df, d0)."""
    ratio = s2 / prior_s2 if prior_s2 > 0 else math.inf
    if math.isinf(prior_df):
        return stats.chi2_upper_tail(ratio * df, df)
    return stats.f_upper_tail(ratio, df, prior_df)

