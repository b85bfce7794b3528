"""Platform percent of peak, layer by layer (seed 002 Problem 1, after Lu et al. and PALEO).

A model's forward is timed whole (the benchmark's headline); then each leaf layer alone on its
captured input, the model with CUDA events and as a CUDA-graph replay (launch overhead in numbers),
and PALEO's prediction at the datasheet peak of the math the convolutions run. The record holds
what a percent of peak needs (each layer's FLOPs, time and type; the precisions in use), so the
share of this run's measured ceilings is computed once the run's results are complete
(perfkit.resultfile.derived). The roofline point uses analytic bytes and, where Nsight Compute can
read counters, the DRAM bytes of one forward.
"""
from __future__ import annotations

import torch

from perfkit.errors import PerfkitError
from perfkit.measure import ncu
from perfkit.measure.ceilings import precision_in_use
from perfkit.resultfile import datasheet, figures
from perfkit.resultfile.metrics import MetricRecorder
from perfkit.resultfile.payloads import Ppp, PppLayer, Roofline, RooflinePoint
from perfkit.workloads import flops, layer_times, models, ncu_forward, paleo


class ModelForward:
    """A registered model in eval mode on ``device`` with a random batch: callable as one no-grad forward."""

    def __init__(self, name: str, batch: int, device: torch.device) -> None:
        self.name, self.batch, self.device = name, batch, device
        self.shape = (batch, *models.DEFAULT_INPUT)
        self.table = flops.flop_table(name, self.shape)
        torch.manual_seed(0)
        self.model = models.build(name).to(device).eval()
        self.x = torch.randn(self.shape, device=device)
        with torch.no_grad():
            models.forward_checked(
                self.model, self.x
            )  # a shape the model cannot take fails here, in one sentence

    def __call__(self) -> None:
        with torch.no_grad():
            self.model(self.x)


def record_ppp(metrics: MetricRecorder, run: ModelForward, measured_s: float, spec: datasheet.GpuSpec | None,
               with_ncu: bool) -> None:
    """Every figure of one model and batch besides its headline time; ``measured_s`` is that time."""
    table = run.table
    layers = layer_times.time_layers(run.model, run.x)
    whole = layer_times.time_model(run.model, run.x)
    conv_precision = precision_in_use("conv", run.device)
    layer_sum = sum(t.seconds for t in layers)
    for figure, value in (
        (figures.TOTAL_FLOPS, table.total_flops),
        (figures.CONV_FLOP_SHARE, table.conv_flop_share),
        (figures.TFLOPS, table.total_flops / measured_s / 1e12),
        (figures.SUM_OF_LAYERS_S, layer_sum),
        (figures.LAYERS_OVER_MODEL, layer_sum / whole.events_s),
        (figures.MODEL_EVENTS_S, whole.events_s),
        (figures.MODEL_GRAPH_S, whole.graph_s),
        (figures.LAUNCH_OVERHEAD_S, whole.launch_overhead_s),
    ):
        metrics.record(figure, value)
    prediction = (
        paleo.predict(table, spec, conv_precision) if spec and conv_precision in spec.tflops else None
    )
    if prediction is None:
        metrics.absent(figures.PREDICTED_S, "no datasheet entry with this precision for this GPU")
    else:
        metrics.record(figures.PREDICTED_S, prediction.pipelined_s)
        metrics.record(figures.MEASURED_OVER_PREDICTED, measured_s / prediction.pipelined_s)
    rows = {r.name: r for r in table.rows}
    predicted = {p.name: p.pipelined_s for p in prediction.layers} if prediction else {}
    metrics.payload(Ppp(run.name, run.batch, conv_precision, precision_in_use("matmul", run.device), tuple(
        PppLayer(t.name, t.type, t.calls, t.seconds, rows[t.name].flops if t.name in rows else 0,
                 paleo.layer_bytes(rows[t.name], "fp32") if t.name in rows else None, predicted.get(t.name))
        for t in layers), flops.CONVENTION))
    _record_roofline(metrics, run, conv_precision, with_ncu)


def _record_roofline(metrics: MetricRecorder, run: ModelForward, precision: str, with_ncu: bool) -> None:
    """The analytic-bytes point, and the ncu DRAM-bytes point where it can be measured (the last one
    counts)."""
    flop = float(run.table.total_flops)
    analytic = float(sum(paleo.layer_bytes(r, "fp32") for r in run.table.rows))
    points = [RooflinePoint(run.name, flop, analytic, "analytic minimum", precision)]
    if with_ncu:
        try:
            dram = ncu.measure_dram_bytes(ncu_forward.Region(run.name, tuple(run.shape)).argv(), run.name)
            points.append(RooflinePoint(run.name, flop, float(dram), "ncu dram", precision))
            metrics.record(figures.DRAM_BYTES, dram)
        except PerfkitError as exc:
            metrics.absent(figures.DRAM_BYTES, str(exc))
    else:
        metrics.absent(
            figures.DRAM_BYTES, "ncu runs for ResNet-18/50 in the full profile only (it replays every kernel)"
        )
    metrics.record(figures.INTENSITY, points[-1].intensity)
    metrics.payload(Roofline(tuple(points)))
