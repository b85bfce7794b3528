from __future__ import annotations

import itertools
import time

import pytest
import torch

from perfkit.errors import HardwareError, MeasurementError, UsageError
from perfkit.measure import fidelity, timing


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


class SimulatedGpu:
    """One stream and the host that feeds it, on two clocks: the host's advances as it issues launches, the
    stream runs each piece of work once the host has issued it and the work before it is done. Stands in for
    torch.cuda's events, spin kernel and synchronisation in time_queued's tests."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, spin_cycles_per_s: float = 1.5e9) -> None:
        self.host = self.free = 0.0
        self.rate, self.spins = spin_cycles_per_s, 0
        gpu = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.at = 0.0

            def record(self) -> None:
                self.at = max(gpu.host, gpu.free)

            def synchronize(self) -> None:
                gpu.host = max(gpu.host, self.at)

            def elapsed_time(self, end: Event) -> float:
                return (end.at - self.at) * 1e3

        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "synchronize", self.synchronize)
        monkeypatch.setattr(torch.cuda, "Event", Event)
        monkeypatch.setattr(torch.cuda, "_sleep", self.spin)
        monkeypatch.setattr(timing.time, "perf_counter", lambda: self.host)

    def synchronize(self) -> None:
        self.host = max(self.host, self.free)

    def spin(self, cycles: int) -> None:
        self.spins += 1
        self.free = max(self.host, self.free) + cycles / self.rate

    def step(self, launches: int, host_s: float, gpu_s: float, waits: bool = False):
        """A training step of ``launches`` kernels, each ``host_s`` to issue and ``gpu_s`` to run; ``waits``:
        it reads a result back halfway (a synchronisation)."""
        def call() -> None:
            for i in range(launches):
                self.host += host_s
                self.free = max(self.free, self.host) + gpu_s
                if waits and i == launches // 2:
                    self.synchronize()
        return call


def test_a_queued_call_is_timed_as_the_gpu_runs_it_not_as_the_host_issues_it(monkeypatch):
    gpu = SimulatedGpu(monkeypatch)
    step = gpu.step(100, host_s=10e-6, gpu_s=3e-6)  # 1 ms to issue, 0.3 ms of kernels
    samples = timing.time_queued(step, repetitions=5, host_s=1e-3)
    assert samples.seconds == pytest.approx((300e-6,) * 5) and gpu.spins == 5
    gpu.synchronize()
    start = gpu.host
    step()
    gpu.synchronize()
    assert gpu.host - start == pytest.approx(1e-3 + 3e-6)  # unheld, the host's pace


def test_a_hold_the_host_outlasts_is_doubled_and_the_call_timed_again(monkeypatch):
    gpu = SimulatedGpu(monkeypatch)
    step = gpu.step(100, host_s=50e-6, gpu_s=3e-6)  # 5 ms to issue, against a first hold of 2 ms
    samples = timing.time_queued(step, repetitions=4, host_s=1e-4)
    assert samples.seconds == pytest.approx((300e-6,) * 4) and gpu.spins == 5  # one sample timed again


def test_a_call_that_waits_on_the_gpu_cannot_be_queued_and_says_so(monkeypatch):
    gpu = SimulatedGpu(monkeypatch)
    with pytest.raises(MeasurementError, match="waits on the GPU"):
        timing.time_queued(gpu.step(100, host_s=10e-6, gpu_s=3e-6, waits=True), repetitions=3, host_s=1e-3)
    assert gpu.spins == timing.QUEUE_RETRIES + 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without a GPU")
def test_queued_timing_without_a_gpu_is_a_clear_error():
    with pytest.raises(HardwareError, match="needs a CUDA GPU"):
        timing.time_queued(lambda: None, 3, 1e-3)


def test_events_queued_ten_at_a_time_let_the_host_wait_between_tens(monkeypatch):
    """A hundred held launches queued at once keep the host launching while the GPU runs them (their kernels
    read slower on an H200); ``queued`` makes the host wait for each ten first, and the kernel alone is timed
    either way."""
    gpu = SimulatedGpu(monkeypatch)
    waits = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: waits.append(gpu.host) or gpu.synchronize())
    kernel = gpu.step(1, host_s=50e-6, gpu_s=8e-6)
    at_once = timing.time_cuda_events(kernel, repetitions=30, warmup_iterations=0, hold=True)
    assert at_once.seconds == pytest.approx((8e-6,) * 30) and len(waits) == 1  # the host waited at the end
    waits.clear()
    tens = timing.time_cuda_events(kernel, repetitions=30, warmup_iterations=0, hold=True, queued=10)
    assert tens.seconds == pytest.approx((8e-6,) * 30) and len(waits) == 3
    assert waits[1] - waits[0] > 10 * timing.HOLD_CYCLES / gpu.rate  # each ten ran whole before the next
    with pytest.raises(UsageError, match="queued at least 0"):
        timing.time_cuda_events(kernel, repetitions=30, queued=-1)


def test_the_graph_replays_work_reaches_every_spread_element_in_a_replays_worth_of_launches():
    """A replay of REPLAY_ADDRESSES launches touches every element, one after the other; one launch short
    leaves one untouched, which the check names."""
    work = fidelity.spread_elements(torch.device("cpu"))
    for _ in range(fidelity.REPLAY_ADDRESSES - 1):
        work.run()
    with pytest.raises(MeasurementError, match="every element"):
        work.check()
    work.run()
    work.check()
