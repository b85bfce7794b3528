from __future__ import annotations

import itertools
import time

import pytest
import torch

from perfkit.errors import HardwareError, UsageError
from perfkit.measure import timing


class FakeClock:
    """Advances by the next step each time it is read; counts reads."""

    def __init__(self, steps):
        self._steps = itertools.cycle(steps)
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += next(self._steps)
        return self.now


def test_time_host_turns_clock_reads_into_per_repetition_samples():
    calls = []
    clock = FakeClock([1.0, 0.25])  # start read, then end read 0.25 s later
    samples = timing.time_host(lambda: calls.append(1), repetitions=4, warmup_iterations=5, clock=clock)
    assert samples.seconds == (0.25, 0.25, 0.25, 0.25)
    assert len(calls) == 5 + 4  # warm-ups are run but not timed
    assert clock.reads == 8


def test_the_course_procedure_is_the_default():
    assert (timing.WARMUP_ITERATIONS, timing.TIMED_REPETITIONS) == (5, 10)
    clock = FakeClock([0.0, 1.0])
    calls = []
    samples = timing.time_host(lambda: calls.append(1), clock=clock)
    assert len(samples.seconds) == 10 and len(calls) == 15


def test_samples_median_and_relative_iqr():
    samples = timing.Samples((1.0, 2.0, 3.0, 4.0, 100.0))
    assert samples.median == 3.0
    assert samples.relative_iqr == pytest.approx((4.0 - 2.0) / 3.0)
    assert timing.Samples((2.0,)).relative_iqr == 0.0


@pytest.mark.parametrize("bad", [0, -3])
def test_repetitions_must_be_positive(bad):
    with pytest.raises(UsageError, match="at least 1"):
        timing.time_host(lambda: None, repetitions=bad)


def test_empty_samples_are_refused():
    with pytest.raises(UsageError):
        timing.Samples(())


def test_synchronized_clock_does_not_touch_cuda_when_it_is_not_in_use(monkeypatch):
    def forbidden():
        raise AssertionError("synchronize called without CUDA in use")

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "synchronize", forbidden)
    first = timing.synchronized_clock()
    assert timing.synchronized_clock() >= first


def test_synchronized_clock_waits_for_the_gpu_before_reading(monkeypatch):
    order = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: order.append("sync"))
    monkeypatch.setattr(timing.time, "perf_counter", lambda: order.append("read") or 1.0)
    timing.synchronized_clock()
    assert order == ["sync", "read"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without a GPU")
def test_cuda_event_timing_without_a_gpu_is_a_clear_error():
    with pytest.raises(HardwareError, match="needs a CUDA GPU"):
        timing.time_cuda_events(lambda: None)


def test_run_for_reads_the_clock_once_per_chunk_until_the_time_is_spent():
    calls = []
    clock = FakeClock([0.05])  # every read advances 50 ms
    done, elapsed = timing.run_for(lambda: calls.append(1), seconds=0.2, seconds_per_call=0.001, clock=clock)
    assert done == len(calls) == 4 * 50  # 50 calls of 1 ms per ~50 ms chunk, 4 chunks
    assert elapsed == pytest.approx(0.2) and clock.reads == 5


def test_run_for_needs_a_positive_duration():
    with pytest.raises(UsageError, match="seconds must be positive"):
        timing.run_for(lambda: None, 0, 1e-3)


def test_host_spans_time_each_region_on_the_cpu():
    regions = timing.spans(torch.device("cpu"))
    for seconds in (0.01, 0.03):
        with regions.region():
            time.sleep(seconds)
    first, second = regions.samples().seconds
    assert 0.01 <= first < second and second >= 0.03


def test_warm_for_keeps_the_operation_busy_for_the_time_asked_and_says_what_a_call_took():
    calls = []
    start = time.perf_counter()
    per_call = timing.warm_for(lambda: calls.append(time.sleep(0.001)), seconds=0.05)
    assert time.perf_counter() - start >= 0.05 and len(calls) >= 10
    assert 0.001 <= per_call < 0.05 / 10


@pytest.mark.parametrize(("per_call", "calls"), [(0.09e-3, 556), (1.7e-3, 30), (50e-3, 1), (0.2, 1),
                                                  (0.0, 50_000_000)])
def test_a_round_makes_enough_calls_to_last_fifty_milliseconds(per_call, calls):
    assert timing.calls_per_round(per_call) == calls


def test_without_a_gpu_no_input_is_taken_to_fit_in_l2():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert timing.l2_bytes() == 0


def test_on_a_cpu_a_round_is_one_call_and_nothing_runs_untimed_first():
    calls = []
    assert timing.warmed_calls_per_round(lambda: calls.append(1), torch.device("cpu")) == 1 and not calls
