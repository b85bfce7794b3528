"""Model registry, factories, shape errors and the VGG16 ReLU/MaxPool swap."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from perfkit.errors import UsageError
from perfkit.workloads import model_names, models


def tiny_model() -> nn.Module:
    """A factory for the package.module:function path (imported by name in the tests)."""
    return nn.Sequential(nn.Flatten(), nn.Linear(12, 2))


def not_a_model() -> str:
    return "a string"


def test_unknown_model_names_the_valid_ones():
    with pytest.raises(
        UsageError, match="unknown model 'resnet19'; choose one of alexnet, googlenet, resnet18"
    ):
        models.build("resnet19")


def test_the_names_a_command_checks_without_torch_are_the_registered_ones():
    assert model_names.NAMES == tuple(models.MODELS)


def test_an_importable_factory_builds_a_model():
    model = models.build("tests.test_models:tiny_model")
    assert models.parameter_count(model) == 12 * 2 + 2


@pytest.mark.parametrize("spec, match", [
    ("tests.no_such_module:f", "cannot import model factory"),
    ("tests.test_models:missing", "cannot import model factory"),
    ("tests.test_models:not_a_model", "returned a str, not a torch.nn.Module"),
    ("./models:f", "cannot import model factory './models:f': .*give it as package.module:function"),
    ("torch.nn:Linear", r"calling torch.nn:Linear\(\) failed: .*called with no arguments"),
])
def test_bad_factories_are_clear_errors(spec, match):
    with pytest.raises(UsageError, match=match):
        models.build(spec)


@pytest.mark.parametrize("text, shape", [("3,224,224", (3, 224, 224)), ("1,28,28", (1, 28, 28))])
def test_shapes_parse(text, shape):
    assert models.parse_shape(text, 3) == shape


@pytest.mark.parametrize("text", ["3,224", "3,x,224", "0,224,224", ""])
def test_bad_shapes_say_what_is_expected(text):
    with pytest.raises(UsageError, match="3 positive integers"):
        models.parse_shape(text, 3)


def test_a_shape_the_model_cannot_take_names_the_failing_layer():
    model = models.build("resnet18")
    with pytest.raises(UsageError, match=r"layer conv1 \(Conv2d\) failed: .*4 channels"):
        models.forward_checked(model, torch.randn(1, 4, 64, 64))


def test_forward_checked_leaves_no_hooks_behind():
    model = models.build("tests.test_models:tiny_model")
    models.forward_checked(model, torch.randn(1, 3, 2, 2))
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_swapped_vgg16_keeps_torchvisions_parameters():
    normal, swapped = models.vgg16(), models.vgg16(swapped=True)
    assert models.parameter_count(normal) == models.parameter_count(swapped) == models.VGG16_PARAMETERS
    assert list(normal.state_dict()) == list(swapped.state_dict())


def test_the_swap_moves_every_relu_behind_its_pool():
    features = models.vgg16(swapped=True).features
    kinds = [type(m).__name__ for m in features]
    assert kinds.count("MaxPool2d") == 5
    for i, kind in enumerate(kinds):
        if kind == "MaxPool2d":
            assert kinds[i - 1] == "Conv2d" and kinds[i + 1] == "ReLU"


def test_swapped_vgg16_computes_the_same_function():
    """max-pooling commutes with ReLU: same weights, same outputs (a swap that changes results is a bug)."""
    torch.manual_seed(0)
    normal = models.vgg16().eval()
    swapped = models.vgg16(swapped=True).eval()
    swapped.load_state_dict(normal.state_dict())
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        assert torch.equal(normal(x), swapped(x))


def test_synthetic_batches_are_reproducible():
    (x1, y1), (x2, y2) = (
        models.synthetic_batch(4, (3, 8, 8), "cpu"),
        models.synthetic_batch(4, (3, 8, 8), "cpu"),
    )
    assert torch.equal(x1, x2) and torch.equal(y1, y2) and y1.max() < 1000
