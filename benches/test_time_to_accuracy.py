"""Time to accuracy, its stability and generalisation, and GPU utilisation while training (seed 002 Problem 2,
after Coleman et al.'s analysis of DAWNBench).

R runs (3; one for the nightly's deterministic case) of the same training, differing only in their seed (after
an untimed warm-up: compilation and graph capture happen once per process), each until the validation accuracy
reaches the target or the epoch cap (30; the one-cycle schedule spans 15): the headline is each run's time
(TTA where it reached the target, the time to the cap where it did not; ``runs_reached`` says how many did,
``share_reached`` what share, and gates),
with ``tta_cov`` (Coleman et al.'s coefficient of variation), the training time at which each run crossed the
target, interpolated between the evaluation before and the one that reached it (``train_to_target_s``: the
figure the verdict rests on, since the headline moves by whole epochs of training and evaluation), epochs to
the target, training and evaluation time apart, images/s, the final models' accuracy on a distribution-shifted
set (mean and standard deviation), and NVML's GPU and memory utilisation sampled at 20 Hz over the runs (the
series is kept in the record and drawn by ``perfkit report``). Data and target are in the id: CIFAR-10 from
``--perfkit-data-root`` with the course's 92%, else perfkit's harder synthetic set
(perfkit.workloads.data.HARD) with its own target. The variants (perfkit.workloads.tta.VARIANTS) run the same
training fed and executed differently (Problem 2.4). Nightly: ResNet-18 resident at batch 512 with cuDNN's
deterministic algorithms (a seed's accuracy per epoch repeats from night to night, so the gate moves with the
training's speed); the rest weekly. ResNet-50
(the course's model) runs the naive loop and the resident variant. Progress (run, epoch, accuracy, elapsed,
ETA) is a terminal line at most every 20 s (``perfkit_progress``).
"""
from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from perfkit.measure import power
from perfkit.pbench import inject_samples
from perfkit.plugin import profile_of
from perfkit.resultfile import figures
from perfkit.resultfile.metrics import MetricRecorder
from perfkit.resultfile.payloads import TimeToAccuracy, TtaRun
from perfkit.workloads import data, tta

#: R: runs of each case (the nightly's five were cut to three to fit its five minutes; the gate, the training
#: time to the target between evaluations, varies less than the whole-epoch TTA did)
RUNS = 3
#: The nightly's deterministic variant repeats each seed's time to the target run after run (two seeds within
#: 0.3% over three H200 processes), so one seed carries its gate; the second took 19-20 s of the H100's five
#: minutes (figures.TTA_ONE_SEED_NIGHTLY; its CoV is the weekly cases').
NIGHTLY_RUNS = 1
#: Why the nightly case has no spread over seeds.
ONE_SEED = "the nightly trains one seed: the spread over seeds is the weekly cases' (three seeds)"
#: (train images, validation images, epoch cap, one-cycle length in epochs) per profile; None: the whole split
SIZES = {"full": (None, None, 30, 15), "quick": (2048, 512, 8, 8)}
#: The synthetic target, calibrated on an H200 (ResNet-18, batch 128, resident, one-cycle over 15 epochs, seed
#: 0): validation accuracy per epoch .855 .894 .929 .942 .949 .947 .965 .958 .972 …, so 96% takes seven
#: epochs, in the steady climb of the schedule's annealing (95% would sit on the plateau of epochs 4-6, where
#: a seed decides).
TARGETS = {"cifar10": 0.92, "synthetic-hard": 0.96, "quick": 0.5}
#: ResNet-18 resident at batch 512, deterministic: a run of seven epochs takes about 17 s on an H200 (the
#: batch-128 resident variant, the nightly until 2026-11-24, took 75 s for three, and its gate spread 13%
#: between runs: the seeds' nondeterministic runs crossed the target after 7 to 9 epochs).
NIGHTLY = {("resnet18-cifar", "resident-batch512-deterministic")}
SAMPLE_INTERVAL_S = 0.05  # 20 Hz
MAX_SERIES = 4000  # utilisation points kept in the record (evenly thinned beyond this)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "tta_case" not in metafunc.fixturenames:
        return
    profile = profile_of(metafunc.config).name
    real = data.data_root(metafunc.config.getoption("perfkit_data_root")) is not None
    source = "cifar10" if real else "synthetic-hard"
    target = TARGETS["quick"] if profile == "quick" and not real else TARGETS[source]
    models = ("tiny-cnn",) if profile == "quick" else ("resnet18-cifar", "resnet50-cifar")
    variants = ("naive", "resident") if profile == "quick" else tuple(tta.VARIANTS)
    metafunc.parametrize(
        "tta_case",
        [
            pytest.param(
                (model, source, target, variant),
                id=f"{model}-{source}-top1_{target:.2f}-{variant}",
                marks=[] if (model, variant) in NIGHTLY or profile == "quick" else [pytest.mark.weekly],
            )
            for model in models
            for variant in variants
            if model == "resnet18-cifar" or variant in ("naive", "resident") or profile == "quick"
        ],
    )


