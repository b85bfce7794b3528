"""The kernels of the ceilings no datasheet lists, under numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1): one
multiprocessor's copy and a grid's first touch of managed memory.

Run only by tests/test_vector_add.py in a subprocess; timings here are meaningless and not asserted.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":  # pragma: no cover - guarded by conftest
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 before numba is imported", allow_module_level=True)

from numba import cuda

from perfkit.errors import MeasurementError, UsageError
from perfkit.measure import ceilings
from perfkit.workloads.kernels import first_touch, one_sm


@pytest.mark.parametrize("scenario", one_sm.SCENARIOS)
@pytest.mark.parametrize("n", [1, 255, 256, 257, 1000])
def test_one_thread_and_one_block_copy_every_element(scenario, n):
    src = cuda.to_device(np.arange(n, dtype=np.float32))
    dst = cuda.to_device(np.full(n, np.nan, dtype=np.float32))
    one_sm.launcher(scenario, src, dst)()
    np.testing.assert_array_equal(dst.copy_to_host(), np.arange(n, dtype=np.float32))


@pytest.mark.parametrize("scenario", one_sm.SCENARIOS)
def test_the_ceiling_counts_bytes_read_and_written_and_checks_the_timed_calls_copy(scenario):
    work = ceilings.one_sm_copy_workload(scenario, 300, one_sm.launcher)
    assert work.amount == 2 * 300 * 4 and work.setup is None
    with pytest.raises(MeasurementError, match="copy's destination differs"):
        work.check()  # compiled by one call, then emptied: no timed call has copied yet
    work.run()
    work.check()


def test_a_grid_is_not_one_multiprocessor():
    src = cuda.to_device(np.ones(4, dtype=np.float32))
    with pytest.raises(UsageError, match="one_thread"):
        one_sm.launcher("grid", src, src)


@pytest.fixture
def managed(monkeypatch):
    """The simulator has no managed memory; its mapped (host-resident, device-visible) arrays stand in."""
    monkeypatch.setattr(cuda, "managed_array", cuda.mapped_array, raising=False)


@pytest.mark.parametrize("n", [1, 256, 1000])
def test_the_first_touch_copies_what_the_host_wrote_before_each_call(managed, n):
    work = ceilings.first_touch_workload(n, first_touch.launcher)
    assert work.amount == 2 * n * 4 and work.setup is not None  # as many bytes as the vector add's x and y
    for _ in range(3):  # the host writes one of two sources in turn: each call's copy is checked
        work.setup()
        with pytest.raises(MeasurementError, match="first touch's copy's destination differs"):
            work.check()  # written, not yet copied
        work.run()
        work.check()
