"""Models by name: torchvision architectures with random weights (nothing downloads), any importable
factory given as ``package.module:function``, and the course's VGG16 with ReLU and MaxPool swapped.

Every forward that a user's shape could break goes through ``forward_checked``, which names the
layer that rejected the input instead of surfacing a deep stack trace.
"""
from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import torch
from torch import nn

from perfkit.errors import UsageError
from perfkit.workloads import shapes
from perfkit.workloads.model_names import check_name

#: The course's image size: (channels, height, width) (perfkit.workloads.shapes: read without torch too).
DEFAULT_INPUT = shapes.DEFAULT_INPUT

#: torchvision's VGG16 parameter count (ImageNet head), which the swap must keep.
VGG16_PARAMETERS = 138_357_544
#: PyTorch counts a tensor's elements and bytes in signed 64-bit integers: a shape past that is no tensor.
TOO_LARGE = "more than PyTorch can size (2^63 bytes); give a smaller --batch or --input"


def _torchvision(name: str, **kwargs: Any) -> Callable[[], nn.Module]:
    def factory() -> nn.Module:
        import torchvision.models

        return getattr(torchvision.models, name)(weights=None, **kwargs)

    return factory


def _cifar_resnet(name: str) -> Callable[[], nn.Module]:
    """A torchvision ResNet as CIFAR-10 work usually adapts it (and seed 003's V100 figures imply): a 3×3
    stride-1 stem and no max-pool, so the first stage runs at 32×32 instead of 8×8; ten classes. The
    ImageNet stem shrinks a 32×32 image to 1×1 and caps CIFAR-10 accuracy well below the course's 92%."""
    def factory() -> nn.Module:
        import torchvision.models

        model = getattr(torchvision.models, name)(weights=None, num_classes=10)
        model.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        model.maxpool = nn.Identity()
        return model

    return factory


def tiny_cnn() -> nn.Module:
    """A two-convolution network for CIFAR-shaped images that learns in seconds on a CPU (the quick
    profile)."""
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                         nn.Linear(32 * 16, 10))


MODELS: dict[str, Callable[[], nn.Module]] = {
    "alexnet": _torchvision("alexnet"),
    "googlenet": _torchvision("googlenet", aux_logits=False, init_weights=True),
    "resnet18": _torchvision("resnet18"),
    "resnet18-cifar": _cifar_resnet("resnet18"),
    "resnet50": _torchvision("resnet50"),
    "resnet50-cifar": _cifar_resnet("resnet50"),
    "tiny-cnn": tiny_cnn,
    "vgg16": _torchvision("vgg16"),
    "vgg16-swapped": lambda: vgg16(swapped=True),
    "vgg19": _torchvision("vgg19"),
}


def build(name: str) -> nn.Module:
    """A model with random weights from a registered name or an importable ``module:function`` factory."""
    if ":" in name:
        return _from_factory(name)
    check_name(name)
    return MODELS[name]()


def _from_factory(spec: str) -> nn.Module:
    module_name, _, attr = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, TypeError) as exc:  # TypeError: a relative name such as ./models
        raise UsageError(f"cannot import model factory {spec!r}: {exc}; give it as package.module:function, "
                         "importable from this directory") from None
    try:
        model = factory()
    except TypeError as exc:
        raise UsageError(f"calling {spec}() failed: {exc}; a model factory is called with no arguments "
                         "(wrap a class that needs some in a function)") from None
    if not isinstance(model, nn.Module):
        raise UsageError(f"{spec} returned a {type(model).__name__}, not a torch.nn.Module")
    return model


def parse_shape(text: str, dims: int) -> tuple[int, ...]:
    """'3,224,224' -> (3, 224, 224), with a clear error for anything else."""
    try:
        shape = tuple(int(x) for x in text.split(","))
    except ValueError:
        shape = ()
    if len(shape) != dims or min(shape) < 1:
        hint = "; the batch is its own option, --batch" if len(shape) == dims + 1 else ""
        raise UsageError(f"input shape {text!r} must be {dims} positive integers separated by commas{hint}")
    return shape


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def swap_relu_maxpool(features: nn.Sequential) -> nn.Sequential:
    """Each ReLU directly followed by a MaxPool2d becomes MaxPool2d -> ReLU.

    max-pooling commutes with any monotone non-decreasing activation, so outputs are unchanged
    while the ReLU runs on a quarter of the elements. Parameter-free layers only move, so the
    state-dict keys (indices of the convolutions) stay the same.
    """
    layers = list(features)
    for i in range(len(layers) - 1):
        if isinstance(layers[i], nn.ReLU) and isinstance(layers[i + 1], nn.MaxPool2d):
            layers[i], layers[i + 1] = layers[i + 1], layers[i]
    return nn.Sequential(*layers)


def vgg16(swapped: bool = False) -> nn.Module:
    """torchvision's VGG16, optionally with every ReLU -> MaxPool pair swapped."""
    model = MODELS["vgg16"]()
    if swapped:
        model.features = swap_relu_maxpool(cast(nn.Sequential, model.features))
    return model


def forward_checked(model: nn.Module, x: torch.Tensor) -> Any:
    """``model(x)``, turning a shape error into one sentence that names the failing layer."""
    with _innermost_module(model) as where:
        try:
            return model(x)
        except (RuntimeError, ValueError) as exc:  # ValueError: e.g. BatchNorm given one value per channel
            if "out of memory" in str(exc).lower():
                raise
            reason = str(exc).strip().splitlines()[0]
            if _overflowed(exc):
                raise UsageError(f"input shape {tuple(x.shape)}: layer {where[-1] if where else '(model)'} "
                                 f"would make a tensor of {TOO_LARGE}") from None
            raise UsageError(f"input shape {tuple(x.shape)} does not fit the model: layer "
                             f"{where[-1] if where else '(model)'} failed: {reason}") from None


def empty_input(shape: Sequence[int], device: str = "meta") -> torch.Tensor:
    """An uninitialised input of ``shape``; one too large for PyTorch to size is one sentence."""
    try:
        return torch.empty(tuple(shape), device=device)
    except (RuntimeError, TypeError) as exc:
        if not _overflowed(exc):
            raise
        raise UsageError(f"an input of shape {'x'.join(map(str, shape))} holds {TOO_LARGE}") from None


def _overflowed(exc: Exception) -> bool:
    """PyTorch's words for a size past 64 bits: the storage's bytes, or a dimension itself."""
    return "overflow" in str(exc).lower()


@contextlib.contextmanager
def _innermost_module(model: nn.Module) -> Iterator[list[str]]:
    """Tracks the name and type of the module currently running its forward."""
    stack: list[str] = []

    def leave(*_: Any) -> None:
        stack.pop()

    handles = []
    for name, module in model.named_modules():
        label = f"{name or '(model)'} ({type(module).__name__})"
        handles.append(module.register_forward_pre_hook(lambda *_, label=label: stack.append(label)))
        handles.append(module.register_forward_hook(leave))
    try:
        yield stack
    finally:
        for handle in handles:
            handle.remove()


def synthetic_batch(batch: int, shape: Sequence[int], device: torch.device | str,
                    classes: int = 1000, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random images and labels made on the device (no dataset needed for memory or speed)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(batch, *shape, device=device, generator=gen)
    y = torch.randint(0, classes, (batch,), device=device, generator=gen)
    return x, y
