"""The machine's own roofline ceilings: copy bandwidth, large-matmul FLOP/s per precision, and on a GPU the
copy rate of one thread or one block (one multiprocessor's pace against the latency of memory) and the rate
at which a grid's first touch migrates managed pages from the host.

Measured, then kept beside the datasheet values, never hard-coded as the only truth. Later
benchmark families report "% of measured peak" against them (perfkit.resultfile.derived: this run's
ceilings, else the stored baseline's).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from perfkit.errors import MeasurementError, UsageError
from perfkit.resultfile.datasheet import PRECISIONS

_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
#: torch.set_float32_matmul_precision: "highest" is IEEE fp32, "high" lets cuBLAS use TF32.
_FLOAT32_MODE = {"fp32": "highest", "tf32": "high"}


#: Largest |error| / max|reference| accepted for a product in each precision (a fast wrong answer fails).
_MATMUL_TOLERANCE = {"fp32": 1e-4, "tf32": 1e-2, "bf16": 3e-2, "fp16": 1e-2}


@dataclass(frozen=True)
class Operation:
    """A callable, how much it does per call (so rates follow from measured times) and its correctness
    check."""

    run: Callable[[], Any]
    amount: float
    check: Callable[[], None]
    setup: Callable[[], None] | None = None  # untimed, before each call (its calls then go one a round)


def copy_workload(device: torch.device, nbytes: int) -> Operation:
    """Device-to-device copy; counts bytes read + written (2 × nbytes), as nccl-tests and STREAM do."""
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.zeros_like(src)

    def check() -> None:
        if not torch.equal(dst, src):
            raise MeasurementError("the copy's destination differs from its source")

    return Operation(lambda: dst.copy_(src), 2.0 * src.numel() * 4, check)


def matmul_workload(device: torch.device, n: int, precision: str) -> Operation:
    """An n×n×n product on random data (zeros run faster on tensor cores); 2·n³ FLOPs (FMA = 2)."""
    if precision not in _DTYPES:
        raise UsageError(f"unknown precision {precision!r}; choose one of {PRECISIONS}")
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, dtype=_DTYPES[precision], generator=gen)
    b = torch.randn(n, n, device=device, dtype=_DTYPES[precision], generator=gen)
    out = torch.empty_like(a)

    def check() -> None:
        """Compare a 64×64 corner with a float64 product of the same inputs."""
        ref = a[:64].double() @ b[:, :64].double()
        error = ((out[:64, :64].double() - ref).abs().max() / ref.abs().max()).item()
        if error > _MATMUL_TOLERANCE[precision]:
            raise MeasurementError(f"{precision} matmul is wrong: relative error {error:.2e}")

    return Operation(lambda: torch.mm(a, b, out=out), 2.0 * n**3, check)


#: Makes a numba kernel's launch on the device arrays it is given (perfkit.workloads.kernels).
Launcher = Callable[..., Callable[[], None]]


def one_sm_copy_workload(scenario: str, n: int, launcher: Launcher) -> Operation:
    """A float32 copy of ``n`` elements by one thread or one block (numba.cuda: needs the ``cuda`` extra);
    counts bytes read + written, as the device copy does. ``launcher(scenario, src, dst)``: the copy's kernel
    (perfkit.workloads.kernels.one_sm's), passed in, as the measuring side imports no workload."""
    import numpy as np
    from numba import cuda

    host = np.arange(n, dtype=np.float32)
    src, dst = cuda.to_device(host), _numba_destination(n)
    launch = launcher(scenario, src, dst)
    return _numba_copy(launch, dst, lambda: host, 2.0 * n * 4, f"the {scenario.replace('_', ' ')} copy")


def first_touch_workload(n: int, launcher: Launcher) -> Operation:
    """A grid's copy of ``2n`` float32 elements (as many bytes as the vector add's x and y of ``n``) out of
    managed memory into device memory, each call after the host wrote the source again (``setup``: writing
    every page on the host moves it back there), so that every call migrates the source's pages; counts the
    bytes migrated. The host writes one of two buffers in turn, so the check sees the last call's copy.
    ``launcher(src, dst)``: the copy's kernel (perfkit.workloads.kernels.first_touch's), passed in."""
    import numpy as np
    from numba import cuda

    buffers = (np.arange(2 * n, dtype=np.float32), np.arange(2 * n, 0, -1, dtype=np.float32))
    written: list[Any] = [buffers[1]]
    src, dst = cuda.managed_array(2 * n, dtype=np.float32), _numba_destination(2 * n)

    def host_writes() -> None:
        written[0] = buffers[0] if written[0] is buffers[1] else buffers[1]
        src[:] = written[0]

    host_writes()
    return _numba_copy(launcher(src, dst), dst, lambda: written[0], 2.0 * n * 4,
                       "the first touch's copy", host_writes)


def _numba_destination(n: int) -> Any:
    """A float32 device array for a numba kernel to copy into, with torch's CUDA initialised: perfkit's
    synchronizing clock waits through torch's device synchronize, which waits for numba's launches too (both
    run in the device's primary context)."""
    import numpy as np
    from numba import cuda

    if torch.cuda.is_available():  # not under numba's simulator
        torch.cuda.init()
    return cuda.device_array(n, dtype=np.float32)


def _numba_copy(launch: Callable[[], None], dst: Any, expected: Callable[[], Any], amount: float, what: str,
                setup: Callable[[], None] | None = None) -> Operation:
    """``launch`` compiled by one call, then ``dst`` filled with NaN, so that the check after the timed calls
    sees what they copied (``expected()``: the source as it was last written)."""
    import numpy as np

    launch()
    dst.copy_to_device(np.full(dst.size, np.nan, dtype=np.float32))

    def check() -> None:
        if not np.array_equal(dst.copy_to_host(), expected()):
            raise MeasurementError(f"{what}'s destination differs from its source")

    return Operation(launch, amount, check, setup)


@contextlib.contextmanager
def float32_matmul(precision: str) -> Iterator[None]:
    """Make fp32 matmuls IEEE fp32 or TF32 for the block, then restore the global setting."""
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(_FLOAT32_MODE.get(precision, previous))
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


def precision_in_use(op: str, device: torch.device, dtype: torch.dtype = torch.float32) -> str:
    """The math a float op really runs, so a percent-of-peak uses the matching ceiling.

    ``op`` is "conv" (cuDNN: TF32 for float32 unless torch.backends.cudnn.allow_tf32 is off, the
    default on) or "matmul" (cuBLAS: TF32 only when float32 matmul precision is not "highest").
    A CPU computes float32 in fp32.
    """
    if dtype == torch.bfloat16:
        return "bf16"
    if dtype == torch.float16:
        return "fp16"
    if dtype != torch.float32:
        raise UsageError(f"no ceiling for {dtype}; perfkit measures {', '.join(PRECISIONS)}")
    if device.type != "cuda":
        return "fp32"
    if op == "conv":
        return "tf32" if torch.backends.cudnn.allow_tf32 else "fp32"
    if op == "matmul":
        return "fp32" if torch.get_float32_matmul_precision() == "highest" else "tf32"
    raise UsageError(f"unknown op kind {op!r}; use 'conv' or 'matmul'")
