"""Vector-add kernels under numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1, set before numba is imported).

Run only by tests/test_vector_add.py in a subprocess; timings here are meaningless and not asserted.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":  # pragma: no cover - guarded by conftest
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 before numba is imported", allow_module_level=True)

from numba import cuda

from perfkit.workloads.kernels import vector_add

SMS = 1  # a tiny simulated device keeps the tuned grid small, so its grid-stride loop really loops


def _run(scenario: str, n: int) -> None:
    rng = np.random.default_rng(n)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    dx, dy = cuda.to_device(x), cuda.to_device(y)
    dout = cuda.to_device(np.full(n, np.nan, dtype=np.float32))
    vector_add.launcher(scenario, dx, dy, dout, SMS)()
    np.testing.assert_array_equal(dout.copy_to_host(), x + y)


@pytest.mark.parametrize("scenario", vector_add.SCENARIOS)
@pytest.mark.parametrize("n", [1, 100, 256, 257, 1000, 2500])
def test_every_kernel_adds_every_element(scenario, n):
    _run(scenario, n)


@settings(max_examples=8, deadline=None)
@given(n=st.integers(min_value=1, max_value=1500), scenario=st.sampled_from(vector_add.SCENARIOS))
def test_every_kernel_is_correct_for_drawn_sizes(n, scenario):
    _run(scenario, n)
