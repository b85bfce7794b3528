"""Measure-and-record steps shared by benchmark families.

Each takes the benchmark's ``MetricRecorder`` and records a metric, or its absence with the reason
(a CPU run has no allocator peaks or NVML power). Nothing is ever recorded as a zero in place of a measurement.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from perfkit.errors import HardwareError
from perfkit.measure import capacity, memory, power, timing
from perfkit.results import datasheet
from perfkit.results.metrics import MetricRecorder, rates
from perfkit.results.payloads import RatePeak

NO_TIMES = "benchmarks are disabled (--benchmark-disable): no timings to turn into a rate"


def record_rate(metrics: MetricRecorder, times: Sequence[float], amount: float, *, compute: bool,
                ceiling_key: str, spec: datasheet.GpuSpec | None) -> None:
    """TFLOP/s (compute) or GB/s (memory) per timed round, its share of the datasheet figure, and the
    ceiling it is a share of (``RatePeak``): the share of this run's measured ceiling, ``share_of_peak`` or
    ``share_of_copy_peak``, is added when the run's results are complete (perfkit.results.derived).
    """
    name, unit, scale = ("tflops", "TFLOP/s", 1e12) if compute else ("bandwidth_gbps", "GB/s", 1e9)
    if not times:
        metrics.absent(name, NO_TIMES)
        return
    if amount <= 0:
        metrics.absent(name, "this operation does no counted work of that kind")
        return
    rate = metrics.record(name, unit=unit, better="higher", samples=rates(amount, times, scale))
    sheet = spec.ceiling(ceiling_key) if spec else None
    if sheet:
        metrics.record("share_of_datasheet", rate.value / sheet, "ratio", "higher")
    else:
        metrics.absent("share_of_datasheet", "no datasheet figure for this device")
    metrics.payload(RatePeak(ceiling_key, sheet))


def record_peak_memory(metrics: MetricRecorder, fn: Callable[[], Any], device: torch.device,
                       since: int = 0) -> memory.PeakMemory | None:
    """``peak_allocated_mib`` (tensors, net of ``since``; a gating figure: it does not follow from the time)
    and ``peak_reserved_mib`` (segments the call reserved) over one call."""
    try:
        peak = memory.measure_peak(fn, device, since)
    except HardwareError as exc:
        for name in ("peak_allocated_mib", "peak_reserved_mib"):
            metrics.absent(name, str(exc))
        return None
    metrics.record("peak_allocated_mib", peak.allocated / memory.MiB, "MiB", "lower", gate=True)
    metrics.record("peak_reserved_mib", peak.reserved / memory.MiB, "MiB", "lower")
    metrics.info("memory_residue_mib", peak.residue / memory.MiB)
    return peak


def record_power(metrics: MetricRecorder, fn: Callable[[], Any], seconds_per_call: float,
                 device: torch.device) -> power.PowerTrace | None:
    """``avg_power_w`` and ``energy_j`` (joules per call) over a loop of ``fn`` spanning the NVML window."""
    names = ("avg_power_w", "energy_j")
    reason = "NVML reads NVIDIA GPUs; this run is on the CPU" if device.type != "cuda" else power.unavailable_reason()
    if reason:
        for name in names:
            metrics.absent(name, reason)
        return None
    timing.run_for(fn, power.POWER_LEAD_IN_S, seconds_per_call)
    with power.PowerSampler(device.index or 0) as sampler:
        calls, elapsed = timing.run_for(fn, power.POWER_WINDOW_S, seconds_per_call)
    trace = sampler.trace
    metrics.record("avg_power_w", trace.avg_power_w, "W", "lower")
    metrics.record("energy_j", trace.energy_j / calls, "J", "lower")
    metrics.info("power", {"window_s": elapsed, "calls": calls, "energy_source": trace.energy_source,
                           "samples": len(trace.readings), "sampled_power_w": trace.mean("power_w"),
                           "gpu_util_pct": trace.mean("gpu_util_pct"), "sm_clock_mhz": trace.mean("sm_clock_mhz"),
                           "memory_used_mib": trace.peak("memory_used_mib")})
    return trace


def record_capacity(metrics: MetricRecorder, found: capacity.Capacity, name: str, value: int, unit: str) -> None:
    """What every capacity search leaves: its answer ``name`` (a gating figure: a change in memory use moves
    it), how many probes and seconds it took, and the most memory a probe left behind (always 0: a leak fails)."""
    metrics.record(name, value, unit, "higher", gate=True)
    metrics.record("probes", len(found.probes), "probes", "none")
    metrics.record("search_s", sum(p.seconds for p in found.probes), "s", "lower")
    metrics.record("leaked_mib", max(p.leaked_bytes for p in found.probes) / memory.MiB, "MiB", "lower")
