"""A float32 copy run by one thread or one block: the pace one multiprocessor streams memory at.

The vector add's one-thread and one-block launches are bound by neither the device's copy bandwidth nor its
FLOP rate but by how many loads one multiprocessor keeps in flight against the latency of memory. This copy
measures that pace on its own, as a ceiling (benches/test_ceilings.py), so that the roofline model can expect
their speedup across hardware (perfkit.workloads.benchwork) without timing the benchmark it predicts.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba import cuda

from perfkit.errors import UsageError
from perfkit.workloads.kernels import vector_add

#: The vector add's launch shapes that run on one multiprocessor.
SCENARIOS: tuple[str, ...] = ("one_thread", "one_block")


@cuda.jit
def copy(src: Any, dst: Any) -> None:
    """Each thread of the one block copies every blockDim-th element, as the vector add's one block adds."""
    for i in range(cuda.threadIdx.x, dst.size, cuda.blockDim.x):
        dst[i] = src[i]


def launcher(scenario: str, src: Any, dst: Any) -> Callable[[], None]:
    """A no-argument launch of the copy in ``scenario``'s shape (the vector add's <<<1, 1>>> or
    <<<1, 256>>>)."""
    if scenario not in SCENARIOS:
        raise UsageError(f"unknown one-multiprocessor scenario {scenario!r}; choose one of {SCENARIOS}")
    blocks, threads = vector_add.launch_shape(scenario, dst.size, sm_count=1)
    configured = copy[blocks, threads]
    return lambda: configured(src, dst)
