"""What each rank of a DistributedDataParallel scaling job measures (job kind ``scaling``,
perfkit.parallel.jobs).

Warm-up steps, then a timed epoch (or a fixed number of steps) with CUDA events per step on every rank and a
synchronized host clock around the epoch; the replicas' parameters are compared; then torch.profiler over a
few steps gives the time of NCCL kernels and how much of it ran while compute kernels ran; the same steps
under ``no_sync`` (no gradient all-reduce) give the exposed communication time; and a raw ``all_reduce`` of a
buffer as large as the gradients gives what the link delivers in this job. ``no_sync`` lets replicas drift
apart, so it comes after the replica check. Last, a one-rank job whose step the host paces (the job's
``launch_pace_cycles``) times that step beside its host's launch pace
(perfkit.workloads.training.launch_pace), and one whose step the GPU paces (``gpu_alone``) times it on the
GPU alone too (perfkit.measure.record.gpu_alone): DDP's reducer adds host work to each step, and a slow
host's pace showed through a ResNet-50 step.
"""
from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable, Iterator

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile

from perfkit.measure import record, timing
from perfkit.parallel.collectives import allreduce_seconds
from perfkit.parallel.launch import Worker
from perfkit.parallel.records import ScalingJob, ScalingResult, TrainingRun
from perfkit.resultfile import comm
from perfkit.resultfile.payloads import NcclProfile
from perfkit.workloads import data, models, training
from perfkit.workloads.training import Batch, Step, time_steps, train_step


def wrap(model: nn.Module, worker: Worker) -> DistributedDataParallel:
    ids = [worker.device] if worker.device.type == "cuda" else None
    return DistributedDataParallel(model.to(worker.device).train(), device_ids=ids)


def batches(worker: Worker, job: ScalingJob) -> tuple[Callable[[int], Iterator[Batch]], int]:
    """Per-epoch batch iterators for this rank and the number of steps in an epoch.

    ``cifar10``: this rank's shard of CIFAR-10 (or its synthetic stand-in), on the device.
    ``random``: one random batch made on the device and reused: the seed's VGG16 run fed
    random images of (8192, 3, 224, 224); only the step count of an epoch matters for time.
    """
    batch = job.batch
    if job.data == "cifar10":
        root = data.data_root(job.data_root)
        images = data.cifar10(root, train=True, size=job.dataset_size).to(worker.device)
        steps = data.steps_per_epoch(len(images), batch, worker.world)
        return (lambda epoch: data.epoch_batches(images, batch, epoch, worker.rank, worker.world)), steps
    x, y = models.synthetic_batch(batch, job.input, worker.device, seed=worker.rank)
    size = job.dataset_size
    steps = data.steps_per_epoch(size, batch, worker.world) if size else max(job.steps, job.warmup)
    return (lambda _: iter([(x, y)] * steps)), steps


def scaling(worker: Worker, job: ScalingJob) -> ScalingResult:
    startup_s, began = worker.since_launch(), time.perf_counter()
    # cuDNN's heuristic choice, as nn.DataParallel beside it: its timed search could pick other kernels than
    # DataParallel ran, and compiled run-time engines for 12-14 s a model on a fresh machine
    # (perfkit.resultfile.figures.DDP_HEURISTIC_CONVS)
    torch.backends.cudnn.benchmark = False
    torch.manual_seed(0)
    model = models.build(job.model)
    ddp = wrap(model, worker)
    optimizer = training.sgd_momentum(ddp)
    epochs, steps_per_epoch = batches(worker, job)
    step = train_step(ddp, optimizer)
    cuda = worker.device.type == "cuda"
    build_s = time.perf_counter() - began
    warm_s, _, warm_losses = time_steps(step, epochs(0), worker.device, job.warmup)
    first_loss = float(warm_losses[0])
    if cuda:
        torch.cuda.reset_peak_memory_stats(worker.device)
    setup_s = time.perf_counter() - began
    step_s, loop_s, losses = time_steps(step, epochs(1), worker.device, None if job.epoch else job.steps)
    peak = torch.cuda.max_memory_allocated(worker.device) if cuda else None
    replicas = replica_difference(model)
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    # one GPU has nothing to all-reduce: its NCCL split would be dropped (and torch.profiler's start-up costs
    # seconds of the nightly)
    profile = _profile_split(step, epochs(2), job.profile_steps) if cuda and worker.world > 1 else None
    nosync = time_steps(train_step(ddp, optimizer, sync=False), epochs(3), worker.device, job.nosync_steps)[0]
    pace = None
    gpu_step_s: tuple[float, ...] = ()
    gpu_step_unmeasured = ""
    if worker.world == 1 and (job.launch_pace_cycles or job.gpu_alone):
        resident = functools.partial(step, next(epochs(4)))
        if job.launch_pace_cycles:
            pace = training.launch_pace(resident, worker.device, job.launch_pace_cycles)
        elif cuda:
            gpu_step_s, gpu_step_unmeasured = record.gpu_alone(resident, statistics.median(step_s))
    raw = allreduce_seconds(grad_bytes // 4, worker.device, job.allreduce_reps) if worker.world > 1 else None
    peaks: list[int | None] = [None] * worker.world
    dist.all_gather_object(peaks, peak)
    run = TrainingRun(
        worker.world,
        job.batch * worker.world,
        job.batch,
        tuple(step_s),
        loop_s if job.epoch else None,
        steps_per_epoch,
        first_loss,
        float(losses[-1]),
        tuple(peaks),
        replicas,
        launch_pace=pace,
        gpu_step_s=gpu_step_s,
        gpu_step_unmeasured=gpu_step_unmeasured,
    )
    return ScalingResult(run, models.parameter_count(model), grad_bytes, tuple(nosync), profile,
                         None if raw is None else tuple(raw), startup_s, setup_s, build_s, warm_s[0])


def replica_difference(model: nn.Module) -> float:
    """Largest |difference| between this rank's parameters and rank 0's, the same on every rank.

    DDP averages gradients before every update, so replicas must hold bit-identical parameters;
    buffers (batch-norm statistics) are left out: each rank updates them from its own batch.
    """
    flat = torch.cat([p.detach().reshape(-1).float() for p in model.parameters()])
    reference = flat.clone()
    dist.broadcast(reference, src=0)
    difference = (flat - reference).abs().max()
    dist.all_reduce(difference, op=dist.ReduceOp.MAX)
    return float(difference)


def _profile_split(step: Step, stream: Iterator[Batch], steps: int) -> NcclProfile:
    """Per-step NCCL kernel time, the part of it overlapped by other kernels, and non-NCCL kernel time."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _, batch in zip(range(steps), stream):
            step(batch)
        timing.synchronize()
    nccl: list[comm.Interval] = []
    compute: list[comm.Interval] = []
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        span = (float(event.time_range.start) / 1e6, float(event.time_range.end) / 1e6)
        (nccl if "nccl" in event.name.lower() else compute).append(span)
    return NcclProfile(steps, comm.total(nccl) / steps, comm.total(compute) / steps,
                       comm.overlap(nccl, compute) / steps, len(nccl))
