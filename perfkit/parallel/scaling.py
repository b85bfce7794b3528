"""Turn what the ranks of a data-parallel job measured (perfkit.parallel.ddp) into declared metrics.

Communication is reported three ways, side by side, because they answer different questions:
``nccl_kernel_ms`` and ``nccl_exposed_ms`` come from torch.profiler (NCCL kernel time per step,
and the part of it no compute kernel overlapped; an NCCL kernel also counts time spent waiting for
a slower peer); ``comm_exposed_ms`` is the step time minus the same step under DDP's ``no_sync``
(what synchronising gradients adds to a step); ``comm_subtraction_ms`` is the course's estimate
(the n-GPU step minus the 1-GPU time for the same per-GPU batch, added by the derived pass),
which also charges any slow-down of the compute itself to communication.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from perfkit.errors import MeasurementError
from perfkit.measure.memory import MiB
from perfkit.results import comm
from perfkit.results.metrics import Better, MetricRecorder
from perfkit.results.payloads import AllreduceSweep, EpochStats, LargeBatch, Scaling, SweepRow

GB = 1e9
ScalingMode = Literal["weak", "strong"]


@dataclass(frozen=True)
class ScalingWorkload:
    """A data-parallel training benchmark: model, data, and what stays fixed as GPUs are added.

    ``batch`` is per GPU for weak scaling (seed 004) and the global batch for strong scaling (seed 003).
    ``epoch``: time a whole epoch (``dataset_size`` images, or CIFAR-10's 50,000); else ``steps`` steps.
    """

    name: str
    model: str
    data: Literal["cifar10", "random"]
    input: tuple[int, int, int]
    batch: int
    scaling: ScalingMode = "weak"
    dataset_size: int | None = None
    epoch: bool = True
    steps: int = 30

    def per_gpu(self, gpus: int) -> int:
        return self.batch if self.scaling == "weak" else self.batch // gpus

    def reference_key(self) -> str:
        """Runs with the same key on one GPU are the same job: weak b128 and strong B128 share it."""
        return f"{self.model}-{self.data}-{self.input[-1]}px-global{self.batch}"

    def spec(self, gpus: int, data_root: str | None, device: str = "cuda", warmup: int = 10) -> dict[str, Any]:
        return {"kind": "scaling", "device": device, "model": self.model, "data": self.data,
                "input": list(self.input), "batch": self.per_gpu(gpus), "dataset_size": self.dataset_size,
                "data_root": data_root, "epoch": self.epoch, "steps": self.steps, "warmup": warmup,
                "profile_steps": 5, "nosync_steps": 20, "allreduce_reps": 10}


def _ms(seconds: Sequence[float]) -> list[float]:
    return [s * 1e3 for s in seconds]


def check_training(result: Mapping[str, Any]) -> None:
    """A scaling run counts only if replicas agree (where there are several) and the loss fell."""
    if result.get("replicas_max_abs_diff", 0.0) > 0:  # NaN (a diverged run) is reported by its loss instead
        raise MeasurementError(f"replicas disagree after training: parameters differ by up to "
                               f"{result['replicas_max_abs_diff']:.3g} between ranks")
    if "loss_first" in result and not result["loss_last"] < result["loss_first"]:
        raise MeasurementError(f"training loss did not fall ({result['loss_first']:.4f} -> {result['loss_last']:.4f})")


def record_throughput(metrics: MetricRecorder, result: Mapping[str, Any], workload: ScalingWorkload,
                      method: str) -> None:
    """``epoch_s``, ``images_per_s`` and the run's record; ``speedup`` over the 1-GPU run of the same job
    is added by the derived pass (perfkit.results.derived)."""
    if result.get("epoch_s"):
        metrics.record("epoch_s", result["epoch_s"], "s", "lower")
    else:
        metrics.absent("epoch_s", "this benchmark times a fixed number of steps, not an epoch")
    images = result["global_batch"]
    metrics.record("images_per_s", unit="img/s", better="higher", samples=[images / s for s in result["step_s"]])
    metrics.payload(Scaling(method, workload.name, workload.reference_key(), result["world"], images,
                            result["batch_per_gpu"], result.get("steps_per_epoch"), len(result["step_s"]),
                            result.get("parameters")))
    if result["world"] == 1:
        metrics.info("scaling_reference", "this run is the 1-GPU reference")


def record_peaks(metrics: MetricRecorder, peaks: Sequence[int | None]) -> None:
    """The largest per-GPU allocator peak, with every GPU's in ``info``."""
    if any(p is None for p in peaks):
        metrics.absent("peak_allocated_mib", "peak memory comes from PyTorch's CUDA allocator; this run is on the CPU")
        return
    mib = [p / MiB for p in peaks if p is not None]
    metrics.record("peak_allocated_mib", max(mib), "MiB", "lower", gate=True)
    metrics.info("per_gpu_peak_allocated_mib", mib)


def record_ddp(metrics: MetricRecorder, result: Mapping[str, Any], workload: ScalingWorkload) -> None:
    """Every metric of one DDP scaling run measured by its ranks (the headline time is injected by the
    benchmark; figures over the 1-GPU run are added by the derived pass)."""
    check_training(result)
    gpus = result["world"]
    record_throughput(metrics, result, workload, "DDP")
    record_peaks(metrics, [r["peak_allocated"] for r in result["ranks"]])
    metrics.info("replicas_equal", True)
    step_s = statistics.median(result["step_s"])
    compute_s = metrics.record("compute_ms", unit="ms", better="lower", samples=_ms(result["nosync_step_s"])).value / 1e3
    grad_bytes = result["grad_bytes"]
    metrics.record("gradient_mib", grad_bytes / MiB, "MiB", "none")
    names = ("comm_exposed_ms", "comm_subtraction_ms", "nccl_kernel_ms", "nccl_exposed_ms", "nccl_overlap_fraction",
             "ddp_algbw_gbps", "ddp_busbw_gbps", "raw_allreduce_busbw_gbps", "busbw_ratio", "course_bandwidth_gbps")
    if gpus == 1:
        for name in names:
            metrics.absent(name, "one GPU: there is nothing to all-reduce")
        return
    metrics.record("comm_exposed_ms", (step_s - compute_s) * 1e3, "ms", "lower")
    profile = result.get("profile")
    ddp_busbw = None
    if profile and profile["nccl_s"] > 0:
        metrics.record("nccl_kernel_ms", profile["nccl_s"] * 1e3, "ms", "lower")
        metrics.record("nccl_exposed_ms", (profile["nccl_s"] - profile["nccl_overlapped_s"]) * 1e3, "ms", "lower")
        metrics.record("nccl_overlap_fraction", profile["nccl_overlapped_s"] / profile["nccl_s"], "ratio", "higher")
        metrics.record("ddp_algbw_gbps", comm.algbw(grad_bytes, profile["nccl_s"]) / GB, "GB/s", "higher")
        ddp_busbw = metrics.record("ddp_busbw_gbps", comm.busbw(grad_bytes, profile["nccl_s"], gpus) / GB,
                                   "GB/s", "higher").value
        metrics.info("profile", dict(profile))
    else:
        for name in ("nccl_kernel_ms", "nccl_exposed_ms", "nccl_overlap_fraction", "ddp_algbw_gbps", "ddp_busbw_gbps"):
            metrics.absent(name, "no NCCL kernels profiled (torch.profiler sees CUDA kernels only)")
    raw = metrics.record("raw_allreduce_busbw_gbps", unit="GB/s", better="higher",
                         samples=[comm.busbw(grad_bytes, t, gpus) / GB for t in result["allreduce_op_s"]]).value
    if ddp_busbw is None:
        metrics.absent("busbw_ratio", "needs DDP's NCCL kernel time from the profiler")
    else:
        metrics.record("busbw_ratio", ddp_busbw / raw, "ratio", "higher")


def record_dataparallel(metrics: MetricRecorder, result: Mapping[str, Any], workload: ScalingWorkload) -> None:
    """Throughput and per-GPU peaks of one nn.DataParallel run (perfkit.parallel.dataparallel)."""
    check_training(result)
    record_throughput(metrics, result, workload, "DataParallel")
    record_peaks(metrics, result["peaks"])


def record_sweep(metrics: MetricRecorder, result: Mapping[str, Any]) -> list[dict[str, float]]:
    """busbw and algbw per message size (nccl-tests' table); the largest size's busbw is the metric."""
    gpus = result["world"]
    rows = []
    for row in result["rows"]:
        op_s = statistics.median(row["op_s"])
        rows.append({"bytes": row["bytes"], "time_us": op_s * 1e6, "algbw_gbps": comm.algbw(row["bytes"], op_s) / GB,
                     "busbw_gbps": comm.busbw(row["bytes"], op_s, gpus) / GB})
    largest = result["rows"][-1]
    metrics.record("busbw_gbps", unit="GB/s", better="higher",
                   samples=[comm.busbw(largest["bytes"], t, gpus) / GB for t in largest["op_s"]])
    metrics.record("algbw_gbps", rows[-1]["algbw_gbps"], "GB/s", "higher")
    metrics.payload(AllreduceSweep(gpus, tuple(SweepRow(**row) for row in rows)))
    return rows


def record_accuracy(metrics: MetricRecorder, result: Mapping[str, Any]) -> None:
    """Final train loss/accuracy and test accuracy of a large-batch run; a diverged run says so."""
    check_training(result)
    last = result["history"][-1]
    metrics.payload(LargeBatch(result["world"], result["global_batch"], result["batch_per_gpu"], result["lr"],
                               result["rule"], result["steps_per_epoch"], result["warmup_steps"], result["data"],
                               tuple(EpochStats(**epoch) for epoch in result["history"])))
    metrics.record("train_s", result["train_s"], "s", "lower")
    finals: tuple[tuple[str, float, str, Better], ...] = (("train_loss", last["train_loss"], "nats", "lower"),
                                      ("train_accuracy", last["train_accuracy"], "ratio", "higher"),
                                      ("test_loss", result["test_loss"], "nats", "lower"),
                                      ("test_accuracy", result["test_accuracy"], "ratio", "higher"))
    for name, value, unit, better in finals:
        if math.isfinite(value):
            metrics.record(name, value, unit, better)
        else:
            metrics.absent(name, f"training diverged at learning rate {result['lr']:g} (the value is {value})")
