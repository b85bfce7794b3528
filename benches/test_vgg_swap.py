"""VGG16 with ReLU and MaxPool swapped (seed 000, Task 3), on the CPU and the GPU.

max-pooling commutes with a monotone activation, so the swapped network computes the same function with its
ReLUs on a quarter of the elements; each swapped benchmark checks its outputs against the normal network with
the same weights. Its time and peak memory as ratios to the normal network's (``time_ratio_vs_normal``,
``memory_ratio_vs_normal``) are added by the derived pass. Input (128, 3, 224, 224) on the GPU in the full
profile; on the CPU, (16, 3, 224, 224) in the full profile (a round at 128 costs minutes) and (2, 3, 64, 64)
in quick. Forward runs under ``torch.no_grad`` in eval mode; forward + backward in training mode. Peak memory
is net of what was allocated before the input was made (the weights), so it compares activations.
"""
from __future__ import annotations

import pytest
import torch

from perfkit.errors import MeasurementError
from perfkit.measure import memory, record
from perfkit.measure.ceilings import precision_in_use
from perfkit.resultfile import figures
from perfkit.resultfile.payloads import VggSwap
from perfkit.workloads import models

VARIANTS = ("normal", "swapped")
PASSES = ("forward", "forward_backward")
SHAPES = {("cuda", "full"): (128, 3, 224, 224), ("cuda", "quick"): (8, 3, 224, 224),
          ("cpu", "full"): (16, 3, 224, 224), ("cpu", "quick"): (2, 3, 64, 64)}
ROUNDS = {"cuda": (10, 5), "cpu": (3, 1)}


@pytest.fixture(scope="module")
def pairs() -> dict[str, tuple[torch.nn.Module, torch.nn.Module]]:
    """Normal and swapped VGG16 per device, holding the same weights (built on first use, freed with the
    module)."""
    return {}


def _pair(pairs, device: str) -> tuple[torch.nn.Module, torch.nn.Module]:
    if device not in pairs:
        torch.manual_seed(0)
        normal = models.vgg16().to(device)
        swapped = models.vgg16(swapped=True).to(device)
        swapped.load_state_dict(normal.state_dict())
        pairs[device] = normal, swapped
    return pairs[device]


def _step(model: torch.nn.Module, x: torch.Tensor, pass_: str):
    if pass_ == "forward":
        model.eval()

        def forward() -> None:
            with torch.no_grad():
                model(x)
        return forward
    model.train()

    def forward_backward() -> None:
        model.zero_grad(set_to_none=True)
        model(x).sum().backward()
    return forward_backward


def _check_same_function(normal: torch.nn.Module, swapped: torch.nn.Module, x: torch.Tensor) -> None:
    normal.eval()
    swapped.eval()
    with torch.no_grad():
        a, b = normal(x[:2]), swapped(x[:2])
    error = ((a - b).abs().max() / a.abs().max().clamp_min(1e-30)).item()
    if error > 1e-4:
        raise MeasurementError(f"the swapped VGG16 computes a different function: relative error {error:.2e}")


@pytest.mark.parametrize("pass_", [pytest.param(p, id=p) for p in PASSES])
@pytest.mark.parametrize("variant", [pytest.param(v, id=v) for v in VARIANTS])
@pytest.mark.parametrize(
    "where",
    [
        pytest.param("cpu", id="cpu", marks=pytest.mark.weekly),  # a CPU VGG16: seconds a step
        pytest.param("cuda", id="gpu", marks=pytest.mark.gpu),
    ],
)
def test_vgg16(benchmark, where, variant, pass_, perfkit_profile, perfkit_metrics, pairs):
    device = torch.device(where)
    shape = SHAPES[where, perfkit_profile.name]
    normal, swapped = _pair(pairs, where)
    since = memory.allocated_bytes(device)
    model = swapped if variant == "swapped" else normal
    x = torch.randn(shape, device=device, generator=torch.Generator(device=device).manual_seed(1))
    if variant == "swapped":
        _check_same_function(normal, swapped, x)
    step = _step(model, x, pass_)
    rounds, warmup = ROUNDS[where]
    benchmark.pedantic(step, rounds=rounds, warmup_rounds=warmup)
    perfkit_metrics.payload(VggSwap(variant, pass_, where, shape))
    if where == "cuda" and shape[0] >= 64:  # 99% of its FLOPs are convolutions; a small batch is launch-bound
        perfkit_metrics.bound_by(figures.matmul_ceiling(precision_in_use("conv", device)))
    record.record_peak_memory(perfkit_metrics, step, device, since)
