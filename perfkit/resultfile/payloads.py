"""One typed record per benchmark family: what a bench writes beside its metrics and the report reads.

Each record is a frozen dataclass stored in ``extra_info[TAG]`` with a ``version``. Reading is strict:
a field the record declares without a default must be there, so a bench that renames or drops a
field fails a test instead of leaving a plot empty. Keys a record does not declare (context older
runs stored beside the fields) are ignored. Reading a newer version than this perfkit knows is an
error that says to upgrade.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar, Union

from perfkit.errors import BaselineError

R = TypeVar("R", bound="Record")


class Record:
    """Base of every family record: ``to_json`` / ``from_json`` and where it is stored."""

    TAG: ClassVar[str]
    VERSION: ClassVar[int] = 1
    #: JSON names that differ from field names (``pass`` is a Python keyword).
    RENAMED: ClassVar[Mapping[str, str]] = {}

    def to_json(self) -> dict[str, Any]:
        out = {self.RENAMED.get(f.name, f.name): _plain(getattr(self, f.name))
               for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        return out | {"version": self.VERSION}

    @classmethod
    def from_json(cls: type[R], raw: Any, where: str = "") -> R:  # noqa: PYI019 (Python 3.10 has no Self)
        return typing.cast(R, _build(cls, raw, where or cls.TAG))


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return {k: v for k, v in value.to_json().items() if k != "version"}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _build(kind: Any, raw: Any, where: str) -> Any:
    """``raw`` (parsed JSON) as ``kind``: a Record, tuple[X, ...], X | None, dict or a plain value."""
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        options = [a for a in typing.get_args(kind) if a is not type(None)]
        return None if raw is None else _build(options[0], raw, where)
    if origin is tuple:
        if not isinstance(raw, list):
            raise BaselineError(f"{where}: expected a list, found {type(raw).__name__}")
        (item, _) = typing.get_args(kind)
        if item is float and all(type(v) in (int, float) for v in raw):  # curves of thousands: no call each
            return tuple(map(float, raw))
        return tuple(_build(item, v, f"{where}[{i}]") for i, v in enumerate(raw))
    if isinstance(kind, type) and issubclass(kind, Record):
        return _record(kind, raw, where)
    if kind is float and isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return float(raw)
    if kind is Any or origin is dict or isinstance(raw, kind):
        return raw
    raise BaselineError(f"{where}: expected {getattr(kind, '__name__', kind)}, found {raw!r}")


def _record(kind: type[Record], raw: Any, where: str) -> Record:
    if not isinstance(raw, Mapping):
        raise BaselineError(f"{where}: expected an object, found {type(raw).__name__}")
    version = raw.get("version", 1)
    if isinstance(version, int) and version > kind.VERSION:
        raise BaselineError(f"{where}: version {version} is newer than this perfkit reads ({kind.VERSION}); "
                            "upgrade perfkit")
    values = {}
    for field, name, hint in _fields(kind):
        if name not in raw:
            if field.default is dataclasses.MISSING:
                raise BaselineError(f"{where}: field {name!r} is missing; the file was written by another "
                                    "version of its benchmark: re-run it")
            continue
        values[field.name] = _build(hint, raw[name], f"{where}.{name}")
    try:
        return kind(**values)
    except BaselineError as exc:  # a record's own check (__post_init__), said where it is
        raise BaselineError(f"{where}: {exc}") from None


Field = tuple[dataclasses.Field[Any], str, Any]  # a record's field, its JSON name and its type
_FIELDS: dict[type[Record], tuple[Field, ...]] = {}


def _fields(kind: type[Record]) -> tuple[Field, ...]:
    """Each field of a record, its JSON name and its type, found once per record class: resolving the type
    hints took a millisecond a record, a second for the thousands of records of two baselines."""
    if kind not in _FIELDS:
        hints = typing.get_type_hints(kind)
        _FIELDS[kind] = tuple((field, kind.RENAMED.get(field.name, field.name), hints[field.name])
                              for field in dataclasses.fields(kind))  # type: ignore[arg-type]
    return _FIELDS[kind]


@dataclass(frozen=True)
class RatePeak(Record):
    """Which ceiling a rate metric (``tflops`` or ``bandwidth_gbps``) is a share of, and its datasheet
    value."""

    TAG: ClassVar[str] = "peak"
    key: str
    datasheet: float | None = None


@dataclass(frozen=True)
class VectorAdd(Record):
    TAG: ClassVar[str] = "vector_add"
    scenario: str  # cpu_loop, cpu_numpy, one_thread, one_block, grid, tuned
    mode: str  # cpu, explicit, managed_first, managed_warm
    k: int  # millions of float32 elements
    launch: tuple[int, ...] | None = None  # (blocks, threads per block)


@dataclass(frozen=True)
class Layer(Record):
    TAG: ClassVar[str] = "layer"
    RENAMED: ClassVar[Mapping[str, str]] = {"pass_": "pass"}
    name: str
    pass_: str
    input: tuple[int, ...]
    bound: str  # "compute" or "memory"
    flops: int
    min_bytes: int


@dataclass(frozen=True)
class VggSwap(Record):
    TAG: ClassVar[str] = "vgg_swap"
    RENAMED: ClassVar[Mapping[str, str]] = {"pass_": "pass"}
    variant: str  # normal or swapped
    pass_: str
    device: str
    input: tuple[int, ...]


@dataclass(frozen=True)
class MemoryEstimate(Record):
    """The training-memory estimate, term by term, in MiB (perfkit.workloads.estimate writes it)."""

    TAG: ClassVar[str] = "memory_estimate"
    model: str
    batch: int
    input_shape: tuple[int, ...]
    optimizer: str
    dtype: str
    params_mib: float
    grads_mib: float
    optimizer_state_mib: float
    activations_mib: float
    total_mib: float
    activations_method: str

    TERMS: ClassVar[tuple[str, ...]] = ("params", "grads", "optimizer_state", "activations")

    def term_mib(self, term: str) -> float:
        return float(getattr(self, f"{term}_mib"))


@dataclass(frozen=True)
class PppLayer(Record):
    """One leaf module of a model timed alone on its captured input (summed over its calls)."""

    TAG: ClassVar[str] = "ppp_layer"
    name: str
    type: str
    calls: int
    seconds: float
    flops: int
    bytes: int | None
    predicted_s: float | None


@dataclass(frozen=True)
class Ppp(Record):
    """A model's forward, layer by layer; ``precision`` is the convolutions' math, ``linear_precision`` the
    linear layers' (a percent of peak divides by the ceiling of the math actually used)."""

    TAG: ClassVar[str] = "ppp"
    model: str
    batch: int
    precision: str
    linear_precision: str
    layers: tuple[PppLayer, ...]
    convention: str

    def precision_of(self, layer_type: str) -> str | None:
        """The precision a counted layer type runs in; None for layers no ceiling applies to."""
        return {"Conv2d": self.precision, "Linear": self.linear_precision}.get(layer_type)


