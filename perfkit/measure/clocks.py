"""GPU clocks: the SM clock every run records, and a lock of it (``--perfkit-lock-clocks``).

A GPU boosts its SM clock as power and temperature allow, so two runs of the same kernel can differ by the
clock they got; nvbench and MLPerf's timing rules lock the clock for that reason. Locking needs root and a
driver that allows it (``nvmlDeviceSetGpuLockedClocks``), and it changes the card for everyone else on a
shared machine while it holds: so by default only the kernel benchmarks (ceilings, layers, timer fidelity)
are timed locked, each for its own run, as nvbench times kernels, while whole models train at the clocks a
user gets. Where the driver refuses, the run says so and goes on unlocked. Every run records the clock it
ran at in the fingerprint (application clock / maximum, or the locked clock) and each locked benchmark its
clock (perfkit.resultfile.payloads.ClockLock), so a changed clock shows beside the verdicts.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from perfkit.errors import HardwareError, UsageError
from perfkit.measure.nvml import device_handle, nvml_open


def sm_clocks(index: int, binding: Any = None) -> str | None:
    """``"<application>/<max> MHz"`` of CUDA device ``index``'s SM clock; None where NVML cannot say
    (``binding``: as :func:`perfkit.measure.nvml.nvml_open`'s)."""
    try:
        with nvml_open(binding) as nvml:
            try:
                handle = device_handle(nvml, index)
                application = nvml.nvmlDeviceGetApplicationsClock(handle, nvml.NVML_CLOCK_SM)
                top = nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)
            except nvml.NVMLError:
                return None
    except HardwareError:
        return None
    return f"{application}/{top} MHz"


#: nvmlDeviceSetGpuLockedClocks's symbolic limit "the clock the GPU sustains at its TDP" (nvml.h's
#: NVML_CLOCK_LIMIT_ID_TDP), which nvbench's ``--lock-gpu-clocks base`` locks to.
TDP_LIMIT = 0xFFFFFF01
#: What ``--perfkit-lock-clocks`` locks to: ``base``, the clock the GPU holds at its power limit, or ``max``,
#: its default application clock (the boost clock, which a power-limited kernel cannot hold).
RATES = ("base", "max")
#: ``--perfkit-lock-clocks``: ``kernels`` (the default) times the kernel benchmarks (marked ``locked_clock``)
#: at the base clock, each for its own run; ``base``/``max`` lock the whole run; ``off`` locks nothing.
KERNELS, OFF = "kernels", "off"
MODES = (KERNELS, *RATES, OFF)


@dataclass(frozen=True)
class Lock:
    """What a lock did: in words for the run's output, and the fingerprint's ``sm_clock`` while it holds
    (None where no GPU was locked)."""

    said: str
    sm_clock: str | None = None


@contextmanager
def locked(gpus: int, rate: str = "base", binding: Any = None) -> Iterator[Lock]:
    """Lock the SM clock of each of this process's ``gpus`` CUDA devices (by PCI bus id: under
    CUDA_VISIBLE_DEVICES NVML's index 0 may be a neighbour's GPU) for the block, then reset it; yields what
    happened (:class:`Lock`: "clocks locked at the base clock on 2 GPU(s)", or why not).

    ``base`` (the default, as nvbench's) holds a clock the GPU can keep at its power limit, so a tensor-core
    GEMM no longer runs at whatever clock its power and temperature allow: on an H100, two runs of the
    ceilings and layers locked there spread 0.6% on tf32 (three unlocked: 2.5%), 1.1% on fp16 (2.0%), 2.0% on
    bf16 (2.5%), and every kernel that held a higher clock unlocked ran 13-23% slower. ``max`` locks the
    boost clock, which a power-limited kernel leaves anyway. ``binding``: as :func:`sm_clocks`'s."""
    if rate not in RATES:
        raise UsageError(f"unknown clock lock {rate!r}; choose one of {', '.join(RATES)}")
    if gpus < 1:
        yield Lock("clocks not locked: this run uses no GPU")
        return
    with ExitStack() as held:  # on leaving: the locked GPUs reset, then NVML shut down
        try:
            nvml = held.enter_context(nvml_open(binding))
        except HardwareError as exc:
            yield Lock(f"clocks not locked: {exc}")
            return
        done: list[Any] = []
        held.callback(_reset, nvml, done)
        try:
            for index in range(gpus):
                handle = device_handle(nvml, index)
                limit = (
                    TDP_LIMIT if rate == "base"
                    else nvml.nvmlDeviceGetDefaultApplicationsClock(handle, nvml.NVML_CLOCK_SM)
                )
                nvml.nvmlDeviceSetGpuLockedClocks(handle, limit, limit)
                done.append(handle)
        except nvml.NVMLError as exc:
            held.close()  # the GPUs locked before the refusal are reset before the run goes on
            said = f"the driver refused ({exc}); the run goes on at the clocks it finds"
            yield Lock(f"clocks not locked: {said}")
            return
        top = nvml.nvmlDeviceGetMaxClockInfo(done[0], nvml.NVML_CLOCK_SM)
        if rate == "base":  # the driver's own base clock: an idle GPU reads its idle clock, not this one
            yield Lock(f"clocks locked at the base clock on {len(done)} GPU(s)", f"base/{top} MHz locked")
        else:
            yield Lock(f"clocks locked at the default application clock ({limit} MHz) on {len(done)} GPU(s)",
                       f"{limit}/{top} MHz locked")


def _reset(nvml: Any, handles: list[Any]) -> None:
    for handle in handles:
        nvml.nvmlDeviceResetGpuLockedClocks(handle)
