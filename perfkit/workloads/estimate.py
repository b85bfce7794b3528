"""The training-memory estimate (seed 001): parameters, gradients, optimizer state and activations, term by
term.

The activation term is counted, not guessed: a forward pass runs under
``torch.autograd.graph.saved_tensors_hooks`` and the distinct storages autograd keeps for the
backward pass are summed (parameters excluded, they are their own term). The estimate is compared
with the allocator's peak (perfkit.measure.memory), which counts live tensors as it does.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from perfkit.errors import HardwareError, UsageError
from perfkit.measure import timing
from perfkit.measure.memory import MiB, PeakMemory, SavedStorages, allocated_bytes, measure_peak
from perfkit.resultfile import payloads
from perfkit.workloads import models, training

FLOAT32_BYTES = 4
#: Optimizer state per parameter, in parameter-sized copies.
OPTIMIZER_STATE_COPIES = {"sgd": 0, "sgd-momentum": 1, "adam": 2}


def saved_activation_bytes(model: nn.Module, x: torch.Tensor) -> int:
    """Bytes of the distinct non-parameter storages autograd saves for backward in ``model(x)``."""
    with SavedStorages(exclude=model.parameters()).watch() as saved:
        models.forward_checked(model, x)
    return saved.peak


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
        raise UsageError(
            f"unknown optimizer {optimizer!r}; choose one of {', '.join(OPTIMIZER_STATE_COPIES)}"
        )
    params, fixed, per_sample = _counted(name, tuple(input_shape))
    param_bytes = params * FLOAT32_BYTES
    return MemoryEstimate(name, batch, tuple(input_shape), optimizer, param_bytes, param_bytes,
                          param_bytes * OPTIMIZER_STATE_COPIES[optimizer], round(fixed + per_sample * batch))


def largest_batch(estimate: MemoryEstimate, budget_bytes: float) -> int:
    """The largest batch of ``estimate``'s model, input and optimizer whose estimate fits ``budget_bytes`` (0:
    not even one sample); the estimate is linear in the batch."""
    _, fixed, per_sample = _counted(estimate.model, estimate.input_shape)
    room = budget_bytes - (estimate.params + estimate.grads + estimate.optimizer_state) - fixed
    return max(0, int(room // per_sample)) if per_sample > 0 else 0


def measure_training_peak(name: str, batch: int, input_shape: Sequence[int]) -> PeakMemory:
    """The allocator's peak over one training step on the GPU, after two warm-up steps."""
    if not torch.cuda.is_available():
        raise HardwareError(
            "--measure needs a CUDA GPU; without one, perfkit memory prints the estimate only"
        )
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
