"""The course's layer stack (seed 000, Task 1): ``num_conv`` convolutions, then ``num_fc`` fully-connected
layers, on a (16, 64, 112, 112) input; how many fit on one GPU, and split across two.

The seed names the input and the layer kinds, not their shapes. perfkit uses the smallest choice that
keeps every activation the input's shape, so any mix of the two kinds chains:

- conv layer: ``Conv2d(64, 64, kernel_size=3, padding=1)`` then ``ReLU(inplace=True)``;
  (16, 64, 112, 112) → (16, 64, 112, 112); 36,928 parameters; 14.8 GFLOP.
- fc layer: ``Linear(112, 112)`` over the last dimension then ``ReLU(inplace=True)``; the same shape;
  12,656 parameters; 2.9 GFLOP.

By FLOPs this reproduces the seed's time: 61 conv + 62 fc is 1.08 TFLOP, 98 ms at a GTX 1080 Ti's
11 TFLOP/s, against the 109 ms it measured. The forward runs with autograd on, like the seed's plain
``model(x)``: every layer keeps its input (51.4 MB in fp32) for a backward pass, and that is what fills
memory as the stack grows; the weights are a few MB in all.
"""
from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from perfkit.measure import capacity, timing
from perfkit.measure.memory import SavedStorages

FULL_INPUT = (16, 64, 112, 112)
QUICK_INPUT = (2, 8, 28, 28)


def kinds(num_conv: int, num_fc: int) -> list[str]:
    """The stack's layers in order: ``num_conv`` times "conv", then ``num_fc`` times "fc"."""
    return ["conv"] * num_conv + ["fc"] * num_fc


def layer(kind: str, shape: Sequence[int], device: torch.device | str | None = None) -> nn.Sequential:
    """One layer for an input of ``shape`` (batch, channels, height, width), built on ``device`` directly."""
    if kind == "conv":
        return nn.Sequential(nn.Conv2d(shape[1], shape[1], kernel_size=3, padding=1, device=device),
                             nn.ReLU(inplace=True))
    return nn.Sequential(nn.Linear(shape[3], shape[3], device=device), nn.ReLU(inplace=True))


def build(num_conv: int, num_fc: int, shape: Sequence[int] = FULL_INPUT,
          device: torch.device | str | None = None) -> nn.Sequential:
    return nn.Sequential(*(layer(kind, shape, device) for kind in kinds(num_conv, num_fc)))


@functools.cache  # every probe of the split asks again for the same shape
def kept_bytes_per_layer(shape: tuple[int, ...]) -> dict[str, int]:
    """What one more layer of each kind adds to what the stack keeps for backward (a layer's output is the
    next one's saved input, so it is counted once): measured on the CPU for one sample and scaled to the
    batch, which it is linear in."""
    x = torch.randn(1, *shape[1:])

    def kept(stack: nn.Sequential) -> int:
        with SavedStorages(exclude=stack.parameters()).watch() as saved:
            stack(x.clone())
        return saved.peak

    out = {}
    for kind in ("conv", "fc"):
        one, two = (nn.Sequential(*(layer(kind, shape) for _ in range(n))) for n in (1, 2))
        out[kind] = (kept(two) - kept(one)) * shape[0]
    return out


def balanced_split(kept: Sequence[int], first_extra: int = 0, second_extra: int = 0) -> int:
    """The layer index that divides a stack whose layers keep ``kept`` bytes so that the fuller device holds
    as little as possible; ``first_extra`` / ``second_extra`` are held beside the layers (the input on the
    first device, the activation copied across and the output on the second)."""
    total, best, best_at, before = sum(kept), None, 1, 0
    for at in range(1, len(kept)):
        before += kept[at - 1]
        fuller = max(first_extra + before, second_extra + total - before)
        if best is None or fuller < best:
            best, best_at = fuller, at
    return best_at


@dataclass(frozen=True)
class StackForward:
    """A capacity probe: one forward of a freshly built stack with autograd on; ``knob`` says which counts
    the probed value sets (both, or one kind with the other at ``fixed``). A dataclass, so it can be sent to
    the fresh process a search runs in."""

    knob: str  # "balanced": num_conv = num_fc = n; "conv": num_conv = n; "fc": num_fc = n
    shape: tuple[int, ...]
    device: torch.device
    fixed: int = 0

    def counts(self, n: int) -> tuple[int, int]:
        return {"balanced": (n, n), "conv": (n, self.fixed), "fc": (self.fixed, n)}[self.knob]

    def __call__(self, n: int) -> None:
        build(*self.counts(n), self.shape, self.device)(torch.randn(*self.shape, device=self.device))