@dataclass(frozen=True)
class RooflinePoint(Record):
    TAG: ClassVar[str] = "roofline_point"
    label: str
    flops: float
    bytes: float
    bytes_source: str  # "analytic minimum" or "ncu dram"
    precision: str

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes


@dataclass(frozen=True)
class Roofline(Record):
    """A model's forward on the roofline; its time is the benchmark's headline median."""

    TAG: ClassVar[str] = "roofline"
    points: tuple[RooflinePoint, ...]

    def __post_init__(self) -> None:
        if not self.points:  # its figures read the best-measured point, the last
            raise BaselineError("holds no point; re-run its benchmark")


@dataclass(frozen=True)
class Scaling(Record):
    """One data-parallel training run: which job, how many GPUs, and what its figures divide by.

    ``reference_key`` names the job: the 1-GPU run of the same method with the same key is what
    ``speedup`` divides by (weak b128 and strong B128 share it); ``workload`` and ``gpus`` pair a
    DataParallel run with the DDP run of the same workload.
    """

    TAG: ClassVar[str] = "scaling"
    method: str  # "DDP" or "DataParallel"
    workload: str
    reference_key: str
    gpus: int
    global_batch: int
    batch_per_gpu: int
    steps_per_epoch: int | None
    timed_steps: int
    parameters: int | None = None


@dataclass(frozen=True)
class SweepRow(Record):
    TAG: ClassVar[str] = "sweep_row"
    bytes: int
    time_us: float
    algbw_gbps: float
    busbw_gbps: float


@dataclass(frozen=True)
class AllreduceSweep(Record):
    TAG: ClassVar[str] = "allreduce_sweep"
    gpus: int
    rows: tuple[SweepRow, ...]


#: Paired bursts of a launch-bound step and of tiny launches: 20 cycles read the step over the launch pace as
#: steadily between fresh processes as 40 (a bare ResNet-18 CIFAR step: 5.7% and 5.3% on four H200s,
#: docs/findings.md, 2026-12-01), in about 1.6 s for a 9 ms step.
PACE_CYCLES, PACE_STEPS, PACE_LAUNCHES = 20, 8, 400
#: Repetitions of the same step's GPU time, its launches queued ahead (about 30 ms each for a 10 ms step).
GPU_STEP_REPETITIONS = 20


