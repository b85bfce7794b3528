"""Every clock, CUDA event and synchronize call in perfkit lives here.

GPU work is asynchronous: a host clock read right after a launch measures the launch,
not the kernel. ``synchronized_clock`` therefore synchronizes the device before it reads
the host clock (as torch.utils.benchmark does), and the plugin makes it pytest-benchmark's
default timer, so pytest-benchmark's own stats are true GPU times. ``time_cuda_events``
brackets each repetition with CUDA events on the stream and returns raw per-repetition
samples, with an L2 flush and CUDA-graph or batched modes for launch-bound work.
"""
from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import torch

from perfkit.errors import HardwareError, MeasurementError, UsageError
from perfkit.resultfile.metrics import relative_iqr

#: The course's procedure: 5 warm-up iterations, then the mean of 10 (we report the median).
WARMUP_ITERATIONS = 5
TIMED_REPETITIONS = 10
#: triton.testing.do_bench zeroes a 256 MB buffer to evict the inputs from L2 between repetitions.
L2_FLUSH_BYTES = 256 * 1024 * 1024
#: GPU cycles (about 1 ms) a flushed plain repetition holds the stream before its start event, so the host has
#: queued the timed call by then (nvbench's blocking kernel does this by waiting for the host).
HOLD_CYCLES = 2_000_000
#: How long a GPU-bound operation runs untimed before its first timed round, so it is timed in the power and
#: clock state it holds under its own load, whatever ran before it (a GEMM ran 15% faster on a cool H200).
STEADY_CLOCK_S = 0.5
#: The shortest round of a GPU operation timed by the host's synchronising clock (see calls_per_round). 50 ms,
#: not 2: on one H200 at the base clock, 2 ms rounds of a maxpool forward+backward read 656-694 us per call
#: in six fresh processes while CUDA events read 649-653 (the host's wake-up after each synchronize, up to
#: 40 us a call, differs between processes), and one-call rounds of a power-capped bf16 GEMM spread 3% where
#: 50 ms rounds spread 0.25% (the power controller's swings last tens of milliseconds; a round averages them).
MIN_ROUND_S = 50e-3

Mode = Literal["plain", "graph", "batched"]


