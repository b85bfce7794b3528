"""perfkit.measure.cores: host work timed on every core in turn, each core's fastest pass kept."""
from __future__ import annotations

import os
import threading
import time

import pytest

from perfkit.errors import MeasurementError
from perfkit.measure import cores

pinnable = pytest.mark.skipif(not cores.usable(), reason="this platform cannot pin a thread to a core")


@pinnable
def test_each_core_runs_its_bursts_pinned_and_keeps_its_fastest_pass():
    mine = cores.usable()[:4]
    before = os.sched_getaffinity(0)
    seen: list[tuple[int, set[int]]] = []
    calls = 0
    pace = [0.02, 0.005, 0.01]  # seconds a call takes in each pass: the second is every core's fastest

    def setup(turn: int) -> cores.Call:
        def call() -> None:
            nonlocal calls
            seen.append((turn, os.sched_getaffinity(0)))
            time.sleep(pace[calls // (sweep_burst * len(mine))])
            calls += 1
        return call

    sweep_burst = 2 * max(1, -(-cores.BURSTS // (cores.PASSES * len(mine))))  # longer bursts on fewer cores
    sweep = cores.fastest_per_core(setup, burst=2, cores=mine)
    assert (sweep.cores, sweep.passes, sweep.burst) == (len(mine), cores.PASSES, sweep_burst)
    assert len(sweep.fastest) == len(mine)
    assert all(0.005 <= v < 0.01 for v in sweep.fastest)  # the fastest pass, not the median or the first
    first_pass = seen[:sweep_burst * len(mine):sweep_burst]
    assert [affinity for _, affinity in first_pass] == [{c} for c in mine]
    # a core meets another placement each pass: its turn is its place plus the pass
    assert [turn for turn, _ in seen[::sweep_burst]] == [p + t for t in range(cores.PASSES)
                                                         for p in range(len(mine))]
    assert os.sched_getaffinity(0) == before  # every CPU back once the sweep is done


def test_without_cores_to_pin_the_sweep_times_the_process_where_it_runs():
    before = cores.usable()
    sweep = cores.fastest_per_core(lambda turn: (lambda: None), burst=1, cores=[])
    assert sweep.cores == 1 and len(sweep.fastest) == 1 and sweep.burst == cores.BURSTS // cores.PASSES
    assert cores.usable() == before


@pinnable
def test_the_affinity_comes_back_when_the_call_raises():
    before = os.sched_getaffinity(0)

    def setup(turn: int) -> cores.Call:
        def call() -> None:
            raise MeasurementError("the sum is wrong")
        return call

    with pytest.raises(MeasurementError, match="the sum is wrong"):
        cores.fastest_per_core(setup, burst=1)
    assert os.sched_getaffinity(0) == before


def test_the_sweep_stays_on_the_first_cpus_numa_node_and_at_most_sixteen_cores(tmp_path):
    for node, cpulist in (("node0", "0-31,64-95"), ("node1", "32-63,96-127")):
        (tmp_path / node).mkdir()
        (tmp_path / node / "cpulist").write_text(cpulist + "\n")
    chosen = cores.swept(list(range(32, 128)), tmp_path)
    assert len(chosen) == cores.MAX_CORES and set(chosen) <= set(range(32, 64)) | set(range(96, 128))
    assert chosen[0] == 32 and chosen == sorted(chosen)  # spread evenly over the node's CPUs
    assert cores.swept([0, 1], tmp_path / "none") == [0, 1]  # a host that says nothing of nodes


def test_a_sweep_without_a_burst_is_refused_in_a_sentence():
    with pytest.raises(MeasurementError, match="needs a burst of one call or more"):
        cores.fastest_per_core(lambda turn: (lambda: None), burst=0)


@pinnable
def test_a_whole_process_pin_moves_every_thread_and_gives_each_its_own_cpus_back():
    before = os.sched_getaffinity(0)
    core, own = cores.usable()[-1], {cores.usable()[0]}
    started, stop = threading.Event(), threading.Event()
    helper = threading.Thread(target=lambda: (started.set(), stop.wait()))  # autograd's launcher, say
    helper.start()
    started.wait()
    os.sched_setaffinity(helper.native_id, own)  # a thread with CPUs of its own
    late: list[threading.Thread] = []
    try:
        with cores.pinned(core, whole_process=True):
            assert os.sched_getaffinity(helper.native_id) == os.sched_getaffinity(0) == {core}
            late.append(threading.Thread(target=stop.wait))  # started inside: it inherits the one core
            late[0].start()
        with cores.pinned(core):
            assert os.sched_getaffinity(helper.native_id) == own  # this thread alone
        assert os.sched_getaffinity(0) == before and os.sched_getaffinity(helper.native_id) == own
        assert os.sched_getaffinity(late[0].native_id) == before  # the process's CPUs
    finally:
        stop.set()
        for thread in (helper, *late):
            thread.join()


@pinnable
def test_a_reference_is_timed_right_after_each_burst_on_the_same_core():
    """The host's reference meets the neighbours the call met: same core, the burst just before it."""
    mine = cores.usable()[:2]
    seen: list[tuple[str, int, set[int]]] = []

    def timed(kind: str, seconds: float):
        def setup(turn: int) -> cores.Call:
            return lambda: (seen.append((kind, turn, os.sched_getaffinity(0))), time.sleep(seconds))
        return setup

    sweep = cores.fastest_per_core(timed("call", 0.02), burst=1, cores=mine, reference=timed("copy", 0.001))
    assert len(sweep.reference) == len(sweep.fastest) == len(mine)
    assert all(0.001 <= r < 0.02 <= f for r, f in zip(sweep.reference, sweep.fastest))  # each its own
    bursts = [seen[i:i + sweep.burst] for i in range(0, len(seen), sweep.burst)]
    kinds = [burst[0][0] for burst in bursts]
    assert kinds == ["call", "copy"] * (cores.PASSES * len(mine))
    for call, copy in zip(bursts[::2], bursts[1::2]):  # the same core and placement turn, back to back
        assert (call[0][1], call[0][2]) == (copy[0][1], copy[0][2])


def test_without_a_reference_the_sweep_holds_none():
    assert cores.fastest_per_core(lambda turn: (lambda: None), burst=1, cores=[]).reference == ()
