"""GPU memory: the allocator's peak over a region.

Which memory a figure is matters: ``allocated`` counts live tensors (what perfkit.workloads.estimate
predicts), ``reserved`` adds the caching allocator's slack, and NVML's used memory
(perfkit.measure.power) further counts the CUDA context, cuBLAS/cuDNN workspaces and other processes.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from perfkit.errors import HardwareError
from perfkit.measure import timing

MiB = 2**20


@dataclass(frozen=True)
class PeakMemory:
    """Allocator peaks over a region, in bytes, net of what was allocated before ``since`` was read.

    A pytest process keeps tensors of earlier benchmarks (caches, fixtures) alive; subtracting the
    allocation read before a benchmark built its inputs keeps those out of its figure.
    """

    allocated: int
    reserved: int
    residue: int = 0


def allocated_bytes(device: torch.device) -> int:
    """Bytes the CUDA allocator holds in live tensors now (0 on the CPU): read it before building inputs."""
    return torch.cuda.memory_allocated(device) if device.type == "cuda" else 0


def measure_peak(fn: Callable[[], Any], device: torch.device, since: int = 0) -> PeakMemory:
    """Run ``fn`` once with the allocator's cache emptied and its peak statistics reset just before it.

    ``since`` is ``allocated_bytes`` read before the region's inputs were created; it is subtracted
    from the allocated peak. The reserved peak counts the segments the call had to reserve beyond
    those live tensors already held: what the caching allocator kept from earlier benchmarks is
    released first, so neither figure depends on what ran before.
    """
    if device.type != "cuda":
        raise HardwareError("peak memory comes from PyTorch's CUDA allocator; this run is on the CPU")
    timing.synchronize()
    torch.cuda.empty_cache()
    held = torch.cuda.memory_reserved(device)
    torch.cuda.reset_peak_memory_stats(device)
    fn()
    timing.synchronize()
    return PeakMemory(torch.cuda.max_memory_allocated(device) - since,
                      torch.cuda.max_memory_reserved(device) - held, since)