def synchronize() -> None:
    """Wait for the current CUDA device, if CUDA is in use in this process; a no-op on CPU."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def synchronized_clock() -> float:
    """A host clock (seconds) that first waits for queued GPU work, so intervals cover it."""
    synchronize()
    return time.perf_counter()


@dataclass(frozen=True)
class Samples:
    """Raw per-repetition times in seconds with the summary statistics perfkit reports."""

    seconds: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.seconds:
            raise UsageError("a timing needs at least one repetition")

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def relative_iqr(self) -> float:
        return relative_iqr(self.seconds)



def warmup(fn: Callable[[], Any], iterations: int = WARMUP_ITERATIONS) -> None:
    """Run ``fn`` untimed so compilation, autotuning and allocator growth stay out of the numbers."""
    for _ in range(iterations):
        fn()
    synchronize()


def warm_for(fn: Callable[[], Any], seconds: float = STEADY_CLOCK_S) -> float:
    """Run ``fn`` back to back, untimed, for ``seconds`` (or at least once), so the GPU's clock is at the
    steady state it holds under this load when the timed rounds start; returns the seconds per call it
    took back to back."""
    once = time_host(fn, repetitions=1, warmup_iterations=0).median
    calls, elapsed = run_for(fn, seconds, max(once, 1e-7))
    return elapsed / calls


def calls_per_round(seconds_per_call: float, round_s: float = MIN_ROUND_S) -> int:
    """Calls a timed round makes so that it lasts ``round_s``: a kernel timed one call at a time carries the
    host's launch and synchronisation latency (tens of microseconds, differing between processes and
    machines) and whatever phase of the power controller it lands in; back to back for MIN_ROUND_S, the
    queue hides the first and the round averages the second."""
    return max(1, math.ceil(round_s / max(seconds_per_call, 1e-9)))


def warmed_calls_per_round(fn: Callable[[], Any], device: torch.device) -> int:
    """The calls a pytest-benchmark round of ``fn`` makes: one on a CPU (host-timed work has no launch to
    hide); on a GPU, after warm_for brings the clock to the state its power limit holds, the calls that fill
    MIN_ROUND_S."""
    if device.type != "cuda":
        return 1
    return calls_per_round(warm_for(fn))


def l2_bytes() -> int:
    """The current GPU's L2 cache size in bytes (0 without a GPU): inputs smaller than it stay warm in L2
    between repetitions unless flushed."""
    if not torch.cuda.is_available():
        return 0
    return int(torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size)


def time_host(
    fn: Callable[[], Any],
    repetitions: int = TIMED_REPETITIONS,
    warmup_iterations: int = WARMUP_ITERATIONS,
    clock: Callable[[], float] = synchronized_clock,
) -> Samples:
    """Time each repetition of ``fn`` with a host clock (synchronizing by default)."""
    if repetitions < 1:
        raise UsageError(f"repetitions must be at least 1, not {repetitions}")
    warmup(fn, warmup_iterations)
    times = []
    for _ in range(repetitions):
        start = clock()
        fn()
        times.append(clock() - start)
    return Samples(tuple(times))


def time_cuda_events(
    fn: Callable[[], Any],
    repetitions: int = TIMED_REPETITIONS,
    warmup_iterations: int = WARMUP_ITERATIONS,
    *,
    mode: Mode = "plain",
    batch: int = 100,
    flush_l2: bool = False,
    hold: bool = False,
    queued: int = 0,
) -> Samples:
    """Time ``fn`` on the current CUDA stream with events; one sample per repetition.

    ``plain`` brackets one call. ``batched`` brackets ``batch`` back-to-back calls and divides,
    which hides the host's launch gaps behind queued work. ``graph`` captures ``batch`` calls in
    a CUDA graph and replays it, removing per-launch CPU overhead: plain minus graph is the
    launch overhead. ``flush_l2`` zeroes a 256 MB buffer before each repetition, outside the
    events, so inputs are read from memory rather than a warm L2; in ``plain`` mode the stream then
    sleeps HOLD_CYCLES while the host records the start event and launches ``fn``, so a launch-bound call
    is timed from its queued kernel, not from the host's launch: the zeroing alone (about 55 us on an H200)
    did not always outlast numba's launch, and an 8 us K1 vector add then read 13-38 us on a fresh H200.
    ``hold`` holds the stream so in ``plain`` mode without a flush too: a call whose data stays resident (a
    warm launch on managed memory) is then timed as the kernel it is, without the host's dispatch before it.
    ``queued``: at most this many repetitions queued before the host waits for them (0: all at once): a
    hundred 8 us kernels held 1 ms each kept the host launching while the GPU ran them, and those read 6-10%
    slower than the last ten, run after the host was done (an H200, 2026-12-02).
    """
    if not torch.cuda.is_available():
        raise HardwareError("CUDA event timing needs a CUDA GPU; use time_host on CPU")
    if repetitions < 1 or batch < 1 or queued < 0:
        raise UsageError(f"repetitions and batch must be at least 1 and queued at least 0, not "
                         f"{repetitions}, {batch} and {queued}")
    per_sample = 1 if mode == "plain" else batch
    body = _graph_replay(fn, batch) if mode == "graph" else _repeat(fn, per_sample)
    warmup(body, warmup_iterations)
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda") if flush_l2 else None
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(repetitions)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(repetitions)]
    for index, (start, end) in enumerate(zip(starts, ends)):
        if queued and index and index % queued == 0:
            torch.cuda.synchronize()
        if flush is not None:
            flush.zero_()
        if mode == "plain" and (flush is not None or hold):
            torch.cuda._sleep(HOLD_CYCLES)  # PyTorch's spin kernel (private; its own stream tests use it)
        start.record()
        body()
        end.record()
    torch.cuda.synchronize()
    return Samples(tuple(s.elapsed_time(e) / 1e3 / per_sample for s, e in zip(starts, ends)))


#: A queued call's hold lasts this many times the host's time to enqueue it (its launch-bound time), at
#: least QUEUE_MIN_HOLD_S; a hold the host outlasted is doubled and the call timed again, at most
#: QUEUE_RETRIES times.
QUEUE_HOLD_MARGIN, QUEUE_MIN_HOLD_S, QUEUE_RETRIES = 2.0, 2e-3, 4
#: What the spin kernel's cycles are taken to last before its first hold is timed (a Hopper's boost clock).
SPIN_CYCLES_PER_S_GUESS = 2e9


def time_queued(fn: Callable[[], Any], repetitions: int, host_s: float) -> Samples:
    """``fn``'s time on the GPU alone: each repetition holds the stream with a spin kernel while the host
    enqueues every launch of ``fn``, and CUDA events time the queued work from the hold's end. A call the
    host paces (a small training step: hundreds of launches, each shorter on the GPU than on the host) is
    timed as the GPU runs it back to back, without the host's dispatch between its kernels; nvbench's
    blocking kernel does the same for one kernel.

    ``host_s``: about how long the host takes to enqueue one call (its launch-bound time), from which the
    hold is sized. A repetition counts only if the host had enqueued the whole call before the hold could
    have ended (the host's clock from the hold's launch to the call's last launch, against the hold's
    length on the GPU); else the hold is doubled and the call timed again. A call that waits on the GPU
    (a synchronisation, more launches than the queue holds) never fits and raises MeasurementError.
    """
    if not torch.cuda.is_available():
        raise HardwareError("a queued call's GPU time needs a CUDA GPU")
    if repetitions < 1:
        raise UsageError(f"repetitions must be at least 1, not {repetitions}")
    hold_s, rate = max(QUEUE_HOLD_MARGIN * host_s, QUEUE_MIN_HOLD_S), SPIN_CYCLES_PER_S_GUESS
    retries, seconds = 0, list[float]()
    while len(seconds) < repetitions:
        held, start, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        torch.cuda.synchronize()
        launched = time.perf_counter()
        held.record()
        cycles = max(1, int(hold_s * rate))
        torch.cuda._sleep(cycles)  # PyTorch's spin kernel, as in time_cuda_events
        start.record()
        fn()
        enqueued = time.perf_counter() - launched
        end.record()
        end.synchronize()
        hold = held.elapsed_time(start) / 1e3
        rate = cycles / hold
        if enqueued < hold:
            seconds.append(start.elapsed_time(end) / 1e3)
            continue
        retries += 1
        if retries > QUEUE_RETRIES:
            raise MeasurementError(
                f"the host took {enqueued * 1e3:.1f} ms to queue one call against a {hold * 1e3:.1f} ms "
                f"hold, {QUEUE_RETRIES} times doubled: the call waits on the GPU (a synchronisation, or more "
                f"launches than the queue holds), so its GPU time cannot be read apart from the host's")
        hold_s = 2 * max(hold_s, enqueued)
    return Samples(tuple(seconds))


def run_for(fn: Callable[[], Any], seconds: float, seconds_per_call: float,
            clock: Callable[[], float] = synchronized_clock) -> tuple[int, float]:
    """Call ``fn`` back to back for at least ``seconds``; returns (calls, elapsed seconds).

    The clock (which synchronizes) is read only every ~50 ms of queued work, so the GPU stays busy
    between checks: a loop for power readings must not idle the device it measures.
    """
    if seconds <= 0:
        raise UsageError(f"seconds must be positive, not {seconds}")
    chunk = max(1, int(0.05 / max(seconds_per_call, 1e-7)))
    calls, start = 0, clock()
    while True:
        for _ in range(chunk):
            fn()
        calls += chunk
        elapsed = clock() - start
        if elapsed >= seconds:
            return calls, elapsed


def _repeat(fn: Callable[[], Any], times: int) -> Callable[[], None]:
    def body() -> None:
        for _ in range(times):
            fn()

    return body


def _graph_replay(fn: Callable[[], Any], batch: int) -> Callable[[], None]:
    """Capture ``batch`` calls of ``fn`` into one CUDA graph (after a side-stream warm-up, as PyTorch
    asks)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(batch):
            fn()
    return graph.replay


