"""Change points in a benchmark's history: e-divisive means (Matteson & James, JASA 2014).

Why this method: it is the one Apache Otava (ex-Hunter, DataStax) and MongoDB's signal-processing service run
on nightly performance series, it assumes no distribution (run values of a host-bound benchmark are skewed and
heavy-tailed), and it finds several shifts in one pass by bisection. Each candidate split maximises the energy
statistic between the values before and after it; a split stands only if fewer than ``alpha`` of random
permutations (within the present segments) give a statistic as large. We work on log values: a step of +10%
counts the same at 1 µs and at 1 s. Choices: alpha = 0.01 rather than the paper's 0.05, because a history is
read for hundreds of benchmarks at once and 5% of flat ones showing a spurious shift is the cry-wolf this
suite exists to avoid; 999 permutations so that p can go below it, stopped as soon as p must exceed alpha
(Gandy 2009, a simple form of the sequential test the ``ecp`` package uses), which keeps a flat series at
milliseconds. A clean 10% step is found from about 10 runs (5 either side) or with 3 new runs after 20 old
ones. Otava later replaced the permutation test by a t-test between neighbouring segments for speed on
thousands of points; nightly histories are tens to hundreds of runs, where the exact, distribution-free test
costs under a second and is kept. The seed is fixed, so the same history always gives the same answer.
"""
from __future__ import annotations

import dataclasses
import functools
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from perfkit.errors import UsageError

#: False-alarm rate per series with no shift (see above for why not 0.05).
ALPHA = 0.01
#: The most pairwise differences one batch of permutations holds (8 bytes each, a few arrays of them).
BATCH_ELEMENTS = 2_000_000


@dataclass(frozen=True)
class ChangePoint:
    """``index``: the first value of the new segment; medians of the segments either side, in the input's
    units."""

    index: int
    before: float
    after: float
    p_value: float

    @property
    def change(self) -> float:
        """Relative change of the segment median (+0.10: 10% higher)."""
        return self.after / self.before - 1.0 if self.before else float("inf")


def _best_split(y: np.ndarray, min_size: int) -> tuple[int, float]:
    """The split of ``y`` with the largest energy statistic Q̂ (alpha = 1)."""
    n = len(y)
    if n < 2 * min_size:
        return -1, -np.inf
    q = _statistics(y[None, :], min_size)[0]
    best = int(np.argmax(q))
    return best + min_size, float(q[best])


def _largest(ys: np.ndarray, min_size: int) -> np.ndarray:
    """The largest Q̂ of each row of ``ys`` (one series a row, all of a length): -inf where too short."""
    if ys.shape[1] < 2 * min_size:
        return np.full(len(ys), -np.inf)
    return _statistics(ys, min_size).max(axis=1)


def _statistics(ys: np.ndarray, min_size: int) -> np.ndarray:
    """Q̂ of every split t = min_size .. n - min_size of each row of ``ys``, from 2-D prefix sums of |y_i -
    y_j|: a batch of permutations in one pass of numpy instead of one call each."""
    rows, n = ys.shape
    p = np.zeros((rows, n + 1, n + 1))
    p[:, 1:, 1:] = np.abs(ys[:, :, None] - ys[:, None, :]).cumsum(1).cumsum(2)
    t = np.arange(min_size, n - min_size + 1)
    m, k = t.astype(float), (n - t).astype(float)
    diagonal, to_end, whole = p[:, t, t], p[:, t, n], p[:, n, n][:, None]
    within_a = diagonal / 2
    within_b = (whole - 2 * to_end + diagonal) / 2
    cross = to_end - diagonal
    pairs_a, pairs_b = m * (m - 1) / 2, k * (k - 1) / 2
    return m * k / (m + k) * (2 * cross / (m * k) - within_a / pairs_a - within_b / pairs_b)


def change_points(
    values: Sequence[float],
    *,
    alpha: float = ALPHA,
    permutations: int = 999,
    min_size: int = 3,
    seed: int = 0,
) -> list[ChangePoint]:
    """Significant change points of ``values`` (in order), each with its segment medians and p-value."""
    return list(_change_points(tuple(values), alpha, permutations, min_size, seed))


