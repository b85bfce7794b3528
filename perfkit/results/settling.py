"""A measurement that did not settle: rounds that spread far more within the run than the baseline's did.

A benchmark's rounds inside one healthy run agree closely (a warm managed-memory launch on an H100 or H200:
1-6% IQR over median). On two fresh H100 hosts a warm launch's rounds instead spread 39% and 48% (1.64 ms
falling to 0.95 ms over ten rounds; 2.2-2.4 ms then 1.1-1.2 ms: pages that did not stay on the GPU), and the
run's median read +65% and +281%. Such a run says the measurement was disturbed, not that the code is
slower, as nvbench discards samples taken while the clock was throttled: a figure that got worse while its
rounds spread this much more than the baseline's is ``unknown``, and more runs decide. An injected or real
steady slowdown moves every round alike and keeps its spread.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from perfkit.results.model import BenchmarkEntry
from perfkit.results.noise import dispersion

#: Rounds that spread less than this (IQR over median) within a run are settled, whatever the baseline's did.
MIN_SPREAD = 0.20
#: How many times the baseline's within-run spread counts as not settled (healthy runs of the committed
#: baselines' benchmarks reached up to about 10x on host-bound first-touch launches, which also read unknown
#: when worse: their noise is the host's).
FACTOR = 5.0


@dataclass(frozen=True)
class Unsettled:
    """A figure's within-run spread in the current run and in the baseline's newest run (IQR over median)."""

    figure: str
    spread: float
    baseline_spread: float

    @property
    def disturbed(self) -> bool:
        return self.spread >= MIN_SPREAD and self.spread >= FACTOR * self.baseline_spread

    def sentence(self) -> str:
        return (f"its {self.figure} rounds spread {self.spread:.0%} within this run "
                f"({self.baseline_spread:.1%} in the baseline's): a measurement that did not settle, not a "
                "steady slowdown; more runs decide")


def unsettled(base: BenchmarkEntry, cur: BenchmarkEntry, figure: str) -> Unsettled | None:
    """How ``figure``'s rounds spread within ``cur`` against within ``base`` (None where either has fewer than
    four rounds or none spread)."""
    now, then = dispersion(cur, figure), dispersion(base, figure)
    if now is None or then is None:
        return None
    return Unsettled(figure, math.exp(now), math.exp(then))
