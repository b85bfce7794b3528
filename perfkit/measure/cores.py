"""Host work timed on every core the process may use, each core's fastest pass kept.

On the lent GPU hosts (16 vCPUs of a shared Xeon) a single-threaded host figure reads whatever its core's
neighbours leave it: on one fresh H100, ten fresh processes read the vector add's 1 M-element numba loop 9.4%
apart and pure Python arithmetic 21% apart, while within a process the same core moved 7-27% from one pass to
the next. Neither more fresh buffer placements nor a host reference timed beside the figure cut it (the
reference moved as much, and independently). What does: the figure on each core in turn, in passes spread over
time, each core's fastest pass kept, and the median over the cores (2.9% and 5.8% between the same ten
processes; experiments/host_affinity.py, docs/findings.md). Contention only ever slows a core down, so a
core's fastest pass is its own pace, and the median over the cores is the host's.
"""
from __future__ import annotations

import contextlib
import math
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from perfkit.errors import MeasurementError

#: Passes over the cores: at least three, and enough for this many bursts in all (16 cores on the lent hosts;
#: a 2-core box makes 24 passes, as many samples of its time)
PASSES = 3
BURSTS = 48

#: A round's call: its arguments are made by ``setup`` untimed (a fresh placement of the buffers, say).
Call = Callable[[], Any]


def usable() -> list[int]:
    """The CPUs this process may run on, in order; [] where the platform cannot pin a thread."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return []


@contextlib.contextmanager
def pinned(core: int | None) -> Iterator[None]:
    """This thread on ``core`` alone (nowhere else while it lasts), then back on every CPU it had; None leaves
    it where it is."""
    if core is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def fastest_per_core(setup: Callable[[int], Call], burst: int, passes: int | None = None,
                     cores: Sequence[int] | None = None) -> list[float]:
    """Each core's fastest pass, in seconds per call: in every pass (``passes``, else PASSES or as many as
    BURSTS bursts need) each core in turn runs the call ``setup(turn)`` gives (``turn`` counts the bursts
    from 0, to rotate placements) ``burst`` times, timed, and a pass reads the median of its burst. One value
    where no core can be pinned (the process's pace)."""
    order: list[int | None] = list(cores if cores is not None else usable()) or [None]
    passes = max(PASSES, math.ceil(BURSTS / len(order))) if passes is None else passes
    if burst < 1 or passes < 1:
        raise MeasurementError(f"a core sweep needs a burst and a pass, not burst={burst}, passes={passes}")
    fastest: dict[int | None, float] = {}
    turn = 0
    for _ in range(passes):
        for core in order:
            call = setup(turn)
            turn += 1
            with pinned(core):
                seconds = statistics.median(_timed(call) for _ in range(burst))
            fastest[core] = min(seconds, fastest.get(core, seconds))
    return [fastest[core] for core in order]


def _timed(call: Call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start
