"""Train to accuracy on every rank (the large-batch family): a global batch, a learning-rate rule, loss and
accuracy."""

from __future__ import annotations

import torch
import torch.distributed as dist

from perfkit.errors import UsageError
from perfkit.measure import timing
from perfkit.parallel.ddp import replica_difference, wrap
from perfkit.parallel.launch import Worker
from perfkit.parallel.records import AccuracyJob, AccuracyResult
from perfkit.resultfile.payloads import EpochStats
from perfkit.workloads import data, models
from perfkit.workloads.training import evaluate, train_step

#: The seeds' optimiser for CIFAR training (seed 004): SGD, momentum 0.9, weight decay 5e-4.
WEIGHT_DECAY = 5e-4


def train_to_accuracy(worker: Worker, job: AccuracyJob) -> AccuracyResult:
    """Train ``epochs`` at ``global_batch`` and report per-epoch train loss/accuracy and test accuracy.

    ``rule``: ``same`` keeps the base learning rate; ``linear-warmup`` multiplies it by
    global_batch / base_batch (Goyal et al.'s linear scaling rule) and ramps up to it linearly
    over ``warmup_epochs`` (torch's LinearLR).
    """
    global_batch, world = job.global_batch, worker.world
    if global_batch % world:
        raise UsageError(f"global batch {global_batch} does not split evenly over {world} GPUs")
    batch = global_batch // world
    torch.backends.cudnn.benchmark = False  # no timed search: figures.LARGE_BATCH_HEURISTIC_CONVS says why
    torch.manual_seed(job.seed)
    root = data.data_root(job.data_root)
    recipe = data.RECIPES[job.recipe]  # the synthetic set's, when there is no root
    train = data.cifar10(root, train=True, size=job.train_size, recipe=recipe).to(worker.device)
    test = data.cifar10(root, train=False, size=job.test_size, recipe=recipe).to(worker.device)
    model = models.build(job.model)
    ddp = wrap(model, worker)
    scale = global_batch / job.base_batch if job.rule == "linear-warmup" else 1.0
    lr = job.base_lr * scale
    optimizer = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=0.9, weight_decay=WEIGHT_DECAY)
    steps = data.steps_per_epoch(len(train), batch, world)
    warmup_steps = job.warmup_epochs * steps if scale > 1 else 0
    scheduler = (
        torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1 / scale, total_iters=warmup_steps)
        if warmup_steps
        else None
    )
    step = train_step(ddp, optimizer, scheduler=scheduler)
    history = []
    start = timing.synchronized_clock()
    for epoch in range(job.epochs):
        epoch_start = timing.synchronized_clock()
        totals = torch.zeros(3, device=worker.device)  # loss sum, correct, seen
        for x, y in data.epoch_batches(train, batch, epoch, worker.rank, world, seed=job.seed):
            loss, logits = step((x, y))
            totals[0] += loss * len(y)  # in place on the device: no host copy, no stream sync per step
            totals[1] += (logits.argmax(1) == y).sum()
            totals[2] += len(y)
        dist.all_reduce(totals)
        history.append(EpochStats(epoch, float(totals[0] / totals[2]), float(totals[1] / totals[2]),
                                  timing.synchronized_clock() - epoch_start))
    train_s = timing.synchronized_clock() - start
    test_loss, test_accuracy = evaluate(model, test)
    return AccuracyResult(
        world,
        global_batch,
        batch,
        lr,
        job.rule,
        steps,
        warmup_steps,
        tuple(history),
        train_s,
        test_loss,
        test_accuracy,
        train.source,
        replica_difference(model),
    )
