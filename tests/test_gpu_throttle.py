"""The time heat held the GPUs' clocks down around a benchmark, from NVML's violation counters."""
from __future__ import annotations

import types

import pytest

from perfkit.measure import gpu_throttle
from perfkit.measure.gpu_throttle import ThermalSnapshot
from perfkit.resultfile.payloads import GpuThrottle


def test_the_longest_any_gpu_was_held_down_between_two_snapshots():
    start = ThermalSnapshot(when=10.0, limited_ns=(5_000_000_000, 0))
    held = gpu_throttle.between(start, ThermalSnapshot(when=20.0, limited_ns=(5_500_000_000, 2_000_000_000)))
    assert held == GpuThrottle(thermal_s=2.0, seconds=10.0) and held.disturbed
    assert not gpu_throttle.between(start, ThermalSnapshot(20.0, (5_100_000_000, 0))).disturbed  # 1%
    assert gpu_throttle.between(start, None) is None and gpu_throttle.between(start, start) is None
    assert gpu_throttle.between(start, ThermalSnapshot(20.0, (0,))) is None  # GPUs came or went


def test_a_record_round_trips_and_says_what_to_do():
    record = GpuThrottle(0.6, 10.0)
    assert GpuThrottle.from_json(record.to_json()) == record
    assert record.disturbed and "let the GPU cool" in record.sentence()


class _FakeNvml:
    """NVML's violation-counter call as nvidia-ml-py exposes it, for the parsing alone (the GPU runs use the
    real one)."""

    NVML_PERF_POLICY_THERMAL = 1
    NVMLError = RuntimeError

    def __init__(self, counters: list[int]) -> None:
        self.counters = counters

    def nvmlDeviceGetViolationStatus(self, handle: int, policy: int) -> types.SimpleNamespace:
        assert policy == self.NVML_PERF_POLICY_THERMAL
        return types.SimpleNamespace(referenceTime=0, violationTime=self.counters[handle])


def test_a_snapshot_reads_every_gpus_thermal_counter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_throttle, "_gpus", lambda: (_FakeNvml([7, 9]), (0, 1)))
    assert gpu_throttle.snapshot().limited_ns == (7, 9)


def test_without_nvml_nothing_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_throttle, "_gpus", lambda: (None, ()))
    assert gpu_throttle.snapshot() is None


def test_only_this_processs_gpus_are_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under CUDA_VISIBLE_DEVICES (a replicate of perfkit fleet --on-host) the neighbour's GPU heat is not
    this run's: the handles are those of this process's CUDA devices, found by PCI bus id."""
    from perfkit.measure import nvml as nvml_module

    class HostNvml:
        NVMLError = RuntimeError

        def nvmlDeviceGetCount(self) -> int:
            return 2

        def nvmlDeviceGetHandleByPciBusId(self, bus_id: str) -> str:
            return {"00000000:1b:00.0": "gpu0", "00000000:43:00.0": "gpu1"}[bus_id]

    monkeypatch.setattr(gpu_throttle, "load_nvml", HostNvml)
    monkeypatch.setattr(gpu_throttle, "_cuda_devices", lambda nvml: 1)
    monkeypatch.setattr(nvml_module, "cuda_pci_bus_id", lambda index: ["00000000:43:00.0"][index])
    gpu_throttle._gpus.cache_clear()
    try:
        assert gpu_throttle._gpus()[1] == ("gpu1",)
    finally:
        gpu_throttle._gpus.cache_clear()


def test_a_process_whose_cuda_sees_no_gpu_watches_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA_VISIBLE_DEVICES="" on a GPU host: the run uses no GPU, so no GPU's heat is its."""
    import torch

    class HostNvml:
        def nvmlDeviceGetCount(self) -> int:
            return 2

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_throttle._cuda_devices(HostNvml()) == 0
