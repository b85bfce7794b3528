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
from perfkit.verdict.comparison import COUNT_MOVED, Row, Verdict
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


def test_only_one_gpu_steps_the_gpu_paces_are_timed_on_the_gpu_alone_beside_their_time():
    """DDP's reducer adds host work to a step the GPU paces: on one GPU its kernels are timed with their
    launches queued ahead too, so a slow host's pace does not read as the code's."""
    cifar = ScalingWorkload("r18", "resnet18", "cifar10", (3, 32, 32), 128)
    imagenet = ScalingWorkload("r50", "resnet50", "random", (3, 224, 224), 64, epoch=False)
    assert imagenet.job(1, None).gpu_alone
    assert not imagenet.job(2, None).gpu_alone  # several GPUs' steps hold their links too
    assert not cifar.job(1, None).gpu_alone  # its launch pace times it on the GPU alone
    # queued whole behind a held stream, its launches need a longer queue than CUDA's default
    assert imagenet.job(1, None).environment() == {"CUDA_SCALE_LAUNCH_QUEUES": "4x"}
    assert cifar.job(1, None).environment() == imagenet.job(2, None).environment() == {}
    run = TrainingRun(1, 64, 64, (0.033,) * 3, None, 30, 7.0, 6.9, (1,), gpu_step_s=(0.032, 0.0321))
    assert TrainingRun.from_json(run.to_json()) == run
    older = {k: v for k, v in run.to_json().items() if not k.startswith("gpu_step")}  # an earlier rank's
    assert TrainingRun.from_json(older) == dataclasses.replace(run, gpu_step_s=())


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


def test_a_job_is_launched_with_the_environment_it_asks_for(monkeypatch):
    """CUDA reads its launch queue's length once, at start-up: the job's processes must get it."""
    from perfkit.parallel import launch

    imagenet = ScalingWorkload("r50", "resnet50", "random", (3, 224, 224), 64, epoch=False)
    given: list[Any] = []

    def launched(module, job, nproc, *, torchrun_args=(), timeout_s=0.0, env=None):
        given.append(env)
        raise launch.DistributedError("stopped before any process started")

    monkeypatch.setattr(launch, "launch", launched)
    for gpus in (1, 2):
        with pytest.raises(launch.DistributedError):
            launch.run(imagenet.job(gpus, None), gpus)
    assert given == [{"CUDA_SCALE_LAUNCH_QUEUES": "4x"}, {}]


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
    assert pace.ops_per_step > 50  # DDP's step counted through its reducer, in the worker


def test_an_older_file_that_gated_on_launches_per_step_is_read_as_showing_it(h200_results, tmp_path):
    """A comparison gates on what either side declares; a baseline saved while launches per step gated is
    read as today's code declares it (perfkit.resultfile.migrations)."""
    from perfkit.resultfile.load import load

    ddp = next(b for b in h200_results["benchmarks"] if "test_ddp[resnet18-cifar-b128" in b["fullname"])
    ddp["extra_info"]["metrics"][figures.LAUNCHES_PER_STEP.name]["gate"] = True
    (tmp_path / "old.json").write_text(json.dumps(h200_results))
    entry = load(tmp_path / "old.json").by_name()[ddp["fullname"]]
    assert figures.LAUNCHES_PER_STEP.name in entry.metrics
    assert figures.LAUNCHES_PER_STEP.name not in entry.gating_figures()


def _cpu_step(extra_ops: int = 0):
    """One real training step of a small CNN on the CPU (SGD with momentum), with ``extra_ops`` tiny ops
    added to it, as a regression of the step's host work would."""
    model = training.models.build("tiny-cnn")
    step = training.train_step(model, training.sgd_momentum(model))
    batch = (torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,)))
    spare = torch.zeros(1)

    def stepped() -> None:
        step(batch)
        for _ in range(extra_ops):
            spare.add_(1.0)
    return stepped


