"""Run one measurement in a freshly spawned Python process and hand its result back.

Why: some process state changes in ways no memory check sees, and then changes what later measurements
in the same process time. The capacity searches hit one for real: when a convolution's cuDNN plan runs
out of memory for its workspace, PyTorch falls back to a leaner plan and caches it for that shape for the
rest of the process (``try_plans`` in aten/src/ATen/native/cudnn/Conv_v8.cpp). On an H200 the course's
110 + 110 layer stack then ran its forward in 60.3 ms instead of 36.6 ms, in every later test of the run.
A spawned process starts with empty caches, and whatever it leaves ends with it.
"""
from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from perfkit.errors import MeasurementError

T = TypeVar("T")


def run(measure: Callable[..., T], *args: Any) -> T:
    """``measure(*args)`` in a spawned process (``measure`` a module-level function, its arguments picklable).

    An exception it raises is raised here, as itself; a process that dies (killed, a crash in a library)
    becomes a :class:`~perfkit.errors.MeasurementError` that says so.
    """
    context = multiprocessing.get_context("spawn")  # fork would copy this process's CUDA state
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        try:
            return pool.submit(measure, *args).result()
        except BrokenProcessPool:
            raise MeasurementError(f"the fresh process running {measure.__name__} died before it answered "
                                   "(killed, or a crash inside a library); its log is above") from None
