"""Whether the 1 M-element kernels' level per process is the L2 flush buffer's place, and what reads steadier:
a flush that reads instead of writes, or the add over a grid copy of the same arrays timed the same way
(docs/findings.md, 2026-12-03, afternoon).

The explicit K1 grid and tuned kernels are timed alone, a hundred launches queued ten at a time, each after
zeroing a 256 MB buffer (perfkit.measure.timing.time_cuda_events' ``flush_l2``). Their time moves 1.1-1.5%
between fresh processes on one H200 while four sets of arrays in one process read alike, and the tuned kernel
read 8.67 us in file order and 8.26 in reverse on one machine. The flush buffer comes from PyTorch's caching
allocator, so its address is set by what the process allocated before, and the zeroing leaves L2 full of its
dirty lines, which the kernel's misses must write back. Each fresh process here times, interleaved over ROUNDS
rounds, the grid and tuned adds and a grid copy of the same input, into the adds' own output (``copy_grid``)
and into an array of its own (``copy_own``: the benchmark tried it so, and there the copy's level drew apart
from the add's): after zeroing each of FLUSH_BUFFERS buffers at different addresses, after reading one (clean
lines left), and through the benchmark's own time_cuda_events. One JSON line a process:

    python experiments/short_kernel_flush.py run 10 out.jsonl   # ten fresh processes
    python experiments/short_kernel_flush.py summary out.jsonl  # SD of the log between processes, by flush
"""
from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from typing import Any

ROUNDS = 3
LAUNCHES, QUEUED = 100, 10
FLUSH_BUFFERS = 4


def _timed(fn: Callable[[], Any], flush: Callable[[], Any]) -> float:
    """time_cuda_events' plain queued loop with ``flush`` before each launch: the median launch."""
    import torch

    from perfkit.measure.timing import HOLD_CYCLES

    starts = [torch.cuda.Event(enable_timing=True) for _ in range(LAUNCHES)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(LAUNCHES)]
    for index, (start, end) in enumerate(zip(starts, ends)):
        if index and index % QUEUED == 0:
            torch.cuda.synchronize()
        flush()
        torch.cuda._sleep(HOLD_CYCLES)
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends))


def _one_process() -> dict[str, Any]:
    import numpy as np
    import torch
    from numba import cuda

    from perfkit.measure.timing import L2_FLUSH_BYTES, time_cuda_events, warm_for
    from perfkit.workloads.kernels import vector_add

    @cuda.jit
    def copy(src: Any, dst: Any) -> None:
        i = cuda.grid(1)
        if i < dst.size:
            dst[i] = src[i]

    host = np.arange(1_000_000, dtype=np.float32)
    dx, dy, dout = cuda.to_device(host), cuda.to_device(host), cuda.device_array(host.size, dtype=np.float32)
    sms = vector_add.sm_count()
    blocks, threads = vector_add.launch_shape("grid", host.size, sms)
    own = cuda.device_array(host.size, dtype=np.float32)
    launches = {"add_grid": vector_add.launcher("grid", dx, dy, dout, sms),
                "add_tuned": vector_add.launcher("tuned", dx, dy, dout, sms),
                "copy_grid": lambda: copy[blocks, threads](dx, dout),
                "copy_own": lambda: copy[blocks, threads](dx, own)}
    buffers, spacers = [], []
    for b in range(FLUSH_BUFFERS):  # spacers of different sizes put each buffer somewhere else
        spacers.append(torch.empty((b + 1) * 37 * 2**20, dtype=torch.uint8, device="cuda"))
        buffers.append(torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda"))
    words = buffers[0].view(torch.float32)
    flushes: dict[str, Callable[[], Any]] = {f"zero{b}": buffer.zero_ for b, buffer in enumerate(buffers)}
    flushes["read"] = words.sum
    for launch in launches.values():
        warm_for(launch)
    timed: dict[str, list[float]] = {}
    for _ in range(ROUNDS):
        for name, launch in launches.items():
            for flush_name, flush in flushes.items():
                timed.setdefault(f"{name}/{flush_name}", []).append(_timed(launch, flush))
            timed.setdefault(f"{name}/benchmark", []).append(
                time_cuda_events(launch, repetitions=LAUNCHES, warmup_iterations=1, flush_l2=True,
                                 queued=QUEUED).median)
    return {"medians": {name: statistics.median(v) for name, v in timed.items()}, "rounds": timed,
            "device": torch.cuda.get_device_name()}


def summary(path: str) -> None:
    with open(path) as lines:
        rows = [r for r in map(json.loads, lines) if "stderr" not in r]  # a failed process says why
    print(f"{len(rows)} processes")
    names = list(rows[0]["medians"])
    for name in names:
        logs = [math.log(r["medians"][name]) for r in rows]
        within = statistics.median(max(r["rounds"][name]) / min(r["rounds"][name]) - 1 for r in rows)
        print(f"{name:24s} {math.exp(statistics.mean(logs)) * 1e6:8.3f} us  between processes SD "
              f"{statistics.stdev(logs):6.2%}  rounds within a process {within:6.2%}")
    copies = [c for c in ("copy_grid", "copy_own") if f"{c}/benchmark" in rows[0]["medians"]]
    for add in ("add_grid", "add_tuned"):
        for copy_name in copies:
            for flush in sorted({n.split("/")[1] for n in names}):
                logs = [math.log(r["medians"][f"{add}/{flush}"] / r["medians"][f"{copy_name}/{flush}"])
                        for r in rows]
                print(f"{add} over {copy_name}, {flush:9s}: {math.exp(statistics.mean(logs)):.4f}  SD "
                      f"{statistics.stdev(logs):6.2%}")
    print("by process (us): " + " | ".join(names))
    for r in rows:
        print("  " + " ".join(f"{r['medians'][n] * 1e6:7.3f}" for n in names))


if __name__ == "__main__":
    from placements_lever import main  # the command line the fresh-process experiments share

    main(__file__, __doc__, lambda: print(json.dumps(_one_process())), summary)
