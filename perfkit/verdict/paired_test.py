"""The statistics of an A/B run: per-round log ratios HEAD/BASE of each benchmark's gating figures (its time,
or what the bench names instead, and the figures declared to gate), a paired t-test, Holm over them all;
floats in, the judge's verdict words out.

Paired, not the judge's prediction test: the two sides of a round ran back to back on one machine, so a
drift of the machine (clocks, neighbours, heat) hits both and cancels in their ratio, and the spread of the
ratios is the noise itself; no hardware noise model is needed.

Sequential: perfkit.ab looks after every pair and stops a figure once it is settled, so a test at the full
alpha at each look would cry wolf far more often than alpha (5.6-12% of A/As at 5%). The looks spend alpha
instead, by Lan and DeMets' O'Brien-Fleming-type function (stats.obrien_fleming_spent) of each figure's own
pairs n out of the rounds R: the look at its n-th pair may spend alpha(n/R) - alpha((n-1)/R), its first one
(at MIN_PAIRS) alpha(MIN_PAIRS/R), the last look of the rounds whatever is left. A union bound over the looks
(conservative, and valid however the looks fall) keeps a figure's false alarms within alpha; Holm runs over
every figure paired, each at its own look's level (Holm's weighted form: p over that level), and a figure
found significant at an earlier look counts as rejected, so the family's false-alarm rate stays within alpha.

Disturbed: a figure that came out worse beyond its minimum effect while a run of its pairs, of either side,
was disturbed (other processes kept a quarter or more of the CPUs busy, heat held the GPU's clocks down) is
``unknown`` in the nightly judge's words, untested (judge.held_back): a neighbour that comes and goes
between the two runs of a round does not cancel in their ratio, and the judge reading the A/B's base.json
and head.json holds the same slowdown back.

The one interval: each figure's two-sided t interval at its look's level over the figures (Bonferroni,
Holm's first step). These are repeated confidence intervals: with probability 1 - alpha, every interval of
every figure at every look holds its true change. So ``unchanged`` (the whole interval inside the minimum
effect) is as safe a claim as ``regressed``, and stopping a figure there takes nothing from the others' alpha.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from perfkit.resultfile.figures import TIME
from perfkit.verdict import stats
from perfkit.verdict.judge import Verdict, counted, effect_bounds

#: Fewer pairs give no spread to test against (two give one degree of freedom).
MIN_PAIRS = 2
#: The most rounds an A/B takes: each pair is two fresh benchmark runs, and that many resolve a change far
#: below any minimum effect at the spreads seen on a quiet machine.
MAX_ROUNDS = 1000
#: The chance of flagging a change of the MDE a row gives (the nightly judge's too).
POWER = stats.POWER
TEST = "paired t-test on the per-round log ratios HEAD/BASE of each benchmark's gating figures"
WHY = ("the two sides of a round ran back to back, so the machine's drift cancels in their ratio and the "
       "ratios' own spread is the noise")
SPENDING = ("alpha spent over the looks after each pair by Lan-DeMets' O'Brien-Fleming-type function, each "
            "figure over its own pairs")
INTERVAL = ("unchanged only where the figure's interval at its look's level lies inside its minimum effect, "
            f"else unknown; MDE: the change found with {POWER:.0%} power at that level")
_DECIDED = (Verdict.REGRESSED, Verdict.IMPROVED)


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
    mde: float | None = None  # the change this look would flag with POWER power
    # more pairs would not change the answer: significant, or its interval inside the minimum effect; the
    # figure stops there
    settled: bool = False
    note: str = ""
    figure: str = TIME


@dataclass(frozen=True)
class _Tested:
    key: Key
    pairs: int
    shift: float  # the mean log(HEAD/BASE)
    se: float  # its standard error; 0 where every pair gave the same ratio
    minimum: float
    higher_better: bool
    level: float  # what this look spends of the figure's alpha, before Holm and the interval share it out

    @classmethod
    def of(cls, key: Key, values: Sequence[tuple[float, float]], minimum: float, higher_better: bool,
           level: float) -> _Tested:
        ratios = [math.log(h / b) for b, h in values]
        shift = statistics.fmean(ratios)
        # equal ratios are a tie, exactly: a mean rounded an ulp off them must not make a spread
        spread = 0.0 if min(ratios) == max(ratios) else math.fsum((r - shift) ** 2 for r in ratios)
        se = math.sqrt(spread / (len(ratios) - 1) / len(ratios))
        return cls(key, len(ratios), shift, se, minimum, higher_better, level)

    @property
    def floor(self) -> float:
        return math.log1p(self.minimum)

    @property
    def df(self) -> int:
        return self.pairs - 1

    @property
    def worse(self) -> bool:
        """HEAD moved the way that is worse for the figure."""
        return self.shift < 0 if self.higher_better else self.shift > 0

    def held(self, disturbed: Mapping[Key, str]) -> str | None:
        """Why it cannot be called regressed (judge.held_back): worse beyond its minimum effect while a run
        of its pairs was disturbed; None otherwise."""
        return disturbed.get(self.key) if self.worse and abs(self.shift) > self.floor else None


def look_level(alpha: float, pairs: int, rounds: int, final: bool) -> float:
    """What the look at a figure's ``pairs``-th pair may spend of ``alpha`` (``pairs`` <= ``rounds``): the
    spending function's rise since the look before, everything left at the ``final`` look."""
    before = stats.obrien_fleming_spent(alpha, (pairs - 1) / rounds) if pairs > MIN_PAIRS else 0.0
    return (alpha if final else stats.obrien_fleming_spent(alpha, pairs / rounds)) - before


