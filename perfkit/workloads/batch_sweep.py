"""Epoch time vs batch size (seeds 003 Q1 and 004 2.1): ResNet-18 on CIFAR-10-shaped data, batch ×4 from 32
until out-of-memory or until the batch exceeds the dataset.

Two ways in: the data resident on the GPU (seed 003's "w/o data-loading") and a ``DataLoader`` from host
memory (seed 004's path; workers and pinned memory settable). Each batch trains one untimed warm-up epoch
(cuDNN picks its algorithms, the allocator grows), then one timed epoch. Seed 004's sweep ran on to batch
8.6 billion because its loader silently caps every batch at the dataset's size; here a batch larger than
the dataset is refused with that reason, since an epoch of it would measure nothing.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from perfkit.errors import UsageError
from perfkit.measure import capacity, memory
from perfkit.workloads import data, models, training

MODEL = "resnet18-cifar"
FIRST_BATCH, FACTOR = 32, 4
VARIANTS = ("resident", "loader")


def series(dataset_size: int, first: int = FIRST_BATCH, factor: int = FACTOR) -> list[int]:
    """The course's batch sizes: ``first`` × ``factor``^k up to and including the first beyond the dataset."""
    out = [first]
    while out[-1] <= dataset_size:
        out.append(out[-1] * factor)
    return out


def check_fits_dataset(batch: int, dataset_size: int) -> None:
    if batch > dataset_size:
        raise UsageError(
            f"batch {batch} exceeds the dataset ({dataset_size} images): an epoch would be one partial "
            "batch, which a loader silently shrinks to the dataset (seed 004 timed batch sizes up to "
            "8.6 billion so); the sweep ends here"
        )


@dataclass(frozen=True)
class Loader:
    """How the host-memory variant feeds the GPU."""

    workers: int = 4
    pin_memory: bool = True


@dataclass(frozen=True)
class Epoch:
    """One timed epoch: its wall time on a synchronized clock, its steps, the allocator peak during it."""

    batch: int
    steps: int
    seconds: float
    step_seconds: tuple[float, ...]
    peak_bytes: int | None
    losses: tuple[float, ...]

    @property
    def images_per_s(self) -> float:
        return self.steps * self.batch / self.seconds


def train_epochs(train: data.ImageSet, batch: int, variant: str, device: torch.device,
                 loader: Loader = Loader()) -> Epoch:
    """A fresh model trained one warm-up epoch and one timed epoch at ``batch``, fed as ``variant`` says."""
    if variant not in VARIANTS:
        raise UsageError(f"unknown variant {variant!r}; choose {' or '.join(VARIANTS)}")
    check_fits_dataset(batch, len(train))
    resident = train.to(device) if variant == "resident" else train
    host = (
        data.HostLoader(train, batch, device, loader.workers, loader.pin_memory)
        if variant == "loader"
        else None
    )

    def stream(epoch: int) -> Iterator[training.Batch]:
        return data.epoch_batches(resident, batch, epoch) if host is None else host.epoch()

    model = models.build(MODEL).to(device).train()
    step = training.train_step(model, training.sgd_momentum(model))
    training.time_steps(step, stream(0), device)
    since = memory.allocated_bytes(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    step_seconds, seconds, losses = training.time_steps(step, stream(1), device)
    peak = torch.cuda.max_memory_allocated(device) - since if device.type == "cuda" else None
    return Epoch(batch, len(step_seconds), seconds, tuple(step_seconds), peak, tuple(losses))


def training_step(batch: int, device: torch.device) -> Callable[[], None]:
    """A fresh model and a synthetic CIFAR batch of ``batch`` images on ``device``; the callable runs one
    training step (the probe of the largest-batch search, and what is timed at the largest batch)."""
    model = models.build(MODEL).to(device).train()
    x, y = models.synthetic_batch(batch, data.CIFAR10_SHAPE, device, classes=data.CIFAR10_CLASSES)
    step = training.train_step(model, training.sgd_momentum(model))

    def run() -> None:
        step((x, y))

    return run


@dataclass(frozen=True)
class TrainingSteps:
    """A probe of the largest-batch search: ``steps`` training steps of a fresh model at the probed batch (the
    second step onwards holds the momentum buffers too, and from the third on the memory stays put). A
    dataclass, so it can be sent to the fresh process the search runs in."""

    device: torch.device
    steps: int = 3

    def __call__(self, batch: int) -> None:
        step = training_step(batch, self.device)
        for _ in range(self.steps):
            step()


def largest_batch(device: torch.device, dataset_size: int, first: int,
                  budget: capacity.Budget) -> capacity.Capacity:
    """The largest batch, from ``first`` (the sweep's :data:`FIRST_BATCH` at the course's sizes; lower under
    the quick profile's small synthetic budget, whose probes are then cheap) up to the dataset's size, that
    training steps fit."""
    return capacity.search(TrainingSteps(device), budget, start=first, limit=dataset_size)
