"""The CPUs this process may run on: what a host's load and a CPU's hardware id count.

Apart from perfkit.measure, whose modules import torch and NVML's side of things, so that the side that reads
and judges files on any machine (perfkit.resultfile, verdict, store, render) can ask it too.
"""
from __future__ import annotations

import os


def affinity() -> list[int]:
    """The CPUs this process may run on, in order; [] where the platform cannot say (macOS and Windows have
    no affinity call)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def usable_cpus() -> int:
    """Logical CPUs this process may run on: a cpuset's or taskset's limit, not the host's count (a CFS quota
    such as ``docker --cpus`` is not seen)."""
    return len(affinity()) or os.cpu_count() or 1