def test_a_step_dispatches_the_same_ops_every_time_and_one_added_op_is_counted():
    """Forward, backward and the update all reach the dispatcher; the count is the code's own, the same on
    every step (the optimizer's momentum buffers exist from the first step on)."""
    step = _cpu_step()
    step()  # the first step creates the momentum buffers
    counts = {training.ops_per_step(step) for _ in range(3)}
    assert len(counts) == 1
    (ops,) = counts
    forward_only = training.ops_per_step(lambda: training.models.build("tiny-cnn")(torch.zeros(4, 3, 32, 32)))
    assert ops > 2 * forward_only > 0  # the backward's and the update's ops are counted too
    slower = _cpu_step(extra_ops=1)
    slower()
    assert training.ops_per_step(slower) == ops + 1


def _night_with_ops(baseline: dict[str, Any], baseline_ops: int, night_ops: int,
                    folder: Path) -> dict[tuple[str, str], Row]:
    """The committed H200 baseline's one-GPU CIFAR steps, every run counting ``baseline_ops`` ops a step,
    against its own newest run counting ``night_ops``; the rows of the step's launch figures and GPU time."""
    cifar = "cifar-b128-weak-gpus1]"
    runs = baseline["machine_info"]["perfkit"]["runs"]
    for bench in baseline["benchmarks"]:
        if cifar in bench["fullname"]:
            MetricRecorder(bench["extra_info"]).record(figures.OPS_PER_STEP, baseline_ops)
            ran = runs[bench["fullname"]]
            ran[figures.OPS_PER_STEP.name] = [baseline_ops] * len(ran[TIME])  # every run counted
            baseline["machine_info"]["perfkit"]["figure_runs"].get(bench["fullname"], {}).pop(
                figures.OPS_PER_STEP.name, None)
    night = copy.deepcopy(baseline)
    for key in RUN_KEYS:
        night["machine_info"]["perfkit"].pop(key, None)
    night["datetime"] = "2026-12-03T00:00:00+00:00"
    night["benchmarks"] = [b for b in night["benchmarks"] if cifar in b["fullname"]]
    for bench in night["benchmarks"]:
        MetricRecorder(bench["extra_info"]).record(figures.OPS_PER_STEP, night_ops)
    (folder / "baseline.json").write_text(json.dumps(baseline))
    (folder / "night.json").write_text(json.dumps(night))
    rows = judge_files(folder / "baseline.json", folder / "night.json", None, storage=folder / "none")[2].rows
    names = {b["fullname"] for b in night["benchmarks"]}
    shown = (TIME, figures.LAUNCHES_PER_STEP.name, figures.GPU_STEP_MS.name, figures.OPS_PER_STEP.name)
    return {(r.benchmark.split("[")[0].rsplit("::", 1)[1], r.figure): r for r in rows
            if r.benchmark in names and r.figure in shown}


def test_an_op_added_to_a_launch_bound_step_reads_changed_where_no_time_can_see_it(h200_results, tmp_path):
    """On the committed H200 baseline: the step's GPU time gates, its time and launches per step are shown,
    and one op more in 700 reads ``changed`` (a count the code decides), the same count reads as before."""
    same = _night_with_ops(h200_results, 700, 700, tmp_path)
    assert len(same) == 8
    assert {f for (_, f), r in same.items() if r.gating} == {figures.GPU_STEP_MS.name}
    assert {r.verdict for r in same.values()} <= {Verdict.UNCHANGED, Verdict.UNKNOWN, Verdict.INFO}
    one_more = _night_with_ops(h200_results, 700, 701, tmp_path)
    for test in ("test_ddp", "test_dataparallel"):
        row = one_more[test, figures.OPS_PER_STEP.name]
        assert row.verdict == Verdict.CHANGED and row.note.startswith(COUNT_MOVED)
        assert one_more[test, figures.LAUNCHES_PER_STEP.name].verdict == Verdict.INFO
