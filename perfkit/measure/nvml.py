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
