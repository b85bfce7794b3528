"""The training-memory estimate: counted activations, linear extension in the batch, clear errors."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from perfkit.errors import HardwareError, UsageError
from perfkit.measure import memory
from perfkit.workloads import estimate, models


def test_saved_activations_of_a_linear_relu_stack_are_counted_exactly():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    # saved: the input (Linear 1), the ReLU output (ReLU and Linear 2 share it); weights excluded
    assert estimate.saved_activation_bytes(model, torch.randn(5, 16)) == 4 * (5 * 16 + 5 * 32)


def test_parameters_are_never_counted_as_activations():
    model = nn.Linear(1000, 1000)
    assert estimate.saved_activation_bytes(model, torch.randn(1, 1000)) == 4 * 1000


def test_the_linear_extension_matches_a_direct_count():
    shape = (3, 64, 64)
    direct = estimate.saved_activation_bytes(models.build("resnet18").train(), torch.randn(7, *shape))
    assert estimate.estimate_training_memory("resnet18", 7, shape).activations == direct


def test_resnet18_estimate_terms():
    est = estimate.estimate_training_memory("resnet18", 32)
    assert est.params == 11_689_512 * 4 == est.grads == est.optimizer_state
    assert est.total == sum(est.terms().values())
    # ResNet-18 at 224x224 keeps ~20 MiB of activations per image for backward (counted, not assumed)
    assert 15 < est.activations / memory.MiB / 32 < 30
    assert est.to_json()["total_mib"] == pytest.approx(est.total / memory.MiB)


def test_optimizer_state_follows_the_optimizer():
    plain = estimate.estimate_training_memory("resnet18", 2, (3, 32, 32), optimizer="sgd")
    adam = estimate.estimate_training_memory("resnet18", 2, (3, 32, 32), optimizer="adam")
    assert plain.optimizer_state == 0 and adam.optimizer_state == 2 * adam.params


@pytest.mark.parametrize("kwargs, match", [
    ({"name": "resnet19", "batch": 2}, "unknown model"),
    ({"name": "resnet18", "batch": 0}, "batch must be at least 1"),
    ({"name": "resnet18", "batch": 2, "optimizer": "lion"}, "unknown optimizer 'lion'"),
    ({"name": "resnet18", "batch": 2, "input_shape": (1, 64, 64)}, "layer conv1"),
])
def test_bad_estimate_requests_are_clear(kwargs, match):
    with pytest.raises(UsageError, match=match):
        estimate.estimate_training_memory(**kwargs)


def test_peak_memory_is_cuda_only():
    with pytest.raises(HardwareError, match="CUDA allocator"):
        memory.measure_peak(lambda: None, torch.device("cpu"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error")
def test_measuring_without_a_gpu_says_what_to_do():
    with pytest.raises(HardwareError, match="--measure needs a CUDA GPU"):
        estimate.measure_training_peak("resnet18", 2, (3, 32, 32))
