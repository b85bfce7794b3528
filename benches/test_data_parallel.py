"""Data-parallel scaling on 1, 2 and 4 GPUs (seed 000 Task 4, seed 003 Q2-Q3, seed 004 2.2-2.4).

DDP runs launch ``torchrun`` (one process per GPU, NCCL) through perfkit.parallel.launch; each rank measures
(perfkit.parallel.ddp) and rank 0's per-step CUDA-event times of the timed epoch become the benchmark's own
stats. ``speedup`` and ``scaling_efficiency`` divide by the 1-GPU run of the same job in the same results
(perfkit.resultfile.derived). Communication is measured three ways (perfkit.parallel.scaling explains);
all-reduce bandwidth follows nccl-tests and is also given as a ratio to a raw all_reduce of the same bytes in
the same job. ``nn.DataParallel`` (seed 004's choice) runs the same models and GPU counts in this process,
beside DDP. Data: CIFAR-10 from ``--perfkit-data-root`` or learnable synthetic images of its shape; ResNet-50
and VGG16 take random 224² images as the seed did.
"""
from __future__ import annotations

from typing import Any

import pytest

from perfkit.parallel import dataparallel, scaling
from perfkit.parallel.records import AllreduceJob
from perfkit.parallel.scaling import ScalingWorkload
from perfkit.pbench import inject_samples
from perfkit.plugin import profile_of, session_of

CIFAR, IMAGENET = (3, 32, 32), (3, 224, 224)
GPU_COUNTS = (1, 2, 4)
FULL = [
    *(ScalingWorkload(f"resnet18-cifar-b{b}-weak", "resnet18", "cifar10", CIFAR, b) for b in (32, 128, 512)),
    *(
        ScalingWorkload(f"resnet18-cifar-B{b}-strong", "resnet18", "cifar10", CIFAR, b, "strong")
        for b in (32, 128, 512)
    ),
    ScalingWorkload("resnet50-224-b64", "resnet50", "random", IMAGENET, 64, epoch=False),
    ScalingWorkload("vgg16-224-b64", "vgg16", "random", IMAGENET, 64, dataset_size=8192),
]
QUICK = [
    ScalingWorkload("resnet18-cifar8k-b128-weak", "resnet18", "cifar10", CIFAR, 128, dataset_size=8192),
    ScalingWorkload(
        "resnet18-cifar8k-B128-strong", "resnet18", "cifar10", CIFAR, 128, "strong", dataset_size=8192
    ),
    ScalingWorkload("resnet50-224-b16", "resnet50", "random", IMAGENET, 16, epoch=False, steps=10),
]
WORKLOADS = {w.name: w for w in FULL + QUICK}  # names are unique across profiles
SWEEP_SIZES = {"full": [2**k for k in range(12, 31, 2)], "quick": [2**k for k in range(12, 25, 4)]}


#: The nightly selection: one CIFAR batch (weak and strong) and ResNet-50; the rest runs weekly.
NIGHTLY = ("resnet18-cifar-b128-weak", "resnet18-cifar-B128-strong", "resnet50-224-b64")


def _nightly(w: ScalingWorkload, gpus: int, ddp: bool, visible: int) -> bool:
    """Whether a full-profile case is in the nightly selection, where ``visible`` GPUs are visible to the
    run. DDP's one-GPU steps are the reference of its multi-GPU speedups: nightly beside two or more GPUs,
    weekly on a one-GPU machine, where nothing is scaled against them and the one-GPU DataParallel steps (the
    same models, batches and data, in the pytest process) stay nightly. There a DDP step paid a fresh
    worker's start, its process group, its model and its warm-up for about a second of timed steps: the
    ResNet-18 CIFAR step took 13.5-21.8 s of each of four H100 nightlies of 2026-12-05, the ResNet-50 step
    10.1-13.8 s of four (9 s before its first timed step), of a nightly whose limit is 300 s
    (docs/findings.md, 2026-12-05). A one-GPU nightly so runs no torchrun worker, NCCL group or DDP reducer;
    the weekly run does."""
    if w.name not in NIGHTLY:
        return False
    return not (ddp and gpus == 1 and visible < 2)


def _cases(workloads: list[ScalingWorkload], visible: int, ddp: bool) -> list[Any]:
    """The (workload name, GPUs) cases of DDP (``ddp``) or of DataParallel, as plain values so the JSON's
    ``params`` stay readable, marked for a run that sees ``visible`` GPUs."""
    return [
        pytest.param(
            (w.name, n),
            id=f"{w.name}-gpus{n}",
            marks=[pytest.mark.gpus(n)] + ([] if w in QUICK or _nightly(w, n, ddp, visible)
                                           else [pytest.mark.weekly]),
        )
        for w in workloads
        if ddp or w.scaling != "strong"  # DataParallel runs the weak cases only
        for n in GPU_COUNTS
        if not (w.scaling == "strong" and n == 1)
    ]  # strong on 1 GPU is weak's run


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    workloads = FULL if profile_of(metafunc.config).name == "full" else QUICK
    visible = session_of(metafunc.config).settings.gpu_count
    if "ddp_case" in metafunc.fixturenames:
        metafunc.parametrize("ddp_case", _cases(workloads, visible, ddp=True))
    if "dp_case" in metafunc.fixturenames:
        metafunc.parametrize("dp_case", _cases(workloads, visible, ddp=False))


def test_ddp(benchmark, ddp_case, perfkit_metrics, perfkit_data_root, perfkit_torchrun):
    workload, gpus = WORKLOADS[ddp_case[0]], ddp_case[1]
    result = perfkit_torchrun(workload.job(gpus, perfkit_data_root), gpus)
    inject_samples(benchmark, result.run.step_s)
    scaling.record_ddp(perfkit_metrics, result, workload)


def test_dataparallel(benchmark, dp_case, perfkit_metrics, perfkit_data_root):
    workload, gpus = WORKLOADS[dp_case[0]], dp_case[1]
    run = dataparallel.run(workload, gpus, perfkit_data_root)
    inject_samples(benchmark, run.step_s)
    scaling.record_dataparallel(perfkit_metrics, run, workload)


@pytest.mark.parametrize("gpus", [pytest.param(n, id=f"gpus{n}", marks=pytest.mark.gpus(n)) for n in (2, 4)])
def test_allreduce_busbw(benchmark, gpus, perfkit_metrics, perfkit_profile, perfkit_torchrun):
    """nccl-tests' all_reduce_perf in miniature: in-place float32 sum, 4 KiB to 1 GiB, busbw per size."""
    sizes = SWEEP_SIZES[perfkit_profile.name]
    result = perfkit_torchrun(AllreduceJob(tuple(sizes), repetitions=5), gpus)
    inject_samples(benchmark, result.rows[-1].op_s)
    scaling.record_sweep(perfkit_metrics, result)
