"""A model's FLOP table, plain data: what perfkit.workloads.flops counts (with torch) and what the committed
FLOP cache (perfkit.workloads.flop_cache) holds, read without importing torch (seconds) where a command only
compares result files."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

CONVENTION = ("FLOPs count a multiply-add as 2 (FlopCounterMode, PALEO); MACs = FLOPs / 2, the unit "
              "torchvision documents as GFLOPS")


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
