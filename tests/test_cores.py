"""perfkit.measure.cores: host work timed on every core in turn, each core's fastest pass kept."""
from __future__ import annotations

import os
import time

import pytest

from perfkit.errors import MeasurementError
from perfkit.measure import cores

pytestmark = pytest.mark.skipif(not cores.usable(), reason="this platform cannot pin a thread to a core")


def test_each_core_runs_its_bursts_pinned_and_keeps_its_fastest_pass():
    mine = cores.usable()
    before = os.sched_getaffinity(0)
    seen: list[tuple[int, set[int]]] = []
    pace = [0.004, 0.001, 0.002]  # seconds a call takes in each pass: the second is every core's fastest

    def setup(turn: int) -> cores.Call:
        def call() -> None:
            seen.append((turn, os.sched_getaffinity(0)))
            time.sleep(pace[turn // len(mine)])
        return call

    values = cores.fastest_per_core(setup, burst=2, passes=3)
    assert len(values) == len(mine)
    assert all(0.001 <= v < 0.002 for v in values)  # the fastest pass, not the median or the first
    turns = sorted({turn for turn, _ in seen})
    assert turns == list(range(3 * len(mine)))  # one setup per burst, counted for placements to rotate
    assert [affinity for turn, affinity in seen if turn < len(mine)][::2] == [{c} for c in mine]
    assert os.sched_getaffinity(0) == before  # every CPU back once the sweep is done


def test_a_small_box_makes_as_many_bursts_in_more_passes():
    turns: list[int] = []

    def setup(turn: int) -> cores.Call:
        turns.append(turn)
        return lambda: None

    cores.fastest_per_core(setup, burst=1, cores=cores.usable()[:2])
    assert len(turns) == max(cores.BURSTS, cores.PASSES * len(cores.usable()[:2]))


def test_the_affinity_comes_back_when_the_call_raises():
    before = os.sched_getaffinity(0)

    def setup(turn: int) -> cores.Call:
        def call() -> None:
            raise MeasurementError("the sum is wrong")
        return call

    with pytest.raises(MeasurementError, match="the sum is wrong"):
        cores.fastest_per_core(setup, burst=1, passes=1)
    assert os.sched_getaffinity(0) == before


def test_a_sweep_without_a_burst_is_refused_in_a_sentence():
    with pytest.raises(MeasurementError, match="needs a burst and a pass"):
        cores.fastest_per_core(lambda turn: (lambda: None), burst=0)
