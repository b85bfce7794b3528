"""The image shapes workloads share, in a module without torch: the across-hardware expectations
(perfkit.workloads.benchwork) name them when a command only compares result files, which should not wait
seconds for torch to import."""
from __future__ import annotations

#: The course's image size: (channels, height, width).
DEFAULT_INPUT: tuple[int, int, int] = (3, 224, 224)
#: One CIFAR-10 image: (channels, height, width).
CIFAR10_SHAPE = (3, 32, 32)
