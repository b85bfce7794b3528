"""Whether the host's own memory copy moves with the vector add's CPU references between hosts (issue 44 part
6; docs/findings.md, 2026-11-28): the numba loop, numpy's add and libc's memmove of the same bytes between
huge-page buffers, each core's fastest pass (the benchmark's own sweep, perfkit.measure.cores). One JSON line
per process; run it in several fresh processes on several hosts and compare loop / memmove:

    for i in 1 2 3; do
        python experiments/host_copy_probe.py 100 1; python experiments/host_copy_probe.py 1 20
    done
"""
from __future__ import annotations

import ctypes
import json
import statistics

import numpy as np

from perfkit.measure import cores, placements
from perfkit.workloads.kernels import cpu_add, elements


def main(k: int, burst: int) -> dict[str, float]:
    """Each call's median over the cores of their fastest pass, at K million elements."""
    x, y = cpu_add.host_vectors(elements(k))
    bx, by = placements.huge_page_array(x), placements.huge_page_array(y)
    out = placements.huge_page_array(x, copy=False)
    cpu_add.add_loop(x[:16], y[:16], np.empty(16, dtype=x.dtype))  # compiled before the timing
    calls = {
        "add_loop": lambda: cpu_add.add_loop(bx, by, out),
        "np_add": lambda: np.add(bx, by, out=out),
        "memmove": lambda: ctypes.memmove(out.ctypes.data, bx.ctypes.data, x.nbytes),
    }
    found: dict[str, float] = {"k": k}
    for name, call in calls.items():
        found[name] = statistics.median(cores.fastest_per_core(lambda turn, c=call: c, burst=burst).fastest)
    return found


if __name__ == "__main__":
    from script_line import run

    run(__doc__, lambda args: print(json.dumps(main(int(args[0]), int(args[1])))), least=2, most=2)
