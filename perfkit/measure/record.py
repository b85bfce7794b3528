"""Measure-and-record steps shared by benchmark families.

Each takes the benchmark's ``MetricRecorder`` and records a metric, or its absence with the reason
(a CPU run has no allocator peaks or NVML power). Nothing is ever recorded as a zero in place of a
measurement.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from perfkit.errors import HardwareError, MeasurementError
from perfkit.measure import capacity, memory, power, timing
from perfkit.resultfile import datasheet, figures
from perfkit.resultfile.metrics import MetricRecorder, MetricSpec, rates
from perfkit.resultfile.payloads import GPU_STEP_REPETITIONS, PowerWindow, RatePeak

NO_TIMES = "benchmarks are disabled (--benchmark-disable): no timings to turn into a rate"


def record_rate(metrics: MetricRecorder, times: Sequence[float], amount: float, *, compute: bool,
                ceiling_key: str, spec: datasheet.GpuSpec | None) -> None:
    """TFLOP/s (compute) or GB/s (memory) per timed round, its share of the datasheet figure, and the
    ceiling it is a share of (``RatePeak``): the share of this run's measured ceiling, ``share_of_peak`` or
    ``share_of_copy_peak``, is added when the run's results are complete (perfkit.resultfile.derived).
    """
    figure, scale = (figures.TFLOPS, 1e12) if compute else (figures.BANDWIDTH, 1e9)
    if not times:
        metrics.absent(figure, NO_TIMES)
        return
    if amount <= 0:
        metrics.absent(figure, "this operation does no counted work of that kind")
        return
    rate = metrics.record(figure, samples=rates(amount, times, scale))
    record_share_of_datasheet(metrics, rate.value, ceiling_key, spec)
    metrics.payload(RatePeak(ceiling_key, spec.ceiling(ceiling_key) if spec else None))


def record_share_of_datasheet(metrics: MetricRecorder, rate: float, ceiling_key: str,
                              spec: datasheet.GpuSpec | None) -> None:
    """A rate over the vendor's figure for the ceiling it follows (absent where the datasheet has none)."""
    sheet = spec.ceiling(ceiling_key) if spec else None
    if sheet:
        metrics.record(figures.SHARE_OF_DATASHEET, rate / sheet)
    else:
        metrics.absent(
            figures.SHARE_OF_DATASHEET,
            "no datasheet figure for this device (CPU, or a GPU not in perfkit.resultfile.datasheet)",
        )


def record_peak_memory(metrics: MetricRecorder, fn: Callable[[], Any], device: torch.device,
                       since: int = 0) -> memory.PeakMemory | None:
    """``peak_allocated_mib`` (tensors, net of ``since``; a gating figure: it does not follow from the time)
    and ``peak_reserved_mib`` (segments the call reserved) over one call."""
    try:
        peak = memory.measure_peak(fn, device, since)
    except HardwareError as exc:
        for spec in (figures.PEAK_ALLOCATED_MIB, figures.PEAK_RESERVED_MIB):
            metrics.absent(spec, str(exc))
        return None
    metrics.record(figures.PEAK_ALLOCATED_MIB, peak.allocated / memory.MiB)
    metrics.record(figures.PEAK_RESERVED_MIB, peak.reserved / memory.MiB)
    metrics.info("memory_residue_mib", peak.residue / memory.MiB)
    return peak


def record_power(metrics: MetricRecorder, fn: Callable[[], Any], seconds_per_call: float,
                 device: torch.device) -> power.PowerTrace | None:
    """``avg_power_w`` and ``energy_j`` (joules per call) over a loop of ``fn`` spanning the NVML window."""
    reason = (
        "NVML reads NVIDIA GPUs; this run is on the CPU"
        if device.type != "cuda"
        else power.unavailable_reason()
    )
    if reason:
        for spec in (figures.AVG_POWER_W, figures.ENERGY_J):
            metrics.absent(spec, reason)
        return None
    timing.run_for(fn, power.POWER_LEAD_IN_S, seconds_per_call)
    with power.PowerSampler(device.index or 0) as sampler:
        calls, elapsed = timing.run_for(fn, power.POWER_WINDOW_S, seconds_per_call)
    trace = sampler.trace
    metrics.record(figures.AVG_POWER_W, trace.avg_power_w)
    metrics.record(figures.ENERGY_J, trace.energy_j / calls)
    metrics.payload(
        PowerWindow(
            elapsed,
            calls,
            trace.energy_source,
            len(trace.readings),
            trace.mean("power_w"),
            trace.mean("gpu_util_pct"),
            trace.mean("sm_clock_mhz"),
            trace.peak("memory_used_mib"),
        )
    )
    return trace


def record_capacity(
    metrics: MetricRecorder, found: capacity.Capacity, answer: MetricSpec, value: int, exact: bool
) -> None:
    """What every capacity search leaves: its answer (a gating figure: a change in memory use moves it), how
    many probes and seconds it took, and the most memory a probe left behind (always 0: a leak fails).
    ``exact``: the search's budget is the code's (:attr:`capacity.Budget.fixed`), so its counts are too."""
    metrics.record(answer, value, exact=exact)
    metrics.record(figures.PROBES, len(found.probes), exact=exact)
    metrics.record(figures.SEARCH_S, sum(p.seconds for p in found.probes))
    metrics.record(figures.LEAKED_MIB, max(p.leaked_bytes for p in found.probes) / memory.MiB)


def gpu_alone(step: Callable[[], Any], host_s: float) -> tuple[tuple[float, ...], str]:
    """A training step's time on the GPU alone (one the host paces, or a one-GPU DDP step whose reducer's
    host work can pace it), each of GPU_STEP_REPETITIONS with its launches
    queued ahead (timing.time_queued; ``host_s``: about how long the host takes to issue one step), or () and
    why it could not be read."""
    try:
        return timing.time_queued(step, GPU_STEP_REPETITIONS, host_s).seconds, ""
    except MeasurementError as error:
        return (), str(error)


def record_gpu_alone(metrics: MetricRecorder, seconds: Sequence[float], unmeasured: str) -> None:
    """Gate a launch-bound step on its time on the GPU alone (figures.GPU_STEP_MS), as GPU work, where it was
    read; else say why, and its time gates as before."""
    if seconds:
        metrics.record(figures.GPU_STEP_MS, samples=[s * 1e3 for s in seconds])
        metrics.gate_on(figures.GPU_STEP_MS)
        metrics.gpu_bound()
    elif unmeasured:
        metrics.absent(figures.GPU_STEP_MS, unmeasured)