@dataclass(frozen=True)
class LaunchPace(Record):
    """A launch-bound training step beside the host's launch pace, timed in paired bursts in one process
    (perfkit.workloads.training.launch_pace): ``steps_per_burst`` steps on a resident batch, then
    ``launches_per_burst`` tiny in-place ops through PyTorch's dispatcher, ``cycles`` times; the medians of
    the step and of one launch, and of each cycle's step over its launch (``launches_per_step``). On a GPU,
    last, the step's time on the GPU alone, each of ``gpu_step_s`` with its launches queued behind a held
    stream (perfkit.measure.timing.time_queued), or why it could not be read (``gpu_step_unmeasured``); and
    the operators one step dispatches (``ops_per_step``; 0 in files from before it was counted)."""

    TAG: ClassVar[str] = "launch_pace"
    step_s: float
    launch_s: float
    launches_per_step: float
    cycles: int
    steps_per_burst: int
    launches_per_burst: int
    gpu_step_s: tuple[float, ...] = ()
    gpu_step_unmeasured: str = ""
    ops_per_step: int = 0


@dataclass(frozen=True)
class EpochStats(Record):
    TAG: ClassVar[str] = "epoch"
    epoch: int
    train_loss: float
    train_accuracy: float
    seconds: float


#: CIFAR-10 and its synthetic stand-in (perfkit.workloads.data), what a large-batch run trains on, both have
#: ten classes: guessing scores 10%.
LARGE_BATCH_CLASSES = 10


@dataclass(frozen=True)
class LargeBatch(Record):
    TAG: ClassVar[str] = "large_batch"
    world: int
    global_batch: int
    batch_per_gpu: int
    lr: float
    rule: str
    steps_per_epoch: int
    warmup_steps: int
    data: str
    history: tuple[EpochStats, ...]


@dataclass(frozen=True)
class CapacityProbe(Record):
    """One try of a capacity search (perfkit.measure.capacity): the knob's value, whether it fitted, the
    allocator peak per device (MiB) and how long the try took."""

    TAG: ClassVar[str] = "capacity_probe"
    value: int
    fits: bool
    peak_mib: tuple[float, ...]
    seconds: float
    leaked_mib: float = 0.0


@dataclass(frozen=True)
class LayerCapacity(Record):
    """The largest layer stack that fits (seed 000 Task 1): which knob was searched, under which cap."""

    TAG: ClassVar[str] = "layer_capacity"
    # "balanced" (num_conv = num_fc), "conv" (num_fc fixed), "fc" (num_conv fixed), "split" (two GPUs)
    knob: str
    input_shape: tuple[int, ...]
    cap_gib: float | None  # None: the whole card
    num_conv: int
    num_fc: int
    stopped_by: str
    kept_mib_per_layer: float
    probes: tuple[CapacityProbe, ...]
    split_at: int | None = None
    peak_mib_per_device: tuple[float, ...] = ()
    failed_gpu: int | None = None  # the GPU that ran out at the first size that did not fit
    room: str = (
        ""  # the memory the search had, in words ("10.91 GiB per GPU (capped)", "a 2 MiB synthetic budget")
    )

    @property
    def memory(self) -> str:
        return self.room or (f"{self.cap_gib:.2f} GiB per GPU (capped)" if self.cap_gib else "whole card")


@dataclass(frozen=True)
class BatchEpoch(Record):
    """One timed epoch at one batch size (seeds 003 Q1, 004 2.1), after a warm-up epoch."""

    TAG: ClassVar[str] = "batch_epoch"
    variant: str  # "resident" (data on the GPU) or "loader" (a DataLoader from host memory)
    model: str
    batch: int
    dataset: int
    steps: int
    epoch_s: float
    images_per_s: float
    peak_mib: float | None
    data: str
    workers: int = 0
    pin_memory: bool = False


@dataclass(frozen=True)
class BatchCapacity(Record):
    """The largest training batch that fits, found by a capacity search up to the dataset's size."""

    TAG: ClassVar[str] = "batch_capacity"
    model: str
    largest: int
    stopped_by: str
    dataset: int
    cap_gib: float | None
    probes: tuple[CapacityProbe, ...]
    room: str = ""  # the memory the search had, in words ("a 2 MiB synthetic budget"), as LayerCapacity's


@dataclass(frozen=True)
class TtaRun(Record):
    """One training run to the target (perfkit.workloads.tta.Run)."""

    TAG: ClassVar[str] = "tta_run"
    seed: int
    reached: bool
    tta_s: float | None
    train_s: float
    eval_s: float
    epochs: int
    accuracies: tuple[float, ...]
    images_per_s: float
    shifted_accuracy: float | None
    trained_s: tuple[float, ...] = ()  # training time at each evaluation (files before 2026-11-23 lack it)


