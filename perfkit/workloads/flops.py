"""FLOP accounting per layer: ``torch.utils.flop_counter.FlopCounterMode`` plus PALEO's analytic formulas.

Convention (stated in every output): FLOPs count a fused multiply-add as 2 (FlopCounterMode's and
PALEO's convention); MACs are half that and are what torchvision documents as "GFLOPS"
(ResNet-18 1.814, ResNet-50 4.089, VGG-16 15.47, VGG-19 19.63 at 224x224).

FlopCounterMode counts matmuls and convolutions and nothing for ReLU, pooling or batch-norm; the
analytic formulas (conv 2·kh·kw·Cin/groups·Hout·Wout·Cout·N, linear 2·in·out·N, ReLU 1 per element,
pooling the window per output, batch-norm 2 per element) fill those in, and each row says which
source its figure comes from. Where both count (conv, linear) they must agree; the tests check it.
A layer's backward computes its input's and its weights' gradients, each as many FLOPs as its forward for a
convolution or a linear layer (only the weights' for a layer fed the network's input, which needs no
gradient); a layer the counter does not count takes its analytic figure again. Their sum is what the counter
counts over a whole forward and backward (FlopCounterMode's own per-module split of a backward is not used:
it credits a residual block's convolutions to its downsample branch). Counting runs on the meta device:
shapes only, no memory and no arithmetic.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from perfkit.workloads import flop_types, models

# the tables themselves are plain data, in a module without torch (perfkit.workloads.flop_cache reads them)
from perfkit.workloads.flop_types import FlopTable, LayerRow

CONVENTION = flop_types.CONVENTION

_ELEMENTWISE = (nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.GELU, nn.SiLU, nn.Sigmoid, nn.Tanh, nn.Hardswish)
_FREE = (nn.Dropout, nn.Flatten, nn.Identity)


def count_flops(fn: Callable[[], Any]) -> int:
    """FLOPs (FMA = 2) of the matmuls and convolutions one call of ``fn`` runs, forward and backward."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


def analytic_flops(module: nn.Module, x: torch.Tensor, out: torch.Tensor) -> int | None:
    """PALEO-style forward FLOPs of one call of a leaf module; None for a layer with no formula."""
    if isinstance(module, nn.modules.conv._ConvNd):
        batch_and_spatial = out.shape[0] * math.prod(out.shape[2:])
        return 2 * module.weight.numel() * batch_and_spatial
    if isinstance(module, nn.Linear):
        return 2 * module.in_features * module.out_features * (x.numel() // module.in_features)
    if isinstance(module, _ELEMENTWISE):
        return out.numel()
    if isinstance(module, (nn.MaxPool2d, nn.AvgPool2d)):
        kernel = module.kernel_size
        return math.prod(kernel if isinstance(kernel, tuple) else (kernel, kernel)) * out.numel()
    if isinstance(module, (nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d)):
        window = math.prod(math.ceil(i / o) for i, o in zip(x.shape[-2:], out.shape[-2:]))
        return window * out.numel()
    if isinstance(module, nn.modules.batchnorm._BatchNorm):
        return 2 * out.numel()
    if isinstance(module, _FREE):
        return 0
    return None


def flop_table(name: str, input_shape: Sequence[int]) -> FlopTable:
    """Per-layer forward FLOPs of a registered model (or ``module:function``) for an N,C,H,W input."""
    with torch.device("meta"):
        model = models.build(name)
    return table_of(model, tuple(input_shape), name)


def table_of(model: nn.Module, input_shape: tuple[int, ...], name: str) -> FlopTable:
    model = model.to("meta").eval()
    table = FlopTable(name, input_shape, models.parameter_count(model))
    rows: dict[str, LayerRow] = {}
    leaves = [(n, m) for n, m in model.named_modules() if not list(m.children())]

    def record(module_name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple[Any, ...], out: Any) -> None:
            x = args[0] if args else out
            if not isinstance(out, torch.Tensor):
                return
            row = rows.setdefault(module_name, LayerRow(
                module_name, type(module).__name__, list(x.shape), list(out.shape),
                sum(p.numel() for p in module.parameters())))
            row.calls += 1
            row.input_grad = row.input_grad and x is not image
            row.output_shape = list(out.shape)
            row.input_elems += x.numel()
            row.output_elems += out.numel()
            flops = analytic_flops(module, x, out)
            row.analytic_flops = (
                None if flops is None or row.analytic_flops is None else row.analytic_flops + flops
            )

        return hook

    handles = [m.register_forward_hook(record(n)) for n, m in leaves]
    image = models.empty_input(input_shape)
    try:
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            models.forward_checked(model, image)
    finally:
        for h in handles:
            h.remove()
    prefix = type(model).__name__
    per_module = counter.get_flop_counts()
    for row in rows.values():
        row.counter_flops = int(sum(per_module.get(f"{prefix}.{row.name}", {}).values()))
    table.rows = list(rows.values())
    total = table.total_flops
    for row in table.rows:
        row.share = row.flops / total if total else 0.0
    table.forward_backward_counted = _forward_backward_counted(model, input_shape)
    return table


def _forward_backward_counted(model: nn.Module, input_shape: tuple[int, ...]) -> int:
    """FLOPs of a forward and backward pass, counted in eval mode: FlopCounterMode counts the same matmuls and
    convolutions in either mode, and training-mode BatchNorm cannot take one value per channel (batch 1 at
    1×1)."""
    x = torch.empty(input_shape, device="meta")
    return count_flops(lambda: models.forward_checked(model.eval(), x).sum().backward())
