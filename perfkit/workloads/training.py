"""Training steps shared by the memory, scaling and time-to-accuracy families."""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from perfkit.workloads import models


def sgd_momentum(model: nn.Module, lr: float = 0.01) -> torch.optim.Optimizer:
    """The course's optimizer: SGD with momentum 0.9 (one state buffer per parameter)."""
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)


def training_step(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                  optimizer: torch.optim.Optimizer) -> Callable[[], torch.Tensor]:
    """One step (zero grads, forward, cross-entropy, backward, update); returns the loss without syncing."""
    loss_fn = nn.CrossEntropyLoss()

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def model_step(name: str, batch: int, input_shape: tuple[int, ...],
               device: torch.device) -> tuple[nn.Module, Callable[[], torch.Tensor]]:
    """A registered model in training mode on ``device`` with a synthetic batch and SGD with momentum."""
    model = models.build(name).to(device).train()
    x, y = models.synthetic_batch(batch, input_shape, device)
    models.forward_checked(model, x[:2])  # a shape the model cannot take fails here, in one sentence
    return model, training_step(model, x, y, sgd_momentum(model))
