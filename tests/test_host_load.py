"""The load other processes put on a run's CPUs, read from /proc/stat around a benchmark."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from perfkit.measure import host_load
from perfkit.resultfile.payloads import HostLoad

STAT = """cpu  900 0 300 5000 10 0 0 0 0 0
cpu0 100 5 50 2000 10 1 2 3 0 0
cpu1 200 0 100 2000 0 0 0 7 0 0
cpu2 600 0 150 1000 0 0 0 0 0 0
intr 12345 0 0
ctxt 999
"""


def test_work_is_summed_over_the_cpus_this_process_may_use_with_steal_and_without_idle():
    # cpu0: 100 + 5 + 50 + 1 + 2 + 3 = 161 ticks; cpu1: 200 + 100 + 7 = 307; cpu2 is another tenant's
    assert host_load.busy_seconds(STAT, {0, 1}, 100.0) == pytest.approx(4.68)
    assert host_load.busy_seconds(STAT, {2}, 100.0) == pytest.approx(7.5)


def test_others_are_what_the_cpus_did_beyond_this_process_and_never_below_zero():
    start = host_load.CpuSnapshot(when=10.0, busy_s=100.0, own_s=5.0, cpus=2)
    assert host_load.between(start, host_load.CpuSnapshot(12.0, 103.0, 6.0, 2)).other_cpus == pytest.approx(
        1.0
    )
    assert (
        host_load.between(start, host_load.CpuSnapshot(12.0, 100.5, 6.0, 2)).other_cpus == 0.0
    )  # tick rounding
    assert host_load.between(start, None) is None and host_load.between(start, start) is None


def test_a_quarter_of_the_cpus_kept_busy_by_others_is_a_busy_machine():
    assert HostLoad(0.5, 2).disturbed and not HostLoad(0.4, 2).disturbed and not HostLoad(3.0, 16).disturbed
    assert HostLoad.from_json(HostLoad(0.5, 2).to_json()) == HostLoad(0.5, 2)


SPIN = "import time\nend = time.time() + 1.5\nwhile time.time() < end: pass"


@pytest.mark.skipif(host_load.snapshot() is None, reason="no /proc/stat on this system")
@pytest.mark.slow
def test_a_busy_neighbour_is_seen_and_a_busy_child_of_this_run_is_its_own_work():
    # the neighbour: started from another process (here a shell that leaves it running), so not our descendant
    subprocess.run(["sh", "-c", f"{sys.executable} -c '{SPIN}' >/dev/null 2>&1 &"], check=True)
    start = host_load.snapshot()
    time.sleep(1.0)
    seen = host_load.between(start, host_load.snapshot())
    assert seen is not None and seen.other_cpus >= 0.5  # the spinner held about one CPU
    time.sleep(0.6)  # the neighbour has ended
    child = subprocess.Popen([sys.executable, "-c", SPIN])  # like a DataLoader worker: running, ours
    start = host_load.snapshot()
    time.sleep(1.0)
    mine = host_load.between(start, host_load.snapshot())
    child.kill()
    child.wait()
    assert mine is not None and mine.other_cpus < seen.other_cpus - 0.4, (mine, seen)