def verdicts(pairs: Mapping[Key, Sequence[tuple[float, float]]], minimum: Mapping[Key, float],
             alpha: float, higher_better: Collection[Key] = (), *, rounds: int, final: bool = False,
             decided: Mapping[Key, PairedRow] | None = None,
             disturbed: Mapping[Key, str] | None = None) -> list[PairedRow]:
    """One row per (benchmark, figure) of ``pairs`` ((base, head) values per round), sorted; ``minimum``:
    each one's minimum effect (perfkit's Policy); ``higher_better``: the figures where a rise is the better
    way (a capacity, a share reached), the rest are times or cycles. ``rounds``: the budget of pairs each
    figure's alpha is spent over; ``final``: the rounds are spent, this look spends what is left;
    ``decided``: the rows settled at an earlier look, given back as they were (their figures stopped there);
    ``disturbed``: for a figure whose pairs hold a disturbed run (a busy host, a hot GPU), what disturbed it,
    in the judge's words: worse beyond its minimum effect, it is ``unknown`` with them, untested, as the
    nightly judge holds it back. Holm corrects over every figure paired (family-wise false-alarm rate
    ``alpha`` over all the looks)."""
    decided, disturbed = decided or {}, disturbed or {}
    rows: dict[Key, PairedRow] = dict(decided)
    tested: list[_Tested] = []
    for key, values in pairs.items():
        if key in decided:
            continue
        if len(values) < MIN_PAIRS or min(v for pair in values for v in pair) <= 0:
            few = len(values) < MIN_PAIRS
            note = f"needs {MIN_PAIRS} pairs of positive values" if few else "a zero value"
            rows[key] = PairedRow(key[0], len(values), None, Verdict.UNKNOWN, minimum[key], note=note,
                                  figure=key[1])
        else:
            tested.append(_Tested.of(key, values, minimum[key], key in higher_better,
                                     look_level(alpha, len(values), rounds, final)))
    tests = max(1, len(pairs))
    beyond = [t for t in tested if t.se > 0 and abs(t.shift) > t.floor and t.held(disturbed) is None]
    p_values = [stats.two_sided_p(t.shift / t.se, t.df) for t in beyond]
    # weighted Holm: each p over its own look's level, the figures rejected at earlier looks already out
    rejected = sum(row.verdict in _DECIDED for row in decided.values())
    scaled = [p / t.level for p, t in zip(p_values, beyond)]
    significant = dict(zip((t.key for t in beyond), stats.holm(scaled, 1.0, tests - rejected)))
    p_of = dict(zip((t.key for t in beyond), p_values))
    for t in tested:
        rows[t.key] = _row(t, p_of.get(t.key), significant.get(t.key, False), tests, final, t.held(disturbed),
                           alpha, rounds)
    return [rows[key] for key in sorted(rows)]


