"""What each benchmark runs, read from its records, as the roofline model's work (perfkit.verdict.expected),
or why the model cannot speak for it.

A network's steps are its leaf layers, counted once per network and image size on the meta device
(perfkit.workloads.flops: FlopCounterMode and PALEO's formulas) and scaled to the batch: each layer's forward
(FLOPs; PALEO's bytes, input, weights and output moved once; one launch per call), its backward where the
benchmark trains (the input's and weights' gradients; twice the forward's bytes: the output's gradient and
the saved input read, the input's and weights' gradients written; a launch per gradient), and an SGD-momentum
update where it steps an optimizer (parameters, gradients and momentum read, parameters and momentum
written: 20 bytes a parameter; three foreach launches). Convolutions compute in the precision the run
recorded for them (its PPP record; cuDNN's TF32 by PyTorch's default where none says), linear layers in
theirs, everything else on CUDA cores in fp32. Left out, and so a lower bound the ratio cancels: operations
outside leaf layers (a ResNet's residual adds), the loss, and views (flatten, identity, dropout at
inference), which launch nothing.

A DDP step on several GPUs is the one-GPU step at the batch each GPU trains, plus the ring all-reduce of its
gradients at the bus bandwidth among that many GPUs (:func:`ddp_work` says how much of it the backward
hides); nn.DataParallel's on several GPUs is paced by its one process and has no model
(:data:`DATA_PARALLEL`).

Nothing here imports torch: the tables come from the committed FLOP cache (perfkit.workloads.flop_cache), so
a comparison across hardware does not wait seconds for torch and the counting; a table it lacks is counted.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfkit.errors import BaselineError
from perfkit.resultfile import comm, datasheet
from perfkit.resultfile.figures import (
    FIRST_TOUCH_KS,
    IMAGES_PER_S,
    MODEL_GRAPH_S,
    ONE_SM_COPIES,
    TIME,
    first_touch,
    one_sm_copy,
)
from perfkit.resultfile.metrics import WORK_KEY
from perfkit.resultfile.model import BenchmarkEntry, ResultSet
from perfkit.resultfile.payloads import (
    AllreduceSweep,
    BatchCapacity,
    BatchEpoch,
    LargeBatch,
    LayerCapacity,
    MemoryEstimate,
    Ppp,
    Record,
    Scaling,
    TimeToAccuracy,
    VectorAdd,
    VggSwap,
)
from perfkit.verdict.expected import (
    ALLREDUCE,
    ALLREDUCE_HIDDEN,
    ARITHMETIC,
    BACKWARD,
    EAGER,
    GRAPH,
    MIGRATE,
    NoModel,
    Step,
    Work,
    recorded_work,
)
from perfkit.workloads import flop_cache, kernels, paleo, shapes, tta_variants

FORWARD, FORWARD_BACKWARD, TRAIN_STEP = "forward", "forward and backward", "training step (SGD momentum)"
LAYER_STACK = flop_cache.LAYER_STACK
#: PyTorch's float32 defaults on a GPU, which every benchmark keeps: cuDNN convolutions in TF32, cuBLAS
#: matmuls in fp32 (a run's PPP record states what it used).
DEFAULT_PRECISIONS = ("tf32", "fp32")
#: An SGD-momentum update: parameters, gradients and momentum read, parameters and momentum written (float32).
SGD_BYTES_PER_PARAMETER = 5 * paleo.BYTES["fp32"]
SGD_FLOPS_PER_PARAMETER = 4  # momentum * buffer + gradient, parameter - lr * buffer
SGD_LAUNCHES = 3  # torch.optim.SGD's foreach path: buffers scaled, gradients added, parameters stepped


@dataclass(frozen=True)
class Network:
    """A network run whole: its forward, forward and backward, or a training step, at one batch."""

    model: str  # a registered model (perfkit.workloads.models), or LAYER_STACK
    batch: int
    image: tuple[int, ...]  # channels, height, width
    passes: str
    conv: str
    linear: str
    stack: tuple[int, int] | None = None  # LAYER_STACK's convolutions and fully-connected layers

    @property
    def label(self) -> str:
        name = f"layer stack {self.stack[0]} conv + {self.stack[1]} fc" if self.stack else self.model
        return f"{name} batch {self.batch} at {'x'.join(map(str, self.image[1:]))}, {self.passes}"


def work_of(bench: BenchmarkEntry, results: ResultSet) -> Work | NoModel:
    """``bench``'s work as the model counts it: what its run recorded, else counted from its records; a GPU
    benchmark without them, one the model cannot count and host work each say why."""
    if (recorded := recorded_work(bench)) is not None:
        return recorded
    if results.info.device != "cuda":
        return NoModel("ran on the CPU: the model speaks for GPU runs", gpu=False)
    for kind, parse in PARSERS:
        try:
            record = bench.record(kind)
        except BaselineError:
            return NoModel(f"its {kind.TAG} record cannot be read")
        if record is not None:
            return parse(record, bench, results)
    if bench.context.gate is None:
        return NoModel(bench.context.informational or "its time gates nothing (declared informational)",
                       gpu=False)
    return NoModel("its records say nothing of its work that the model could count")


def with_work(results: ResultSet) -> ResultSet:
    """``results`` with each benchmark's work recorded beside its figures (``extra_info.work``: the model's
    count, or why it has none): what a comparison across hardware reads later, with no FLOP counting and no
    torch."""
    entries = []
    for bench in results.benchmarks:
        extra = {**(bench.raw.get("extra_info") or {}), WORK_KEY: work_of(bench, results).to_json()}
        entries.append(dataclasses.replace(bench, raw={**bench.raw, "extra_info": extra}))
    return dataclasses.replace(results, benchmarks=tuple(entries))


def network_work(net: Network, launch: str, figure: str, per_image: bool = False) -> Work:
    """The steps of ``net`` (see the module's docstring) as a work whose speedup is read from ``figure``
    (images/s where ``per_image``)."""
    table = flop_cache.table(net.model, net.image, net.stack).at_batch(net.batch)
    steps = []
    for row in table.rows:
        if not row.flops:  # a view or a no-op: no kernel
            continue
        precision = (net.conv if row.type.startswith("Conv")
                     else net.linear if row.type == "Linear" else ARITHMETIC)
        moved = paleo.layer_bytes(row, "fp32")
        steps.append(Step(row.name, "forward", row.flops, moved, row.calls, precision))
        if net.passes != FORWARD:
            steps.append(Step(row.name, BACKWARD, row.backward_flops, 2 * moved,
                              row.calls * (2 if row.params else 1), precision))
    if net.passes == TRAIN_STEP:
        steps.append(Step("SGD momentum", "update", SGD_FLOPS_PER_PARAMETER * table.params,
                          SGD_BYTES_PER_PARAMETER * table.params, SGD_LAUNCHES, ARITHMETIC))
    return Work(net.label, tuple(steps), launch, figure, net.batch if per_image else None, network=True)


def _precisions(results: ResultSet) -> tuple[str, str]:
    """(convolution, linear) precision as the run's PPP record states it, else PyTorch's defaults."""
    return next(((rec.precision, rec.linear_precision) for _, rec in results.family(Ppp)), DEFAULT_PRECISIONS)


def _ppp(rec: Ppp, bench: BenchmarkEntry, results: ResultSet) -> Work:
    """A no-grad forward at the course's image size; batch 1 gates on its CUDA-graph replay."""
    graph = bench.context.gate == MODEL_GRAPH_S.name
    net = Network(rec.model, rec.batch, shapes.DEFAULT_INPUT, FORWARD, rec.precision, rec.linear_precision)
    return network_work(net, GRAPH if graph else EAGER, bench.context.gate or TIME)


def _vgg_swap(rec: VggSwap, bench: BenchmarkEntry, results: ResultSet) -> Work | NoModel:
    if rec.device != "cuda":
        return NoModel("VGG16 on the CPU", gpu=False)
    model = "vgg16-swapped" if rec.variant == "swapped" else "vgg16"
    passes = FORWARD if rec.pass_ == "forward" else FORWARD_BACKWARD
    net = Network(model, rec.input[0], tuple(rec.input[1:]), passes, *_precisions(results))
    return network_work(net, EAGER, TIME)


def _training_memory(rec: MemoryEstimate, bench: BenchmarkEntry, results: ResultSet) -> Work | NoModel:
    if rec.dtype != "float32" or rec.optimizer != "sgd-momentum":
        return NoModel(f"a {rec.dtype} step with {rec.optimizer}: the model counts float32 SGD momentum")
    net = Network(rec.model, rec.batch, tuple(rec.input_shape), TRAIN_STEP, *_precisions(results))
    return network_work(net, EAGER, TIME)


#: A data-parallel job's key: ``<model>-<data>-<pixels>px-global<batch>`` (perfkit.parallel.scaling).
_JOB_KEY = re.compile(r"(?P<model>.+)-(?:cifar10|random)-(?P<px>\d+)px-global\d+")


#: Why nn.DataParallel on several GPUs has no model (its one-GPU step is modelled as DDP's).
DATA_PARALLEL = ("nn.DataParallel on {gpus} GPUs: one process's threads replicate the model, scatter the "
                 "batch and gather the outputs every step, and pace it "
                 "(perfkit.parallel.scaling.record_dataparallel), which no device or link roof sets: the "
                 "GPUs' work and the transfers between them are a small part of its step (docs/across.md)")
#: DDP's gradient buckets (DistributedDataParallel's defaults, which perfkit.parallel.ddp keeps): filled in
#: reverse parameter order, the first closes past 1 MiB, every other past 25 MiB.
DDP_FIRST_BUCKET_BYTES, DDP_BUCKET_BYTES = 2**20, 25 * 2**20
#: float32 gradients: four bytes a parameter.
GRADIENT_BYTES_PER_PARAMETER = paleo.BYTES["fp32"]
#: Whether DDP's buckets before the last run under the backward in the model (see :func:`ddp_work`).
DDP_OVERLAP = False


def _scaling(rec: Scaling, bench: BenchmarkEntry, results: ResultSet) -> Work | NoModel:
    """One GPU's training step; on several, DDP's (:func:`ddp_work`) and none of nn.DataParallel's."""
    if rec.gpus > 1 and rec.method != "DDP":
        return NoModel(DATA_PARALLEL.format(gpus=rec.gpus))
    found = _JOB_KEY.fullmatch(rec.reference_key)
    if found is None:
        return NoModel(f"its job key {rec.reference_key!r} names no model and image size")
    px = int(found["px"])
    image = (shapes.DEFAULT_INPUT[0], px, px)
    net = Network(found["model"], rec.batch_per_gpu, image, TRAIN_STEP, *_precisions(results))
    return network_work(net, EAGER, TIME) if rec.gpus == 1 else ddp_work(net, rec.gpus, DDP_OVERLAP)


def ddp_work(net: Network, gpus: int, overlap: bool = DDP_OVERLAP) -> Work:
    """A DDP training step on ``gpus`` GPUs, weak or strong scaling alike (``net`` at the batch each GPU
    trains): the one-GPU step, plus the ring all-reduce of its float32 gradients, 2(N-1)/N of their bytes
    through each GPU's links at the bus bandwidth of an all-reduce among N GPUs.

    DDP overlaps the all-reduce with the backward, bucket by bucket; the model nonetheless exposes all of it
    (one GPU's step plus the whole all-reduce), which fits the committed baselines of 2026-11-27 better than
    ``overlap`` (the buckets before the last run under the backward, and only what they outlast it by counts,
    plus the last bucket's: the first layers' gradients, ready when the backward ends). Their measured
    communication, the step less its no_sync step (comm_exposed_ms), was the whole ring's time or more:
    VGG16 1.6-2.3 ms against the ring's 1.7-2.35, ResNet-50 1.3-1.5 against 0.3-0.4, ResNet-18 0.5-4.2
    against 0.14-0.20, where ``overlap`` leaves 0.01-0.07 ms. The speedups cannot tell the two apart (under
    1% a row: the all-reduce is a small part of the step and the H100s' and H200s' bus bandwidths nearly
    equal; 18 of the 27 DDP rows of several GPUs in the compare and held-out checks lie within x1.10 of
    either, docs/across.md). Not counted: NCCL's launches and DDP's copies into and out of its buckets.
    """
    table = flop_cache.table(net.model, net.image, net.stack)
    one = network_work(net, EAGER, TIME)
    grads = GRADIENT_BYTES_PER_PARAMETER * table.params
    layers = [GRADIENT_BYTES_PER_PARAMETER * row.params for row in table.rows]
    label = f"{one.label}, on each of {gpus} GPUs; {grads / 2**20:.1f} MiB of gradients all-reduced"
    return dataclasses.replace(one, label=label, steps=(*one.steps, *_allreduce(layers, gpus, overlap)))


def _allreduce(layer_bytes: list[int], gpus: int, overlap: bool) -> tuple[Step, ...]:
    """The ring all-reduce of the gradients (``layer_bytes``, each layer's in the network's order): one step
    nothing hides, or with ``overlap`` the buckets before the last, which may run under the backward, and
    the last."""
    ring, key, grads = comm.bus_factor(gpus), datasheet.allreduce_key(gpus), sum(layer_bytes)
    if not overlap:
        return (Step("gradient all-reduce", ALLREDUCE, 0, ring * grads, 0, ARITHMETIC, key),)
    last = ddp_buckets(layer_bytes)[-1]
    return (Step("gradient all-reduce, the buckets before the last", ALLREDUCE_HIDDEN, 0,
                 ring * (grads - last), 0, ARITHMETIC, key),
            Step("gradient all-reduce, the last bucket", ALLREDUCE, 0, ring * last, 0, ARITHMETIC, key))


def ddp_buckets(layer_bytes: list[int]) -> list[int]:
    """The bytes of each of DDP's gradient buckets, in the order they are all-reduced, from each layer's
    gradient bytes in the network's order: a bucket closes once it holds its cap (layer by layer here, where
    DDP goes tensor by tensor)."""
    buckets, held, cap = [], 0, DDP_FIRST_BUCKET_BYTES
    for size in reversed([b for b in layer_bytes if b]):
        held += size
        if held >= cap:
            buckets.append(held)
            held, cap = 0, DDP_BUCKET_BYTES
    return buckets + [held] if held else buckets


def _capacity(rec: LayerCapacity, bench: BenchmarkEntry, results: ResultSet) -> Work | NoModel:
    if rec.split_at is not None:
        return NoModel("split across two GPUs: the copy between them has no ceiling here")
    net = Network(LAYER_STACK, rec.input_shape[0], tuple(rec.input_shape[1:]), FORWARD, *_precisions(results),
                  stack=(rec.num_conv, rec.num_fc))
    return network_work(net, EAGER, TIME)


def _time_to_accuracy(rec: TimeToAccuracy, bench: BenchmarkEntry, results: ResultSet) -> Work | NoModel:
    """Training throughput: the epochs to the target differ run by run with the seeds, the images per second
    do not."""
    variant = tta_variants.VARIANTS.get(rec.variant)
    if variant is None:
        return NoModel(f"an unknown variant {rec.variant!r}")
    if not variant.resident:
        return NoModel("a DataLoader feeds each step from host memory: the host's pace, which no device "
                       "ceiling measures")
    if variant.compile_mode:
        return NoModel("torch.compile fuses the layers' kernels, which the model counts one by one")
    if variant.bf16:
        return NoModel("autocast picks bf16 or fp32 operator by operator at run time; the record "
                       "does not say which")
    net = Network(rec.model, rec.batch, shapes.CIFAR10_SHAPE, TRAIN_STEP, *_precisions(results))
    return network_work(net, EAGER, IMAGES_PER_S.name, per_image=True)


def _batch_epoch(rec: BatchEpoch, bench: BenchmarkEntry, results: ResultSet) -> Work | NoModel:
    if rec.variant != "resident":
        return NoModel(f"a DataLoader with {rec.workers} workers feeds it from host memory: the host's pace")
    net = Network(rec.model, rec.batch, shapes.CIFAR10_SHAPE, TRAIN_STEP, *_precisions(results))
    return network_work(net, EAGER, IMAGES_PER_S.name, per_image=True)


#: Bytes a one-multiprocessor copy moves per element (one read, one write; float32).
ONE_SM_COPY_BYTES_PER_ELEMENT = 8
#: Bytes of managed memory a first launch migrates per element: x and y, which the host wrote (float32).
MIGRATED_BYTES_PER_ELEMENT = 8


def _vector_add(rec: VectorAdd, bench: BenchmarkEntry, results: ResultSet) -> Work | NoModel:
    """A launch and, for a first launch on managed memory, the migration of its inputs' pages before it (at
    the rate a grid's first touch migrated the same size: the host link's and the driver's pace)."""
    if rec.mode == "cpu":
        return NoModel("the host's loop", gpu=False)
    n = kernels.elements(rec.k)
    kernel = _vector_add_kernel(rec.scenario, rec.k, n)
    if isinstance(kernel, NoModel):
        return kernel
    steps: tuple[Step, ...] = (kernel,)
    if rec.mode == "managed_first":
        if rec.k not in FIRST_TOUCH_KS:
            sizes = ", ".join(map(str, FIRST_TOUCH_KS))
            return NoModel(f"its inputs' pages migrate inside the timing, and no first touch of its size was "
                           f"measured (the ceilings family measures K = {sizes})")
        migrate = Step("page migration of x and y", MIGRATE, 0, MIGRATED_BYTES_PER_ELEMENT * n, 0,
                       ARITHMETIC, first_touch(rec.k).name)
        steps = (migrate, kernel)
    shape = "tuned grid" if rec.scenario == "tuned" else rec.scenario.replace("_", " ")
    label = f"vector add of {rec.k:g} M elements, {shape} ({rec.mode.replace('_', ' ')})"
    return Work(label, steps, EAGER, bench.context.gate or TIME)


def _vector_add_kernel(scenario: str, k: int, n: int) -> Step | NoModel:
    """A grid launch streams its three arrays through device memory once, at the copy ceiling. One thread or
    one block goes at the pace of the multiprocessor it runs on, which is a pace per element: each iteration
    waits one latency of memory, whether it reads one array (the copy that measures it) or two at once (the
    add), so its elements are priced at the same-sized copy's element rate."""
    if scenario not in {shape for shape, _ in ONE_SM_COPIES}:
        return Step(f"{scenario} kernel", "kernel", n, kernels.BYTES_PER_ELEMENT * n, 1, ARITHMETIC)
    if (scenario, k) not in ONE_SM_COPIES:
        sizes = ", ".join(f"{s.replace('_', ' ')} at K={size}" for s, size in ONE_SM_COPIES)
        return NoModel(f"no copy by one multiprocessor of its size was measured (the ceilings family "
                       f"measures {sizes})")
    return Step(f"{scenario} kernel", "kernel", n, ONE_SM_COPY_BYTES_PER_ELEMENT * n, 1, ARITHMETIC,
                one_sm_copy(scenario, k).name)


def _unmodelled(reason: str) -> Callable[[Any, BenchmarkEntry, ResultSet], NoModel]:
    return lambda rec, bench, results: NoModel(reason)


#: Each family record the model reads, and how.
PARSERS: tuple[tuple[type[Record], Callable[[Any, BenchmarkEntry, ResultSet], Work | NoModel]], ...] = (
    (Ppp, _ppp),
    (VggSwap, _vgg_swap),
    (MemoryEstimate, _training_memory),
    (Scaling, _scaling),
    (LayerCapacity, _capacity),
    (TimeToAccuracy, _time_to_accuracy),
    (BatchEpoch, _batch_epoch),
    (VectorAdd, _vector_add),
    (BatchCapacity, _unmodelled("a search for the largest batch that fits: its time is the probes'")),
    (LargeBatch, _unmodelled("its record names neither the model nor the image size it trains")),
    (AllreduceSweep, _unmodelled("it measures the all-reduce's bus bandwidth: the roof the DDP rows read, no "
                                 "work the model counts")),
)
