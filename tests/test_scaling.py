"""Metrics of data-parallel runs from canned rank-0 results (the shapes perfkit.parallel.ddp returns)."""
from __future__ import annotations

import pytest

from perfkit.errors import MeasurementError
from perfkit.parallel import scaling
from perfkit.parallel.scaling import ScalingWorkload
from perfkit.results.derived import derive
from perfkit.results.metrics import MetricRecorder, value_of

WEAK = ScalingWorkload("r18", "resnet18", "cifar10", (3, 32, 32), 128)


def _result(world: int, step_s: float, **overrides) -> dict:
    result = {"world": world, "batch_per_gpu": 128, "global_batch": 128 * world, "parameters": 1_000_000,
              "grad_bytes": 4_000_000, "step_s": [step_s] * 5, "steps_per_epoch": 10, "epoch_s": 10 * step_s,
              "loss_first": 2.3, "loss_last": 2.0, "replicas_max_abs_diff": 0.0,
              "nosync_step_s": [0.008] * 5, "allreduce_op_s": [0.001] * 3 if world > 1 else None,
              "profile": {"steps": 5, "nccl_s": 0.002, "nccl_overlapped_s": 0.0015, "compute_s": 0.008,
                          "nccl_kernels": 10} if world > 1 else None,
              "ranks": [{"rank": r, "peak_allocated": (r + 1) * 2**20} for r in range(world)]}
    return {**result, **overrides}


def _record(result: dict, workload: ScalingWorkload = WEAK) -> dict:
    """One benchmark entry as the plugin writes it: rank 0's step times as stats, the recorded metrics."""
    extra: dict = {}
    scaling.record_ddp(MetricRecorder(extra), result, workload)
    median = sorted(result["step_s"])[len(result["step_s"]) // 2]
    return {"name": f"{workload.name}-gpus{result['world']}", "stats": {"median": median}, "extra_info": extra}


def _derived(*benches: dict) -> list[dict]:
    return derive({"benchmarks": list(benches), "machine_info": {"perfkit": {}}})["benchmarks"]


def test_weak_scaling_speedup_and_communication_split():
    one_gpu, two_gpus = _derived(_record(_result(1, 0.010)), _record(_result(2, 0.0125)))
    assert "speedup" not in one_gpu["extra_info"]["metrics"]
    assert "one GPU" in one_gpu["extra_info"]["metrics_absent"]["busbw_ratio"]
    two = two_gpus["extra_info"]["metrics"]
    assert two["speedup"]["value"] == pytest.approx(2 * 0.010 / 0.0125)
    assert two["scaling_efficiency"]["value"] == pytest.approx(0.8)
    assert two["comm_exposed_ms"]["value"] == pytest.approx(12.5 - 8.0)
    assert two["comm_subtraction_ms"]["value"] == pytest.approx(12.5 - 10.0)
    assert two["nccl_exposed_ms"]["value"] == pytest.approx(0.5)
    assert two["nccl_overlap_fraction"]["value"] == pytest.approx(0.75)
    assert two["ddp_busbw_gbps"]["value"] == pytest.approx(4e6 / 0.002 / 1e9)  # 2(n-1)/n = 1
    assert two["ddp_algbw_gbps"]["value"] == pytest.approx(two["ddp_busbw_gbps"]["value"])
    assert two["busbw_ratio"]["value"] == pytest.approx(0.001 / 0.002)
    assert two["course_bandwidth_gbps"]["value"] == pytest.approx(4e6 / 0.0025 / 1e9)
    assert two["peak_allocated_mib"]["value"] == pytest.approx(2.0)


def test_strong_scaling_shares_the_weak_1gpu_reference():
    strong = ScalingWorkload("r18s", "resnet18", "cifar10", (3, 32, 32), 128, "strong")
    _, four = _derived(_record(_result(1, 0.010)), _record(_result(4, 0.004, batch_per_gpu=32, global_batch=128), strong))
    assert value_of(four, "speedup") == pytest.approx(2.5)
    assert value_of(four, "comm_subtraction_ms") == pytest.approx(4.0 - 10.0 * 32 / 128)


def test_missing_reference_is_absent_with_a_reason():
    (two,) = _derived(_record(_result(2, 0.0125)))
    absent = two["extra_info"]["metrics_absent"]
    assert "no 1-GPU DDP run" in absent["speedup"] and "no 1-GPU run" in absent["comm_subtraction_ms"]


def test_disagreeing_replicas_or_a_flat_loss_fail_the_benchmark():
    with pytest.raises(MeasurementError, match="replicas disagree"):
        _record(_result(2, 0.01, replicas_max_abs_diff=1e-3))
    with pytest.raises(MeasurementError, match="loss did not fall"):
        _record(_result(2, 0.01, loss_last=2.5))


def test_sweep_reports_nccl_tests_columns():
    extra: dict = {}
    rows = scaling.record_sweep(MetricRecorder(extra), {"world": 4, "rows": [
        {"bytes": 1024, "op_s": [1e-5] * 3}, {"bytes": 2**30, "op_s": [0.004, 0.005, 0.006]}]})
    assert rows[1]["algbw_gbps"] == pytest.approx(2**30 / 0.005 / 1e9)
    assert extra["metrics"]["busbw_gbps"]["value"] == pytest.approx(1.5 * 2**30 / 0.005 / 1e9)


def test_a_diverged_large_batch_run_reports_absence_not_nan():
    extra: dict = {}
    result = {"world": 4, "global_batch": 2048, "batch_per_gpu": 512, "lr": 1.6, "rule": "linear-warmup",
              "steps_per_epoch": 24, "warmup_steps": 24, "data": "synthetic", "train_s": 9.0,
              "history": [{"epoch": 0, "train_loss": float("nan"), "train_accuracy": 0.1, "seconds": 2.0}],
              "test_loss": float("nan"), "test_accuracy": 0.1, "replicas_max_abs_diff": float("nan")}
    scaling.record_accuracy(MetricRecorder(extra), result)
    assert "diverged" in extra["metrics_absent"]["train_loss"]
    assert extra["metrics"]["test_accuracy"]["value"] == 0.1
