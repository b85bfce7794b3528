"""The geometric mean time ratio of a same-hardware comparison, and on a GPU run that of its GPU-bound and
host-bound benchmarks apart: the judge's one-line summary of how the run's times moved."""
from __future__ import annotations

import math
import statistics

from perfkit.resultfile.figures import TIME
from perfkit.verdict import stats
from perfkit.verdict.comparison import KindTimeRatio
from perfkit.verdict.matching import Pairing
from perfkit.verdict.noise import GPU_KIND, HOST_KIND, Noise


def of(paired: Pairing, base_runs: dict[str, dict[str, list[float]]],
       cur_runs: dict[str, dict[str, list[float]]], noise: Noise,
       gpu_run: bool) -> tuple[float | None, tuple[KindTimeRatio, ...]]:
    """The geometric mean time ratio of the benchmarks both sides timed alike (not measured differently),
    and on a GPU run that of its GPU-bound and host-bound ones apart (:func:`by_kind`)."""
    apart = {f.benchmark for f in paired.figures if f.figure == TIME and f.measured_differently}
    shifts = {n: stats.log_shift(base_runs[n][TIME], cur_runs[n][TIME]) for n in paired.common
              if n not in apart and base_runs[n].get(TIME) and cur_runs[n].get(TIME)
              and min(base_runs[n][TIME] + cur_runs[n][TIME]) > 0}
    geomean = math.exp(statistics.fmean(shifts.values())) if shifts else None
    return geomean, by_kind(shifts, noise) if gpu_run else ()


def by_kind(shifts: dict[str, float], noise: Noise) -> tuple[KindTimeRatio, ...]:
    """The geometric mean time ratio of a GPU run's GPU-bound benchmarks and of its host-bound ones (by the
    noise kind of their time, as ``noise`` has it: a benchmark it has no runs of is in neither), from each
    benchmark's log ``shifts``; none unless both kinds are there (one kind alone is the whole run's mean).
    On a CPU run the device is the host."""
    kinds = {GPU_KIND: "GPU-bound", HOST_KIND: "host-bound"}
    groups: dict[str, list[float]] = {kind: [] for kind in kinds}
    for name, shift in shifts.items():
        kind = noise.kinds.get((name, TIME))
        if kind in groups:
            groups[kind].append(shift)
    if not all(groups.values()):
        return ()
    return tuple(KindTimeRatio(words, math.exp(statistics.fmean(groups[kind])), len(groups[kind]))
                 for kind, words in kinds.items())