def largest_stack(knob: str, shape: tuple[int, ...], device: torch.device,
                  budget: capacity.Budget) -> tuple[int, int, capacity.Capacity]:
    """The seed's searches: the largest num_conv = num_fc = n, then for ``knob`` "conv" or "fc" the largest
    count of that kind with the other fixed at n. Returns (num_conv, num_fc) and the last search."""
    found = capacity.search(StackForward("balanced", shape, device), budget)
    if knob == "balanced":
        return found.largest, found.largest, found
    grow = StackForward(knob, shape, device, fixed=found.largest)
    found = capacity.search(grow, budget, start=found.largest)
    return (*grow.counts(found.largest), found)


def split_point(n: int, shape: tuple[int, ...]) -> int:
    """Where an n + n stack splits across two devices: beside what its layers keep, the first holds its last
    output until it is copied, the second the final output (:func:`balanced_split`)."""
    kept = kept_bytes_per_layer(shape)
    activation = math.prod(shape) * 4
    return balanced_split([kept[k] for k in kinds(n, n)], activation, activation)


@dataclass(frozen=True)
class SplitForward:
    """A capacity probe of the two-device split: one forward of a fresh n + n :class:`TwoDeviceStack`."""

    shape: tuple[int, ...]
    devices: tuple[torch.device, torch.device]

    def __call__(self, n: int) -> None:
        stack = TwoDeviceStack(n, n, split_point(n, self.shape), self.shape, self.devices)
        stack.forward(torch.randn(*self.shape, device=self.devices[0]))


def largest_split(shape: tuple[int, ...], devices: tuple[torch.device, torch.device],
                  budget: capacity.Budget) -> capacity.Capacity:
    """The largest n + n stack that fits split across the two devices."""
    return capacity.search(SplitForward(shape, devices), budget)


@dataclass(frozen=True)
class SplitTimes:
    """One forward of a two-device stack: each part's time and the device-to-device copy between them
    (seconds)."""

    first: float
    transfer: float
    second: float

    @property
    def total(self) -> float:
        return self.first + self.transfer + self.second


class TwoDeviceStack:
    """A pipeline split of the stack: layers before ``at`` on the first device, the rest on the second.

    The forward is sequential (one micro-batch, as the seed ran it), so each part is timed by
    synchronizing its device: the two parts and the copy never overlap.
    """

    def __init__(self, num_conv: int, num_fc: int, at: int, shape: Sequence[int],
                 devices: tuple[torch.device, torch.device]) -> None:
        order = kinds(num_conv, num_fc)
        self.first = nn.Sequential(*(layer(kind, shape, devices[0]) for kind in order[:at]))
        self.second = nn.Sequential(*(layer(kind, shape, devices[1]) for kind in order[at:]))
        self.devices = devices

    def forward(self, x: torch.Tensor, clock: Callable[[], float] = time.perf_counter
                ) -> tuple[torch.Tensor, SplitTimes]:
        _synchronize(self.devices[0])
        marks = [clock()]
        hidden = self.first(x)
        _synchronize(self.devices[0])
        marks.append(clock())
        moved = hidden.to(self.devices[1])
        _synchronize(self.devices[1])
        marks.append(clock())
        out = self.second(moved)
        _synchronize(self.devices[1])
        marks.append(clock())
        return out, SplitTimes(marks[1] - marks[0], marks[2] - marks[1], marks[3] - marks[2])


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_stack(
    num_conv: int,
    num_fc: int,
    shape: tuple[int, ...],
    device: torch.device,
    warmup: int,
    rounds: int,
    budget: capacity.Budget,
) -> tuple[float, ...]:
    """Seconds of each of ``rounds`` forwards of a fresh stack after ``warmup`` (the seed's timing), for
    :func:`perfkit.measure.capacity.in_fresh_process`: a process whose memory no earlier benchmark holds,
    under the budget's cap, and that never ran out of memory (the searches run in another)."""
    model, x = build(num_conv, num_fc, shape, device), torch.randn(*shape, device=device)

    def forward() -> None:  # returns nothing: each round's graph is freed before the next starts
        model(x)

    return timing.time_host(forward, rounds, warmup).seconds


def time_split(num_conv: int, num_fc: int, at: int, shape: tuple[int, ...],
               devices: tuple[torch.device, torch.device], warmup: int, rounds: int,
               budget: capacity.Budget) -> tuple[SplitTimes, ...]:
    """Each of ``rounds`` forwards of a fresh split stack, by part, after ``warmup`` (as
    :func:`time_stack`)."""
    stack, x = TwoDeviceStack(num_conv, num_fc, at, shape, devices), torch.randn(*shape, device=devices[0])
    for _ in range(warmup):
        stack.forward(x)
    return tuple(stack.forward(x)[1] for _ in range(rounds))
