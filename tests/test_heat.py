"""Warming a power-limited kernel until its heat is steady, driven by a scripted temperature."""
from __future__ import annotations

import torch

from perfkit.measure import heat, timing

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
    assert warmed.as_info() == {"warmed_s": timing.STEADY_CLOCK_S, "start_c": None, "end_c": None}


def test_a_cpu_is_not_warmed():
    assert heat.warmed_calls_per_round(lambda: None, torch.device("cpu")) == (1, None)
