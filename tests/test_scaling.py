"""Metrics of data-parallel runs from canned rank-0 results (the shapes perfkit.parallel.ddp returns)."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfkit import SCHEMA_VERSION
from perfkit.errors import BaselineError, MeasurementError
from perfkit.parallel import scaling
from perfkit.parallel.records import AccuracyResult, AllreduceResult, ScalingResult, SizeTimes, TrainingRun
from perfkit.parallel.scaling import ScalingWorkload
from perfkit.resultfile.metrics import MetricRecorder
from perfkit.resultfile.model import BenchmarkEntry
from perfkit.resultfile.payloads import EpochStats, LaunchPace, NcclProfile
from tests.conftest import bench_module, typed

WEAK = ScalingWorkload("r18", "resnet18", "cifar10", (3, 32, 32), 128)


def _result(world: int, step_s: float, batch_per_gpu: int = 128, replicas: float = 0.0,
            loss_last: float = 2.0) -> ScalingResult:
    run = TrainingRun(
        world,
        batch_per_gpu * world,
        batch_per_gpu,
        (step_s,) * 5,
        10 * step_s,
        10,
        2.3,
        loss_last,
        tuple((r + 1) * 2**20 for r in range(world)),
        replicas,
    )
    profile = NcclProfile(5, 0.002, 0.008, 0.0015, 10) if world > 1 else None
    return ScalingResult(
        run, 1_000_000, 4_000_000, (0.008,) * 5, profile, (0.001,) * 3 if world > 1 else None, 6.25, 3.5,
        1.25, 1.5
    )


def _record(result: ScalingResult, workload: ScalingWorkload = WEAK) -> dict:
    """One benchmark entry as the plugin writes it: rank 0's step times as stats, the recorded metrics."""
    extra: dict = {}
    scaling.record_ddp(MetricRecorder(extra), result, workload)
    name = f"{workload.name}-gpus{result.run.world}"
    return {"fullname": name, "name": name, "stats": {"median": result.run.step_s[2]}, "extra_info": extra}


def _derived(*benches: dict) -> list[BenchmarkEntry]:
    return list(typed({"benchmarks": list(benches),
                       "machine_info": {"perfkit": {"schema_version": SCHEMA_VERSION}}}).benchmarks)


def test_weak_scaling_speedup_and_communication_split():
    one_gpu, two = _derived(_record(_result(1, 0.010)), _record(_result(2, 0.0125)))
    assert "speedup" not in one_gpu.metrics
    # what the launch cost, kept beside the figures and judged nowhere
    assert [one_gpu.extra[f"worker_{stage}_s"] for stage in ("startup", "setup", "build", "first_step")] == [
        6.25, 3.5, 1.25, 1.5]
    assert "worker_startup_s" not in one_gpu.metrics
    assert "one GPU" in one_gpu.absent["busbw_ratio"]
    assert two.value("speedup") == pytest.approx(2 * 0.010 / 0.0125)
    assert two.value("scaling_efficiency") == pytest.approx(0.8)
    assert two.value("comm_exposed_ms") == pytest.approx(12.5 - 8.0)
    assert two.value("comm_subtraction_ms") == pytest.approx(12.5 - 10.0)
    assert two.value("nccl_exposed_ms") == pytest.approx(0.5)
    assert two.value("nccl_overlap_fraction") == pytest.approx(0.75)
    assert two.value("ddp_busbw_gbps") == pytest.approx(4e6 / 0.002 / 1e9)  # 2(n-1)/n = 1
    assert two.value("ddp_algbw_gbps") == pytest.approx(two.value("ddp_busbw_gbps"))
    assert two.value("busbw_ratio") == pytest.approx(0.001 / 0.002)
    assert two.value("course_bandwidth_gbps") == pytest.approx(4e6 / 0.0025 / 1e9)
    assert two.value("peak_allocated_mib") == pytest.approx(2.0)
    assert two.record(NcclProfile) == NcclProfile(5, 0.002, 0.008, 0.0015, 10)