def test_time_to_accuracy(benchmark, tta_case, perfkit_device, perfkit_profile, perfkit_data_root,
                          perfkit_shifted_root, perfkit_metrics, perfkit_progress):
    model, _, target, variant_name = tta_case
    variant = tta.VARIANTS[variant_name]
    train_size, valid_size, epoch_cap, schedule_epochs = SIZES[perfkit_profile.name]
    root = data.data_root(perfkit_data_root)
    train = data.cifar10(root, train=True, size=train_size, recipe=data.HARD)
    valid = data.cifar10(root, train=False, size=valid_size, recipe=data.HARD)
    shifted = (
        data.labelled_folder(Path(perfkit_shifted_root))
        if perfkit_shifted_root
        else None
        if root is not None
        else data.synthetic_cifar10(len(valid), seed=2, recipe=data.shifted(data.HARD))
    )
    count = RUNS
    if (model, variant_name) in NIGHTLY:
        count = NIGHTLY_RUNS
        perfkit_metrics.measured_by(figures.TTA_ONE_SEED_NIGHTLY)
    tta.warm_up(model, variant, perfkit_device)
    runs, trace = _train_runs(model, train, valid, shifted, target, (epoch_cap, schedule_epochs), variant,
                              perfkit_device, count, perfkit_progress)

    inject_samples(
        benchmark, [r.tta_s if r.reached and r.tta_s is not None else r.train_s + r.eval_s for r in runs]
    )
    reached = [r for r in runs if r.reached and r.tta_s is not None]
    perfkit_metrics.record(figures.RUNS_REACHED, len(reached))
    perfkit_metrics.record(figures.SHARE_REACHED, len(reached) / len(runs))
    if len(reached) >= 2:
        perfkit_metrics.record(figures.TTA_COV, tta.cov([r.tta_s for r in reached]))
    else:
        perfkit_metrics.absent(figures.TTA_COV, ONE_SEED if count == 1 else
                               f"{len(reached)} of {len(runs)} runs reached {target:.0%}: a CoV needs two")
    if reached:
        perfkit_metrics.record(figures.EPOCHS_TO_TARGET, samples=[r.epochs for r in reached])
    crossings = [c for r in runs if (c := r.crossing_s(target)) is not None]
    if crossings:
        perfkit_metrics.record(figures.TRAIN_TO_TARGET_S, samples=crossings)
    else:
        perfkit_metrics.absent(figures.TRAIN_TO_TARGET_S, f"no run reached {target:.0%}")
    # the gate: training to the target, between evaluations (a whole-epoch step of the headline TTA is noise)
    perfkit_metrics.gate_on(figures.TRAIN_TO_TARGET_S)
    if variant.deterministic and variant.resident and perfkit_device.type == "cuda":
        # each seed crosses the target at the same epoch every run, the set is on the GPU and a batch-512 step
        # keeps it busy: the gate is the GPU's pace (a seed's times within 0.3% over three H200 processes)
        perfkit_metrics.gpu_bound()
    perfkit_metrics.record(figures.EVAL_S, samples=[r.eval_s for r in runs])
    perfkit_metrics.record(figures.IMAGES_PER_S, samples=[r.images_per_s for r in runs])
    shifted_accuracy = [r.shifted_accuracy for r in runs if r.shifted_accuracy is not None]
    if shifted_accuracy:
        perfkit_metrics.record(figures.SHIFTED_ACCURACY, statistics.fmean(shifted_accuracy))
        if len(shifted_accuracy) >= 2:
            perfkit_metrics.record(figures.SHIFTED_ACCURACY_SD, statistics.stdev(shifted_accuracy))
        else:
            perfkit_metrics.absent(figures.SHIFTED_ACCURACY_SD, ONE_SEED)
    else:
        for spec in (figures.SHIFTED_ACCURACY, figures.SHIFTED_ACCURACY_SD):
            perfkit_metrics.absent(
                spec, "no shifted set: give your own labelled images with --perfkit-shifted-root"
            )
    util = _record_utilisation(perfkit_metrics, perfkit_device, trace)
    perfkit_metrics.payload(
        TimeToAccuracy(
            model,
            variant.name,
            variant.batch,
            train.source,
            shifted.source if shifted else "",
            target,
            epoch_cap,
            tuple(
                TtaRun(
                    r.seed,
                    r.reached,
                    r.tta_s,
                    r.train_s,
                    r.eval_s,
                    r.epochs,
                    r.accuracies,
                    r.images_per_s,
                    r.shifted_accuracy,
                    r.trained_s,
                )
                for r in runs
            ),
            *util,
        )
    )


