"""Whether a first touch timed beside each managed first launch, round by round, cancels the launch's spread
between fresh processes (issue 44 part 6; docs/findings.md).

A first touch timed once per process did not (2026-11-28: the page work's cost moves over seconds, so a
reference timed at another moment misses it). Here each round of the vector add's first launch on managed
memory (K = 1 M: the grid, tuned and one-block kernels over four placements, as the benchmark times them) is
timed, in an order that rotates round by round, with two references timed the same way right after the host
wrote their pages:
``own``, a copy kernel reading the placement's own x and y (the same pages, the same migration), and
``apart``, the first-touch ceiling's copy on its own allocation (perfkit.measure.ceilings). Where the
launch's spread is the page work's pace at that moment, launch / reference spreads less than the launch:

    python experiments/first_touch_beside.py run 8 beside.jsonl     # eight fresh processes, a JSON line each
    python experiments/first_touch_beside.py summary beside.jsonl   # SD of the log between processes

``BESIDE_K=100`` times the grid and tuned kernels at K = 100 M instead (three rounds a placement after one).
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

K = int(os.environ.get("BESIDE_K", "1"))  # millions of elements, as the nightly's managed first launches
ELEMENTS = K * 1_000_000
SCENARIOS = ("grid", "tuned", "one_block") if K == 1 else ("grid", "tuned")
PLACEMENTS, WARM, ROUNDS = (4, 2, 10) if K == 1 else (4, 1, 3)
KINDS = ("launch", "own", "apart")


def _write(mx: Any, my: Any, x: np.ndarray, y: np.ndarray) -> None:
    """The host writes every page of x and y: they migrate back to host memory."""
    mx[:], my[:] = x, y


def child() -> None:
    from numba import cuda

    from perfkit.measure import ceilings
    from perfkit.measure.timing import EventSpans
    from perfkit.workloads.kernels import cpu_add, first_touch, vector_add

    n = ELEMENTS
    x, y = cpu_add.host_vectors(n)
    sms = vector_add.sm_count()
    apart = ceilings.first_touch_workload(n, first_touch.launcher)
    found: dict[str, dict[str, list[float]]] = {}
    for scenario in SCENARIOS:
        sets = []
        for _ in range(PLACEMENTS):
            mx, my, mout = (cuda.managed_array(n, dtype=np.float32) for _ in range(3))
            dx, dy = cuda.device_array(n, dtype=np.float32), cuda.device_array(n, dtype=np.float32)
            copy_x, copy_y = first_touch.launcher(mx, dx), first_touch.launcher(my, dy)
            sets.append((mx, my, vector_add.launcher(scenario, mx, my, mout, sms),
                         lambda cx=copy_x, cy=copy_y: (cx(), cy())))
        spans = {kind: EventSpans() for kind in KINDS}
        for mx, my, launch, own in sets:
            write = functools.partial(_write, mx, my, x, y)
            steps: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
                "launch": (write, launch), "own": (write, own), "apart": (apart.setup or write, apart.run)}
            for r in range(WARM + ROUNDS):
                for kind in KINDS[r % 3:] + KINDS[:r % 3]:  # each kind first, second and third in turn
                    setup, call = steps[kind]
                    setup()
                    if r < WARM:
                        call()
                    else:
                        with spans[kind].region():
                            call()
                    cuda.synchronize()
        found[scenario] = {kind: list(spans[kind].samples().seconds) for kind in KINDS}
    print(json.dumps(found))


def _median(values: list[float], per: int) -> float:
    """The median over the first ``per`` timed rounds of each placement (ROUNDS were timed in each)."""
    return statistics.median(v for i, v in enumerate(values) if i % ROUNDS < per)


def _figures(run: dict[str, list[float]], per: int) -> dict[str, float]:
    """One process's figures for one kernel: each kind's median, the launch over each reference's median,
    and the median of each round's launch over the reference timed beside it."""
    medians = {kind: _median(run[kind], per) for kind in KINDS}
    out = dict(medians)
    for ref in KINDS[1:]:
        out[f"launch/{ref}"] = medians["launch"] / medians[ref]
        out[f"round launch/{ref}"] = _median([a / b for a, b in zip(run["launch"], run[ref])], per)
    return out


def summary(path: str) -> None:
    with open(path) as f:
        rows = [r for r in map(json.loads, f) if "stderr" not in r]
    print(f"{len(rows)} processes; SD of the log between processes, from 5 and {ROUNDS} rounds a placement")
    for scenario in SCENARIOS:
        for per in sorted({min(5, ROUNDS), ROUNDS}):
            figures = [_figures(row[scenario], per) for row in rows]
            cells = {k: statistics.stdev(math.log(f[k]) for f in figures) for k in figures[0]}
            spreads = ", ".join(f"{k} {v:.1%}" for k, v in cells.items())
            print(f"K{K} {scenario:9s} {per:2d} rounds: {spreads}")
        for row in rows:
            print("    " + " ".join(f"{k} {_median(row[scenario][k], ROUNDS) * 1e3:.3f} ms" for k in KINDS))


if __name__ == "__main__":
    from placements_lever import main  # the same command line, beside this script

    main(__file__, __doc__, child, summary)
