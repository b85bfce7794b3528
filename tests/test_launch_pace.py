"""A launch-bound step beside its host's launch pace (perfkit.workloads.training.launch_pace): the ratio
counts the step's host work in launches, and only one-GPU steps the host paces carry it."""
from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import torch

from perfkit.cli import judge_files
from perfkit.parallel.records import TrainingRun
from perfkit.parallel.scaling import ScalingWorkload
from perfkit.resultfile import figures, inject
from perfkit.resultfile.figures import TIME
from perfkit.resultfile.metrics import MetricRecorder
from perfkit.resultfile.payloads import PACE_CYCLES, LaunchPace
from perfkit.store.baseline_runs import RUN_KEYS
from perfkit.verdict.comparison import Row, Verdict
from perfkit.workloads import training

CPU = torch.device("cpu")


def _dispatches(count: int):
    """A step that is nothing but ``count`` tiny in-place ops: the launch pace's own op, on another tensor."""
    other = torch.zeros(1)

    def step() -> None:
        for _ in range(count):
            other.add_(1.0)
    return step


def test_a_step_of_n_dispatches_reads_about_n_launches_per_step():
    few = training.launch_pace(_dispatches(10), CPU, cycles=9, steps=4, launches=100)
    many = training.launch_pace(_dispatches(40), CPU, cycles=9, steps=4, launches=100)
    assert (few.cycles, few.steps_per_burst, few.launches_per_burst) == (9, 4, 100)
    assert 5 < few.launches_per_step < 20 and 20 < many.launches_per_step < 80
    assert many.launches_per_step > 2.5 * few.launches_per_step  # four times the host work per step
    assert many.step_s > few.step_s > 0 and few.launch_s > 0


def test_only_one_gpu_steps_the_host_paces_take_a_launch_pace():
    cifar = ScalingWorkload("r18", "resnet18", "cifar10", (3, 32, 32), 128)
    imagenet = ScalingWorkload("r50", "resnet50", "random", (3, 224, 224), 64, epoch=False)
    assert cifar.job(1, None).launch_pace_cycles == PACE_CYCLES
    assert cifar.job(2, None).launch_pace_cycles == 0  # several GPUs' steps hold their links too
    assert imagenet.job(1, None).launch_pace_cycles == 0  # the GPU's pace


def test_a_run_keeps_its_launch_pace_across_the_process_boundary():
    pace = LaunchPace(0.009, 1e-5, 931.0, 20, 8, 400)
    run = TrainingRun(1, 128, 128, (0.009,) * 3, 1.0, 3, 2.3, 2.0, (1,), launch_pace=pace)
    assert TrainingRun.from_json(run.to_json()) == run
    older = {k: v for k, v in run.to_json().items() if k != "launch_pace"}  # a rank of an earlier perfkit
    assert TrainingRun.from_json(older) == dataclasses.replace(run, launch_pace=None)


def test_an_injected_slowdown_scales_the_step_over_the_launch_pace_and_leaves_the_launch_pace():
    """The code got slower, not the host: the ratio moves by the factor, the host's reference stays (as the
    CPU loop over the host's copy), so an injected night can test whether the ratio sees a slowdown."""
    metrics = {figures.LAUNCH_US.name: {"value": 10.0, "unit": "us", "better": "lower"},
               figures.LAUNCHES_PER_STEP.name: {"value": 931.0, "unit": "launches", "better": "lower"}}
    bench = {"fullname": "benches/test_data_parallel.py::test_ddp[resnet18-cifar-b128-weak-gpus1]",
             "stats": {"median": 0.012}, "extra_info": {"metrics": metrics}}
    inject.apply(bench, {inject.ENV: "*test_ddp*=1.10"})
    assert bench["stats"]["median"] == pytest.approx(0.0132)
    assert metrics[figures.LAUNCHES_PER_STEP.name]["value"] == pytest.approx(1024.1)
    assert metrics[figures.LAUNCH_US.name]["value"] == 10.0