def test_a_one_gpu_launch_bound_step_shows_its_launch_pace_and_counts_its_ops():
    """The host's pace and the step over it are shown (their spread between processes left a gate blind);
    the ops a step dispatches are a count the code decides."""
    pace = LaunchPace(0.0095, 1.02e-5, 931.0, 20, 8, 400, ops_per_step=712)
    result = _result(1, 0.010)
    paced = dataclasses.replace(result, run=dataclasses.replace(result.run, launch_pace=pace))
    (entry,) = _derived(_record(paced))
    assert entry.value("launch_us") == pytest.approx(10.2) and entry.value("launches_per_step") == 931.0
    assert entry.value("ops_per_step") == 712 and entry.metrics["ops_per_step"].better == "none"
    assert entry.record(LaunchPace) == pace
    assert entry.gating_figures() == {"time", "peak_allocated_mib"}
    (plain,) = _derived(_record(result))
    assert not {"launch_us", "launches_per_step", "ops_per_step"} & set(plain.metrics)
    older = dataclasses.replace(result, run=dataclasses.replace(result.run, launch_pace=dataclasses.replace(
        pace, ops_per_step=0)))  # a worker that did not count them
    (uncounted,) = _derived(_record(older))
    assert "ops_per_step" not in uncounted.metrics and "not counted" in uncounted.absent["ops_per_step"]


def test_a_launch_bound_step_timed_on_the_gpu_alone_gates_on_that_time_as_gpu_work():
    """Its time is the host's pace (13% between fresh processes); its GPU time, launches queued ahead, is its
    kernels': the benchmark gates on that, and shows its time."""
    pace = LaunchPace(0.0095, 1.02e-5, 931.0, 20, 8, 400, gpu_step_s=(0.0041, 0.0040, 0.0042))
    result = _result(1, 0.010)
    paced = dataclasses.replace(result, run=dataclasses.replace(result.run, launch_pace=pace))
    (entry,) = _derived(_record(paced))
    assert entry.value("gpu_step_ms") == pytest.approx(4.1)
    assert entry.metrics["gpu_step_ms"].samples == pytest.approx((4.1, 4.0, 4.2))
    assert entry.gating_figures() == {"gpu_step_ms", "peak_allocated_mib"}
    assert entry.context.gpu_bound


def test_a_step_whose_gpu_time_could_not_be_read_says_why_and_gates_on_its_time():
    why = "the host took 25.0 ms to queue one call against a 20.0 ms hold"
    pace = LaunchPace(0.0095, 1.02e-5, 931.0, 20, 8, 400, gpu_step_unmeasured=why)
    result = _result(1, 0.010)
    paced = dataclasses.replace(result, run=dataclasses.replace(result.run, launch_pace=pace))
    (entry,) = _derived(_record(paced))
    assert entry.absent["gpu_step_ms"] == why and "gpu_step_ms" not in entry.metrics
    assert entry.gating_figures() == {"time", "peak_allocated_mib"}
    assert not entry.context.gpu_bound


def test_a_gpu_paced_one_gpu_step_timed_on_the_gpu_alone_gates_on_that_time():
    """DDP's ResNet-50 step on one GPU read 11% slow on one host whose reducer work paced it; its kernels'
    time, launches queued ahead, is what the code decides. Where it could not be read, the time gates."""
    imagenet = ScalingWorkload("r50", "resnet50", "random", (3, 224, 224), 64, epoch=False)
    result = _result(1, 0.033)
    timed = dataclasses.replace(result, run=dataclasses.replace(result.run, gpu_step_s=(0.0321, 0.0322)))
    (entry,) = _derived(_record(timed, imagenet))
    assert entry.metrics["gpu_step_ms"].samples == pytest.approx((32.1, 32.2))
    assert entry.gating_figures() == {"gpu_step_ms", "peak_allocated_mib"} and entry.context.gpu_bound
    why = "the host took 70.0 ms to queue one call against a 66.0 ms hold"
    failed = dataclasses.replace(result, run=dataclasses.replace(result.run, gpu_step_unmeasured=why))
    (entry,) = _derived(_record(failed, imagenet))
    assert entry.absent["gpu_step_ms"] == why and entry.gating_figures() == {"time", "peak_allocated_mib"}
    (plain,) = _derived(_record(result, imagenet))
    assert "gpu_step_ms" not in plain.metrics and "gpu_step_ms" not in plain.absent


