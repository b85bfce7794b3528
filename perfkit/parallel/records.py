"""The contracts across the process boundary of a distributed job: what the launcher asks of the ranks, and
what rank 0 hands back, as typed records (JSON in between, read strictly: a field a side renames fails at the
boundary with its name, not as a KeyError deep in a recorder).

A job names its ``KIND``; perfkit.parallel.jobs runs the function registered for it on every rank.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from perfkit.errors import UsageError
from perfkit.resultfile.payloads import EpochStats, LaunchPace, NcclProfile, Record

#: CUDA's launch queue four times its default length (read once, when the driver starts in the process): a
#: ResNet-50 DDP step's launches overflow the default behind a held stream (ScalingWorkload.gpu_alone).
LAUNCH_QUEUE_ENV = {"CUDA_SCALE_LAUNCH_QUEUES": "4x"}


@dataclass(frozen=True)
class ScalingJob(Record):
    """One data-parallel training benchmark on every rank (perfkit.parallel.ddp)."""

    TAG: ClassVar[str] = "scaling"
    model: str
    data: str  # "cifar10" or "random"
    input: tuple[int, ...]  # one image, channels first
    batch: int  # per rank
    dataset_size: int | None
    data_root: str | None
    epoch: bool  # time a whole epoch; else ``steps`` steps
    steps: int
    warmup: int
    profile_steps: int = 5
    nosync_steps: int = 20
    allreduce_reps: int = 10
    device: str = "cuda"
    memory_cap: int | None = None  # bytes per GPU, --perfkit-memory-cap
    launch_pace_cycles: int = 0  # a launch-bound step on one rank: its launch pace's cycles (0: none)
    gpu_alone: bool = False  # a GPU-paced step on one rank: timed on the GPU alone too

    def environment(self) -> dict[str, str]:
        """What the job's processes need on top of the launcher's environment: a step timed on the GPU alone
        is queued whole behind a held stream, and must fit in CUDA's launch queue (LAUNCH_QUEUE_ENV)."""
        return dict(LAUNCH_QUEUE_ENV) if self.gpu_alone else {}


@dataclass(frozen=True)
class AllreduceJob(Record):
    """nccl-tests' all_reduce_perf in miniature (perfkit.parallel.collectives)."""

    TAG: ClassVar[str] = "allreduce"
    sizes: tuple[int, ...]  # bytes
    repetitions: int
    device: str = "cuda"
    memory_cap: int | None = None


@dataclass(frozen=True)
class AccuracyJob(Record):
    """Training to accuracy at a global batch under a learning-rate rule (perfkit.parallel.accuracy)."""

    TAG: ClassVar[str] = "accuracy"
    model: str
    data_root: str | None
    train_size: int
    test_size: int
    epochs: int
    global_batch: int
    base_batch: int
    base_lr: float
    rule: str  # "same" or "linear-warmup"
    warmup_epochs: int
    recipe: str  # the synthetic set's recipe, where there is no data root
    seed: int = 0
    device: str = "cuda"
    memory_cap: int | None = None


Job = ScalingJob | AllreduceJob | AccuracyJob
JOB_KINDS: dict[str, type[Record]] = {kind.TAG: kind for kind in (ScalingJob, AllreduceJob, AccuracyJob)}


@dataclass(frozen=True)
class TrainingRun(Record):
    """What every data-parallel training run reports, DDP (rank 0) or DataParallel (one process)."""

    TAG: ClassVar[str] = "training_run"
    world: int
    global_batch: int
    batch_per_gpu: int
    step_s: tuple[float, ...]  # each timed step
    epoch_s: float | None  # None: a fixed number of steps was timed
    steps_per_epoch: int | None
    loss_first: float
    loss_last: float
    peaks: tuple[int | None, ...]  # allocator peak per GPU, bytes
    replicas_max_abs_diff: float = 0.0
    launch_pace: LaunchPace | None = None  # a launch-bound step on one GPU beside its host's launch pace
    # a GPU-paced step on one GPU timed on the GPU alone, its launches queued ahead; or why it could not be
    gpu_step_s: tuple[float, ...] = ()
    gpu_step_unmeasured: str = ""

    @property
    def on_gpus(self) -> bool:
        """Whether the ranks ran on GPUs: each read its CUDA allocator's peak (cuDNN chose their kernels)."""
        return bool(self.peaks) and None not in self.peaks


@dataclass(frozen=True)
class ScalingResult(Record):
    """Rank 0's result of a DDP scaling job: the run, and the communication measured beside it."""

    TAG: ClassVar[str] = "scaling_result"
    run: TrainingRun
    parameters: int
    grad_bytes: int
    nosync_step_s: tuple[float, ...]
    profile: NcclProfile | None  # torch.profiler on a GPU
    allreduce_op_s: tuple[float, ...] | None  # a raw all-reduce of the gradients' bytes; None on one rank
    # what a launch costs the nightly, on rank 0: from the launch to its job's start (interpreter, imports,
    # process group); from there to the first timed step (setup_s), of which building the model, the data and
    # the DDP wrapper (build_s) and the first warm-up step (first_step_s: DDP's lazy imports, kernel loading)
    startup_s: float | None = None
    setup_s: float | None = None
    build_s: float | None = None
    first_step_s: float | None = None


@dataclass(frozen=True)
class SizeTimes(Record):
    TAG: ClassVar[str] = "size_times"
    bytes: int
    op_s: tuple[float, ...]


@dataclass(frozen=True)
class AllreduceResult(Record):
    TAG: ClassVar[str] = "allreduce_result"
    world: int
    rows: tuple[SizeTimes, ...]


@dataclass(frozen=True)
class AccuracyResult(Record):
    TAG: ClassVar[str] = "accuracy_result"
    world: int
    global_batch: int
    batch_per_gpu: int
    lr: float
    rule: str
    steps_per_epoch: int
    warmup_steps: int
    history: tuple[EpochStats, ...]
    train_s: float
    test_loss: float
    test_accuracy: float
    data: str
    replicas_max_abs_diff: float


#: What rank 0 returns for each kind of job.
RESULTS: dict[str, type[Record]] = {ScalingJob.TAG: ScalingResult, AllreduceJob.TAG: AllreduceResult,
                                    AccuracyJob.TAG: AccuracyResult}


def job_from_json(raw: Any) -> Record:
    """A job spec as the worker reads it; an unknown kind is a usage error that lists the known ones."""
    kind = raw.get("kind") if isinstance(raw, dict) else None
    if kind not in JOB_KINDS:
        raise UsageError(f"unknown job kind {kind!r}; one of {', '.join(JOB_KINDS)}")
    return JOB_KINDS[kind].from_json(raw, f"job {kind}")


def job_to_json(job: Record) -> dict[str, Any]:
    return {**job.to_json(), "kind": job.TAG}
