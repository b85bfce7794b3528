"""Does perfkit's timing agree with independent timers on the same operations?

pytest-benchmark with perfkit's synchronizing clock (the headline) and perfkit's CUDA-event
timer against torch.utils.benchmark.Timer and triton.testing.do_bench (GPU, where triton is
installed). Ratios near 1.0 for work of a millisecond or more say the clocks measure the GPU,
not the launch. The tiny launch-bound kernel shows how far the methods honestly diverge there
(host launch throughput vs on-stream event time vs CUDA-graph replay).
"""
from __future__ import annotations

import pytest
import torch

from perfkit import ceilings, timing
from perfkit.errors import MeasurementError

GiB, MiB = 2**30, 2**20


def _operation(kind: str, device: torch.device, full: bool) -> ceilings.Workload:
    gpu = device.type == "cuda"
    if kind == "copy":
        return ceilings.copy_workload(device, (4 * GiB if full else GiB) if gpu else 64 * MiB)
    if kind == "gemm":
        return ceilings.matmul_workload(device, 8192 if gpu else 512, "bf16" if gpu else "fp32")
    x = torch.zeros(1, device=device)

    def check() -> None:
        if x.item() < 1:
            raise MeasurementError("the tiny kernel never ran")

    return ceilings.Workload(lambda: x.add_(1), 1.0, "element", check)


@pytest.mark.parametrize("kind", [pytest.param(k, id=k) for k in ("copy", "gemm", "tiny")])
def test_timer_fidelity(benchmark, kind, perfkit_device, perfkit_profile, perfkit_metrics):
    work = _operation(kind, perfkit_device, perfkit_profile.name == "full")
    op = work.run
    benchmark(op)
    work.check()
    clock = benchmark.stats.stats.median if benchmark.stats else None
    reference = timing.torch_timer_median(op)
    perfkit_metrics.record("torch_timer_s", reference, "s", "lower")
    references = {"torch_timer": reference}
    if perfkit_device.type == "cuda":
        events = timing.time_cuda_events(op, repetitions=50)
        perfkit_metrics.record("events_s", unit="s", better="lower", samples=events.seconds)
        do_bench = timing.do_bench_median(op)
        if do_bench is None:
            perfkit_metrics.absent("do_bench_s", "triton is not installed")
        else:
            perfkit_metrics.record("do_bench_s", do_bench, "s", "lower")
            references["do_bench"] = do_bench
        perfkit_metrics.record("events_over_torch_timer", events.median / reference, "ratio", "none")
        if do_bench:
            perfkit_metrics.record("events_over_do_bench", events.median / do_bench, "ratio", "none")
        if kind == "tiny":
            graph = timing.time_cuda_events(op, repetitions=20, mode="graph", batch=200)
            perfkit_metrics.record("graph_replay_s", unit="s", better="lower", samples=graph.seconds)
            perfkit_metrics.record("launch_overhead_s", max(events.median - graph.median, 0.0), "s", "lower")
    else:
        for name in ("events_s", "do_bench_s"):
            perfkit_metrics.absent(name, "CUDA events and do_bench need a GPU")
    if clock is None:
        perfkit_metrics.absent("clock_over_torch_timer", "benchmarks are disabled")
        return
    ratios = {f"clock_over_{name}": clock / ref for name, ref in references.items()}
    for name, ratio in ratios.items():
        perfkit_metrics.record(name, ratio, "ratio", "none")
    perfkit_metrics.record("max_deviation", max(abs(r - 1) for r in ratios.values()), "ratio", "lower")
