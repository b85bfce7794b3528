"""Whether a first touch of the same managed pages in the launch's own shape, timed beside each round,
cancels a first launch's spread between fresh processes (issue 44 part 6; docs/findings.md).

The one-block vector add's first launch on managed memory reads 2.0-2.9 ms at K = 1 M on the committed H200
baseline (0.65 ms of it the warm kernel): the rest is its pages migrating fault by fault while one block
waits on each, and that wait moves between processes (the runs' time spreads about 8%, a run's rounds 5%).
A grid's first touch beside it did not cancel it (2026-12-02: 10.0%, the grid faults many pages at once).
Here each round of the one-block launch (four placements, as the benchmark times them) is timed, in an order
that rotates round by round, beside two references timed the same way right after the host wrote the same
placement's x and y:
``block``, one multiprocessor's copy (perfkit.workloads.kernels.one_sm, the one block's shape) of x and then
of y into device arrays: one block faulting the same pages (x's and then y's, where the add reads them
interleaved), and
``grid``, the first-touch ceiling's grid copy of the same pages (the reference of the grid's first launch).

    python experiments/one_block_first_touch.py run 6 touch.jsonl     # six fresh processes, a JSON line each
    python experiments/one_block_first_touch.py summary touch.jsonl   # SD of the log between processes

``BESIDE_K=100`` times K = 100 M instead (three rounds a placement after one).

``BESIDE_SCENARIO=grid`` (or ``tuned``) times that kernel's first launch instead, beside ``grid`` and
``pair``: one grid launch that copies x and y together, element by element, so that their pages fault
interleaved, as the add reads them (the grid's copy faults all of x's pages and then all of y's). Each
launch also records ``write``, the host's write of the placement's x and y before it: the driver's pace of
moving the pages back, seen from the host. The summary adds the SD of the log between a process's four
placements (their launch over each reference), which says whether more placements would narrow a run.

``BESIDE_RETURN=prefetch`` sends the pages back to the host before each call with the driver's prefetch
(perfkit.workloads.kernels.prefetch) instead of the host's write: the same pages on the host, in bulk
instead of fault by fault on the CPU (``write`` then records the prefetch). ``BESIDE_ROUNDS=N`` times N
rounds a placement.
"""
from __future__ import annotations

import json
import math
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

K = int(os.environ.get("BESIDE_K", "1"))  # millions of elements, as the nightly's one-block first launches
ELEMENTS = K * 1_000_000
SCENARIO = os.environ.get("BESIDE_SCENARIO", "one_block")
PLACEMENTS, WARM, ROUNDS = (4, 2, 10) if K == 1 else (4, 1, 3)
ROUNDS = int(os.environ.get("BESIDE_ROUNDS", ROUNDS))
RETURN = os.environ.get("BESIDE_RETURN", "write")
KINDS = ("launch", "block", "grid") if SCENARIO == "one_block" else ("launch", "grid", "pair")


def _pair_copy() -> Any:
    """A grid kernel that copies x and y in one launch, one element of each per thread."""
    from numba import cuda

    @cuda.jit
    def copy_pair(x: Any, y: Any, dx: Any, dy: Any) -> None:
        i = cuda.grid(1)
        if i < dx.size:
            dx[i] = x[i]
            dy[i] = y[i]

    return copy_pair


