"""Sending managed memory's pages back to host memory in bulk, with the driver's prefetch.

A first launch on managed memory is timed right after its pages were moved to the host. The host's write of
every page moves them back one CPU fault at a time: at 100 M elements that took 0.29-0.34 s for x and y on an
H200 (numba's write of 800 MB), where the prefetch takes about 0.05 s, and the launch that follows each reads
the same pages from host memory. numba-cuda has no call for it: this binds the driver's through ctypes.
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from numba import cuda

#: CUmemLocationType's host memory (cuda.h), and the old API's device ordinal of the CPU.
_LOCATION_HOST, _DEVICE_CPU = 2, -1


class _Location(ctypes.Structure):
    """CUmemLocation: where a prefetch sends the pages (the host's id is ignored)."""

    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


def _driver_prefetch() -> Callable[[int, int], int]:
    """The driver's prefetch to host memory on the default stream, as (device pointer, bytes) -> CUresult:
    cuMemPrefetchAsync_v2 with a host location (drivers of CUDA 12.2 and later), else the old entry point's
    CU_DEVICE_CPU."""
    libcuda = ctypes.CDLL("libcuda.so.1")
    if hasattr(libcuda, "cuMemPrefetchAsync_v2"):
        call = libcuda.cuMemPrefetchAsync_v2
        call.argtypes = [ctypes.c_uint64, ctypes.c_size_t, _Location, ctypes.c_uint, ctypes.c_void_p]
        host = _Location(_LOCATION_HOST, 0)
        return lambda pointer, size: call(pointer, size, host, 0, None)
    old = libcuda.cuMemPrefetchAsync
    old.argtypes = [ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    return lambda pointer, size: old(pointer, size, _DEVICE_CPU, None)


def to_host() -> Callable[..., None]:
    """A call that prefetches each managed array given to host memory and waits until they are there."""
    prefetch = _driver_prefetch()

    def send_back(*arrays: Any) -> None:
        for array in arrays:
            status = prefetch(array.device_ctypes_pointer.value, array.nbytes)
            if status:
                raise RuntimeError(f"the driver's prefetch of managed memory to the host failed "
                                   f"(CUresult {status})")
        cuda.synchronize()

    return send_back
