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
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from perfkit.workloads import models

CONVENTION = ("FLOPs count a multiply-add as 2 (FlopCounterMode, PALEO); MACs = FLOPs / 2, the unit "
              "torchvision documents as GFLOPS")

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


@dataclass
class LayerRow:
    """One leaf module (summed over its calls: torchvision's BasicBlock calls one ReLU twice)."""

    name: str
    type: str
    input_shape: list[int]
    output_shape: list[int]
    params: int
    calls: int = 0
    counter_flops: int = 0
    analytic_flops: int | None = 0
    input_elems: int = 0
    output_elems: int = 0
    share: float = 0.0
    input_grad: bool = True  # False for a layer fed the network's input: its backward needs no input gradient

    @property
    def flops(self) -> int:
        """The counter's figure where it counts this layer, else the analytic one (0 when neither does)."""
        return self.counter_flops or (self.analytic_flops or 0)

    @property
    def backward_flops(self) -> int:
        """Its input's and weights' gradients where the counter counts it, else its analytic figure again."""
        return self.counter_flops * (2 if self.input_grad else 1) if self.counter_flops else self.flops

    def at_batch(self, factor: float) -> LayerRow:
        """This row for ``factor`` times its batch: every count here is per image, its parameters are not."""
        def scaled(n: int) -> int:
            return round(n * factor)

        return replace(self, input_shape=[scaled(self.input_shape[0]), *self.input_shape[1:]],
                       output_shape=[scaled(self.output_shape[0]), *self.output_shape[1:]],
                       counter_flops=scaled(self.counter_flops),
                       analytic_flops=None if self.analytic_flops is None else scaled(self.analytic_flops),
                       input_elems=scaled(self.input_elems), output_elems=scaled(self.output_elems))

    @property
    def source(self) -> str:
        if self.counter_flops:
            return "FlopCounterMode"
        return "analytic (not counted by FlopCounterMode)" if self.analytic_flops else "none"

    @property
    def macs(self) -> int:
        return self.flops // 2

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"flops": self.flops, "macs": self.macs, "source": self.source,
                               "backward_flops": self.backward_flops}


@dataclass
class FlopTable:
    model: str
    input_shape: tuple[int, ...]
    params: int
    rows: list[LayerRow] = field(default_factory=list)
    forward_backward_counted: int = 0

    @property
    def total_flops(self) -> int:
        return sum(r.flops for r in self.rows)

    @property
    def total_macs(self) -> int:
        return self.total_flops // 2

    @property
    def counted_flops(self) -> int:
        """What FlopCounterMode alone counts (torchvision's documented figure is half of this)."""
        return sum(r.counter_flops for r in self.rows)

    @property
    def uncounted_flops(self) -> int:
        return sum(r.flops for r in self.rows if not r.counter_flops)

    @property
    def forward_backward_flops(self) -> int:
        """FlopCounterMode over a real forward and backward, plus the analytic layers twice (forward,
        backward)."""
        return self.forward_backward_counted + 2 * self.uncounted_flops

    def at_batch(self, batch: int) -> FlopTable:
        """This table for a batch of ``batch`` instead of its own, without counting again: convolution,
        linear, elementwise, pooling and batch-norm (counted in eval mode) all work image by image, so FLOPs
        and activations scale with the batch and parameters do not."""
        factor = batch / self.input_shape[0]
        return replace(self, input_shape=(batch, *self.input_shape[1:]),
                       rows=[row.at_batch(factor) for row in self.rows],
                       forward_backward_counted=round(self.forward_backward_counted * factor))

    @property
    def conv_flop_share(self) -> float:
        return sum(r.flops for r in self.rows if r.type.startswith("Conv")) / max(self.total_flops, 1)

    def to_json(self, per_layer: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model, "input_shape": list(self.input_shape), "convention": CONVENTION,
            "total_flops": self.total_flops, "total_macs": self.total_macs, "params": self.params,
            "forward_backward_flops": self.forward_backward_flops, "conv_flop_share": self.conv_flop_share,
            "counted_flops": self.counted_flops, "uncounted_flops": self.uncounted_flops,
        }
        if per_layer:
            out["layers"] = [r.to_json() for r in self.rows]
        return out


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
