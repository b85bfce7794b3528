"""How long heat held the GPUs' clocks down while a benchmark ran.

A GPU that reaches its thermal limit lowers its SM clock, and every kernel slows with it for a reason
outside the code. nvbench discards the samples taken while the clock was below 75% of its default for
that reason. NVML keeps, per GPU, a running total of the time its clocks were limited by heat
(``nvmlDeviceGetViolationStatus`` with the thermal policy), so the plugin reads that total before and
after each benchmark, as it reads the host's load, and a slowdown measured on a throttled GPU is not
called a regression (perfkit.verdict.judge). Power capping is not counted: a kernel that draws the
card's limit is capped in every run, and that is its speed.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

from perfkit.errors import HardwareError
from perfkit.measure.nvml import device_handle, load_nvml
from perfkit.resultfile.payloads import GpuThrottle


@dataclass(frozen=True)
class ThermalSnapshot:
    when: float  # monotonic seconds
    limited_ns: tuple[int, ...]  # per GPU: ns its clocks were limited by heat since the driver loaded


@functools.lru_cache(maxsize=1)
def _gpus() -> tuple[Any, tuple[Any, ...]]:
    """NVML and a handle per GPU this process's CUDA sees (not a neighbour's that CUDA_VISIBLE_DEVICES hides:
    its heat is not this run's), initialised once per process; no GPUs where NVML cannot be read."""
    try:
        nvml = load_nvml()
    except HardwareError:
        return None, ()
    try:
        return nvml, tuple(device_handle(nvml, i) for i in range(_cuda_devices(nvml)))
    except nvml.NVMLError:
        return nvml, ()


def _cuda_devices(nvml: Any) -> int:
    """How many GPUs this process's CUDA sees (none where CUDA_VISIBLE_DEVICES hides them all); NVML's count
    where no torch can say."""
    try:
        import torch
    except ImportError:
        return int(nvml.nvmlDeviceGetCount())
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def snapshot() -> ThermalSnapshot | None:
    """Now, or None where NVML or its violation counters cannot be read (no GPU, or a GPU without them)."""
    nvml, handles = _gpus()
    if not handles:
        return None
    try:
        limited = tuple(
            int(nvml.nvmlDeviceGetViolationStatus(h, nvml.NVML_PERF_POLICY_THERMAL).violationTime)
            for h in handles
        )
    except nvml.NVMLError:
        return None
    return ThermalSnapshot(time.monotonic(), limited)


def between(start: ThermalSnapshot | None, end: ThermalSnapshot | None) -> GpuThrottle | None:
    """The longest any GPU was held down by heat from ``start`` to ``end`` (None without both, or no time
    between)."""
    if start is None or end is None or end.when <= start.when or len(start.limited_ns) != len(end.limited_ns):
        return None
    limited = max(max(0, b - a) for a, b in zip(start.limited_ns, end.limited_ns)) / 1e9
    return GpuThrottle(round(limited, 3), round(end.when - start.when, 3))
