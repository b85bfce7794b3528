"""Does perfkit's timing agree with independent timers on the same operation?

perfkit's clock (pytest-benchmark's rounds) and CUDA-event timer (plain, L2-flushed, batched; a
CUDA-graph replay of the one-element kernel, in a fresh process) against torch.utils.benchmark.Timer and
triton.testing.do_bench: each time as a metric and every ratio of ours over a reference.
"""
from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import torch

from perfkit.errors import MeasurementError
from perfkit.measure import fresh_process, timing
from perfkit.measure.ceilings import Operation
from perfkit.resultfile import figures
from perfkit.resultfile.metrics import MetricRecorder

#: The one-element kernel's graph replay cycles over this many elements, one a launch, each in its own 2 MiB
#: page at its own offset in it (ADDRESS_STRIDE bytes apart): a launch's time is its element's address's
#: (figures.GRAPH_REPLAY_SPREAD says what was measured).
REPLAY_ADDRESSES = 200
ADDRESS_STRIDE = 2 * 2**20 + 4352


def tiny_kernel(device: torch.device) -> Operation:
    """A one-element add: nothing but its launch, the launch-bound work the timers diverge on most."""
    x = torch.zeros(1, device=device)

    def check() -> None:
        if x.item() < 1:
            raise MeasurementError("the tiny kernel never ran")

    return Operation(lambda: x.add_(1), 1.0, check)


def spread_elements(device: torch.device) -> Operation:
    """One-element adds cycling over REPLAY_ADDRESSES elements a page apart: the launch's time over many
    addresses, which one element's address does not decide."""
    stride = ADDRESS_STRIDE // 4
    buffer = torch.zeros(stride * REPLAY_ADDRESSES, device=device)
    turn = itertools.cycle([buffer[i * stride:i * stride + 1] for i in range(REPLAY_ADDRESSES)])

    def check() -> None:
        if buffer[::stride].min().item() < 1:
            raise MeasurementError("the one-element kernel did not run on every element")

    return Operation(lambda: next(turn).add_(1), 1.0, check)


def graph_replay_here() -> tuple[float, ...]:
    """The one-element kernel's CUDA-graph replay, timed in the process that calls this (a fresh one:
    :func:`record_agreement`), a launch on each of REPLAY_ADDRESSES elements a replay, 20 replays."""
    work = spread_elements(torch.device("cuda"))
    seconds = timing.time_cuda_events(work.run, repetitions=20, mode="graph", batch=REPLAY_ADDRESSES).seconds
    work.check()
    return seconds


def record_agreement(metrics: MetricRecorder, run: Callable[[], Any], device: torch.device,
                     clock_seconds: Sequence[float], launch_bound: bool) -> None:
    """Time ``run`` with every method and record the times and ours-over-reference ratios. ``launch_bound``:
    ``run`` is :func:`tiny_kernel`'s, whose graph replay is timed and gated on."""
    references = {"torch_timer": timing.time_torch_timer(run)}
    ours: dict[str, float] = {}
    if device.type == "cuda":
        events = timing.time_cuda_events(run, repetitions=50)
        flushed = timing.time_cuda_events(run, repetitions=50, flush_l2=True)
        batched = timing.time_cuda_events(run, repetitions=20, mode="batched", batch=50)
        for name, samples in (
            ("events", events),
            ("events_l2_flushed", flushed),
            ("events_batched", batched),
        ):
            metrics.record(figures.timer_seconds(name), samples=samples.seconds)
            ours[name] = samples.median
        do_bench = timing.time_do_bench(run)
        if do_bench is None:
            metrics.absent(figures.timer_seconds("do_bench"), "triton is not installed")
        else:
            references["do_bench"] = do_bench
        if launch_bound:
            # in this process it read the state the benchmarks before left (figures.GRAPH_REPLAY_FRESH)
            graph = timing.Samples(fresh_process.run(graph_replay_here, label="the one-element kernel's "
                                                                               "CUDA-graph replay"))
            metrics.record(figures.GRAPH_REPLAY_S, samples=graph.seconds)
            metrics.gate_on(figures.GRAPH_REPLAY_S)  # one launch's time is the host's (20-40% between runs)
            metrics.measured_by(figures.GRAPH_REPLAY_SPREAD)
            metrics.record(figures.LAUNCH_OVERHEAD_S, max(events.median - graph.median, 0.0))
    else:
        metrics.absent(figures.timer_seconds("events"), "CUDA events need a GPU")
        metrics.absent(figures.timer_seconds("do_bench"), "triton.testing.do_bench needs a GPU")
    for name, samples in references.items():
        metrics.record(figures.timer_seconds(name), samples=samples.seconds)
    if clock_seconds:
        ours["clock"] = statistics.median(clock_seconds)
    else:
        metrics.absent(figures.timer_ratio("clock", "torch_timer"), "benchmarks are disabled")
    for mine, value in ours.items():
        for name, samples in references.items():
            metrics.record(figures.timer_ratio(mine, name), value / samples.median)