@functools.lru_cache(maxsize=4096)
def _change_points(values: tuple[float, ...], alpha: float, permutations: int, min_size: int,
                   seed: int) -> tuple[ChangePoint, ...]:
    """:func:`change_points`, found once per series: a permutation test is the dearest step of a dashboard,
    and its trends and its noise (the runs since each benchmark's last change point) ask for the same
    series."""
    if min_size < 2 or permutations < 1 or not 0 < alpha < 1:
        raise UsageError("change points need min_size >= 2, permutations >= 1 and 0 < alpha < 1")
    raw = np.asarray(values, dtype=float)
    if raw.size and not np.isfinite(raw).all():
        raise UsageError("change points need finite values")
    y = np.log(raw) if raw.size and raw.min() > 0 else raw  # a figure that can be 0 or negative stays linear
    rng = np.random.default_rng(seed)
    found: dict[int, float] = {}
    while True:
        bounds = [0, *sorted(found), len(y)]
        segments = list(pairwise(bounds))
        splits = [(_best_split(y[a:b], min_size), a) for a, b in segments]
        (tau, q), start = max(splits, key=lambda s: s[0][1])
        if tau < 0:
            break
        p_value = _permutation_p(y, segments, q, rng, alpha, permutations, min_size)
        if p_value > alpha:
            break
        found[start + tau] = p_value
    cuts = sorted(found)
    bounds = [0, *cuts, len(y)]
    return tuple(
        ChangePoint(c, statistics.median(raw[a:c].tolist()), statistics.median(raw[c:b].tolist()), found[c])
        for a, c, b in zip(bounds, bounds[1:], bounds[2:])
    )


def _permutation_p(y: np.ndarray, segments: Sequence[tuple[int, int]], q: float, rng: np.random.Generator,
                   alpha: float, permutations: int, min_size: int) -> float:
    """The permutation p-value of a split whose statistic is ``q``: each permutation shuffles every segment
    and keeps its largest Q̂. Drawn in batches, each segment's permutations in one numpy pass, and stopped
    once p must exceed alpha (after Gandy 2009): the draws are those of one permutation at a time, so a split
    found significant has the same p as drawn singly; a batch runs past a stop only where none is found."""
    larger, done, batch = 0, 0, 8
    most_at_once = max(1, BATCH_ELEMENTS // len(y) ** 2)  # a long history's batch within tens of MB
    while done < permutations:
        size = min(batch, most_at_once, permutations - done)
        drawn = [[rng.permutation(y[a:b]) for a, b in segments] for _ in range(size)]
        most = np.max([_largest(np.array([d[i] for d in drawn]), min_size)
                       for i in range(len(segments))], axis=0)
        for exceeded in most >= q:  # counted one at a time, to stop where the single draws stopped
            larger += bool(exceeded)
            done += 1
            if larger + 1 > alpha * (permutations + 1):
                return (larger + 1) / (permutations + 1)
        batch = min(2 * batch, 128)
    return (larger + 1) / (permutations + 1)


def breaks(kinds: Sequence[object]) -> list[int]:
    """Where a series' values become of another kind (a figure measured by another method version from there
    on, perfkit.resultfile.figures.METHODS): the first index of each stretch after the first."""
    return [i for i in range(1, len(kinds)) if kinds[i] != kinds[i - 1]]


def change_points_apart(values: Sequence[float], breaks: Sequence[int]) -> list[ChangePoint]:
    """:func:`change_points` of each stretch between ``breaks``, found apart and indexed in ``values``: values
    measured another way are another series, so a break is never a change point, and its step neither hides
    a change point nor moves one."""
    bounds = [0, *breaks, len(values)]
    return [dataclasses.replace(point, index=point.index + a)
            for a, b in pairwise(bounds) for point in change_points(values[a:b])]


def segment_medians(values: Sequence[float], cuts: Iterable[int]) -> list[tuple[int, int, float]]:
    """(start, end, median) of each segment ``cuts`` (the indices where a segment begins: change points, new
    series) cut ``values`` into: the shift a chart reads off the medians, not off single noisy runs."""
    bounds = [0, *sorted(set(cuts)), len(values)]
    return [(a, b, statistics.median(values[a:b])) for a, b in pairwise(bounds) if b > a]