def test_only_steps_the_gpu_paces_are_declared_gpu_bound():
    """DDP at 224² is GPU work on any number of GPUs; a CIFAR step is the host's pace; nn.DataParallel on
    several GPUs is its one process's pace whatever the images (ResNet-50 spread 10-70% between runs)."""
    imagenet = ScalingWorkload("r50", "resnet50", "random", (3, 224, 224), 64, epoch=False)

    def declared(record: str, workload: ScalingWorkload, world: int) -> bool:
        extra: dict = {}
        result = _result(world, 0.03)
        if record == "ddp":
            scaling.record_ddp(MetricRecorder(extra), result, workload)
        else:
            scaling.record_dataparallel(MetricRecorder(extra), result.run, workload)
        return extra.get("gpu_bound", False)

    assert all(declared("ddp", imagenet, n) for n in (1, 2, 4))
    assert not any(declared("ddp", WEAK, n) for n in (1, 2, 4))
    assert declared("dataparallel", imagenet, 1)
    assert not declared("dataparallel", imagenet, 2) and not declared("dataparallel", imagenet, 4)
    assert not declared("dataparallel", WEAK, 1)


def test_steps_on_gpus_are_the_series_of_cudnns_heuristic_choice():
    """DDP's workers stopped timing cuDNN's candidates (as DataParallel never did): on GPUs its step figures,
    those computed from them, and DataParallel's throughput over DDP's are another series; a run on CPUs,
    where cuDNN never ran, keeps version 1 of them."""
    gpu = _result(2, 0.0125)
    cpu = dataclasses.replace(gpu, run=dataclasses.replace(gpu.run, peaks=(None, None)))
    two = _derived(_record(_result(1, 0.010)), _record(gpu))[1]
    stepped = ("time", "images_per_s", "scaling_efficiency", "busbw_ratio")
    assert {f: two.method(f) for f in stepped} == dict.fromkeys(stepped, 2)
    assert two.method("gradient_mib") == 1  # the model's size: no kernel choice moves it
    assert not _derived(_record(cpu))[0].methods
    for run, version in ((gpu.run, 2), (cpu.run, 1)):
        extra: dict = {}
        scaling.record_dataparallel(MetricRecorder(extra), run, WEAK)
        entry = _derived({"fullname": "dp", "name": "dp", "stats": {"median": 0.01}, "extra_info": extra})[0]
        assert entry.method("throughput_vs_ddp") == version and entry.method("time") == 1


def test_figures_across_entries_measured_two_ways_are_missing_with_the_way_out():
    """A baseline that re-saved one entry of a pair (the 2-GPU run, or DDP beside DataParallel) holds the two
    figures by different methods: nothing is computed across them, and the entry says to re-save both."""
    old_one = _record(_result(1, 0.010))
    old_one["extra_info"].pop("methods")
    two = _derived(old_one, _record(_result(2, 0.0125)))[1]
    assert "speedup" not in two.metrics and "comm_subtraction_ms" not in two.metrics
    assert "re-save both" in two.absent["speedup"] and "re-save both" in two.absent["course_bandwidth_gbps"]
    extra: dict = {}
    scaling.record_dataparallel(MetricRecorder(extra), _result(1, 0.011).run, WEAK)
    extra.pop("methods")
    dp = {"fullname": "dp", "name": "dp", "stats": {"median": 0.011}, "extra_info": extra}
    partnered = _derived(_record(_result(1, 0.010)), dp)[1]
    assert "throughput_vs_ddp" not in partnered.metrics
    assert "method 2" in partnered.absent["throughput_vs_ddp"]


def test_strong_scaling_shares_the_weak_1gpu_reference():
    strong = ScalingWorkload("r18s", "resnet18", "cifar10", (3, 32, 32), 128, "strong")
    _, four = _derived(_record(_result(1, 0.010)), _record(_result(4, 0.004, batch_per_gpu=32), strong))
    assert four.value("speedup") == pytest.approx(2.5)
    assert four.value("comm_subtraction_ms") == pytest.approx(4.0 - 10.0 * 32 / 128)


def test_missing_reference_is_absent_with_a_reason():
    (two,) = _derived(_record(_result(2, 0.0125)))
    assert "no 1-GPU DDP run" in two.absent["speedup"] and "no 1-GPU run" in two.absent["comm_subtraction_ms"]


def test_disagreeing_replicas_or_a_flat_loss_fail_the_benchmark():
    with pytest.raises(MeasurementError, match="replicas disagree"):
        _record(_result(2, 0.01, replicas=1e-3))
    with pytest.raises(MeasurementError, match="loss did not fall"):
        _record(_result(2, 0.01, loss_last=2.5))


