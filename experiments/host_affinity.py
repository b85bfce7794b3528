"""Whether the host-bound figures' spread comes from the core the timed thread lands on (issue 44 part 6's
first lever; docs/findings.md).

Each fresh process pins itself to each of its CPUs in turn, three passes over all of them, and on each times
the vector add's CPU references at K = 1 million (numba loop, NumPy add), pure Python arithmetic and an empty
numba.cuda launch where a GPU is visible; and the same unpinned at the start of every pass. Where a core is
slow because a neighbour shares it, the same core reads slow in every pass and the fastest cores agree between
processes; where the host as a whole drifts, every core moves together:

    python experiments/host_affinity.py run 8 affinity.jsonl     # eight fresh processes, one JSON line each
    python experiments/host_affinity.py summary affinity.jsonl
"""
from __future__ import annotations

import functools
import json
import math
import os
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np
from host_reference import _median  # beside this script: the same timing of a call

PASSES = 3


def _python_work() -> int:
    total = 0
    for i in range(100_000):
        total += (i * 7) % 13
    return total


def child() -> None:
    from perfkit.workloads.kernels import cpu_add

    x, y = cpu_add.host_vectors(1_000_000)
    out = np.empty_like(x)
    cpu_add.add_loop(x, y, out)
    work: dict[str, tuple[Callable[[], Any], int]] = {
        "loopK1": (functools.partial(cpu_add.add_loop, x, y, out), 20),
        "numpyK1": (functools.partial(np.add, x, y, out=out), 30),
        "python": (_python_work, 5),
    }
    launch = _launcher()
    if launch is not None:
        work["launch"] = (launch, 50)
    cores = sorted(os.sched_getaffinity(0))
    found: dict[str, Any] = {"cores": cores}
    for p in range(PASSES):
        os.sched_setaffinity(0, cores)
        for name, (call, repeat) in work.items():
            found.setdefault(f"{name}-free", []).append(_median(call, repeat))
        for core in cores:
            os.sched_setaffinity(0, {core})
            for name, (call, repeat) in work.items():
                found.setdefault(f"{name}-core", {}).setdefault(str(core), []).append(_median(call, repeat))
    print(json.dumps(found))


def _launcher() -> Callable[[], None] | None:
    try:
        from numba import cuda

        if not cuda.is_available():
            return None
    except ImportError:
        return None

    @cuda.jit
    def empty(a):
        pass

    token = cuda.device_array(1, dtype=np.float32)

    def launch() -> None:
        empty[1, 1](token)
        cuda.synchronize()

    for _ in range(10):
        launch()
    return launch


def _sd(values: list[float]) -> str:
    logs = [math.log(v) for v in values]
    return f"{statistics.stdev(logs):6.1%}" if len(logs) > 1 else "     -"


def summary(path: str) -> None:
    with open(path) as f:
        rows = [r for r in map(json.loads, f) if "stderr" not in r]
    print(f"{len(rows)} processes of {len(rows[0]['cores'])} CPUs; SD of the log between processes of each "
          f"process's figure read: unpinned, pinned (median over cores), pinned (fastest core); and within a "
          f"process, the spread over cores of each core's median and over passes on one core")
    for name in sorted({k.rsplit("-", 1)[0] for r in rows for k in r if k.endswith("-free")}):
        free = [statistics.median(r[f"{name}-free"]) for r in rows]
        per_core = [{c: statistics.median(v) for c, v in r[f"{name}-core"].items()} for r in rows]
        pinned = [statistics.median(c.values()) for c in per_core]
        fastest = [min(c.values()) for c in per_core]
        over_cores = statistics.median(
            statistics.stdev([math.log(v) for v in c.values()]) for c in per_core)
        over_passes = statistics.median(
            statistics.stdev([math.log(v) for v in vs]) for r in rows for vs in r[f"{name}-core"].values())
        print(f"{name:8s} {statistics.median(free) * 1e3:9.4f} ms  unpinned {_sd(free)}  pinned {_sd(pinned)}"
              f"  fastest core {_sd(fastest)}   within a process: over cores {over_cores:6.1%}, "
              f"over passes {over_passes:6.1%}")


if __name__ == "__main__":
    from placements_lever import main  # the same command line, beside this script

    main(__file__, __doc__, child, summary)
