"""Time to accuracy (seed 002 Problem 2, after Coleman et al.'s analysis of DAWNBench): train until the
validation accuracy reaches a target, and how stable that time is over runs that differ only in their seed.

TTA is wall-clock from the first training step to the end of the evaluation that first reaches the
target: evaluation included, as DAWNBench counts it, and also reported alone. A run that does not reach
the target within its epoch cap is a result too (``reached`` False), never dropped or left hanging.
The optimiser is seed 004's (SGD, momentum 0.9, weight decay 5e-4) with a one-cycle learning rate over
the epoch cap, as DAWNBench's CIFAR entries train.

:class:`Variant` names one way to run the same training (Problem 2.4, raising GPU utilisation):
DataLoader workers and pinned memory, the set resident on the GPU, channels_last, bf16 autocast,
``torch.compile`` (``reduce-overhead``: CUDA graphs), a larger batch, cuDNN's deterministic algorithms.
"""
from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from perfkit.errors import UsageError
from perfkit.measure import timing
from perfkit.workloads import data, models, training, tta_variants
from perfkit.workloads.tta_variants import NAIVE, Variant

#: The variants by name: plain data, in a module without torch (the across-hardware expectations read them).
VARIANTS = tta_variants.VARIANTS
cov = tta_variants.cov

log = logging.getLogger("perfkit.tta")
#: Seed 004's optimiser settings for CIFAR-10.
LR, MOMENTUM, WEIGHT_DECAY = 0.1, 0.9, 5e-4


@dataclass(frozen=True)
class Run:
    """One training run to the target (or to the epoch cap)."""

    seed: int
    reached: bool
    tta_s: float | None  # first step to the end of the evaluation that reached the target
    train_s: float  # training alone, over the epochs run
    eval_s: float  # evaluations alone
    epochs: int  # epochs run: to the target, or the cap
    accuracies: tuple[float, ...]  # validation accuracy after each epoch
    images: int  # training images processed
    shifted_accuracy: float | None  # the final model on the distribution-shifted set
    trained_s: tuple[float, ...] = ()  # training time (evaluations left out) at each evaluation

    @property
    def images_per_s(self) -> float:
        return self.images / self.train_s if self.train_s > 0 else 0.0

    def crossing_s(self, target: float) -> float | None:
        """The training time at which the validation accuracy crossed ``target``, interpolated between the
        evaluation before and the one that reached it (from no accuracy at no training before the first): a
        run that reaches the target just after an evaluation is not charged a whole epoch more than one just
        before it. None where it did not reach the target."""
        if not self.reached or len(self.trained_s) != len(self.accuracies):
            return None
        points = [(0.0, 0.0), *zip(self.trained_s, self.accuracies)]
        for (t0, a0), (t1, a1) in itertools.pairwise(points):
            if a1 >= target:
                return t1 if a1 <= a0 else t0 + (t1 - t0) * (max(target, a0) - a0) / (a1 - a0)
        return None


def warm_up(model_name: str, variant: Variant, device: torch.device, steps: int = 3) -> None:
    """A few untimed training steps on a synthetic batch, so the first timed run does not carry what a process
    does once (``torch.compile``'s compilation, CUDA graph capture, cuDNN's algorithm choice, lazy module
    loading): the R runs then differ only in their seed."""
    _model, forward, optimizer, memory_format, autocast = _prepared(model_name, variant, device)
    x, y = models.synthetic_batch(variant.batch, data.CIFAR10_SHAPE, device, classes=data.CIFAR10_CLASSES)
    with _algorithms(variant):
        for _ in range(steps):
            _step(forward, optimizer, autocast, x.contiguous(memory_format=memory_format), y)
    timing.synchronize()


@contextmanager
def _algorithms(variant: Variant) -> Iterator[None]:
    """cuDNN's deterministic algorithms (autotuner off) for a deterministic variant, the process's own
    choice restored after; nothing for the others."""
    cudnn = torch.backends.cudnn
    before = cudnn.deterministic, cudnn.benchmark
    if variant.deterministic:
        cudnn.deterministic, cudnn.benchmark = True, False
    try:
        yield
    finally:
        cudnn.deterministic, cudnn.benchmark = before


