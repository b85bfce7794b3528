"""Kernel summaries an H200 recorded (``--perfkit-explain``, torch 2.11, 2026-11-27): three runs of two layers
saved as a baseline, and three held-out changes of the layers' code, each judged by the real judge and named
by its explanation's reading. The files are the device run's own (tests/data/h200-explain/)."""
from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.resultfile.load import load
from perfkit.store import baselines
from perfkit.verdict.judge import judge
from perfkit.verdict.noise import Noise

DATA = Path(__file__).parent / "data" / "h200-explain"
RELU, LINEAR = (f"benches/test_layers.py::test_layer[{layer}-forward]" for layer in ("relu", "linear"))


@pytest.fixture(scope="module")
def baseline():
    return baselines.from_runs([load(DATA / f"held_base{i}.json") for i in (1, 2, 3)])


@pytest.mark.parametrize(("change", "name", "verdict", "reading"), [
    # the linear layer's GEMM in TF32: cuBLAS's fp32 kernel gone, a TF32 one in its place
    ("heldout_gemm_tf32", LINEAR, "improved", "kernel sm80_xmma_gemm_f32f32_f32f32_f32_tn_n gone"),
    # ``.mul_(1.0)`` after each forward: a multiply launched beside the ReLU
    ("heldout_extra_kernel", RELU, "regressed", "new kernel vectorized_elementwise_kernel[Mul]"),
    # more Python per call: the GPU's work the same, the host's dispatch slower
    ("heldout_host_work", RELU, "regressed", "GPU time unchanged, host dispatch"),
])
def test_each_held_out_change_is_named_by_its_explanation(baseline, change, name, verdict, reading):
    current = load(DATA / f"{change}.json")
    comparison = judge(baseline, current, Noise.of(baseline))
    flagged = {(r.benchmark, r.verdict.value) for r in comparison.rows if r.gating and r.verdict.value in
               ("regressed", "improved")}
    assert flagged == {(name, verdict)}
    (why,) = comparison.why
    assert why.benchmark == name and why.reading.startswith(reading), why.reading
    if change == "heldout_host_work":
        assert why.reading.endswith("launch-bound")


def test_a_baseline_keeps_the_median_summary_of_the_gpu_runs(baseline):
    summaries = {b.fullname: b.extra["kernel_summary"] for b in baseline.benchmarks}
    assert summaries[RELU]["device"] == "cuda" and summaries[RELU]["launches"] == 1
    (kernel,) = summaries[LINEAR]["kernels"]
    assert kernel["name"].startswith("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n")
