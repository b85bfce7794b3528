"""A grid copy out of managed memory the host just wrote: how fast a first launch's reads migrate its pages.

A vector add's grid launch, first after the host wrote its inputs in managed memory, spends most of its time
moving their pages from host memory, fault by fault: the pace of the host link and of the driver, neither
the device's copy ceiling nor any datasheet's. This copy measures that pace on its own, as a ceiling
(benches/test_ceilings.py), so that the roofline model can expect the first launches' speedup across hardware
(perfkit.workloads.benchwork).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba import cuda

from perfkit.workloads.kernels import vector_add


@cuda.jit
def copy(src: Any, dst: Any) -> None:
    """One element per thread, as the vector add's grid launch reads its inputs."""
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[i]


def launcher(src: Any, dst: Any) -> Callable[[], None]:
    """A no-argument launch of the copy on the vector add's grid (one element per thread)."""
    blocks, threads = vector_add.launch_shape("grid", dst.size, sm_count=1)
    configured = copy[blocks, threads]
    return lambda: configured(src, dst)
