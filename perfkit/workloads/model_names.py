"""The models perfkit builds by name, in a module without torch: a command told a name it does not know says
so at once, not after the seconds torch takes to import (perfkit.workloads.models builds them)."""
from __future__ import annotations

from perfkit.errors import UsageError

#: The registered names (perfkit.workloads.models.MODELS holds a factory for each).
NAMES = ("alexnet", "googlenet", "resnet18", "resnet18-cifar", "resnet50", "resnet50-cifar", "tiny-cnn",
         "vgg16", "vgg16-swapped", "vgg19")


def check_name(name: str) -> None:
    """Refuse a name neither registered nor a ``module:function`` factory, listing the registered ones: the
    mistake a command says before any other (``perfkit memory`` before asking for its --batch)."""
    if ":" not in name and name not in NAMES:
        raise UsageError(f"unknown model {name!r}; choose one of {', '.join(NAMES)}, "
                         "or give an importable factory as package.module:function")
