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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from perfkit.errors import MeasurementError
from perfkit.measure import record
from perfkit.measure.memory import MiB
from perfkit.parallel.records import AccuracyResult, AllreduceResult, ScalingJob, ScalingResult, TrainingRun
from perfkit.resultfile import comm, figures
from perfkit.resultfile.metrics import MetricRecorder
from perfkit.resultfile.payloads import PACE_CYCLES, AllreduceSweep, LargeBatch, Scaling, SweepRow

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

    @property
    def gpu_paced(self) -> bool:
        """224² images keep the GPU busy (ResNet-50 b64 steps spread 0.1-0.3% between H200 runs); a CIFAR
        step is short enough for the host's pace to show (8-15%, and 1.5-1.9x between runs of one 4xH100
        machine)."""
        return self.input[-1] >= 224

    def gpu_alone(self, gpus: int) -> bool:
        """Whether a DDP rank also times the step on the GPU alone, its launches queued ahead: on one GPU, a
        step the GPU paces (the nightly's ResNet-50 b64; VGG16's weekly and the quick profile's ResNet-50 b16
        too). DDP's reducer adds host work to each step; on one H200 host (2026-12-02) three runs of the
        ResNet-50 b64 step read 36.8-37.6 ms where every other run read 33.0-33.5, its steps without the
        reducer (``compute_ms``) 32.2-32.3 ms as everywhere: the host's pace showed through, and left the
        GPU-bound figure a fresh machine's one-run MDE of 15.6%. Its launches overflow CUDA's launch queue
        behind a held stream (the host blocked until the hold ended, 1.3 s after four doublings, three
        processes of one H200, 2026-12-03: the step dispatches 1,220 operators before DDP's, where the CIFAR
        ResNet-18 DDP step's 714 fit; the default queue takes 1,021 launches, 4x 4,093), so its worker runs
        with a longer queue (perfkit.parallel.records.LAUNCH_QUEUE_ENV): seven processes on three fresh H200s
        then read 32.99-33.16 ms, one of them whose time read 37.3 ms (2026-12-03)."""
        return gpus == 1 and self.gpu_paced

    def reference_key(self) -> str:
        """Runs with the same key on one GPU are the same job: weak b128 and strong B128 share it."""
        return f"{self.model}-{self.data}-{self.input[-1]}px-global{self.batch}"

    def job(self, gpus: int, data_root: str | None, device: str = "cuda", warmup: int = 10) -> ScalingJob:
        """What each of ``gpus`` ranks runs (perfkit.parallel.ddp)."""
        return ScalingJob(self.model, self.data, self.input, self.per_gpu(gpus), self.dataset_size, data_root,
                          self.epoch, self.steps, warmup, device=device,
                          launch_pace_cycles=self.launch_pace_cycles(gpus), gpu_alone=self.gpu_alone(gpus))

    def launch_pace_cycles(self, gpus: int) -> int:
        """The launch pace's cycles (perfkit.workloads.training.launch_pace) where one GPU runs a step the
        host paces; 0 elsewhere (several GPUs' steps hold their links too, a 224² step is the GPU's)."""
        return PACE_CYCLES if gpus == 1 and not self.gpu_paced else 0


def _ms(seconds: Sequence[float]) -> list[float]:
    return [s * 1e3 for s in seconds]


def check_training(run: TrainingRun | AccuracyResult, losses: tuple[float, float] | None = None) -> None:
    """A run counts only if replicas agree (where there are several) and the loss fell (``losses``: first,
    last)."""
    if run.replicas_max_abs_diff > 0:  # NaN (a diverged run) is reported by its loss instead
        raise MeasurementError(f"replicas disagree after training: parameters differ by up to "
                               f"{run.replicas_max_abs_diff:.3g} between ranks")
    if losses is not None and not losses[1] < losses[0]:
        raise MeasurementError(f"training loss did not fall ({losses[0]:.4f} -> {losses[1]:.4f})")


