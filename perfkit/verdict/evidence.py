"""What a gating figure's test rests on, and what that test can see: its MDE (one look's, or a confirmed
night's two looks' together), what limits it, and how many runs of this code would sharpen or settle it.

The judge (perfkit.verdict.judge) builds one :class:`Evidence` per tested gating figure and asks it these
questions after the family-wise correction has fixed the level.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from perfkit.verdict import stats
from perfkit.verdict.comparison import Reach, sharp_goal
from perfkit.verdict.host_shift import HostShift

#: The most runs of this code a weak figure's advice counts up to (a confirmation's re-runs, replicates).
MOST_RUNS = 20

#: A figure this many times worse is re-run whatever runs of this code could show (perfkit.confirm.suspects).
ALWAYS_RE_RUN = 1.5

#: Why a figure whose runs never varied has no MDE (:meth:`Evidence.limited_by`).
NEVER_VARIED = "its runs never varied: a tie, no change of any size is flagged until runs that vary decide"


@dataclass(frozen=True)
class Evidence:
    """What a gating figure's test rests on: the shift of mean logs, its standard error and degrees of
    freedom, and the minimum effect (log)."""

    shift: float
    se: float
    df: float
    floor: float
    # (runs, SE, degrees of freedom) were this side's runs, one more, ... MOST_RUNS runs of this code judged
    # together against the same baseline
    by_runs: tuple[tuple[int, float, float], ...] = ()
    # the run's common host shift the test took out of a host-bound time (and the spread it adds), if any
    host: HostShift | None = None
    # the run's common host shift a slowdown of this figure would be tested beyond, if any: its MDE carries
    # the spread that adds (a change of the printed MDE is then still flagged 80% of the time)
    slowdown_host: HostShift | None = None
    # why a disturbed run (a busy host, a hot GPU) holds back any slowdown of this figure, if one does: no
    # MDE tonight
    held_back: str | None = None

    def slowdown_se(self, se: float) -> float:
        """``se`` (of some count of runs) as a slowdown's test weighs it: beyond the run's host shift."""
        return self.slowdown_host.widened(se) if self.slowdown_host is not None else se

    def limited_by(self) -> str:
        """What keeps the MDE where it is tonight that more runs of this code do not change (the row's
        ``mde_limited_by``): runs that never varied, a disturbed run, or the run's common host shift (its
        spread widens every host-bound slowdown's test); "" where it is the figure's noise."""
        if self.se == 0:
            return NEVER_VARIED
        if self.held_back:
            return self.held_back
        if self.slowdown_host is not None:
            return (f"the run's common host shift ({math.expm1(self.slowdown_host.shift):+.0%}) widens its "
                    "test: run it on a host like the baseline's")
        return ""

    def mde(self, level: float, picked: Reach | None = None, confirm_runs: int = 0) -> float | None:
        """The change flagged 80% of the time at ``level``: this test's alone; on a confirmation's second
        look (``picked``: what the first look's test could reach), both looks' together; and on a first look
        that a confirmation of ``confirm_runs`` re-runs will follow, both looks' too: a change is flagged
        there only once this run picks it and the re-runs confirm it (one look's 80% point was flagged
        75% of the time by a confirmed night on a new H100, docs/findings.md 2026-12-07). None where no
        slowdown of any size is flagged tonight: runs that never varied (a tie, never p = 0), or a
        disturbed run."""
        if self.se == 0 or self.held_back:
            return None
        first = self._picking(level, picked, confirm_runs)
        se, df = self._at_runs(confirm_runs) if picked is None and confirm_runs else (self.se, self.df)
        return _detectable(self.floor, self.slowdown_se(se), df, level, first)

    def runs_to_see(self, level: float, picked: Reach | None = None) -> int | None:
        """How many runs of this code, judged together against the same baseline, bring a weak figure's MDE
        to its goal (:func:`sharp_goal`; host work's heavy tails keep its degrees of freedom few however many
        runs); None where even :data:`MOST_RUNS` do not (its noise, its baseline's few runs or the noise
        between machines leave too little room). ``picked``: as :meth:`mde`'s, on a confirmation's second
        look. On a first look a confirmation follows they are counted in one look too (replicates): its
        first run must pick the figure, and where that run is too noisy to, no count of re-runs sees the goal
        (a 5% spread over five baseline runs: 4 runs judged together see 10%, 20 re-runs never do)."""
        goal = sharp_goal(math.expm1(self.floor))

        def sees(index: int) -> bool:
            _, se, df = self.by_runs[index]
            return _detectable(self.floor, self.slowdown_se(se), df, level, picked) <= goal

        if not self.by_runs or not sees(len(self.by_runs) - 1):
            return None
        low, high = -1, len(self.by_runs) - 1  # the MDE only shrinks with more runs: bisect for the first
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (low, middle) if sees(middle) else (middle, high)
        return self.by_runs[high][0]

    def decidable(self, level: float) -> bool:
        """Whether some count of runs of this code, up to :data:`MOST_RUNS`, would show the move seen
        significant at ``level``, were it to stay where it is (beyond the run's common host shift where the
        test took that out: its spread does not shrink with more runs)."""
        host = self.host
        return abs(self.shift - (host.shift if host is not None else 0.0)) >= self._least_decidable(level)

    def reach(self, level: float) -> Reach:
        """What this test, a first look's at ``level``, could reach: what a confirmation's second look
        weighs its MDE by (the least move it re-runs, as perfkit.confirm.suspects picks them: beyond the
        minimum effect, and one that runs of this code could show or 1.5 times worse)."""
        rerun_from = max(self.floor, min(self._least_decidable(level), math.log(ALWAYS_RE_RUN)))
        return Reach(self.floor, self.se, self.df, rerun_from)

    def _least_decidable(self, level: float) -> float:
        """The least move (log) that some count of runs of this code up to :data:`MOST_RUNS` shows significant
        at ``level`` (the host shift's spread, where the test took one out, does not shrink with runs)."""
        host = self.host
        return min((stats.t_quantile(level / 2, df) * (se if host is None else host.widened(se))
                    for _, se, df in self.by_runs), default=math.inf)

    def _picking(self, level: float, picked: Reach | None, confirm_runs: int) -> Reach | None:
        """What the look that picks a figure for re-running could reach: the first look's on a second look,
        this test's own on a first look a confirmation follows, none on a night without one."""
        return self.reach(level) if picked is None and confirm_runs else picked

    def _at_runs(self, runs: int) -> tuple[float, float]:
        """The SE and degrees of freedom of ``runs`` runs of this code judged alone against the same baseline
        (a confirmation's re-runs); those of this side's own count where it holds more (its runs judged
        together: a rare night of replicates re-run fewer times)."""
        for count, se, df in self.by_runs:
            if count >= runs:
                return se, df
        return (self.by_runs[-1][1], self.by_runs[-1][2]) if self.by_runs else (self.se, self.df)


def _detectable(floor: float, se: float, df: float, level: float, picked: Reach | None = None) -> float:
    """The 80%-power point at ``level``; on a second look of a figure the first look tested (``picked``:
    what that test could reach), both looks' together."""
    if picked is None:
        return stats.detectable_at_power(floor, se, df, level)
    return stats.detectable_in_two_looks((picked.rerun_from, picked.se, picked.df), (floor, se, df), level)
