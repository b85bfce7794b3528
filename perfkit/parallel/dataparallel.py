"""``nn.DataParallel`` (seed 004's choice), run in this process beside DDP on the same workloads.

One process scatters each global batch (per-GPU batch × GPUs) from GPU 0 and gathers the outputs
back; the result has the shape of a DDP scaling job's, so the same recorders and derived figures
apply (speedup over the 1-GPU DataParallel run; throughput over DDP's on the same GPUs).
"""
from __future__ import annotations

import dataclasses
import functools

import torch
from torch import nn

from perfkit.measure import memory
from perfkit.parallel import ddp
from perfkit.parallel.launch import Worker
from perfkit.parallel.records import TrainingRun
from perfkit.parallel.scaling import ScalingWorkload
from perfkit.workloads import models, training


def run(workload: ScalingWorkload, gpus: int, data_root: str | None) -> TrainingRun:
    """Warm-up steps, then the timed epoch (or steps) with per-step CUDA events; allocator peaks per GPU; on
    one GPU, a step the host paces beside its launch pace after them (perfkit.workloads.training.launch_pace).

    The peaks are net of what this process held on each GPU before the model was built: DDP's workers
    start empty, and a benchmark that ran earlier in this process must not count here (in reverse
    file order it added 164 MiB to the 1-GPU ResNet-18 peak). Before it, the cuBLAS workspaces are released
    and the allocator's cache emptied, so the step allocates its workspaces inside the measured region as a
    fresh DDP worker does: a workspace an earlier benchmark left behind was counted as held before, and the
    1-GPU peak followed what ran before (ResNet-18: 348 MiB after the ceilings alone, 382 after the capacity
    check too; ResNet-50: 5516 or 5584 MiB; the same on an H200 and an H100, while DDP's read 451 and 5677
    in every order).
    """
    device = torch.device("cuda", 0)
    memory.release_cached()
    held_before = [torch.cuda.memory_allocated(i) for i in range(gpus)]
    job = dataclasses.replace(workload.job(gpus, data_root), batch=workload.per_gpu(gpus) * gpus)
    model = nn.DataParallel(models.build(workload.model).to(device).train(), device_ids=list(range(gpus)))
    step = training.train_step(model, training.sgd_momentum(model))
    epochs, steps_per_epoch = ddp.batches(Worker(0, 0, 1, device), job)
    first = training.time_steps(step, epochs(0), device, job.warmup)[2][0]
    for index in range(gpus):
        torch.cuda.reset_peak_memory_stats(index)
    step_s, epoch_s, losses = training.time_steps(
        step, epochs(1), device, None if workload.epoch else workload.steps
    )
    peaks = tuple(torch.cuda.max_memory_allocated(i) - held_before[i] for i in range(gpus))
    pace = None
    if job.launch_pace_cycles:
        resident = next(epochs(2))
        pace = training.launch_pace(functools.partial(step, resident), device, job.launch_pace_cycles)
    result = TrainingRun(
        gpus,
        job.batch,
        workload.per_gpu(gpus),
        tuple(step_s),
        epoch_s if workload.epoch else None,
        steps_per_epoch,
        float(first),
        float(losses[-1]),
        peaks,
        launch_pace=pace,
    )
    del model, step
    torch.cuda.empty_cache()
    return result
