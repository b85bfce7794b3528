"""Does perfkit's timing agree with independent timers on the same operations?

pytest-benchmark with perfkit's synchronizing clock (the headline) and perfkit's CUDA-event
timer against torch.utils.benchmark.Timer and triton.testing.do_bench (GPU, where triton is
installed). Ratios near 1.0 for work of a millisecond or more say the clocks measure the GPU,
not the launch. The tiny launch-bound kernel shows how far the methods honestly diverge there
(host launch throughput vs on-stream event time vs CUDA-graph replay).
"""
from __future__ import annotations

import statistics

import pytest
import torch

from perfkit.errors import MeasurementError
from perfkit.measure import ceilings, timing
from perfkit.pbench import round_times

GiB, MiB = 2**30, 2**20
#: A launch-bound kernel's time moves ~10% between runs of the same machine (seen on an H200).
LAUNCH_BOUND_TOLERANCE = 0.15


def _operation(kind: str, device: torch.device, full: bool) -> ceilings.Operation:
    gpu = device.type == "cuda"
    if kind == "copy":
        return ceilings.copy_workload(device, (4 * GiB if full else GiB) if gpu else 64 * MiB)
    if kind == "gemm":
        return ceilings.matmul_workload(device, 8192 if gpu else 512, "bf16" if gpu else "fp32")
    x = torch.zeros(1, device=device)

    def check() -> None:
        if x.item() < 1:
            raise MeasurementError("the tiny kernel never ran")

    return ceilings.Operation(lambda: x.add_(1), 1.0, check)


@pytest.mark.parametrize("kind", [pytest.param(k, id=k) for k in ("copy", "gemm", "tiny")])
def test_timer_fidelity(benchmark, kind, perfkit_device, perfkit_profile, perfkit_metrics):
    work = _operation(kind, perfkit_device, perfkit_profile.name == "full")
    if kind == "tiny":
        perfkit_metrics.info("tolerance", LAUNCH_BOUND_TOLERANCE)
    benchmark(work.run)
    work.check()
    references = {"torch_timer": timing.time_torch_timer(work.run)}
    ours: dict[str, float] = {}
    if perfkit_device.type == "cuda":
        events = timing.time_cuda_events(work.run, repetitions=50)
        flushed = timing.time_cuda_events(work.run, repetitions=50, flush_l2=True)
        batched = timing.time_cuda_events(work.run, repetitions=20, mode="batched", batch=50)
        for name, samples in (("events", events), ("events_l2_flushed", flushed), ("events_batched", batched)):
            perfkit_metrics.record(f"{name}_s", unit="s", better="lower", samples=samples.seconds)
            ours[name] = samples.median
        do_bench = timing.time_do_bench(work.run)
        if do_bench is None:
            perfkit_metrics.absent("do_bench_s", "triton is not installed")
        else:
            references["do_bench"] = do_bench
        if kind == "tiny":
            graph = timing.time_cuda_events(work.run, repetitions=20, mode="graph", batch=200)
            perfkit_metrics.record("graph_replay_s", unit="s", better="lower", samples=graph.seconds)
            perfkit_metrics.record("launch_overhead_s", max(events.median - graph.median, 0.0), "s", "lower")
    else:
        perfkit_metrics.absent("events_s", "CUDA events need a GPU")
        perfkit_metrics.absent("do_bench_s", "triton.testing.do_bench needs a GPU")
    for name, samples in references.items():
        perfkit_metrics.record(f"{name}_s", unit="s", better="lower", samples=samples.seconds)
    clock = round_times(benchmark)
    if clock:
        ours["clock"] = statistics.median(clock)
    else:
        perfkit_metrics.absent("clock_over_torch_timer", "benchmarks are disabled")
    for mine, value in ours.items():
        for name, samples in references.items():
            perfkit_metrics.record(f"{mine}_over_{name}", value / samples.median, "ratio", "none")
