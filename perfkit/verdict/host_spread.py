"""The minimum effect of a figure whose noise lies between hosts of one model (a driver's page work, a
core's memory path): measured and said by its benchmark (MetricRecorder.noise_between_hosts), it cannot be
cut, and more runs on one host do not narrow it. Against a baseline of other hosts one run of such a figure
cannot see its declared minimum effect (on the H100 the vector add's CPU references and managed first
launches read one-run MDEs of 13-54% against 5%), so rather than leave it blind, its minimum effect widens
to the smallest whole percent this comparison can see: whose one-run MDE, from the baseline's noise alone
before any common host shift the run shows, fits its goal (comparison.sharp_goal: 10%, or 1.5 times a wider
minimum effect). ``unchanged`` then means unchanged within that, and a change beyond it is flagged at the
printed MDE as often as any (tests/test_host_spread.py drives the judge through it). It widens only where
the baseline's runs of the figure come from :data:`MIN_HOSTS` hosts or more, and never past
:data:`MOST_WIDENED`: a figure that would need more stays at its declared one, weak and listed so."""
from __future__ import annotations

import math

from perfkit.verdict import stats
from perfkit.verdict.comparison import sharp_goal

#: A spread between hosts is read from this many hosts' runs at least (the baseline's own, a figure's).
MIN_HOSTS = 3
#: The widest minimum effect a figure is widened to (in whole percents): past it a one-run verdict says too
#: little to be worth one (on 2026-12-06 the H100's widest nightly figure needed 38%; weekly entries of two
#: hosts asked for up to 607%).
MOST_WIDENED = 50


def widened(declared: float, se: float, df: float, level: float) -> float:
    """The smallest minimum effect, ``declared`` or wider in whole percents up to :data:`MOST_WIDENED`, whose
    MDE (one run of this code against this baseline: ``se`` and ``df`` of the log shift, tested at
    ``level``) fits its goal; ``declared`` where it fits already, or where no such one does."""
    def fits(percent: int) -> bool:
        minimum = percent / 100
        return stats.detectable_at_power(math.log1p(minimum), se, df, level) <= sharp_goal(minimum)

    if not (math.isfinite(se) and math.isfinite(df)) or se <= 0 or df <= 0:
        return declared
    start = math.ceil(round(declared * 100, 6))
    if fits(start) or not fits(MOST_WIDENED):
        return declared
    low, high = start, MOST_WIDENED  # fits(high) and not fits(low): the MDE grows slower than its goal
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(middle) else (middle, high)
    return high / 100


def sentence(reason: str, declared: float, minimum: float, se: float) -> str:
    """Why a figure's minimum effect is ``minimum`` here rather than the ``declared`` one (``se``: one run's
    standard error against the baseline, log)."""
    return (f"minimum effect {minimum:.0%} here, not {declared:.0%}: {reason}; one run against this baseline "
            f"has a standard error of {math.expm1(se):.1%}, and {minimum:.0%} is the smallest whole percent "
            "whose one-run MDE is within 1.5 times it")
