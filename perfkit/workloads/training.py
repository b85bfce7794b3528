"""The one training step every family uses (training memory, DDP, DataParallel, accuracy), and its timed
loop."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils._python_dispatch import TorchDispatchMode

from perfkit.measure import record, timing
from perfkit.resultfile.payloads import (
    PACE_CYCLES,
    PACE_LAUNCHES,
    PACE_STEPS,
    LaunchPace,
)
from perfkit.workloads import data, models

Batch = tuple[torch.Tensor, torch.Tensor]
Step = Callable[[Batch], tuple[torch.Tensor, torch.Tensor]]


def sgd_momentum(model: nn.Module, lr: float = 0.01) -> torch.optim.Optimizer:
    """The course's optimizer: SGD with momentum 0.9 (one state buffer per parameter)."""
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, *, sync: bool = True,
               scheduler: torch.optim.lr_scheduler.LRScheduler | None = None) -> Step:
    """One step: zero grads, forward, cross-entropy, backward, update (then the scheduler, if any).

    Returns the loss and the logits, detached and still on the device (reading them would sync the
    stream). ``sync=False`` runs a DDP model under ``no_sync``: no gradient all-reduce.
    """
    loss_fn = nn.CrossEntropyLoss()
    skip_allreduce = not sync and isinstance(model, DistributedDataParallel)

    def step(batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        optimizer.zero_grad(set_to_none=True)
        with model.no_sync() if skip_allreduce else nullcontext():  # type: ignore[operator]
            logits = model(batch[0])
            loss = loss_fn(logits, batch[1])
            loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        return loss.detach(), logits.detach()

    return step


def time_steps(step: Step, stream: Iterator[Batch], device: torch.device,
               limit: int | None = None) -> tuple[list[float], float, list[float]]:
    """(per-step seconds, whole-loop seconds on a synchronized host clock, losses) over ``stream``.

    Steps are bracketed with CUDA events on a GPU (no stall between steps), a host clock on a CPU.
    """
    regions = timing.spans(device)
    losses = []
    start = timing.synchronized_clock()
    for i, batch in enumerate(stream):
        if limit is not None and i >= limit:
            break
        with regions.region():
            losses.append(step(batch)[0])
    elapsed = timing.synchronized_clock() - start
    return list(regions.samples().seconds), elapsed, [float(v) for v in losses]


def launch_pace(step: Callable[[], Any], device: torch.device, cycles: int = PACE_CYCLES,
                steps: int = PACE_STEPS, launches: int = PACE_LAUNCHES) -> LaunchPace:
    """``step`` (one training step on a resident batch) beside the launch pace of the same moments: each cycle
    a burst of ``steps`` steps, then one of ``launches`` tiny in-place ops, each burst synchronised. A
    launch-bound step follows its host's dispatch, which moves two-fold between processes of one machine;
    the tiny ops take the same path through the dispatcher, so the step over them holds where the step does
    not. What that ratio cannot see is a slowdown of every op's dispatch alike: the launch pace is kept
    beside it. On a GPU the step is then timed on the GPU alone, its launches queued ahead
    (perfkit.measure.record.gpu_alone): what its kernels cost, which the host's pace hides from its time.
    Last, one more step runs with its operators counted (:func:`ops_per_step`): the host work added to a
    step, which the paces, 5-20% apart between processes, cannot see."""
    tiny = torch.zeros(1, device=device)

    def launch() -> None:
        tiny.add_(1.0)

    def burst(call: Callable[[], Any], count: int) -> float:
        start = timing.synchronized_clock()
        for _ in range(count):
            call()
        return (timing.synchronized_clock() - start) / count

    burst(launch, launches)  # untimed: the first call loads the tiny op's kernel
    pairs = [(burst(step, steps), burst(launch, launches)) for _ in range(cycles)]
    step_s = statistics.median(s for s, _ in pairs)
    gpu_step_s, unmeasured = record.gpu_alone(step, step_s) if device.type == "cuda" else ((), "")
    return LaunchPace(step_s, statistics.median(lo for _, lo in pairs),
                      statistics.median(s / lo for s, lo in pairs), cycles, steps, launches, gpu_step_s,
                      unmeasured, ops_per_step(step))


class _OpCount(TorchDispatchMode):
    """Counts the operators that reach PyTorch's dispatcher below autograd (the backward's too)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        self.ops += 1
        return func(*args, **(kwargs or {}))


def ops_per_step(step: Callable[[], Any]) -> int:
    """The operators one call of ``step`` dispatches, forward, backward and update: what the host issues a
    step, which the code alone decides (the same on every run of the same code and PyTorch), so an op added
    to a launch-bound step is seen exactly where its time cannot be (the host's pace moves 5-20% between
    processes)."""
    with _OpCount() as count:
        step()
    return count.ops


def model_step(name: str, batch: int, input_shape: tuple[int, ...],
               device: torch.device) -> tuple[nn.Module, Callable[[], torch.Tensor]]:
    """A registered model in training mode on ``device`` with a synthetic batch and SGD with momentum;
    the returned callable runs one step on that batch and returns its loss without syncing."""
    model = models.build(name).to(device).train()
    x, y = models.synthetic_batch(batch, input_shape, device)
    models.forward_checked(model, x[:2])  # a shape the model cannot take fails here, in one sentence
    step = train_step(model, sgd_momentum(model))
    return model, lambda: step((x, y))[0]


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
