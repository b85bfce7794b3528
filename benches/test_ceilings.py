"""The machine's own roofline ceilings (later families report "% of measured peak" against them).

Copy bandwidth counts bytes read + written; matmul FLOP/s counts 2·n³ (FMA = 2) on random data.
Each is timed by pytest-benchmark with perfkit's synchronizing clock: 5 warm-up rounds, then 20. That
times the GPU near its boost clock, before its power limit holds it back: half a second of untimed work
first cut the spread between H200 runs 5-8x (tf32 5.4% -> 0.7%) but measured the tensor-core GEMMs 14%
slower, so it waits until every baseline's ceilings are measured again that way.
The rate is recorded as a metric named by its ceiling key; the derived pass reads it from there.
"""
from __future__ import annotations

import pytest

from perfkit.measure import ceilings
from perfkit.measure.record import record_share_of_datasheet
from perfkit.pbench import round_times
from perfkit.results import figures
from perfkit.results.metrics import MetricSpec, rates

ROUNDS, WARMUP = 20, 5
GiB, MiB = 2**30, 2**20
COPY_BYTES = {
    ("cuda", "full"): 4 * GiB,
    ("cuda", "quick"): 1 * GiB,
    ("cpu", "full"): 1 * GiB,
    ("cpu", "quick"): 64 * MiB,
}
MATMUL_N = {("cuda", "full"): 8192, ("cuda", "quick"): 4096, ("cpu", "full"): 4096, ("cpu", "quick"): 1024}


def _record_ceiling(benchmark, metrics, spec, ceiling: MetricSpec, amount: float, scale: float) -> None:
    """The rate per round as a metric named by its ceiling key, and its share of the datasheet figure."""
    metrics.bound_by(ceiling)
    times = round_times(benchmark)
    if not times:
        metrics.absent(ceiling, "benchmarks are disabled: no timings to turn into a rate")
        return
    rate = metrics.record(ceiling, samples=rates(amount, times, scale))
    record_share_of_datasheet(metrics, rate.value, ceiling.name, spec)


def test_copy_bandwidth(benchmark, perfkit_device, perfkit_profile, perfkit_metrics, perfkit_datasheet):
    nbytes = COPY_BYTES[perfkit_device.type, perfkit_profile.name]
    work = ceilings.copy_workload(perfkit_device, nbytes)
    perfkit_metrics.info("bytes_copied", nbytes)
    benchmark.pedantic(work.run, rounds=ROUNDS, warmup_rounds=WARMUP)
    work.check()
    _record_ceiling(benchmark, perfkit_metrics, perfkit_datasheet, figures.COPY_BANDWIDTH, work.amount, 1e9)


@pytest.mark.parametrize("precision", [pytest.param(p, id=p) for p in figures.PRECISIONS])
def test_matmul_flops(
    benchmark, precision, perfkit_device, perfkit_profile, perfkit_metrics, perfkit_datasheet
):
    if perfkit_device.type == "cpu" and precision != "fp32":
        pytest.skip(f"{precision} is a GPU tensor-core ceiling; the CPU ceiling is measured in fp32")
    n = MATMUL_N[perfkit_device.type, perfkit_profile.name]
    work = ceilings.matmul_workload(perfkit_device, n, precision)
    perfkit_metrics.info("n", n)
    with ceilings.float32_matmul(precision):
        benchmark.pedantic(work.run, rounds=ROUNDS, warmup_rounds=WARMUP)
    work.check()
    _record_ceiling(
        benchmark, perfkit_metrics, perfkit_datasheet, figures.matmul_ceiling(precision), work.amount, 1e12
    )