def test_the_worker_contract_is_typed_on_both_sides_of_the_process_boundary():
    result = _result(2, 0.0125)
    assert ScalingResult.from_json(result.to_json()) == result
    raw = result.to_json()
    del raw["run"]["step_s"]
    with pytest.raises(BaselineError, match="scaling_result.run: field 'step_s' is missing"):
        ScalingResult.from_json(raw)


def test_sweep_reports_nccl_tests_columns():
    extra: dict = {}
    rows = scaling.record_sweep(MetricRecorder(extra), AllreduceResult(4, (
        SizeTimes(1024, (1e-5,) * 3), SizeTimes(2**30, (0.004, 0.005, 0.006)))))
    assert rows[1].algbw_gbps == pytest.approx(2**30 / 0.005 / 1e9)
    assert extra["metrics"]["busbw_gbps"]["value"] == pytest.approx(1.5 * 2**30 / 0.005 / 1e9)
    # the 1 GiB all-reduce is the GPUs' and links' work: a slower host does not excuse it; the quick
    # profile's 16 MiB is not declared
    assert extra["gpu_bound"] is True
    small: dict = {}
    scaling.record_sweep(MetricRecorder(small), AllreduceResult(4, (SizeTimes(2**24, (1e-4,) * 3),)))
    assert "gpu_bound" not in small


def test_a_diverged_large_batch_run_reports_absence_not_nan():
    extra: dict = {}
    result = AccuracyResult(
        4,
        2048,
        512,
        1.6,
        "linear-warmup",
        24,
        24,
        (EpochStats(0, float("nan"), 0.1, 2.0),),
        9.0,
        float("nan"),
        0.1,
        "synthetic",
        float("nan"),
    )
    scaling.record_accuracy(MetricRecorder(extra), result)
    assert "diverged" in extra["metrics_absent"]["train_loss"]
    assert extra["metrics"]["test_accuracy"]["value"] == 0.1


def _nightly_ids(bench, visible: int, ddp: bool) -> set[str]:
    cases = bench._cases(bench.FULL, visible, ddp=ddp)
    return {case.id for case in cases if not any(mark.name == "weekly" for mark in case.marks)}


@pytest.mark.parametrize("visible", [1, 2, 4])
def test_one_gpu_ddp_steps_are_nightly_only_where_the_multi_gpu_speedups_they_are_the_reference_of_can_run(
        visible):
    """DDP's one-GPU steps (13.5-21.8 s and 10.1-13.8 s of H100 nightlies of 2026-12-05) run weekly on a
    one-GPU machine and nightly beside their peers; DataParallel's steps stay nightly everywhere; the rest of
    the family is weekly."""
    bench = bench_module("test_data_parallel")
    ddp, dp = _nightly_ids(bench, visible, ddp=True), _nightly_ids(bench, visible, ddp=False)
    weak = {f"{w}-gpus{n}" for w in ("resnet18-cifar-b128-weak", "resnet50-224-b64") for n in (1, 2, 4)}
    strong = {"resnet18-cifar-B128-strong-gpus2", "resnet18-cifar-B128-strong-gpus4"}
    one_gpu = {"resnet18-cifar-b128-weak-gpus1", "resnet50-224-b64-gpus1"}
    assert ddp == (weak | strong) - (one_gpu if visible < 2 else set())
    assert dp == weak


def test_a_one_gpu_machines_nightly_collects_dataparallels_one_gpu_steps_and_no_ddp_one():
    """What `pytest benches/ -m "not weekly"` selects where no GPU is visible (as on a one-GPU machine)."""
    command = [sys.executable, "-m", "pytest", "benches/test_data_parallel.py", "--collect-only", "-q",
               "-m", "not weekly", "--perfkit-profile=full", "-p", "no:cacheprovider"]
    listed = subprocess.run(command, cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True,
                            check=False, timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    ids = {line.split("::")[1] for line in listed.stdout.splitlines() if "::" in line}
    assert {"test_dataparallel[resnet18-cifar-b128-weak-gpus1]", "test_dataparallel[resnet50-224-b64-gpus1]",
            "test_ddp[resnet18-cifar-b128-weak-gpus2]"} <= ids, listed.stdout
    assert not {"test_ddp[resnet18-cifar-b128-weak-gpus1]", "test_ddp[resnet50-224-b64-gpus1]"} & ids
