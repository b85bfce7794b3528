"""Warming a power-limited kernel until its heat is steady, driven by a scripted temperature."""
from __future__ import annotations

import contextlib
import functools
import time

import pytest
import torch

from perfkit.measure import heat, timing
from perfkit.measure import nvml as nvml_binding
from perfkit.resultfile import inject
from perfkit.resultfile.metrics import MetricRecorder
from tests.test_power import FakeNvml as FakePowerNvml

SLICE = 0.01  # seconds of back-to-back work between two readings (0.5 on a GPU)


def scripted(*temperatures: int):
    """A reader that gives ``temperatures`` in turn, then the last one forever; counts its reads."""
    reads = []

    def read() -> int:
        reads.append(None)
        return temperatures[min(len(reads), len(temperatures)) - 1]

    return read, reads


def test_warms_while_the_temperature_rises_and_stops_once_it_is_flat():
    read, reads = scripted(38, 45, 50, 54, 57, 59, 60, 61, 61, 61, 61, 61)
    calls = []
    warmed = heat.warm_until_steady(lambda: calls.append(1), read, window_s=4 * SLICE, slice_s=SLICE)
    assert (warmed.start_c, warmed.end_c) == (38, 61)
    # steady once a reading is no warmer than four slices before: the 12th (61, as the 8th), not the 11th (60)
    assert len(reads) == 12
    assert warmed.seconds_per_call > 0 and calls


def test_an_already_hot_gpu_warms_for_one_window_only():
    read, reads = scripted(61, 62, 61, 61, 62, 61)
    warmed = heat.warm_until_steady(lambda: None, read, window_s=2 * SLICE, slice_s=SLICE)
    assert len(reads) == 3  # start, after the first slice, after the second: 61 <= 61
    assert warmed.warmed_s < 1.0


def test_a_temperature_that_never_settles_stops_at_the_limit():
    rising = iter(range(30, 10_000))
    warmed = heat.warm_until_steady(lambda: None, lambda: next(rising), window_s=2 * SLICE, limit_s=0.1,
                                    slice_s=SLICE)
    assert 0.1 <= warmed.warmed_s < 0.5
    assert warmed.end_c > warmed.start_c


def test_without_a_temperature_it_warms_as_every_other_kernel():
    warmed = heat.warm_until_steady(lambda: None, None)
    assert warmed.warmed_s == timing.STEADY_CLOCK_S
    assert warmed.as_info() == {"warmed_s": timing.STEADY_CLOCK_S, "start_c": None, "end_c": None,
                                "steady": None}


def test_a_warm_up_cut_at_its_limit_says_so():
    rising = iter(range(30, 10_000))
    warmed = heat.warm_until_steady(lambda: None, lambda: next(rising), window_s=2 * SLICE, limit_s=0.1,
                                    slice_s=SLICE)
    assert warmed.steady is False and warmed.as_info()["steady"] is False
    read, _ = scripted(70, 68, 66, 66)  # hot from what ran before, cooling: steady at once
    assert heat.warm_until_steady(lambda: None, read, window_s=2 * SLICE, slice_s=SLICE).steady is True


def test_a_window_shorter_than_a_slice_still_compares_two_readings():
    read, reads = scripted(40, 50, 60, 60)
    heat.warm_until_steady(lambda: None, read, window_s=SLICE / 10, slice_s=SLICE)
    assert len(reads) == 4  # 50 > 40, 60 > 50, then 60 <= 60


def test_a_cpu_is_not_warmed_and_records_no_heat():
    extra: dict = {}
    assert heat.warmed_calls_per_round(lambda: None, torch.device("cpu"), MetricRecorder(extra)) == 1
    assert "heat" not in extra


class FakeNvml:
    """NVML with one GPU at ``celsius``, counting its inits and shutdowns; ``broken`` fails every reading."""

    NVML_TEMPERATURE_GPU = 0

    class NVMLError(Exception):
        pass

    def __init__(self, celsius: int = 50, broken: bool = False) -> None:
        self.celsius, self.broken, self.open = celsius, broken, 0

    def init(self) -> FakeNvml:
        self.open += 1
        return self

    def nvmlShutdown(self) -> None:
        self.open -= 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        if self.broken:
            raise self.NVMLError("not supported")
        return self.celsius


@pytest.mark.parametrize("broken", [False, True])
def test_the_temperature_reader_shuts_nvml_down_and_falls_back_without_a_reading(monkeypatch, broken):
    nvml = FakeNvml(celsius=61, broken=broken)
    monkeypatch.setattr(nvml_binding, "load_nvml", nvml.init)
    monkeypatch.setattr(nvml_binding, "cuda_pci_bus_id", lambda index: None)
    with heat.temperature_reader(torch.device("cuda", 0)) as read_c:
        assert nvml.open == 1
        assert (read_c is None) is broken
        if read_c is not None:
            assert read_c() == 61
    assert nvml.open == 0


