"""How many fresh placements a run needs: the 1 M-element vector add's host-side figures, between processes.

Each fresh process times the CPU references (numba loop, numpy add) and the managed first launches of the
grid and tuned kernels at K = 1 M over 4, 16 and 64 fresh placements in turn, as
perfkit.measure.placements.Rotation does, but each placement warmed once and timed three times (the benchmark
warms twice and times five). Where the spread between processes comes from the placements, it falls as their
number grows; where it comes from the process (its cores, its clocks), it does not:

    python experiments/placement_count.py run 12 count.jsonl     # twelve fresh processes, one JSON line each
    python experiments/placement_count.py summary count.jsonl    # SD of the log of the medians
"""
from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

COUNTS = (4, 16, 64)
N = 1_000_000


def _timed(placements: list[Any], arguments: Callable[[Any], tuple], target: Callable[..., Any]) -> float:
    """The median round over ``placements`` in turn, each warmed once and then timed three times."""
    times = []
    for placement in placements:
        for r in range(4):
            args, kwargs = arguments(placement)
            start = time.perf_counter()
            target(*args, **kwargs)
            if r:
                times.append(time.perf_counter() - start)
    return statistics.median(times)


def child() -> None:
    from perfkit.measure import placements
    from perfkit.workloads.kernels import cpu_add

    x, y = cpu_add.host_vectors(N)
    cpu_add.add_loop(x[:16], y[:16], np.empty(16, np.float32))
    found: dict[str, float | str] = {}
    for count in COUNTS:
        buffers = [(placements.huge_page_array(x), placements.huge_page_array(y),
                    placements.huge_page_array(x, copy=False)) for _ in range(count)]
        found[f"loop-P{count}"] = _timed(buffers, lambda b: (b, {}), cpu_add.add_loop)
        found[f"numpy-P{count}"] = _timed(buffers, lambda b: ((b[0], b[1]), {"out": b[2]}), np.add)
    from numba import cuda

    if not cuda.is_available():  # no GPU here: the CPU figures still count
        found["no_gpu"] = "numba.cuda sees no GPU"
    else:
        from perfkit.workloads.kernels import vector_add

        for kernel in ("grid", "tuned"):
            for count in COUNTS:
                sets = []
                for _ in range(count):
                    mx, my, mout = (cuda.managed_array(N, dtype=np.float32) for _ in range(3))
                    sets.append((mx, my, vector_add.launcher(kernel, mx, my, mout, vector_add.sm_count())))

                def arguments(s: tuple) -> tuple:
                    s[0][:], s[1][:] = x, y  # the host writes the inputs: the launch migrates their pages
                    return (), {}

                found[f"managed-{kernel}-P{count}"] = _first(sets, arguments)
    print(json.dumps(found))


def _first(sets: list[tuple], arguments: Callable[[tuple], tuple]) -> float:
    """The managed first launch: each set's launcher timed to its synchronize, after the host wrote its
    inputs."""
    from numba import cuda

    times = []
    for s in sets:
        for r in range(4):
            arguments(s)
            start = time.perf_counter()
            s[2]()
            cuda.synchronize()
            if r:
                times.append(time.perf_counter() - start)
    return statistics.median(times)


def summary(path: str) -> None:
    with open(path) as f:
        rows = [r for r in map(json.loads, f) if "stderr" not in r]
    print(f"{len(rows)} processes")
    for key in sorted({k.rsplit("-P", 1)[0] for r in rows for k in r if "-P" in k}):
        cells = []
        for count in COUNTS:
            values = [math.log(r[f"{key}-P{count}"]) for r in rows if f"{key}-P{count}" in r]
            if len(values) > 1:
                cells.append(f"P{count}: {math.exp(statistics.mean(values)) * 1e3:8.3f} ms "
                             f"SD {statistics.stdev(values):6.1%}")
        print(f"{key:16s} " + "   ".join(cells))


if __name__ == "__main__":
    from placements_lever import main  # the same command line, beside this script

    main(__file__, __doc__, child, summary)
