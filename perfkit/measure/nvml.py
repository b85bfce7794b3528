"""NVML (nvidia-ml-py), opened for a block and shut down after it: power, heat, clocks and the fingerprint
each read it for a moment, and NVML counts its inits, so every init needs its shutdown whatever the block
does."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from perfkit.errors import HardwareError


def load_nvml() -> ModuleType:
    """The initialised NVML binding, or a HardwareError saying why it cannot be used here."""
    try:
        import pynvml
    except ImportError:
        raise HardwareError("nvidia-ml-py is not installed (pip install -e '.[cuda]')") from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise HardwareError(f"NVML is unavailable ({exc}): no NVIDIA driver on this machine") from None
    return pynvml


@contextmanager
def nvml_open(binding: Any = None) -> Iterator[Any]:
    """NVML, initialised for the block and shut down after it; a HardwareError saying why where it cannot be
    used here. ``binding`` replaces nvidia-ml-py (tests pass a fake)."""
    if binding is None:
        nvml = load_nvml()
    else:
        binding.nvmlInit()
        nvml = binding
    try:
        yield nvml
    finally:
        nvml.nvmlShutdown()


def cuda_pci_bus_id(cuda_index: int) -> str | None:
    """The PCI bus id of a CUDA device, so NVML reads the same GPU whatever CUDA_VISIBLE_DEVICES says."""
    import torch

    if not torch.cuda.is_available():
        return None
    try:
        props = torch.cuda.get_device_properties(cuda_index)
    except (RuntimeError, AssertionError):  # a device CUDA cannot open: NVML's index is all there is
        return None
    ids = [getattr(props, f"pci_{part}_id", None) for part in ("domain", "bus", "device")]
    if any(i is None for i in ids):
        return None
    domain, bus, device = ids
    return f"{domain:08x}:{bus:02x}:{device:02x}.0"


def device_handle(nvml: Any, cuda_index: int) -> Any:
    """NVML's handle of CUDA device ``cuda_index`` (by PCI bus id where CUDA gives one): NVML numbers every
    GPU of the host, CUDA only those CUDA_VISIBLE_DEVICES lets it see, so on a replicate given the second
    GPU, NVML's index 0 is its neighbour's."""
    bus_id = cuda_pci_bus_id(cuda_index)
    if bus_id is not None:
        return nvml.nvmlDeviceGetHandleByPciBusId(bus_id)
    return nvml.nvmlDeviceGetHandleByIndex(cuda_index)
