"""The CPUs this process may run on: what a host's load and a CPU's hardware id count.

Apart from perfkit.measure, whose modules import torch and NVML's side of things, so that the side that reads
and judges files on any machine (perfkit.resultfile, verdict, store, render) can ask it too.
"""
from __future__ import annotations

import os


def usable_cpus() -> int:
    """Logical CPUs this process may run on: a cpuset's or taskset's limit, not the host's count (a CFS quota
    such as ``docker --cpus`` is not seen)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1
