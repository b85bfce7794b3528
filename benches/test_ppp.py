"""Platform percent of peak, PALEO prediction and the roofline, measured layer by layer on the GPU
(seed 002 Problem 1, seed 001 roofline).

For VGG16, VGG19, ResNet-18 and ResNet-50 (forward, no_grad, eval) at batch 1 and a large batch:
headline = the whole forward (pytest-benchmark, synchronizing clock). Then each leaf layer is timed
alone on its captured input, the model is timed with events and as a CUDA-graph replay (launch
overhead in numbers), and achieved FLOP/s are divided by the ceiling of the math actually used
(cuDNN convolutions: TF32 by default; linear layers: fp32 unless matmul precision allows TF32).
Model PPP = time the FLOPs would take at those peaks / measured time. PALEO's prediction uses the
datasheet peak of the convolutions' precision. Where ncu can read counters, the DRAM bytes of one
forward (ResNet-18/50) give the measured arithmetic intensity.
"""
from __future__ import annotations

import statistics

import pytest
import torch

from perfkit.errors import PerfkitError
from perfkit.measure.ceilings import CeilingStore, precision_in_use
from perfkit.pbench import round_times
from perfkit.plugin import profile_of
from perfkit.results import datasheet
from perfkit.workloads import flops, layer_times, models, paleo, roofline

MODEL_NAMES = ("vgg16", "vgg19", "resnet18", "resnet50")
NCU_MODELS = ("resnet18", "resnet50")
BATCHES = {"full": (1, 64), "quick": (1, 8)}
_OP = {"Conv2d": "conv", "Linear": "matmul"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "batch" in metafunc.fixturenames:
        batches = BATCHES[profile_of(metafunc.config).name]
        metafunc.parametrize("batch", [pytest.param(b, id=f"b{b}") for b in batches])


def _peaks(device, ceilings: CeilingStore, spec) -> dict[str, tuple[float | None, float | None]]:
    """(measured, datasheet) TFLOP/s of the precision each counted layer type runs in."""
    out = {}
    for kind, op in _OP.items():
        key = datasheet.matmul_key(precision_in_use(op, device))
        measured = ceilings.resolve(key)
        out[kind] = (measured[0] if measured else None, spec.ceiling(key) if spec else None)
    return out


def _ideal_seconds(table: flops.FlopTable, peaks, which: int) -> float | None:
    """The time the counted FLOPs would take at the peak of each layer's precision."""
    total = 0.0
    for row in table.rows:
        if row.counter_flops:
            peak = peaks.get(row.type, (None, None))[which]
            if peak is None:
                return None
            total += row.counter_flops / (peak * 1e12)
    return total


@pytest.mark.gpu
@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in MODEL_NAMES])
def test_layerwise_ppp(benchmark, name, batch, perfkit_device, perfkit_profile, perfkit_metrics, perfkit_ceilings,
                       perfkit_datasheet):
    shape = (batch, *models.DEFAULT_INPUT)
    table = flops.flop_table(name, shape)
    torch.manual_seed(0)
    model = models.build(name).to(perfkit_device).eval()
    x = torch.randn(shape, device=perfkit_device)
    with torch.no_grad():
        models.forward_checked(model, x)

    def forward() -> None:
        with torch.no_grad():
            model(x)

    benchmark.pedantic(forward, rounds=20, warmup_rounds=5)
    times = round_times(benchmark)
    if not times:
        perfkit_metrics.absent("pct_of_peak", "benchmarks are disabled: no model time")
        return
    measured_s = statistics.median(times)
    layers = layer_times.time_layers(model, x)
    whole = layer_times.time_model(model, x)
    peaks = _peaks(perfkit_device, perfkit_ceilings, perfkit_datasheet)
    conv_precision = precision_in_use("conv", perfkit_device)
    rec = perfkit_metrics.record
    rec("total_flops", table.total_flops, "FLOP", "none")
    rec("conv_flop_share", table.conv_flop_share, "ratio", "none")
    rec("tflops", table.total_flops / measured_s / 1e12, "TFLOP/s", "higher")
    for metric, which in (("pct_of_peak", 0), ("pct_of_datasheet", 1)):
        ideal = _ideal_seconds(table, peaks, which)
        if ideal is None:
            perfkit_metrics.absent(metric, "no ceiling for a precision this model uses (run benches/test_ceilings.py)")
        else:
            rec(metric, ideal / measured_s, "ratio", "higher")
    layer_sum = sum(t.seconds for t in layers)
    rec("sum_of_layers_s", layer_sum, "s", "lower")
    rec("layers_over_model", layer_sum / whole.events_s, "ratio", "none")
    rec("model_events_s", whole.events_s, "s", "lower")
    rec("model_graph_s", whole.graph_s, "s", "lower")
    rec("launch_overhead_s", whole.launch_overhead_s, "s", "lower")
    spec = perfkit_datasheet
    prediction = paleo.predict(table, spec, conv_precision) if spec and conv_precision in spec.tflops else None
    if prediction is None:
        perfkit_metrics.absent("predicted_s", "no datasheet entry with this precision for this GPU")
    else:
        rec("predicted_s", prediction.pipelined_s, "s", "none")
        rec("measured_over_predicted", measured_s / prediction.pipelined_s, "ratio", "lower")
    by_name = {r.name: r for r in table.rows}
    predicted = {p.name: p for p in prediction.layers} if prediction else {}
    rows = []
    for t in layers:
        row = by_name.get(t.name)
        flop = row.flops if row else 0
        peak = peaks.get(t.type, (None, None))
        rows.append({"name": t.name, "type": t.type, "calls": t.calls, "seconds": t.seconds, "flops": flop,
                     "tflops": flop / t.seconds / 1e12,
                     "pct_of_peak": (flop / t.seconds / 1e12 / peak[0]) if peak[0] and row and row.counter_flops
                     else None,
                     "bytes": paleo.layer_bytes(row, "fp32") if row else None,
                     "predicted_s": predicted[t.name].pipelined_s if t.name in predicted else None})
    with_ncu = perfkit_profile.name == "full" and name in NCU_MODELS
    _record_roofline(perfkit_metrics, name, table, measured_s, conv_precision, perfkit_ceilings, shape, with_ncu)
    perfkit_metrics.info("ppp", {"model": name, "batch": batch, "precision": conv_precision,
                                 "linear_precision": precision_in_use("matmul", perfkit_device),
                                 "layers": rows, "convention": flops.CONVENTION})


