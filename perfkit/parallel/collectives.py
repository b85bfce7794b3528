"""nccl-tests' all_reduce_perf in miniature, run on every rank: in-place float32 sums over message sizes."""
from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from perfkit.measure import timing
from perfkit.parallel.launch import Worker


def allreduce_seconds(elements: int, device: torch.device, repetitions: int, per_sample: int = 10) -> list[float]:
    """Seconds per in-place float32 all-reduce of ``elements`` values; nccl-tests' loop of ``per_sample`` ops."""
    buffer = torch.ones(elements, dtype=torch.float32, device=device)
    for _ in range(5):
        dist.all_reduce(buffer)
    regions = timing.spans(device)
    for _ in range(repetitions):
        with regions.region():
            for _ in range(per_sample):
                dist.all_reduce(buffer)
    return [s / per_sample for s in regions.samples().seconds]


def allreduce_sweep(worker: Worker, spec: dict[str, Any]) -> dict[str, Any]:
    sizes = [int(s) for s in spec["sizes"]]
    rows = [{"bytes": size, "op_s": allreduce_seconds(size // 4, worker.device, spec["repetitions"])}
            for size in sizes]
    return {"world": worker.world, "rows": rows}
