"""``out = x + y`` on float32 in numba.cuda: the course's launch scenarios and a tuned kernel.

one_thread <<<1, 1>>> loops over all n; one_block <<<1, 256>>> strides by the block; grid
<<<ceil(n/256), 256>>> gives each thread one element (the course's scenario c); tuned is a
grid-stride loop with 8-byte loads (float32 pairs read as complex64) and two pairs in flight per
iteration, on a grid sized from the multiprocessor count, so every SM keeps enough bytes in
flight to saturate memory bandwidth without launching hundreds of thousands of short blocks.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import cuda

from perfkit.errors import HardwareError, UsageError

THREADS = 256
#: Elements each tuned thread keeps in flight per loop iteration (two complex64 pairs).
ILP = 4
#: Blocks per multiprocessor for the tuned grid. Measured on an H200 at 100 M elements with the
#: kernel alone (batched CUDA events): 4 blocks/SM 4.16 TB/s, 8: 3.98, 16: 4.01, 32: 4.13;
#: float32 loads with ILP 4 reached 4.05 and one element per thread (grid) 3.45; torch.add 4.33.
BLOCKS_PER_SM = 4
SCENARIOS: tuple[str, ...] = ("one_thread", "one_block", "grid", "tuned")
BYTES_PER_ELEMENT = 3 * 4  # read x, read y, write out; float32


@cuda.jit
def one_thread(x: Any, y: Any, out: Any) -> None:
    for i in range(out.size):
        out[i] = x[i] + y[i]


@cuda.jit
def one_block(x: Any, y: Any, out: Any) -> None:
    for i in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):
        out[i] = x[i] + y[i]


@cuda.jit
def grid(x: Any, y: Any, out: Any) -> None:
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + y[i]


@cuda.jit
def tuned(x2: Any, y2: Any, out2: Any, x: Any, y: Any, out: Any) -> None:
    """Pairs of float32 read as one complex64 (8-byte loads; complex addition is two float32 adds),
    two independent pairs in flight per iteration of a grid-stride loop; thread 0 adds an odd tail."""
    stride = cuda.gridsize(1)
    pairs = out2.size
    i = cuda.grid(1)
    while i + stride < pairs:
        a0, a1 = x2[i], x2[i + stride]
        b0, b1 = y2[i], y2[i + stride]
        out2[i] = a0 + b0
        out2[i + stride] = a1 + b1
        i += 2 * stride
    while i < pairs:
        out2[i] = x2[i] + y2[i]
        i += stride
    if cuda.grid(1) == 0 and out.size % 2 == 1:
        last = out.size - 1
        out[last] = x[last] + y[last]


KERNELS = {"one_thread": one_thread, "one_block": one_block, "grid": grid, "tuned": tuned}


def launch_shape(scenario: str, n: int, sm_count: int) -> tuple[int, int]:
    """(blocks, threads per block) of each scenario for n elements on a device with sm_count SMs."""
    if scenario == "one_thread":
        return 1, 1
    if scenario == "one_block":
        return 1, THREADS
    if scenario == "grid":
        return math.ceil(n / THREADS), THREADS
    if scenario == "tuned":
        return max(1, min(math.ceil(n / (THREADS * ILP)), sm_count * BLOCKS_PER_SM)), THREADS
    raise UsageError(f"unknown scenario {scenario!r}; choose one of {SCENARIOS}")


def launcher(scenario: str, x: Any, y: Any, out: Any, sm_count: int) -> Callable[[], None]:
    """A no-argument launch of ``scenario`` on these arrays, with shapes and views prepared once,
    so repeated launches cost only numba's own dispatch."""
    blocks, threads = launch_shape(scenario, out.size, sm_count)
    if scenario == "tuned":
        even = out.size - out.size % 2
        pairs = [_device_view(a)[:even].view(np.complex64) for a in (x, y, out)]
        configured, args = tuned[blocks, threads], (*pairs, x, y, out)
    else:
        configured, args = KERNELS[scenario][blocks, threads], (x, y, out)
    return lambda: configured(*args)


def _device_view(array: Any) -> Any:
    """Managed arrays are numpy subclasses whose view() cannot reinterpret device memory: wrap them."""
    return cuda.as_cuda_array(array) if isinstance(array, np.ndarray) else array


def sm_count() -> int:
    return int(cuda.get_current_device().MULTIPROCESSOR_COUNT)


def require_device_memory(n: int, what: str = "device", sets: int = 1, also: int = 0) -> None:
    """Refuse, before allocating anything, a size whose three arrays (``sets`` times) and ``also`` more arrays
    of ``n`` float32 (a first touch's copies) do not fit in free device memory."""
    need = BYTES_PER_ELEMENT * n * sets + 4 * n * also
    free, _ = cuda.current_context().get_memory_info()
    if need > free:
        copies = (f" in {sets} placements" if sets > 1 else "") + (f" and {also} more arrays" if also else "")
        raise HardwareError(
            f"{n / 1e6:g} million elements need {need / 2**30:.2f} GiB of {what} memory for x, y and out"
            f"{copies}, but only {free / 2**30:.2f} GiB is free; choose a smaller K"
        )
