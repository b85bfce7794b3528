"""GPU clocks: the SM clock every run records, and an opt-in lock of it for the run
(``--perfkit-lock-clocks``).

A GPU boosts its SM clock as power and temperature allow, so two runs of the same kernel can differ by the
clock they got; nvbench and MLPerf's timing rules lock the clock for that reason. Locking needs root and a
driver that allows it (``nvmlDeviceSetGpuLockedClocks``), and it changes the card for everyone else on a
shared machine, so it is asked for, never assumed: where the driver refuses, the run says so and goes on
unlocked. Every run records the clock it ran at in the fingerprint (application clock / maximum), so a
changed clock shows beside the verdicts.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from perfkit.errors import HardwareError
from perfkit.measure import power


def sm_clocks(index: int, nvml: Any = None) -> str | None:
    """``"<application>/<max> MHz"`` of GPU ``index``'s SM clock; None where NVML cannot say."""
    try:
        nvml = nvml or power.load_nvml()
    except HardwareError:
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        application = nvml.nvmlDeviceGetApplicationsClock(handle, nvml.NVML_CLOCK_SM)
        top = nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)
    except nvml.NVMLError:
        return None
    finally:
        nvml.nvmlShutdown()
    return f"{application}/{top} MHz"


@contextmanager
def locked(gpus: int, nvml: Any = None) -> Iterator[str]:
    """Lock every GPU's SM clock at its default application clock for the block, then reset it; yields what
    happened, in words ("locked at 1980 MHz on 2 GPUs", or why not)."""
    try:
        nvml = nvml or power.load_nvml()
    except HardwareError as exc:
        yield f"clocks not locked: {exc}"
        return
    done = []
    try:
        for index in range(gpus):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            mhz = nvml.nvmlDeviceGetDefaultApplicationsClock(handle, nvml.NVML_CLOCK_SM)
            nvml.nvmlDeviceSetGpuLockedClocks(handle, mhz, mhz)
            done.append((handle, mhz))
    except nvml.NVMLError as exc:
        for handle, _ in done:
            nvml.nvmlDeviceResetGpuLockedClocks(handle)
        nvml.nvmlShutdown()
        yield f"clocks not locked: the driver refused ({exc}); the run goes on at the clocks it finds"
        return
    try:
        yield f"clocks locked at {', '.join(sorted({f'{m} MHz' for _, m in done}))} on {len(done)} GPU(s)"
    finally:
        for handle, _ in done:
            nvml.nvmlDeviceResetGpuLockedClocks(handle)
        nvml.nvmlShutdown()