class EventSpans:
    """CUDA-event brackets around a region inside a larger timed step (the kernel inside a program).

    Recording an event costs microseconds and does not synchronize; elapsed times are read once,
    after the step has synchronized anyway.
    """

    def __init__(self) -> None:
        self._pairs: list[tuple[Any, Any]] = []

    @contextlib.contextmanager
    def region(self) -> Iterator[None]:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        yield
        end.record()
        self._pairs.append((start, end))

    def samples(self) -> Samples:
        torch.cuda.synchronize()
        return Samples(tuple(s.elapsed_time(e) / 1e3 for s, e in self._pairs))



def time_torch_timer(fn: Callable[[], Any], min_run_time: float = 0.5) -> Samples:
    """Seconds per call from torch.utils.benchmark.Timer, an independent reference (one sample per block).

    It runs with as many threads as torch uses here; its default of one thread would make it
    time a different CPU computation than the benchmark does.
    """
    from torch.utils.benchmark import Timer

    timer = Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return Samples(tuple(timer.blocked_autorange(min_run_time=min_run_time).times))


def time_do_bench(fn: Callable[[], Any]) -> Samples | None:
    """Seconds per call from triton.testing.do_bench (GPU only; it flushes L2); None where triton is
    missing."""
    try:
        from triton.testing import do_bench
    except ImportError:
        return None
    return Samples(tuple(t / 1e3 for t in do_bench(fn, warmup=25, rep=100, return_mode="all")))


class HostSpans:
    """``EventSpans`` for the CPU: the same interface over a synchronizing host clock."""

    def __init__(self, clock: Callable[[], float] = synchronized_clock) -> None:
        self._clock = clock
        self._seconds: list[float] = []

    @contextlib.contextmanager
    def region(self) -> Iterator[None]:
        start = self._clock()
        yield
        self._seconds.append(self._clock() - start)

    def samples(self) -> Samples:
        return Samples(tuple(self._seconds))


def spans(device: torch.device) -> EventSpans | HostSpans:
    """Per-region times that do not stall the GPU between regions: CUDA events there, a host clock on CPU."""
    return EventSpans() if device.type == "cuda" else HostSpans()