class ClockingNvml(FakePowerNvml):
    """A GPU whose SM clock alternates between 1400 and 1600 MHz from one reading to the next."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def nvmlDeviceGetClockInfo(self, handle: str, clock: int) -> int:
        self.reads += 1
        return 1400 if self.reads % 2 else 1600


def test_a_power_limited_kernel_gates_on_its_cycles_at_the_clock_it_held(monkeypatch):
    nvml = ClockingNvml()
    monkeypatch.setattr(heat.power, "unavailable_reason", lambda: None)
    monkeypatch.setattr(heat.power, "PowerSampler", functools.partial(heat.power.PowerSampler, nvml=nvml))
    monkeypatch.setattr(nvml_binding, "cuda_pci_bus_id", lambda index: None)
    with heat.sm_clock(torch.device("cuda", 0), interval_s=0.002) as clock:
        time.sleep(0.1)
    assert clock.readings >= 10 and (clock.low_mhz, clock.high_mhz) == (1400, 1600)
    assert 1400 < clock.mean_mhz < 1600 and nvml.shutdowns == nvml.inits
    extra: dict = {}
    heat.gate_on_cycles(MetricRecorder(extra), [0.003, 0.004], clock)
    cycles = extra["metrics"]["sm_mcycles"]
    assert cycles["samples"] == pytest.approx([0.003 * clock.mean_mhz, 0.004 * clock.mean_mhz])
    assert cycles["unit"] == "Mcycles" and extra["gate"] == "sm_mcycles"
    assert extra["sm_clock"]["readings"] == clock.readings


def test_without_a_clock_reading_the_time_stays_the_gate():
    with heat.sm_clock(torch.device("cpu")) as clock:
        pass
    extra: dict = {}
    heat.gate_on_cycles(MetricRecorder(extra), [0.003], clock)
    assert clock.mean_mhz is None and extra == {}


def test_an_injected_slowdown_scales_cycles_as_it_scales_time():
    entry = {"fullname": "benches/test_ceilings.py::test_matmul_flops[tf32]",
             "stats": {"median": 0.003, "data": [0.003]},
             "extra_info": {"metrics": {"sm_mcycles": {"value": 4.5, "unit": "Mcycles", "better": "lower"}}}}
    inject.apply(entry, {inject.ENV: "*tf32*=1.10"})
    assert entry["extra_info"]["metrics"]["sm_mcycles"]["value"] == pytest.approx(4.95)


def _clock_of(low: float, high: float, watts: float):
    """heat.sm_clock that reports ``low``..``high`` MHz at ``watts`` over the block."""
    @contextlib.contextmanager
    def fake(device, interval_s=heat.CLOCK_INTERVAL_S):
        window = heat.ClockWindow()
        yield window
        window.mean_mhz, window.low_mhz, window.high_mhz, window.readings = (low + high) / 2, low, high, 100
        window.power_w = watts
    return fake


@pytest.mark.parametrize("low,high,watts,warmed_by_heat", [
    (1590, 1590, 450, False),  # a held clock well below the limit
    (1335, 1515, 700, True),  # a moving clock at the limit
    (1500, 1500, 690, True),  # held so far, but at the limit: it will fall as the die warms
])
def test_only_a_kernel_below_the_power_limit_with_a_held_clock_skips_settling_its_heat(
        monkeypatch, low, high, watts, warmed_by_heat):
    monkeypatch.setattr(heat, "sm_clock", _clock_of(low, high, watts))
    monkeypatch.setattr(heat.power, "enforced_limit_w", lambda index: 700.0)
    monkeypatch.setattr(heat, "SLICE_S", SLICE)
    read, reads = scripted(50, 55, 58, 60, 60, 60, 60, 60)

    @contextlib.contextmanager
    def reader(device):
        yield read

    monkeypatch.setattr(heat, "temperature_reader", reader)
    monkeypatch.setattr(heat, "warm_until_steady",
                        functools.partial(heat.warm_until_steady, window_s=2 * SLICE, slice_s=SLICE))
    extra: dict = {}
    calls = heat.warmed_calls_per_round(lambda: None, torch.device("cuda", 0), MetricRecorder(extra))
    assert calls >= 1
    assert bool(reads) is warmed_by_heat
    assert ("start_c" in extra["heat"]) is warmed_by_heat
    assert ("held_mhz" in extra["heat"]) is not warmed_by_heat


class FailingNvml(ClockingNvml):
    """NVML that stops answering utilisation after ``good`` readings (as under MIG from the first)."""

    def __init__(self, good: int) -> None:
        super().__init__()
        self.good = good

    def nvmlDeviceGetUtilizationRates(self, handle: str):
        if self.good <= 0:
            raise self.NVMLError("Not Supported")
        self.good -= 1
        return super().nvmlDeviceGetUtilizationRates(handle)


@pytest.mark.parametrize("good", [0, 3])
def test_a_clock_nvml_cannot_read_leaves_the_time_as_the_gate_and_nvml_closed(monkeypatch, good):
    nvml = FailingNvml(good)
    monkeypatch.setattr(heat.power, "unavailable_reason", lambda: None)
    monkeypatch.setattr(heat.power, "PowerSampler", functools.partial(heat.power.PowerSampler, nvml=nvml))
    monkeypatch.setattr(nvml_binding, "cuda_pci_bus_id", lambda index: None)
    with heat.sm_clock(torch.device("cuda", 0), interval_s=0.002) as clock:
        time.sleep(0.05)
    extra: dict = {}
    heat.gate_on_cycles(MetricRecorder(extra), [0.003], clock)
    assert clock.mean_mhz is None and extra == {} and nvml.inits == nvml.shutdowns == 1


def test_the_power_sampler_says_in_one_sentence_that_nvml_stopped_answering():
    nvml = FailingNvml(2)
    stopped = pytest.raises(heat.power.SamplingError, match="NVML stopped answering while GPU 0 was sampled")
    with stopped, heat.power.PowerSampler(0, interval_s=0.002, nvml=nvml):
        time.sleep(0.05)
    assert nvml.shutdowns == 1