def _prepared(model_name: str, variant: Variant, device: torch.device) -> tuple[
        nn.Module, Callable[..., torch.Tensor], torch.optim.Optimizer, torch.memory_format, Any]:
    """A fresh model as the variant runs it: memory format, compiled forward, optimiser, autocast."""
    model = models.build(model_name).to(device).train()
    memory_format = torch.channels_last if variant.channels_last else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    forward = torch.compile(model, mode=variant.compile_mode) if variant.compile_mode else model
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if variant.bf16 else nullcontext()
    return model, forward, optimizer, memory_format, autocast


def _step(
    forward: Callable[..., torch.Tensor],
    optimizer: torch.optim.Optimizer,
    autocast: Any,
    x: torch.Tensor,
    y: torch.Tensor,
) -> None:
    optimizer.zero_grad(set_to_none=True)
    with autocast:
        loss = nn.functional.cross_entropy(forward(x), y)
    loss.backward()
    optimizer.step()


def train_to_target(
    model_name: str,
    train: data.ImageSet,
    valid: data.ImageSet,
    target: float,
    epoch_cap: int,
    device: torch.device,
    seed: int = 0,
    variant: Variant = NAIVE,
    shifted: data.ImageSet | None = None,
    progress: Callable[[str], None] = log.info,
    schedule_epochs: int | None = None,
) -> Run:
    """Train a fresh ``model_name`` from ``seed`` until ``valid`` accuracy reaches ``target`` or
    ``epoch_cap``.

    The one-cycle schedule spans ``schedule_epochs`` (default: the cap); past it the rate stays at its end
    value, so a cap set generously for safety does not stretch the schedule, and with it the TTA.
    Long on purpose: the timed loop, its clocks and what it counts read as the one measurement they are.
    """
    if not 0 < target <= 1:
        raise UsageError(f"target accuracy {target} must be a fraction in (0, 1]")
    if variant.batch > len(train):
        raise UsageError(f"batch {variant.batch} exceeds the training set ({len(train)} images)")
    with _algorithms(variant):
        torch.manual_seed(seed)
        model, forward, optimizer, memory_format, autocast = _prepared(model_name, variant, device)
        steps = len(train) // variant.batch
        total = steps * min(schedule_epochs or epoch_cap, epoch_cap)
        schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=LR, total_steps=total)
        batches = _feed(train, variant, device, seed)
        valid, shifted = valid.to(device), shifted.to(device) if shifted is not None else None

        accuracies: list[float] = []
        trained: list[float] = []
        train_s = eval_s = 0.0
        images = 0
        start = timing.synchronized_clock()
        reached_at = None
        for epoch in range(epoch_cap):
            epoch_start = timing.synchronized_clock()
            for x, y in batches(epoch):
                _step(forward, optimizer, autocast, x.contiguous(memory_format=memory_format), y)
                if schedule.last_epoch < total:  # OneCycleLR refuses to step past its end
                    schedule.step()
                images += len(y)
            eval_start = timing.synchronized_clock()
            train_s += eval_start - epoch_start
            trained.append(train_s)
            accuracies.append(training.evaluate(model, valid)[1])
            eval_s += timing.synchronized_clock() - eval_start
            elapsed = timing.synchronized_clock() - start
            progress(
                f"seed {seed} epoch {epoch + 1}/{epoch_cap}: validation {accuracies[-1]:.1%} "
                f"(target {target:.0%}), {elapsed:.0f} s, ETA ≤ "
                f"{elapsed / (epoch + 1) * (epoch_cap - epoch - 1):.0f} s"
            )
            if accuracies[-1] >= target:
                reached_at = elapsed
                break
        final_shifted = training.evaluate(model, shifted)[1] if shifted is not None else None
        return Run(
            seed,
            reached_at is not None,
            reached_at,
            train_s,
            eval_s,
            len(accuracies),
            tuple(accuracies),
            images,
            final_shifted,
            tuple(trained),
        )


def _feed(train: data.ImageSet, variant: Variant, device: torch.device,
          seed: int) -> Callable[[int], Iterator[tuple[torch.Tensor, torch.Tensor]]]:
    """Epoch streams as the variant feeds them: from the GPU-resident set, or through a DataLoader."""
    if variant.resident:
        on_device = train.to(device)
        return lambda epoch: data.epoch_batches(on_device, variant.batch, epoch, seed=seed)
    host = data.HostLoader(train, variant.batch, device, variant.workers, variant.pin_memory, seed=seed)
    return lambda epoch: host.epoch()
