"""Whether the 1 M-element grid and tuned kernels timed alone move between runs with their arrays' placement
(docs/findings.md, 2026-12-02, evening).

A run of benches/test_vector_add.py reads each kernel's median of a hundred launches alone on one allocation;
between five fresh processes on one H200 those medians moved 1.2-1.5% where each median's own draw is
0.3-0.6%. Each fresh process here allocates four sets of arrays (explicit device arrays, and managed arrays
made resident), times a hundred launches alone on each set the way the benchmark does, and prints one JSON
line of the four sets' medians per kernel:

    python experiments/short_kernel_placements.py run 3 out.jsonl    # three fresh processes
    python experiments/short_kernel_placements.py summary out.jsonl  # spread within and between processes

If the sets of one process differ as much as processes do, the run-to-run noise is the placement's draw,
and rotating launches over several sets would average it within a run. The benchmark tried that and did not
get tighter between processes (docs/findings.md, 2026-12-02, night).
"""
from __future__ import annotations

import json
import math
import statistics

#: LAUNCHES and QUEUED as benches/test_vector_add.py's SHORT_ALONE_LAUNCHES and SHORT_ALONE_QUEUED were
#: when this was measured (kept here, so the script measures again what the finding measured)
SETS, LAUNCHES, QUEUED = 4, 100, 10


def _one_process() -> dict[str, list[float]]:
    import numpy as np
    from numba import cuda

    from perfkit.measure.timing import time_cuda_events, warm_for
    from perfkit.workloads.kernels import cpu_add, elements, vector_add

    n = elements(1)
    x, y = cpu_add.host_vectors(n)
    sms = vector_add.sm_count()
    out: dict[str, list[float]] = {}
    for scenario in ("grid", "tuned"):
        explicit, managed = [], []
        for _ in range(SETS):
            dx, dy = cuda.to_device(x), cuda.to_device(y)
            launch = vector_add.launcher(scenario, dx, dy, cuda.device_array_like(dx), sms)
            warm_for(launch)
            explicit.append(time_cuda_events(launch, LAUNCHES, 1, flush_l2=True, queued=QUEUED).median)
            mx, my, mout = (cuda.managed_array(n, dtype=np.float32) for _ in range(3))
            mx[:], my[:] = x, y
            launch = vector_add.launcher(scenario, mx, my, mout, sms)
            launch()
            cuda.synchronize()
            warm_for(launch)
            managed.append(time_cuda_events(launch, LAUNCHES, 1, hold=True, queued=QUEUED).median)
        out[f"explicit-{scenario}"], out[f"managed-warm-{scenario}"] = explicit, managed
    return out


def _summary(path: str) -> None:
    with open(path) as lines:
        runs = [r for r in map(json.loads, lines) if "stderr" not in r]  # a failed process says why
    for kernel in runs[0]:
        per_process = [[math.log(v) for v in run[kernel]] for run in runs]
        within = statistics.fmean(statistics.stdev(p) for p in per_process)
        first = statistics.stdev(p[0] for p in per_process)
        rotated = statistics.stdev(statistics.fmean(p) for p in per_process)
        print(f"{kernel:20s} SD of logs: sets within a process {within:.2%}, first set between processes "
              f"{first:.2%}, mean of {SETS} sets between processes {rotated:.2%}")


if __name__ == "__main__":
    from placements_lever import main  # the command line the fresh-process experiments share

    main(__file__, __doc__, lambda: print(json.dumps(_one_process())), _summary)
