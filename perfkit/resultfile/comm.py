"""Cost models of collectives: nccl-tests' bandwidth definitions, the course's formula, and how
much of the communication a profile shows hidden behind compute.

nccl-tests (doc/PERFORMANCE.md): algbw = bytes / time; an all-reduce moves 2(n-1)/n of the buffer
over each rank's slowest link, so busbw = algbw * 2(n-1)/n is comparable with the link's peak
whatever n is. Reduce-scatter and all-gather move (n-1)/n.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from perfkit.errors import UsageError

Collective = Literal["all_reduce", "reduce_scatter", "all_gather"]
Interval = tuple[float, float]


def algbw(nbytes: float, seconds: float) -> float:
    """Bytes per second as the user sees them: the buffer size over the collective's time."""
    if seconds <= 0:
        raise UsageError(f"a collective's time must be positive, not {seconds}")
    return nbytes / seconds


def bus_factor(ranks: int, collective: Collective = "all_reduce") -> float:
    """nccl-tests' busbw / algbw: 2(n-1)/n for all-reduce, (n-1)/n for reduce-scatter and all-gather."""
    if ranks < 1:
        raise UsageError(f"a collective needs at least one rank, not {ranks}")
    share = (ranks - 1) / ranks
    return 2 * share if collective == "all_reduce" else share


def busbw(nbytes: float, seconds: float, ranks: int, collective: Collective = "all_reduce") -> float:
    return algbw(nbytes, seconds) * bus_factor(ranks, collective)


def course_allreduce_bytes(parameters: int, ranks: int, bytes_per_value: int = 4) -> float:
    """Seed 004, 2.4 (after Gibiansky's ring all-reduce): each rank sends 2(N-1)·K/N values.

    Divided by a communication time this is nccl-tests' busbw, so the course's figure and the
    busbw of the same time agree; they differ only in which time is used.
    """
    return 2 * (ranks - 1) * parameters / ranks * bytes_per_value


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """The union of [start, end) intervals as sorted, disjoint intervals."""
    merged: list[Interval] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def total(intervals: Sequence[Interval]) -> float:
    return sum(end - start for start, end in merge(intervals))


def overlap(a: Sequence[Interval], b: Sequence[Interval]) -> float:
    """Length of time covered by both interval sets (communication hidden behind compute)."""
    left, right = merge(a), merge(b)
    covered, i, j = 0.0, 0, 0
    while i < len(left) and j < len(right):
        start, end = max(left[i][0], right[j][0]), min(left[i][1], right[j][1])
        covered += max(0.0, end - start)
        if left[i][1] < right[j][1]:
            i += 1
        else:
            j += 1
    return covered
