"""The ways of running the time-to-accuracy training (perfkit.workloads.tta's :class:`Variant`), plain data in
a module without torch, and the runs' coefficient of variation: the across-hardware expectations
(perfkit.workloads.benchwork) read a run's variant, and ``perfkit tta-study`` the CoV, when a command only
reads result files, which should not wait seconds for torch to import."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from perfkit.errors import UsageError


@dataclass(frozen=True)
class Variant:
    """How the training is fed and run; the default is the naive loop (a DataLoader from host memory, fp32,
    no workers), the reference every other variant is compared with."""

    name: str = "naive"
    resident: bool = False
    workers: int = 0
    pin_memory: bool = False
    channels_last: bool = False
    bf16: bool = False
    compile_mode: str | None = None  # torch.compile mode: "default", or "reduce-overhead" (CUDA graphs)
    batch: int = 128
    #: cuDNN's deterministic algorithms, its autotuner off: a seed then gives the same accuracy after every
    #: epoch in every process on one kind of GPU, so the time at which the target is crossed moves with the
    #: speed of the training alone, not with the atomics' rounding order (7 to 9 epochs for one seed).
    deterministic: bool = False


NAIVE = Variant()
VARIANTS: dict[str, Variant] = {v.name: v for v in (
    NAIVE,
    replace(NAIVE, name="workers4-pinned", workers=4, pin_memory=True),
    replace(NAIVE, name="resident", resident=True),
    replace(NAIVE, name="resident-channels-last", resident=True, channels_last=True),
    replace(NAIVE, name="resident-bf16", resident=True, bf16=True),
    replace(NAIVE, name="resident-compile", resident=True, compile_mode="default"),
    replace(NAIVE, name="resident-cuda-graphs", resident=True, compile_mode="reduce-overhead"),
    replace(NAIVE, name="resident-batch512", resident=True, batch=512),
    replace(NAIVE, name="resident-batch512-deterministic", resident=True, batch=512, deterministic=True),
    replace(NAIVE, name="best", resident=True, channels_last=True, bf16=True, compile_mode="reduce-overhead"),
)}


def cov(values: list[float]) -> float:
    """Coefficient of variation (sample standard deviation over mean), Coleman et al.'s stability figure."""
    if len(values) < 2:
        raise UsageError("a coefficient of variation needs at least two runs")
    return statistics.stdev(values) / statistics.fmean(values)
