"""Platform percent of peak, PALEO prediction and the roofline, measured layer by layer on the GPU
(seed 002 Problem 1, seed 001 roofline).

For VGG16, VGG19, ResNet-18 and ResNet-50 (forward, no_grad, eval) at batch 1 and a large batch:
headline = the whole forward (pytest-benchmark, synchronizing clock); perfkit.workloads.ppp then
times each leaf layer alone, the model with events and as a CUDA-graph replay, and places the model
on the roofline (ncu DRAM bytes for ResNet-18/50 in the full profile). Model and per-layer PPP are
shares of the ceiling of the math actually used (cuDNN convolutions: TF32 by default; linear layers:
fp32 unless matmul precision allows TF32), computed against this run's measured ceilings.
"""
from __future__ import annotations

import statistics

import pytest

from perfkit.measure.ceilings import precision_in_use
from perfkit.pbench import round_times
from perfkit.plugin import profile_of
from perfkit.resultfile import figures
from perfkit.workloads import ppp

MODEL_NAMES = ("vgg16", "vgg19", "resnet18", "resnet50")
NCU_MODELS = ("resnet18", "resnet50")
NIGHTLY_MODELS = ("vgg16",)
BATCHES = {"full": (1, 64), "quick": (1, 8)}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "batch" in metafunc.fixturenames:
        batches = BATCHES[profile_of(metafunc.config).name]
        metafunc.parametrize("batch", [pytest.param(b, id=f"b{b}") for b in batches])


def _name(model: str) -> object:
    """Nightly: VGG16. VGG19 is VGG16 with one more convolution in each of its last three blocks, of shapes
    VGG16 already runs (its FLOPs, the seed's question, are counted nightly by test_flops): timing the same
    kernels again took 6.0-8.8 s of five H100 nightlies (docs/findings.md, 2026-12-05). ResNet-18/50 also run
    Nsight Compute in the full profile (it replays every kernel). The rest runs weekly."""
    return pytest.param(model, id=model, marks=[] if model in NIGHTLY_MODELS else [pytest.mark.weekly])


@pytest.mark.gpu
@pytest.mark.parametrize("name", [_name(n) for n in MODEL_NAMES])
def test_layerwise_ppp(
    benchmark, name, batch, perfkit_device, perfkit_profile, perfkit_metrics, perfkit_datasheet
):
    run = ppp.ModelForward(name, batch, perfkit_device)
    benchmark.pedantic(run, rounds=20, warmup_rounds=5)
    times = round_times(benchmark)
    if not times:
        perfkit_metrics.absent(figures.SHARE_OF_PEAK, "benchmarks are disabled: no model time")
        return
    with_ncu = perfkit_profile.name == "full" and name in NCU_MODELS
    ppp.record_ppp(perfkit_metrics, run, statistics.median(times), perfkit_datasheet, with_ncu)
    if batch >= 64:
        perfkit_metrics.bound_by(figures.matmul_ceiling(precision_in_use("conv", perfkit_device)))
    # launch-bound (a third of the time or more is launching); its eager time moves with the host's pace
    else:
        perfkit_metrics.gate_on(figures.MODEL_GRAPH_S)  # the same forward replayed as one CUDA graph
        perfkit_metrics.gpu_bound()  # a replayed graph leaves the host out (0.1% between H200 runs)
