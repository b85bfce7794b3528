"""The NVML power sampler, driven by a fake NVML whose counters follow a known power draw."""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
import torch

from perfkit.errors import UsageError
from perfkit.measure import power
from perfkit.measure.nvml import nvml_open
from perfkit.measure.record import record_power
from perfkit.resultfile.metrics import MetricRecorder


@pytest.fixture(autouse=True)
def _gpus_by_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake NVML's GPUs are found by index, as where CUDA gives no PCI bus id (on a GPU machine too)."""
    from perfkit.measure import nvml as nvml_module

    monkeypatch.setattr(nvml_module, "cuda_pci_bus_id", lambda index: None)


class FakeNvml:
    """A GPU drawing ``watts`` steadily since it was created; energy in mJ like the real counter."""

    NVML_CLOCK_SM = 1

    class NVMLError(Exception):
        pass

    def __init__(self, watts: float = 300.0, energy_counter: bool = True) -> None:
        self.watts, self.energy_counter = watts, energy_counter
        self.t0 = time.perf_counter()
        self.inits = self.shutdowns = 0

    def nvmlInit(self) -> None:
        self.inits += 1

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"gpu{index}"

    def nvmlDeviceGetPowerUsage(self, handle: str) -> int:
        return int(self.watts * 1000)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
        if not self.energy_counter:
            raise self.NVMLError("Not Supported")
        return int((time.perf_counter() - self.t0) * self.watts * 1000)

    def nvmlDeviceGetUtilizationRates(self, handle: str) -> SimpleNamespace:
        return SimpleNamespace(gpu=97, memory=40)

    def nvmlDeviceGetMemoryInfo(self, handle: str) -> SimpleNamespace:
        return SimpleNamespace(used=3 * 2**30)

    def nvmlDeviceGetClockInfo(self, handle: str, clock: int) -> int:
        return 1980


def test_energy_over_time_gives_the_average_power():
    nvml = FakeNvml(watts=300.0)
    with power.PowerSampler(0, interval_s=0.005, nvml=nvml) as sampler:
        time.sleep(0.2)
    trace = sampler.trace
    assert trace.energy_source == "NVML total-energy counter"
    assert trace.avg_power_w == pytest.approx(300.0, rel=0.02)
    assert trace.energy_j == pytest.approx(300.0 * trace.seconds, rel=0.02)
    assert len(trace.readings) >= 10
    assert trace.mean("gpu_util_pct") == 97 and trace.peak("memory_used_mib") == 3 * 1024
    assert trace.mean("sm_clock_mhz") == 1980
    assert nvml.inits == nvml.shutdowns == 1


def test_without_an_energy_counter_energy_is_the_integral_of_sampled_power():
    with power.PowerSampler(0, interval_s=0.005, nvml=FakeNvml(watts=100.0, energy_counter=False)) as sampler:
        time.sleep(0.2)
    trace = sampler.trace
    assert trace.energy_source.startswith("integral of sampled power")
    assert trace.energy_j == pytest.approx(100.0 * trace.readings[-1].t, rel=0.01)


def test_the_thread_stops_and_nvml_shuts_down_when_the_block_raises():
    nvml = FakeNvml()
    sampler = power.PowerSampler(0, interval_s=0.005, nvml=nvml)
    with pytest.raises(RuntimeError, match="boom"), sampler:
        raise RuntimeError("boom")
    assert sampler._thread is not None and not sampler._thread.is_alive()
    assert nvml.shutdowns == 1
    with pytest.raises(UsageError, match="after the sampler's with-block"):
        _ = sampler.trace


def test_nvml_opened_for_a_block_is_shut_down_whatever_the_block_does():
    nvml = FakeNvml()
    with nvml_open(nvml) as opened:
        assert opened is nvml and (nvml.inits, nvml.shutdowns) == (1, 0)
    with pytest.raises(nvml.NVMLError), nvml_open(nvml):
        raise nvml.NVMLError("gone")
    assert nvml.inits == nvml.shutdowns == 2


def test_a_nonpositive_interval_is_refused():
    with pytest.raises(UsageError, match="interval must be positive"):
        power.PowerSampler(0, interval_s=0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only path")
def test_on_a_cpu_power_metrics_are_absent_with_a_reason_never_zero():
    extra: dict = {}
    assert record_power(MetricRecorder(extra), lambda: None, 1e-3, torch.device("cpu")) is None
    assert "metrics" not in extra
    assert set(extra["metrics_absent"]) == {"avg_power_w", "energy_j"}
    assert "CPU" in extra["metrics_absent"]["avg_power_w"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without an NVIDIA driver")
def test_nvml_unavailability_is_explained():
    reason = power.unavailable_reason()
    assert reason is not None and ("NVML" in reason or "nvidia-ml-py" in reason)
