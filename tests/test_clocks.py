"""GPU clocks: the SM clock every run records, and the opt-in lock, driven by a fake NVML."""
from __future__ import annotations

import pytest

from perfkit.measure import clocks


@pytest.fixture(autouse=True)
def _gpus_by_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake NVML's GPUs are found by index, as where CUDA gives no PCI bus id (on a GPU machine too)."""
    from perfkit.measure import nvml as nvml_module

    monkeypatch.setattr(nvml_module, "cuda_pci_bus_id", lambda index: None)


class FakeNvml:
    """Two GPUs whose driver allows a clock lock, or refuses it (``allow=False``) from GPU ``refuse_from``
    on."""

    NVML_CLOCK_SM = 1

    class NVMLError(Exception):
        pass

    def __init__(self, allow: bool = True, refuse_from: int = 0) -> None:
        self.allow, self.refuse_from = allow, refuse_from
        self.locked: dict[str, tuple[int, int]] = {}
        self.inits = self.shutdowns = 0

    def nvmlInit(self) -> None:
        self.inits += 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"gpu{index}"

    def nvmlDeviceGetApplicationsClock(self, handle: str, clock: int) -> int:
        return 1755

    def nvmlDeviceGetDefaultApplicationsClock(self, handle: str, clock: int) -> int:
        return 1755

    def nvmlDeviceGetMaxClockInfo(self, handle: str, clock: int) -> int:
        return 1980

    def nvmlDeviceSetGpuLockedClocks(self, handle: str, low: int, high: int) -> None:
        if not self.allow and int(handle[3:]) >= self.refuse_from:
            raise self.NVMLError("Insufficient Permissions")
        self.locked[handle] = (low, high)

    def nvmlDeviceResetGpuLockedClocks(self, handle: str) -> None:
        self.locked.pop(handle, None)

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1


def test_the_fingerprint_records_the_application_and_maximum_sm_clock():
    nvml = FakeNvml()
    assert clocks.sm_clocks(0, nvml) == "1755/1980 MHz" and nvml.inits == nvml.shutdowns == 1


def test_a_base_lock_holds_the_tdp_clock_for_the_block_and_is_reset_after():
    nvml = FakeNvml()
    with clocks.locked(2, "base", nvml) as lock:
        assert nvml.locked == {"gpu0": (clocks.TDP_LIMIT,) * 2, "gpu1": (clocks.TDP_LIMIT,) * 2}
        assert lock.said == "clocks locked at the base clock on 2 GPU(s)"
        assert lock.sm_clock == "base/1980 MHz locked"
    assert nvml.locked == {} and nvml.inits == nvml.shutdowns == 1


def test_a_max_lock_holds_the_default_application_clock():
    nvml = FakeNvml()
    with clocks.locked(1, "max", nvml) as lock:
        assert nvml.locked == {"gpu0": (1755, 1755)}
        assert lock.said == "clocks locked at the default application clock (1755 MHz) on 1 GPU(s)"
        assert lock.sm_clock == "1755/1980 MHz locked"
    assert nvml.locked == {}


def test_an_unknown_lock_or_no_gpu_is_said():
    from perfkit.errors import UsageError

    with pytest.raises(UsageError, match="choose one of base, max"), clocks.locked(1, "min", FakeNvml()):
        pass
    with clocks.locked(0, "base", FakeNvml()) as lock:
        assert lock.sm_clock is None and "no GPU" in lock.said


@pytest.mark.parametrize("refuse_from", [0, 1])
def test_a_refused_lock_is_said_and_leaves_no_gpu_locked(refuse_from):
    nvml = FakeNvml(allow=False, refuse_from=refuse_from)
    with clocks.locked(2, binding=nvml) as lock:
        assert nvml.locked == {}  # GPU 0, locked before GPU 1 refused, was reset at once
        assert lock.sm_clock is None
        assert lock.said.startswith("clocks not locked: the driver refused (Insufficient Permissions)")
    assert nvml.shutdowns == 1


def test_without_nvml_the_lock_is_said_not_taken(monkeypatch):
    from perfkit.errors import HardwareError
    from perfkit.measure import nvml

    def missing():
        raise HardwareError("nvidia-ml-py is not installed")

    monkeypatch.setattr(nvml, "load_nvml", missing)
    with clocks.locked(1) as lock:
        assert lock.said == "clocks not locked: nvidia-ml-py is not installed"
    assert clocks.sm_clocks(0) is None


class FakeHostNvml(FakeNvml):
    """Two GPUs of a host found by PCI bus id too, as NVML sees them whatever CUDA_VISIBLE_DEVICES says."""

    def nvmlDeviceGetHandleByPciBusId(self, bus_id: str) -> str:
        return {"00000000:1b:00.0": "gpu0", "00000000:43:00.0": "gpu1"}[bus_id]


def test_a_replicate_given_the_second_gpu_locks_its_own_not_its_neighbours(monkeypatch):
    """perfkit fleet --on-host gives replicate 2 CUDA_VISIBLE_DEVICES=<GPU 1>: its CUDA device 0 is NVML's
    GPU 1. Locked by NVML's index, it locked its neighbour's GPU and ran its own layers unlocked, 20% faster
    (two H200s, 2026-11-28)."""
    from perfkit.measure import nvml as nvml_module

    monkeypatch.setattr(nvml_module, "cuda_pci_bus_id", lambda index: ["00000000:43:00.0"][index])
    nvml = FakeHostNvml()
    with clocks.locked(1, "base", nvml):
        assert nvml.locked == {"gpu1": (clocks.TDP_LIMIT,) * 2}
    assert nvml.locked == {}
    reads: list[str] = []
    monkeypatch.setattr(nvml, "nvmlDeviceGetApplicationsClock",
                        lambda handle, clock: reads.append(handle) or 1755)
    assert clocks.sm_clocks(0, nvml) == "1755/1980 MHz" and reads == ["gpu1"]
