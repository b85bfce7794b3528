"""PALEO-style time prediction (Qi et al., ICLR 2017) from FLOPs, bytes and datasheet peaks.

Per layer: compute time = FLOPs / (peak FLOP/s × PPP), memory time = bytes / (bandwidth × PPP),
where bytes are the layer's input, weights and output moved once and PPP is the platform percent of
peak (1.0 = the datasheet). The serial bound adds the two; the perfectly pipelined bound takes the
larger. The model's time is the sum over its layers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfkit.errors import UsageError
from perfkit.resultfile import datasheet
from perfkit.workloads.flop_types import CONVENTION, FlopTable, LayerRow

BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}


@dataclass(frozen=True)
class LayerPrediction:
    name: str
    type: str
    flops: int
    bytes: int
    compute_s: float
    memory_s: float

    @property
    def pipelined_s(self) -> float:
        return max(self.compute_s, self.memory_s)

    @property
    def serial_s(self) -> float:
        return self.compute_s + self.memory_s

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


@dataclass(frozen=True)
class Prediction:
    model: str
    gpu: datasheet.GpuSpec
    precision: str
    ppp: float
    input_shape: tuple[int, ...]
    layers: tuple[LayerPrediction, ...]

    @property
    def pipelined_s(self) -> float:
        return sum(layer.pipelined_s for layer in self.layers)

    @property
    def serial_s(self) -> float:
        return sum(layer.serial_s for layer in self.layers)

    def to_json(self, per_layer: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model, "gpu": self.gpu.key, "gpu_name": self.gpu.name, "precision": self.precision,
            "ppp": self.ppp, "input_shape": list(self.input_shape),
            "peak_tflops": self.gpu.tflops[self.precision], "bandwidth_gbps": self.gpu.bandwidth_gbps,
            "source": self.gpu.source, "convention": CONVENTION,
            "total_flops": sum(layer.flops for layer in self.layers),
            "predicted_s": self.pipelined_s, "predicted_serial_s": self.serial_s,
        }
        if per_layer:
            out["layers"] = [{"name": x.name, "type": x.type, "flops": x.flops, "bytes": x.bytes,
                              "compute_s": x.compute_s, "memory_s": x.memory_s, "bound": x.bound}
                             for x in self.layers]
        return out


def gpu_spec(name: str) -> datasheet.GpuSpec:
    """A datasheet key, the start of exactly one key (``k80``, ``1080``), or a device name as CUDA reports it;
    a start that several keys share (``v100``: SXM2 and PCIe differ by 9%) is refused with the choices."""
    keys = [spec for spec in datasheet.GPUS if spec.key.startswith(name.lower())]
    if len(keys) > 1 and datasheet.by_key(name.lower()) is None:
        raise UsageError(f"{name!r} names {len(keys)} datasheet entries whose peaks differ: "
                         f"{', '.join(f'{s.key} ({s.name})' for s in keys)}; choose one")
    spec = datasheet.by_key(name.lower()) or (keys[0] if keys else datasheet.lookup(name))
    if spec is None:
        raise UsageError(f"unknown GPU {name!r}; choose one of {', '.join(s.key for s in datasheet.GPUS)}")
    return spec


def layer_bytes(row: LayerRow, precision: str) -> int:
    """Input, weights and output moved once: PALEO's read + write terms."""
    return (row.input_elems + row.params + row.output_elems) * BYTES[precision]


def predict(
    table: FlopTable, spec: datasheet.GpuSpec, precision: str = "fp32", ppp: float = 1.0
) -> Prediction:
    """Predicted forward time of ``table``'s model on ``spec`` at ``ppp`` of its datasheet peaks."""
    if not 0 < ppp <= 1:
        raise UsageError(f"platform percent of peak must be in (0, 1], not {ppp}")
    peak = spec.tflops.get(precision)
    if peak is None:
        known = ", ".join(spec.tflops)
        raise UsageError(f"no {precision} peak for {spec.key} in the datasheet; it lists {known}")
    flop_rate, byte_rate = peak * 1e12 * ppp, spec.bandwidth_gbps * 1e9 * ppp
    layers = tuple(
        LayerPrediction(row.name, row.type, row.flops, layer_bytes(row, precision),
                        row.flops / flop_rate, layer_bytes(row, precision) / byte_rate)
        for row in table.rows
    )
    return Prediction(table.model, spec, precision, ppp, table.input_shape, layers)
