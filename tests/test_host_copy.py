"""perfkit.measure.host_copy: the host's memory pace beside a CPU reference, and the figure over it."""
from __future__ import annotations

import numpy as np
import pytest

from perfkit.measure import host_copy


def test_the_copy_moves_the_source_bytes_into_the_target():
    source, target = np.arange(1000, dtype=np.float32), np.zeros(1000, dtype=np.float32)
    host_copy.copy_call(source, target)()
    assert np.array_equal(source, target)


@pytest.mark.parametrize("target", [np.zeros(999, dtype=np.float32),
                                    np.zeros((1000, 2), dtype=np.float32)[:, 0]])
def test_a_copy_between_unlike_buffers_is_refused(target):
    with pytest.raises(ValueError, match="contiguous arrays of as many bytes"):
        host_copy.copy_call(np.zeros(1000, dtype=np.float32), target)


def test_the_figure_over_the_copy_is_taken_core_by_core():
    assert host_copy.over_copy((0.3, 0.2), (0.1, 0.1)) == pytest.approx((3.0, 2.0))
    with pytest.raises(ValueError, match="2 cores timed the figure and 1 the copy"):
        host_copy.over_copy((0.3, 0.2), (0.1,))