@pytest.mark.slow
def test_a_one_rank_ddp_job_on_the_cpu_returns_its_launch_pace():
    from perfkit.parallel import launch
    from perfkit.parallel.records import RESULTS, job_to_json
    from tests.test_distributed import ENV, TINY

    tiny = ScalingWorkload("tiny", TINY, "cifar10", (3, 32, 32), 16, dataset_size=256)
    job = tiny.job(1, None, device="cpu", warmup=2)
    job = dataclasses.replace(job, nosync_steps=2, launch_pace_cycles=3)
    result = RESULTS[job.TAG].from_json(launch.launch("perfkit.parallel.jobs", job_to_json(job), 1, env=ENV))
    pace = result.run.launch_pace
    assert pace is not None and pace.cycles == 3 and pace.step_s > 0 and pace.launches_per_step > 1


def _step_on_a_faster_host(baseline: dict[str, Any], factor: float,
                           folder: Path) -> dict[tuple[str, str], Row]:
    """The committed H200 baseline's newest one-GPU CIFAR steps as one night in which the step did ``factor``
    times the host work on a host ``factor`` times faster: its time as before, its launch pace ``factor``
    times shorter (a faster host hiding a slower step). Whether launches per step gates is left to the code
    (its figure spec) on both sides; its rows: its time, launches per step and GPU time."""
    for bench in baseline["benchmarks"]:
        bench["extra_info"].get("metrics", {}).get(figures.LAUNCHES_PER_STEP.name, {}).pop("gate", None)
    night = copy.deepcopy(baseline)
    for key in RUN_KEYS:
        night["machine_info"]["perfkit"].pop(key, None)
    night["datetime"] = "2026-12-03T00:00:00+00:00"
    night["benchmarks"] = [b for b in night["benchmarks"] if "cifar-b128-weak-gpus1]" in b["fullname"]]
    for bench in night["benchmarks"]:
        metrics = bench["extra_info"]["metrics"]
        metrics[figures.LAUNCH_US.name]["value"] /= factor
        per_step = metrics[figures.LAUNCHES_PER_STEP.name]["value"] * factor
        MetricRecorder(bench["extra_info"]).record(figures.LAUNCHES_PER_STEP, per_step)  # gating per its spec
    (folder / "baseline.json").write_text(json.dumps(baseline))
    (folder / "night.json").write_text(json.dumps(night))
    rows = judge_files(folder / "baseline.json", folder / "night.json", None, storage=folder / "none")[2].rows
    names = {b["fullname"] for b in night["benchmarks"]}
    shown = (TIME, figures.LAUNCHES_PER_STEP.name, figures.GPU_STEP_MS.name)
    return {(r.benchmark.split("[")[0].rsplit("::", 1)[1], r.figure): r for r in rows
            if r.benchmark in names and r.figure in shown}


def test_twice_the_host_work_on_a_host_twice_as_fast_is_caught_by_its_launches_per_step(h200_results,
                                                                                       tmp_path):
    """On the committed H200 baseline, such a night's launches per step regressed, in a selection of the two
    steps (a nightly corrects for 85 figures: the DDP step's 2x would read unknown there); their GPU time did
    not move, and their time, shown beside the gates, reads as before. The night is the baseline's own
    newest run, so its A/A is a kind one; the 2x is what the ratio gates for."""
    same = _step_on_a_faster_host(h200_results, 1.0, tmp_path)
    assert len(same) == 6
    assert {f for (_, f), r in same.items() if r.gating} == {figures.LAUNCHES_PER_STEP.name,
                                                             figures.GPU_STEP_MS.name}
    assert {r.verdict for r in same.values()} <= {Verdict.UNCHANGED, Verdict.UNKNOWN, Verdict.INFO}
    hidden = _step_on_a_faster_host(h200_results, 2.0, tmp_path)
    for test in ("test_ddp", "test_dataparallel"):
        assert hidden[test, TIME].verdict == Verdict.INFO
        assert hidden[test, figures.GPU_STEP_MS.name].verdict in (Verdict.UNCHANGED, Verdict.UNKNOWN)
        assert hidden[test, figures.LAUNCHES_PER_STEP.name].verdict == Verdict.REGRESSED
