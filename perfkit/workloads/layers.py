"""The course's single layers (seed 000, Task 2): what runs, what one call costs, and its check.

A ``forward`` call runs under ``torch.no_grad`` (inference). A ``forward_backward`` call runs the
layer on an input that requires grad and back-propagates a fixed output gradient, computing the
input gradient as an inner layer of a network would, plus the weight gradients. ReLU(inplace=True)
cannot overwrite a leaf that requires grad, so its forward_backward first clones the input (the
clone is counted in its bytes).

Bytes are an analytic minimum, every tensor a pass must touch read or written once: forward reads
the input and weights and writes the output; backward reads the output gradient, the saved tensor
and the weights and writes the input and weight gradients. An implementation may move more (max
pooling's int64 indices), so a percent of peak from these bytes is a floor on the traffic.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from perfkit.errors import MeasurementError, UsageError
from perfkit.workloads.flops import count_flops

Pass = Literal["forward", "forward_backward"]
PASSES: tuple[Pass, ...] = ("forward", "forward_backward")
#: Largest |error| / max|reference| accepted against a float64 CPU reference (cuDNN may use TF32).
TOLERANCE = 2e-2


@dataclass(frozen=True)
class LayerCase:
    """A course layer: its constructor, the course's input shape, and which rate bounds it."""

    name: str
    build: Callable[[], nn.Module]
    full_input: tuple[int, ...]
    bound: Literal["compute", "memory"]
    op: str = ""  # "conv" or "matmul": picks the precision ceiling of compute-bound layers

    def input_shape(self, batch: int | None = None) -> tuple[int, ...]:
        """The course's shape, or the same shape with another batch (the quick profile)."""
        return self.full_input if batch is None else (batch, *self.full_input[1:])


LAYERS: tuple[LayerCase, ...] = (
    LayerCase("relu", lambda: nn.ReLU(inplace=True), (256, 3, 224, 224), "memory"),
    LayerCase(
        "maxpool", lambda: nn.MaxPool2d(kernel_size=2, stride=2, padding=0), (256, 3, 224, 224), "memory"
    ),
    LayerCase(
        "conv", lambda: nn.Conv2d(3, 128, kernel_size=3, padding=1), (256, 3, 224, 224), "compute", "conv"
    ),
    LayerCase("linear", lambda: nn.Linear(512 * 7 * 7, 4096), (256, 512 * 7 * 7), "compute", "matmul"),
)


def by_name(name: str) -> LayerCase:
    for case in LAYERS:
        if case.name == name:
            return case
    raise UsageError(f"unknown layer {name!r}; choose one of {', '.join(c.name for c in LAYERS)}")


@dataclass(frozen=True)
class LayerWork:
    """What one call does: FLOPs as FlopCounterMode counts them and the analytic minimum bytes."""

    flops: int
    min_bytes: int


class LayerRun:
    """A layer on its device with its input, callable as one forward or forward + backward pass."""

    def __init__(self, case: LayerCase, shape: tuple[int, ...], device: torch.device, pass_: Pass) -> None:
        if pass_ not in PASSES:
            raise UsageError(f"unknown pass {pass_!r}; choose one of {PASSES}")
        self.case, self.pass_ = case, pass_
        gen = torch.Generator(device=device).manual_seed(0)
        self.module = case.build().to(device)
        self.x = torch.randn(shape, device=device, generator=gen, requires_grad=pass_ == "forward_backward")
        self._inplace = bool(getattr(self.module, "inplace", False))
        with torch.no_grad():
            self._grad_out = torch.ones_like(self.module(self.x.clone()))

    def __call__(self) -> None:
        if self.pass_ == "forward":
            with torch.no_grad():
                self.module(self.x)
            return
        self.x.grad = None
        self.module.zero_grad(set_to_none=True)
        out = self.module(self.x.clone() if self._inplace else self.x)
        out.backward(self._grad_out)

    def work(self) -> LayerWork:
        """FLOPs counted over one call, and the analytic minimum bytes (see the module docstring)."""
        flops = count_flops(self)
        size = self.x.element_size()
        x, y = self.x.numel() * size, self._grad_out.numel() * size
        weights = sum(p.numel() for p in self.module.parameters()) * size
        forward = x + weights + y
        if self.pass_ == "forward":
            return LayerWork(flops, forward)
        saved = y if self._inplace else x
        backward = y + saved + weights + x + weights
        clone = 2 * x if self._inplace else 0
        return LayerWork(flops, clone + forward + backward)

    def check(self) -> None:
        """The layer on two samples against a float64 CPU copy of itself (a fast wrong answer fails)."""
        sample = self.x.detach()[:2].clone()
        with torch.no_grad():
            got = self.module(sample.clone()).double().cpu()
            ref = copy.deepcopy(self.module).double().cpu()(sample.double().cpu())
        scale = ref.abs().max().item() or 1.0
        error = (got - ref).abs().max().item() / scale
        if error > TOLERANCE:
            raise MeasurementError(f"{self.case.name} output is wrong: relative error {error:.2e}")
