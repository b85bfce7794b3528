"""The machine's own roofline ceilings (later families report "% of measured peak" against them).

Copy bandwidth counts bytes read + written; matmul FLOP/s counts 2·n³ (FMA = 2) on random data. On a GPU,
a copy by one thread and by one block (numba.cuda) over the vector add's sizes measures one multiprocessor's
pace against the latency of memory: the roof of the vector add's launches of those shapes
(perfkit.workloads.benchwork); a grid's first touch of managed memory the host wrote measures the roof of its
first launches there. They run at the clock the GPU chooses, as the vector add does, fewer rounds, and weekly.
Copy and matmul are timed at the base clock where the driver allows (perfkit.measure.clocks), by
pytest-benchmark with perfkit's synchronizing clock: 5 warm-up rounds, then 20. On a GPU
the operation first runs untimed for half a second (timing.warm_for), so it is timed in the clock state its
power limit holds under sustained load, whatever ran before: timed from a cool start, the four fresh-process
runs of the tensor-core GEMMs on one H200 spread 5.4% (tf32); warmed, 0.7%, and 14% slower (the sustained
ceiling, the one a long training step meets). Each GPU round then makes the calls that fill 50 ms
(timing.calls_per_round): a bf16 GEMM draws the card's power limit even at the base clock, and one-call rounds
caught the power controller's swings (3% between fresh processes on one H200; 0.25% in 50 ms rounds).
A GEMM draws the power limit even at the base clock, so its speed follows the die's temperature: it is warmed
until the temperature stops rising (perfkit.measure.heat; on an H100 tf32 read 3.5% slower hot than from a
cool start), and reads the same first in a run and after training; it gates on its SM cycles per call,
which the clock each card holds at the power limit does not move (two H100s: tf32 2.3% apart in time).
The rate is recorded as a metric named by its ceiling key; the derived pass reads it from there.
"""
from __future__ import annotations

import pytest

from perfkit.measure import ceilings, heat, timing
from perfkit.measure.record import record_share_of_datasheet
from perfkit.pbench import round_times
from perfkit.resultfile import figures
from perfkit.resultfile.metrics import MetricSpec, rates
from perfkit.workloads import kernels

ROUNDS, WARMUP = 20, 5
GiB, MiB = 2**30, 2**20
COPY_BYTES = {
    ("cuda", "full"): 4 * GiB,
    ("cuda", "quick"): 1 * GiB,
    ("cpu", "full"): 1 * GiB,
    ("cpu", "quick"): 64 * MiB,
}
MATMUL_N = {("cuda", "full"): 8192, ("cuda", "quick"): 4096, ("cpu", "full"): 4096, ("cpu", "quick"): 1024}
#: Rounds and warm-up rounds of a one-multiprocessor copy (of 50 ms each, or one call of 0.1-0.2 s over
#: 100 M elements): latency-bound, it draws little power and needs no long settling; the nightly budget is
#: tight.
ONE_SM_ROUNDS = {1: (10, 2), 100: (5, 1)}
#: A first touch's rounds, one call each after a host write: the vector add's first launches' (the driver's
#: page work depends on how many write-and-touch cycles came before).
FIRST_TOUCH_ROUNDS = (10, 5)


def _record_ceiling(benchmark, metrics, ceiling: MetricSpec, amount: float, scale: float) -> float | None:
    """The rate per round as a metric named by its ceiling key (None when benchmarks are disabled)."""
    metrics.bound_by(ceiling)
    times = round_times(benchmark)
    if not times:
        metrics.absent(ceiling, "benchmarks are disabled: no timings to turn into a rate")
        return None
    return metrics.record(ceiling, samples=rates(amount, times, scale)).value


def _record_with_datasheet(benchmark, metrics, spec, ceiling: MetricSpec, amount: float,
                           scale: float) -> None:
    """The rate, and its share of the datasheet figure."""
    rate = _record_ceiling(benchmark, metrics, ceiling, amount, scale)
    if rate is not None:
        record_share_of_datasheet(metrics, rate, ceiling.name, spec)