def child() -> None:
    from numba import cuda

    from perfkit.measure.timing import EventSpans
    from perfkit.workloads.kernels import cpu_add, first_touch, one_sm, prefetch, vector_add

    n = ELEMENTS
    x, y = cpu_add.host_vectors(n)
    dx, dy = cuda.device_array(n, dtype=np.float32), cuda.device_array(n, dtype=np.float32)
    pair = _pair_copy()[vector_add.launch_shape("grid", n, sm_count=1)] if "pair" in KINDS else None
    sms = vector_add.sm_count()
    sets = []
    for _ in range(PLACEMENTS):
        mx, my, mout = (cuda.managed_array(n, dtype=np.float32) for _ in range(3))
        mx[:], my[:] = x, y  # the inputs, once: a prefetch sends them back without writing them
        copies = {"block": [one_sm.launcher("one_block", src, dst) for src, dst in ((mx, dx), (my, dy))],
                  "grid": [first_touch.launcher(src, dst) for src, dst in ((mx, dx), (my, dy))]}
        calls: dict[str, Callable[[], Any]] = {
            "launch": vector_add.launcher(SCENARIO, mx, my, mout, sms),
            "block": lambda c=copies["block"]: [copy() for copy in c],
            "grid": lambda c=copies["grid"]: [copy() for copy in c],
            "pair": lambda mx=mx, my=my: pair(mx, my, dx, dy)}
        sets.append((mx, my, mout, calls))
    spans = {kind: EventSpans() for kind in KINDS}
    host: list[float] = []
    writes: list[float] = []
    send_back = prefetch.to_host() if RETURN == "prefetch" else None
    for mx, my, _, calls in sets:
        for r in range(WARM + ROUNDS):
            for kind in KINDS[r % 3:] + KINDS[:r % 3]:  # each kind first, second and third in turn
                start = time.perf_counter()
                if send_back is None:
                    mx[:], my[:] = x, y  # the host writes every page: they migrate back to host memory
                else:
                    send_back(mx, my)
                wrote = time.perf_counter() - start
                if r < WARM:
                    calls[kind]()
                    cuda.synchronize()
                    continue
                start = time.perf_counter()
                with spans[kind].region():
                    calls[kind]()
                cuda.synchronize()
                if kind == "launch":
                    host.append(time.perf_counter() - start)
                    writes.append(wrote)
    found: dict[str, Any] = {kind: list(spans[kind].samples().seconds) for kind in KINDS}
    found["host"] = host
    found["write"] = writes
    found["return"] = RETURN  # how the pages went back, for the summary
    for _, _, mout, _ in sets:
        if not np.array_equal(np.asarray(mout), x + y):
            raise SystemExit("a placement's sum is wrong")
    print(json.dumps(found))


def _references(run: dict[str, list[float]]) -> tuple[str, ...]:
    """The references a process timed: the host's write only in files written since it was recorded."""
    return (*KINDS[1:], "write") if "write" in run else KINDS[1:]


def _figures(run: dict[str, list[float]]) -> dict[str, float]:
    """One process's figures: each kind's median, and the median of each round's launch over each reference
    timed beside it."""
    out = {kind: statistics.median(run[kind]) for kind in (*KINDS, "host", "write") if kind in run}
    for ref in _references(run):
        out[f"launch/{ref}"] = statistics.median(a / b for a, b in zip(run["launch"], run[ref]))
        out[f"host/{ref}"] = statistics.median(a / b for a, b in zip(run["host"], run[ref]))
    return out


def _between_placements(run: dict[str, list[float]], ref: str) -> float:
    """SD of the log between the medians of one process's placements of the launch over ``ref`` (its rounds a
    placement read from the file: a summary without the run's BESIDE_ROUNDS reads it right)."""
    ratios = [a / b for a, b in zip(run["launch"], run[ref])]
    rounds = len(ratios) // PLACEMENTS
    medians = [statistics.median(ratios[p * rounds:(p + 1) * rounds]) for p in range(PLACEMENTS)]
    return statistics.stdev(math.log(m) for m in medians)


def summary(path: str) -> None:
    with open(path) as f:
        rows = [r for r in map(json.loads, f) if "stderr" not in r]
    if len(rows) < 2:
        raise SystemExit(f"{path}: {len(rows)} process(es); a spread between processes needs two or more")
    figures = [_figures(row) for row in rows]
    returned, rounds = rows[0].get("return", "write"), len(rows[0]["launch"]) // PLACEMENTS
    print(f"{SCENARIO} K{K}, pages back by {returned}, {len(rows)} processes, {PLACEMENTS} placements x "
          f"{rounds} rounds; SD of the log between processes:")
    for key in figures[0]:
        values = [f[key] for f in figures]
        spread = statistics.stdev(math.log(v) for v in values)
        line = f"  {key:14s} {spread:6.1%}   {min(values):.5g}-{max(values):.5g}"
        if key in rows[0]:  # a series of rounds, not a ratio
            within = statistics.median(statistics.stdev(math.log(v) for v in row[key]) for row in rows)
            line += f"   rounds within a run {within:.1%}"
        print(line)
    for ref in _references(rows[0]):
        spread = statistics.median(_between_placements(row, ref) for row in rows)
        print(f"  launch/{ref} between a process's placements (median over processes): {spread:.1%}")


if __name__ == "__main__":
    from placements_lever import main  # the same command line, beside this script

    main(__file__, __doc__, child, summary)
