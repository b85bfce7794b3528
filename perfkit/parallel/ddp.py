"""What each rank measures in the data-parallel families; run under torchrun by perfkit.parallel.launch.

Job kinds (``spec["kind"]``):

- ``scaling``: DistributedDataParallel training. Warm-up steps, then a timed epoch (or a fixed
  number of steps) with CUDA events per step on every rank and a synchronized host clock around
  the epoch; the replicas' parameters are compared; then torch.profiler over a few steps gives the
  time of NCCL kernels and how much of it ran while compute kernels ran; the same steps under
  ``no_sync`` (no gradient all-reduce) give the exposed communication time; and a raw
  ``all_reduce`` of a buffer as large as the gradients gives what the link delivers in this job.
  ``no_sync`` lets replicas drift apart, so it comes after the replica check.
- ``allreduce``: nccl-tests-style sweep of in-place float32 all-reduce over message sizes.
- ``accuracy``: train for some epochs at a global batch and learning-rule, report loss and accuracy.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import nullcontext
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile

from perfkit.errors import UsageError
from perfkit.measure import timing
from perfkit.parallel import comm
from perfkit.parallel.launch import Worker, worker_main
from perfkit.workloads import data, models, training

Batch = tuple[torch.Tensor, torch.Tensor]
#: The seeds' optimiser for CIFAR training (seed 004): SGD, momentum 0.9, weight decay 5e-4.
WEIGHT_DECAY = 5e-4


def run_job(worker: Worker, spec: dict[str, Any]) -> dict[str, Any] | None:
    jobs: dict[str, Callable[[Worker, dict[str, Any]], dict[str, Any]]] = {
        "scaling": scaling, "allreduce": allreduce_sweep, "accuracy": train_to_accuracy}
    if spec.get("kind") not in jobs:
        raise UsageError(f"unknown job kind {spec.get('kind')!r}; one of {', '.join(jobs)}")
    return jobs[spec["kind"]](worker, spec)


def _wrap(model: nn.Module, worker: Worker) -> DistributedDataParallel:
    ids = [worker.device] if worker.device.type == "cuda" else None
    return DistributedDataParallel(model.to(worker.device).train(), device_ids=ids)


def batches(worker: Worker, spec: dict[str, Any]) -> tuple[Callable[[int], Iterator[Batch]], int]:
    """Per-epoch batch iterators for this rank and the number of steps in an epoch.

    ``cifar10``: this rank's shard of CIFAR-10 (or its synthetic stand-in), on the device.
    ``random``: one random batch made on the device and reused: the seed's VGG16 run fed
    random images of (8192, 3, 224, 224); only the step count of an epoch matters for time.
    """
    batch = spec["batch"]
    if spec["data"] == "cifar10":
        root = data.data_root(spec.get("data_root"))
        images = data.cifar10(root, train=True, size=spec.get("dataset_size")).to(worker.device)
        steps = data.steps_per_epoch(len(images), batch, worker.world)
        return (lambda epoch: data.epoch_batches(images, batch, epoch, worker.rank, worker.world)), steps
    x, y = models.synthetic_batch(batch, spec["input"], worker.device, seed=worker.rank)
    size = spec.get("dataset_size")
    steps = data.steps_per_epoch(size, batch, worker.world) if size else max(spec["steps"], spec["warmup"])
    return (lambda _: iter([(x, y)] * steps)), steps


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, sync: bool = True) -> Callable[[Batch], torch.Tensor]:
    loss_fn = nn.CrossEntropyLoss()

    def step(batch: Batch) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        with model.no_sync() if not sync and isinstance(model, DistributedDataParallel) else nullcontext():
            loss = loss_fn(model(batch[0]), batch[1])
            loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def timed(step: Callable[[Batch], torch.Tensor], stream: Iterator[Batch], device: torch.device,
           limit: int | None = None) -> tuple[list[float], float, list[float]]:
    """(per-step seconds, whole-loop seconds on a synchronized host clock, losses)."""
    regions = timing.spans(device)
    losses = []
    start = timing.synchronized_clock()
    for i, batch in enumerate(stream):
        if limit is not None and i >= limit:
            break
        with regions.region():
            losses.append(step(batch))
    elapsed = timing.synchronized_clock() - start
    return list(regions.samples().seconds), elapsed, [float(v) for v in losses]


def scaling(worker: Worker, spec: dict[str, Any]) -> dict[str, Any]:
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model = models.build(spec["model"])
    ddp = _wrap(model, worker)
    optimizer = training.sgd_momentum(ddp)
    epochs, steps_per_epoch = batches(worker, spec)
    step = train_step(ddp, optimizer)
    cuda = worker.device.type == "cuda"
    warm = epochs(0)
    first_loss = float(timed(step, warm, worker.device, spec["warmup"])[2][0])
    if cuda:
        torch.cuda.reset_peak_memory_stats(worker.device)
    timed_steps = None if spec["epoch"] else spec["steps"]
    step_s, loop_s, losses = timed(step, epochs(1), worker.device, timed_steps)
    peak = torch.cuda.max_memory_allocated(worker.device) if cuda else None
    result: dict[str, Any] = {
        "world": worker.world, "model": spec["model"], "batch_per_gpu": spec["batch"],
        "global_batch": spec["batch"] * worker.world, "parameters": models.parameter_count(model),
        "grad_bytes": sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad),
        "step_s": step_s, "steps_per_epoch": steps_per_epoch, "timed_steps": len(step_s),
        "epoch_s": loop_s if spec["epoch"] else None, "loss_first": first_loss, "loss_last": losses[-1],
        "replicas_max_abs_diff": replica_difference(model),
    }
    result["profile"] = _profile_split(step, epochs(2), spec["profile_steps"]) if cuda else None
    result["nosync_step_s"] = timed(train_step(ddp, optimizer, sync=False), epochs(3), worker.device,
                                     spec["nosync_steps"])[0]
    result["allreduce_op_s"] = (_allreduce_seconds(result["grad_bytes"] // 4, worker.device, spec["allreduce_reps"])
                                if worker.world > 1 else None)
    ranks: list[Any] = [None] * worker.world
    dist.all_gather_object(ranks, {"rank": worker.rank, "peak_allocated": peak})
    result["ranks"] = ranks
    return result


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


def _profile_split(step: Callable[[Batch], torch.Tensor], stream: Iterator[Batch],
                   steps: int) -> dict[str, float]:
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
    return {"steps": steps, "nccl_s": comm.total(nccl) / steps, "compute_s": comm.total(compute) / steps,
            "nccl_overlapped_s": comm.overlap(nccl, compute) / steps, "nccl_kernels": len(nccl)}


def _allreduce_seconds(elements: int, device: torch.device, repetitions: int, per_sample: int = 10) -> list[float]:
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
    rows = [{"bytes": size, "op_s": _allreduce_seconds(size // 4, worker.device, spec["repetitions"])}
            for size in sizes]
    return {"world": worker.world, "rows": rows}


def train_to_accuracy(worker: Worker, spec: dict[str, Any]) -> dict[str, Any]:
    """Train ``epochs`` at ``global_batch`` and report per-epoch train loss/accuracy and test accuracy.

    ``rule``: ``same`` keeps the base learning rate; ``linear-warmup`` multiplies it by
    global_batch / base_batch (Goyal et al.'s linear scaling rule) and ramps up to it linearly
    over ``warmup_epochs`` (torch's LinearLR).
    """
    global_batch, world = spec["global_batch"], worker.world
    if global_batch % world:
        raise UsageError(f"global batch {global_batch} does not split evenly over {world} GPUs")
    batch = global_batch // world
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(spec.get("seed", 0))
    root = data.data_root(spec.get("data_root"))
    train = data.cifar10(root, train=True, size=spec.get("train_size")).to(worker.device)
    test = data.cifar10(root, train=False, size=spec.get("test_size")).to(worker.device)
    model = models.build(spec["model"])
    ddp = _wrap(model, worker)
    scale = global_batch / spec["base_batch"] if spec["rule"] == "linear-warmup" else 1.0
    lr = spec["base_lr"] * scale
    optimizer = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=0.9, weight_decay=WEIGHT_DECAY)
    steps = data.steps_per_epoch(len(train), batch, world)
    warmup_steps = spec.get("warmup_epochs", 0) * steps if scale > 1 else 0
    scheduler = (torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1 / scale, total_iters=warmup_steps)
                 if warmup_steps else None)
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    history = []
    start = timing.synchronized_clock()
    for epoch in range(spec["epochs"]):
        epoch_start = timing.synchronized_clock()
        totals = torch.zeros(3, device=worker.device)  # loss sum, correct, seen
        for x, y in data.epoch_batches(train, batch, epoch, worker.rank, world, seed=spec.get("seed", 0)):
            optimizer.zero_grad(set_to_none=True)
            out = ddp(x)
            loss = loss_fn(out, y)
            (loss / len(y)).backward()
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            totals[0] += loss.detach()  # in place on the device: no host copy, no stream sync per step
            totals[1] += (out.argmax(1) == y).sum()
            totals[2] += len(y)
        dist.all_reduce(totals)
        history.append({"epoch": epoch, "train_loss": float(totals[0] / totals[2]),
                        "train_accuracy": float(totals[1] / totals[2]),
                        "seconds": timing.synchronized_clock() - epoch_start})
    train_s = timing.synchronized_clock() - start
    test_loss, test_accuracy = evaluate(model, test)
    return {"world": world, "global_batch": global_batch, "batch_per_gpu": batch, "lr": lr, "rule": spec["rule"],
            "steps_per_epoch": steps, "warmup_steps": warmup_steps, "history": history, "train_s": train_s,
            "test_loss": test_loss, "test_accuracy": test_accuracy, "data": train.source,
            "replicas_max_abs_diff": replica_difference(model)}


@torch.no_grad()
def evaluate(model: nn.Module, test: data.ImageSet, chunk: int = 1000) -> tuple[float, float]:
    """Mean cross-entropy and accuracy over the whole test set (every rank computes the same)."""
    model.eval()
    loss, correct = 0.0, 0
    for start in range(0, len(test), chunk):
        x, y = test.batch(torch.arange(start, min(len(test), start + chunk), device=test.images.device))
        out = model(x)
        loss += float(nn.functional.cross_entropy(out, y, reduction="sum"))
        correct += int((out.argmax(1) == y).sum())
    model.train()
    return loss / len(test), correct / len(test)


if __name__ == "__main__":
    worker_main(run_job)
