"""The statistics of an A/B run: per-round log ratios HEAD/BASE of each benchmark's gating figures (its time,
or what the bench names instead, and the figures declared to gate), a paired t-test, Holm over them all;
floats in, the judge's verdict words out.

Paired, not the judge's prediction test: the two sides of a round ran back to back on one machine, so a
drift of the machine (clocks, neighbours, heat) hits both and cancels in their ratio, and the spread of the
ratios is the noise itself; no hardware noise model is needed.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from perfkit.results import stats
from perfkit.results.figures import TIME
from perfkit.results.judge import Verdict

#: Fewer pairs give no spread to test against (two give one degree of freedom).
MIN_PAIRS = 2
TEST = "paired t-test on the per-round log ratios HEAD/BASE of each benchmark's gating figures"
WHY = ("the two sides of a round ran back to back, so the machine's drift cancels in their ratio and the "
       "ratios' own spread is the noise")


#: What one paired test is about: a benchmark and one of its gating figures.
Key = tuple[str, str]


@dataclass(frozen=True)
class PairedRow:
    benchmark: str
    pairs: int
    change: float | None  # HEAD/BASE - 1 of the figure, from the mean log ratio
    verdict: Verdict
    minimum: float  # the minimum effect worth a verdict
    p_value: float | None = None
    mde: float | None = None  # the smallest change these pairs would call significant
    settled: bool = False  # more pairs would not change the answer: significant, or inside the minimum
    note: str = ""
    figure: str = TIME


@dataclass(frozen=True)
class _Tested:
    key: Key
    ratios: tuple[float, ...]  # log(HEAD/BASE) per pair
    minimum: float
    higher_better: bool

    @property
    def shift(self) -> float:
        return statistics.fmean(self.ratios)

    @property
    def se(self) -> float:
        return statistics.stdev(self.ratios) / math.sqrt(len(self.ratios))


def verdicts(pairs: Mapping[Key, Sequence[tuple[float, float]]], minimum: Mapping[Key, float],
             alpha: float, higher_better: Collection[Key] = ()) -> list[PairedRow]:
    """One row per (benchmark, figure) of ``pairs`` ((base, head) values per round), sorted; ``minimum``:
    each one's minimum effect (perfkit's Policy); ``higher_better``: the figures where a rise is the better
    way (a capacity, a share reached), the rest are times or cycles. Holm corrects over every figure with two
    pairs or more (family-wise false-alarm rate ``alpha``)."""
    rows: dict[Key, PairedRow] = {}
    tested: list[_Tested] = []
    for key, values in pairs.items():
        if len(values) < MIN_PAIRS or min(v for pair in values for v in pair) <= 0:
            few = len(values) < MIN_PAIRS
            note = f"needs {MIN_PAIRS} pairs of positive values" if few else "a zero value"
            rows[key] = PairedRow(key[0], len(values), None, Verdict.UNKNOWN, minimum[key], note=note,
                                  figure=key[1])
        else:
            tested.append(_Tested(key, tuple(math.log(h / b) for b, h in values), minimum[key],
                                  key in higher_better))
    tests = max(1, len(tested))
    beyond = [t for t in tested if abs(t.shift) > math.log1p(t.minimum)]
    p_values = [0.0 if t.se == 0 else stats.two_sided_p(t.shift / t.se, len(t.ratios) - 1) for t in beyond]
    significant = dict(zip((t.key for t in beyond), stats.holm(p_values, alpha, tests)))
    p_of = dict(zip((t.key for t in beyond), p_values))
    for t in tested:
        rows[t.key] = _row(t, p_of.get(t.key), significant.get(t.key, False), alpha, tests)
    return [rows[key] for key in sorted(rows)]


def _row(t: _Tested, p_value: float | None, significant: bool, alpha: float, tests: int) -> PairedRow:
    floor = math.log1p(t.minimum)
    df = len(t.ratios) - 1
    mde = stats.minimum_detectable(floor, t.se, df, alpha, tests)
    change = math.expm1(t.shift)
    benchmark, figure = t.key
    if p_value is None:
        # inside the minimum effect; settled once the interval around it is inside too
        reach = stats.t_quantile(alpha / (2 * tests), df) * t.se
        settled = abs(t.shift) + reach <= floor
        low, high = math.expm1(t.shift - reach), math.expm1(t.shift + reach)
        note = "" if settled else (f"inside the minimum effect, not settled: its interval runs from "
                                   f"{low:+.1%} to {high:+.1%}; more pairs settle it")
        return PairedRow(benchmark, len(t.ratios), change, Verdict.UNCHANGED, t.minimum, mde=mde,
                         settled=settled, note=note, figure=figure)
    if significant:
        worse = t.shift < 0 if t.higher_better else t.shift > 0
        verdict = Verdict.REGRESSED if worse else Verdict.IMPROVED
        return PairedRow(benchmark, len(t.ratios), change, verdict, t.minimum, p_value, mde, True,
                         figure=figure)
    note = (f"beyond the minimum effect but not significant after correcting for {tests} figures "
            f"(p={p_value:.2g}); more pairs decide")
    return PairedRow(benchmark, len(t.ratios), change, Verdict.UNKNOWN, t.minimum, p_value, mde, note=note,
                     figure=figure)