def _train_runs(model: str, train: data.ImageSet, valid: data.ImageSet, shifted: data.ImageSet | None,
                target: float, epochs: tuple[int, int], variant: tta.Variant, device: torch.device,
                count: int, progress: Callable[[str], None]) -> tuple[list[tta.Run], power.PowerTrace | None]:
    """``count`` seeded runs (``epochs``: the cap and the schedule's length), under the NVML sampler where the
    device has one (else no trace)."""
    def run(seed: int) -> tta.Run:
        def say(line: str) -> None:
            progress(f"run {seed + 1}/{count}, {line}")

        return tta.train_to_target(model, train, valid, target, epochs[0], device, seed=seed, variant=variant,
                                   shifted=shifted, progress=say, schedule_epochs=epochs[1])

    def all_runs() -> list[tta.Run]:
        return [run(seed) for seed in range(count)]

    if device.type != "cuda" or power.unavailable_reason() is not None:
        return all_runs(), None  # _record_utilisation says why
    index = device.index if device.index is not None else torch.cuda.current_device()
    with power.PowerSampler(index, interval_s=SAMPLE_INTERVAL_S) as sampler:
        runs = all_runs()
    return runs, sampler.trace


def _record_utilisation(
    metrics: MetricRecorder, device: torch.device, trace: power.PowerTrace | None
) -> tuple[tuple[float, ...], ...]:
    """Mean GPU and memory utilisation over the runs; the series, thinned to at most MAX_SERIES points."""
    if trace is None:
        reason = ("utilisation comes from NVML on a GPU; this run is on the CPU" if device.type != "cuda"
                  else power.unavailable_reason() or "NVML gave no samples")
        for spec in (figures.GPU_UTIL_PCT, figures.MEMORY_UTIL_PCT):
            metrics.absent(spec, reason)
        return (), (), ()
    metrics.record(figures.GPU_UTIL_PCT, trace.mean("gpu_util_pct"))
    metrics.record(figures.MEMORY_UTIL_PCT, trace.mean("memory_util_pct"))
    step = max(1, len(trace.readings) // MAX_SERIES)
    kept = trace.readings[::step]
    return (
        tuple(r.t for r in kept),
        tuple(r.gpu_util_pct for r in kept),
        tuple(r.memory_util_pct for r in kept),
    )
