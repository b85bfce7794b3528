"""The statistics of an A/B run: per-round log ratios HEAD/BASE of each benchmark's gating figure (its time
unless the bench names another), a paired t-test, Holm over the benchmarks; floats in, the judge's verdict
words out.

Paired, not the judge's prediction test: the two sides of a round ran back to back on one machine, so a
drift of the machine (clocks, neighbours, heat) hits both and cancels in their ratio, and the spread of the
ratios is the noise itself; no hardware noise model is needed.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from perfkit.results import stats
from perfkit.results.judge import Verdict

#: Fewer pairs give no spread to test against (two give one degree of freedom).
MIN_PAIRS = 2
TEST = "paired t-test on the per-round log ratios HEAD/BASE of each benchmark's gating figure"
WHY = ("the two sides of a round ran back to back, so the machine's drift cancels in their ratio and the "
       "ratios' own spread is the noise")


@dataclass(frozen=True)
class PairedRow:
    benchmark: str
    pairs: int
    change: float | None  # HEAD/BASE - 1, from the mean log ratio
    verdict: Verdict
    minimum: float  # the minimum effect worth a verdict
    p_value: float | None = None
    mde: float | None = None  # the smallest change these pairs would call significant
    settled: bool = False  # more pairs would not change the answer: significant, or inside the minimum
    note: str = ""


@dataclass(frozen=True)
class _Tested:
    benchmark: str
    ratios: tuple[float, ...]  # log(HEAD/BASE) per pair
    minimum: float

    @property
    def shift(self) -> float:
        return statistics.fmean(self.ratios)

    @property
    def se(self) -> float:
        return statistics.stdev(self.ratios) / math.sqrt(len(self.ratios))


def verdicts(pairs: Mapping[str, Sequence[tuple[float, float]]], minimum: Mapping[str, float],
             alpha: float) -> list[PairedRow]:
    """One row per benchmark of ``pairs`` ((base, head) times per round), sorted by name; ``minimum``: each
    benchmark's minimum effect (perfkit's Policy). Holm corrects over every benchmark with two pairs or more
    (family-wise false-alarm rate ``alpha``)."""
    rows: dict[str, PairedRow] = {}
    tested: list[_Tested] = []
    for name, values in pairs.items():
        if len(values) < MIN_PAIRS or min(v for pair in values for v in pair) <= 0:
            note = f"needs {MIN_PAIRS} pairs of positive times" if len(values) < MIN_PAIRS else "a zero time"
            rows[name] = PairedRow(name, len(values), None, Verdict.UNKNOWN, minimum[name], note=note)
        else:
            tested.append(_Tested(name, tuple(math.log(h / b) for b, h in values), minimum[name]))
    tests = max(1, len(tested))
    beyond = [t for t in tested if abs(t.shift) > math.log1p(t.minimum)]
    p_values = [0.0 if t.se == 0 else stats.two_sided_p(t.shift / t.se, len(t.ratios) - 1) for t in beyond]
    significant = dict(zip((t.benchmark for t in beyond), stats.holm(p_values, alpha, tests)))
    p_of = dict(zip((t.benchmark for t in beyond), p_values))
    for t in tested:
        rows[t.benchmark] = _row(t, p_of.get(t.benchmark), significant.get(t.benchmark, False), alpha, tests)
    return [rows[name] for name in sorted(rows)]


def _row(t: _Tested, p_value: float | None, significant: bool, alpha: float, tests: int) -> PairedRow:
    floor = math.log1p(t.minimum)
    df = len(t.ratios) - 1
    mde = stats.minimum_detectable(floor, t.se, df, alpha, tests)
    change = math.expm1(t.shift)
    if p_value is None:
        # inside the minimum effect; settled once the interval around it is inside too
        reach = stats.t_quantile(alpha / (2 * tests), df) * t.se
        return PairedRow(t.benchmark, len(t.ratios), change, Verdict.UNCHANGED, t.minimum, mde=mde,
                         settled=abs(t.shift) + reach <= floor)
    if significant:
        verdict = Verdict.REGRESSED if t.shift > 0 else Verdict.IMPROVED
        return PairedRow(t.benchmark, len(t.ratios), change, verdict, t.minimum, p_value, mde, True)
    note = (f"beyond the minimum effect but not significant after correcting for {tests} benchmarks "
            f"(p={p_value:.2g}); more pairs decide")
    return PairedRow(t.benchmark, len(t.ratios), change, Verdict.UNKNOWN, t.minimum, p_value, mde, note=note)
