"""GPU memory: the allocator's peak over a region, and the training-memory estimate it is compared with.

Which memory a figure is matters: ``allocated`` counts live tensors (what the estimate predicts),
``reserved`` adds the caching allocator's slack, and NVML's used memory (perfkit.measure.power) further
counts the CUDA context, cuBLAS/cuDNN workspaces and other processes.

The estimate's activation term is counted, not guessed: a forward pass runs under
``torch.autograd.graph.saved_tensors_hooks`` and the distinct storages autograd keeps for the
backward pass are summed (parameters excluded, they are their own term).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from perfkit.errors import HardwareError, UsageError
from perfkit.measure import timing
from perfkit.results import payloads
from perfkit.workloads import models, training

MiB = 2**20
FLOAT32_BYTES = 4
#: Optimizer state per parameter, in parameter-sized copies.
OPTIMIZER_STATE_COPIES = {"sgd": 0, "sgd-momentum": 1, "adam": 2}


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
    """Run ``fn`` once with the allocator's peak statistics reset just before it.

    ``since`` is ``allocated_bytes`` read before the region's inputs were created; it is subtracted
    from the allocated peak (the reserved peak is the allocator's total and stays absolute).
    """
    if device.type != "cuda":
        raise HardwareError("peak memory comes from PyTorch's CUDA allocator; this run is on the CPU")
    timing.synchronize()
    torch.cuda.reset_peak_memory_stats(device)
    fn()
    timing.synchronize()
    return PeakMemory(torch.cuda.max_memory_allocated(device) - since, torch.cuda.max_memory_reserved(device), since)


def saved_activation_bytes(model: nn.Module, x: torch.Tensor) -> int:
    """Bytes of the distinct non-parameter storages autograd saves for backward in ``model(x)``."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        models.forward_checked(model, x)
    return sum(saved.values())


@dataclass(frozen=True)
class MemoryEstimate:
    """The theoretical memory of one training step, term by term (bytes)."""

    model: str
    batch: int
    input_shape: tuple[int, ...]
    optimizer: str
    params: int
    grads: int
    optimizer_state: int
    activations: int

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optimizer_state + self.activations

    def terms(self) -> dict[str, int]:
        return {"params": self.params, "grads": self.grads, "optimizer_state": self.optimizer_state,
                "activations": self.activations}

    def record(self) -> payloads.MemoryEstimate:
        """The family record the training-memory benchmark stores and the report draws."""
        mib = {f"{k}_mib": v / MiB for k, v in self.terms().items()}
        return payloads.MemoryEstimate(
            self.model, self.batch, self.input_shape, self.optimizer, "float32", total_mib=self.total / MiB,
            activations_method="saved-tensor hooks on a CPU forward at batch 2 and 4, linear in the batch "
                               "(per-sample activations scale exactly)", **mib)

    def to_json(self) -> dict[str, Any]:
        return self.record().to_json()


#: Batches the activations are counted at; two points fix the exact line a + b * batch.
_COUNT_BATCHES = (2, 4)


@functools.lru_cache(maxsize=16)
def _counted(name: str, input_shape: tuple[int, ...]) -> tuple[int, float, float]:
    """(parameters, activation bytes at batch 0, activation bytes per sample), counted on the CPU."""
    model = models.build(name).train()
    small, large = (saved_activation_bytes(model, torch.randn(b, *input_shape)) for b in _COUNT_BATCHES)
    per_sample = (large - small) / (_COUNT_BATCHES[1] - _COUNT_BATCHES[0])
    return models.parameter_count(model), small - per_sample * _COUNT_BATCHES[0], per_sample


def estimate_training_memory(name: str, batch: int, input_shape: Sequence[int] = models.DEFAULT_INPUT,
                             optimizer: str = "sgd-momentum") -> MemoryEstimate:
    """Parameters × 4 bytes, as many for gradients, the optimizer's state, and counted activations.

    Activations are counted on the CPU at two small batches and extended linearly to ``batch``, so
    the estimate needs no GPU and no memory the size of the real step.
    """
    if batch < 1:
        raise UsageError(f"batch must be at least 1, not {batch}")
    if optimizer not in OPTIMIZER_STATE_COPIES:
        raise UsageError(f"unknown optimizer {optimizer!r}; choose one of {', '.join(OPTIMIZER_STATE_COPIES)}")
    params, fixed, per_sample = _counted(name, tuple(input_shape))
    param_bytes = params * FLOAT32_BYTES
    return MemoryEstimate(name, batch, tuple(input_shape), optimizer, param_bytes, param_bytes,
                          param_bytes * OPTIMIZER_STATE_COPIES[optimizer], round(fixed + per_sample * batch))


def measure_training_peak(name: str, batch: int, input_shape: Sequence[int]) -> PeakMemory:
    """The allocator's peak over one training step on the GPU, after two warm-up steps."""
    if not torch.cuda.is_available():
        raise HardwareError("--measure needs a CUDA GPU; without one, perfkit memory prints the estimate only")
    device = torch.device("cuda")
    try:
        since = allocated_bytes(device)
        _, step = training.model_step(name, batch, tuple(input_shape), device)
        timing.warmup(step, 2)
        return measure_peak(step, device, since)
    except torch.cuda.OutOfMemoryError:
        total = torch.cuda.get_device_properties(device).total_memory / 2**30
        raise UsageError(f"batch {batch} of {name} does not fit on {torch.cuda.get_device_name(device)} "
                         f"({total:.0f} GiB); try a smaller --batch") from None
