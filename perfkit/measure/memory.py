"""GPU memory: the allocator's peak over a region.

Which memory a figure is matters: ``allocated`` counts live tensors (what perfkit.workloads.estimate
predicts), ``reserved`` adds the caching allocator's slack, and NVML's used memory
(perfkit.measure.power) further counts the CUDA context, cuBLAS/cuDNN workspaces and other processes.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
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


def release_cached() -> None:
    """Hand back what the allocator keeps for reuse: its cached blocks and the cuBLAS workspaces (allocated
    through it and held per stream, so they count as allocated). A peak read after this does not depend on
    which benchmark happened to leave them behind."""
    timing.synchronize()
    clear_workspaces = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)  # private, no public twin
    if clear_workspaces is not None:
        clear_workspaces()
    torch.cuda.empty_cache()


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


class SavedStorages:
    """The distinct storages autograd keeps for the backward pass while :meth:`watch` is active, parameters
    excluded: the activation memory that grows with depth and batch. A storage counts while a tensor saved
    on it lives (a backward pass, or dropping the output, frees them); ``peak`` is the most held at once.
    ``limit`` turns it into a synthetic memory budget: the tensor that takes the total past it raises
    PyTorch's own out-of-memory error, as the CUDA allocator would.
    """

    def __init__(self, exclude: Iterable[torch.Tensor] = (), limit: int | None = None) -> None:
        self._excluded = {t.untyped_storage().data_ptr() for t in exclude}
        self._saved: dict[int, list[int]] = {}  # storage -> [bytes, saved tensors alive on it]
        self.limit = limit
        self.peak = 0

    @property
    def total(self) -> int:
        return sum(nbytes for nbytes, _ in self._saved.values())

    @contextmanager
    def watch(self) -> Iterator[SavedStorages]:
        with torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t):
            yield self

    def _pack(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        key = storage.data_ptr()
        if key in self._excluded:
            return tensor
        # a detached view: the tensor itself would tie its grad_fn into a cycle that frees nothing
        kept = tensor.detach()
        self._saved.setdefault(key, [storage.nbytes(), 0])[1] += 1
        weakref.finalize(kept, self._drop, key)
        self.peak = max(self.peak, self.total)
        if self.limit is not None and self.total > self.limit:
            raise torch.OutOfMemoryError(f"synthetic budget: Tried to allocate {storage.nbytes()} B beyond a "
                                         f"budget of {self.limit} B for the tensors autograd keeps")
        return kept

    def _drop(self, key: int) -> None:
        entry = self._saved.get(key)
        if entry is not None:
            entry[1] -= 1
            if not entry[1]:
                del self._saved[key]