def record_run(metrics: MetricRecorder, run: TrainingRun, workload: ScalingWorkload, method: str,
               parameters: int | None = None) -> None:
    """``epoch_s``, ``images_per_s``, the per-GPU peaks and the run's record of one data-parallel training
    run; ``speedup`` over the 1-GPU run of the same job is added by the derived pass
    (perfkit.resultfile.derived)."""
    check_training(run, (run.loss_first, run.loss_last))
    if run.epoch_s:
        metrics.record(figures.EPOCH_S, run.epoch_s)
    else:
        metrics.absent(figures.EPOCH_S, "this benchmark times a fixed number of steps, not an epoch")
    metrics.record(figures.IMAGES_PER_S, samples=[run.global_batch / s for s in run.step_s])
    metrics.payload(Scaling(method, workload.name, workload.reference_key(), run.world, run.global_batch,
                            run.batch_per_gpu, run.steps_per_epoch, len(run.step_s), parameters))
    if run.launch_pace is not None:  # the GPU's time gates, the ops a step dispatches are counted
        metrics.record(figures.LAUNCH_US, run.launch_pace.launch_s * 1e6)
        metrics.record(figures.LAUNCHES_PER_STEP, run.launch_pace.launches_per_step)
        if run.launch_pace.ops_per_step:
            metrics.record(figures.OPS_PER_STEP, run.launch_pace.ops_per_step)
        else:  # a worker of perfkit before 2026-12-02, which did not count them
            metrics.absent(figures.OPS_PER_STEP, "the operators of a step were not counted by this worker")
        record.record_gpu_alone(metrics, run.launch_pace.gpu_step_s, run.launch_pace.gpu_step_unmeasured)
        metrics.payload(run.launch_pace)
    if run.gpu_step_s or run.gpu_step_unmeasured:  # a GPU-paced step on one GPU, timed on the GPU alone too
        record.record_gpu_alone(metrics, run.gpu_step_s, run.gpu_step_unmeasured)
    if not run.on_gpus:
        metrics.absent(
            figures.PEAK_ALLOCATED_MIB,
            "peak memory comes from PyTorch's CUDA allocator; this run is on the CPU",
        )
        return
    mib = [p / MiB for p in run.peaks if p is not None]
    metrics.record(figures.PEAK_ALLOCATED_MIB, max(mib))
    metrics.info("per_gpu_peak_allocated_mib", mib)


COMM_FIGURES = (
    figures.COMM_EXPOSED_MS,
    figures.COMM_SUBTRACTION_MS,
    figures.NCCL_KERNEL_MS,
    figures.NCCL_EXPOSED_MS,
    figures.NCCL_OVERLAP_FRACTION,
    figures.DDP_ALGBW,
    figures.DDP_BUSBW,
    figures.RAW_ALLREDUCE_BUSBW,
    figures.BUSBW_RATIO,
    figures.COURSE_BANDWIDTH,
)
PROFILED = (figures.NCCL_KERNEL_MS, figures.NCCL_EXPOSED_MS, figures.NCCL_OVERLAP_FRACTION, figures.DDP_ALGBW,
            figures.DDP_BUSBW)


def record_ddp(metrics: MetricRecorder, result: ScalingResult, workload: ScalingWorkload) -> None:
    """Every metric of one DDP scaling run measured by its ranks (the headline time is injected by the
    benchmark; figures over the 1-GPU run are added by the derived pass)."""
    run, gpus = result.run, result.run.world
    record_run(metrics, run, workload, "DDP", result.parameters)
    if run.on_gpus:
        metrics.measured_by(figures.DDP_HEURISTIC_CONVS)
    for key, seconds in (("worker_startup_s", result.startup_s), ("worker_setup_s", result.setup_s),
                         ("worker_build_s", result.build_s), ("worker_first_step_s", result.first_step_s)):
        if seconds is not None:  # what the launch cost the run, beside what it measured
            metrics.info(key, round(seconds, 2))
    if workload.gpu_paced:
        metrics.gpu_bound()
    step_s = statistics.median(run.step_s)
    compute_s = metrics.record(figures.COMPUTE_MS, samples=_ms(result.nosync_step_s)).value / 1e3
    grad_bytes = result.grad_bytes
    metrics.record(figures.GRADIENT_MIB, grad_bytes / MiB)
    if gpus == 1:
        for spec in COMM_FIGURES:
            metrics.absent(spec, "one GPU: there is nothing to all-reduce")
        return
    metrics.record(figures.COMM_EXPOSED_MS, (step_s - compute_s) * 1e3)
    profile = result.profile
    ddp_busbw = None
    if profile is not None and profile.nccl_s > 0:
        metrics.record(figures.NCCL_KERNEL_MS, profile.nccl_s * 1e3)
        metrics.record(figures.NCCL_EXPOSED_MS, (profile.nccl_s - profile.nccl_overlapped_s) * 1e3)
        metrics.record(figures.NCCL_OVERLAP_FRACTION, profile.nccl_overlapped_s / profile.nccl_s)
        metrics.record(figures.DDP_ALGBW, comm.algbw(grad_bytes, profile.nccl_s) / GB)
        ddp_busbw = metrics.record(figures.DDP_BUSBW, comm.busbw(grad_bytes, profile.nccl_s, gpus) / GB).value
        metrics.payload(profile)
    else:
        for spec in PROFILED:
            metrics.absent(spec, "no NCCL kernels profiled (torch.profiler sees CUDA kernels only)")
    raw = metrics.record(
        figures.RAW_ALLREDUCE_BUSBW,
        samples=[comm.busbw(grad_bytes, t, gpus) / GB for t in result.allreduce_op_s or ()],
    ).value
    if ddp_busbw is None:
        metrics.absent(figures.BUSBW_RATIO, "needs DDP's NCCL kernel time from the profiler")
    else:
        metrics.record(figures.BUSBW_RATIO, ddp_busbw / raw)


