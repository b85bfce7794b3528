from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfkit.errors import UsageError
from perfkit.resultfile import comm


def test_busbw_follows_nccl_tests():
    assert comm.busbw(2e9, 1.0, 2) == pytest.approx(2e9)  # 2(n-1)/n = 1 on two ranks
    assert comm.busbw(2e9, 1.0, 4) == pytest.approx(3e9)  # 1.5 on four
    assert comm.busbw(2e9, 1.0, 4, "all_gather") == pytest.approx(1.5e9)
    assert comm.bus_factor(1) == 0.0


def test_course_formula_is_busbw_of_the_same_time():
    params, ranks, seconds = 11_689_512, 4, 0.01
    course = comm.course_allreduce_bytes(params, ranks) / seconds
    assert course == pytest.approx(comm.busbw(params * 4, seconds, ranks))
    assert comm.course_allreduce_bytes(params, 2) / 2**30 == pytest.approx(
        0.0435, abs=1e-3
    )  # seed 004's 0.044 GB


def test_bad_collective_inputs_are_refused():
    with pytest.raises(UsageError):
        comm.algbw(1.0, 0.0)
    with pytest.raises(UsageError):
        comm.bus_factor(0)


def test_overlap_of_known_intervals():
    nccl = [(0.0, 4.0), (10.0, 12.0)]
    compute = [(1.0, 2.0), (1.5, 3.0), (11.0, 20.0)]
    assert comm.total(compute) == pytest.approx(11.0)
    assert comm.overlap(nccl, compute) == pytest.approx(2.0 + 1.0)


intervals = st.lists(
    st.tuples(st.floats(0, 100), st.floats(0, 10)).map(lambda t: (t[0], t[0] + t[1])), max_size=12
)


@given(intervals, intervals)
def test_overlap_is_symmetric_and_bounded(a, b):
    both = comm.overlap(a, b)
    assert both == pytest.approx(comm.overlap(b, a))
    assert -1e-9 <= both <= min(comm.total(a), comm.total(b)) + 1e-9
    assert comm.overlap(a, a) == pytest.approx(comm.total(a))