@dataclass(frozen=True)
class TimeToAccuracy(Record):
    """R runs of one training to one target (seed 002 Problem 2), with the GPU's utilisation while they
    ran."""

    TAG: ClassVar[str] = "time_to_accuracy"
    model: str
    variant: str
    batch: int
    data: str
    shifted_data: str
    target: float
    epoch_cap: int
    runs: tuple[TtaRun, ...]
    util_t: tuple[float, ...] = ()  # seconds from the first run's start
    gpu_util_pct: tuple[float, ...] = ()
    memory_util_pct: tuple[float, ...] = ()


class Disturbance(Protocol):
    """Something besides the code that slowed a benchmark while it ran (a busy host, a hot GPU; and, derived
    when judged, rounds that did not settle: perfkit.verdict.unsettled_rounds)."""

    @property
    def disturbed(self) -> bool: ...

    def sentence(self) -> str: ...


@dataclass(frozen=True)
class HostLoad(Record):
    """CPUs other processes kept busy, on average, while a benchmark ran (of the ``cpus`` it could use).

    Written for every benchmark by the plugin (perfkit.measure.host_load), whatever its family; a
    regression measured on a busy machine is not called one (perfkit.verdict.judge).
    """

    TAG: ClassVar[str] = "host_load"
    #: The share of a run's CPUs others may keep busy before the run no longer counts as quiet.
    BUSY_SHARE: ClassVar[float] = 0.25
    other_cpus: float
    cpus: int

    @property
    def disturbed(self) -> bool:
        return self.other_cpus >= self.BUSY_SHARE * self.cpus

    def sentence(self) -> str:
        return (f"other processes kept {self.other_cpus:.1f} of its {self.cpus} CPUs busy while it ran: not "
                "judged; run it again on a quiet machine, or with PERFKIT_IGNORE_HOST_LOAD=1 where you "
                "accept that sharing")


@dataclass(frozen=True)
class GpuThrottle(Record):
    """Seconds heat held any GPU's clocks down while a benchmark ran, of the ``seconds`` it ran.

    Written for every benchmark on a machine where NVML answers, by the plugin (perfkit.measure.gpu_throttle),
    from every GPU NVML sees (on a node shared with other jobs, theirs too); a regression measured while one
    was throttled is not called one (perfkit.verdict.judge).
    """

    TAG: ClassVar[str] = "gpu_throttle"
    #: The share of a benchmark's run its GPU may spend thermally limited before the run no longer counts.
    THROTTLED_SHARE: ClassVar[float] = 0.05
    thermal_s: float
    seconds: float

    @property
    def disturbed(self) -> bool:
        return self.thermal_s > self.THROTTLED_SHARE * self.seconds

    def sentence(self) -> str:
        return (f"heat held its GPU's clocks down for {self.thermal_s:.1f} of its {self.seconds:.1f} s: not "
                "judged; let the GPU cool and run it again")


@dataclass(frozen=True)
class ClockLock(Record):
    """The SM clock a benchmark was timed at where perfkit locked it (perfkit.measure.clocks); without one the
    GPU chose its clock. A time measured locked and one measured unlocked differ by the clock (13-23% on an
    H100 at its base clock), not by the code, so the judge does not compare the two
    (perfkit.verdict.matching).
    """

    TAG: ClassVar[str] = "clock_lock"
    sm_clock: str  # e.g. "base/1980 MHz locked"


@dataclass(frozen=True)
class PowerWindow(Record):
    """The NVML loop behind ``avg_power_w`` and ``energy_j`` (perfkit.measure.record.record_power)."""

    TAG: ClassVar[str] = "power"
    window_s: float
    calls: int
    energy_source: str
    samples: int
    sampled_power_w: float
    gpu_util_pct: float
    sm_clock_mhz: float
    memory_used_mib: float


@dataclass(frozen=True)
class NcclProfile(Record):
    """torch.profiler over a few DDP steps: NCCL kernel time per step, the part other kernels overlapped, and
    the compute kernels' time (perfkit.parallel.ddp)."""

    TAG: ClassVar[str] = "profile"
    steps: int
    nccl_s: float
    compute_s: float
    nccl_overlapped_s: float
    nccl_kernels: int


#: The records of what else happened while a benchmark ran, written for every benchmark by the plugin.
DISTURBANCES: tuple[type[HostLoad | GpuThrottle], ...] = (HostLoad, GpuThrottle)

FAMILIES: tuple[type[Record], ...] = (
    RatePeak,
    VectorAdd,
    Layer,
    VggSwap,
    MemoryEstimate,
    Ppp,
    Roofline,
    Scaling,
    AllreduceSweep,
    LargeBatch,
    LayerCapacity,
    BatchEpoch,
    BatchCapacity,
    TimeToAccuracy,
    PowerWindow,
    NcclProfile,
    LaunchPace,
)
