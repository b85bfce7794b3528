"""How busy other processes kept this run's CPUs while a benchmark ran.

On a small shared machine (a 2-vCPU CI runner) one neighbour's busy loop halves what a two-thread
matmul gets, and a benchmark reads 60-70% slower with no change in the code. pyperf warns when the
system is not idle for the same reason. The plugin records, per benchmark, the CPUs that others kept
busy over its run (the hypervisor's steal included; ``payloads.HostLoad``), so that a verdict says
"regressed" only of a run that had its machine to itself.

Linux only (``/proc/stat``); elsewhere nothing is recorded. Only the CPUs this process may run on are
counted, so a neighbour on a host's other cores does not count against a pinned run. This process's
descendants count as its own, running (a DataLoader's persistent workers) or ended (a spawned search).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from perfkit.resultfile.payloads import HostLoad

PROC_STAT = "/proc/stat"
#: Set to 1 to record no host load, so that no verdict is held back for it: for a machine whose sharing
#: you accept, and for perfkit's own tests, which judge real timings on whatever machine runs them.
IGNORE_ENV = "PERFKIT_IGNORE_HOST_LOAD"
#: Columns of a ``cpuN`` line that are work: user nice system (not idle, iowait) irq softirq steal.
_BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)


@dataclass(frozen=True)
class CpuSnapshot:
    when: float  # monotonic seconds
    busy_s: float  # work done on this process's CPUs by everyone since boot
    own_s: float  # this process's CPU time and that of its descendants, running or ended
    cpus: int  # how many CPUs busy_s counts: those this process may run on


def busy_seconds(stat_text: str, cpus: set[int], ticks_per_s: float) -> float:
    """Seconds of work on ``cpus`` since boot, from the text of ``/proc/stat``."""
    total = 0
    for line in stat_text.splitlines():
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            fields = rest.split()
            total += sum(int(fields[i]) for i in _BUSY_COLUMNS if i < len(fields))
    return total / ticks_per_s


def descendants_cpu_s(ticks_per_s: float) -> float:
    """CPU seconds used so far by this process's running descendants, from ``/proc/<pid>/stat``."""
    parent_of: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rpartition(")")[2].split()  # the name in parentheses may hold spaces
        except OSError:  # ended meanwhile
            continue
        parent_of[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = (int(fields[11]) + int(fields[12])) / ticks_per_s  # utime, stime
    mine = {os.getpid()}
    grew = True
    while grew:
        found = {pid for pid, parent in parent_of.items() if parent in mine} - mine
        mine |= found
        grew = bool(found)
    mine.discard(os.getpid())
    return sum(used[pid] for pid in mine)


def snapshot() -> CpuSnapshot | None:
    """Now, or None where ``/proc/stat`` or the affinity call is missing."""
    try:
        with open(PROC_STAT, encoding="ascii") as fh:
            text = fh.read()
        cpus = os.sched_getaffinity(0)
    except (OSError, AttributeError):
        return None
    ticks, own = os.sysconf("SC_CLK_TCK"), os.times()
    return CpuSnapshot(
        time.monotonic(),
        busy_seconds(text, cpus, ticks),
        own.user + own.system + own.children_user + own.children_system + descendants_cpu_s(ticks),
        len(cpus),
    )


def between(start: CpuSnapshot | None, end: CpuSnapshot | None) -> HostLoad | None:
    """The load others put on this run's CPUs from ``start`` to ``end`` (None without both, or no time
    between)."""
    if start is None or end is None or end.when <= start.when:
        return None
    others = (end.busy_s - start.busy_s) - (end.own_s - start.own_s)
    return HostLoad(round(max(0.0, others / (end.when - start.when)), 3), end.cpus)