def _row(t: _Tested, p_value: float | None, significant: bool, tests: int, final: bool,
         held: str | None, alpha: float, rounds: int) -> PairedRow:
    benchmark, figure = t.key
    change = math.expm1(t.shift)
    more = "more rounds (--rounds)" if final else "more pairs"
    if t.se == 0:
        if t.shift == 0:  # the two sides gave the same value in every pair: nothing moved
            return PairedRow(benchmark, t.pairs, change, Verdict.UNCHANGED, t.minimum, settled=True,
                             note="the two sides were equal in every pair", figure=figure)
        # every pair gave the same ratio: a tie, no spread to test against, never p = 0
        return PairedRow(benchmark, t.pairs, change, Verdict.UNKNOWN, t.minimum, 1.0,
                         note=f"needs {more}: the pairs did not vary (each {change:+.1%})", figure=figure)
    level = t.level / tests
    if held is not None:  # not tested: more pairs may still bring it inside its minimum effect; no slowdown
        # of any size is flagged from these pairs, so no MDE (as the nightly's judge says)
        return PairedRow(benchmark, t.pairs, change, Verdict.UNKNOWN, t.minimum, note=held, figure=figure)
    mde = stats.detectable_at_power(t.floor, t.se, t.df, level, POWER)
    if significant:
        verdict = Verdict.REGRESSED if t.worse else Verdict.IMPROVED
        return PairedRow(benchmark, t.pairs, change, verdict, t.minimum, p_value, mde, True, figure=figure)
    reach = stats.t_quantile(level / 2, t.df) * t.se
    bounds = effect_bounds(t.floor)
    if abs(t.shift) + reach <= t.floor:
        said = (f"its interval {_end(t.shift - reach)} to {_end(t.shift + reach)} lies inside the minimum "
                f"effect ({bounds})")
        return PairedRow(benchmark, t.pairs, change, Verdict.UNCHANGED, t.minimum, mde=mde, settled=True,
                         note=said, figure=figure)
    why = (f"inside the minimum effect ({bounds})" if p_value is None else
           f"beyond the minimum effect but not significant after correcting for {counted(tests, 'figure')} "
           f"and the looks (p={p_value:.2g})")
    settle = _what_settles(t, alpha, tests, rounds) if final else f"{more} settle it"
    note = (f"{why}, not settled: its interval runs from {_end(t.shift - reach)} to {_end(t.shift + reach)}; "
            f"{settle}")
    return PairedRow(benchmark, t.pairs, change, Verdict.UNKNOWN, t.minimum, p_value, mde, note=note,
                     figure=figure)


def _what_settles(t: _Tested, alpha: float, tests: int, ran: int) -> str:
    """What would settle a figure the ``ran`` rounds left unsettled, if its change and its pairs' spread
    hold: the fewest rounds R of a new A/B whose last look alone settles it POWER of the time
    (:func:`_settle_chance`); the looks before can only settle it sooner (just beyond its minimum effect
    they do, and fewer rounds suffice: an upper estimate), or why no A/B within MAX_ROUNDS would."""
    sd = t.se * math.sqrt(t.pairs)
    for rounds in range(max(t.pairs, ran) + 1, MAX_ROUNDS + 1):
        if _settle_chance(t.shift, sd, t.floor, look_level(alpha, rounds, rounds, final=True) / tests,
                         rounds) >= POWER:
            return (f"at most about {rounds} rounds would settle it (--rounds {rounds}), if its change and "
                    "spread hold")
    return (f"no A/B of up to {MAX_ROUNDS} rounds would settle it: its change sits "
            f"{abs(abs(t.shift) - t.floor):.1%} from its minimum effect, closer than {MAX_ROUNDS} pairs of "
            f"its spread (SD {sd:.1%} a pair) resolve; a quieter machine narrows the spread")


def _settle_chance(shift: float, sd: float, floor: float, level: float, rounds: int) -> float:
    """The chance that the look at ``rounds`` pairs, testing at ``level``, settles a figure whose true mean
    log ratio is ``shift`` and whose pairs spread ``sd`` (normal): its interval inside the minimum effect
    ``floor`` (both logs), or its change beyond the floor and significant, either way."""
    se = sd / math.sqrt(rounds)
    reach = stats.t_quantile(level / 2, rounds - 1) * se
    estimate = statistics.NormalDist(abs(shift), se)
    inside = max(0.0, floor - reach)
    beyond = max(floor, reach)
    return (estimate.cdf(inside) - estimate.cdf(-inside)) + (1 - estimate.cdf(beyond) + estimate.cdf(-beyond))


def _end(shift: float) -> str:
    """An end of an interval as a change; past +1000% (an early look's level is tiny) the digits say
    nothing more."""
    return f"{math.expm1(shift):+.1%}" if shift <= math.log(11) else ">+1000%"
