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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfkit.cpus import affinity as usable  # the CPUs a thread may be pinned to; [] where none
from perfkit.errors import MeasurementError

#: Passes over the cores: each core's fastest of three passes is its round, whatever the host
PASSES = 3
#: Bursts in all: a host with fewer cores than BURSTS / PASSES (16) makes each burst longer instead, so that
#: a 2-core box times as many calls (its 1 M-element loop: 4.5% between fresh processes with 20-call bursts;
#: 1.5% with as many calls as a 16-core host makes; docs/findings.md)
BURSTS = 48
#: The most cores swept, from one NUMA node: a big host's sweep stays as long as the lent hosts' (5 s at K100)
#: and its buffers' memory stays local to every core that reads it
MAX_CORES = 16
NODES = Path("/sys/devices/system/node")

#: A round's call: its arguments are made by ``setup`` untimed (a fresh placement of the buffers, say).
Call = Callable[[], Any]


@dataclass(frozen=True)
class Sweep:
    """What a core sweep timed: each core's fastest pass (seconds per call), and how (kept beside the figure,
    since a different sweep is a different estimator)."""

    fastest: tuple[float, ...]
    cores: int
    passes: int
    burst: int
    #: each core's fastest pass of the reference timed right after the call on the same core, if one was
    reference: tuple[float, ...] = ()

    def described(self) -> dict[str, int]:
        return {"cores": self.cores, "passes": self.passes, "burst": self.burst}


def swept(cpus: Sequence[int], nodes: Path = NODES) -> list[int]:
    """The cores a sweep visits: those of ``cpus`` on the NUMA node of the first (all of them where the host
    says nothing of nodes), at most MAX_CORES of them, spread evenly."""
    chosen = list(cpus)
    for cpulist in sorted(nodes.glob("node*/cpulist")):
        node = _cpulist(cpulist.read_text())
        if chosen and chosen[0] in node:
            chosen = [c for c in chosen if c in node]
            break
    step = len(chosen) / MAX_CORES
    return chosen if step <= 1 else [chosen[int(i * step)] for i in range(MAX_CORES)]


def _cpulist(text: str) -> set[int]:
    """A kernel CPU list ("0-7,16-23") as its CPUs."""
    found: set[int] = set()
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        found.update(range(int(low), int(high or low) + 1))
    return found


def _threads(whole_process: bool) -> list[int]:
    """The threads a pin moves: this one (0), or every thread of the process where /proc lists them."""
    if whole_process:
        with contextlib.suppress(OSError):
            return [int(tid) for tid in os.listdir("/proc/self/task")]
    return [0]


@contextlib.contextmanager
def pinned(core: int | None, whole_process: bool = False) -> Iterator[None]:
    """This thread (``whole_process``: every thread of the process) on ``core`` alone while it lasts, then
    each back on the CPUs it had (a thread started inside, on the process's); None, or a host that refuses
    the pin, leaves it where it is."""
    process_cpus = usable()
    if not process_cpus or core is None:
        yield
        return
    had: dict[int, set[int]] = {}
    try:
        for tid in _threads(whole_process):
            with contextlib.suppress(OSError):  # a cpuset that shrank, a sandbox that refuses, a thread gone
                cpus = os.sched_getaffinity(tid)
                had[tid] = cpus  # before the pin: an interrupt that lands after it still restores the CPUs
                os.sched_setaffinity(tid, {core})
        yield
    finally:
        started = set(_threads(whole_process)) - set(had) if whole_process else set()
        for tid, cpus in [*had.items(), *((tid, set(process_cpus)) for tid in started)]:
            with contextlib.suppress(OSError):  # a thread of the process that has ended
                os.sched_setaffinity(tid, cpus)


def fastest_per_core(setup: Callable[[int], Call], burst: int, cores: Sequence[int] | None = None,
                     whole_process: bool = False, reference: Callable[[int], Call] | None = None) -> Sweep:
    """Each core's fastest of PASSES passes: in every pass each core in turn runs the call ``setup(i)``
    gives (``i``: the core's place in the sweep plus the pass, so a core meets another placement each pass)
    ``burst`` times (longer where fewer cores than BURSTS / PASSES are swept), timed, and a pass reads the
    median of its burst. One value where no core can be pinned (the process's pace). ``whole_process`` pins
    every thread, not only this one: a GPU training step launches its backward from autograd's own thread.
    ``reference``: a call timed the same way right after each burst, on the same core, so that the two meet
    the same neighbours (perfkit.measure.host_copy)."""
    order: list[int | None] = list(swept(usable()) if cores is None else cores) or [None]
    if burst < 1:
        raise MeasurementError(f"a core sweep needs a burst of one call or more, not {burst}")
    burst *= max(1, math.ceil(BURSTS / (PASSES * len(order))))
    fastest: dict[int | None, float] = {}
    beside: dict[int | None, float] = {}
    for turn in range(PASSES):
        for place, core in enumerate(order):
            with pinned(core, whole_process):
                _keep_fastest(fastest, core, setup(place + turn), burst)
                if reference is not None:
                    _keep_fastest(beside, core, reference(place + turn), burst)
    return Sweep(tuple(fastest[core] for core in order), len(order), PASSES, burst,
                 tuple(beside[core] for core in order) if reference is not None else ())


def _keep_fastest(fastest: dict[int | None, float], core: int | None, call: Call, burst: int) -> None:
    seconds = statistics.median(_timed(call) for _ in range(burst))
    fastest[core] = min(seconds, fastest.get(core, seconds))


def _timed(call: Call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start