def record_dataparallel(metrics: MetricRecorder, run: TrainingRun, workload: ScalingWorkload) -> None:
    """Throughput and per-GPU peaks of one nn.DataParallel run (perfkit.parallel.dataparallel).

    On several GPUs its step is paced by its one process (replicas, scatter and gather on Python threads):
    ResNet-50 224² b64 on 2 and 4 GPUs spread 10-70% between runs on H200s and H100s, where DDP's held within
    1% on H200s and 4% on H100s. VGG16's longer step hid that overhead (two H200 machines' single runs 0.4%
    apart), but one rule for the method judges it with the host's figures too: wider, never crying wolf.
    Only its one-GPU step is declared GPU work."""
    record_run(metrics, run, workload, "DataParallel")
    if run.on_gpus:
        metrics.measured_by(figures.THROUGHPUT_OVER_HEURISTIC_DDP)
    if workload.gpu_paced and run.world == 1:
        metrics.gpu_bound()


#: A message from which an all-reduce's time is its links' bandwidth, not its launches and latency.
BANDWIDTH_BOUND_BYTES = 2**28


def record_sweep(metrics: MetricRecorder, result: AllreduceResult) -> list[SweepRow]:
    """busbw and algbw per message size (nccl-tests' table); the largest size's busbw is the metric.

    Its time (the largest message's all-reduce) is the GPUs' and links' work where the message is large
    enough for the links' bandwidth to set it (busbw levels off from about 100 MB): on 4 H100s the 1 GiB
    time moved 0.7% over four fresh runs while the host-bound steps of the same runs got 1.5-1.9x slower. It
    is then judged with the GPU's noise and never excused by a slower host; the quick profile's 16 MiB is
    not declared."""
    gpus = result.world
    rows = []
    for row in result.rows:
        op_s = statistics.median(row.op_s)
        rows.append(SweepRow(row.bytes, op_s * 1e6, comm.algbw(row.bytes, op_s) / GB,
                             comm.busbw(row.bytes, op_s, gpus) / GB))
    largest = result.rows[-1]
    metrics.record(figures.BUSBW, samples=[comm.busbw(largest.bytes, t, gpus) / GB for t in largest.op_s])
    metrics.record(figures.ALGBW, rows[-1].algbw_gbps)
    metrics.payload(AllreduceSweep(gpus, tuple(rows)))
    if largest.bytes >= BANDWIDTH_BOUND_BYTES:
        metrics.gpu_bound()
    return rows


def record_accuracy(metrics: MetricRecorder, result: AccuracyResult) -> None:
    """Final train loss/accuracy and test accuracy of a large-batch run; a diverged run says so."""
    check_training(result)
    last = result.history[-1]
    metrics.payload(
        LargeBatch(
            result.world,
            result.global_batch,
            result.batch_per_gpu,
            result.lr,
            result.rule,
            result.steps_per_epoch,
            result.warmup_steps,
            result.data,
            result.history,
        )
    )
    metrics.record(figures.TRAIN_S, result.train_s)
    for spec, value in ((figures.TRAIN_LOSS, last.train_loss), (figures.TRAIN_ACCURACY, last.train_accuracy),
                        (figures.TEST_LOSS, result.test_loss), (figures.TEST_ACCURACY, result.test_accuracy)):
        if math.isfinite(value):
            metrics.record(spec, value)
        else:
            metrics.absent(spec, f"training diverged at learning rate {result.lr:g} (the value is {value})")