def _record_roofline(metrics, name, table, seconds, precision, ceilings: CeilingStore, shape, with_ncu) -> None:
    analytic = sum(paleo.layer_bytes(r, "fp32") for r in table.rows)
    points = [roofline.Point(name, table.total_flops, analytic, seconds, precision)]
    if with_ncu:
        try:
            dram = roofline.measure_dram_bytes(name, shape)
            points.append(roofline.Point(name, table.total_flops, dram, seconds, precision, "ncu dram"))
            metrics.record("dram_bytes", dram, "B", "none")
        except PerfkitError as exc:
            metrics.absent("dram_bytes", str(exc))
    else:
        metrics.absent("dram_bytes", "ncu runs for ResNet-18/50 in the full profile only (it replays every kernel)")
    peak, bandwidth = ceilings.resolve(datasheet.matmul_key(precision)), ceilings.resolve(datasheet.COPY)
    placed = []
    for point in points:
        entry = {"label": point.label, "bytes_source": point.bytes_source, "flops": point.flops,
                 "bytes": point.bytes, "intensity": point.intensity, "attained_tflops": point.attained_tflops,
                 "precision": precision}
        if peak and bandwidth:
            where = roofline.place(point, peak[0], bandwidth[0])
            entry |= {"bound": where.bound, "roof_tflops": where.roof_tflops, "of_roof": where.of_roof,
                      "ridge_intensity": where.ridge_intensity}
        placed.append(entry)
    metrics.record("intensity_flop_per_byte", points[-1].intensity, "FLOP/B", "none")
    if "of_roof" in placed[-1]:
        metrics.record("of_roof", placed[-1]["of_roof"], "ratio", "higher")
    else:
        metrics.absent("of_roof", "needs measured copy and matmul ceilings (run benches/test_ceilings.py)")
    metrics.info("roofline", placed)
