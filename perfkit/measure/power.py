"""Power, energy, utilisation, memory and clocks from NVML (nvidia-ml-py), sampled in a background thread.

NVML's power reading is itself an average over about a second on recent GPUs and its counters update
every few tens of milliseconds, so a layer that runs for microseconds must be looped for well over a
second (``POWER_WINDOW_S``, after a ``POWER_LEAD_IN_S`` lead-in so the reading reflects the load, not
the idle GPU before it). Energy is the difference of the total-energy counter over the window; where
a GPU has no counter it is the integral of the sampled power, and the trace says which.
"""
from __future__ import annotations

import contextlib
import itertools
import statistics
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from typing_extensions import Self

from perfkit.errors import HardwareError, UsageError
from perfkit.measure.nvml import device_handle, nvml_open

#: Measured window and the lead-in before it (seconds); several NVML update periods each.
POWER_WINDOW_S = 2.0
POWER_LEAD_IN_S = 1.0
#: Default sampling period (50 Hz).
SAMPLE_INTERVAL_S = 0.02


@dataclass(frozen=True)
class Reading:
    """One NVML sample; ``t`` in seconds from the start of the trace."""

    t: float
    power_w: float
    gpu_util_pct: float
    memory_util_pct: float
    memory_used_mib: float
    sm_clock_mhz: float


@dataclass(frozen=True)
class PowerTrace:
    readings: tuple[Reading, ...]
    seconds: float
    energy_j: float
    energy_source: str

    @property
    def avg_power_w(self) -> float:
        """Mean power over the window: energy over time, the exact average whatever the sampling."""
        return self.energy_j / self.seconds

    def mean(self, field: str) -> float:
        return statistics.fmean(getattr(r, field) for r in self.readings)

    def peak(self, field: str) -> float:
        return max(getattr(r, field) for r in self.readings)


def unavailable_reason() -> str | None:
    """Why NVML cannot be read here (for ``metrics_absent``), or None when it can."""
    try:
        with nvml_open():
            return None
    except HardwareError as exc:
        return str(exc)


def enforced_limit_w(cuda_index: int) -> float | None:
    """The power limit the driver enforces on GPU ``cuda_index`` in watts; None where NVML cannot say."""
    try:
        with nvml_open() as nvml:
            try:
                return float(nvml.nvmlDeviceGetEnforcedPowerLimit(device_handle(nvml, cuda_index))) / 1e3
            except nvml.NVMLError:
                return None
    except HardwareError:
        return None


class SamplingError(HardwareError):
    """NVML could not sample the GPU (a reading it does not support there, such as utilisation under MIG)."""


class PowerSampler:
    """``with PowerSampler(0) as sampler: work()`` then ``sampler.trace``.

    The thread samples every ``interval_s`` until the block ends, and is stopped and joined even when
    the block raises; NVML is shut down on exit. ``nvml`` replaces the binding (tests pass a fake).
    """

    def __init__(self, cuda_index: int = 0, interval_s: float = SAMPLE_INTERVAL_S, nvml: Any = None) -> None:
        if interval_s <= 0:
            raise UsageError(f"sampling interval must be positive, not {interval_s}")
        self._cuda_index = cuda_index
        self._interval = interval_s
        self._nvml = nvml
        self._open = contextlib.ExitStack()  # NVML, from the block's start to its end
        self._handle: Any = None
        self._readings: list[Reading] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = 0.0
        self._energy_start: float | None = None
        self._trace: PowerTrace | None = None
        self._failed: str | None = None  # why the sampling thread stopped early

    @property
    def trace(self) -> PowerTrace:
        if self._trace is None:
            raise UsageError("the power trace is available after the sampler's with-block has ended")
        return self._trace

    def __enter__(self) -> Self:
        self._nvml = self._open.enter_context(nvml_open(self._nvml))
        try:
            self._handle = device_handle(self._nvml, self._cuda_index)
            self._energy_start = self._energy_mj()
            self._start = time.perf_counter()
            self._sample()
        except self._nvml.NVMLError as exc:
            self._open.close()
            raise SamplingError(f"NVML cannot sample GPU {self._cuda_index} ({exc})") from None
        self._thread = threading.Thread(target=self._run, name="perfkit-power", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            if exc_type is None:
                if self._failed is None:
                    try:
                        self._sample()
                    except self._nvml.NVMLError as failed:
                        self._failed = str(failed)
                if self._failed is not None:
                    raise SamplingError(f"NVML stopped answering while GPU {self._cuda_index} was sampled "
                                        f"({self._failed})")
                self._trace = self._finish(time.perf_counter() - self._start, self._energy_mj())
        finally:
            self._open.close()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._sample()
            except self._nvml.NVMLError as exc:  # said when the block ends, not as a thread's traceback
                self._failed = str(exc)
                return

    def _sample(self) -> None:
        nvml, handle = self._nvml, self._handle
        util = nvml.nvmlDeviceGetUtilizationRates(handle)
        self._readings.append(Reading(
            t=time.perf_counter() - self._start,
            power_w=nvml.nvmlDeviceGetPowerUsage(handle) / 1e3,
            gpu_util_pct=float(util.gpu),
            memory_util_pct=float(util.memory),
            memory_used_mib=nvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20,
            sm_clock_mhz=float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
        ))

    def _energy_mj(self) -> float | None:
        try:
            return float(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))
        except self._nvml.NVMLError:
            return None

    def _finish(self, seconds: float, energy_end: float | None) -> PowerTrace:
        readings = tuple(self._readings)
        if self._energy_start is not None and energy_end is not None:
            return PowerTrace(
                readings, seconds, (energy_end - self._energy_start) / 1e3, "NVML total-energy counter"
            )
        integral = sum((b.t - a.t) * (a.power_w + b.power_w) / 2 for a, b in itertools.pairwise(readings))
        return PowerTrace(readings, seconds, integral, "integral of sampled power (no energy counter)")
