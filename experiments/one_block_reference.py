"""Whether the one-block vector add's two levels between machines are where its block runs, and whether the
one-multiprocessor copy (perfkit.workloads.kernels.one_sm) timed beside it shares them (docs/findings.md,
2026-12-03, late morning).

On the committed H200 baseline the warm K = 100 M one-block launch reads 0.157 or 0.162 s by machine (each
machine's runs within 0.1%), while the one-thread K = 1 M launch reads 0.0511 s on both. One block is one
multiprocessor streaming memory at the pace its loads in flight allow against the latency of memory; which
multiprocessor the block lands on (its place on the chip, which differs chip to chip) may set that latency.
Each fresh process here times, on resident device arrays, the vector add's one-block and one-thread kernels
and the one-multiprocessor copies of the same shape and size, interleaved over ROUNDS rounds; then at
K = 100 M the one-block add and copy run as block ``b`` of a grid of ``b + 1`` (the other blocks return at
once), so that the work lands on another multiprocessor. One JSON line a process:

    python experiments/one_block_reference.py run 2 out.jsonl    # two fresh processes
    python experiments/one_block_reference.py summary out.jsonl  # levels, ratios, by block index
"""
from __future__ import annotations

import json
import statistics
from typing import Any

ROUNDS = 5
REPETITIONS = 3
#: the block that does the work: its index in the grid (blocks are spread over the multiprocessors)
BLOCK_INDEXES = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 33, 66, 99, 131)


def _one_process() -> dict[str, Any]:
    import numpy as np
    from numba import cuda

    from perfkit.measure.timing import time_cuda_events, warm_for
    from perfkit.workloads.kernels import one_sm, vector_add

    @cuda.jit
    def add_at(x: Any, y: Any, out: Any, block: int) -> None:
        if cuda.blockIdx.x == block:
            for i in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):
                out[i] = x[i] + y[i]

    @cuda.jit
    def copy_at(src: Any, dst: Any, block: int) -> None:
        if cuda.blockIdx.x == block:
            for i in range(cuda.threadIdx.x, dst.size, cuda.blockDim.x):
                dst[i] = src[i]

    def arrays(k: int) -> tuple[Any, Any, Any]:
        host = np.arange(k * 1_000_000, dtype=np.float32)
        return cuda.to_device(host), cuda.to_device(host), cuda.device_array(host.size, dtype=np.float32)

    small, large = arrays(1), arrays(100)
    launches = {
        "add_one_block_k1": vector_add.launcher("one_block", *small, 1),
        "copy_one_block_k1": one_sm.launcher("one_block", small[0], small[2]),
        "add_one_thread_k1": vector_add.launcher("one_thread", *small, 1),
        "copy_one_thread_k1": one_sm.launcher("one_thread", small[0], small[2]),
        "add_one_block_k100": vector_add.launcher("one_block", *large, 1),
        "copy_one_block_k100": one_sm.launcher("one_block", large[0], large[2]),
    }
    for launch in launches.values():
        warm_for(launch, 0.3)
    timed: dict[str, list[float]] = {name: [] for name in launches}
    for _ in range(ROUNDS):
        for name, launch in launches.items():
            timed[name].append(time_cuda_events(launch, repetitions=REPETITIONS, warmup_iterations=0).median)
    by_block: dict[str, list[float]] = {"add": [], "copy": []}
    for block in BLOCK_INDEXES:
        add = add_at[block + 1, vector_add.THREADS]
        copy = copy_at[block + 1, vector_add.THREADS]
        by_block["add"].append(time_cuda_events(lambda add=add, b=block: add(*large, b),
                                                repetitions=REPETITIONS, warmup_iterations=1).median)
        by_block["copy"].append(time_cuda_events(lambda copy=copy, b=block: copy(large[0], large[2], b),
                                                 repetitions=REPETITIONS, warmup_iterations=1).median)
    return {"medians": {name: statistics.median(v) for name, v in timed.items()}, "rounds": timed,
            "by_block": by_block, "blocks": list(BLOCK_INDEXES)}


def summary(path: str) -> None:
    with open(path) as lines:
        rows = [r for r in map(json.loads, lines) if "stderr" not in r]  # a failed process says why
    for i, row in enumerate(rows):
        m = row["medians"]
        print(f"process {i}: " + ", ".join(f"{name} {value * 1e3:.4f} ms" for name, value in m.items()))
        for size, scenario in (("k1", "one_block"), ("k1", "one_thread"), ("k100", "one_block")):
            ratios = [a / c for a, c in zip(row["rounds"][f"add_{scenario}_{size}"],
                                            row["rounds"][f"copy_{scenario}_{size}"])]
            print(f"    {scenario} {size} add over copy: median {statistics.median(ratios):.4f}, "
                  f"rounds {min(ratios):.4f}-{max(ratios):.4f}")
        print("    by block index (add ms, copy ms, ratio):")
        for block, add, copy in zip(row["blocks"], row["by_block"]["add"], row["by_block"]["copy"]):
            print(f"      {block:4d} {add * 1e3:9.3f} {copy * 1e3:9.3f} {add / copy:.4f}")


if __name__ == "__main__":
    from placements_lever import main  # the command line the fresh-process experiments share

    main(__file__, __doc__, lambda: print(json.dumps(_one_process())), summary)
