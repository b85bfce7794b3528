"""The machine's own roofline ceilings (later families report "% of measured peak" against them).

Copy bandwidth counts bytes read + written; matmul FLOP/s counts 2·n³ (FMA = 2) on random data.
Each is timed by pytest-benchmark with perfkit's synchronizing clock: 5 warm-up rounds, then 20.
The rate is recorded as a metric named by its ceiling key; the derived pass reads it from there.
"""
from __future__ import annotations

import pytest

from perfkit.measure import ceilings
from perfkit.pbench import round_times
from perfkit.results import datasheet
from perfkit.results.metrics import rates

ROUNDS, WARMUP = 20, 5
GiB, MiB = 2**30, 2**20
COPY_BYTES = {("cuda", "full"): 4 * GiB, ("cuda", "quick"): 1 * GiB, ("cpu", "full"): 1 * GiB, ("cpu", "quick"): 64 * MiB}
MATMUL_N = {("cuda", "full"): 8192, ("cuda", "quick"): 4096, ("cpu", "full"): 4096, ("cpu", "quick"): 1024}


def _record_ceiling(benchmark, metrics, spec, key: str, amount: float, scale: float, unit: str) -> None:
    """The rate per round as a metric named by its ceiling key, and its ratio to the datasheet figure."""
    metrics.info("bound", key)
    times = round_times(benchmark)
    if not times:
        metrics.absent(key, "benchmarks are disabled: no timings to turn into a rate")
        return
    rate = metrics.record(key, unit=unit, better="higher", samples=rates(amount, times, scale))
    sheet = spec.ceiling(key) if spec else None
    if sheet:
        metrics.record("of_datasheet", rate.value / sheet, "ratio", "higher")
        metrics.info("datasheet", {"value": sheet, "unit": unit, "source": spec.source})
    else:
        metrics.absent("of_datasheet", "no datasheet figure for this device "
                                       "(CPU, or a GPU not in perfkit.results.datasheet)")


def test_copy_bandwidth(benchmark, perfkit_device, perfkit_profile, perfkit_metrics, perfkit_datasheet):
    nbytes = COPY_BYTES[perfkit_device.type, perfkit_profile.name]
    work = ceilings.copy_workload(perfkit_device, nbytes)
    perfkit_metrics.info("bytes_copied", nbytes)
    benchmark.pedantic(work.run, rounds=ROUNDS, warmup_rounds=WARMUP)
    work.check()
    _record_ceiling(benchmark, perfkit_metrics, perfkit_datasheet, datasheet.COPY, work.amount, 1e9, "GB/s")


@pytest.mark.parametrize("precision", [pytest.param(p, id=p) for p in datasheet.PRECISIONS])
def test_matmul_flops(benchmark, precision, perfkit_device, perfkit_profile, perfkit_metrics, perfkit_datasheet):
    if perfkit_device.type == "cpu" and precision != "fp32":
        pytest.skip(f"{precision} is a GPU tensor-core ceiling; the CPU ceiling is measured in fp32")
    n = MATMUL_N[perfkit_device.type, perfkit_profile.name]
    work = ceilings.matmul_workload(perfkit_device, n, precision)
    perfkit_metrics.info("n", n)
    with ceilings.float32_matmul(precision):
        benchmark.pedantic(work.run, rounds=ROUNDS, warmup_rounds=WARMUP)
    work.check()
    _record_ceiling(benchmark, perfkit_metrics, perfkit_datasheet, datasheet.matmul_key(precision),
                    work.amount, 1e12, "TFLOP/s")
