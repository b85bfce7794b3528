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
def test_the_ceiling_counts_bytes_read_and_written_and_checks_the_copy(scenario):
    work = ceilings.one_sm_copy_workload(scenario, 300)
    assert work.amount == 2 * 300 * 4
    work.run()
    work.check()  # the copy it made while compiling, and this one, are right


def test_a_copy_that_went_wrong_is_refused(monkeypatch):
    monkeypatch.setattr(one_sm, "launcher", lambda scenario, src, dst: lambda: None)  # copies nothing
    work = ceilings.one_sm_copy_workload("one_block", 300)
    with pytest.raises(MeasurementError, match="one block copy's destination differs"):
        work.check()


def test_a_grid_is_not_one_multiprocessor():
    src = cuda.to_device(np.ones(4, dtype=np.float32))
    with pytest.raises(UsageError, match="one_thread"):
        one_sm.launcher("grid", src, src)


@pytest.mark.parametrize("n", [1, 256, 1000])
def test_the_first_touch_copies_what_the_host_wrote_before_each_call(monkeypatch, n):
    # the simulator has no managed memory; its mapped (host-resident, device-visible) arrays stand in
    monkeypatch.setattr(cuda, "managed_array", cuda.mapped_array, raising=False)
    work = ceilings.first_touch_workload(n)
    assert work.amount == n * 4 and work.setup is not None  # the bytes migrated: the source's
    work.setup()
    work.run()
    work.check()


def test_a_first_touch_that_copied_nothing_is_refused(monkeypatch):
    monkeypatch.setattr(cuda, "managed_array", cuda.mapped_array, raising=False)
    monkeypatch.setattr(first_touch, "launcher", lambda src, dst: lambda: None)
    with pytest.raises(MeasurementError, match="first touch's copy differs"):
        ceilings.first_touch_workload(300).check()
