"""The course's layer stack (perfkit.workloads.layer_stack) and the batch sweep
(perfkit.workloads.batch_sweep)."""

from __future__ import annotations

import math

import pytest
import torch

from perfkit.errors import UsageError
from perfkit.workloads import batch_sweep, data, layer_stack


def test_every_layer_keeps_the_input_shape_and_one_activation():
    shape = layer_stack.QUICK_INPUT
    assert layer_stack.build(3, 2, shape)(torch.randn(*shape)).shape == shape
    kept = layer_stack.kept_bytes_per_layer(shape)
    assert kept == {"conv": 4 * math.prod(shape), "fc": 4 * math.prod(shape)}


def test_the_full_stack_matches_the_documented_shapes():
    conv, fc = (layer_stack.layer(kind, layer_stack.FULL_INPUT) for kind in ("conv", "fc"))
    assert sum(p.numel() for p in conv.parameters()) == 36_928
    assert sum(p.numel() for p in fc.parameters()) == 12_656


@pytest.mark.parametrize(("kept", "first", "second", "at"), [
    ([10] * 8, 0, 0, 4),
    ([10] * 8, 0, 20, 5),  # the copy and the output on the second device push layers to the first
    ([40, 10, 10, 10, 10], 0, 0, 1),
])
def test_the_balanced_split_minimises_the_fuller_device(kept, first, second, at):
    assert layer_stack.balanced_split(kept, first, second) == at


def test_a_two_device_stack_computes_what_the_whole_stack_computes():
    shape = layer_stack.QUICK_INPUT
    torch.manual_seed(0)
    stack = layer_stack.TwoDeviceStack(2, 2, 3, shape, (torch.device("cpu"), torch.device("cpu")))
    whole = torch.nn.Sequential(*stack.first, *stack.second)
    x = torch.randn(*shape)
    out, times = stack.forward(x)
    assert torch.allclose(out, whole(x))
    assert min(times.first, times.transfer, times.second) >= 0 and times.total > 0


def test_the_sweep_stops_past_the_dataset_and_says_why():
    assert batch_sweep.series(50_000) == [32, 128, 512, 2048, 8192, 32768, 131072]
    with pytest.raises(UsageError, match=r"batch 131072 exceeds the dataset \(50000 images\)"):
        batch_sweep.check_fits_dataset(131072, 50_000)


@pytest.mark.parametrize("variant", batch_sweep.VARIANTS)
def test_an_epoch_trains_on_full_batches_either_way(variant):
    train = data.synthetic_cifar10(80)
    epoch = batch_sweep.train_epochs(train, 32, variant, torch.device("cpu"), batch_sweep.Loader(workers=0))
    assert epoch.steps == 2 and len(epoch.step_seconds) == 2 and epoch.peak_bytes is None
    assert epoch.images_per_s == pytest.approx(64 / epoch.seconds)
    assert all(math.isfinite(loss) for loss in epoch.losses)


def test_an_unknown_variant_is_refused():
    with pytest.raises(UsageError, match="resident or loader"):
        batch_sweep.train_epochs(data.synthetic_cifar10(64), 32, "disk", torch.device("cpu"))
