"""Per-layer time, memory and power (seed 000, Task 2): ReLU, MaxPool2d, Conv2d and Linear on the
course's inputs (batch 256; batch 8 in the quick profile), forward and forward + backward.

Headline: pytest-benchmark's time of one call (5 warm-up rounds, then 20; 10 in the quick profile, after 2
warm-up rounds on a CPU since 2026-11-27, for perfkit.quick_budget: a warm-up of the convolution's forward +
backward takes 0.4 s there, and the batch stays the GPU's quick batch, so the two compare). On a GPU
the layer first runs untimed for half a second (the clock its power limit holds, whatever ran before), and
each round times enough calls back to back to last 50 ms (timing.calls_per_round): a 0.09 ms ReLU timed one
call at a time also timed the host's launch and wake-up, and its fresh-process runs spread 3-13%; in 2 ms
rounds a maxpool forward+backward still spread 5.6% on one H200 (CUDA events: 0.5%). Metrics:
achieved TFLOP/s (conv, linear) or GB/s (ReLU, pool) and their share of the measured ceiling of the math
actually used (cuDNN convolutions run TF32 for float32 by default), allocator peaks over one call (input,
weights and output included; earlier benchmarks' tensors excluded), and NVML power and energy per call over a
loop of power.POWER_WINDOW_S seconds after a power.POWER_LEAD_IN_S lead-in.
"""
from __future__ import annotations

import statistics

import pytest

from perfkit import quick_budget
from perfkit.measure import memory, record, timing
from perfkit.measure.ceilings import precision_in_use
from perfkit.pbench import round_times
from perfkit.resultfile import figures
from perfkit.resultfile.payloads import Layer
from perfkit.workloads import layers

# kernels: timed at the GPU base clock where allowed (perfkit.measure.clocks)
pytestmark = pytest.mark.locked_clock

#: warm-up and timed rounds, by perfkit.quick_budget.sizes_key
ROUNDS = {"full": (5, 20), "quick": (5, 10), "quick-cpu": (2, 10)}
QUICK_BATCH = 8


@pytest.mark.parametrize("pass_", [pytest.param(p, id=p) for p in layers.PASSES])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in layers.LAYERS])
def test_layer(benchmark, case, pass_, perfkit_device, perfkit_profile, perfkit_metrics, perfkit_datasheet):
    shape = case.input_shape(perfkit_profile.pick(quick=QUICK_BATCH, full=None))
    if perfkit_device.type == "cuda":
        # a cuBLAS workspace left by an earlier benchmark would be outside the peak, one made here inside:
        # the linear layer's backward read 873.4 MiB alone and 841.0 after the nightly's earlier families
        memory.release_cached()
    since = memory.allocated_bytes(perfkit_device)
    run = layers.LayerRun(case, shape, perfkit_device, pass_)
    warmup, rounds = ROUNDS[quick_budget.sizes_key(perfkit_profile.name, perfkit_device.type)]
    benchmark.pedantic(run, rounds=rounds, warmup_rounds=warmup,
                       iterations=timing.warmed_calls_per_round(run, perfkit_device))
    if perfkit_device.type == "cuda":  # calls back to back, not one a round as before 2026-11-23
        perfkit_metrics.measured_by(figures.LAYER_CALLS_BACK_TO_BACK)
    run.check()
    work = run.work()
    perfkit_metrics.payload(Layer(case.name, pass_, shape, case.bound, work.flops, work.min_bytes))
    times = round_times(benchmark)
    compute = case.bound == "compute"
    ceiling = (
        figures.matmul_ceiling(precision_in_use(case.op, perfkit_device))
        if compute
        else figures.COPY_BANDWIDTH
    )
    record.record_rate(perfkit_metrics, times, work.flops if compute else work.min_bytes, compute=compute,
                       ceiling_key=ceiling.name, spec=perfkit_datasheet)
    perfkit_metrics.bound_by(ceiling)  # across hardware the time should move with this ceiling
    record.record_peak_memory(perfkit_metrics, run, perfkit_device, since)
    seconds_per_call = statistics.median(times) if times else 1e-3
    record.record_power(perfkit_metrics, run, seconds_per_call, perfkit_device)