# kernels: timed at the GPU base clock where allowed (perfkit.measure.clocks)
@pytest.mark.locked_clock
def test_copy_bandwidth(benchmark, perfkit_device, perfkit_profile, perfkit_metrics, perfkit_datasheet):
    nbytes = COPY_BYTES[perfkit_device.type, perfkit_profile.name]
    work = ceilings.copy_workload(perfkit_device, nbytes)
    perfkit_metrics.info("bytes_copied", nbytes)
    calls = timing.warmed_calls_per_round(work.run, perfkit_device)
    benchmark.pedantic(work.run, rounds=ROUNDS, warmup_rounds=WARMUP, iterations=calls)
    work.check()
    _record_with_datasheet(benchmark, perfkit_metrics, perfkit_datasheet, figures.COPY_BANDWIDTH, work.amount,
                           1e9)


@pytest.mark.locked_clock
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
        calls = heat.warmed_calls_per_round(work.run, perfkit_device, perfkit_metrics)
        with heat.sm_clock(perfkit_device) as clock:
            benchmark.pedantic(work.run, rounds=ROUNDS, warmup_rounds=WARMUP, iterations=calls)
    work.check()
    if perfkit_device.type == "cuda":  # the sustained ceiling, not a cool card's boost as before 2026-11-23
        perfkit_metrics.measured_by(figures.SUSTAINED_MATMUL)
    heat.gate_on_cycles(perfkit_metrics, round_times(benchmark), clock)
    _record_with_datasheet(
        benchmark, perfkit_metrics, perfkit_datasheet, figures.matmul_ceiling(precision), work.amount, 1e12
    )


# weekly: the nightly budget is tight, and a nightly run borrows these ceilings from its machine's baseline
# (perfkit.resultfile.ceilings), which is where the across-hardware model reads them
@pytest.mark.weekly
@pytest.mark.gpu
@pytest.mark.parametrize("scenario, k",
                         [pytest.param(s, k, id=f"K{k}-{s}") for s, k in figures.ONE_SM_COPIES])
def test_one_sm_copy(benchmark, scenario, k, perfkit_device, perfkit_metrics):
    """One multiprocessor's pace: a copy by one thread or one block over the vector add's K million elements,
    the ceiling its launches of that shape and size follow across hardware. Timed at the clock the GPU
    chooses, as the vector add is (not locked: a latency-bound loop follows the SM clock)."""
    pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install -e '.[cuda]')")
    from perfkit.workloads.kernels import one_sm  # numba's: after the skip above

    n = kernels.elements(k)
    work = ceilings.one_sm_copy_workload(scenario, n, one_sm.launcher)
    calls = timing.warmed_calls_per_round(work.run, perfkit_device)
    rounds, warmup = ONE_SM_ROUNDS[k]
    benchmark.pedantic(work.run, rounds=rounds, warmup_rounds=warmup, iterations=calls)
    work.check()
    # no datasheet lists one multiprocessor's pace: no share of it
    _record_ceiling(benchmark, perfkit_metrics, figures.one_sm_copy(scenario, k), work.amount, 1e9)


# weekly, as the one-multiprocessor copies: a nightly run borrows the ceiling from its machine's baseline
@pytest.mark.weekly
@pytest.mark.gpu
@pytest.mark.parametrize("k", [pytest.param(k, id=f"K{k}") for k in figures.FIRST_TOUCH_KS])
def test_first_touch(benchmark, k, perfkit_metrics):
    """The pace at which a grid's first reads migrate managed memory the host just wrote, as many bytes as the
    vector add's x and y of K million elements: the ceiling of its first launches on managed memory across
    hardware. Each round is one call after an untimed host write; at the clock the GPU chooses, as the vector
    add runs."""
    pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install -e '.[cuda]')")
    from perfkit.workloads.kernels import first_touch  # numba's: after the skip above

    work = ceilings.first_touch_workload(kernels.elements(k), first_touch.launcher)
    rounds, warmup = FIRST_TOUCH_ROUNDS
    benchmark.pedantic(work.run, setup=work.setup, rounds=rounds, warmup_rounds=warmup)
    work.check()
    # the driver's page work: judged as the vector add's launches on managed memory are
    perfkit_metrics.tolerance(kernels.MANAGED_TOLERANCE)
    # no datasheet lists the host link's page migration: no share of it
    _record_ceiling(benchmark, perfkit_metrics, figures.first_touch(k), work.amount, 1e9)
