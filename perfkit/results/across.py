"""Across hardware: each benchmark's measured speedup beside the ratio of the ceiling that bounds it.

Someone choosing hardware compares two baselines of different machines: no verdict, but a speedup per
benchmark (baseline time / current time, the mean over each side's runs) and, where both sides name the
ceiling the benchmark follows, what that ceiling's ratio predicts (each side held to its own ceiling:
a convolution bound by TF32 on a GPU is bound by fp32 on a CPU).
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from perfkit.results import stats
from perfkit.results.ceilings import Ceilings
from perfkit.results.figures import TIME
from perfkit.results.model import ResultSet


@dataclass(frozen=True)
class HardwareRow:
    benchmark: str
    speedup: float
    bound: str | None
    expected: float | None

    #: The factor, either way, by which a speedup may miss its ceiling's ratio before it needs explaining
    FAR: ClassVar[float] = 1.25

    @property
    def far(self) -> bool:
        """The speedup misses the ratio of the ceiling that bounds it by more than the factor FAR."""
        return self.expected is not None and not 1 / self.FAR <= self.speedup / self.expected <= self.FAR


def _ceiling(results: ResultSet, ceilings: Ceilings, key: str) -> float | None:
    """The machine's ceiling, else its datasheet figure (a machine that never measured it)."""
    found = ceilings.value(key)
    sheet = results.info.datasheet
    return found if found is not None else (sheet.ceiling(key) if sheet else None)


def hardware_rows(baseline: ResultSet, current: ResultSet, names: Sequence[str]) -> tuple[HardwareRow, ...]:
    """One row per benchmark both sets hold."""
    base, cur = baseline.by_name(), current.by_name()
    base_runs, cur_runs = baseline.runs(), current.runs()
    base_ceilings, cur_ceilings = Ceilings.of(baseline), Ceilings.of(current)
    rows = []
    for name in names:
        now = statistics.fmean(cur_runs[name][TIME])
        speedup = statistics.fmean(base_runs[name][TIME]) / now if now > 0 else math.inf
        # only where both runs name the ceiling they follow (a benchmark names none where its work is not that
        # ceiling's, as the timer's copy on a CPU), and each side its own
        base_bound, cur_bound = base[name].context.bound, cur[name].context.bound
        if not base_bound or not cur_bound:
            rows.append(HardwareRow(name, speedup, None, None))
            continue
        old, new = _ceiling(baseline, base_ceilings, base_bound), _ceiling(current, cur_ceilings, cur_bound)
        expected = new / old if old and new else None
        if expected is not None and base_bound in base_runs[name] and cur_bound in cur_runs[name]:
            # a benchmark that measures the ceiling itself compares by that rate, not its time: its size may
            # differ by device (the quick profile copies 1 GiB on a GPU and 64 MiB on a CPU)
            speedup = expected
        shown = cur_bound if cur_bound == base_bound else f"{base_bound} -> {cur_bound}"
        rows.append(HardwareRow(name, speedup, shown, expected))
    return tuple(rows)


def geomean_time_ratio(rows: Sequence[HardwareRow]) -> float | None:
    """The geometric mean of current time over baseline time (a ceiling's benchmark counted at its rate)."""
    return stats.geometric_mean([1 / r.speedup for r in rows if r.speedup > 0])
