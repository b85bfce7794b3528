"""Layer-by-layer forward timing on the GPU, the way Lu et al. and PALEO's tables time a network.

Each leaf module is timed alone on the input it received in a real forward pass (captured with
forward pre-hooks), with CUDA events around every call. The sum of these times differs from the
whole model's time: every separately timed layer pays its own launch and synchronisation, while
the whole model queues kernels back to back, and operations outside leaf modules (residual adds,
flattening) are in the model but in no layer. ``time_model`` measures the model plainly and as a
CUDA graph replay, which removes per-launch CPU overhead, so the overhead is a number, not a guess.
"""
from __future__ import annotations

import functools
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from perfkit.measure import timing

REPETITIONS, WARMUP = 10, 3
#: Passes over the layer sequence; a layer's time is the median of its timings from all of them. One pass
#: times the small last layers of a network within a few milliseconds of each other, so one disturbance of
#: that length (host or GPU) lifted all their medians: VGG19 at batch 64 read a layer sum 5% high on a fresh
#: H100 (features.33 ReLU 0.025 -> 0.363 ms, the next ten layers 1.4-3.7x), the model's own time unchanged.
#: Passes a few hundred milliseconds apart leave such a disturbance in a third of a layer's timings at most.
PASSES = 3


@dataclass(frozen=True)
class LayerTime:
    name: str
    type: str
    calls: int
    seconds: float  # median per forward, summed over the module's calls


def capture_calls(model: nn.Module, x: torch.Tensor) -> list[tuple[str, nn.Module, torch.Tensor]]:
    """(name, leaf module, a copy of its input) for every leaf call of one forward, in order."""
    calls: list[tuple[str, nn.Module, torch.Tensor]] = []

    def hook(name: str) -> Callable[..., None]:
        def pre(module: nn.Module, args: tuple[Any, ...]) -> None:
            if args and isinstance(args[0], torch.Tensor):
                calls.append((name, module, args[0].detach().clone()))
        return pre

    handles = [
        m.register_forward_pre_hook(hook(n)) for n, m in model.named_modules() if not list(m.children())
    ]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    return calls


def time_layers(model: nn.Module, x: torch.Tensor, passes: int = PASSES) -> list[LayerTime]:
    """Median CUDA-event time of each leaf module on its captured input (no_grad) over ``passes`` passes
    through the layer sequence, summed per module."""
    calls = capture_calls(model, x)
    samples: list[list[float]] = [[] for _ in calls]
    with torch.no_grad():
        for _ in range(passes):
            for timings, (_, module, inp) in zip(samples, calls):
                layer = functools.partial(module, inp)
                timings.extend(timing.time_cuda_events(layer, REPETITIONS, WARMUP).seconds)
    totals: dict[str, LayerTime] = {}
    for timings, (name, module, _) in zip(samples, calls):
        prev = totals.get(name)
        totals[name] = LayerTime(name, type(module).__name__, (prev.calls if prev else 0) + 1,
                                 (prev.seconds if prev else 0.0) + statistics.median(timings))
    return list(totals.values())


@dataclass(frozen=True)
class ModelTimes:
    events_s: float  # one forward between two events, launches included
    graph_s: float  # the same forward replayed as a CUDA graph

    @property
    def launch_overhead_s(self) -> float:
        return self.events_s - self.graph_s


def time_model(model: nn.Module, x: torch.Tensor) -> ModelTimes:
    def forward() -> None:
        with torch.no_grad():
            model(x)

    plain = timing.time_cuda_events(forward, REPETITIONS, WARMUP).median
    graph = timing.time_cuda_events(forward, REPETITIONS, WARMUP, mode="graph", batch=5).median
    return ModelTimes(plain, graph)
