"""Large-batch training (seed 003 Q4): the same epochs at global batch 128 on 1 GPU vs 2048 on 4 GPUs.

With the same learning rate, 16× fewer updates leave the large batch behind; Goyal et al.'s linear scaling
rule (learning rate × 2048/128) with a linear warm-up (one epoch, and two: at 2048 an epoch is only 24
updates) is the usual fix. Seed 004's optimiser: SGD, lr 0.1, momentum 0.9, weight decay 5e-4, on ResNet-18.
CIFAR-10 from ``--perfkit-data-root``, else perfkit's harder synthetic set (perfkit.workloads.data.HARD, the
one the time-to-accuracy family trains on: on the easy set every rule reached about 95% in one epoch, so the
question had no answer); the id ends with the data used. Final train loss/accuracy and test accuracy are
metrics; the headline time is one epoch.
"""
from __future__ import annotations

import pytest

from perfkit.parallel import scaling
from perfkit.parallel.records import AccuracyJob
from perfkit.pbench import inject_samples
from perfkit.resultfile import figures
from perfkit.workloads import data

CASES = [  # (GPUs, global batch, rule, warm-up epochs), id, marks
    ((1, 128, "same", 0), "gpus1-B128", [pytest.mark.gpus(1), pytest.mark.weekly]),
    ((4, 2048, "same", 0), "gpus4-B2048-same-lr", [pytest.mark.gpus(4)]),
    ((4, 2048, "linear-warmup", 1), "gpus4-B2048-linear-warmup", [pytest.mark.gpus(4), pytest.mark.weekly]),
    (
        (4, 2048, "linear-warmup", 2),
        "gpus4-B2048-linear-warmup-2ep",
        [pytest.mark.gpus(4), pytest.mark.weekly],
    ),
]
EPOCHS = {"full": 5, "quick": 2}
SYNTHETIC_SIZES = {"full": (50_000, 10_000), "quick": (8192, 2048)}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" in metafunc.fixturenames:
        real = data.data_root(metafunc.config.getoption("perfkit_data_root")) is not None
        source = "cifar10" if real else data.HARD.name
        metafunc.parametrize("case", [pytest.param(case, id=f"{name}-{source}", marks=marks)
                                      for case, name, marks in CASES])


def test_large_batch_accuracy(benchmark, case, perfkit_metrics, perfkit_profile, perfkit_data_root,
                              perfkit_torchrun):
    gpus, global_batch, rule, warmup_epochs = case
    train_size, test_size = SYNTHETIC_SIZES[perfkit_profile.name]
    job = AccuracyJob(
        "resnet18",
        perfkit_data_root,
        train_size,
        test_size,
        EPOCHS[perfkit_profile.name],
        global_batch,
        base_batch=128,
        base_lr=0.1,
        rule=rule,
        warmup_epochs=warmup_epochs,
        recipe=data.HARD.name,
    )
    result = perfkit_torchrun(job, gpus)
    inject_samples(benchmark, [epoch.seconds for epoch in result.history])
    scaling.record_accuracy(perfkit_metrics, result)
    if job.device == "cuda":
        perfkit_metrics.measured_by(figures.LARGE_BATCH_HEURISTIC_CONVS)
