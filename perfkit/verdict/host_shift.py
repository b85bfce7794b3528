"""The run's common host slowdown (:class:`HostShift`): where every host-bound time of a GPU run moved
together, the host moved them, not the code; the judge holds back what lies within it.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from perfkit.resultfile.figures import TIME
from perfkit.verdict import stats
from perfkit.verdict.comparison import Policy
from perfkit.verdict.matching import FigureRuns
from perfkit.verdict.noise import HOST_KIND, Noise


@dataclass(frozen=True)
class HostShift:
    """How much slower the host side of the whole run was: the median log shift of its host-bound gating
    times, where there are ``MIN_FIGURES`` of them and it exceeds the minimum effect.

    A code change slows the benchmarks it touches; a slower host (another VM's CPU, a host clocked down)
    slows every host-bound one together. An H100 nightly on a fresh machine read all its host-bound figures
    15-75% slower than five earlier runs (the CPU loop's 1 M elements 0.99 ms against 0.48-0.60, the NumPy add
    24% slower) with no code change and no other process on the host; tested one by one against their
    history, two of them were called regressed. A figure whose worsening is within the run's common host
    shift is ``unknown`` (the host, not the code, moved it); one beyond it is tested on what remains.

    Only on a GPU run judged against its own hardware (its GPU-bound figures still speak for the code), with
    the same software (a new PyTorch or Python slows every host-bound step together too), and only below
    ``MAX_RATIO``: a whole suite 1.5 times slower or more is not called a slower host, and on a CPU run every
    figure is host-bound, so a common shift there may be the code's. A change of perfkit's own code that
    slows every host-bound step alike (a timer's overhead) reads as a slower host too: ``unknown``, never
    ``unchanged``."""

    shift: float  # median log shift (current over baseline) of the run's host-bound gating times
    figures: int
    spread: float = 0.0  # robust SD of those shifts (1.4826 MAD): how differently figures follow the host

    MIN_FIGURES: ClassVar[int] = 8
    MAX_RATIO: ClassVar[float] = 1.5

    @classmethod
    def of(cls, figures: Sequence[FigureRuns], noise: Noise, policy: Policy) -> HostShift | None:
        shifts = [stats.log_shift(f.baseline, f.current) for f in figures
                  if f.judged and f.figure == TIME and f.baseline and f.current
                  and f.measured_differently is None and min(f.baseline + f.current) > 0
                  and noise.kinds.get((f.benchmark, f.figure)) == HOST_KIND]
        if len(shifts) < cls.MIN_FIGURES:
            return None
        shift = statistics.median(shifts)
        spread = 1.4826 * statistics.median(abs(v - shift) for v in shifts)
        plausible = math.log1p(policy.threshold) < shift < math.log(cls.MAX_RATIO)
        return cls(shift, len(shifts), spread) if plausible else None

    def widened(self, se: float) -> float:
        """The standard error of a figure's shift beyond the host's: its own, the host shift's (a median:
        variance about pi/2 times the spread's over n) and how far one figure may follow the host
        differently from the median (the spread)."""
        return math.sqrt(se**2 + self.spread**2 * (1 + math.pi / (2 * self.figures)))

    def sentence(self) -> str:
        return (f"the run's {self.figures} host-bound times were {math.expm1(self.shift):+.0%} slower "
                "together (median): a slower host, not this benchmark; run it again on another machine")
