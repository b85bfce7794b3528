"""Time a call over several fresh placements of its buffers in one run, each warmed and then timed in turn.

Why: some host-side timings land in one of several speeds per placement of their memory (which pages, cache
sets and migration chunks the buffers got), and a nightly run is one process that allocates once. Measured
between eight fresh processes on one H100 host (16 cores, one NUMA node), the managed first launch of the
100 M-element grid kernel moved 12.9% between processes on one allocation and 3.2% over four; the CPU
references moved 5-12% either way there, and on a 2-core EPYC the 1 M-element loop and numpy add moved
9.7-11.8% on one allocation and 1.2-2.2% over four on huge pages (:func:`huge_page_array`).
"""
from __future__ import annotations

import mmap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

#: A transparent huge page on x86-64 (and on arm64 with 4 KiB base pages); an alignment to it is harmless
#: elsewhere.
HUGE_PAGE = 2 << 20
#: Fresh placements per run, rounds timed in each, and untimed rounds before them.
PLACEMENTS = 4
ROUNDS_PER_PLACEMENT = 5
WARM_ROUNDS = 2

Placement = TypeVar("Placement")
Arguments = tuple[tuple[Any, ...], dict[str, Any]]


def huge_page_array(like: np.ndarray, copy: bool = True) -> np.ndarray:
    """An array of ``like``'s shape and type in a fresh anonymous mapping aligned to a huge page and advised
    to use huge pages (the kernel's ``madvise`` mode, the default on these hosts): ``like``'s values, or
    zeros where not ``copy``; every page touched either way. A plain array where the platform cannot advise it
    (no ``MADV_HUGEPAGE``, or a kernel built without transparent huge pages)."""
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if advice is None:
        return like.copy() if copy else np.zeros_like(like)
    mapping = mmap.mmap(-1, like.nbytes + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        mapping.madvise(advice)
    except OSError:  # a kernel built without transparent huge pages
        mapping.close()
        return like.copy() if copy else np.zeros_like(like)
    base = np.frombuffer(mapping, dtype=np.uint8)
    offset = (-base.ctypes.data) % HUGE_PAGE
    array = base[offset:offset + like.nbytes].view(like.dtype).reshape(like.shape)
    array[...] = like if copy else 0
    return array


@dataclass
class Rotation(Generic[Placement]):
    """``target`` timed over ``placements`` in turn through ``pytest-benchmark``'s pedantic mode: when a
    placement's turn begins it runs ``warm_rounds`` times untimed, then ``rounds_per`` timed rounds.
    ``arguments`` gives a round's arguments on a placement, and does the round's untimed setup (the host
    writing managed pages before a first launch); ``warm`` is what the untimed rounds run (the target where
    None; another where the target records something of each timed round); ``beside``, where given, runs in
    each timed round's setup before its arguments: a reference timed next to the target, round by round, on
    the same placement (a first touch of the same managed pages beside a first launch)."""

    placements: Sequence[Placement]
    arguments: Callable[[Placement], Arguments]
    target: Callable[..., Any]
    warm: Callable[..., Any] | None = None
    rounds_per: int = ROUNDS_PER_PLACEMENT
    warm_rounds: int = WARM_ROUNDS
    beside: Callable[[Placement], Any] | None = None

    @property
    def rounds(self) -> int:
        return len(self.placements) * self.rounds_per

    def time(self, benchmark: Any) -> None:
        """Run the rounds under ``benchmark`` (pytest-benchmark's fixture). With benchmarks disabled
        (``--benchmark-disable``) pytest-benchmark runs one round: every other placement then runs once
        untimed, so each holds an answer to check."""
        benchmark.pedantic(self.target, setup=self._setup(), rounds=self.rounds)
        if getattr(benchmark, "disabled", False):
            for placement in self.placements[1:]:
                args, kwargs = self.arguments(placement)
                (self.warm or self.target)(*args, **kwargs)

    def _setup(self) -> Callable[[], Arguments]:
        turns = self._turns()

        def next_round() -> Arguments:
            placement, first = next(turns)
            if first:
                for _ in range(self.warm_rounds):
                    args, kwargs = self.arguments(placement)
                    (self.warm or self.target)(*args, **kwargs)
            if self.beside is not None:
                self.beside(placement)
            return self.arguments(placement)

        return next_round

    def _turns(self) -> Iterator[tuple[Placement, bool]]:
        """Each placement's rounds in turn, then the last placement for any call after them (pytest-benchmark
        sets up one more round to profile with ``--benchmark-cprofile``)."""
        for placement in self.placements:
            for i in range(self.rounds_per):
                yield placement, i == 0
        while True:
            yield self.placements[-1], False
