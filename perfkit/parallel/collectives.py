"""nccl-tests' all_reduce_perf in miniature, run on every rank: in-place float32 sums over message sizes."""
from __future__ import annotations

import torch
import torch.distributed as dist

from perfkit.measure import timing
from perfkit.parallel.launch import Worker
from perfkit.parallel.records import AllreduceJob, AllreduceResult, SizeTimes


def allreduce_seconds(
    elements: int, device: torch.device, repetitions: int, per_sample: int = 10
) -> list[float]:
    """Seconds per in-place float32 all-reduce of ``elements`` values; nccl-tests' loop of ``per_sample``
    ops."""
    buffer = torch.ones(elements, dtype=torch.float32, device=device)
    for _ in range(5):
        dist.all_reduce(buffer)
    regions = timing.spans(device)
    for _ in range(repetitions):
        with regions.region():
            for _ in range(per_sample):
                dist.all_reduce(buffer)
    return [s / per_sample for s in regions.samples().seconds]


def allreduce_sweep(worker: Worker, job: AllreduceJob) -> AllreduceResult:
    return AllreduceResult(
        worker.world,
        tuple(
            SizeTimes(size, tuple(allreduce_seconds(size // 4, worker.device, job.repetitions)))
            for size in job.sizes
        ),
    )
